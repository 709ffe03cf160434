"""Shared test helpers: float64 leaves for gradient checks, hypothesis strategies for shapes, the check
that a bad call fails with a clear error, and the comparison of results down to the signs of zeros."""
import warnings

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinynorm


def leaf(array, requires_grad=True):
    """A float64 tinynorm tensor (a copy of ``array``) that requires grad: a gradcheck input."""
    return tinynorm.tensor(np.array(array, dtype=np.float64), requires_grad=requires_grad)


# Small shapes keep finite differences cheap: gradcheck runs two forwards per input element.
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)
broadcast_pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)
seeds = st.integers(0, 2**32 - 1)


class RunsCodeWhenUnpickled:
    """Unpickling this creates the file ``marker``: proof of code execution, if it ever happens."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


# The error classes a bad argument may raise: they say what was wrong, where a ZeroDivisionError,
# AttributeError, RecursionError or a Numba typing error would say only where it broke.
CLEAR_ERRORS = (TypeError, ValueError, IndexError, RuntimeError, KeyError)


def raises_clearly(call, *fragments, error=CLEAR_ERRORS):
    """``call()`` raises one of ``error`` (a clear class, not one leaking from inside), before any
    warning, with a message holding every fragment; returns the exception."""
    with warnings.catch_warnings(), pytest.raises(Exception) as info:
        warnings.simplefilter("error")
        call()
    raised = info.value
    assert isinstance(raised, error) and not isinstance(raised, RecursionError), repr(raised)
    assert not type(raised).__module__.startswith("numba"), repr(raised)
    message = raised.args[0] if isinstance(raised, KeyError) and raised.args else str(raised)  # str() quotes it
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return raised


def assert_same_values(actual, expected, nan_signs=True):
    """The same dtype, shape and values, NaN where NaN, the same sign of every zero and, with
    ``nan_signs``, of every NaN (a kernel may give a NaN the other sign where numpy's order of the
    operands is not kept)."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)
    signed = slice(None) if nan_signs else ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(actual[signed]), np.signbit(expected[signed]))
