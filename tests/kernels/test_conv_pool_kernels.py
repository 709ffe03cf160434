"""Conv and pooling kernels against float64 numpy references written here, and against PyTorch."""
import numba
import numpy as np
import pytest

from tinynorm.kernels.cpu import conv, pool
from tinynorm.kernels.cpu.conv import col2im, conv2d_backward, conv2d_forward, conv2d_output_size, im2col
from tinynorm.kernels.cpu.pool import (
    avg_pool2d_backward,
    avg_pool2d_forward,
    max_pool2d_backward,
    max_pool2d_forward,
)

# (N, C, O, H, W, kernel_size, stride, padding); the last case is big enough for the parallel path.
CONV_CASES = [
    (2, 3, 4, 7, 7, 3, 1, 1),
    (2, 3, 5, 9, 8, (3, 2), (2, 1), (1, 2)),
    (1, 2, 3, 6, 6, 5, 2, 0),
    (3, 4, 2, 5, 7, (1, 3), 1, (0, 1)),
    (2, 2, 3, 4, 4, 3, 3, 2),
    (4, 16, 8, 8, 8, 3, 1, 1),
]
# (shape, kernel_size, stride, padding); stride None means "same as kernel_size".
POOL_CASES = [
    ((2, 3, 6, 6), 2, None, 0),
    ((2, 3, 7, 9), (3, 2), (2, 1), (1, 1)),
    ((1, 2, 5, 5), 3, 2, 1),
    ((2, 2, 8, 7), 3, 1, 0),
    ((4, 16, 28, 28), 2, 2, 0),
]
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12}


def pair(value):
    return value if isinstance(value, tuple) else (value, value)


def assert_close(actual, expected, dtype):
    """Compare with an error bound relative to the largest magnitude of the expected values."""
    assert actual.shape == expected.shape
    scale = max(np.abs(expected).max(), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE[dtype] * scale)


# ---------- float64 references ----------

def ref_windows(x, kernel_size, stride, padding, fill=0.0):
    """Padded input and, for each kernel offset (i, j), the strided view of the values it meets."""
    (kh, kw), (sh, sw), (ph, pw) = pair(kernel_size), pair(stride), pair(padding)
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    out_h = (padded.shape[2] - kh) // sh + 1
    out_w = (padded.shape[3] - kw) // sw + 1
    views = {
        (i, j): (slice(i, i + sh * (out_h - 1) + 1, sh), slice(j, j + sw * (out_w - 1) + 1, sw))
        for i in range(kh) for j in range(kw)
    }
    return padded, views


def ref_conv2d(x, weight, bias, stride, padding):
    padded, views = ref_windows(x, weight.shape[2:], stride, padding)
    y = sum(np.einsum("nchw,oc->nohw", padded[:, :, hs, ws], weight[:, :, i, j]) for (i, j), (hs, ws) in views.items())
    return y + bias[None, :, None, None]


def ref_conv2d_grads(x, weight, dy, stride, padding):
    padded, views = ref_windows(x, weight.shape[2:], stride, padding)
    dpadded = np.zeros_like(padded)
    dweight = np.zeros(weight.shape)
    for (i, j), (hs, ws) in views.items():
        dpadded[:, :, hs, ws] += np.einsum("nohw,oc->nchw", dy, weight[:, :, i, j])
        dweight[:, :, i, j] = np.einsum("nohw,nchw->oc", dy, padded[:, :, hs, ws])
    (ph, pw) = pair(padding)
    dx = dpadded[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]]
    return dx, dweight, dy.sum(axis=(0, 2, 3))


def ref_pool(x, kernel_size, stride, padding, mode):
    """Forward and a function mapping dy to dx, looping over every window explicitly."""
    (kh, kw), (sh, sw), (ph, pw) = pair(kernel_size), pair(stride or kernel_size), pair(padding)
    fill = -np.inf if mode == "max" else 0.0
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    n, c = x.shape[:2]
    out_h, out_w = (padded.shape[2] - kh) // sh + 1, (padded.shape[3] - kw) // sw + 1
    y = np.empty((n, c, out_h, out_w))
    chosen = {}
    for a in range(n):
        for b in range(c):
            for oh in range(out_h):
                for ow in range(out_w):
                    window = padded[a, b, oh * sh:oh * sh + kh, ow * sw:ow * sw + kw]
                    if mode == "max":
                        i, j = np.unravel_index(np.argmax(window), window.shape)  # first maximum
                        y[a, b, oh, ow] = window[i, j]
                        chosen[a, b, oh, ow] = (oh * sh + i, ow * sw + j)
                    else:
                        y[a, b, oh, ow] = window.sum() / (kh * kw)

    def backward(dy):
        dpadded = np.zeros_like(padded)
        for (a, b, oh, ow), value in np.ndenumerate(dy):
            if mode == "max":
                dpadded[(a, b) + chosen[a, b, oh, ow]] += value
            else:
                dpadded[a, b, oh * sh:oh * sh + kh, ow * sw:ow * sw + kw] += value / (kh * kw)
        return dpadded[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]]

    return y, backward


