"""exp_nonpositive (the vectorizable exp of _exp.py) against numpy's exp, in a loop LLVM vectorizes."""
import math

import numba
import numpy as np
import pytest
from numba import njit

from tinynorm.kernels.cpu._config import FASTMATH
from tinynorm.kernels.cpu._exp import LOWEST, LOWEST_FLOAT32, exp_nonpositive, exp_of_sum_float32


@njit(fastmath=FASTMATH)  # a caller that may reassociate, as the kernels are
def _exp_all(v, out):
    for i in range(v.size):
        out[i] = exp_nonpositive(v[i])


def exp_of(v):
    out = np.empty_like(v)
    _exp_all(v, out)
    return out


def test_within_a_rounding_of_numpy_down_to_the_lowest():
    rng = np.random.default_rng(0)
    v = np.concatenate([-rng.exponential(3.0, 200_000), rng.uniform(LOWEST, 0, 200_000),
                        -np.abs(rng.standard_normal(1000)) * 1e-12, [0.0, -0.0, LOWEST, -np.log(2) / 2]])
    expected = np.exp(v)
    np.testing.assert_allclose(exp_of(v), expected, rtol=2.3e-16, atol=0)


def test_zero_below_the_lowest_and_for_nan():
    v = np.array([np.nextafter(LOWEST, -np.inf), -745.0, -1e308, -np.inf, np.nan])
    np.testing.assert_array_equal(exp_of(v), 0.0)


@njit
def _exp_one(v):
    return exp_nonpositive(v)


def test_float32_computes_in_float32_within_about_an_ulp_down_to_the_smallest_normal():
    _exp_one(np.float32(-1.0))
    assert [signature.return_type for signature in _exp_one.nopython_signatures] == [numba.float32]
    rng = np.random.default_rng(1)
    smallest_normal = math.log(np.finfo(np.float32).tiny)
    v = np.concatenate([-rng.exponential(3.0, 200_000), rng.uniform(smallest_normal, 0, 200_000),
                        -np.abs(rng.standard_normal(1000)) * 1e-6, [0.0, -0.0, smallest_normal, -math.log(2) / 2]])
    v = v.astype(np.float32)
    exact = np.exp(v.astype(np.float64))
    ulps = np.abs(exp_of(v) - exact) / np.spacing(exact.astype(np.float32))
    assert ulps.max() <= 1.1  # half an ulp from the final rounding, the rest from float32 arithmetic


def test_float32_results_under_the_smallest_normal_are_subnormal_as_numpys():
    v = np.linspace(LOWEST_FLOAT32, math.log(np.finfo(np.float32).tiny), 10_000).astype(np.float32)
    ours, theirs = exp_of(v), np.exp(v.astype(np.float64)).astype(np.float32)
    assert (theirs[-9000:] > 0).all()
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=2.0 ** -149)  # within the smallest step


def test_float32_zero_below_its_lowest_and_for_nan():
    v = np.array([np.nextafter(LOWEST_FLOAT32, -np.inf), -104.0, -1e30, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(exp_of(v), 0.0)


def test_is_for_compiled_code_only():
    with pytest.raises(TypeError, match="numba-compiled kernels only"):
        exp_nonpositive(-1.0)


@njit(fastmath=FASTMATH)
def _exp_of_sums(high, low, out):
    for i in range(high.size):
        out[i] = exp_of_sum_float32(high[i], low[i], np.float32(1.0))


def test_float32_exp_of_a_sum_keeps_the_bits_the_sum_would_round_away():
    rng = np.random.default_rng(2)
    high = -rng.uniform(1, 87, 100_000).astype(np.float32)
    low = (rng.standard_normal(100_000) * 1e-5).astype(np.float32)  # about high's last bit
    ours = np.empty_like(high)
    _exp_of_sums(high, low, ours)
    exact = np.exp(high.astype(np.float64) + low.astype(np.float64))
    ulps = np.abs(ours - exact) / np.spacing(exact.astype(np.float32))
    assert ulps.max() <= 1.5  # exp_nonpositive's error and one more rounding, adding low
    rounded_sum = np.exp((high + low).astype(np.float64))  # the sum rounded to float32 first
    assert (np.abs(rounded_sum - exact) / np.spacing(exact.astype(np.float32))).max() > 10
