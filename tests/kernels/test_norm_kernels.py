"""The fused normalization kernels against float64 numpy references written here, and against PyTorch.

Shapes are chosen to reach both the serial path and the parallel path (>= PARALLEL_THRESHOLD elements).
Gradients always use a random upstream gradient: ``out.sum()`` is blind for mean-centred norms.
"""
import numba
import numpy as np
import pytest

from tinynorm.kernels.cpu import _shared, batch_norm, group_norm, layer_norm, rms_norm
from tinynorm.kernels.cpu._config import PARALLEL_THRESHOLD
from tinynorm.kernels.cpu.batch_norm import (batch_norm_backward, batch_norm_backward_elemt,
                                             batch_norm_backward_reduce, batch_norm_forward, batch_norm_rstd,
                                             batch_norm_stats, batch_norm_update_running)
from tinynorm.kernels.cpu.group_norm import group_norm_backward, group_norm_forward
from tinynorm.kernels.cpu.layer_norm import layer_norm_backward, layer_norm_forward
from tinynorm.kernels.cpu.rms_norm import rms_norm_backward, rms_norm_forward

EPS = 1e-5
DTYPES = [np.float32, np.float64]
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-10}


def assert_close(actual, expected, dtype):
    """Element-wise closeness, scaled by the size of the expected values (sums of +-terms can be ~0)."""
    tol = TOLERANCE[dtype]
    assert actual.dtype == dtype
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol * max(1.0, np.abs(expected).max(initial=0)))


def random(shape, dtype, rng, loc=0.0, scale=1.0):
    return (rng.standard_normal(shape) * scale + loc).astype(dtype)


def affine(channels, dtype, rng, with_affine):
    if not with_affine:
        return None, None
    return random(channels, dtype, rng, 1.0, 0.5), random(channels, dtype, rng)


def f64(a):
    return None if a is None else a.astype(np.float64)


# ---------------------------------------------------------------- float64 references
def ref_standardize(x, axes, eps):
    """(xhat, mean, rstd) normalizing over ``axes``, float64."""
    mean = x.mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    return (x - mean) * rstd, mean, rstd


def ref_standardize_grad(g, xhat, rstd, axes):
    """Gradient through ``xhat`` given ``g = dL/dxhat``."""
    return rstd * (g - g.mean(axis=axes, keepdims=True) - xhat * (g * xhat).mean(axis=axes, keepdims=True))


def ref_layer_norm(x, w, b, dy, eps=EPS):
    x, dy = f64(x), f64(dy)
    w = np.ones(x.shape[1]) if w is None else f64(w)
    b = np.zeros(x.shape[1]) if b is None else f64(b)
    xhat, mean, rstd = ref_standardize(x, 1, eps)
    dx = ref_standardize_grad(dy * w, xhat, rstd, 1)
    return xhat * w + b, mean[:, 0], rstd[:, 0], dx, (dy * xhat).sum(0), dy.sum(0)


def ref_rms_norm(x, w, dy, eps=EPS):
    x, dy = f64(x), f64(dy)
    w = np.ones(x.shape[1]) if w is None else f64(w)
    rstd = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    xhat, g = x * rstd, dy * w
    dx = rstd * (g - xhat * (g * xhat).mean(axis=1, keepdims=True))
    return xhat * w, rstd[:, 0], dx, (dy * xhat).sum(0)


def ref_group_norm(x, groups, w, b, dy, eps=EPS):
    x, dy = f64(x), f64(dy)
    n, c, s = x.shape
    w = np.ones(c) if w is None else f64(w)
    b = np.zeros(c) if b is None else f64(b)
    xg = x.reshape(n, groups, -1)
    xhat, mean, rstd = ref_standardize(xg, 2, eps)
    xhat = xhat.reshape(x.shape)
    g = (dy * w[:, None]).reshape(n, groups, -1)
    dx = ref_standardize_grad(g, xhat.reshape(n, groups, -1), rstd, 2).reshape(x.shape)
    y = xhat * w[:, None] + b[:, None]
    return y, mean[..., 0], rstd[..., 0], dx, (dy * xhat).sum((0, 2)), dy.sum((0, 2))


