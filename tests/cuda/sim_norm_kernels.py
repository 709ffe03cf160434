"""The CUDA norm kernels, run in Numba's CUDA simulator, against float64 numpy references written here.

The simulator must be enabled before Numba is imported, so this file is not collected by a plain
``pytest`` run: ``test_cuda_norm_kernels.py`` runs it in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``
(or run ``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_norm_kernels.py``). The simulator
runs one Python thread per CUDA thread, so shapes stay at a few hundred threads; module constants are
lowered where a test must reach a path (wide rows, the shared-memory cache running out, many
reduction blocks) on a small shape. Gradients use a random upstream gradient.
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_norm_kernels.py does)", allow_module_level=True)

from host_arrays import host, on_device, to_device
from numba import cuda

from tinynorm.backends.cuda.array import CudaArray
from tinynorm.kernels import cuda as kernels
from tinynorm.kernels.cuda import _reduce, _row_norm, batch_norm, group_norm

# The wrappers take CudaArrays; the tests write their inputs as host arrays.
(batch_norm_backward, batch_norm_backward_elemt, batch_norm_backward_reduce, batch_norm_forward, batch_norm_rstd,
 batch_norm_stats, batch_norm_update_running, group_norm_backward, group_norm_forward, layer_norm_backward,
 layer_norm_forward, rms_norm_backward, rms_norm_forward) = map(on_device, (
    kernels.batch_norm_backward, kernels.batch_norm_backward_elemt, kernels.batch_norm_backward_reduce,
    kernels.batch_norm_forward, kernels.batch_norm_rstd, kernels.batch_norm_stats, kernels.batch_norm_update_running,
    kernels.group_norm_backward, kernels.group_norm_forward, kernels.layer_norm_backward, kernels.layer_norm_forward,
    kernels.rms_norm_backward, kernels.rms_norm_forward))

EPS = 1e-5
# Relative tolerance of results of x's dtype (y, dx) and of the float32 statistics and parameter grads.
DATA_TOLERANCE = {np.float32: 3e-5, np.float16: 2e-3}
STAT_TOLERANCE = {np.float32: 3e-5, np.float16: 1e-4}


def assert_close(actual, expected, tol, dtype=None):
    """``actual`` (a device array) within ``tol`` of ``expected``, scaled by the size of ``expected``."""
    actual = host(actual)
    if dtype is not None:
        assert actual.dtype == dtype
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol * max(1.0, np.abs(expected).max(initial=0)))


def random(rng, shape, dtype=np.float32, loc=0.0, scale=1.0):
    return (rng.standard_normal(shape) * scale + loc).astype(dtype)


def reference(x, dy, weight, bias, stat_axes, param_shape, center=True):
    """float64 normalization of ``x`` over ``stat_axes`` with affine parameters broadcast as
    ``param_shape``, and its gradients. Returns ``y, mean, rstd, dx, dweight, dbias`` (stats squeezed).
    """
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    w = np.ones(param_shape) if weight is None else weight.astype(np.float64).reshape(param_shape)
    b = np.zeros(param_shape) if bias is None else bias.astype(np.float64).reshape(param_shape)
    mean = x.mean(axis=stat_axes, keepdims=True) if center else np.zeros_like(x.mean(axis=stat_axes, keepdims=True))
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=stat_axes, keepdims=True) + EPS)
    xhat = (x - mean) * rstd
    g = dy * w
    mean_g = g.mean(axis=stat_axes, keepdims=True) if center else 0
    dx = rstd * (g - mean_g - xhat * (g * xhat).mean(axis=stat_axes, keepdims=True))
    param_axes = tuple(i for i, size in enumerate(param_shape) if size == 1)
    return (xhat * w + b, np.squeeze(mean, stat_axes), np.squeeze(rstd, stat_axes), dx,
            (dy * xhat).sum(axis=param_axes).ravel(), dy.sum(axis=param_axes).ravel())


@pytest.fixture(params=["narrow", "wide"])
def row_path(request, monkeypatch):
    """Runs a test on both row kernels: with NARROW_MAX_COLS lowered, 40 columns take the wide path."""
    if request.param == "wide":
        monkeypatch.setattr(_row_norm, "NARROW_MAX_COLS", 32)
    return request.param


def row_case(rng, rows, cols, dtype, center=True, affine=True):
    x, dy = random(rng, (rows, cols), dtype), random(rng, (rows, cols), dtype)
    weight = random(rng, cols, np.float32, 1.0, 0.5) if affine else None
    bias = random(rng, cols) if affine and center else None
    return x, dy, weight, bias, reference(x, dy, weight, bias, (1,), (1, cols), center)


# --- warp and block sums -----------------------------------------------------------------------------


@cuda.jit
def _sums_kernel(values, warp_out, block_out):
    i = cuda.grid(1)
    warp_out[i] = _reduce.warp_sum(values[i])
    block_out[i] = _reduce.block_sum(values[i])


def test_warp_and_block_sums_reach_every_thread():
    values = np.arange(192, dtype=np.float32)  # integers: every order of addition is exact
    warp_out, block_out = cuda.device_array(192, np.float32), cuda.device_array(192, np.float32)
    _sums_kernel[2, 96](cuda.to_device(values), warp_out, block_out)  # a raw launch: Numba's own arrays
    np.testing.assert_array_equal(warp_out.copy_to_host(), np.repeat(values.reshape(6, 32).sum(axis=1), 32))
    np.testing.assert_array_equal(block_out.copy_to_host(), np.repeat(values.reshape(2, 96).sum(axis=1), 96))


def test_sum_partials_adds_over_the_middle_axis(rng):
    part = random(rng, (2, 37, 70))
    assert_close(_reduce.sum_partials(to_device(part)), part.astype(np.float64).sum(axis=1), 1e-5)


# --- LayerNorm and RMSNorm ---------------------------------------------------------------------------

# (rows, cols, dtype): narrow rows with 1, 2 and 32 values per lane (partly filled last lanes) and a
# wide row; float16 on one narrow and one wide shape (simulator time).
LAYER_NORM_CASES = [(5, 1, np.float32), (6, 40, np.float32), (3, 1000, np.float32), (2, 1100, np.float32),
                    (6, 40, np.float16), (2, 1100, np.float16)]


@pytest.mark.parametrize("rows, cols, dtype", LAYER_NORM_CASES)
def test_layer_norm_matches_float64_reference(rng, rows, cols, dtype):
    x, dy, weight, bias, (y_ref, mean_ref, rstd_ref, dx_ref, dw_ref, db_ref) = row_case(rng, rows, cols, dtype)
    y, mean, rstd = layer_norm_forward(x, weight, bias, EPS)
    assert_close(y, y_ref, DATA_TOLERANCE[dtype], dtype)
    assert_close(mean, mean_ref, STAT_TOLERANCE[dtype], np.float32)
    assert_close(rstd, rstd_ref, STAT_TOLERANCE[dtype], np.float32)
    dx, dweight, dbias = layer_norm_backward(dy, x, mean, rstd, weight)
    assert_close(dx, dx_ref, DATA_TOLERANCE[dtype], dtype)
    assert_close(dweight, dw_ref, STAT_TOLERANCE[dtype], np.float32)
    assert_close(dbias, db_ref, STAT_TOLERANCE[dtype], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("rows, cols", [(6, 40), (2, 1100)])
def test_rms_norm_matches_float64_reference(rng, rows, cols, dtype):
    x, dy, weight, _, (y_ref, _, rstd_ref, dx_ref, dw_ref, _) = row_case(rng, rows, cols, dtype, center=False)
    y, rstd = rms_norm_forward(x, weight, EPS)
    assert_close(y, y_ref, DATA_TOLERANCE[dtype], dtype)
    assert_close(rstd, rstd_ref, STAT_TOLERANCE[dtype], np.float32)
    dx, dweight = rms_norm_backward(dy, x, rstd, weight)
    assert_close(dx, dx_ref, DATA_TOLERANCE[dtype], dtype)
    assert_close(dweight, dw_ref, STAT_TOLERANCE[dtype], np.float32)


@pytest.mark.parametrize("center", [True, False], ids=["layer_norm", "rms_norm"])
def test_wide_rows_beyond_the_shared_memory_cache(rng, monkeypatch, center):
    """Wide kernels on 100 columns, of which only 64 (forward) and 32 (backward) fit the cache."""
    monkeypatch.setattr(_row_norm, "NARROW_MAX_COLS", 32)
    monkeypatch.setattr(_row_norm, "CACHE_BYTES", 256)
    x, dy, weight, bias, (y_ref, _, rstd_ref, dx_ref, dw_ref, db_ref) = row_case(rng, 3, 100, np.float32, center)
    if center:
        y, mean, rstd = layer_norm_forward(x, weight, bias, EPS)
        dx, dweight, dbias = layer_norm_backward(dy, x, mean, rstd, weight)
        assert_close(dbias, db_ref, 3e-5)
    else:
        y, rstd = rms_norm_forward(x, weight, EPS)
        dx, dweight = rms_norm_backward(dy, x, rstd, weight)
    for actual, expected in [(y, y_ref), (rstd, rstd_ref), (dx, dx_ref), (dweight, dw_ref)]:
        assert_close(actual, expected, 3e-5)


def test_layer_norm_without_affine_and_into_out(rng):
    x, dy, _, _, (y_ref, _, _, dx_ref, dw_ref, db_ref) = row_case(rng, 4, 50, np.float32, affine=False)
    out = CudaArray.empty(x.shape, np.float32)
    y, mean, rstd = layer_norm_forward(to_device(x), None, None, EPS, out=out)
    assert y is out
    assert_close(out, y_ref, 3e-5)
    dx, dweight, dbias = layer_norm_backward(to_device(dy), x, mean, rstd, None)
    for actual, expected in [(dx, dx_ref), (dweight, dw_ref), (dbias, db_ref)]:
        assert_close(actual, expected, 3e-5)


def test_layer_norm_large_offset_stays_accurate(rng, row_path):
    """mean 1e4, std 1: float32 output error ~1e-3 is inherent; E[x²] - E[x]² would be off by 100%+."""
    x = random(rng, (2, 40), loc=1e4)
    y_ref, mean_ref, rstd_ref, *_ = reference(x, x, None, None, (1,), (1, 40))
    y, mean, rstd = layer_norm_forward(x, None, None, EPS)
    np.testing.assert_allclose(host(y), y_ref, atol=1e-2)
    np.testing.assert_allclose(host(rstd), rstd_ref, rtol=1e-3)
    np.testing.assert_allclose(host(mean), mean_ref, rtol=1e-6)


def test_constant_rows_give_finite_outputs(rng, row_path):
    x = np.full((2, 40), 3.0, np.float32)
    x[1] = 0.0
    bias = random(rng, 40)
    y, mean, rstd = layer_norm_forward(x, None, bias, EPS)
    np.testing.assert_allclose(host(y), np.broadcast_to(bias, x.shape), atol=1e-6)
    dx, dweight, _ = layer_norm_backward(random(rng, x.shape), x, mean, rstd, None)
    assert np.isfinite(host(dx)).all() and np.isfinite(host(dweight)).all()
    y, rstd = rms_norm_forward(x, None, EPS)
    assert np.isfinite(host(y)).all() and host(y)[1].max() == 0
    np.testing.assert_allclose(host(rstd)[1], 1 / np.sqrt(EPS), rtol=1e-6)


def test_layer_norm_backward_is_bitwise_deterministic(rng, row_path):
    x, dy, weight, bias, _ = row_case(rng, 9 if row_path == "narrow" else 3, 40, np.float32)
    _, mean, rstd = layer_norm_forward(x, weight, bias, EPS)
    first = [host(a) for a in layer_norm_backward(dy, x, mean, rstd, weight)]
    second = [host(a) for a in layer_norm_backward(dy, x, mean, rstd, weight)]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


# --- BatchNorm ---------------------------------------------------------------------------------------


def bn_case(rng, shape, dtype, loc=0.0):
    channels = shape[1]
    x, dy = random(rng, shape, dtype, loc), random(rng, shape, dtype)
    weight, bias = random(rng, channels, np.float32, 1.0, 0.5), random(rng, channels)
    return x, dy, weight, bias, reference(x, dy, weight, bias, (0, 2), (1, channels, 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape", [(8, 3, 1), (2, 3, 30)], ids=["N,C", "N,C,S"])
def test_batch_norm_training_matches_float64_reference(rng, shape, dtype):
    x, dy, weight, bias, (y_ref, mean_ref, rstd_ref, dx_ref, dw_ref, db_ref) = bn_case(rng, shape, dtype)
    mean, var = batch_norm_stats(x)
    assert_close(mean, mean_ref, STAT_TOLERANCE[dtype], np.float32)
    assert_close(var, 1 / rstd_ref ** 2 - EPS, STAT_TOLERANCE[dtype], np.float32)
    rstd = (1 / np.sqrt(host(var) + EPS)).astype(np.float32)
    assert_close(batch_norm_forward(x, mean, rstd, weight, bias), y_ref, DATA_TOLERANCE[dtype], dtype)
    dx, dweight, dbias = batch_norm_backward(dy, x, mean, rstd, weight, training=True)
    assert_close(dx, dx_ref, DATA_TOLERANCE[dtype], dtype)
    assert_close(dweight, dw_ref, STAT_TOLERANCE[dtype], np.float32)
    assert_close(dbias, db_ref, STAT_TOLERANCE[dtype], np.float32)
    # The two halves SyncBatchNorm uses give the same input gradient.
    sum_dy, sum_dy_xhat = batch_norm_backward_reduce(dy, x, mean, rstd)
    count = shape[0] * shape[2]
    dx_halves = batch_norm_backward_elemt(dy, x, mean, rstd, weight, host(sum_dy) / count,
                                          host(sum_dy_xhat) / count)
    assert_close(dx_halves, dx_ref, DATA_TOLERANCE[dtype], dtype)


def test_batch_norm_evaluation_with_running_statistics(rng):
    x, dy, weight, bias, _ = bn_case(rng, (4, 3, 20), np.float32)
    running_mean, running_var = random(rng, 3), rng.uniform(0.5, 2.0, 3).astype(np.float32)
    rstd = (1 / np.sqrt(running_var + EPS)).astype(np.float32)
    xhat = (x.astype(np.float64) - running_mean[:, None]) * rstd[:, None]
    y = batch_norm_forward(x, running_mean, rstd, weight, bias)
    assert_close(y, xhat * weight[:, None] + bias[:, None], 3e-5)
    dx, dweight, dbias = batch_norm_backward(dy, x, running_mean, rstd, weight, training=False)
    assert_close(dx, dy * (weight * rstd)[:, None].astype(np.float64), 3e-5)
    assert_close(dweight, (dy * xhat).sum(axis=(0, 2)), 3e-5)
    assert_close(dbias, dy.astype(np.float64).sum(axis=(0, 2)), 3e-5)
    assert_close(batch_norm_forward(x, running_mean, rstd, None, None), xhat, 3e-5)


def test_batch_norm_many_blocks_per_channel_large_offset(rng, monkeypatch):
    """Partials of 32 values each, merged with Chan's formula; mean 1e4, std 1."""
    monkeypatch.setattr(batch_norm, "MIN_VALUES_PER_BLOCK", 32)
    x, dy, weight, _, (_, mean_ref, rstd_ref, dx_ref, dw_ref, db_ref) = bn_case(rng, (4, 2, 24), np.float32, 1e4)
    mean, var = batch_norm_stats(x)
    np.testing.assert_allclose(host(mean), mean_ref, rtol=1e-6)
    np.testing.assert_allclose(host(var), 1 / rstd_ref ** 2 - EPS, rtol=1e-3)
    rstd = (1 / np.sqrt(host(var) + EPS)).astype(np.float32)
    dx, dweight, dbias = batch_norm_backward(dy, x, mean, rstd, weight, training=True)
    # Inherent float32 error: xhat carries |mean| * 2^-24 * rstd ~ 1e-3.
    np.testing.assert_allclose(host(dx), dx_ref, atol=2e-2)
    np.testing.assert_allclose(host(dweight), dw_ref, atol=5e-2)
    np.testing.assert_allclose(host(dbias), db_ref, rtol=1e-4, atol=1e-3)
    first = [host(a) for a in (*batch_norm_stats(x), *batch_norm_backward_reduce(dy, x, mean, rstd))]
    second = [host(a) for a in (*batch_norm_stats(x), *batch_norm_backward_reduce(dy, x, mean, rstd))]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_batch_norm_constant_channel_is_finite(rng):
    x = np.full((3, 2, 10), 7.0, np.float32)
    mean, var = batch_norm_stats(x)
    np.testing.assert_array_equal(host(var), 0.0)
    np.testing.assert_array_equal(host(mean), 7.0)
    rstd = (1 / np.sqrt(host(var) + EPS)).astype(np.float32)
    assert np.isfinite(host(batch_norm_forward(x, mean, rstd, None, None))).all()