# ---------- convolution ----------

@pytest.mark.parametrize("case", CONV_CASES)
def test_im2col_matches_layout_definition(case):
    n, c, _, h, w, kernel_size, stride, padding = case
    x = np.random.default_rng(0).standard_normal((n, c, h, w))
    (kh, kw) = pair(kernel_size)
    padded, views = ref_windows(x, kernel_size, stride, padding)
    cols = im2col(x, kernel_size, stride, padding)
    for (i, j), (hs, ws) in views.items():
        rows = [(ch * kh + i) * kw + j for ch in range(c)]
        np.testing.assert_array_equal(cols[:, rows, :], padded[:, :, hs, ws].reshape(n, c, -1))


@pytest.mark.parametrize("case", CONV_CASES)
def test_col2im_is_adjoint_of_im2col(case):
    n, c, _, h, w, kernel_size, stride, padding = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, c, h, w))
    cols = im2col(x, kernel_size, stride, padding)
    other = rng.standard_normal(cols.shape)
    back = col2im(other, x.shape, kernel_size, stride, padding)
    np.testing.assert_allclose(np.vdot(cols, other), np.vdot(x, back), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_forward_backward_match_reference(case, dtype):
    n, c, o, h, w, kernel_size, stride, padding = case
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((o, c, *pair(kernel_size))).astype(dtype)
    bias = rng.standard_normal(o).astype(dtype)
    y, saved = conv2d_forward(x, weight, bias, stride, padding)
    assert y.dtype == dtype
    assert_close(y, ref_conv2d(x, weight, bias, stride, padding), dtype)

    dy = rng.standard_normal(y.shape).astype(dtype)
    dx, dweight, dbias = conv2d_backward(dy, saved, x.shape, weight, stride, padding)
    ref_dx, ref_dweight, ref_dbias = ref_conv2d_grads(x, weight, dy, stride, padding)
    assert_close(dx, ref_dx, dtype)
    assert_close(dweight, ref_dweight, dtype)
    assert_close(dbias, ref_dbias, dtype)


def test_conv2d_without_bias_and_input_grad():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 6))
    weight = rng.standard_normal((4, 3, 3, 3))
    y, saved = conv2d_forward(x, weight, None, 1, 1)
    assert_close(y, ref_conv2d(x, weight, np.zeros(4), 1, 1), np.float64)
    dy = rng.standard_normal(y.shape)
    dx, dweight, dbias = conv2d_backward(dy, saved, x.shape, weight, 1, 1, needs_input_grad=False,
                                         needs_bias_grad=False)
    assert dx is None and dbias is None
    assert_close(dweight, ref_conv2d_grads(x, weight, dy, 1, 1)[1], np.float64)


def test_conv2d_accepts_non_contiguous_input():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 5, 3, 2)).transpose(3, 2, 0, 1)  # (2, 3, 5, 5), not C-contiguous
    weight = rng.standard_normal((2, 3, 3, 3))
    y, _ = conv2d_forward(x, weight, None, 2, 1)
    assert_close(y, ref_conv2d(x, weight, np.zeros(2), 2, 1), np.float64)


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_matches_torch(case):
    torch = pytest.importorskip("torch")
    n, c, o, h, w, kernel_size, stride, padding = case
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weight = rng.standard_normal((o, c, *pair(kernel_size))).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    y, saved = conv2d_forward(x, weight, bias, stride, padding)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx, dweight, dbias = conv2d_backward(dy, saved, x.shape, weight, stride, padding)

    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, weight, bias))
    ty = torch.nn.functional.conv2d(tx, tw, tb, stride, padding)
    ty.backward(torch.from_numpy(dy))
    for ours, theirs in [(y, ty), (dx, tx.grad), (dweight, tw.grad), (dbias, tb.grad)]:
        assert_close(ours, theirs.detach().numpy(), np.float32)


