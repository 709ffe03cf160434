"""Running one piece of code with tinynorm and with PyTorch, and comparing what comes out.

A case is a function ``case(lib, make)``: ``lib`` is ``tinynorm`` or ``torch``, and ``make(values,
dtype=None, requires_grad=False)`` builds a tensor of that library (on the test's device for
tinynorm). :func:`check` runs it with both and asserts the same results: tensors of the same shape,
dtype and values (NaN equal to NaN), numbers and bools equal, nests element by element; or, when
PyTorch raises, an error of the same class from tinynorm. Then, for every floating output that
requires grad, it backpropagates the same random upstream gradient through both and compares the
gradients of every leaf ``make`` created with ``requires_grad=True``.

The ``test_api_*.py`` files use it on the CPU; ``tests/cuda/sim_api_ops.py`` runs them on 'cuda'.
"""
from __future__ import annotations

import numpy as np
import pytest

import tinynorm as tn

torch = pytest.importorskip("torch")

ERRORS = (RuntimeError, TypeError, ValueError, IndexError)


class Maker:
    """``make(values, dtype=None, requires_grad=False)`` for one library, remembering the leaves."""

    def __init__(self, lib, device):
        self.lib, self.device, self.leaves = lib, device, []

    def __call__(self, values, dtype=None, requires_grad=False):
        if self.lib is tn:
            result = tn.tensor(values, dtype=dtype, device=self.device, requires_grad=requires_grad)
        else:
            result = torch.tensor(values, dtype=None if dtype is None else getattr(torch, dtype),
                                  requires_grad=requires_grad)
        if requires_grad:
            self.leaves.append(result)
        return result


def run(lib, device, case):
    """``(result, leaves)``, or ``((error class, message), [])`` when ``case`` raised."""
    make = Maker(lib, device)
    try:
        return case(lib, make), make.leaves
    except ERRORS as error:
        return (type(error), str(error)), []


def is_error(result):
    return isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], type) \
        and issubclass(result[0], Exception)


def flat(value):
    """A result's tensors and plain values, in order (tuples, lists and named tuples opened)."""
    if isinstance(value, (tuple, list)):
        return [item for element in value for item in flat(element)]
    return [value]


def dtype_name(tensor):
    return str(tensor.dtype).removeprefix("torch.").removeprefix("tinynorm.")


def assert_values(ours, theirs, rtol, atol, where):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tn.Tensor), f"{where}: expected a tensor, got {type(ours).__name__}"
        assert tuple(ours.shape) == tuple(theirs.shape), f"{where}: shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
        assert dtype_name(ours) == dtype_name(theirs), f"{where}: dtype {ours.dtype} != {theirs.dtype}"
        expected = theirs.detach().numpy()
        if expected.dtype.kind in "biu":
            np.testing.assert_array_equal(ours.numpy(), expected, err_msg=where)
        else:
            np.testing.assert_allclose(ours.numpy().astype(np.float64), expected.astype(np.float64), rtol=rtol,
                                       atol=atol, equal_nan=True, err_msg=where)
    elif isinstance(theirs, torch.Size):
        assert isinstance(ours, tn.Size) and tuple(ours) == tuple(theirs), f"{where}: {ours!r} != {theirs!r}"
    elif isinstance(theirs, torch.dtype):
        assert isinstance(ours, tn.dtype) and str(ours) == str(theirs).replace("torch.", "tinynorm."), \
            f"{where}: {ours} != {theirs}"
    elif isinstance(theirs, torch.device):
        assert isinstance(ours, tn.device) and str(ours) == str(theirs), f"{where}: {ours} != {theirs}"
    elif isinstance(theirs, float):
        assert isinstance(ours, float) and np.isclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True), \
            f"{where}: {ours!r} != {theirs!r}"
    else:
        assert type(ours) is type(theirs) and ours == theirs, f"{where}: {ours!r} != {theirs!r}"


def check(case, device, rtol=1e-5, atol=1e-6, seed=0):
    """Assert that ``case`` gives tinynorm the results, errors and gradients it gives PyTorch; returns
    tinynorm's error message when both raised (for the test to check further)."""
    theirs, their_leaves = run(torch, device, case)
    ours, our_leaves = run(tn, device, case)
    if is_error(theirs):
        assert is_error(ours), f"PyTorch raised {theirs}, tinynorm returned {ours!r}"
        assert issubclass(ours[0], theirs[0]) or issubclass(theirs[0], ours[0]), \
            f"PyTorch raised {theirs}, tinynorm raised {ours}"
        return ours[1]
    assert not is_error(ours), f"tinynorm raised {ours}, PyTorch returned {theirs!r}"
    our_items, their_items = flat(ours), flat(theirs)
    assert len(our_items) == len(their_items), f"{len(our_items)} results against PyTorch's {len(their_items)}"
    for k, (mine, other) in enumerate(zip(our_items, their_items)):
        assert_values(mine, other, rtol, atol, f"result {k}")
    _check_gradients(our_items, their_items, our_leaves, their_leaves, rtol, atol, seed)
    return None


def _check_gradients(our_items, their_items, our_leaves, their_leaves, rtol, atol, seed):
    rng = np.random.default_rng(seed)
    pairs = [(mine, other) for mine, other in zip(our_items, their_items)
             if isinstance(other, torch.Tensor) and other.requires_grad and other.dtype.is_floating_point]
    if not pairs or not their_leaves:
        return
    for mine, other in pairs:
        upstream = rng.standard_normal(tuple(other.shape))
        other.backward(torch.tensor(upstream, dtype=other.dtype), retain_graph=True)
        mine.backward(tn.tensor(upstream, dtype=mine.dtype, device=mine.device), retain_graph=True)
    for k, (mine, other) in enumerate(zip(our_leaves, their_leaves)):
        if other.grad is None:
            assert mine.grad is None or not mine.grad.numpy().any(), f"leaf {k}: PyTorch has no gradient"
            continue
        assert mine.grad is not None, f"leaf {k}: no gradient, PyTorch has one"
        np.testing.assert_allclose(mine.grad.numpy(), other.grad.numpy(force=True), rtol=rtol, atol=atol,
                                   err_msg=f"gradient of leaf {k}")
