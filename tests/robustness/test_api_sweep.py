"""Bad and unusual input across the public API outside the normalization layers: a clear error, or
PyTorch's result; nothing changed by a call that fails.

Sweeps the tensor ops (arguments of the wrong type, out-of-range dims, zero-size inputs,
non-contiguous and negative-stride views, NaN and Inf), the creation functions, the optimizers and
schedulers, the data utilities, checkpoint files and the distributed helpers. A bad call must raise
``TypeError``/``ValueError``/``IndexError``/``RuntimeError``/``KeyError`` with a message naming the
argument and what was received (and the class PyTorch raises, where it raises), never a
``ZeroDivisionError``, ``AttributeError``, ``RecursionError`` or a Numba error from inside. The
normalization layers have their own sweep, ``test_norm_robustness.py``.
"""
import io
import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinynorm as tn
from tinynorm import distributed, nn, optim
from tinynorm.optim import lr_scheduler
from tinynorm.utils import data

from helpers import raises_clearly

torch = pytest.importorskip("torch")


# --------------------------------------------------------------------------- running both libraries
def outcome(call, lib):
    """``call(lib)`` as ``('value', numpy array)`` or ``('error', class)``, warnings silenced (a warning is
    not an outcome: PyTorch and tinynorm both warn, e.g. for a variance without degrees of freedom)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = call(lib)
        except Exception as error:  # noqa: BLE001  (any error is an outcome to compare)
            return "error", error
    return "value", np.asarray(result.detach().numpy() if lib is torch else result.numpy())


def assert_like_torch(call):
    """``call(tinynorm)`` gives ``call(torch)``'s values (NaN where it has NaN), or, where PyTorch raises,
    an error of the same class that ``raises_clearly`` accepts."""
    (kind, ours), (torch_kind, theirs) = outcome(call, tn), outcome(call, torch)
    if torch_kind == "error":
        assert kind == "error", f"PyTorch raised {theirs!r}, tinynorm returned {ours}"
        assert isinstance(ours, type(theirs)), f"PyTorch raised {theirs!r}, tinynorm {ours!r}"
        raises_clearly(lambda: _reraise(ours))
        return
    assert kind == "value", f"tinynorm raised {ours!r}, PyTorch returned {theirs}"
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=1e-5, atol=1e-6)


def _reraise(error):
    raise error


def both(values, dtype=np.float32):
    """A function of a library making ``values`` (copied) as a tensor of it."""
    return lambda lib: lib.tensor(np.array(values, dtype=dtype))


# ------------------------------------------------------------------------------- the tensor ops
# name: call of the op on ``x`` in either library (PyTorch and tinynorm share these names)
UNARY = {
    "exp": lambda lib, x: lib.exp(x), "log": lambda lib, x: lib.log(x), "sqrt": lambda lib, x: lib.sqrt(x),
    "rsqrt": lambda lib, x: lib.rsqrt(x), "abs": lambda lib, x: lib.abs(x), "tanh": lambda lib, x: lib.tanh(x),
    "sigmoid": lambda lib, x: lib.sigmoid(x), "relu": lambda lib, x: lib.relu(x),
    "clamp": lambda lib, x: lib.clamp(x, min=0.5), "sum": lambda lib, x: lib.sum(x),
    "mean": lambda lib, x: lib.mean(x), "var": lambda lib, x: lib.var(x), "std": lambda lib, x: lib.std(x),
    "amax": lambda lib, x: lib.amax(x), "amin": lambda lib, x: lib.amin(x), "argmax": lambda lib, x: lib.argmax(x),
    "argmin": lambda lib, x: lib.argmin(x), "softmax": lambda lib, x: lib.softmax(x, -1),
    "log_softmax": lambda lib, x: lib.log_softmax(x, -1), "flatten": lambda lib, x: lib.flatten(x),
    "squeeze": lambda lib, x: lib.squeeze(x), "unsqueeze": lambda lib, x: lib.unsqueeze(x, 0),
    "permute": lambda lib, x: lib.permute(x, (1, 0)), "transpose": lambda lib, x: lib.transpose(x, 0, 1),
    "reshape": lambda lib, x: lib.reshape(x, (-1,)),
}
NOT_TENSORS = {"None": None, "list": [[1.0, 2.0], [3.0, 4.0]], "numpy.ndarray": np.ones((2, 2)), "float": 2.0}


@pytest.mark.parametrize("received", NOT_TENSORS)
@pytest.mark.parametrize("op", UNARY)
def test_ops_refuse_what_is_not_a_tensor(op, received):
    error = raises_clearly(lambda: UNARY[op](tn, NOT_TENSORS[received]), f"{op}(): argument 'input' must be Tensor",
                           f"not {received}", error=TypeError)
    with pytest.raises(TypeError):  # PyTorch refuses it too
        UNARY[op](torch, NOT_TENSORS[received])
    assert "Traceback" not in str(error)


@pytest.mark.parametrize("call, error, fragments", [
    (lambda lib: lib.cat(lib.ones(2, 3)), TypeError, ["cat(): argument 'tensors'", "not Tensor"]),
    (lambda lib: lib.cat([lib.ones(2), np.ones(2)]), TypeError, ["element 1", "numpy.ndarray"]),
    (lambda lib: lib.stack([lib.ones(2), None]), TypeError, ["element 1", "NoneType"]),
    (lambda lib: lib.matmul(lib.ones(2, 2), 2.0), TypeError, ["matmul(): argument 'other' must be Tensor, not float"]),
    (lambda lib: lib.matmul(None, lib.ones(2, 2)), TypeError, ["argument 'input' must be Tensor, not NoneType"]),
    (lambda lib: lib.reshape(lib.ones(2, 3), 6), TypeError, ["reshape(): argument 'shape' must be a tuple of ints",
                                                             "not int"]),
    (lambda lib: lib.permute(lib.ones(2, 3), 0), TypeError, ["permute(): argument 'dims'", "not int"]),
    (lambda lib: lib.ones(2, 3).chunk("a"), TypeError, ["chunk(): argument 'chunks' must be an int, got 'a'"]),
    (lambda lib: lib.ones(2, 3).split(1.5), TypeError, ["argument 'split_size_or_sections' must be an int, got 1.5"]),
    (lambda lib: lib.clamp(lib.ones(2), "a"), TypeError, ["clamp(): min must be a number, got 'a'"]),
    (lambda lib: lib.var(lib.ones(3), correction="a"), TypeError, ["argument 'correction' must be a number, got 'a'"]),
    (lambda lib: lib.sum(lib.ones(3), 0, keepdim="a"), TypeError, ["sum(): keepdim must be a bool, got 'a'"]),
    (lambda lib: lib.argmax(lib.ones(3), 0, keepdim=None), TypeError, ["argmax(): keepdim must be a bool, got None"]),
    (lambda lib: lib.where(lib.ones(2), lib.ones(2), lib.ones(2)), RuntimeError,
     ["condition to be a boolean tensor", "float32"]),
    (lambda lib: lib.where(lib.ones(2) > 0, lib.ones(2), "a"), TypeError, ["argument 'other'", "not str"]),
    (lambda lib: lib.where(None, lib.ones(2), lib.ones(2)), TypeError, ["argument 'condition'", "NoneType"]),
    (lambda lib: lib.maximum(lib.ones(2), None), TypeError, ["maximum(): argument 'other'", "NoneType"]),
    (lambda lib: lib.amax(lib.zeros(0)), RuntimeError, ["amax(): Expected reduction dim to be specified"]),
    (lambda lib: lib.argmax(lib.zeros(0)), IndexError, ["argmax(): Expected reduction dim to be specified"]),
    (lambda lib: lib.argmin(lib.zeros(2, 0), 1), IndexError, ["argmin(): Expected reduction dim 1 to have non-zero"]),
    (lambda lib: lib.nn.functional.dropout(lib.ones(2), "a"), TypeError, ["dropout: p must be a number, got 'a'"]),
], ids=lambda value: None if callable(value) or isinstance(value, (type, list)) else str(value))
def test_op_arguments_get_clear_errors_of_torchs_class(call, error, fragments):
    raises_clearly(lambda: call(tn), *fragments, error=error)
    with pytest.raises(error):
        call(torch)


DIM_OPS = {
    "sum": lambda lib, x, d: lib.sum(x, d), "mean": lambda lib, x, d: lib.mean(x, d),
    "var": lambda lib, x, d: lib.var(x, d), "std": lambda lib, x, d: lib.std(x, d),
    "amax": lambda lib, x, d: lib.amax(x, d), "amin": lambda lib, x, d: lib.amin(x, d),
    "argmax": lambda lib, x, d: lib.argmax(x, d), "argmin": lambda lib, x, d: lib.argmin(x, d),
    "softmax": lambda lib, x, d: lib.softmax(x, d), "log_softmax": lambda lib, x, d: lib.log_softmax(x, d),
    "squeeze": lambda lib, x, d: lib.squeeze(x, d), "unsqueeze": lambda lib, x, d: lib.unsqueeze(x, d),
    "flatten": lambda lib, x, d: lib.flatten(x, d), "transpose": lambda lib, x, d: lib.transpose(x, d, 0),
    "stack": lambda lib, x, d: lib.stack([x, x], d), "cat": lambda lib, x, d: lib.cat([x, x], d),
    "sum-pair": lambda lib, x, d: lib.sum(x, (0, d)), "unbind": lambda lib, x, d: lib.stack(x.unbind(d)),
}


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(0, 3), min_size=0, max_size=3), dim=st.integers(-5, 5), seed=st.integers(0, 99))
def test_every_dim_and_shape_gives_torchs_result_or_error(shape, dim, seed):
    """Out-of-range dims are PyTorch's IndexError (never wrapped), repeated dims its RuntimeError, and
    zero-size shapes give PyTorch's values (NaN means, empty results) or its errors."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    for op, call in DIM_OPS.items():
        if op == "cat" and tuple(shape) == (0,):
            continue  # PyTorch skips the dim check for 1-D empty tensors (legacy); tinynorm checks every dim
        try:
            assert_like_torch(lambda lib: call(lib, lib.tensor(values), dim))
        except AssertionError as failure:
            raise AssertionError(f"{op}(shape {tuple(shape)}, dim {dim}): {failure}") from None