def ref_batch_norm(x, w, b, dy, training, eps=EPS):
    """Training uses the batch statistics; eval uses fixed 'running' ones (mean 0.1, var 2)."""
    x, dy = f64(x), f64(dy)
    c = x.shape[1]
    w = np.ones(c) if w is None else f64(w)
    b = np.zeros(c) if b is None else f64(b)
    if training:
        xhat, mean, rstd = ref_standardize(x, (0, 2), eps)
        dx = ref_standardize_grad(dy * w[:, None], xhat, rstd, (0, 2))
    else:
        mean, rstd = np.full((1, c, 1), 0.1), np.full((1, c, 1), 1 / np.sqrt(2.0 + eps))
        xhat = (x - mean) * rstd
        dx = dy * w[:, None] * rstd
    return xhat * w[:, None] + b[:, None], mean.ravel(), rstd.ravel(), dx, (dy * xhat).sum((0, 2)), dy.sum((0, 2))


def numeric_grad(f, x, dy, h=1e-6):
    """d(sum(f(x) * dy))/dx by central differences, float64."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        grad[i] = ((f(xp) - f(xm)) * dy).sum() / (2 * h)
    return grad


def test_reference_gradients_match_finite_differences():
    """The analytic references the kernels are tested against are themselves right."""
    rng = np.random.default_rng(0)
    x2, dy2, w = rng.standard_normal((3, 5)), rng.standard_normal((3, 5)), rng.standard_normal(5)
    np.testing.assert_allclose(ref_layer_norm(x2, w, None, dy2)[3],
                               numeric_grad(lambda x: ref_layer_norm(x, w, None, dy2)[0], x2, dy2), atol=1e-6)
    np.testing.assert_allclose(ref_rms_norm(x2, w, dy2)[2],
                               numeric_grad(lambda x: ref_rms_norm(x, w, dy2)[0], x2, dy2), atol=1e-6)
    x3, dy3, wc = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 3)), rng.standard_normal(4)
    np.testing.assert_allclose(ref_group_norm(x3, 2, wc, None, dy3)[3],
                               numeric_grad(lambda x: ref_group_norm(x, 2, wc, None, dy3)[0], x3, dy3), atol=1e-6)
    for training in (True, False):
        np.testing.assert_allclose(
            ref_batch_norm(x3, wc, None, dy3, training)[3],
            numeric_grad(lambda x: ref_batch_norm(x, wc, None, dy3, training)[0], x3, dy3), atol=1e-6)


# ---------------------------------------------------------------- against the references
ROW_SHAPES = [(3, 1), (5, 7), (257, 300)]  # cols=1 gives xhat = 0; the last takes the parallel path


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("with_affine", [True, False])
def test_layer_norm_matches_reference(shape, dtype, with_affine):
    rng = np.random.default_rng(1)
    x, dy = random(shape, dtype, rng, 0.5, 2.0), random(shape, dtype, rng)
    w, b = affine(shape[1], dtype, rng, with_affine)
    y, mean, rstd = layer_norm_forward(x, w, b, EPS)
    dx, dw, db = layer_norm_backward(dy, x, mean, rstd, w)
    for got, want in zip((y, mean, rstd, dx, dw, db), ref_layer_norm(x, w, b, dy)):
        assert_close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("with_affine", [True, False])
def test_rms_norm_matches_reference(shape, dtype, with_affine):
    rng = np.random.default_rng(2)
    x, dy = random(shape, dtype, rng, 0.5, 2.0), random(shape, dtype, rng)
    w = affine(shape[1], dtype, rng, with_affine)[0]
    y, rstd = rms_norm_forward(x, w, EPS)
    dx, dw = rms_norm_backward(dy, x, rstd, w)
    for got, want in zip((y, rstd, dx, dw), ref_rms_norm(x, w, dy)):
        assert_close(got, want, dtype)


GROUP_CASES = [((2, 6, 5), 3), ((3, 4, 1), 2), ((4, 8, 50), 8), ((16, 32, 100), 8)]  # G = C is InstanceNorm


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, groups", GROUP_CASES)
@pytest.mark.parametrize("with_affine", [True, False])
def test_group_norm_matches_reference(shape, groups, dtype, with_affine):
    rng = np.random.default_rng(3)
    x, dy = random(shape, dtype, rng, 0.5, 2.0), random(shape, dtype, rng)
    w, b = affine(shape[1], dtype, rng, with_affine)
    y, mean, rstd = group_norm_forward(x, groups, w, b, EPS)
    dx, dw, db = group_norm_backward(dy, x, mean, rstd, groups, w)
    for got, want in zip((y, mean, rstd, dx, dw, db), ref_group_norm(x, groups, w, b, dy)):
        assert_close(got, want, dtype)


BATCH_SHAPES = [(5, 3, 1), (6, 4, 7), (700, 64, 1), (16, 8, 300), (2, 1, 20000)]  # S == 1 and S > 1 paths


def batch_norm_all(x, w, b, dy, training):
    """Run the kernels the way the autograd layer will: stats (training) or fixed running stats."""
    channels = x.shape[1]
    if training:
        mean, var = batch_norm_stats(x)
    else:
        mean, var = np.full(channels, 0.1, x.dtype), np.full(channels, 2.0, x.dtype)
    rstd = (1 / np.sqrt(var.astype(np.float64) + EPS)).astype(x.dtype)
    y = batch_norm_forward(x, mean, rstd, w, b)
    dx, dw, db = batch_norm_backward(dy, x, mean, rstd, w, training)
    return y, mean, rstd, dx, dw, db


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", BATCH_SHAPES)
@pytest.mark.parametrize("with_affine", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_reference(shape, dtype, with_affine, training):
    rng = np.random.default_rng(4)
    x, dy = random(shape, dtype, rng, 0.5, 2.0), random(shape, dtype, rng)
    w, b = affine(shape[1], dtype, rng, with_affine)
    for got, want in zip(batch_norm_all(x, w, b, dy, training), ref_batch_norm(x, w, b, dy, training)):
        assert_close(got, want, dtype)


def test_batch_norm_stats_returns_biased_variance():
    rng = np.random.default_rng(5)
    x = random((9, 5, 11), np.float64, rng, 3.0)
    mean, var = batch_norm_stats(x)
    assert_close(mean, x.mean((0, 2)), np.float64)
    assert_close(var, x.var((0, 2)), np.float64)


def test_batch_norm_reductions_add_up_across_processes():
    """What SyncBatchNorm relies on: sums over two halves of the batch add up to the whole."""
    rng = np.random.default_rng(6)
    x, dy = random((8, 3, 10), np.float64, rng), random((8, 3, 10), np.float64, rng)
    mean, var = batch_norm_stats(x)
    rstd = 1 / np.sqrt(var + EPS)
    whole = batch_norm_backward_reduce(dy, x, mean, rstd)
    halves = [batch_norm_backward_reduce(dy[i:i + 4], x[i:i + 4], mean, rstd) for i in (0, 4)]
    for k in range(2):
        assert_close(halves[0][k] + halves[1][k], whole[k], np.float64)
    mean_dy, mean_dy_xhat = whole[0] / 80, whole[1] / 80
    dx = batch_norm_backward_elemt(dy, x, mean, rstd, None, mean_dy, mean_dy_xhat)
    assert_close(dx, batch_norm_backward(dy, x, mean, rstd, None, True)[0], np.float64)


@pytest.mark.parametrize("momentum", [0.1, 0.5])
def test_batch_norm_running_update_matches_torch(momentum):
    """The in-place update of the running statistics is PyTorch's: unbiased variance, momentum weights."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = random((6, 4, 5), np.float32, rng, 2.0)
    running_mean, running_var = random(4, np.float32, rng), rng.uniform(0.5, 2.0, 4).astype(np.float32)
    torch_mean, torch_var = torch.tensor(running_mean), torch.tensor(running_var)
    torch.nn.functional.batch_norm(torch.tensor(x), torch_mean, torch_var, training=True, momentum=momentum)
    mean, var = batch_norm_stats(x)
    batch_norm_update_running(running_mean, running_var, mean, var, 30, momentum)
    np.testing.assert_allclose(running_mean, torch_mean.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(running_var, torch_var.numpy(), rtol=1e-6)


def test_batch_norm_running_update_and_rstd_against_formulas():
    rng = np.random.default_rng(8)
    mean, var = random(5, np.float64, rng), rng.uniform(0.1, 3.0, 5)
    running_mean, running_var = random(5, np.float64, rng), rng.uniform(0.5, 2.0, 5)
    want_mean, want_var = 0.75 * running_mean + 0.25 * mean, 0.75 * running_var + 0.25 * var * 10 / 9
    batch_norm_update_running(running_mean, running_var, mean, var, 10, 0.25)
    assert_close(running_mean, want_mean, np.float64)
    assert_close(running_var, want_var, np.float64)
    assert_close(batch_norm_rstd(var, EPS), 1 / np.sqrt(var + EPS), np.float64)


# ---------------------------------------------------------------- against PyTorch
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_and_rms_norm_match_torch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x, dy = random((64, 300), dtype, rng, 1.0, 3.0), random((64, 300), dtype, rng)
    w, b = affine(300, dtype, rng, True)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    torch.nn.functional.layer_norm(tx, (300,), tw, tb, EPS).backward(torch.tensor(dy))
    y, mean, rstd = layer_norm_forward(x, w, b, EPS)
    expected = (torch.nn.functional.layer_norm(tx, (300,), tw, tb, EPS).detach(), tx.grad, tw.grad, tb.grad)
    for got, want in zip((y, *layer_norm_backward(dy, x, mean, rstd, w)), expected):
        assert_close(got, want.numpy(), dtype)

    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x, w))
    ty = torch.nn.functional.rms_norm(tx, (300,), tw, EPS)
    ty.backward(torch.tensor(dy))
    y, rstd = rms_norm_forward(x, w, EPS)
    for got, want in zip((y, *rms_norm_backward(dy, x, rstd, w)), (ty.detach(), tx.grad, tw.grad)):
        assert_close(got, want.numpy(), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("groups", [4, 16])  # 16 = C: InstanceNorm
def test_group_norm_matches_torch(dtype, groups):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    shape = (8, 16, 6, 7)
    x, dy = random(shape, dtype, rng, 1.0, 3.0), random(shape, dtype, rng)
    w, b = affine(16, dtype, rng, True)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.group_norm(tx, groups, tw, tb, EPS)
    ty.backward(torch.tensor(dy))
    flat, dy_flat = x.reshape(8, 16, -1), dy.reshape(8, 16, -1)
    y, mean, rstd = group_norm_forward(flat, groups, w, b, EPS)
    dx, dw, db = group_norm_backward(dy_flat, flat, mean, rstd, groups, w)
    for got, want in zip((y.reshape(shape), dx.reshape(shape), dw, db), (ty.detach(), tx.grad, tw.grad, tb.grad)):
        assert_close(got, want.numpy(), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(40, 6), (8, 6, 5, 7)])  # BatchNorm1d and BatchNorm2d
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_torch(dtype, shape, training):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    x, dy = random(shape, dtype, rng, 1.0, 3.0), random(shape, dtype, rng)
    w, b = affine(6, dtype, rng, True)
    running_mean, running_var = random(6, dtype, rng), random(6, dtype, rng, 2.0, 0.1)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.batch_norm(tx, torch.tensor(running_mean), torch.tensor(running_var), tw, tb,
                                        training=training, eps=EPS)
    ty.backward(torch.tensor(dy))
    flat, dy_flat = x.reshape(shape[0], 6, -1), dy.reshape(shape[0], 6, -1)
    mean, var = batch_norm_stats(flat) if training else (running_mean, running_var)
    rstd = (1 / np.sqrt(var.astype(np.float64) + EPS)).astype(dtype)
    y = batch_norm_forward(flat, mean, rstd, w, b)
    dx, dw, db = batch_norm_backward(dy_flat, flat, mean, rstd, w, training)
    for got, want in zip((y.reshape(shape), dx.reshape(shape), dw, db), (ty.detach(), tx.grad, tw.grad, tb.grad)):
        assert_close(got, want.numpy(), dtype)


