"""exp_nonpositive (the vectorizable exp of _exp.py) against numpy's exp, in a loop LLVM vectorizes."""
import numpy as np
from numba import njit

from tinynorm.kernels.cpu._config import FASTMATH
from tinynorm.kernels.cpu._exp import LOWEST, exp_nonpositive


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