SPECIAL_VALUES = [[1.0, np.nan, 3.0], [np.inf, 1.0, -2.0], [-np.inf, np.inf, 0.0], [0.0, -0.0, 5e-39]]


@pytest.mark.parametrize("op", [op for op in UNARY if op not in ("flatten", "squeeze", "unsqueeze", "permute",
                                                                 "transpose", "reshape")])
def test_nan_and_inf_give_torchs_results(op):
    assert_like_torch(lambda lib: UNARY[op](lib, both(SPECIAL_VALUES)(lib)))
    for dim in (0, 1):
        if op in DIM_OPS:
            assert_like_torch(lambda lib: DIM_OPS[op](lib, both(SPECIAL_VALUES)(lib), dim))


VIEWS = {  # a strided view of a (4, 6) tensor, in either library, and the same view of a numpy array
    "transposed": (lambda t: t.transpose(0, 1), lambda a: a.T),
    "every-other-column": (lambda t: t[:, ::2], lambda a: a[:, ::2]),
    "rows-1-to-3": (lambda t: t[1:3], lambda a: a[1:3]),
}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("op", list(DIM_OPS) + ["exp", "abs", "relu", "clamp", "sum", "var", "softmax"])
def test_strided_views_give_torchs_results(op, view):
    values = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    make_view = VIEWS[view][0]
    call = (lambda lib, x: DIM_OPS[op](lib, x, 1)) if op in DIM_OPS else UNARY[op]
    assert_like_torch(lambda lib: call(lib, make_view(lib.tensor(values))))


