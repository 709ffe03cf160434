"""erf against Python's math.erf, element by element, on the serial and the parallel path."""
import math

import numpy as np
import pytest

from tinynorm.kernels.cpu import _config
from tinynorm.kernels.cpu.activations import erf


def test_erf_float64_equals_math_erf():
    x = np.concatenate([np.random.default_rng(0).standard_normal(1000) * 3, [0.0, -0.0, 6.0, -30.0, np.inf, -np.inf]])
    expected = np.array([math.erf(v) for v in x])
    np.testing.assert_array_equal(erf(x), expected)
    assert np.isnan(erf(np.array([np.nan]))[0])


def test_erf_float32_within_one_ulp_of_correctly_rounded():
    x = (np.random.default_rng(1).standard_normal(2000) * 3).astype(np.float32)
    expected = np.array([math.erf(float(v)) for v in x]).astype(np.float32)
    out = erf(x)
    assert out.dtype == np.float32
    np.testing.assert_array_max_ulp(out, expected, maxulp=1)


def test_erf_parallel_path_equals_serial_path():
    x = np.random.default_rng(2).standard_normal((300, 200)).astype(np.float32)
    assert x.size >= _config.PARALLEL_THRESHOLD
    out = erf(x)
    np.testing.assert_array_equal(out, np.concatenate([erf(x[i:i + 10]) for i in range(0, 300, 10)]))
    assert out.shape == x.shape


def test_erf_accepts_views_and_rejects_integers():
    x = np.linspace(-3, 3, 40).reshape(5, 8)
    np.testing.assert_array_equal(erf(x[:, ::2]), erf(np.ascontiguousarray(x[:, ::2])))
    with pytest.raises(TypeError, match="float32 or float64"):
        erf(np.arange(4))
