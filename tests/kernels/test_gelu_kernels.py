"""GELU kernels against float64 references built from Python's math.erfc, and against PyTorch."""
import functools
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from tinynorm.kernels.cpu.activations import INV_SQRT_2
from tinynorm.kernels.cpu.gelu import gelu, gelu_backward

GRID = np.linspace(-40, 40, 40_001)  # both tails, where Phi underflows and where it rounds to 1


def exact(x):
    """float64 GELU and GELU' from math.erfc, element by element."""
    cdf = np.array([0.5 * math.erfc(-v * INV_SQRT_2) for v in x])
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return x * cdf, cdf + x * pdf


def test_float32_is_within_a_few_ulps_of_the_exact_values_in_both_tails():
    x = GRID.astype(np.float32)
    value, slope = exact(x.astype(np.float64))
    y, dy = gelu(x), gelu_backward(np.ones_like(x), x)
    assert y.dtype == dy.dtype == np.float32
    significant = np.abs(value) >= np.finfo(np.float32).tiny  # float32's normal range
    np.testing.assert_allclose(y[significant], value[significant], rtol=5e-7)
    np.testing.assert_allclose(dy, slope, rtol=3e-7, atol=2e-7)


def test_float64_matches_libm_to_the_last_bits():
    value, slope = exact(GRID)
    np.testing.assert_allclose(gelu(GRID), value, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(gelu_backward(np.ones_like(GRID), GRID), slope, rtol=1e-14, atol=1e-16)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_parallel_path_equals_serial_path(approximate, dtype):
    rng = np.random.default_rng(0)
    x, g = (rng.standard_normal(100_000).astype(dtype) for _ in range(2))
    pieces = [slice(i, i + 1000) for i in range(0, x.size, 1000)]  # each below the parallel threshold
    # float64 within a few roundings: a driver compiled afresh and one loaded from Numba's cache (another
    # process may have written it) can round an element differently.
    same = np.testing.assert_array_equal if dtype == np.float32 else functools.partial(
        np.testing.assert_allclose, rtol=1e-13, atol=1e-15)
    same(gelu(x, approximate), np.concatenate([gelu(x[p], approximate) for p in pieces]))
    same(gelu_backward(g, x, approximate), np.concatenate([gelu_backward(g[p], x[p], approximate) for p in pieces]))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_matches_torch_with_special_values_and_half_precision(approximate):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(1000) * 4, [0.0, -0.0, np.inf, -np.inf, np.nan]])
    g = rng.standard_normal(x.size)
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 2e-6), (np.float16, 2e-3)):
        tx = torch.tensor(x.astype(dtype), requires_grad=True)
        ty = torch.nn.functional.gelu(tx, approximate=approximate)
        ty.backward(torch.tensor(g.astype(dtype)))
        y, dx = gelu(x.astype(dtype), approximate), gelu_backward(g.astype(dtype), x.astype(dtype), approximate)
        assert y.dtype == dx.dtype == dtype
        assert y[-3] == np.inf  # PyTorch's float32 kernel gives nan there (its float64 and float16 give inf)
        for ours, theirs in ((y[:-3], ty.detach().numpy()[:-3]), (dx, tx.grad.numpy())):
            np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=tol, atol=tol)
        assert np.isnan(y[-2:]).all()


def test_views_are_read_in_place_of_copies_and_bad_input_is_refused():
    x = np.random.default_rng(2).standard_normal((6, 8))
    np.testing.assert_array_equal(gelu(x[:, ::2]), gelu(np.ascontiguousarray(x[:, ::2])))
    with pytest.raises(TypeError, match="x must be a float16, float32 or float64 numpy.ndarray, got int64"):
        gelu(np.arange(4))
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh', got 'erf'"):
        gelu(x, "erf")
    with pytest.raises(ValueError, match=r"grad must have x's shape \(6, 8\), got \(6, 7\)"):
        gelu_backward(x[:, :7], x)


CACHE_PROBE = """
import numpy as np
from tinynorm.kernels.cpu import _config, gelu
_config.PARALLEL_THRESHOLD = 1
for dtype in (np.float32, np.float64):
    for approximate in ("none", "tanh"):
        x = np.linspace(-4, 4, 4096).astype(dtype)
        gelu.gelu_backward(x, gelu.gelu(x, approximate), approximate)
print(sum(sum(driver.stats.cache_misses.values()) for driver in (gelu._forward_parallel, gelu._backward_parallel)))
"""


def test_parallel_drivers_load_from_the_cache_in_a_new_process(tmp_path):
    """A driver given its kernel as an argument would be compiled afresh (and its cache index would grow)
    in every process; the drivers take the kernel's number instead."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", CACHE_PROBE], env=env, capture_output=True, text=True, check=True)
            for _ in range(2)]
    assert int(runs[0].stdout) > 0 and int(runs[1].stdout) == 0, [run.stdout for run in runs]