@pytest.mark.parametrize("buffer_dtype", [np.float32, np.float16])
def test_batch_norm_running_update_and_rstd_match_the_cpu_kernels(rng, buffer_dtype):
    """One launch each: PyTorch's update (unbiased variance) in float32 arithmetic, rounded once into
    float16 buffers (the CPU kernel rounds float16 after every operation, so it is no reference there)."""
    from tinynorm.kernels import cpu

    mean, var = random(rng, 6), rng.uniform(0.1, 3.0, 6).astype(np.float32)
    running = [random(rng, 6, buffer_dtype), rng.uniform(0.5, 2.0, 6).astype(buffer_dtype)]
    before = [r.astype(np.float64) for r in running]
    exact = [0.7 * before[0] + 0.3 * mean.astype(np.float64), 0.7 * before[1] + 0.3 * var * (12 / 11)]
    device_running = [to_device(r) for r in running]
    batch_norm_update_running(*device_running, mean, var, 12, 0.3)
    cpu.batch_norm_update_running(*running, mean, var, 12, 0.3)
    for got, cpu_result, want in zip(device_running, running, exact):
        assert host(got).dtype == buffer_dtype
        if buffer_dtype == np.float32:
            np.testing.assert_allclose(host(got), cpu_result, rtol=1e-6)
        np.testing.assert_allclose(host(got), want, rtol=5e-4 if buffer_dtype == np.float16 else 1e-6)
    rstd = batch_norm_rstd(var, EPS)
    np.testing.assert_array_equal(host(rstd), cpu.batch_norm_rstd(var, EPS))