# ---------------------------------------------------------------- numerics
def naive_standardize(x, axes):
    """E[x²] - E[x]² in the input's dtype: the formula the kernels must not use."""
    mean = x.mean(axis=axes, keepdims=True)
    var = np.maximum((x * x).mean(axis=axes, keepdims=True) - mean * mean, 0)
    return (x - mean) / np.sqrt(var + x.dtype.type(EPS))


def test_large_offset_stays_accurate():
    """Mean 1e4, std 1 in float32: y within 3e-3 of float64, where the naive variance is far off."""
    rng = np.random.default_rng(10)
    x = random((64, 1024), np.float32, rng, 1e4)
    want = ref_layer_norm(x, None, None, np.zeros_like(x))[0]
    assert np.abs(naive_standardize(x, 1) - want).max() > 3e-3  # the test has teeth
    assert np.abs(layer_norm_forward(x, None, None, EPS)[0] - want).max() < 3e-3

    x3 = x.reshape(8, 32, 256)
    assert np.abs(group_norm_forward(x3, 4, None, None, EPS)[0] - ref_group_norm(x3, 4, None, None, x3)[0]).max() < 3e-3
    for batch in (x3, x.reshape(2048, 32, 1)):
        want = ref_standardize(f64(batch), (0, 2), EPS)[0]
        assert np.abs(naive_standardize(batch, (0, 2)) - want).max() > 3e-3
        mean, var = batch_norm_stats(batch)
        y = batch_norm_forward(batch, mean, (1 / np.sqrt(var + np.float32(EPS))).astype(np.float32), None, None)
        assert np.abs(y - want).max() < 3e-3


