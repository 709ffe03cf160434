"""nn.Conv1d / nn.Conv2d and F.conv1d / F.conv2d as PyTorch's: values, gradients, repr, errors and init.

Gradients by float64 finite differences with a random upstream gradient (gradcheck); values and
gradients against PyTorch on the same weights; the kernels' own tests are tests/kernels.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import tinynorm as tn
import tinynorm.nn.functional as F
from tinynorm import nn
from tinynorm.autograd import gradcheck
from tinynorm.ops.conv import _backend_options

rng = np.random.default_rng(0)

# (constructor arguments, input shape): every option, 1-D and 2-D, batched and unbatched.
MODULE_CASES = [
    (("Conv2d", 4, 6, 3), {"padding": "same", "dilation": 2, "groups": 2}, (2, 4, 7, 6)),
    (("Conv2d", 3, 4, (4, 3)), {"padding": "same", "bias": False}, (2, 3, 6, 5)),
    (("Conv2d", 3, 6, (3, 2)), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 3}, (2, 3, 7, 8)),
    (("Conv2d", 2, 4, 3), {"padding": "valid", "stride": 2}, (2, 7, 7)),  # unbatched
    (("Conv2d", 2, 3, 3), {"padding": 2, "padding_mode": "reflect"}, (2, 2, 5, 6)),
    (("Conv2d", 2, 4, (2, 3)), {"padding": "same", "padding_mode": "replicate", "groups": 2}, (2, 2, 5, 4)),
    (("Conv2d", 2, 3, 3), {"padding": (1, 2), "stride": 2, "padding_mode": "circular"}, (2, 2, 5, 6)),
    (("Conv2d", 6, 4, 1), {"groups": 2}, (2, 6, 3, 4)),
    (("Conv1d", 4, 6, 3), {"padding": "same", "dilation": 2, "groups": 2}, (2, 4, 9)),
    (("Conv1d", 3, 2, 4), {"stride": 3, "padding": 1, "bias": False}, (3, 11)),  # unbatched
    (("Conv1d", 2, 4, 3), {"padding": 2, "padding_mode": "circular"}, (2, 2, 5)),
]


def make_pair(torch, spec, kwargs, dtype=np.float64):
    """The tinynorm module and the torch module with the same weights."""
    (kind, *args) = spec
    ours = getattr(nn, kind)(*args, **kwargs)
    theirs = getattr(torch.nn, kind)(*args, **kwargs).to(torch.float64 if dtype == np.float64 else torch.float32)
    if dtype == np.float64:
        ours.double()
    theirs.load_state_dict({name: torch.tensor(value.numpy()) for name, value in ours.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("spec, kwargs, shape", MODULE_CASES)
def test_module_values_and_gradients_match_torch(spec, kwargs, shape):
    torch = pytest.importorskip("torch")
    ours, theirs = make_pair(torch, spec, kwargs, np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    tx, xt = torch.tensor(x, requires_grad=True), tn.tensor(x, requires_grad=True)
    ty, y = theirs(tx), ours(xt)
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    dy = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(dy))
    y.backward(tn.tensor(dy))
    np.testing.assert_allclose(xt.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    for name, param in theirs.named_parameters():
        np.testing.assert_allclose(getattr(ours, name).grad.numpy(), param.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("spec, kwargs, shape", [MODULE_CASES[i] for i in (0, 2, 4, 8, 9)])
def test_module_gradcheck(spec, kwargs, shape):
    (kind, *args) = spec
    module = getattr(nn, kind)(*args, **kwargs).double()
    x = tn.tensor(rng.standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda inp, *params: module(inp), (x, *module.parameters()))


def test_half_precision_computes_in_float32_and_rounds_like_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = make_pair(torch, ("Conv2d", 3, 4, 3), {"padding": 1}, np.float32)
    ours.to(tn.float16), theirs.half()
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float16)
    xt, tx = tn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = ours(xt), theirs(tx)
    dy = rng.standard_normal(tuple(ty.shape)).astype(np.float16)
    y.backward(tn.tensor(dy))
    ty.backward(torch.tensor(dy))
    for a, b in ((y, ty), (xt.grad, tx.grad), (ours.weight.grad, theirs.weight.grad), (ours.bias.grad, theirs.bias.grad)):
        assert a.dtype == tn.float16
        np.testing.assert_allclose(a.numpy().astype(np.float32), b.detach().numpy().astype(np.float32),
                                   rtol=4e-3, atol=4e-3 * np.abs(b.detach().numpy()).max())


def test_functional_matches_torch():
    torch = pytest.importorskip("torch")
    x, w, b = rng.standard_normal((2, 4, 6, 7)), rng.standard_normal((6, 2, 3, 3)), rng.standard_normal(6)
    for kwargs in ({"stride": 2, "padding": 1, "groups": 2}, {"padding": "same", "dilation": (2, 1), "groups": 2}):
        expected = torch.nn.functional.conv2d(*map(torch.tensor, (x, w, b)), **kwargs).numpy()
        np.testing.assert_allclose(F.conv2d(*map(tn.tensor, (x, w, b)), **kwargs).numpy(), expected, atol=1e-12)
    x1, w1 = rng.standard_normal((2, 4, 9)), rng.standard_normal((4, 1, 3))
    expected = torch.nn.functional.conv1d(torch.tensor(x1), torch.tensor(w1), None, 2, 1, 2, 4).numpy()
    np.testing.assert_allclose(F.conv1d(tn.tensor(x1), tn.tensor(w1), None, 2, 1, 2, 4).numpy(), expected, atol=1e-12)


@pytest.mark.parametrize("spec, kwargs", [
    (("Conv2d", 16, 32, 3), {}),
    (("Conv2d", 16, 32, 3), {"padding": 1, "bias": False}),
    (("Conv2d", 4, 8, (3, 5)), {"stride": (2, 1), "padding": "same", "dilation": 2, "groups": 4,
                                "padding_mode": "reflect"}),
    (("Conv2d", 4, 8, 3), {"padding": "valid"}),
    (("Conv1d", 4, 8, 3), {"stride": 2, "padding": 1, "dilation": 3, "groups": 2, "padding_mode": "circular"}),
])
def test_repr_and_attributes_match_torch(spec, kwargs):
    torch = pytest.importorskip("torch")
    if kwargs.get("padding") == "same" and kwargs.get("stride", 1) != 1:
        kwargs = {**kwargs, "stride": 1}
    (kind, *args) = spec
    ours, theirs = getattr(nn, kind)(*args, **kwargs), getattr(torch.nn, kind)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    for name in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups",
                 "padding_mode", "transposed", "output_padding"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape)


def test_initialisation_bounds_use_fan_in_per_group():
    conv = nn.Conv2d(8, 4, 3, groups=4)
    bound = 1 / np.sqrt(2 * 9)  # fan_in = in_channels / groups * kh * kw
    assert tuple(conv.weight.shape) == (4, 2, 3, 3)
    assert np.abs(conv.weight.numpy()).max() <= bound and np.abs(conv.bias.numpy()).max() <= bound
    assert np.abs(conv.bias.numpy()).max() > bound / 4  # drawn from the whole range, not a narrower one


@pytest.mark.parametrize("make, error, message", [
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 3, 3, groups=2), ValueError, "out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 4, 3, groups=0), ValueError, "groups must be a positive integer"),
    (lambda: nn.Conv2d(4, 4, 3, padding="full"), ValueError, "Invalid padding string 'full'"),
    (lambda: nn.Conv2d(4, 4, 3, stride=2, padding="same"), ValueError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: nn.Conv2d(4, 4, 3, padding_mode="mirror"), ValueError, "padding_mode must be one of"),
])
def test_constructor_errors_match_torch(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize("call, message", [
    (lambda: F.conv2d(tn.zeros(1, 5, 8, 8), tn.zeros(4, 3, 3, 3)),
     r"Given groups=1, weight of size \[4, 3, 3, 3\], expected input\[1, 5, 8, 8\] to have 3 channels, "
     r"but got 5 channels instead"),
    (lambda: F.conv2d(tn.zeros(1, 4, 8, 8), tn.zeros(3, 2, 3, 3), groups=2),
     r"expected weight to be divisible by 2 at dimension 0"),
    (lambda: F.conv2d(tn.zeros(1, 3, 8, 8), tn.zeros(0, 3, 3, 3)),
     r"Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of size \[0, 3, 3, 3\] instead"),
    (lambda: F.conv2d(tn.zeros(3, 5), tn.zeros(4, 3, 3, 3)),
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[3, 5\]"),
    (lambda: F.conv2d(tn.zeros(1, 1, 2, 5), tn.zeros(1, 1, 5, 3), padding=1),
     r"padded input size per channel: \(4 x 7\). Kernel size: \(5 x 3\). Kernel size can't be greater"),
    (lambda: F.conv2d(tn.zeros(1, 3, 8, 8), tn.zeros(4, 3, 3, 3), tn.zeros(3)),
     r"expected bias to be 1-dimensional with 4 elements, but got bias of size \[3\]"),
    (lambda: F.conv2d(tn.zeros(1, 3, 8, 8), tn.zeros(4, 3, 3, 3), stride=0), "non-positive stride"),
    (lambda: F.conv2d(tn.zeros(1, 3, 8, 8), tn.zeros(4, 3, 3, 3), dilation=0), "dilation should be greater than zero"),
    (lambda: F.conv2d(tn.zeros(1, 3, 8, 8), tn.zeros(4, 3, 3, 3), padding=-1), "negative padding is not supported"),
    (lambda: F.conv1d(tn.zeros(1, 3, 8, 8), tn.zeros(4, 3, 3)),
     r"Expected 2D \(unbatched\) or 3D \(batched\) input to conv1d"),
    (lambda: F.conv2d(tn.zeros(1, 3, 8, 8), tn.zeros(4, 3, 3, 3, dtype=tn.float64)),
     r"input type \(tinynorm.float32\) and weight type \(tinynorm.float64\) should be the same: convert the input \(x.float\(\)"),
    (lambda: nn.Conv1d(3, 4, 3)(tn.zeros(1, 3, 8, dtype=tn.float64)),
     r"input type \(tinynorm.float64\) and weight type \(tinynorm.float32\) should be the same: .*layer.to\(x.dtype\)"),
    (lambda: F.conv2d(tn.zeros(1, 3, 8, 8), tn.zeros(4, 3, 3, 3), tn.zeros(4, dtype=tn.float64)),
     r"input type \(tinynorm.float32\) and bias type \(tinynorm.float64\) should be the same"),
    (lambda: F.conv2d(tn.zeros(1, 3, 5, 5, dtype=tn.int64), tn.zeros(4, 3, 3, 3, dtype=tn.int64)),
     r"conv2d: input of dtype tinynorm.int64 is not supported: convolutions take float16, float32 or float64"),
])
def test_call_errors_match_torch(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_cuda_backend_refuses_what_its_kernels_lack_by_name():
    cuda = SimpleNamespace(name="cuda")
    assert _backend_options(cuda, (1, 1, 2, 2), (1, 1), 1, "zeros") == {"padding": (1, 2)}
    with pytest.raises(RuntimeError, match=r"dilation=\(2, 1\), groups=2, asymmetric padding \(0, 1, 1, 1\)"):
        _backend_options(cuda, (0, 1, 1, 1), (2, 1), 2, "zeros")
    with pytest.raises(RuntimeError, match="padding_mode='reflect'.*Run this convolution on the CPU"):
        _backend_options(cuda, (1, 1, 1, 1), (1, 1), 1, "reflect")