# (N, C, O, H, W, kernel, stride, (top, bottom, left, right), dilation, groups): the options beyond the
# classic ones. Each runs one sample per chunk (CHUNK_ELEMENTS made small) and, with two threads, shares
# its samples out between them however small it is, so the chunk offsets, the threads' sample ranges and
# the dweight sums over chunks and threads are checked.
GENERAL_CASES = [
    (2, 4, 6, 9, 8, (3, 2), (2, 1), (1, 0, 2, 1), (2, 1), 2),
    (3, 6, 6, 7, 7, 3, 1, (1, 1, 1, 1), (1, 3), 6),
    (2, 3, 4, 8, 9, 4, (1, 2), (1, 2, 1, 2), 1, 1),
    (3, 6, 4, 5, 5, 1, 1, (0, 0, 0, 0), 1, 2),
    (40, 8, 8, 12, 12, 3, 1, (1, 1, 1, 1), 2, 2),
]


def ref_general_conv2d(x, weight, bias, stride, pads, dilation, groups):
    """Float64 forward and gradients by explicit windows, one group at a time."""
    (sh, sw), (dh, dw) = pair(stride), pair(dilation)
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), pads[:2], pads[2:]))
    kh, kw = weight.shape[2:]
    out_h = (padded.shape[2] - dh * (kh - 1) - 1) // sh + 1
    out_w = (padded.shape[3] - dw * (kw - 1) - 1) // sw + 1
    cg, og = x.shape[1] // groups, weight.shape[0] // groups
    views = {(i, j): (slice(i * dh, i * dh + sh * (out_h - 1) + 1, sh), slice(j * dw, j * dw + sw * (out_w - 1) + 1, sw))
             for i in range(kh) for j in range(kw)}

    def forward():
        y = np.zeros((x.shape[0], weight.shape[0], out_h, out_w))
        for g in range(groups):
            for (i, j), (hs, ws) in views.items():
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", padded[:, g * cg:(g + 1) * cg, hs, ws],
                                                       weight[g * og:(g + 1) * og, :, i, j])
        return y + bias[None, :, None, None]

    def backward(dy):
        dpadded, dweight = np.zeros_like(padded), np.zeros(weight.shape)
        for g in range(groups):
            block = dy[:, g * og:(g + 1) * og]
            for (i, j), (hs, ws) in views.items():
                dpadded[:, g * cg:(g + 1) * cg, hs, ws] += np.einsum("nohw,oc->nchw", block, weight[g * og:(g + 1) * og, :, i, j])
                dweight[g * og:(g + 1) * og, :, i, j] = np.einsum("nohw,nchw->oc", block, padded[:, g * cg:(g + 1) * cg, hs, ws])
        dx = dpadded[:, :, pads[0]:pads[0] + x.shape[2], pads[2]:pads[2] + x.shape[3]]
        return dx, dweight, dy.sum(axis=(0, 2, 3))

    return forward(), backward


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", GENERAL_CASES)
def test_dilated_grouped_asymmetric_conv2d_matches_reference(case, dtype, threads, monkeypatch):
    monkeypatch.setattr(conv, "CHUNK_ELEMENTS", 512)  # one sample per chunk
    monkeypatch.setattr(conv, "MIN_MULTIPLY_ADDS_PER_THREAD", 1)
    monkeypatch.setattr(numba, "get_num_threads", lambda: threads)
    n, c, o, h, w, kernel_size, stride, pads, dilation, groups = case
    rng = np.random.default_rng(9)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    weight = rng.standard_normal((o, c // groups, *pair(kernel_size))).astype(dtype)
    bias = rng.standard_normal(o).astype(dtype)
    y, saved = conv2d_forward(x, weight, bias, stride, pads, dilation, groups)
    ref_y, ref_backward = ref_general_conv2d(x, weight, bias, stride, pads, dilation, groups)
    assert_close(y, ref_y, dtype)
    dy = rng.standard_normal(y.shape).astype(dtype)
    for ours, theirs in zip(conv2d_backward(dy, saved, x.shape, weight, stride, pads, dilation, groups),
                            ref_backward(dy)):
        assert_close(ours, theirs, dtype)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_modes_match_torch(mode):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 4, 6, 7))
    weight = rng.standard_normal((6, 2, 3, 2))
    pads = (2, 1, 1, 0)  # (top, bottom, left, right)
    y, saved = conv2d_forward(x, weight, None, (2, 1), pads, (1, 2), 2, mode)
    dy = rng.standard_normal(y.shape)
    dx, dweight, _ = conv2d_backward(dy, saved, x.shape, weight, (2, 1), pads, (1, 2), 2, mode)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(weight, requires_grad=True)
    padded = torch.nn.functional.pad(tx, (pads[2], pads[3], pads[0], pads[1]), mode=mode)
    ty = torch.nn.functional.conv2d(padded, tw, None, (2, 1), 0, (1, 2), 2)
    ty.backward(torch.from_numpy(dy))
    for ours, theirs in [(y, ty), (dx, tx.grad), (dweight, tw.grad)]:
        assert_close(ours, theirs.detach().numpy(), np.float64)


