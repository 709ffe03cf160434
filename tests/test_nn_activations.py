"""Activation functions and modules against PyTorch: values, gradients (random upstream), in-place
variants, errors and reprs; float64 finite differences for the new Functions.

Every test takes a ``device``; ``tests/cuda/sim_nn_api.py`` runs them on ``'cuda'`` in the simulator.
"""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import host, leaves, same, same_error, torch
from tinynorm.autograd import gradcheck


# Values around every kink (0, +-3 for the hard functions), both tails, and the thresholds of softplus.
X = np.concatenate([np.linspace(-6, 6, 25), [-3.0, 3.0, 0.0, -40.0, 40.0, 19.9, 20.1, -1e-9, 1e-9]])

ACTIVATIONS = {
    "silu": lambda lib, x: lib.nn.functional.silu(x),
    "leaky_relu": lambda lib, x: lib.nn.functional.leaky_relu(x, 0.2),
    "elu": lambda lib, x: lib.nn.functional.elu(x, alpha=1.5),
    "selu": lambda lib, x: lib.nn.functional.selu(x),
    "celu": lambda lib, x: lib.nn.functional.celu(x, alpha=0.7),
    "softplus": lambda lib, x: lib.nn.functional.softplus(x),
    "softplus beta": lambda lib, x: lib.nn.functional.softplus(x, beta=2.0, threshold=5.0),
    "mish": lambda lib, x: lib.nn.functional.mish(x),
    "hardswish": lambda lib, x: lib.nn.functional.hardswish(x),
    "hardsigmoid": lambda lib, x: lib.nn.functional.hardsigmoid(x),
    "hardtanh": lambda lib, x: lib.nn.functional.hardtanh(x, -2.0, 3.0),
    "relu6": lambda lib, x: lib.nn.functional.relu6(x),
    "logsigmoid": lambda lib, x: lib.nn.functional.logsigmoid(x),
    "softsign": lambda lib, x: lib.nn.functional.softsign(x),
    "tanhshrink": lambda lib, x: lib.nn.functional.tanhshrink(x),
    "threshold": lambda lib, x: lib.nn.functional.threshold(x, 0.5, -2.0),
    "gelu tanh": lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh"),
    "relu": lambda lib, x: lib.nn.functional.relu(x),
    "sigmoid": lambda lib, x: lib.nn.functional.sigmoid(x),
    "hardshrink": lambda lib, x: lib.nn.functional.hardshrink(x, 3.0),  # X holds +-3: the kinks
    "softshrink": lambda lib, x: lib.nn.functional.softshrink(x, 3.0),
    "softshrink default": lambda lib, x: lib.nn.functional.softshrink(x),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_values_and_gradients_match_torch(name, device):
    same(ACTIVATIONS[name], X, device=device, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["silu", "elu", "celu", "softplus beta", "mish", "logsigmoid", "glu", "softshrink"])
def test_new_functions_pass_gradcheck(name, device):
    fn = ACTIVATIONS.get(name, lambda lib, x: lib.nn.functional.glu(x, 0))
    x = tn.tensor(np.random.default_rng(0).standard_normal((4, 3)) * 3, device=device, requires_grad=True)
    assert gradcheck(lambda t: fn(tn, t), (x,))


def test_float32_activations_keep_precision_in_the_tails(device):
    """softplus, logsigmoid and elu near 0 and far out, in float32: PyTorch's numbers, not 0 or 1 - 1."""
    x = np.array([-90.0, -30.0, -1e-7, 1e-7, 15.0], np.float32)
    for fn in ("softplus", "logsigmoid", "elu", "celu", "silu", "mish"):
        same(ACTIVATIONS[fn], x, device=device, rtol=2e-6, atol=1e-36)  # PyTorch flushes silu(-90) to -0


def test_prelu_matches_torch_per_channel_and_shared(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4))
    same(lambda lib, t, w: lib.nn.functional.prelu(t, w), x, np.array([0.1, -0.3, 0.5]), device=device)
    same(lambda lib, t, w: lib.nn.functional.prelu(t, w), x, np.array([0.2]), device=device)
    same(lambda lib, t, w: lib.nn.functional.prelu(t, w), x[0, 0], np.array([0.2]), device=device)
    same_error(lambda lib, t, w: lib.nn.functional.prelu(t, w), x, np.ones(4), device=device)
    w = tn.tensor([0.1, 0.2, 0.3], dtype=tn.float64, requires_grad=True)
    assert gradcheck(lambda t, v: tn.nn.functional.prelu(t, v), (tn.tensor(x, requires_grad=True), w))


