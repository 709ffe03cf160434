"""The fused normalization kernels against the float64 numpy references of
:mod:`tinynorm.kernels.reference` (themselves checked against finite differences and PyTorch), and
against PyTorch.

Shapes are chosen to reach both the serial path and the parallel path (the parallel threshold is lowered
for these tests in conftest.py).
Gradients always use a random upstream gradient: ``out.sum()`` is blind for mean-centred norms.
"""
import warnings

import numba
import numpy as np
import pytest

from helpers import assert_same_values
from tinynorm.kernels import reference
from tinynorm.kernels.cpu import _shared, batch_norm, group_norm, layer_norm, rms_norm
from tinynorm.kernels.cpu import _config
from tinynorm.kernels.cpu.batch_norm import (batch_norm_backward, batch_norm_backward_elemt,
                                             batch_norm_backward_reduce, batch_norm_forward, batch_norm_rstd,
                                             batch_norm_stats, batch_norm_training_forward,
                                             batch_norm_update_running)
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


# ---------------------------------------------------------------- the references themselves
def numeric_grad(f, x, dy, h=1e-6):
    """d(sum(f(x) * dy))/dx by central differences, float64."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        grad[i] = ((f(xp) - f(xm)) * dy).sum() / (2 * h)
    return grad


def reference_cases():
    """(name, forward(x, w, b) -> y, backward(dy, x, w) -> (dx, dw[, db]), x shape, parameter size)."""
    def rows(forward, backward):
        return lambda dy, x, w: backward(dy, x, *forward(x, w, None, EPS)[1:], w)

    def batch_norm(training):
        def stats(x):
            return reference.batch_norm_stats(x) if training else (np.full(4, 0.3), np.full(4, 1.7))

        def forward(x, w, b):
            mean, var = stats(x)
            return reference.batch_norm_forward(x, mean, 1 / np.sqrt(var + EPS), w, b)

        def backward(dy, x, w):
            mean, var = stats(x)
            return reference.batch_norm_backward(dy, x, mean, 1 / np.sqrt(var + EPS), w, training)
        return forward, backward

    return [
        ("layer_norm", lambda x, w, b: reference.layer_norm_forward(x, w, b, EPS)[0],
         rows(reference.layer_norm_forward, reference.layer_norm_backward), (3, 5), 5),
        ("rms_norm", lambda x, w, b: reference.rms_norm_forward(x, w, EPS)[0],
         lambda dy, x, w: reference.rms_norm_backward(dy, x, reference.rms_norm_forward(x, w, EPS)[1], w), (3, 5), 5),
        ("group_norm", lambda x, w, b: reference.group_norm_forward(x, 2, w, b, EPS)[0],
         lambda dy, x, w: reference.group_norm_backward(dy, x, *reference.group_norm_forward(x, 2, w, None, EPS)[1:],
                                                        2, w), (2, 4, 3), 4),
        ("instance_norm", lambda x, w, b: reference.instance_norm_forward(x, w, b, EPS)[0],
         lambda dy, x, w: reference.instance_norm_backward(dy, x, *reference.instance_norm_forward(x, w, None, EPS)[1:],
                                                           w), (2, 4, 3), 4),
        ("batch_norm-train", *batch_norm(True), (3, 4, 2), 4),
        ("batch_norm-eval", *batch_norm(False), (3, 4, 2), 4),
    ]


@pytest.mark.parametrize("index", range(6), ids=[c[0] for c in reference_cases()])
def test_reference_gradients_match_finite_differences(index):
    """Every reference backward (input, weight and bias gradients) against float64 central differences
    of its forward, with a random upstream gradient."""
    rng = np.random.default_rng(index)
    _, forward, backward, shape, size = reference_cases()[index]
    x, dy = rng.standard_normal(shape) * 2 + 0.5, rng.standard_normal(shape)
    w, b = rng.standard_normal(size) + 1, rng.standard_normal(size)
    grads = backward(dy, x, w)
    np.testing.assert_allclose(grads[0], numeric_grad(lambda v: forward(v, w, b), x, dy), atol=1e-6)
    np.testing.assert_allclose(grads[1], numeric_grad(lambda v: forward(x, v, b), w, dy), atol=1e-6)
    if len(grads) == 3:
        np.testing.assert_allclose(grads[2], numeric_grad(lambda v: forward(x, w, v), b, dy), atol=1e-6)


def test_reference_running_update_matches_torch():
    """The reference's running-statistics update is PyTorch's: unbiased variance, momentum weights."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 4, 5)) + 2
    running_mean, running_var = rng.standard_normal(4), rng.uniform(0.5, 2.0, 4)
    torch_mean, torch_var = torch.tensor(running_mean), torch.tensor(running_var)
    torch.nn.functional.batch_norm(torch.tensor(x), torch_mean, torch_var, training=True, momentum=0.3)
    want = reference.batch_norm_update_running(running_mean, running_var, *reference.batch_norm_stats(x), 30, 0.3)
    np.testing.assert_allclose(want[0], torch_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(want[1], torch_var.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- against the references
def ref_layer_norm(x, w, b, dy, eps=EPS):
    """The reference's (y, mean, rstd, dx, dweight, dbias)."""
    y, mean, rstd = reference.layer_norm_forward(x, w, b, eps)
    return (y, mean, rstd, *reference.layer_norm_backward(dy, x, mean, rstd, w))


def ref_rms_norm(x, w, dy, eps=EPS):
    y, rstd = reference.rms_norm_forward(x, w, eps)
    return (y, rstd, *reference.rms_norm_backward(dy, x, rstd, w))


def ref_group_norm(x, groups, w, b, dy, eps=EPS):
    y, mean, rstd = reference.group_norm_forward(x, groups, w, b, eps)
    return (y, mean, rstd, *reference.group_norm_backward(dy, x, mean, rstd, groups, w))


RUNNING_MEAN, RUNNING_VAR = 0.1, 2.0  # the fixed 'running' statistics of the evaluation cases


def ref_batch_norm(x, w, b, dy, training, eps=EPS):
    channels = x.shape[1]
    mean, var = reference.batch_norm_stats(x) if training else (np.full(channels, RUNNING_MEAN),
                                                                  np.full(channels, RUNNING_VAR))
    rstd = 1 / np.sqrt(var + eps)
    y = reference.batch_norm_forward(x, mean, rstd, w, b)
    return (y, mean, rstd, *reference.batch_norm_backward(dy, x, mean, rstd, w, training))


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
        mean, var = np.full(channels, RUNNING_MEAN, x.dtype), np.full(channels, RUNNING_VAR, x.dtype)
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


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_stats_returns_biased_variance_in_float64(dtype):
    rng = np.random.default_rng(5)
    x = random((9, 5, 11), dtype, rng, 3.0)
    mean, var = batch_norm_stats(x)
    want_mean, want_var = reference.batch_norm_stats(x)
    assert_close(mean, want_mean, dtype)
    assert var.dtype == np.float64
    np.testing.assert_allclose(var, want_var, rtol=TOLERANCE[dtype])


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


@pytest.mark.parametrize("buffer_dtype", [np.float32, np.float64, np.float16])
def test_running_update_is_the_numpy_forms(buffer_dtype):
    """The compiled update gives the values of ``(1 - m) * running + m * batch.astype(running.dtype)``:
    a variance beyond float32's range becomes inf, NaN stays NaN, no warning (float16 buffers are sent
    to that numpy form itself: this checks they get there)."""
    rng = np.random.default_rng(9)
    for momentum, count in ((0.1, 2), (1 / 3, 30), (1.0, 2048), (0.0, 10**7)):
        running_mean = rng.standard_normal(40).astype(buffer_dtype)
        running_var = rng.uniform(0.1, 3.0, 40).astype(buffer_dtype)
        # batch_norm_stats' dtypes: the mean in x's (float32 for float16 buffers), the variance in float64
        mean = (rng.standard_normal(40) * 10).astype(np.float32 if buffer_dtype == np.float16 else buffer_dtype)
        var = rng.uniform(0.0, 5.0, 40)
        var[:3], mean[3] = (1e300, np.inf, np.nan), np.nan
        want_mean, want_var = running_mean.copy(), running_var.copy()
        with np.errstate(over="ignore", invalid="ignore"):
            for running, batch in ((want_mean, mean), (want_var, var * (count / (count - 1)))):
                running[...] = (1 - momentum) * running + momentum * batch.astype(running.dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            batch_norm_update_running(running_mean, running_var, mean, var, count, momentum)
        assert_same_values(running_mean, want_mean, nan_signs=False)
        assert_same_values(running_var, want_var, nan_signs=False)


def test_read_only_running_buffers_get_numpys_error():
    running_mean, running_var = np.zeros(4, np.float32), np.ones(4, np.float32)
    running_var.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        batch_norm_update_running(running_mean, running_var, np.zeros(4, np.float32), np.ones(4), 10, 0.1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_rstd_is_the_numpy_forms(dtype):
    """``1 / sqrt(var + eps)`` in var's dtype, zeros to inf and negatives to NaN, and an eps beyond the
    dtype's range to inf, without a warning."""
    rng = np.random.default_rng(10)
    with np.errstate(over="ignore"):  # float16 cannot hold the largest values
        var = (rng.uniform(0.0, 5.0, 300) * 10.0 ** rng.integers(-30, 30, 300)).astype(dtype)
    var[:5] = (0.0, -1.0, np.inf, np.nan, 1e-45)
    for eps in (1e-5, 0.0, 1e-12, 1e39):
        with np.errstate(all="ignore"):
            want = 1 / np.sqrt(var + dtype(eps))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = batch_norm_rstd(var, eps)
        assert got.dtype == want.dtype
        assert_same_values(got, want, nan_signs=False)


def test_batch_norm_running_update_and_rstd_match_reference():
    rng = np.random.default_rng(8)
    mean, var = random(5, np.float64, rng), rng.uniform(0.1, 3.0, 5)
    running_mean, running_var = random(5, np.float64, rng), rng.uniform(0.5, 2.0, 5)
    want_mean, want_var = reference.batch_norm_update_running(running_mean, running_var, mean, var, 10, 0.25)
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
        want = ref_batch_norm(batch, None, None, batch, True)[0]
        assert np.abs(naive_standardize(batch, (0, 2)) - want).max() > 3e-3
        mean, var = batch_norm_stats(batch)
        y = batch_norm_forward(batch, mean, batch_norm_rstd(var, EPS).astype(np.float32), None, None)
        assert np.abs(y - want).max() < 3e-3


def test_constant_inputs_give_bias():
    x = np.full((4, 8, 5), 3.0, np.float32)
    w, b = np.full(8, 2.0, np.float32), np.arange(8, dtype=np.float32)
    y = layer_norm_forward(x.reshape(4, 40), None, np.arange(40, dtype=np.float32), EPS)[0]
    np.testing.assert_array_equal(y, np.broadcast_to(np.arange(40, dtype=np.float32), (4, 40)))
    np.testing.assert_array_equal(group_norm_forward(x, 2, w, b, EPS)[0], np.broadcast_to(b[:, None], x.shape))
    for batch in (x, x.reshape(20, 8, 1)):  # the planes and the rows paths
        mean, var = batch_norm_stats(batch)
        assert np.all(var == 0)
        y = batch_norm_forward(batch, mean, batch_norm_rstd(var, EPS).astype(np.float32), w, b)
        np.testing.assert_array_equal(y, np.broadcast_to(b[:, None], batch.shape))


def scaled_rows(rng, dtype, scale, shape=(6, 700)):
    """Rows of ``shape`` around ``scale``: offset, spread and sign vary by row; one row spans both signs
    at the dtype's limit when ``scale`` is near it."""
    x = rng.standard_normal(shape) * rng.uniform(0.2, 1, (shape[0], 1)) + rng.uniform(-2, 2, (shape[0], 1))
    return (x * scale).astype(dtype)


HUGE_AND_TINY = [(np.float32, 1e15), (np.float32, 1e19), (np.float32, 1e25), (np.float32, 4e37),
                 (np.float32, 1e-15), (np.float32, 1e-21), (np.float32, 1e-30),
                 (np.float64, 1e160), (np.float64, 1e300), (np.float64, 1e-170)]
# Gradients are exact while rstd is a number of the dtype (LayerNorm, GroupNorm), or while rstd**2 is a
# normal one (RMSNorm, BatchNorm): std within about 1e±37 and 1e±18 in float32 (docs/normalization.md 6.3).
GRADIENT_RANGE = {np.float32: 1e36, np.float64: 1e290}
SQUARED_GRADIENT_RANGE = {np.float32: 1e17, np.float64: 1e150}
# BatchNorm's statistics hand the variance over in float64: float32 data of any scale, float64 with std
# within 1e±150.
BATCH_NORM_RANGE = {np.float32: np.inf, np.float64: 1e150}


@pytest.mark.parametrize("dtype, scale", HUGE_AND_TINY, ids=lambda v: str(v))
@pytest.mark.parametrize("eps", [EPS, 0.0])
def test_any_finite_input_normalizes_right(dtype, scale, eps):
    """Rows whose squares overflow (or, with eps ~ 0, underflow) the dtype: y within float rounding of
    the float64 reference for LayerNorm, RMSNorm, GroupNorm and BatchNorm, where statistics in the
    data's dtype give zeros or NaN. Gradients too, within their documented range.

    Normalization does not see the scale: with p a power of two, y(x; eps) = y(x / p; eps / p²), and
    rstd and dx scale by 1 / p. So the reference runs on x / p, where even float64 data is in range.
    """
    rng = np.random.default_rng(14)
    x = scaled_rows(rng, dtype, scale)
    dy = random(x.shape, dtype, rng)
    k = int(np.round(np.log2(scale)))
    p = np.ldexp(1.0, k)
    with np.errstate(over="ignore"):  # eps / p² may overflow to inf: y is then the bias, as it should
        xs, eps_s = x / p, np.ldexp(eps, -2 * k)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    limit = SQUARED_GRADIENT_RANGE[dtype]
    if scale > limit * 10 or (eps == 0.0 and scale < 0.1 / limit):  # the test has teeth: the dtype's own
        with np.errstate(all="ignore"):                                # statistics fail here
            in_dtype = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + dtype(eps))
        assert not np.allclose(in_dtype, ref_layer_norm(xs, None, None, dy, eps_s)[0], **tol)
    # (where eps / p² overflows, the scaled reference cannot hold the gradient)
    backward_too = 1 / GRADIENT_RANGE[dtype] < scale < GRADIENT_RANGE[dtype] and np.isfinite(eps_s)
    squared_backward_too = 1 / limit < scale < limit
    w = random(x.shape[1], dtype, rng, 1.0, 0.5)

    def assert_grad_close(dx, want):
        np.testing.assert_allclose(dx * p, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())

    y, mean, rstd = layer_norm_forward(x, w, None, eps)
    want = ref_layer_norm(xs, w, None, dy, eps_s)
    np.testing.assert_allclose(y, want[0], **tol)
    if np.isfinite(eps_s):  # else eps / p² has overflowed: the scaled reference cannot hold rstd
        np.testing.assert_allclose(rstd * p, want[2], rtol=tol["rtol"])
    if backward_too:
        assert_grad_close(layer_norm_backward(dy, x, mean, rstd, w)[0], want[3])

    y, rstd = rms_norm_forward(x, w, eps)
    want = ref_rms_norm(xs, w, dy, eps_s)
    np.testing.assert_allclose(y, want[0], **tol)
    if squared_backward_too:
        assert_grad_close(rms_norm_backward(dy, x, rstd, w)[0], want[2])

    x3, dy3 = x.reshape(3, 4, -1), dy.reshape(3, 4, -1)
    y, mean, rstd = group_norm_forward(x3, 2, None, None, eps)
    want = ref_group_norm(xs.reshape(x3.shape), 2, None, None, dy3, eps_s)
    np.testing.assert_allclose(y, want[0], **tol)
    if backward_too:
        assert_grad_close(group_norm_backward(dy3, x3, mean, rstd, 2, None)[0], want[3])

    if not 1 / BATCH_NORM_RANGE[dtype] < scale < BATCH_NORM_RANGE[dtype]:  # var is handed over in float64,
        return                                                              # which cannot hold it
    for shape in (x3.shape, (x.size // 6, 6, 1)):  # the planes and the rows paths
        mean, var = batch_norm_stats(x.reshape(shape))
        rstd = batch_norm_rstd(var, eps).astype(dtype)
        want = ref_batch_norm(xs.reshape(shape), None, None, dy.reshape(shape), True, eps_s)
        np.testing.assert_allclose(batch_norm_forward(x.reshape(shape), mean, rstd, None, None), want[0], **tol)
        if squared_backward_too:
            assert_grad_close(batch_norm_backward(dy.reshape(shape), x.reshape(shape), mean, rstd, None, True)[0],
                              want[3])


def test_eps_zero_gives_ieee_results_not_errors():
    """eps = 0 on constant or zero rows: NaN or inf as IEEE arithmetic (and PyTorch) give, never a
    ZeroDivisionError from inside a kernel."""
    ones, zeros = np.ones((2, 4), np.float32), np.zeros((2, 4), np.float32)
    assert np.isnan(layer_norm_forward(ones, None, None, 0.0)[0]).all()
    assert np.isnan(rms_norm_forward(zeros, None, 0.0)[0]).all()
    assert np.isnan(group_norm_forward(ones.reshape(2, 2, 2), 1, None, None, 0.0)[0]).all()
    mean, var = batch_norm_stats(ones.reshape(2, 4, 1))
    assert np.isinf(batch_norm_rstd(var, 0.0)).all()
    y, mean, rstd = layer_norm_forward(ones, None, None, 0.0)
    assert np.isnan(layer_norm_backward(ones, ones, mean, rstd, None)[0]).all()


@pytest.mark.parametrize("shape", [(3, 2, 4), (12, 2, 1)], ids=["planes", "rows"])
def test_an_inf_gives_inf_mean_and_nan_variance_as_torch(shape):
    """A channel holding +inf has mean inf and variance NaN (PyTorch's running_mean becomes inf);
    +inf and -inf together give NaN; the other channels are untouched."""
    rng = np.random.default_rng(15)
    x = random(shape, np.float32, rng)
    clean = batch_norm_stats(x)
    x[1, 0, 0] = np.inf
    mean, var = batch_norm_stats(x)
    assert mean[0] == np.inf and np.isnan(var[0])
    np.testing.assert_array_equal((mean[1], var[1]), (clean[0][1], clean[1][1]))
    x[2, 0, 0] = -np.inf
    assert np.isnan(batch_norm_stats(x)[0][0])


# ---------------------------------------------------------------- determinism and compilation
def test_parallel_results_are_bit_identical_across_calls():
    rng = np.random.default_rng(11)
    x, dy = random((512, 256), np.float32, rng), random((512, 256), np.float32, rng)
    assert x.size >= _config.PARALLEL_THRESHOLD
    w = random(256, np.float32, rng)
    x3, dy3 = x.reshape(64, 32, 64), dy.reshape(64, 32, 64)

    def run_all():
        y, mean, rstd = layer_norm_forward(x, w, None, EPS)
        bn_mean, bn_var = batch_norm_stats(x3)
        rms_rstd = rms_norm_forward(x, w, EPS)[1]
        bn_rstd = batch_norm_rstd(bn_var, EPS).astype(np.float32)
        return (y, *layer_norm_backward(dy, x, mean, rstd, w), *rms_norm_backward(dy, x, rms_rstd, w),
                bn_mean, bn_var, *batch_norm_backward(dy3, x3, bn_mean, bn_rstd, w[:32], True),
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
            rstd = batch_norm_rstd(var, EPS).astype(dtype)
            y = batch_norm_forward(x3, mean, rstd, None, None)
            batch_norm_backward(y, x3, mean, rstd, None, True)
            batch_norm_training_forward(x3, None, None, EPS, np.zeros(2, dtype), np.ones(2, dtype))


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
     r"mean must have running_mean's shape \(3,\), got \(2,\)"),
    (lambda: batch_norm_update_running(np.zeros(3, np.int64), np.ones(3), np.zeros(3), np.ones(3), 4, 0.1),
     TypeError, "running_mean must be a floating-point array, got dtype int64"),
    (lambda: batch_norm_update_running(np.zeros(3), np.ones(3), np.zeros(3), np.ones(3), 4, 5.0), ValueError,
     r"momentum must be a number in \[0, 1\].*got 5.0"),
    (lambda: batch_norm_rstd(np.ones(3), float("nan")), ValueError, "eps must be a non-negative float, got nan"),
    (lambda: group_norm_forward(np.ones((2, 6, 4), np.float32), 0, None, None, EPS), ValueError,
     "num_groups must be a positive integer dividing C=6, got 0"),
    (lambda: group_norm_forward(np.ones((2, 6, 4), np.float32), True, None, None, EPS), ValueError,
     "num_groups must be a positive integer dividing C=6, got True"),
    (lambda: rms_norm_forward(np.ones((2, 3), np.float32), None, "1e-5"), TypeError, "eps must be a number"),
    (lambda: batch_norm_rstd([1.0], EPS), TypeError, "var must be a float numpy.ndarray, got list"),
    (lambda: batch_norm_update_running(np.zeros((3, 1)), np.ones(3), np.zeros(3), np.ones(3), 4, 0.1), ValueError,
     r"running_mean must be 1-D \(C,\), got shape \(3, 1\)"),
    (lambda: batch_norm_update_running(np.zeros(3), [1.0] * 3, np.zeros(3), np.ones(3), 4, 0.1), TypeError,
     "running_var must be an array, got list"),
])
def test_bad_input_raises_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()
