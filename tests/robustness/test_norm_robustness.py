"""Bad and unusual input to every normalization layer and function: a clear error, or PyTorch's result.

Sweeps the layers of ``tinynorm.nn`` (BatchNorm1d/2d/3d, SyncBatchNorm in a world of one process,
InstanceNorm1d/2d, LayerNorm, RMSNorm, GroupNorm) and the functions of ``tinynorm.nn.functional``
(``batch_norm``, ``instance_norm``, ``layer_norm``, ``rms_norm``, ``group_norm``) with wrong types, ranks,
shapes and dtypes; zero-size inputs; non-contiguous and negative-stride inputs; NaN, Inf and huge
values; ``eps``, ``momentum``, group counts and normalized shapes out of range.

A bad call must raise ``TypeError``/``ValueError``/``IndexError``/``RuntimeError`` with a message naming
the argument and what was received, never a ``ZeroDivisionError``, ``AttributeError``,
``RecursionError`` or Numba error from inside. A good call must give PyTorch's result, or, for huge
values where PyTorch gives zeros or NaN, the float64 reference's (docs/normalization.md, section 6).
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinynorm
from tinynorm import nn
from tinynorm.kernels import reference as R
from tinynorm.nn import functional as F

from helpers import raises_clearly


# ----------------------------------------------------------------------------------- the layers
LAYERS = {  # name: (factory, a valid input shape)
    "BatchNorm1d": (lambda: nn.BatchNorm1d(3), (4, 3)),
    "BatchNorm1d-NCL": (lambda: nn.BatchNorm1d(3), (4, 3, 5)),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), (2, 3, 4, 4)),
    "BatchNorm3d": (lambda: nn.BatchNorm3d(3), (2, 3, 2, 3, 2)),
    "SyncBatchNorm": (lambda: nn.SyncBatchNorm(3), (2, 3, 4)),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(3, affine=True, track_running_stats=True), (2, 3, 5)),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3), (2, 3, 4, 4)),
    "LayerNorm": (lambda: nn.LayerNorm(4), (2, 3, 4)),
    "LayerNorm-2d": (lambda: nn.LayerNorm((3, 4)), (2, 3, 4)),
    "RMSNorm": (lambda: nn.RMSNorm(4), (2, 3, 4)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), (2, 4, 3)),
}
LAYER_NAMES = list(LAYERS)
CHANNEL_FIRST = ("BatchNorm", "SyncBatchNorm", "InstanceNorm", "GroupNorm")


def make(name, dtype=np.float64):
    """The layer, with non-trivial affine parameters, in ``dtype``."""
    layer = LAYERS[name][0]().to(dtype)
    rng = np.random.default_rng(len(name))
    for param in layer.parameters():
        param.array[...] = 1 + 0.5 * rng.standard_normal(param.shape)
    return layer


def torch_twin(torch, layer):
    """``layer`` as a ``torch.nn`` module with the same configuration, state and mode."""
    kind = type(layer).__name__
    if isinstance(layer, (nn.LayerNorm, nn.RMSNorm)):
        twin = getattr(torch.nn, kind)(layer.normalized_shape, eps=layer.eps)
    elif isinstance(layer, nn.GroupNorm):
        twin = torch.nn.GroupNorm(layer.num_groups, layer.num_channels, eps=layer.eps)
    else:  # a SyncBatchNorm in a world of one is a BatchNorm
        kind = "BatchNorm1d" if kind == "SyncBatchNorm" else kind
        twin = getattr(torch.nn, kind)(layer.num_features, eps=layer.eps, momentum=layer.momentum,
                                       affine=layer.affine, track_running_stats=layer.track_running_stats)
    twin = twin.double()
    twin.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in layer.state_dict().items()})
    return twin.train(layer.training)


def run_both(torch, layer, x, dy, view=lambda t: t, torch_view=None):
    """Forward + backward of ``layer`` and its torch twin on ``view(x)``; returns both sides'
    ``(y, dx, {param: grad}, {buffer: value})``."""
    twin = torch_twin(torch, layer)
    torch_view = torch_view or view
    results = []
    for module, lib in ((layer, tinynorm), (twin, torch)):
        leaf = lib.tensor(x, requires_grad=True) if lib is tinynorm else torch.tensor(x, requires_grad=True)
        y = module(view(leaf) if lib is tinynorm else torch_view(leaf))
        y.backward(lib.tensor(dy) if lib is tinynorm else torch.tensor(dy))
        grads = {name: p.grad.numpy() for name, p in module.named_parameters()}
        buffers = {name: b.numpy().copy() for name, b in module.named_buffers()} if lib is tinynorm else \
            {name: b.detach().numpy().copy() for name, b in module.named_buffers()}
        results.append((y.detach().numpy() if lib is torch else y.numpy(), leaf.grad.numpy(), grads, buffers))
    return results


def assert_same(ours, theirs, rtol=1e-10, atol=1e-12, buffers=True):
    """Equal outputs, input and parameter gradients (NaN where torch has NaN) and, optionally, buffers."""
    (y, dx, grads, bufs), (ty, tdx, tgrads, tbufs) = ours, theirs
    np.testing.assert_allclose(y, ty, rtol=rtol, atol=atol, err_msg="output")
    np.testing.assert_allclose(dx, tdx, rtol=rtol * 1e3, atol=atol * 1e3, err_msg="input gradient")
    for name in tgrads:
        np.testing.assert_allclose(grads[name], tgrads[name], rtol=rtol * 1e3, atol=atol * 1e3, err_msg=name)
    if buffers:
        for name in tbufs:
            np.testing.assert_allclose(bufs[name], tbufs[name], rtol=rtol, atol=atol, err_msg=name)


def shifted(shape, position, amount):
    """``shape`` with ``amount`` added at ``position``."""
    shape = list(shape)
    shape[position] += amount
    return tuple(shape)


# ------------------------------------------------------------------------------ wrong types
@pytest.mark.parametrize("bad", [np.ones((2, 3, 4)), [[1.0, 2.0, 3.0, 4.0]], None, 3.0],
                         ids=["ndarray", "list", "None", "float"])
@pytest.mark.parametrize("name", LAYER_NAMES)
def test_layer_input_must_be_a_tensor(name, bad):
    expected = {np.ndarray: "numpy.ndarray", list: "list", type(None): "NoneType", float: "float"}[type(bad)]
    raises_clearly(lambda: make(name)(bad), "argument 'input'", f"must be Tensor, not {expected}", error=TypeError)


def functional_calls(x_shape=(2, 3, 4)):
    """{name: (function, {argument: valid value})} for the five functions, on float64 data."""
    rng = np.random.default_rng(0)
    x = tinynorm.tensor(rng.standard_normal(x_shape))
    c = x_shape[1]

    def vec(n, value=1.0):
        return tinynorm.tensor(np.full(n, value))

    return {
        "batch_norm": (F.batch_norm, {"input": x, "running_mean": vec(c, 0.0), "running_var": vec(c),
                                      "weight": vec(c), "bias": vec(c, 0.0)}),
        "instance_norm": (F.instance_norm, {"input": x, "running_mean": vec(c, 0.0), "running_var": vec(c),
                                            "weight": vec(c), "bias": vec(c, 0.0)}),
        "layer_norm": (F.layer_norm, {"input": x, "normalized_shape": (4,), "weight": vec(4), "bias": vec(4, 0.0)}),
        "rms_norm": (F.rms_norm, {"input": x, "normalized_shape": (4,), "weight": vec(4)}),
        "group_norm": (F.group_norm, {"input": tinynorm.tensor(rng.standard_normal((2, 4, 3))), "num_groups": 2,
                                      "weight": vec(4), "bias": vec(4, 0.0)}),
    }


TENSOR_ARGUMENTS = [(fn, arg) for fn, (_, args) in functional_calls().items() for arg in args
                    if arg not in ("normalized_shape", "num_groups")]


@pytest.mark.parametrize("fn, argument", TENSOR_ARGUMENTS, ids=[f"{f}-{a}" for f, a in TENSOR_ARGUMENTS])
def test_functional_tensor_arguments_must_be_tensors(fn, argument):
    function, args = functional_calls()[fn]
    for bad, expected in ((args[argument].numpy(), "numpy.ndarray"), (args[argument].numpy().tolist(), "list")):
        raises_clearly(lambda: function(**{**args, argument: bad}), f"{fn}(): argument '{argument}'",
                       f"must be Tensor, not {expected}", error=TypeError)


def test_functional_none_input_names_the_argument():
    for fn, (function, args) in functional_calls().items():
        raises_clearly(lambda: function(**{**args, "input": None}), f"{fn}(): argument 'input'", "NoneType",
                       error=TypeError)


# ------------------------------------------------------------------- wrong rank, shape, dtype
@pytest.mark.parametrize("name", LAYER_NAMES)
def test_wrong_rank_names_the_input_and_its_shape(name):
    layer, shape = make(name), LAYERS[name][1]
    too_few = shape[-1:] if name == "LayerNorm-2d" else shape[:1]
    raises_clearly(lambda: layer(tinynorm.ones(*too_few, dtype=np.float64)), "input", str(tuple(too_few)),
                   error=ValueError)
    if name.startswith(("BatchNorm2d", "BatchNorm3d", "InstanceNorm")):
        too_many = shape + (2,)
        raises_clearly(lambda: layer(tinynorm.ones(*too_many, dtype=np.float64)), "input", str(too_many),
                       error=ValueError)


@pytest.mark.parametrize("name", LAYER_NAMES)
def test_wrong_size_names_the_input_and_its_shape(name):
    """One channel too many (or, for LayerNorm/RMSNorm, a wrong trailing dim)."""
    layer, shape = make(name), LAYERS[name][1]
    bad = shifted(shape, 1 if name.startswith(CHANNEL_FIRST) else -1, 1)
    raises_clearly(lambda: layer(tinynorm.ones(*bad, dtype=np.float64)), "input", str(bad), error=ValueError)


LAYER_AND_FUNCTION = {  # name: (layer, the same call as a function, a bad input shape)
    "LayerNorm": (lambda: nn.LayerNorm(4), lambda x, l: F.layer_norm(x, (4,), l.weight, l.bias), (2, 5)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda x, l: F.group_norm(x, 2, l.weight, l.bias), (2, 5, 3)),
    "GroupNorm-groups": (lambda: nn.GroupNorm(4, 4, affine=False), lambda x, l: F.group_norm(x, 4), (2, 6, 3)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(3), lambda x, l: F.batch_norm(
        x, l.running_mean, l.running_var, l.weight, l.bias, True), (4, 2)),
    "BatchNorm1d-one-value": (lambda: nn.BatchNorm1d(3), lambda x, l: F.batch_norm(
        x, l.running_mean, l.running_var, l.weight, l.bias, True), (1, 3)),
}


@pytest.mark.parametrize("name", list(LAYER_AND_FUNCTION))
def test_layer_and_function_refuse_bad_input_with_one_error(name):
    """The input is checked against the parameters in the function alone, so the layer's error is the
    function's (the same type and message, from one check)."""
    make_layer, function, bad = LAYER_AND_FUNCTION[name]
    layer, x = make_layer(), tinynorm.ones(*bad)
    with pytest.raises(ValueError) as from_layer:
        layer(x)
    with pytest.raises(ValueError) as from_function:
        function(x, layer)
    assert str(from_layer.value) == str(from_function.value)