def test_padding_mode_errors():
    x, weight = np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 3, 3))
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        conv2d_forward(x, weight, None, 1, 1, padding_mode="mirror")
    with pytest.raises(ValueError, match=r"padding_mode='reflect': padding \(3, 3\) of dimension 2 must be less than"):
        conv2d_forward(x, weight, None, 1, 3, padding_mode="reflect")


def test_conv2d_output_size():
    assert conv2d_output_size(28, 28, 3, 1, 1) == (28, 28)
    assert conv2d_output_size(9, 8, (3, 2), (2, 1), (1, 2)) == (5, 11)
    assert conv2d_output_size(4, 4, 3, 3, 2) == (2, 2)


# ---------- pooling ----------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool_matches_reference(case, dtype):
    shape, kernel_size, stride, padding = case
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(dtype)
    y, argmax = max_pool2d_forward(x, kernel_size, stride, padding)
    ref_y, ref_backward = ref_pool(x, kernel_size, stride, padding, "max")
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, ref_y.astype(dtype))
    dy = rng.standard_normal(y.shape).astype(dtype)
    assert_close(max_pool2d_backward(dy, argmax, x.shape), ref_backward(dy), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", POOL_CASES)
def test_avg_pool_matches_reference(case, dtype):
    shape, kernel_size, stride, padding = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(dtype)
    y = avg_pool2d_forward(x, kernel_size, stride, padding)
    ref_y, ref_backward = ref_pool(x, kernel_size, stride, padding, "avg")
    assert y.dtype == dtype
    assert_close(y, ref_y, dtype)
    dy = rng.standard_normal(y.shape).astype(dtype)
    assert_close(avg_pool2d_backward(dy, x.shape, kernel_size, stride, padding), ref_backward(dy), dtype)


def test_max_pool_ties_send_gradient_to_first_maximum():
    x = np.ones((1, 1, 3, 3), dtype=np.float32)
    y, argmax = max_pool2d_forward(x, 2, 1, 0)
    np.testing.assert_array_equal(argmax[0, 0], [[0, 1], [3, 4]])  # each window's top-left element
    dx = max_pool2d_backward(np.ones_like(y), argmax, x.shape)
    np.testing.assert_array_equal(dx[0, 0], [[1, 1, 0], [1, 1, 0], [0, 0, 0]])


def test_max_pool_propagates_nan():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 0, 1] = np.nan
    y, _ = max_pool2d_forward(x, 2)
    assert np.isnan(y[0, 0, 0, 0])
    assert np.isfinite(y[0, 0]).sum() == 3