def test_constant_inputs_give_bias():
    x = np.full((4, 8, 5), 3.0, np.float32)
    w, b = np.full(8, 2.0, np.float32), np.arange(8, dtype=np.float32)
    y = layer_norm_forward(x.reshape(4, 40), None, np.arange(40, dtype=np.float32), EPS)[0]
    np.testing.assert_array_equal(y, np.broadcast_to(np.arange(40, dtype=np.float32), (4, 40)))
    np.testing.assert_array_equal(group_norm_forward(x, 2, w, b, EPS)[0], np.broadcast_to(b[:, None], x.shape))
    mean, var = batch_norm_stats(x)
    assert np.all(var == 0)
    y = batch_norm_forward(x, mean, 1 / np.sqrt(var + np.float32(EPS)), w, b)
    np.testing.assert_array_equal(y, np.broadcast_to(b[:, None], x.shape))


# ---------------------------------------------------------------- determinism and compilation
def test_parallel_results_are_bit_identical_across_calls():
    rng = np.random.default_rng(11)
    x, dy = random((512, 256), np.float32, rng), random((512, 256), np.float32, rng)
    assert x.size >= PARALLEL_THRESHOLD
    w = random(256, np.float32, rng)
    x3, dy3 = x.reshape(64, 32, 64), dy.reshape(64, 32, 64)

    def run_all():
        y, mean, rstd = layer_norm_forward(x, w, None, EPS)
        bn_mean, bn_var = batch_norm_stats(x3)
        rms_rstd = rms_norm_forward(x, w, EPS)[1]
        return (y, *layer_norm_backward(dy, x, mean, rstd, w), *rms_norm_backward(dy, x, rms_rstd, w),
                bn_mean, bn_var, *batch_norm_backward(dy3, x3, bn_mean, bn_var, w[:32], True),
                *batch_norm_stats(x.reshape(-1, 32, 1)),
                *group_norm_backward(dy3, x3, *group_norm_forward(x3, 8, None, None, EPS)[1:], 8, w[:32]))

    for first, second in zip(run_all(), run_all()):
        np.testing.assert_array_equal(first, second)