@pytest.mark.parametrize("op", list(DIM_OPS) + ["exp", "abs", "clamp", "var", "softmax"])
def test_negative_stride_views_give_numpys_values(op):
    """tinynorm lets ``x[:, ::-1]`` be a view with negative strides (PyTorch has no negative steps); every
    op must read it right: the same result as on a reversed copy, in either library."""
    values = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    call = (lambda lib, x: DIM_OPS[op](lib, x, 1)) if op in DIM_OPS else UNARY[op]
    reversed_view = tn.tensor(values)[:, ::-1]
    assert reversed_view.array.strides[1] < 0
    kind, ours = outcome(lambda lib: call(lib, reversed_view), tn)
    torch_kind, theirs = outcome(lambda lib: call(lib, torch.tensor(values[:, ::-1].copy())), torch)
    assert (kind, torch_kind) == ("value", "value"), (ours, theirs)
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------ creation
@pytest.mark.parametrize("call, error, fragments", [
    (lambda lib: lib.zeros(-1), RuntimeError, ["zeros(): Trying to create tensor with negative dimension -1"]),
    (lambda lib: lib.ones(2, 2.5), TypeError, ["ones(): argument 'size'", "float at pos 1"]),
    (lambda lib: lib.empty(True), TypeError, ["empty(): argument 'size'", "bool at pos 0"]),
    (lambda lib: lib.randn("3"), TypeError, ["randn(): argument 'size'", "str at pos 0"]),
    (lambda lib: lib.zeros(2, dtype="floaty"), TypeError, ["dtype", "'floaty'"]),
    (lambda lib: lib.rand(2, dtype=lib.int64), (TypeError, RuntimeError), ["rand", "int64"]),
    (lambda lib: lib.full((2,), "x"), TypeError, ["full: fill_value must be a real number", "'x'"]),
    (lambda lib: lib.full((2,), None), TypeError, ["fill_value", "None"]),
    (lambda lib: lib.full((2,), 300, dtype=lib.uint8), RuntimeError, ["cannot be converted to type tinynorm.uint8", "300"]),
    (lambda lib: lib.arange(0, 10, 0), RuntimeError, ["step must be nonzero"]),
    (lambda lib: lib.arange(-5), RuntimeError, ["upper bound and lower bound inconsistent with step sign", "-5"]),
    (lambda lib: lib.arange(0, float("inf")), RuntimeError, ["unsupported range: 0 -> inf"]),
    (lambda lib: lib.arange(None), TypeError, ["arange: end must be a real number", "None"]),
    (lambda lib: lib.zeros_like(np.ones(2)), TypeError, ["zeros_like(): argument 'input' must be Tensor", "ndarray"]),
    (lambda lib: lib.full_like(None, 1), TypeError, ["full_like(): argument 'input' must be Tensor", "NoneType"]),
    (lambda lib: lib.linspace(0, 1, -1), RuntimeError, ["steps must be greater or equal to 0, got -1"]),
    (lambda lib: lib.eye(2.5), TypeError, ["eye: n must be an int, got float"]),
    (lambda lib: lib.randperm(-1), RuntimeError, ["randperm", "-1"]),
    (lambda lib: lib.zeros(2, requires_grad="no"), TypeError, ["requires_grad must be a bool, got 'no'"]),
], ids=lambda value: None if callable(value) or isinstance(value, (type, list, tuple)) else str(value))
def test_creation_arguments_get_torchs_error_class_and_a_clear_message(call, error, fragments):
    raises_clearly(lambda: call(tn), *fragments, error=error)
    with pytest.raises(error):
        call(torch)