def test_glu_and_softmax_family_match_torch(device):
    x = np.random.default_rng(2).standard_normal((4, 6))
    same(lambda lib, t: lib.nn.functional.glu(t), x, device=device)
    same(lambda lib, t: lib.nn.functional.glu(t, 0), x, device=device)
    same_error(lambda lib, t: lib.nn.functional.glu(t, 0), x[:3], device=device)
    same(lambda lib, t: lib.nn.functional.softmin(t, 1), x, device=device)
    same(lambda lib, t: lib.nn.functional.log_softmax(t, dim=0, dtype=lib.float32), x, device=device, rtol=1e-5,
         atol=1e-6)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        same(lambda lib, t: lib.nn.Softmax()(t), x, device=device)


INPLACE = {
    "relu": lambda lib, t: lib.nn.functional.relu(t, inplace=True),
    "relu_": lambda lib, t: lib.nn.functional.relu_(t),
    "leaky_relu": lambda lib, t: lib.nn.functional.leaky_relu(t, 0.1, inplace=True),
    "elu": lambda lib, t: lib.nn.functional.elu(t, inplace=True),
    "selu": lambda lib, t: lib.nn.functional.selu(t, inplace=True),
    "silu": lambda lib, t: lib.nn.functional.silu(t, inplace=True),
    "mish": lambda lib, t: lib.nn.functional.mish(t, inplace=True),
    "hardswish": lambda lib, t: lib.nn.functional.hardswish(t, inplace=True),
    "hardtanh": lambda lib, t: lib.nn.functional.hardtanh(t, inplace=True),
    "relu6": lambda lib, t: lib.nn.ReLU6(inplace=True)(t),
    "threshold": lambda lib, t: lib.nn.Threshold(0.1, 5.0, inplace=True)(t),
    "ReLU module": lambda lib, t: lib.nn.ReLU(inplace=True)(t),
    "LeakyReLU module": lambda lib, t: lib.nn.LeakyReLU(0.3, inplace=True)(t),
}


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_activations_write_the_input_and_differentiate_as_torch(name, device):
    """An in-place activation of a computed tensor returns that tensor, changed, and the gradient flows
    through the write as in PyTorch; on a leaf that requires grad it is PyTorch's error."""
    fn = INPLACE[name]

    def through_write(lib, x):
        h = x * 1.5
        out = fn(lib, h)
        assert out is h
        return out * 2

    same(through_write, X, device=device, rtol=1e-12, atol=1e-15)
    same_error(fn, X, device=device)
    plain = tn.tensor(X, device=device)
    version = plain._version
    assert fn(tn, plain) is plain and plain._version == version + 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_keeps_nan_and_negative_zero_and_masks_inf_gradients_as_torch(dtype, device):
    """NaN and -0.0 pass through relu; the gradient passes at a NaN output and is 0 at every zeroed
    one, even where the upstream gradient is inf or NaN (PyTorch's threshold_backward)."""
    x = np.array([np.nan, -0.0, 0.0, -1.0, 2.0, np.inf, -np.inf, -3.0], dtype)
    upstream = np.array([1.0, 2.0, 3.0, np.inf, 5.0, np.inf, np.nan, np.nan], dtype)
    results = []
    for lib in (tn, torch):
        leaf, = leaves(lib, [x], device)
        out = lib.relu(leaf)
        out.backward(leaves(lib, [upstream], device, requires_grad=False)[0])
        results.append((host(out.detach()), host(leaf.grad)))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
    assert np.signbit(results[0][0][1])  # relu(-0.0) is -0.0


