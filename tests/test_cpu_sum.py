"""The CPU backend's column sums of a float matrix run as one BLAS product (``ones @ a``): the same
values as an exact sum, NaN and infinities as numpy's reduction gives them, every layout and size."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tinynorm.backends import cpu


def exact_column_sums(a: np.ndarray) -> np.ndarray:
    """Each column's sum, correctly rounded from the exact sum of its values (math.fsum)."""
    return np.array([math.fsum(column) for column in a.T.astype(np.float64)]).astype(a.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 5), (2, 32), (64, 10), (1024, 192), (3000, 7), (0, 4), (5, 0)])
def test_column_sums_match_exact_sums(dtype: type, shape: tuple[int, int]) -> None:
    a = np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype) + 3.0
    result = cpu.sum(a, axis=0)
    assert result.shape == (shape[1],) and result.dtype == dtype
    # any order of summing n values is within (n - 1) * u * sum|a| of the exact sum (u: the unit
    # roundoff), plus the final rounding; a row left out or counted twice (about 3) is far outside it
    n, unit = shape[0], np.finfo(dtype).eps / 2
    tolerance = (n + 1) * unit * np.abs(a).astype(np.float64).sum(axis=0)
    assert np.all(np.abs(result.astype(np.float64) - exact_column_sums(a)) <= tolerance)


def test_which_arrays_take_the_product() -> None:
    a = np.zeros((300, 80), np.float32)
    assert cpu.column_sums_by_blas(a, 0, False) and cpu.column_sums_by_blas(a.T, 0, False)  # C and Fortran order
    assert cpu.column_sums_by_blas(a.astype(np.float64), 0, False)
    views = (a[::3, ::2], a[::-1], np.broadcast_to(a[:1], a.shape))  # strided, reversed, broadcast (a mean's grad)
    assert not any(cpu.column_sums_by_blas(view, 0, False) for view in views)
    assert not cpu.column_sums_by_blas(a, 0, True) and not cpu.column_sums_by_blas(a, 1, False)
    assert not cpu.column_sums_by_blas(a, (0,), False) and not cpu.column_sums_by_blas(a, False, False)
    assert not cpu.column_sums_by_blas(a.astype(np.float16), 0, False)
    assert not cpu.column_sums_by_blas(a[0], 0, False) and not cpu.column_sums_by_blas(np.zeros((2, 3, 4)), 0, False)


def test_strided_and_transposed_matrices() -> None:
    rng = np.random.default_rng(1)
    base = rng.standard_normal((300, 80)).astype(np.float32)
    for a in (base.T, base[::3, ::2], base[:, 5:9], base[::-1], np.broadcast_to(base[:1], base.shape)):
        np.testing.assert_allclose(cpu.sum(a, axis=0), a.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-4)


def test_nan_and_infinities_as_numpy() -> None:
    a = np.ones((200, 5), np.float32)
    a[7, 0], a[9, 1], a[11, 2], a[12, 2], a[13, 3] = np.nan, np.inf, np.inf, -np.inf, -np.inf
    with np.errstate(invalid="ignore"):  # inf - inf in both
        expected, result = np.add.reduce(a, axis=0), cpu.sum(a, axis=0)
    np.testing.assert_array_equal(result, expected)  # [nan, inf, nan, -inf, 200]


def test_other_reductions_are_numpys() -> None:
    for a in (np.arange(24, dtype=np.float32).reshape(2, 3, 4), np.arange(12, dtype=np.float64).reshape(4, 3)):
        for axis, keepdims in ((None, False), (1, False), (0, True), (-1, True), ((0, 1), False)):
            expected = np.sum(a, axis=axis, keepdims=keepdims)
            np.testing.assert_array_equal(cpu.sum(a, axis=axis, keepdims=keepdims), expected)
    ints = np.arange(12).reshape(4, 3)
    assert cpu.sum(ints, axis=0).dtype == ints.dtype and list(cpu.sum(ints, axis=0)) == [18, 22, 26]