@pytest.mark.parametrize("shape", [(3, 2, 6, 6), (2, 3, 9, 7), (1, 2, 3, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_2x2_path_matches_general_path(shape, dtype):
    """The written-out 2x2 window gives the general loop's values and indices, bit for bit, on ties,
    NaNs (the last one wins the index), infinities and odd sizes (the last row or column left out)."""
    rng = np.random.default_rng(9)
    x = rng.integers(-2, 3, shape).astype(dtype)  # many ties
    x[rng.random(shape) < 0.1] = np.nan
    x[rng.random(shape) < 0.1] = -np.inf
    x[rng.random(shape) < 0.05] = np.inf
    x[0, 0, :2, :2] = -np.inf  # a window of -inf only: its first element
    x[-1, -1, :2, :2] = np.nan  # a window of NaNs only
    out_shape = shape[:2] + (shape[2] // 2, shape[3] // 2)
    y, argmax = np.empty(out_shape, dtype), np.empty(out_shape, np.int64)
    general_y, general_argmax = np.empty_like(y), np.empty_like(argmax)
    for n in range(shape[0]):
        for c in range(shape[1]):
            pool._max_pool_plane_2x2(x[n, c], y[n, c], argmax[n, c])
            pool._max_pool_plane(x[n, c], general_y[n, c], general_argmax[n, c], 2, 2, 2, 2, 0, 0)
    np.testing.assert_array_equal(y, general_y)
    np.testing.assert_array_equal(argmax, general_argmax)
    assert argmax[0, 0, 0, 0] == 0 and argmax[-1, -1, 0, 0] == shape[3] + 1
    forward_y, forward_argmax = max_pool2d_forward(x, 2)
    np.testing.assert_array_equal(forward_y, y)
    np.testing.assert_array_equal(forward_argmax, argmax)


@pytest.mark.parametrize("case", POOL_CASES)
def test_pools_match_torch(case):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    shape, kernel_size, stride, padding = case
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape).astype(np.float32)

    y, argmax = max_pool2d_forward(x, kernel_size, stride, padding)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    tx = torch.tensor(x, requires_grad=True)
    ty, tindices = functional.max_pool2d(tx, kernel_size, stride, padding, return_indices=True)
    ty.backward(torch.from_numpy(dy))
    np.testing.assert_array_equal(y, ty.detach().numpy())
    np.testing.assert_array_equal(argmax, tindices.numpy())
    assert_close(max_pool2d_backward(dy, argmax, x.shape), tx.grad.numpy(), np.float32)

    y = avg_pool2d_forward(x, kernel_size, stride, padding)
    tx = torch.tensor(x, requires_grad=True)
    ty = functional.avg_pool2d(tx, kernel_size, stride, padding)
    ty.backward(torch.from_numpy(dy))
    assert_close(y, ty.detach().numpy(), np.float32)
    assert_close(avg_pool2d_backward(dy, x.shape, kernel_size, stride, padding), tx.grad.numpy(), np.float32)


@pytest.mark.parametrize("padding", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_2x2_special_values_match_torch(dtype, padding):
    """Ties, signed zeros, NaN and infinities in every 2x2 window of values and indices, against PyTorch:
    padding 0 takes the written-out window, padding 1 the general loop."""
    torch = pytest.importorskip("torch")
    special = np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf], dtype=dtype)
    windows = np.stack(np.meshgrid(*[np.arange(special.size)] * 4, indexing="ij"), -1).reshape(-1, 4)
    planes = special[windows].reshape(-1, 1, 2, 2)  # every combination of four specials as one 2x2 plane
    tiled = planes.reshape(49, 49, 2, 2).transpose(0, 2, 1, 3).reshape(1, 1, 98, 98)  # and side by side
    for x in (planes, tiled):
        y, argmax = max_pool2d_forward(x, 2, 2, padding)
        ty, tindices = torch.nn.functional.max_pool2d(torch.from_numpy(x), 2, 2, padding, return_indices=True)
        np.testing.assert_array_equal(y, ty.numpy())
        assert np.array_equal(np.signbit(y), np.signbit(ty.numpy()))
        np.testing.assert_array_equal(argmax, tindices.numpy())


# ---------- clear errors ----------

def test_channel_mismatch_names_both_counts():
    x = np.zeros((1, 3, 5, 5), dtype=np.float32)
    weight = np.zeros((2, 4, 3, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=r"4 input channels.*3 channels"):
        conv2d_forward(x, weight)


def test_weight_without_output_channels():
    with pytest.raises(ValueError, match=r"weight must have at least groups=1 output channels, got shape \(0, 3, 3, 3\)"):
        conv2d_forward(np.zeros((2, 3, 5, 5)), np.zeros((0, 3, 3, 3)), None, 1, 1)


def test_kernel_larger_than_padded_input():
    x = np.zeros((1, 1, 2, 5), dtype=np.float32)
    with pytest.raises(ValueError, match=r"kernel_size \(5, 3\) is larger than the padded input \(4, 7\)"):
        conv2d_forward(x, np.zeros((1, 1, 5, 3), dtype=np.float32), padding=1)
    with pytest.raises(ValueError, match="larger than the padded input"):
        max_pool2d_forward(x, 3)


@pytest.mark.parametrize("bad, error, message", [
    (0, ValueError, "stride must be >= 1"),
    (-1, ValueError, "stride must be >= 1"),
    ((1, 0), ValueError, "stride must be >= 1"),
    (1.5, TypeError, "stride must be an int or a pair of ints"),
    (True, TypeError, "stride must be an int or a pair of ints"),
    ((1, 2, 3), TypeError, "stride must be an int or a pair of ints"),
])
def test_bad_stride(bad, error, message):
    x = np.zeros((1, 1, 6, 6), dtype=np.float32)
    weight = np.zeros((1, 1, 3, 3), dtype=np.float32)
    conv2d_forward(x, weight, None, 1, 0)  # the valid stride that compares equal to True and 1.0, cached
    for stride in (bad, (bad, 1)) if not isinstance(bad, tuple) else (bad,):
        with pytest.raises(error, match=message):
            conv2d_forward(x, weight, None, stride, 0)
    y, saved = conv2d_forward(x, weight, None, 1, 0)
    with pytest.raises(TypeError, match="x_shape"):  # a float size after the same valid one, cached
        conv2d_backward(y, saved, (1, 1, 6.0, 6), weight, 1, 0)
    with pytest.raises(error, match=message):
        im2col(x, 3, bad, 0)
    with pytest.raises(error, match=message):
        avg_pool2d_forward(x, 2, bad)


def test_bad_padding():
    x = np.zeros((1, 1, 6, 6), dtype=np.float32)
    with pytest.raises(ValueError, match="padding must be >= 0"):
        conv2d_forward(x, np.zeros((1, 1, 3, 3), dtype=np.float32), padding=-1)
    with pytest.raises(ValueError, match=r"padding must be at most half of kernel_size \(3, 3\)"):
        max_pool2d_forward(x, 3, 1, 2)


def test_wrong_ndim_and_dtype():
    with pytest.raises(ValueError, match=r"x must be 4-D \(N, C, H, W\), got shape \(3, 5, 5\)"):
        max_pool2d_forward(np.zeros((3, 5, 5), dtype=np.float32), 2)
    with pytest.raises(ValueError, match="weight must be 4-D"):
        conv2d_forward(np.zeros((1, 1, 5, 5)), np.zeros((1, 3, 3)))
    with pytest.raises(TypeError, match="x must be float32 or float64, got int64"):
        avg_pool2d_forward(np.zeros((1, 1, 4, 4), dtype=np.int64), 2)
    with pytest.raises(TypeError, match="weight dtype float64 does not match the input dtype float32"):
        conv2d_forward(np.zeros((1, 1, 5, 5), dtype=np.float32), np.zeros((1, 1, 3, 3)))


def test_backward_shape_errors():
    x = np.zeros((2, 3, 6, 6), dtype=np.float32)
    weight = np.zeros((4, 3, 3, 3), dtype=np.float32)
    y, saved = conv2d_forward(x, weight, None, 1, 1)
    with pytest.raises(ValueError, match=r"dy must have shape \(2, 4, 6, 6\)"):
        conv2d_backward(np.zeros((2, 4, 5, 5), dtype=np.float32), saved, x.shape, weight, 1, 1)
    with pytest.raises(ValueError, match="saved must be what conv2d_forward returned"):
        conv2d_backward(np.zeros_like(y), saved[:1], x.shape, weight, 1, 1)
    with pytest.raises(ValueError, match="cols must have shape"):
        col2im(im2col(x, 3, 1, 1)[:, :5], x.shape, 3, 1, 1)
    with pytest.raises(ValueError, match="bias must be an array of shape"):
        conv2d_forward(x, weight, np.zeros(3, dtype=np.float32))
    y, argmax = max_pool2d_forward(x, 2)
    with pytest.raises(ValueError, match="argmax holds indices outside"):
        max_pool2d_backward(np.ones_like(y), argmax + 36, x.shape)
    with pytest.raises(TypeError, match="argmax must hold integer indices .*got dtype float64"):
        max_pool2d_backward(np.ones_like(y), argmax + 0.7, x.shape)  # truncated, it would pass the range check
    with pytest.raises(TypeError, match="argmax must be a numpy.ndarray, got list"):
        max_pool2d_backward(np.ones_like(y), argmax.tolist(), x.shape)


@pytest.mark.parametrize("needs_input_grad", [True, False])
def test_empty_batch_gives_empty_output_and_zero_weight_gradient(needs_input_grad):
    x = np.zeros((0, 3, 8, 8), np.float32)
    weight = np.ones((4, 3, 3, 3), np.float32)
    y, saved = conv2d_forward(x, weight, None, 1, 1)
    assert y.shape == (0, 4, 8, 8)
    dx, dweight, dbias = conv2d_backward(y, saved, x.shape, weight, 1, 1, needs_input_grad=needs_input_grad)
    assert (dx is None) != needs_input_grad and (dx is None or dx.shape == x.shape)
    assert dweight.shape == weight.shape and not dweight.any() and dbias.shape == (4,) and not dbias.any()