MODULES = [layer_norm, rms_norm, group_norm, batch_norm, _shared]


def signature_counts():
    return {(module.__name__, name): len(obj.signatures) for module in MODULES
            for name, obj in vars(module).items() if isinstance(obj, numba.core.registry.CPUDispatcher)}


def call_every_kernel(dtype, noncontiguous):
    rng = np.random.default_rng(12)
    x = random((64, 1200), dtype, rng)  # parallel path; the [:, ::2] view is the same size
    x = x[:, ::2] if noncontiguous else np.ascontiguousarray(x[:, :600])
    small = x[:4, :6]
    for rows in (x, small):
        w = np.ones(rows.shape[1], dtype)
        y, mean, rstd = layer_norm_forward(rows, w, None, EPS)
        layer_norm_backward(y, rows, mean, rstd, None)
        y, rstd = rms_norm_forward(rows, None, EPS)
        rms_norm_backward(y, rows, rstd, w)
        for x3 in (rows.reshape(rows.shape[0], 2, -1), rows.reshape(-1, 2, 1)):
            y, mean, rstd = group_norm_forward(x3, 2, None, None, EPS)
            group_norm_backward(y, x3, mean, rstd, 2, None)
            mean, var = batch_norm_stats(x3)
            y = batch_norm_forward(x3, mean, var, None, None)
            batch_norm_backward(y, x3, mean, var, None, True)


