"""softmax/log_softmax kernels against float64 numpy references written here, and against PyTorch.

Shapes reach both the serial path and the parallel path (the parallel threshold is lowered for these
tests in conftest.py). Gradients use a random upstream gradient: ``out.sum()`` is blind here (the softmax gradient of a constant is 0).
"""
import numba
import numpy as np
import pytest

from tinynorm.kernels.cpu import softmax as softmax_module
from tinynorm.kernels.cpu import _config
from tinynorm.kernels.cpu.softmax import (
    log_softmax_backward,
    log_softmax_forward,
    softmax_backward,
    softmax_forward,
)

DTYPES = [np.float32, np.float64]
TOLERANCE = {np.float32: 2e-6, np.float64: 1e-13}
SHAPES = [(7,), (3, 5), (2, 3, 17), (4, 1), (300, 130)]  # the last one takes the parallel path


def assert_close(actual, expected, dtype):
    """Element-wise closeness, scaled by the largest expected magnitude (gradients can be ~0)."""
    assert actual.dtype == dtype and actual.shape == expected.shape
    tol = TOLERANCE[dtype]
    scale = max(1.0, np.abs(expected[np.isfinite(expected)]).max(initial=0))
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol * scale)


# ---------------------------------------------------------------- float64 references
def ref_log_softmax(x):
    x = x.astype(np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def ref_softmax_grad(x, g):
    """J^T g with the Jacobian written out: ds_i/dx_j = s_i (delta_ij - s_j)."""
    s = np.exp(ref_log_softmax(x))
    jacobian = s[..., :, None] * (np.eye(x.shape[-1]) - s[..., None, :])
    return np.einsum("...ij,...i->...j", jacobian, g.astype(np.float64))


def ref_log_softmax_grad(x, g):
    """J^T g with d(log s_i)/dx_j = delta_ij - s_j."""
    s = np.exp(ref_log_softmax(x))
    jacobian = np.eye(x.shape[-1]) - s[..., None, :]
    return np.einsum("...ij,...i->...j", jacobian, g.astype(np.float64))


def test_reference_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((2, 5)), rng.standard_normal((2, 5))
    for forward, grad in ((lambda v: np.exp(ref_log_softmax(v)), ref_softmax_grad), (ref_log_softmax, ref_log_softmax_grad)):
        numeric = np.zeros_like(x)
        for index in np.ndindex(x.shape):
            step = np.zeros_like(x)
            step[index] = 1e-6
            numeric[index] = ((forward(x + step) - forward(x - step)) * g).sum() / 2e-6
        np.testing.assert_allclose(grad(x, g), numeric, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------- correctness
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernels_match_reference(shape, dtype):
    rng = np.random.default_rng(1)
    x, g = (3 * rng.standard_normal(shape)).astype(dtype), rng.standard_normal(shape).astype(dtype)
    s, log_s = softmax_forward(x), log_softmax_forward(x)
    assert_close(s, np.exp(ref_log_softmax(x)), dtype)
    assert_close(log_s, ref_log_softmax(x), dtype)
    assert_close(softmax_backward(g, s), ref_softmax_grad(x, g), dtype)
    assert_close(log_softmax_backward(g, log_s), ref_log_softmax_grad(x, g), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_kernels_match_torch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x, g = rng.standard_normal((64, 4, 33)).astype(dtype), rng.standard_normal((64, 4, 33)).astype(dtype)
    for forward, backward, torch_fn in ((softmax_forward, softmax_backward, torch.softmax),
                                        (log_softmax_forward, log_softmax_backward, torch.log_softmax)):
        xt = torch.tensor(x, requires_grad=True)
        yt = torch_fn(xt, -1)
        yt.backward(torch.tensor(g))
        y = forward(x)
        assert_close(y, yt.detach().numpy(), dtype)
        assert_close(backward(g, y), xt.grad.numpy(), dtype)


def test_large_logits_do_not_overflow():
    rng = np.random.default_rng(3)
    x = (1e4 + 50 * rng.standard_normal((8, 40))).astype(np.float32)  # exp(x) alone would be inf
    assert_close(softmax_forward(x), np.exp(ref_log_softmax(x)), np.float32)
    # The shift by the max is exact and log(sum) small, so even here the error stays at float32 rounding.
    assert_close(log_softmax_forward(x), ref_log_softmax(x), np.float32)
    huge = np.array([[3e38, 0.0, -3e38]], np.float32)
    np.testing.assert_array_equal(softmax_forward(huge), [[1, 0, 0]])


def test_float32_probabilities_under_the_smallest_normal_are_subnormal():
    x = np.array([[0.0, -90.0, -100.0, -95.0] + [-1.0] * 30], np.float32)
    exact = np.exp(ref_log_softmax(x.astype(np.float64))).astype(np.float32)
    assert (exact[0, 1:4] > 0).all() and (exact[0, 1:4] < np.finfo(np.float32).tiny).all()
    np.testing.assert_allclose(softmax_forward(x), exact, rtol=1e-6, atol=2.0 ** -148)


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_mask_entries_get_zero_probability_and_gradient(dtype):
    rng = np.random.default_rng(4)
    t = 6
    x = rng.standard_normal((3, t, t)).astype(dtype) + np.triu(np.full((t, t), -np.inf), 1).astype(dtype)
    masked = np.isneginf(x)
    g = rng.standard_normal(x.shape).astype(dtype)
    s, log_s = softmax_forward(x), log_softmax_forward(x)
    assert np.all(s[masked] == 0) and np.all(np.isneginf(log_s[masked]))
    np.testing.assert_allclose(s.sum(axis=-1), 1, rtol=TOLERANCE[dtype])
    assert_close(s, np.exp(ref_log_softmax(x)), dtype)
    assert_close(log_s, ref_log_softmax(x), dtype)
    ds = softmax_backward(g, s)
    assert np.all(ds[masked] == 0)
    assert_close(ds, ref_softmax_grad(x, g), dtype)
    # d log_softmax: the masked entries pass g straight through (their probability is 0), as in PyTorch.
    assert_close(log_softmax_backward(g, log_s), ref_log_softmax_grad(x, g), dtype)


def causal_bias(length, keys):
    """0 where key j may be attended by query i (j <= i), -inf elsewhere: PyTorch's is_causal."""
    return np.where(np.tril(np.ones((length, keys), bool)), 0.0, -np.inf)


# (batch..., L, S): square, more keys than queries, more queries than keys, one row; the last is parallel
CAUSAL_SHAPES = [(2, 3, 7, 7), (5, 4, 9), (3, 9, 4), (1, 1, 1, 5), (16, 40, 52)]


@pytest.mark.parametrize("shape", CAUSAL_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.125, 1.0, -0.7])
def test_scaled_causal_softmax_matches_reference(shape, dtype, scale):
    rng = np.random.default_rng(8)
    x, g = (3 * rng.standard_normal(shape)).astype(dtype), rng.standard_normal(shape).astype(dtype)
    logits = scale * x.astype(np.float64) + causal_bias(*shape[-2:])
    s = softmax_forward(x, scale, causal=True)
    assert_close(s, np.exp(ref_log_softmax(logits)), dtype)
    ds = softmax_backward(g, s, scale, causal=True)
    assert np.all(ds[..., np.isinf(causal_bias(*shape[-2:]))] == 0)
    assert_close(ds, scale * ref_softmax_grad(logits, g), dtype)  # d(scale * x)/dx = scale
    assert_close(softmax_forward(x, scale), np.exp(ref_log_softmax(scale * x.astype(np.float64))), dtype)


def test_causal_mask_ignores_what_it_masks():
    x = np.random.default_rng(9).standard_normal((2, 4, 4)).astype(np.float32)
    spoiled = x.copy()
    spoiled[:, 0, 1:] = [np.nan, np.inf, -np.inf]  # masked for query 0
    np.testing.assert_array_equal(softmax_forward(spoiled, causal=True), softmax_forward(x, causal=True))
    g = np.full_like(x, np.inf)
    assert np.all(softmax_backward(g, softmax_forward(x, causal=True), causal=True)[:, 0, 1:] == 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_that_are_not_all_finite_follow_torch(dtype):
    torch = pytest.importorskip("torch")
    x = np.array([[1.0, np.nan, 0.0], [np.inf, 1.0, 0.0], [-np.inf, 1.0, 2.0], [np.inf, np.inf, 0.0]], dtype)
    for forward, torch_fn in ((softmax_forward, torch.softmax), (log_softmax_forward, torch.log_softmax)):
        np.testing.assert_allclose(forward(x), torch_fn(torch.tensor(x), -1).numpy(), rtol=1e-6, equal_nan=True)


def test_fully_masked_row_gives_nan_like_torch():
    torch = pytest.importorskip("torch")
    x = np.array([[-np.inf, -np.inf], [0.0, 1.0]], np.float32)
    for forward, torch_fn in ((softmax_forward, torch.softmax), (log_softmax_forward, torch.log_softmax)):
        y, expected = forward(x), torch_fn(torch.tensor(x), -1).numpy()
        assert np.all(np.isnan(y[0])) and np.all(np.isnan(expected[0]))
        assert_close(y[1], expected[1], np.float32)


def test_zero_dim_and_empty_inputs():
    assert softmax_forward(np.array(5.0, np.float32)) == 1 and log_softmax_forward(np.array(5.0)) == 0
    for shape in ((0, 4), (3, 0)):
        x = np.zeros(shape, np.float32)
        assert softmax_forward(x).shape == shape and log_softmax_backward(x, x).shape == shape


def test_non_contiguous_input_matches_contiguous():
    x = np.random.default_rng(5).standard_normal((20, 30))
    view = x[::2, ::3]
    np.testing.assert_array_equal(softmax_forward(view), softmax_forward(np.ascontiguousarray(view)))


# ---------------------------------------------------------------- determinism and compilation
def assert_same_rows(actual, expected):
    """Bitwise for float32; float64 within a rounding: a driver compiled afresh and one loaded from
    Numba's cache (another process may have written it) can add a row up a rounding apart."""
    if actual.dtype == np.float32:
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("dtype", DTYPES)
def test_parallel_path_equals_serial_rows(dtype):
    rng = np.random.default_rng(6)
    x, g = rng.standard_normal((512, 100)).astype(dtype), rng.standard_normal((512, 100)).astype(dtype)
    assert x.size >= _config.PARALLEL_THRESHOLD > x[:4].size
    for forward, backward in ((softmax_forward, softmax_backward), (log_softmax_forward, log_softmax_backward)):
        y = forward(x)
        dx = backward(g, y)
        np.testing.assert_array_equal(y, forward(x))
        np.testing.assert_array_equal(dx, backward(g, y))
        for start in range(0, 512, 128):  # the same rows through the serial path
            assert_same_rows(forward(x[start:start + 4]), y[start:start + 4])
            assert_same_rows(backward(g[start:start + 4], y[start:start + 4]), dx[start:start + 4])


def signature_counts():
    """Compiled signatures of the kernels softmax.py defines (a helper it imports is shared with other
    kernels, whose arrays add their own)."""
    return {name: len(obj.signatures) for name, obj in vars(softmax_module).items()
            if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.py_func.__module__ == softmax_module.__name__}


def call_every_kernel(dtype, noncontiguous, rows):
    x = np.random.default_rng(7).standard_normal((rows, 200)).astype(dtype)
    x = x[:, ::2] if noncontiguous else np.ascontiguousarray(x[:, :100])
    for forward, backward in ((softmax_forward, softmax_backward), (log_softmax_forward, log_softmax_backward)):
        backward(x, forward(x))


def test_no_recompilation_after_first_call_per_dtype():
    for dtype in DTYPES:
        for rows in (2, 400):  # serial and parallel paths
            call_every_kernel(dtype, False, rows)
    first = signature_counts()
    for dtype in DTYPES:
        for rows in (3, 500):
            call_every_kernel(dtype, True, rows)
    assert signature_counts() == first
    assert all(count <= 2 for count in first.values()), first


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("call, error, message", [
    (lambda: softmax_forward([1.0, 2.0]), TypeError, "x must be a numpy.ndarray, got list"),
    (lambda: log_softmax_forward(np.arange(3)), TypeError, "x must have dtype float32 or float64, got int64"),
    (lambda: softmax_backward(np.ones((2, 3)), np.ones((3, 2))), ValueError, r"grad must have shape \(3, 2\)"),
    (lambda: log_softmax_backward(np.ones(3, np.float32), np.ones(3)), TypeError, "grad must have dtype float64"),
    (lambda: softmax_forward(np.ones(3), causal=True), ValueError, r"causal mask needs at least 2 dims .* \(3,\)"),
])
def test_bad_input_raises_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()