@pytest.mark.parametrize("call, error, message", [
    (lambda: batch_norm_update_running(np.zeros(3, np.float32), np.ones(3, np.float16), np.zeros(3, np.float32),
                                       np.ones(3, np.float32), 4, 0.1), TypeError,
     r"running_var must have dtype float32 \(the dtype of running_mean\), got float16"),
    (lambda: batch_norm_update_running(*[np.ones(3, np.float32)] * 4, 1, 0.1), ValueError, "count must be"),
    (lambda: batch_norm_update_running(*[np.ones(3, np.float32)] * 3, np.ones(3), 4, 0.1), TypeError,
     "var must have dtype float32"),
    (lambda: batch_norm_rstd(np.ones((2, 3), np.float32), EPS), ValueError, r"var must be 1-D \(C,\)"),
    (lambda: kernels.batch_norm_update_running(CudaArray.from_host(np.zeros(6, np.float32))[::2],
                                               *map(CudaArray.from_host, [np.ones(3, np.float32)] * 3), 4, 0.1),
     ValueError, "running_mean must be C-contiguous"),
])
def test_batch_norm_running_update_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()


# --- GroupNorm and InstanceNorm ----------------------------------------------------------------------


def gn_case(rng, shape, groups, dtype, loc=0.0):
    batch, channels, spatial = shape
    x, dy = random(rng, shape, dtype, loc), random(rng, shape, dtype)
    weight, bias = random(rng, channels, np.float32, 1.0, 0.5), random(rng, channels)
    grouped = (batch, groups, channels // groups, spatial)
    y, mean, rstd, dx, dw, db = reference(x.reshape(grouped), dy.reshape(grouped), weight, bias, (2, 3),
                                          (1, groups, channels // groups, 1))
    return x, dy, weight, bias, (y.reshape(shape), mean, rstd, dx.reshape(shape), dw, db)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape, groups", [((2, 4, 40), 2), ((2, 3, 20), 3)], ids=["group", "instance"])
def test_group_norm_matches_float64_reference(rng, shape, groups, dtype):
    x, dy, weight, bias, (y_ref, mean_ref, rstd_ref, dx_ref, dw_ref, db_ref) = gn_case(rng, shape, groups, dtype)
    y, mean, rstd = group_norm_forward(x, groups, weight, bias, EPS)
    assert_close(y, y_ref, DATA_TOLERANCE[dtype], dtype)
    assert_close(mean, mean_ref, STAT_TOLERANCE[dtype], np.float32)
    assert_close(rstd, rstd_ref, STAT_TOLERANCE[dtype], np.float32)
    dx, dweight, dbias = group_norm_backward(dy, x, mean, rstd, groups, weight)
    assert_close(dx, dx_ref, DATA_TOLERANCE[dtype], dtype)
    assert_close(dweight, dw_ref, STAT_TOLERANCE[dtype], np.float32)
    assert_close(dbias, db_ref, STAT_TOLERANCE[dtype], np.float32)


def test_group_norm_beyond_the_cache_large_offset_and_constant(rng, monkeypatch):
    """A group of 80 values with room for 16 in the cache; mean 1e4; a constant sample stays finite."""
    monkeypatch.setattr(group_norm, "CACHE_BYTES", 64)
    x, dy, weight, bias, (y_ref, mean_ref, rstd_ref, *_) = gn_case(rng, (2, 4, 40), 2, np.float32, 1e4)
    y, mean, rstd = group_norm_forward(x, 2, weight, bias, EPS)
    np.testing.assert_allclose(host(y), y_ref, atol=1e-2)
    np.testing.assert_allclose(host(mean), mean_ref, rtol=1e-6)
    np.testing.assert_allclose(host(rstd), rstd_ref, rtol=1e-3)
    x[1] = 5.0
    y, mean, rstd = group_norm_forward(x, 2, weight, bias, EPS)
    np.testing.assert_allclose(host(y)[1], np.broadcast_to(bias[:, None], (4, 40)), atol=1e-6)
    dx, dweight, dbias = group_norm_backward(dy, x, mean, rstd, 2, weight)
    assert np.isfinite(host(dx)).all() and np.isfinite(host(dweight)).all()
    again = group_norm_backward(dy, x, mean, rstd, 2, weight)
    for a, b in zip((dx, dweight, dbias), again):
        np.testing.assert_array_equal(host(a), host(b))


# --- bad input -------------------------------------------------------------------------------------


def test_bad_inputs_raise_clear_errors():
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(TypeError, match="x must have dtype float16 or float32, got float64"):
        layer_norm_forward(x.astype(np.float64), None, None, EPS)
    with pytest.raises(TypeError, match="x must be a CudaArray, got list"):
        rms_norm_forward([[1.0]], None, EPS)
    with pytest.raises(ValueError, match=r"x must be 2-D \(rows, cols\), got shape \(8,\)"):
        layer_norm_forward(x[0], None, None, EPS)
    with pytest.raises(ValueError, match=r"weight must have shape \(8,\), got \(7,\)"):
        layer_norm_forward(x, np.ones(7, np.float32), None, EPS)
    with pytest.raises(TypeError, match="weight must have dtype float32"):
        rms_norm_forward(x, np.ones(8, np.float16), EPS)
    with pytest.raises(ValueError, match="eps must be a non-negative float, got -1"):
        layer_norm_forward(x, None, None, -1)
    with pytest.raises(TypeError, match="dy must have dtype float32 .the dtype of x., got float16"):
        layer_norm_backward(x.astype(np.float16), x, np.zeros(2, np.float32), np.ones(2, np.float32), None)
    with pytest.raises(TypeError, match=r"rstd must be a float32 array of shape \(2,\), got None"):
        rms_norm_backward(x, x, None, None)
    with pytest.raises(TypeError, match="out must be a CudaArray"):
        kernels.layer_norm_forward(to_device(x), None, None, EPS, out=np.empty_like(x))
    with pytest.raises(TypeError, match="x must be a CudaArray, got ndarray .copy host data to the device first."):
        kernels.layer_norm_forward(x, None, None, EPS)
    with pytest.raises(ValueError, match=r"out must be an array of shape \(2, 8\)"):
        layer_norm_forward(x, None, None, EPS, out=CudaArray.empty((8, 2), np.float32))
    with pytest.raises(ValueError, match="out must be C-contiguous"):
        layer_norm_forward(x, None, None, EPS, out=CudaArray.empty((2, 16), np.float32)[:, ::2])
    x3 = np.zeros((2, 6, 5), np.float32)
    with pytest.raises(ValueError, match=r"x must be 3-D \(N, C, S\), got shape \(2, 8\)"):
        batch_norm_stats(x)
    with pytest.raises(ValueError, match=r"mean must have shape \(6,\), got \(5,\)"):
        batch_norm_forward(x3, np.zeros(5, np.float32), np.ones(6, np.float32), None, None)
    with pytest.raises(ValueError, match="num_groups must be a positive integer dividing C=6, got 4"):
        group_norm_forward(x3, 4, None, None, EPS)


def test_empty_inputs(rng):
    y, mean, _ = layer_norm_forward(np.zeros((0, 8), np.float32), None, None, EPS)
    assert host(y).shape == (0, 8) and host(mean).shape == (0,)
    _, dweight, dbias = layer_norm_backward(np.zeros((0, 8), np.float32), np.zeros((0, 8), np.float32),
                                            np.zeros(0, np.float32), np.zeros(0, np.float32), None)
    np.testing.assert_array_equal(host(dweight), 0.0)
    np.testing.assert_array_equal(host(dbias), 0.0)
    mean, var = batch_norm_stats(np.zeros((0, 3, 4), np.float32))
    assert np.isnan(host(mean)).all() and np.isnan(host(var)).all()


def test_a_strided_input_is_normalized_like_its_contiguous_copy(rng):
    """As on the CPU, a view that is not C-contiguous (every other column of a wider array) is copied
    to C order first: the same results as for the contiguous array."""
    wide = random(rng, (3, 80))
    strided = to_device(wide)[:, ::2]
    assert not strided.is_contiguous()
    for got, want in zip(kernels.layer_norm_forward(strided, None, None, EPS),
                         layer_norm_forward(np.ascontiguousarray(wide[:, ::2]), None, None, EPS)):
        np.testing.assert_array_equal(host(got), host(want))