# -------------------------------------------------------------------------- optimizers, schedulers
OPTIMIZERS = [optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop, optim.Adagrad, optim.Adadelta, optim.Adamax,
              optim.NAdam, optim.RAdam]


def parameters():
    return [nn.Parameter(tn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])), nn.Parameter(tn.tensor([0.5, -0.5]))]


@pytest.mark.parametrize("cls", OPTIMIZERS, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("bad_grad, error, fragment", [
    (tn.ones(2), RuntimeError, "has shape (2, 3), but its gradient has shape (2,)"),  # would broadcast
    (tn.ones(3, 2), RuntimeError, "but its gradient has shape (3, 2)"),
    (np.ones((2, 3)), TypeError, ".grad must be a Tensor, got ndarray"),
    (tn.ones(2, 3, dtype=tn.int64), TypeError, ".grad must be floating, got dtype tinynorm.int64"),
], ids=["broadcastable", "transposed", "numpy", "int64"])
def test_a_bad_gradient_fails_the_step_and_changes_nothing(cls, bad_grad, error, fragment):
    first, second = parameters()
    optimizer = cls([second, first], lr=0.1)
    second.grad, first.grad = tn.ones(2), bad_grad  # the good gradient comes first: still nothing moves
    before = [first.numpy().copy(), second.numpy().copy()]
    state_before = snapshot(optimizer.state_dict()["state"])
    raises_clearly(optimizer.step, f"{cls.__name__}.step: param_groups[0]['params'][1]", fragment, error=error)
    np.testing.assert_array_equal(first.numpy(), before[0])
    np.testing.assert_array_equal(second.numpy(), before[1])
    assert_same_state(optimizer.state_dict()["state"], state_before)


def snapshot(state):
    """A copy of an optimizer's ``state_dict()['state']`` as numpy arrays and numbers."""
    return {index: {name: np.array(value.numpy() if isinstance(value, tn.Tensor) else value)
                    for name, value in buffers.items()} for index, buffers in state.items()}


def assert_same_state(state, expected):
    assert snapshot(state).keys() == expected.keys()
    for index, buffers in snapshot(state).items():
        assert buffers.keys() == expected[index].keys()
        for name, value in buffers.items():
            np.testing.assert_array_equal(value, expected[index][name])


@pytest.mark.parametrize("cls", OPTIMIZERS, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("options, error, fragments", [
    ({"lr": "0.1"}, TypeError, ["lr must be a real number, got '0.1' (str)"]),
    ({"lr": None}, TypeError, ["lr must be a real number, got None"]),
    ({"lr": -0.1}, ValueError, ["Invalid learning rate: -0.1"]),
    ({"lr": float("nan")}, ValueError, ["Invalid learning rate: nan"]),
    ({"weight_decay": -1.0}, ValueError, ["Invalid weight_decay value: -1.0"]),
    ({"weight_decay": "x"}, TypeError, ["weight_decay must be a real number, got 'x'"]),
    ({"maximize": "no"}, TypeError, ["maximize must be a bool, got 'no'"]),
])
def test_optimizer_options_are_checked_at_construction(cls, options, error, fragments):
    raises_clearly(lambda: cls(parameters(), **options), *fragments, error=error)


@pytest.mark.parametrize("make, error, fragments", [
    (lambda: optim.SGD(parameters(), momentum="a"), TypeError, ["momentum must be a real number, got 'a'"]),
    (lambda: optim.SGD(parameters(), momentum=-0.5), ValueError, ["Invalid momentum value: -0.5"]),
    (lambda: optim.Adam(parameters(), betas=(0.9,)), TypeError, ["betas must be a pair", "(0.9,)"]),
    (lambda: optim.Adam(parameters(), betas=(1.0, 0.9)), ValueError, ["Invalid beta parameter at index 0: 1.0"]),
    (lambda: optim.Adam(parameters(), betas=(0.9, "a")), TypeError, ["betas[1] must be a real number, got 'a'"]),
    (lambda: optim.Adam(parameters(), eps=-1e-8), ValueError, ["Invalid epsilon value: -1e-08"]),
    (lambda: optim.RMSprop(parameters(), alpha=-1), ValueError, ["Invalid alpha value: -1"]),
    (lambda: optim.Adadelta(parameters(), rho=2), ValueError, ["Invalid rho value: 2"]),
    (lambda: optim.SGD(None), TypeError, ["params must be an iterable of tensors", "NoneType"]),
    (lambda: optim.SGD(5), TypeError, ["params must be an iterable", "int"]),
    (lambda: optim.SGD(parameters()[0]), TypeError, ["params must be an ordered iterable", "Parameter"]),
    (lambda: optim.SGD([np.ones(2)]), TypeError, ["parameter 0 of group 0 is a ndarray"]),
    (lambda: optim.SGD([]), ValueError, ["empty parameter list"]),
    (lambda: optim.SGD(parameters()).step(3), TypeError, ["SGD.step: closure must be a function", "int"]),
    (lambda: optim.SGD(parameters()).add_param_group(None), TypeError, ["parameter group must be a dict", "None"]),
    (lambda: optim.SGD(parameters()).load_state_dict(None), ValueError, ["load_state_dict: expected a dict",
                                                                          "NoneType"]),
])
def test_optimizer_arguments_get_clear_errors(make, error, fragments):
    raises_clearly(make, *fragments, error=error)


def stepped(cls, **options):
    params = parameters()
    optimizer = cls(params, lr=0.1, **options)
    for p in params:
        p.grad = tn.ones_like(p)
    optimizer.step()
    return optimizer


@pytest.mark.parametrize("change, error, fragments", [
    (lambda sd: sd["state"][0].__setitem__("step", 1.5), ValueError, ["state[0]['step'] must be a step count", "1.5"]),
    (lambda sd: sd["state"][0].__setitem__("step", "1"), TypeError, ["state[0]['step']", "str"]),
    (lambda sd: sd["state"][0].pop("exp_avg"), ValueError, ["state[0] has no 'exp_avg'"]),
    (lambda sd: sd["state"][0].__setitem__("exp_avg", tn.ones(3)), ValueError, ["state[0]['exp_avg'] has shape (3,)"]),
    (lambda sd: sd["state"].__setitem__(0, stepped(optim.SGD, momentum=0.9).state_dict()["state"][0]), ValueError,
     ["'momentum_buffer', which Adam does not keep"]),
    (lambda sd: sd["param_groups"][0].__setitem__("lr", "x"), TypeError, ["param_groups[0]", "lr", "'x'"]),
    (lambda sd: sd["param_groups"].append(dict(sd["param_groups"][0])), ValueError, ["2 parameter groups"]),
])
def test_a_failed_optimizer_load_fails_at_load_and_changes_nothing(change, error, fragments):
    optimizer = stepped(optim.Adam)
    saved = tn.load(_round_trip(stepped(optim.Adam).state_dict()))  # a copy: the dict shares the state's tensors
    change(saved)
    groups, state = optimizer.state_dict()["param_groups"], snapshot(optimizer.state_dict()["state"])
    raises_clearly(lambda: optimizer.load_state_dict(saved), *fragments, error=error)
    assert optimizer.state_dict()["param_groups"] == groups
    assert_same_state(optimizer.state_dict()["state"], state)


def _round_trip(obj):
    buffer = io.BytesIO()
    tn.save(obj, buffer)
    buffer.seek(0)
    return buffer


def sgd():
    return optim.SGD(parameters(), lr=0.1)


SCHEDULERS = {
    "StepLR": lambda o: lr_scheduler.StepLR(o, 2), "MultiStepLR": lambda o: lr_scheduler.MultiStepLR(o, [2, 4]),
    "ExponentialLR": lambda o: lr_scheduler.ExponentialLR(o, 0.9),
    "CosineAnnealingLR": lambda o: lr_scheduler.CosineAnnealingLR(o, 5),
    "LinearLR": lambda o: lr_scheduler.LinearLR(o), "OneCycleLR": lambda o: lr_scheduler.OneCycleLR(o, 1.0, 10),
    "CyclicLR": lambda o: lr_scheduler.CyclicLR(o, 0.01, 0.1),
    "ReduceLROnPlateau": lambda o: lr_scheduler.ReduceLROnPlateau(o),
    "LambdaLR": lambda o: lr_scheduler.LambdaLR(o, lambda epoch: 0.9 ** epoch),
}


@pytest.mark.parametrize("name", SCHEDULERS)
def test_schedulers_check_their_optimizer_state_dict_and_step(name):
    make = SCHEDULERS[name]
    raises_clearly(lambda: make(None), "NoneType is not an Optimizer", error=TypeError)
    raises_clearly(lambda: make(nn.Linear(2, 2)), "Linear is not an Optimizer", error=TypeError)
    scheduler = make(sgd())
    raises_clearly(lambda: scheduler.load_state_dict(None), f"{name}.load_state_dict", "NoneType")
    saved = scheduler.state_dict()
    saved.pop(next(key for key in saved if key != "last_epoch"))
    state, lrs = scheduler.state_dict(), scheduler.get_last_lr()
    raises_clearly(lambda: scheduler.load_state_dict(saved), "missing keys", error=ValueError)
    assert scheduler.get_last_lr() == lrs and scheduler.state_dict().keys() == state.keys()
    assert scheduler.last_epoch == state["last_epoch"]
    argument = "metrics" if name == "ReduceLROnPlateau" else "epoch"
    raises_clearly(lambda: scheduler.step("x"), f"{name}.step: {argument}", "str", error=TypeError)


@pytest.mark.parametrize("make, error, fragments", [
    (lambda: lr_scheduler.StepLR(sgd(), 0), ValueError, ["step_size must be a positive int, got 0"]),
    (lambda: lr_scheduler.StepLR(sgd(), 1.5), ValueError, ["step_size must be a positive int, got 1.5"]),
    (lambda: lr_scheduler.StepLR(sgd(), 2, gamma="a"), TypeError, ["gamma must be a real number, got 'a'"]),
    (lambda: lr_scheduler.StepLR(sgd(), 2, last_epoch=1.5), ValueError, ["last_epoch must be an int >= -1", "1.5"]),
    (lambda: lr_scheduler.MultiStepLR(sgd(), 5), TypeError, ["milestones must be a list of ints, got 5"]),
    (lambda: lr_scheduler.MultiStepLR(sgd(), [1.5]), TypeError, ["milestones must be ints, got 1.5"]),
    (lambda: lr_scheduler.CosineAnnealingLR(sgd(), "5"), ValueError, ["T_max must be a positive int, got '5'"]),
    (lambda: lr_scheduler.LinearLR(sgd(), start_factor=0), ValueError, ["Starting multiplicative factor"]),
    (lambda: lr_scheduler.OneCycleLR(sgd(), 1.0, total_steps=2.5), ValueError, ["total_steps, but got 2.5"]),
    (lambda: lr_scheduler.ReduceLROnPlateau(sgd(), patience="x"), ValueError, ["patience must be an int", "'x'"]),
    (lambda: lr_scheduler.ReduceLROnPlateau(sgd(), min_lr=[0.1, 0.2]), ValueError, ["expected 1 min_lrs, got 2"]),
    (lambda: lr_scheduler.LambdaLR(sgd(), 5), TypeError, ["lr_lambda should be a function, but got int"]),
])
def test_scheduler_arguments_get_clear_errors(make, error, fragments):
    raises_clearly(make, *fragments, error=error)


# ---------------------------------------------------------------------------------------- data
DATASET = data.TensorDataset(tn.arange(10.0).reshape(10, 1), tn.arange(10))


@pytest.mark.parametrize("make, error, fragments", [
    (lambda: data.DataLoader(DATASET, batch_size=0), ValueError, ["batch_size should be a positive integer", "=0"]),
    (lambda: data.DataLoader(DATASET, batch_size=-1), ValueError, ["batch_size should be a positive", "=-1"]),
    (lambda: data.DataLoader(DATASET, batch_size="4"), ValueError, ["batch_size should be a positive", "'4'"]),
    (lambda: data.DataLoader(DATASET, batch_size=2.5), ValueError, ["batch_size should be a positive", "2.5"]),
    (lambda: data.DataLoader(DATASET, num_workers=-1), ValueError, ["num_workers", "-1"]),
    (lambda: data.DataLoader(DATASET, collate_fn=5), TypeError, ["collate_fn must be a function", "int"]),
    (lambda: data.DataLoader(DATASET, sampler=5), TypeError, ["sampler must be an iterable of indices", "int"]),
    (lambda: data.DataLoader(DATASET, timeout="x"), TypeError, ["timeout must be a number of seconds", "'x'"]),
    (lambda: data.DataLoader(None), TypeError, ["dataset must be a Dataset", "NoneType"]),
    (lambda: data.DataLoader(DATASET, drop_last="x"), ValueError, ["drop_last should be a boolean", "'x'"]),
    (lambda: data.random_split(DATASET, 5), TypeError, ["lengths must be a list", "int"]),
    (lambda: data.random_split(DATASET, ["5", "5"]), TypeError, ["lengths[0] must be an int or a fraction", "'5'"]),
    (lambda: data.random_split(DATASET, [5, 4]), ValueError, ["sum of input lengths (9)", "(10)"]),
    (lambda: data.random_split(DATASET, [-1, 11]), ValueError, ["non-negative", "[-1, 11]"]),
    (lambda: data.random_split(DATASET, [0.5, 0.6]), ValueError, ["fractions summing to 1", "[0.5, 0.6]"]),
    (lambda: data.random_split(None, [1]), TypeError, ["dataset must have a length", "NoneType"]),
    (lambda: data.default_collate([]), ValueError, ["the batch is empty"]),
    (lambda: data.default_collate(None), TypeError, ["batch must be a list of samples", "NoneType"]),
    (lambda: data.TensorDataset(np.ones(3)), TypeError, ["tensors[0] must be a Tensor, got ndarray"]),
    (lambda: data.TensorDataset(tn.ones(3), tn.ones(4)), ValueError, ["size mismatch", "(3,)", "(4,)"]),
    (lambda: data.RandomSampler(DATASET, num_samples=0), ValueError, ["num_samples should be a positive", "=0"]),
    (lambda: data.BatchSampler(range(5), 2, "x"), ValueError, ["drop_last should be a boolean", "'x'"]),
    (lambda: data.DistributedSampler(DATASET, num_replicas=2, rank=2), ValueError, ["invalid rank 2", "[0, 1]"]),
])
def test_data_arguments_get_clear_errors(make, error, fragments):
    raises_clearly(lambda: list(make()), *fragments, error=error)


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.one_of(st.integers(-2, 12), st.floats(-0.5, 1.5), st.just(float("nan"))), max_size=4))
def test_random_split_gives_a_partition_or_a_clear_error(lengths):
    """Any list of numbers: the splits partition the dataset (sizes as asked, or fractions of it), or a
    clear ValueError naming the lengths received."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's warning for an empty split
        try:
            splits = data.random_split(DATASET, lengths)
        except ValueError as error:
            assert "random_split" in str(error)
            return
    indices = sorted(i for split in splits for i in split.indices)
    assert indices == list(range(len(DATASET)))
    if all(isinstance(n, int) for n in lengths) and sum(lengths) == len(DATASET):  # sizes, not fractions
        assert [len(split) for split in splits] == lengths


# ------------------------------------------------------------------------------------- io
@pytest.mark.parametrize("f, error, fragments", [
    (None, TypeError, ["save: f must be a path (str or os.PathLike) or a binary file object, got NoneType"]),
    (5, TypeError, ["f must be a path", "got int"]),
    (io.StringIO(), TypeError, ["f is a text stream (StringIO)", "binary mode ('wb')"]),
    ("", RuntimeError, ["save: the path is empty"]),
], ids=["None", "int", "text-stream", "empty-path"])
def test_save_names_a_bad_target(f, error, fragments):
    raises_clearly(lambda: tn.save({"w": tn.ones(2)}, f), *fragments, error=error)


def test_save_refuses_a_directory_or_a_missing_one_and_leaves_no_file(tmp_path):
    raises_clearly(lambda: tn.save({}, tmp_path), f"save: {str(tmp_path)!r} is a directory", error=RuntimeError)
    missing = tmp_path / "nowhere" / "x.pt"
    raises_clearly(lambda: tn.save({}, missing), f"the directory {str(missing.parent)!r}", "does not exist",
                   error=RuntimeError)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_save_keeps_the_old_checkpoint_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "model.pt"
    tn.save({"w": tn.ones(3)}, path)
    old = path.read_bytes()
    for unsavable, fragment in (({"w": tn.zeros(3), "f": print}, "cannot save obj['f']"),
                                ({"w": {1, 2}}, "of type set")):
        raises_clearly(lambda: tn.save(unsavable, path), fragment, error=TypeError)
        assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["model.pt"]


@pytest.mark.parametrize("f, error, fragments", [
    (None, TypeError, ["load: f must be a path", "NoneType"]),
    (io.StringIO("x"), TypeError, ["f is a text stream", "('rb')"]),
    (io.BytesIO(b"garbage"), ValueError, ["'<BytesIO>' is not a tinynorm checkpoint"]),
    (io.BytesIO(b""), ValueError, ["is not a tinynorm checkpoint"]),
], ids=["None", "text-stream", "garbage", "empty"])
def test_load_names_a_bad_source(f, error, fragments):
    raises_clearly(lambda: tn.load(f), *fragments, error=error)


def test_load_names_a_missing_file_or_a_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint file at ''"):
        tn.load("")
    with pytest.raises(IsADirectoryError, match="is a directory, not a checkpoint file"):  # PyTorch's class
        tn.load(tmp_path)


# ------------------------------------------------------------------------------- distributed
class OneRank:
    """A communicator of one process (what mpi4py's COMM_WORLD is without mpiexec), without mpi4py."""

    def Get_size(self):
        return 1

    def Get_rank(self):
        return 0


@pytest.mark.parametrize("call, error, fragments", [
    (lambda: distributed.get_rank(5), TypeError, ["comm must be an MPI communicator", "got 5 (int)"]),
    (lambda: distributed.init("x"), TypeError, ["init: comm must be an MPI communicator", "'x'"]),
    (lambda: distributed.allreduce_gradients(None, comm=OneRank()), TypeError,
     ["expected a Module or an iterable of tensors, got NoneType"]),
    (lambda: distributed.allreduce_gradients([np.ones(2)], comm=OneRank()), TypeError,
     ["parameter 0 is a ndarray"]),
    (lambda: distributed.allreduce_gradients(nn.Linear(2, 2), comm=OneRank(), bucket_size_mb=0), ValueError,
     ["bucket_size_mb must be > 0", "got 0"]),
    (lambda: distributed.allreduce_gradients(nn.Linear(2, 2), comm=OneRank(), bucket_size_mb="x"), TypeError,
     ["bucket_size_mb must be a number", "'x'"]),
    (lambda: distributed.broadcast_parameters(nn.Linear(2, 2), root=1, comm=OneRank()), ValueError,
     ["root must be a rank in [0, 0], got 1"]),
    (lambda: distributed.broadcast_parameters([tn.ones(2)], comm=OneRank()), TypeError,
     ["model must be a tinynorm Module, got list"]),
    (lambda: distributed.DistributedDataParallel(None, comm=OneRank()), TypeError,
     ["module must be a tinynorm Module"]),
    (lambda: distributed.DistributedDataParallel(nn.Linear(2, 2), comm=OneRank(), broadcast_buffers="x"), TypeError,
     ["broadcast_buffers must be a bool, got 'x'"]),
])
def test_distributed_arguments_are_checked_even_in_one_process(call, error, fragments):
    raises_clearly(call, *fragments, error=error)


# ------------------------------------------------------------------------------------ modules
@pytest.mark.parametrize("call, error, fragments", [
    (lambda m: m.load_state_dict(None), TypeError, ["expected state_dict to be a dict-like", "NoneType"]),
    (lambda m: m.load_state_dict([]), TypeError, ["expected state_dict to be a dict-like", "list"]),
    (lambda m: m.load_state_dict({1: tn.ones(2)}), RuntimeError, ["unexpected keys [1]"]),
    (lambda m: m.register_buffer(1, None), TypeError, ["buffer name should be a string. Got int"]),
    (lambda m: m.register_buffer("a.b", None), KeyError, ["buffer name can't contain \".\", got: a.b"]),
    (lambda m: m.register_parameter("", None), KeyError, ["parameter name can't be empty string"]),
    (lambda m: m.add_module(5, nn.ReLU()), TypeError, ["module name should be a string. Got int"]),
    (lambda m: m.to(tn.int64), TypeError, ["nn.Module.to only accepts floating point dtypes", "int64"]),
    (lambda m: m.to("xpu"), RuntimeError, ["Expected one of cpu, cuda device type", "xpu"]),
    (lambda m: m.train("x"), ValueError, ["training mode is expected to be boolean, got 'x'"]),
    (lambda m: m.apply(5), TypeError, ["apply: fn must be a function", "int"]),
    (lambda m: m.state_dict(prefix=5), TypeError, ["prefix must be a str, got int"]),
    (lambda m: m(None), TypeError, ["linear(): argument 'input' must be Tensor, not NoneType"]),
    (lambda m: m(np.ones((4, 3))), TypeError, ["linear(): argument 'input' must be Tensor, not numpy.ndarray"]),
    (lambda m: m(tn.ones(4, 5)), ValueError, ["linear: input has 5 features (shape (4, 5))", "expects 3"]),
    (lambda m: nn.Dropout("x"), TypeError, ["Dropout: p must be a number, got 'x'"]),
])
def test_module_methods_get_clear_errors_and_leave_the_module_unchanged(call, error, fragments):
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    before = {name: value.numpy().copy() for name, value in model.state_dict().items()}
    raises_clearly(lambda: call(model), *fragments, error=error)
    after = model.state_dict()
    assert list(after) == list(before)
    for name, value in after.items():
        assert value.dtype == before[name].dtype
        np.testing.assert_array_equal(value.numpy(), before[name])
