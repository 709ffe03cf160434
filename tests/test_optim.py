"""Optimizer mechanics: in-place updates that leave gradients alone, parameter groups, zero_grad,
closures, repr; and clear errors for bad parameters, options and gradients, raised before anything
changes. (Update rules: test_optim_rules.py; state dicts: test_optim_state.py; schedulers:
test_optim_schedulers.py.)"""
import numpy as np
import pytest

import tinynorm as tn
from tinynorm import optim
from tinynorm.optim import SGD, Adagrad, Adam, AdamW, Optimizer

ALL = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]
# options that make each rule use every buffer it has
FULL_OPTIONS = {"SGD": dict(lr=0.1, momentum=0.9, weight_decay=0.1), "Adam": dict(amsgrad=True),
                "RMSprop": dict(momentum=0.9, centered=True)}


@pytest.mark.parametrize("name", ALL)
def test_updates_in_place_without_touching_the_gradient(name):
    p = tn.randn(3, 4, requires_grad=True)
    storage, before = p.array, p.numpy().copy()
    grad = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    p.grad = tn.tensor(grad.copy())
    optimizer = getattr(optim, name)([p], **FULL_OPTIONS.get(name, {}))
    for _ in range(3):
        optimizer.step()
    assert p.array is storage  # modules keep a reference to this very array
    assert not np.array_equal(p.numpy(), before)
    np.testing.assert_array_equal(p.grad.numpy(), grad)
    assert p.grad_fn is None  # the update was not recorded
    for value in optimizer.state[p].values():
        if isinstance(value, tn.Tensor):
            assert value.dtype == np.float32 and value.shape == p.shape and not value.requires_grad


def test_parameters_without_gradient_are_skipped():
    a, b = tn.randn(3, requires_grad=True), tn.randn(3, requires_grad=True)
    before = b.numpy().copy()
    optimizer = Adam([a, b])
    a.grad = tn.ones(3)
    optimizer.step()
    np.testing.assert_array_equal(b.numpy(), before)
    assert b not in optimizer.state and optimizer.state[a]["step"] == 1


def test_param_groups_use_their_own_options():
    a, b = tn.zeros(2, requires_grad=True), tn.zeros(3, requires_grad=True)
    optimizer = SGD([{"params": [a]}, {"params": [b], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert optimizer.param_groups[0]["momentum"] == 0 and optimizer.param_groups[1]["lr"] == 0.5
    for _ in range(2):
        a.grad, b.grad = tn.ones(2), tn.ones(3)
        optimizer.step()
    np.testing.assert_allclose(a.numpy(), -0.2, rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), -0.5 * (1 + 1.9), rtol=1e-6)  # buffer: 1, then 0.9 * 1 + 1
    assert "momentum_buffer" not in optimizer.state.get(a, {})


def test_add_param_group_fills_in_defaults():
    a, b = tn.zeros(2, requires_grad=True), tn.zeros(2, requires_grad=True)
    optimizer = Adam([a], lr=0.1, betas=(0.5, 0.6))
    optimizer.add_param_group({"params": b, "lr": 0.2})
    assert optimizer.param_groups[1]["lr"] == 0.2 and optimizer.param_groups[1]["betas"] == (0.5, 0.6)
    assert optimizer.param_groups[1]["params"] == [b]


def test_empty_groups_and_named_parameters_are_accepted():
    """As in PyTorch: a group may be empty (a no-decay group of a model without biases), and
    ``model.named_parameters()`` gives each group its ``param_names``."""
    model = tn.nn.Linear(3, 2)
    optimizer = SGD([{"params": model.named_parameters()}, {"params": [], "weight_decay": 0.0}], lr=0.1)
    assert optimizer.param_groups[0]["param_names"] == ["weight", "bias"]
    assert optimizer.param_groups[0]["params"] == [model.weight, model.bias]
    assert optimizer.param_groups[1]["params"] == []
    model(tn.ones(1, 3)).sum().backward()
    optimizer.step()
    assert "param_names" in optimizer.state_dict()["param_groups"][0]


def test_adagrad_state_exists_from_construction():
    """As in PyTorch: Adagrad's accumulators start at initial_accumulator_value for every parameter."""
    p = tn.zeros(3, requires_grad=True)
    optimizer = Adagrad([p], initial_accumulator_value=0.25)
    assert optimizer.state[p]["step"] == 0
    np.testing.assert_array_equal(optimizer.state[p]["sum"].numpy(), [0.25] * 3)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    p = tn.randn(3, requires_grad=True)
    (p * p).sum().backward()
    optimizer = SGD([p])
    optimizer.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert p.grad is None
    else:
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3))