def test_layers_without_parameters_take_any_channel_count_as_pytorch():
    """Only parameters and running statistics fix the channel count (InstanceNorm excepted, see
    docs/normalization.md): without them BatchNorm and GroupNorm normalize what they get."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((4, 6, 3))
    for ours, theirs in ((nn.BatchNorm1d(3, affine=False, track_running_stats=False),
                          torch.nn.BatchNorm1d(3, affine=False, track_running_stats=False)),
                         (nn.GroupNorm(2, 4, affine=False), torch.nn.GroupNorm(2, 4, affine=False))):
        np.testing.assert_allclose(ours(tinynorm.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(),
                                   rtol=1e-10, atol=1e-12)


PARAMETER_SHAPES = [  # (function, argument, bad shape, the shape it must have)
    ("layer_norm", "weight", (2, 2), (4,)), ("layer_norm", "weight", (4, 1), (4,)),
    ("layer_norm", "weight", (12,), (4,)), ("layer_norm", "bias", (5,), (4,)),
    ("rms_norm", "weight", (2, 2), (4,)), ("rms_norm", "weight", (12,), (4,)),
    ("group_norm", "weight", (3,), (4,)), ("group_norm", "bias", (4, 1), (4,)),
    ("batch_norm", "running_mean", (5,), (3,)), ("batch_norm", "running_var", (2,), (3,)),
    ("batch_norm", "weight", (3, 1), (3,)), ("instance_norm", "running_mean", (4,), (3,)),
    ("instance_norm", "bias", (1,), (3,)),
]


@pytest.mark.parametrize("fn, argument, bad, expected", PARAMETER_SHAPES,
                         ids=[f"{f}-{a}-{b}" for f, a, b, _ in PARAMETER_SHAPES])
def test_parameters_of_the_wrong_shape_are_refused(fn, argument, bad, expected):
    """Never flattened or broadcast: the message names the argument, its shape and the expected one."""
    function, args = functional_calls()[fn]
    raises_clearly(lambda: function(**{**args, argument: tinynorm.ones(*bad, dtype=np.float64)}),
                   f"expected {argument} of shape {expected}", f"got {bad}", error=ValueError)


def test_running_stats_come_in_pairs():
    function, args = functional_calls()["batch_norm"]
    raises_clearly(lambda: function(**{**args, "running_var": None}, training=True), "running_mean and running_var",
                   error=ValueError)


@pytest.mark.parametrize("fn", list(functional_calls()))
def test_integer_input_is_a_type_error_naming_its_dtype(fn):
    function, args = functional_calls()[fn]
    as_int = tinynorm.tensor(args["input"].numpy().astype(np.int64))
    raises_clearly(lambda: function(**{**args, "input": as_int}), f"{fn}: expected input of a floating-point dtype",
                   "got tinynorm.int64", error=TypeError)


def test_rms_norm_without_affine_on_int_input():
    raises_clearly(lambda: nn.RMSNorm(3, elementwise_affine=False)(tinynorm.ones(2, 3, dtype="int64")),
                   "rms_norm: expected input of a floating-point dtype", "int64", error=TypeError)


@pytest.mark.parametrize("fn, argument", [("batch_norm", "running_mean"), ("batch_norm", "running_var"),
                                          ("batch_norm", "weight"), ("layer_norm", "weight"),
                                          ("group_norm", "bias"), ("instance_norm", "running_var")])
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_parameter_dtype_must_match_the_input(fn, argument, dtype):
    """int64 running buffers would truncate the update (PyTorch raises on the mix); float32 parameters
    meet float64 input only by an explicit conversion."""
    function, args = functional_calls()[fn]
    bad = tinynorm.tensor(args[argument].numpy().astype(dtype))
    raises_clearly(lambda: function(**{**args, argument: bad}, **({"training": True} if fn == "batch_norm" else {})),
                   f"{fn}: {argument} has dtype tinynorm.{dtype} but input has dtype tinynorm.float64", error=TypeError)
    assert np.array_equal(bad.numpy(), args[argument].numpy().astype(dtype)), "nothing was written"


class TwoRanks:
    """A communicator of two processes whose other rank holds this rank's data (what SyncBatchNorm's
    global statistics need, without mpiexec)."""

    def Get_size(self):
        return 2

    def Allgather(self, send, receive):
        receive[...] = send

    def Allreduce(self, send, receive, op=None):
        receive *= 2


@pytest.mark.parametrize("bad, error, message", [
    (lambda: tinynorm.ones(4, 3, dtype="int64"), TypeError, "sync_batch_norm: expected input of a floating-point"),
    (lambda: tinynorm.ones(4, 3, dtype=np.float64), TypeError, "sync_batch_norm: running_mean has dtype tinynorm.float32 "
                                                               "but input has dtype tinynorm.float64"),
], ids=["int-input", "float64-input-float32-layer"])
def test_sync_batch_norm_across_processes_checks_like_batch_norm(bad, error, message):
    """The global-batch path (more than one process) refuses what BatchNorm refuses, before any
    message is sent or any buffer written."""
    layer = nn.SyncBatchNorm(3, process_group=TwoRanks())
    raises_clearly(lambda: layer(bad()), message, error=error)
    np.testing.assert_array_equal(layer.running_mean.numpy(), np.zeros(3))
    assert layer.num_batches_tracked.item() == 0


# ------------------------------------------------------------------------------ zero-size inputs
def zero_size_shapes(name):
    """Shapes of LAYERS[name] with no values: an empty batch, and (where a layer allows it) empty
    spatial or normalized dims."""
    shape = LAYERS[name][1]
    shapes = [(0,) + shape[1:]]
    if name.startswith(("BatchNorm1d-NCL", "BatchNorm2d", "InstanceNorm", "GroupNorm", "SyncBatchNorm")):
        shapes.append(shape[:2] + (0,) + shape[3:])
    return shapes


ZERO_SIZE = [(name, shape) for name in LAYER_NAMES for shape in zero_size_shapes(name)]


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("name, shape", ZERO_SIZE, ids=[f"{n}-{s}" for n, s in ZERO_SIZE])
def test_zero_size_inputs_give_torchs_results(name, shape, training):
    """Empty outputs and zero parameter gradients, as PyTorch; BatchNorm's running statistics stay as
    they are (an empty batch has no statistics). PyTorch's InstanceNorm turns them into NaN: tinynorm
    leaves them too (docs/normalization.md)."""
    torch = pytest.importorskip("torch")
    layer = make(name).train(training)
    if name == "InstanceNorm1d" and shape[0] == 0:  # PyTorch fails here with an IndexError
        assert layer(tinynorm.ones(*shape, dtype=np.float64)).shape == shape
        np.testing.assert_array_equal(layer.running_var.numpy(), np.ones(3))
        return
    ours, theirs = run_both(torch, layer, np.ones(shape), np.ones(shape))
    assert ours[0].shape == theirs[0].shape == shape
    if name == "GroupNorm" and shape[2] == 0:  # PyTorch's weight and bias gradients are NaN: a sum of nothing is 0
        assert all(np.array_equal(grad, np.zeros(4)) for grad in ours[2].values())
        ours, theirs = ours[:2] + ({},) + ours[3:], theirs[:2] + ({},) + theirs[3:]
    assert_same(ours, theirs, buffers=name != "InstanceNorm1d")
    if name == "InstanceNorm1d":
        np.testing.assert_array_equal(ours[3]["running_mean"], np.zeros(3))


@pytest.mark.parametrize("call, shape", [
    (lambda x: F.layer_norm(x, (0,)), (8, 0)), (lambda x: F.layer_norm(x, (8, 0)), (8, 0)),
    (lambda x: F.rms_norm(x, (0,)), (3, 0)), (lambda x: F.instance_norm(x), (0, 4, 5)),
    (lambda x: F.group_norm(x, 2), (0, 4, 3)), (lambda x: F.group_norm(x, 2), (2, 4, 0)),
    (lambda x: F.batch_norm(x, None, None, training=True), (0, 3)),
], ids=["layer_norm-(8,0)", "layer_norm-all", "rms_norm", "instance_norm", "group_norm-batch", "group_norm-spatial",
        "batch_norm"])
def test_functional_zero_size_inputs_give_empty_results(call, shape):
    y = call(tinynorm.ones(*shape, dtype=np.float64))
    assert y.shape == shape


# ---------------------------------------------------------------- non-contiguous and strides
VIEWS = {  # name: (tinynorm view, the same view in torch)
    "negative-stride-last": (lambda t: t[..., ::-1], lambda t: t.flip(-1)),
    "negative-stride-batch": (lambda t: t[::-1], lambda t: t.flip(0)),
    "every-other-sample": (lambda t: t[::2], lambda t: t[::2]),
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("name", LAYER_NAMES)
def test_strided_views_give_torchs_results(name, view):
    """Forward, input and parameter gradients and running statistics on a strided view, as PyTorch."""
    torch = pytest.importorskip("torch")
    shape = shifted(LAYERS[name][1], 0, LAYERS[name][1][0])  # twice the batch, so every-other keeps it
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape) * 2 + 1
    ours_view, torch_view = VIEWS[view]
    dy = rng.standard_normal(ours_view(x).shape)
    ours, theirs = run_both(torch, make(name), x, dy, ours_view, torch_view)
    assert_same(ours, theirs)


def test_permuted_input_gives_torchs_results():
    """A channels-last tensor permuted to (N, C, H, W): strides in every dim."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 5, 3))
    for name in ("BatchNorm2d", "InstanceNorm2d"):
        ours, theirs = run_both(torch, make(name), x, rng.standard_normal((2, 3, 4, 5)),
                                lambda t: t.permute(0, 3, 1, 2), lambda t: t.permute(0, 3, 1, 2))
        assert_same(ours, theirs)


