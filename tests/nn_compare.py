"""Comparing a tinynorm call with the same PyTorch call, on any device: values, gradients under a random
upstream gradient, and the error class for bad input. Used by the ``tests/test_nn_*.py`` files, which
``tests/cuda/sim_nn_api.py`` also runs on ``'cuda'``.

A test writes the call once, as ``fn(lib, *inputs)`` with ``lib`` either ``tinynorm`` or ``torch``;
inputs are numpy arrays (float64 unless given otherwise) that become leaves requiring grad.
"""
import functools

import numpy as np
import pytest

import tinynorm as tn

torch = pytest.importorskip("torch")

ERRORS = (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError, AssertionError, KeyError,
          AttributeError)


class OnDevice:
    """``tinynorm`` with its tensor-making functions putting tensors on ``device`` by default, so a
    test's ``lib.tensor(target)`` lands beside the inputs."""

    MAKERS = ("tensor", "ones", "zeros", "full", "empty", "rand", "randn", "arange", "eye")

    def __init__(self, device):
        self.device = device

    def __getattr__(self, name):
        value = getattr(tn, name)
        return functools.partial(value, device=self.device) if name in self.MAKERS else value


def library(lib, device):
    """What a test's ``fn(lib, ...)`` receives: torch, or tinynorm making tensors on ``device``."""
    return lib if lib is torch or device == "cpu" else OnDevice(device)


def leaves(lib, arrays, device, requires_grad=True):
    """Each array as a tensor of ``lib`` (on ``device`` for tinynorm); float ones require grad."""
    made = []
    for a in arrays:
        a = np.asarray(a)
        grad = requires_grad and a.dtype.kind == "f"
        if lib is torch:
            made.append(torch.tensor(a, requires_grad=grad))
        else:
            made.append(tn.tensor(a, device=device, requires_grad=grad))
    return made


def host(value):
    """A tensor of either library (or a nest of them) as numpy."""
    if isinstance(value, (tuple, list)):
        return [host(v) for v in value]
    if isinstance(value, tn.Tensor):
        return value.detach().numpy()
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return value


def run(lib, fn, arrays, device, seed=0):
    """``(output, grads)`` of ``fn(lib, *leaves)`` after backpropagating a random upstream gradient
    from the first output (grads None where an input gets none)."""
    inputs = leaves(lib, arrays, device)
    out = fn(library(lib, device), *inputs)
    first = out[0] if isinstance(out, (tuple, list)) else out
    if first.requires_grad:
        upstream = np.random.default_rng(seed).standard_normal(tuple(first.shape)).astype(host(first).dtype)
        first.backward(torch.tensor(upstream) if lib is torch else tn.tensor(upstream, device=device))
    grads = [None if x.grad is None else host(x.grad) for x in inputs]
    return host(out), grads


def assert_close(ours, theirs, rtol, atol):
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_close(a, b, rtol, atol)
        return
    if theirs is None:
        assert ours is None or not np.any(ours), f"tinynorm gave a gradient {ours}, PyTorch none"
        return
    assert ours is not None, "tinynorm gave no gradient where PyTorch gave one"
    theirs = np.asarray(theirs)
    ours = np.asarray(ours)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    if theirs.dtype.kind in "biu":
        np.testing.assert_array_equal(ours, theirs)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def same(fn, *arrays, device="cpu", rtol=1e-10, atol=1e-12):
    """The same output and the same gradients from tinynorm and PyTorch."""
    ours, our_grads = run(tn, fn, arrays, device)
    theirs, their_grads = run(torch, fn, arrays, device)
    assert_close(ours, theirs, rtol, atol)
    assert_close(our_grads, their_grads, rtol, atol)
    return ours


def same_error(fn, *arrays, device="cpu"):
    """PyTorch raises for this input, and tinynorm raises the same class; tinynorm's message is returned."""
    with pytest.raises(ERRORS) as theirs:
        fn(torch, *leaves(torch, arrays, device))
    with pytest.raises(ERRORS) as ours:
        fn(library(tn, device), *leaves(tn, arrays, device))
    assert ours.type is theirs.type, f"PyTorch raised {theirs.type.__name__}: {theirs.value}; tinynorm " \
                                     f"{ours.type.__name__}: {ours.value}"
    return str(ours.value)