def test_closure_is_called_with_grad_enabled():
    p = tn.tensor([1.0, 2.0], requires_grad=True)
    optimizer = SGD([p], lr=0.5)

    def closure():
        optimizer.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with tn.no_grad():
        loss = optimizer.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0])


@pytest.mark.parametrize("name", ALL)
def test_repr_and_group_options_match_torch(name):
    torch = pytest.importorskip("torch")
    ours = getattr(optim, name)([tn.zeros(2, requires_grad=True)])
    theirs = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)])
    assert repr(ours) == repr(theirs)
    assert list(ours.param_groups[0]) == list(theirs.param_groups[0])


def test_frozen_parameters_are_accepted_and_left_alone():
    """As in PyTorch: a tensor that does not require grad may be listed; it has no grad, so it never moves."""
    frozen, trained = tn.ones(2), tn.ones(2, requires_grad=True)
    optimizer = SGD([frozen, trained], lr=0.5)
    (trained * 2).sum().backward()
    optimizer.step()
    np.testing.assert_array_equal(frozen.numpy(), [1, 1])
    np.testing.assert_array_equal(trained.numpy(), [0, 0])


# ----------------------------------------------------------------------------------- errors


def test_bad_parameter_lists_raise_clear_errors():
    p = tn.randn(2, requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        SGD([])
    with pytest.raises(TypeError, match="got a Tensor"):
        SGD(p)
    with pytest.raises(ValueError, match="not a leaf"):
        SGD([p * 2])
    with pytest.raises(TypeError, match="ndarray"):
        SGD([np.zeros(2)])
    with pytest.raises(ValueError, match="more than once"):
        SGD([p, p])
    with pytest.raises(ValueError, match="more than once"):
        SGD([{"params": [p]}, {"params": [p]}])
    with pytest.raises(TypeError, match="got a set"):
        SGD({p})
    with pytest.raises(TypeError, match="not a set"):
        SGD([{"params": {p}}])
    with pytest.raises(ValueError, match=r"\(name, tensor\) pair, or none"):
        SGD([("w", p), tn.randn(2, requires_grad=True)])


# (optimizer, options, error, message): PyTorch's messages for values out of range
INVALID_OPTIONS = [
    ("SGD", dict(lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
    ("SGD", dict(momentum=-1), ValueError, "Invalid momentum value: -1"),
    ("SGD", dict(weight_decay=-0.5), ValueError, "Invalid weight_decay value: -0.5"),
    ("SGD", dict(nesterov=True), ValueError, "Nesterov momentum requires a momentum and zero dampening"),
    ("SGD", dict(momentum=0.9, dampening=0.1, nesterov=True), ValueError, "Nesterov momentum requires"),
    ("Adam", dict(betas=(0.9, 1.0)), ValueError, r"Invalid beta parameter at index 1: 1.0"),
    ("Adam", dict(betas=(-0.1, 0.9)), ValueError, r"Invalid beta parameter at index 0: -0.1"),
    ("Adam", dict(betas=(0, 0.9)), ValueError, "betas must be either both floats or both Tensors"),
    ("Adam", dict(eps=-1e-8), ValueError, "Invalid epsilon value: -1e-08"),
    ("AdamW", dict(weight_decay=-0.01), ValueError, "Invalid weight_decay value: -0.01"),
    ("RMSprop", dict(alpha=-0.5), ValueError, "Invalid alpha value: -0.5"),
    ("RMSprop", dict(momentum=-0.5), ValueError, "Invalid momentum value: -0.5"),
    ("Adagrad", dict(lr_decay=-1), ValueError, "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1), ValueError, "Invalid initial_accumulator_value value: -1"),
    ("Adadelta", dict(rho=1.5), ValueError, "Invalid rho value: 1.5"),
    ("Adamax", dict(betas=(0.9, 1.5)), ValueError, "Invalid beta parameter at index 1: 1.5"),
    ("NAdam", dict(momentum_decay=-1), ValueError, "Invalid momentum_decay value: -1"),
    ("RAdam", dict(lr=-1), ValueError, "Invalid learning rate: -1"),
    ("SGD", dict(foreach=True, fused=True), RuntimeError, "`fused` and `foreach` cannot be `True` together."),
]


@pytest.mark.parametrize("name, options, error, message", INVALID_OPTIONS)
def test_options_out_of_range_raise_pytorchs_errors(name, options, error, message):
    with pytest.raises(error, match=message):
        getattr(optim, name)([tn.randn(2, requires_grad=True)], **options)
    torch = pytest.importorskip("torch")
    with pytest.raises(error, match=message):
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **options)


@pytest.mark.parametrize("name, options, error, message", [
    ("SGD", dict(lr="fast"), TypeError, r"SGD: lr must be a real number, got 'fast' \(str\)"),
    ("SGD", dict(momentum="0.9"), TypeError, "momentum must be a real number, got '0.9'"),
    ("SGD", dict(lr=True), TypeError, "lr must be a real number, got True"),
    ("SGD", dict(lr=float("nan")), ValueError, "Invalid learning rate: nan"),
    ("SGD", dict(lr=tn.tensor(0.1)), TypeError, "tensor options are not supported"),
    ("SGD", dict(nesterov="yes", momentum=0.9), TypeError, "nesterov must be a bool, got 'yes'"),
    ("Adam", dict(betas="ab"), TypeError, r"betas must be a pair of numbers \(beta1, beta2\), got 'ab'"),
    ("Adam", dict(betas=(0.9,)), TypeError, "betas must be a pair"),
    ("Adam", dict(betas=(0.9, "x")), TypeError, r"betas\[1\] must be a real number, got 'x'"),
    ("Adam", dict(eps=None), TypeError, "eps must be a real number, got None"),
    ("Adam", dict(capturable=True), ValueError, "capturable=True is not supported"),
    ("RMSprop", dict(differentiable=True), ValueError, "differentiable=True is not supported"),
    ("SGD", dict(foreach="yes"), TypeError, "foreach must be None or a bool"),
])
def test_options_of_the_wrong_type_raise_clear_errors(name, options, error, message):
    """PyTorch answers these with raw comparison errors ('<' not supported...), or lets NaN through."""
    with pytest.raises(error, match=message):
        getattr(optim, name)([tn.randn(2, requires_grad=True)], **options)


def test_a_bad_group_option_is_refused_when_the_group_is_added():
    optimizer = SGD([tn.randn(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1.0"):
        optimizer.add_param_group({"params": [tn.randn(2, requires_grad=True)], "lr": -1.0})
    assert len(optimizer.param_groups) == 1


@pytest.mark.parametrize("name", ALL)
def test_a_gradient_of_the_wrong_shape_is_refused_before_anything_changes(name):
    """SGD on numpy would broadcast a (3,) gradient onto a (2, 3) parameter; Adam would fail inside numpy."""
    good, bad = tn.randn(4, requires_grad=True), tn.randn(2, 3, requires_grad=True)
    optimizer = getattr(optim, name)([{"params": [good]}, {"params": [bad]}])
    good.grad, bad.grad = tn.ones(4), tn.ones(3)
    before = [good.numpy().copy(), bad.numpy().copy()]
    with pytest.raises(RuntimeError, match=r"param_groups\[1\]\['params'\]\[0\] has shape \(2, 3\), but its "
                                           r"gradient has shape \(3,\)"):
        optimizer.step()
    np.testing.assert_array_equal(good.numpy(), before[0])  # group 0 was not updated either
    np.testing.assert_array_equal(bad.numpy(), before[1])


def test_gradients_that_are_not_floating_tensors_are_refused():
    p = tn.zeros(3, requires_grad=True)
    optimizer = Adam([p])
    p.grad = np.ones(3)
    with pytest.raises(TypeError, match=r"\.grad must be a Tensor, got ndarray"):
        optimizer.step()
    p.grad = tn.tensor([1, 2, 3])
    with pytest.raises(TypeError, match="grad must be floating, got dtype int64"):
        optimizer.step()


def test_a_float64_gradient_updates_a_float32_parameter_in_its_dtype():
    p = tn.zeros(3, requires_grad=True)
    p.grad = tn.tensor([1.0, 2.0, 3.0], dtype=tn.float64)
    AdamW([p], lr=0.1).step()
    assert p.dtype == np.float32
    np.testing.assert_allclose(p.numpy(), [-0.1] * 3, rtol=1e-5)


def test_optimizer_base_class_needs_an_update_rule():
    p = tn.zeros(1, requires_grad=True)
    p.grad = tn.ones(1)
    with pytest.raises(NotImplementedError, match="defines no update rule"):
        Optimizer([p], {"lr": 0.1}).step()
