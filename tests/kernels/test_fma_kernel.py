"""fused_multiply_add rounds once: a * a - fl(a * a) comes out exactly (Dekker's product)."""
import numpy as np
from numba import njit

from tinynorm.kernels.cpu._config import FASTMATH
from tinynorm.kernels.cpu._fma import fused_multiply_add
from tinynorm.kernels.cpu.gelu import _minus_half_square


@njit
def _square_errors(a, out):
    for i in range(a.size):
        square = a[i] * a[i]
        out[i] = fused_multiply_add(a[i], a[i], -square)


def test_the_rounding_error_of_a_float32_square_is_exact():
    a = np.random.default_rng(0).standard_normal(100_000).astype(np.float32) * 10
    errors = np.empty_like(a)
    _square_errors(a, errors)
    exact = a.astype(np.float64) ** 2 - (a * a).astype(np.float64)  # float64 holds a float32 product exactly
    np.testing.assert_array_equal(errors.astype(np.float64), exact)
    assert np.count_nonzero(errors) > 90_000  # the products do round


@njit(fastmath=FASTMATH)  # as the GELU kernels that call it are compiled
def _half_squares(a, high, low):
    for i in range(a.size):
        high[i], low[i] = _minus_half_square(a[i])


def test_gelus_split_square_is_exact_inside_a_reassociating_kernel():
    a = np.random.default_rng(1).standard_normal(100_000).astype(np.float32) * 10
    high, low = np.empty_like(a), np.empty_like(a)
    _half_squares(a, high, low)
    np.testing.assert_array_equal(high.astype(np.float64) + low.astype(np.float64), -0.5 * a.astype(np.float64) ** 2)
