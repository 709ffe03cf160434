"""The CPU backend's column sums of a float matrix (a Linear layer's bias gradient) run in a compiled loop
that adds the rows in numpy's order: numpy's sums, signed zeros and infinities included (NaN where
numpy's are NaN), and every other reduction left to numpy."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_same_values
from tinynorm.backends import cpu
from tinynorm.kernels.cpu import column_sums


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 5), (2, 32), (64, 10), (1024, 192), (3000, 7), (5, 2), (0, 4), (4, 0)])
def test_column_sums_are_numpys_to_the_bit(dtype: type, shape: tuple[int, int]) -> None:
    a = (np.random.default_rng(sum(shape)).standard_normal(shape) * 100 + 1e3).astype(dtype)
    result = cpu.sum(a, axis=0)
    expected = np.sum(a, axis=0)
    assert result.shape == expected.shape and result.dtype == expected.dtype
    assert_same_values(result, expected, nan_signs=False)


@pytest.mark.parametrize("rows", [1, 3])
def test_columns_of_negative_zeros_sum_to_positive_zero_as_in_numpy(rows: int) -> None:
    a = np.full((rows, 4), -0.0, np.float32)
    a[:, 0] = 1.0
    assert column_sums.takes(a, 0, False)
    assert_same_values(cpu.sum(a, axis=0), np.sum(a, axis=0), nan_signs=False)  # [rows, +0, +0, +0]


def test_which_arrays_take_the_kernel() -> None:
    a = np.zeros((300, 80), np.float32)
    assert column_sums.takes(a, 0, False) and column_sums.takes(a.astype(np.float64), 0, False)
    views = (a.T, a[::3, ::2], a[::-1], np.broadcast_to(a[:1], a.shape))  # Fortran order, strided, a mean's grad
    assert not any(column_sums.takes(view, 0, False) for view in views)
    assert not column_sums.takes(a, 0, True) and not column_sums.takes(a, 1, False)
    assert not column_sums.takes(a, (0,), False) and not column_sums.takes(a, False, False)
    assert not column_sums.takes(a.astype(np.float16), 0, False)
    assert not column_sums.takes(a[:, :1], 0, False)  # one column: numpy adds it pairwise
    assert not column_sums.takes(a[:0], 0, False) and not column_sums.takes(a[0], 0, False)
    assert not column_sums.takes(np.ma.masked_array(a), 0, False)  # a subclass (a matrix too)


def test_other_layouts_and_nan_and_infinities_as_numpy() -> None:
    rng = np.random.default_rng(1)
    base = rng.standard_normal((300, 80)).astype(np.float32)
    for a in (base.T, base[::3, ::2], base[:, 5:9], base[::-1], np.broadcast_to(base[:1], base.shape), base[:, :1]):
        np.testing.assert_array_equal(cpu.sum(a, axis=0), np.sum(a, axis=0))
    masked = np.ma.masked_array(np.ones((3, 3)), mask=[[1, 0, 0], [0, 0, 0], [0, 0, 0]])
    assert list(cpu.sum(masked, axis=0)) == [2.0, 3.0, 3.0]  # a subclass sums its own way
    a = np.ones((200, 5), np.float32)
    a[7, 0], a[9, 1], a[11, 2], a[12, 2], a[13, 3] = np.nan, np.inf, np.inf, -np.inf, -np.inf
    with np.errstate(invalid="ignore"):  # inf - inf in both
        expected, result = np.sum(a, axis=0), cpu.sum(a, axis=0)
    assert_same_values(result, expected, nan_signs=False)  # [nan, inf, nan, -inf, 200]


def test_other_reductions_are_numpys() -> None:
    for a in (np.arange(24, dtype=np.float32).reshape(2, 3, 4), np.arange(12, dtype=np.float64).reshape(4, 3)):
        for axis, keepdims in ((None, False), (1, False), (0, True), (-1, True), ((0, 1), False)):
            expected = np.sum(a, axis=axis, keepdims=keepdims)
            np.testing.assert_array_equal(cpu.sum(a, axis=axis, keepdims=keepdims), expected)
    assert list(cpu.sum([[1.0, 2.0], [3.0, 4.0]], axis=0)) == [4.0, 6.0]  # not an array: numpy's
    ints = np.arange(12).reshape(4, 3)
    assert cpu.sum(ints, axis=0).dtype == ints.dtype and list(cpu.sum(ints, axis=0)) == [18, 22, 26]