def test_no_recompilation_after_first_call_per_dtype():
    for dtype in DTYPES:
        call_every_kernel(dtype, noncontiguous=False)
    first = signature_counts()
    for dtype in DTYPES:
        call_every_kernel(dtype, noncontiguous=True)
    assert signature_counts() == first
    assert all(count <= 2 for count in first.values()), {k: v for k, v in first.items() if v > 2}


# ---------------------------------------------------------------- API details and errors
def test_out_argument_is_filled_and_returned():
    rng = np.random.default_rng(13)
    x = random((6, 5), np.float32, rng)
    out = np.empty_like(x)
    y = layer_norm_forward(x, None, None, EPS, out=out)[0]
    assert y is out
    assert_close(out, ref_layer_norm(x, None, None, x)[0], np.float32)
    with pytest.raises(ValueError, match="out must have shape"):
        rms_norm_forward(x, None, EPS, out=np.empty((5, 6), np.float32))


def test_empty_inputs_give_empty_outputs():
    x = np.empty((0, 8), np.float32)
    y, mean, rstd = layer_norm_forward(x, None, None, EPS)
    assert y.shape == (0, 8) and mean.shape == (0,)
    dx, dw, db = layer_norm_backward(x, x, mean, rstd, None)
    assert dx.shape == (0, 8) and np.all(dw == 0) and np.all(db == 0)
    x3 = np.empty((0, 4, 3), np.float32)
    assert group_norm_forward(x3, 2, None, None, EPS)[0].shape == (0, 4, 3)
    assert batch_norm_backward_reduce(x3, x3, np.zeros(4, np.float32), np.ones(4, np.float32))[0].shape == (4,)


@pytest.mark.parametrize("call, error, message", [
    (lambda: layer_norm_forward(np.ones((2, 3, 4), np.float32), None, None, EPS), ValueError,
     r"x must be 2-D.*\(2, 3, 4\)"),
    (lambda: layer_norm_forward(np.ones((2, 3), np.float32), np.ones(4, np.float32), None, EPS), ValueError,
     r"weight must have shape \(3,\), got \(4,\)"),
    (lambda: layer_norm_forward(np.ones((2, 3), np.int64), None, None, EPS), TypeError,
     "float32 or float64, got int64"),
    (lambda: rms_norm_forward(np.ones((2, 3), np.float32), np.ones(3, np.float64), EPS), TypeError,
     "weight must have dtype float32"),
    (lambda: rms_norm_forward([[1.0]], None, EPS), TypeError, "numpy.ndarray, got list"),
    (lambda: group_norm_forward(np.ones((2, 6, 4), np.float32), 4, None, None, EPS), ValueError,
     "num_groups must be a positive integer dividing C=6, got 4"),
    (lambda: batch_norm_stats(np.ones((2, 6), np.float32)), ValueError,
     r"x must be 3-D \(N, C, S\), got shape \(2, 6\)"),
    (lambda: batch_norm_forward(np.ones((2, 3, 1)), np.zeros(2), np.ones(3), None, None), ValueError,
     r"mean must have shape \(3,\)"),
    (lambda: layer_norm_forward(np.ones((2, 3), np.float32), None, None, -1.0), ValueError, "eps must be"),
    (lambda: batch_norm_update_running(np.zeros(3), np.ones(3), np.zeros(3), np.ones(3), 1, 0.1), ValueError,
     r"count must be an integer > 1 .*got 1"),
    (lambda: batch_norm_update_running(np.zeros(3), np.ones(3), np.zeros(2), np.ones(3), 4, 0.1), ValueError,
     r"mean must have the shape of running_mean, \(C,\); got \(2,\) and \(3,\)"),
    (lambda: batch_norm_rstd([1.0], EPS), TypeError, "var must be a float numpy.ndarray, got list"),
    (lambda: batch_norm_update_running(np.zeros((3, 1)), np.ones(3), np.zeros(3), np.ones(3), 4, 0.1), ValueError,
     r"running_mean must be 1-D \(C,\), got shape \(3, 1\)"),
    (lambda: batch_norm_update_running(np.zeros(3), [1.0] * 3, np.zeros(3), np.ones(3), 4, 0.1), TypeError,
     "running_var must be an array, got list"),
])
def test_bad_input_raises_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()