# ------------------------------------------------------------------------ NaN, Inf, huge values
@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("name", LAYER_NAMES)
def test_nan_and_inf_stay_where_torch_puts_them(name, value):
    """A NaN or Inf spoils its own row, group or channel (output, gradients and running statistics:
    an Inf gives running_mean inf and running_var NaN) exactly where PyTorch's does."""
    torch = pytest.importorskip("torch")
    shape = LAYERS[name][1]
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape)
    x[(1,) * len(shape)] = value
    ours, theirs = run_both(torch, make(name), x, rng.standard_normal(shape))
    for mine, torchs in zip(ours[:2] + (ours[3].get("running_mean"),), theirs[:2] + (theirs[3].get("running_mean"),)):
        if torchs is not None:
            np.testing.assert_array_equal(np.isnan(mine), np.isnan(torchs))
            np.testing.assert_array_equal(np.isinf(mine), np.isinf(torchs))
    assert_same(ours, theirs, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", ["BatchNorm1d", "BatchNorm2d", "GroupNorm", "InstanceNorm1d", "LayerNorm", "RMSNorm"])
@pytest.mark.parametrize("scale", [1e25, 1e-25])
def test_huge_and_tiny_float32_values_normalize_like_float64(name, scale):
    """Data around 1e25 (squares overflow float32) or 1e-25 with eps = 0 (squares underflow): the
    output of the float64 reference, where PyTorch's float32 norms give zeros or NaN."""
    eps = 0.0 if scale < 1 else 1e-5
    layer, twin = make(name, np.float32), make(name, np.float64)
    shape = LAYERS[name][1]
    x = ((np.random.default_rng(6).standard_normal(shape) + 0.5) * scale).astype(np.float32)
    layer.eps = eps
    y = layer(tinynorm.tensor(x)).numpy()
    k = int(round(math.log2(scale)))  # normalization does not see a power-of-two scale (eps scaled with it)
    twin.eps = math.ldexp(eps, -2 * k)
    want = twin(tinynorm.tensor(np.ldexp(x.astype(np.float64), -k))).numpy()
    np.testing.assert_allclose(y, want, rtol=2e-5, atol=2e-5)


# ------------------------------------------------------------------- eps, momentum, groups
BAD_EPS = [(-1.0, ValueError, "got -1.0"), (float("nan"), ValueError, "got nan"), ("1e-5", TypeError, "'1e-5' (str)")]


@pytest.mark.parametrize("eps, error, received", BAD_EPS, ids=["negative", "nan", "str"])
@pytest.mark.parametrize("name", LAYER_NAMES)
def test_eps_out_of_range_is_refused_by_constructor_and_assignment(name, eps, error, received):
    kind = type(make(name))
    constructor = {nn.GroupNorm: lambda: kind(2, 4, eps=eps), nn.LayerNorm: lambda: kind(4, eps=eps),
                   nn.RMSNorm: lambda: kind(4, eps=eps)}.get(kind, lambda: kind(3, eps=eps))
    raises_clearly(constructor, f"{kind.__name__}: eps must be", received, error=error)
    layer = make(name)
    before = layer.eps
    raises_clearly(lambda: setattr(layer, "eps", eps), f"{kind.__name__}: eps must be", received, error=error)
    assert layer.eps == before


@pytest.mark.parametrize("eps, error, received", BAD_EPS + [(None, TypeError, "None (NoneType)")],
                         ids=["negative", "nan", "str", "None"])
@pytest.mark.parametrize("fn", list(functional_calls()))
def test_eps_out_of_range_is_refused_by_the_functions(fn, eps, error, received):
    function, args = functional_calls()[fn]
    if fn == "rms_norm" and eps is None:
        assert function(**args, eps=None).shape == args["input"].shape  # the dtype's machine epsilon
        return
    raises_clearly(lambda: function(**args, eps=eps), f"{fn}: eps must be", received, error=error)


BAD_MOMENTUM = [(5.0, ValueError, "got 5.0"), (-0.1, ValueError, "got -0.1"), (float("nan"), ValueError, "got nan"),
                ("0.1", TypeError, "'0.1' (str)")]


@pytest.mark.parametrize("momentum, error, received", BAD_MOMENTUM, ids=["5", "negative", "nan", "str"])
@pytest.mark.parametrize("name", [n for n in LAYER_NAMES if n.startswith(("BatchNorm", "Sync", "Instance"))])
def test_momentum_out_of_range_is_refused_by_constructor_and_assignment(name, momentum, error, received):
    layer = make(name)
    kind = type(layer).__name__
    raises_clearly(lambda: type(layer)(3, momentum=momentum), f"{kind}: momentum must be", received, error=error)
    raises_clearly(lambda: setattr(layer, "momentum", momentum), f"{kind}: momentum must be", received, error=error)
    assert layer.momentum == 0.1
    layer.momentum = None  # a cumulative average: allowed
    assert layer.momentum is None


@pytest.mark.parametrize("momentum, error, received", BAD_MOMENTUM + [(None, TypeError, "None (NoneType)")],
                         ids=["5", "negative", "nan", "str", "None"])
@pytest.mark.parametrize("fn", ["batch_norm", "instance_norm"])
def test_momentum_out_of_range_is_refused_by_the_functions(fn, momentum, error, received):
    function, args = functional_calls()[fn]
    before = args["running_mean"].numpy().copy()
    raises_clearly(lambda: function(**args, momentum=momentum), f"{fn}: momentum must be", received, error=error)
    np.testing.assert_array_equal(args["running_mean"].numpy(), before)


@pytest.mark.parametrize("fn, argument", [("batch_norm", "training"), ("instance_norm", "use_input_stats")])
@pytest.mark.parametrize("bad", [1, "yes"])
def test_mode_flags_must_be_bools(fn, argument, bad):
    function, args = functional_calls()[fn]
    raises_clearly(lambda: function(**args, **{argument: bad}), f"{fn}: {argument} must be a bool", repr(bad),
                   error=TypeError)


@pytest.mark.parametrize("groups, error, received", [
    (0, ValueError, "got 0"), (-1, ValueError, "got -1"), (3, ValueError, "got 3"), (2.0, TypeError, "2.0 (float)"),
    (True, TypeError, "True (bool)"), ("2", TypeError, "'2' (str)"),
])
def test_group_counts_are_checked_before_any_division(groups, error, received):
    function, args = functional_calls()["group_norm"]
    raises_clearly(lambda: function(**{**args, "num_groups": groups}), "group_norm: num_groups must be", received,
                   error=error)


def test_one_value_per_group_or_instance_is_refused():
    """A group of one value has no variance (it would normalize to 0 whatever the input)."""
    raises_clearly(lambda: F.group_norm(tinynorm.ones(2, 4), 4), "more than 1 value per group", "(2, 4)",
                   error=ValueError)
    raises_clearly(lambda: nn.GroupNorm(4, 4)(tinynorm.ones(2, 4, 1)), "more than 1 value per group", error=ValueError)
    raises_clearly(lambda: nn.InstanceNorm1d(3)(tinynorm.ones(2, 3, 1)), "more than 1 spatial element",
                   "(2, 3, 1)", error=ValueError)
    layer = nn.BatchNorm2d(3)
    raises_clearly(lambda: layer(tinynorm.ones(1, 3, 1, 1)), "batch_norm: Expected more than 1 value per channel",
                   "(1, 3, 1, 1)", error=ValueError)
    assert layer.num_batches_tracked.item() == 0, "a refused batch is not counted"
    assert layer.eval()(tinynorm.ones(1, 3, 1, 1)).shape == (1, 3, 1, 1)  # running statistics: fine


@pytest.mark.parametrize("constructor", [
    lambda: nn.GroupNorm(0, 4), lambda: nn.GroupNorm(2, 0), lambda: nn.GroupNorm(3, 4), lambda: nn.GroupNorm(2.0, 4),
    lambda: nn.BatchNorm1d(0), lambda: nn.BatchNorm2d(3.0), lambda: nn.InstanceNorm1d(True),
], ids=["groups-0", "channels-0", "groups-3", "groups-float", "features-0", "features-float", "features-bool"])
def test_sizes_of_layers_are_positive_ints(constructor):
    raises_clearly(constructor, "must be", error=ValueError)


@pytest.mark.parametrize("shape, error, received", [
    ("4", TypeError, "'4'"), ((4.0,), TypeError, "(4.0,)"), ((-1,), ValueError, "(-1,)"), ((), ValueError, "()"),
    (None, TypeError, "None"),
])
def test_normalized_shape_is_checked(shape, error, received):
    for call in (lambda: F.layer_norm(tinynorm.ones(2, 4), shape), lambda: F.rms_norm(tinynorm.ones(2, 4), shape),
                 lambda: nn.LayerNorm(shape), lambda: nn.RMSNorm(shape)):
        raises_clearly(call, "normalized_shape", received, error=error)


# ------------------------------------------------------------------------ property-based sweep
@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm"]),
       st.lists(st.integers(1, 4), min_size=3, max_size=4), st.integers(0, 2**32 - 1),
       st.sampled_from([0.0, 1e-5, 0.5]), st.booleans())