def test_relu_of_a_zero_dim_result_differentiates_through_scalar_arithmetic(device):
    """numpy's arithmetic on a 0-d array gives a scalar: relu's backward gets one here."""
    same(lambda lib, t: lib.relu(t.sum()) * 2 + lib.relu(t[0]) ** 2 - lib.relu(-t[1]) / 3, np.array([1.0, -2.0, 3.0]),
         device=device)


def test_activation_errors_match_torch(device):
    ints = np.array([1, -2, 3])
    for name in ("silu", "leaky_relu", "elu", "softplus", "mish", "hardswish", "logsigmoid"):
        same_error(ACTIVATIONS[name], ints, device=device)
    same_error(lambda lib, t: lib.nn.functional.gelu(t, approximate="x"), X, device=device)
    same_error(lambda lib, t: lib.nn.functional.hardtanh(t, 2.0, 1.0), X, device=device)
    same_error(lambda lib, t: lib.nn.functional.celu(t, alpha=0.0), X, device=device)
    same_error(lambda lib, t: lib.nn.functional.softshrink(t, -1.0), X, device=device)
    same_error(lambda lib, t: lib.nn.Softmax2d()(t), X, device=device)
    same_error(lambda lib, t: lib.relu(t), np.array([True, False]), device=device)
    same(lambda lib, t: lib.nn.Softmax2d()(t), np.random.default_rng(2).standard_normal((2, 3, 2, 2)), device=device)


MODULES = [
    lambda nn: nn.ReLU(), lambda nn: nn.ReLU(True), lambda nn: nn.LeakyReLU(), lambda nn: nn.LeakyReLU(0.2, True),
    lambda nn: nn.ELU(), lambda nn: nn.ELU(0.5, True), lambda nn: nn.SELU(), lambda nn: nn.CELU(2.0),
    lambda nn: nn.GELU(), lambda nn: nn.GELU("tanh"), lambda nn: nn.SiLU(), lambda nn: nn.Mish(inplace=True),
    lambda nn: nn.Hardswish(), lambda nn: nn.Hardsigmoid(), lambda nn: nn.ReLU6(), lambda nn: nn.ReLU6(True),
    lambda nn: nn.Hardtanh(), lambda nn: nn.Hardtanh(-2, 2, True), lambda nn: nn.Softplus(),
    lambda nn: nn.Softplus(2, 10), lambda nn: nn.PReLU(), lambda nn: nn.PReLU(3, 0.1), lambda nn: nn.Sigmoid(),
    lambda nn: nn.Tanh(), lambda nn: nn.Softmax(), lambda nn: nn.Softmax(dim=1), lambda nn: nn.LogSoftmax(-1),
    lambda nn: nn.Softmin(0), lambda nn: nn.Threshold(0.1, 20), lambda nn: nn.GLU(), lambda nn: nn.LogSigmoid(),
    lambda nn: nn.Softsign(), lambda nn: nn.Tanhshrink(), lambda nn: nn.Hardshrink(), lambda nn: nn.Softshrink(0.3),
    lambda nn: nn.Softmax2d(),
]


@pytest.mark.parametrize("make", MODULES)
def test_activation_module_reprs_match_torch(make):
    assert repr(make(tn.nn)) == repr(make(torch.nn))


def test_prelu_module_learns_its_slopes_as_torch(device):
    x = np.random.default_rng(3).standard_normal((5, 3))
    ours, theirs = tn.nn.PReLU(3).double().to(device), torch.nn.PReLU(3).double()
    np.testing.assert_array_equal(ours.weight.numpy(), theirs.weight.detach().numpy())
    upstream = np.random.default_rng(4).standard_normal((5, 3))
    ours(tn.tensor(x, device=device)).backward(tn.tensor(upstream, device=device))
    theirs(torch.tensor(x)).backward(torch.tensor(upstream))
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-12)