def test_random_shapes_and_values_give_torchs_results(fn, shape, seed, eps, constant):
    """Any small shape, eps (0 included) and data (constant data included: NaN with eps = 0, as in
    PyTorch): forward and input gradient equal PyTorch's, or both refuse the input."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    x = np.full(shape, 2.5) if constant else rng.standard_normal(shape) * 3 + 1
    dy = rng.standard_normal(shape)
    c = shape[1]
    calls = {
        "layer_norm": lambda f, t: f.layer_norm(t, shape[-2:], eps=eps),
        "rms_norm": lambda f, t: f.rms_norm(t, shape[-1:], eps=eps),
        "group_norm": lambda f, t: f.group_norm(t, 1 if c % 2 else 2, eps=eps),
        "batch_norm": lambda f, t: f.batch_norm(t, None, None, training=True, eps=eps),
        "instance_norm": lambda f, t: f.instance_norm(t, eps=eps),
    }
    results = []
    for lib, functional in ((tinynorm, F), (torch, torch.nn.functional)):
        leaf = lib.tensor(x, requires_grad=True)
        try:
            y = calls[fn](functional, leaf)
        except (ValueError, RuntimeError) as error:
            results.append(type(error))
            continue
        y.backward(lib.tensor(dy))
        results.append((y.detach().numpy(), leaf.grad.numpy()))
    ours, theirs = results
    if isinstance(ours, type) or isinstance(theirs, type):
        refused_by_both = isinstance(ours, type) and isinstance(theirs, type)
        # tinynorm refuses a group of one value, which PyTorch normalizes to eps noise (it raises only for a
        # batch of one); PyTorch refuses batch_norm with eps = 0 when training, tinynorm gives IEEE results
        assert (refused_by_both or (isinstance(ours, type) and fn == "group_norm")
                or (isinstance(theirs, type) and fn == "batch_norm" and eps == 0)), (ours, theirs)
        return
    if fn == "instance_norm" and eps == 0 and constant:
        # 0 / 0 is NaN in every tinynorm norm, as in PyTorch's LayerNorm and GroupNorm; PyTorch's
        # InstanceNorm alone returns the bias there (docs/normalization.md)
        assert np.isnan(ours[0]).all() and not np.isnan(theirs[0]).any()
        return
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-8, atol=1e-9)
    scale = np.abs(theirs[1][np.isfinite(theirs[1])]).max(initial=1.0)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, atol=1e-6 * scale)
