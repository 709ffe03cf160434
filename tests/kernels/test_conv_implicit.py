"""The float32 register-blocked convolution (conv_implicit.py) against the float64 references and
against the GEMM path, and which convolutions take it."""
import numba
import numpy as np
import pytest

from test_conv_pool_kernels import assert_close, pair, ref_general_conv2d
from tinynorm.kernels.cpu import conv, conv_implicit
from tinynorm.kernels.cpu.conv import conv2d_backward, conv2d_forward

# (N, C, O, H, W, kernel, stride, (top, bottom, left, right), dilation); every weight row (C * kh * kw)
# is long enough for the implicit kernels.
IMPLICIT_CASES = [
    (3, 9, 13, 7, 9, 3, 1, (1, 1, 1, 1), 1),  # channel counts that are not multiples of 8
    (2, 8, 40, 11, 10, 3, 2, (1, 1, 1, 1), 1),  # four grid phases with 4, 2, 2 and 1 taps; O > 32
    (2, 16, 8, 9, 12, (3, 2), (2, 3), (2, 0, 1, 2), (2, 1)),  # asymmetric kernel, stride, padding, dilation
    (2, 64, 16, 6, 6, 1, 2, (1, 1, 1, 1), 1),  # 1x1 with stride 2: three phases without any tap
    (4, 8, 8, 30, 30, 3, 1, (1, 1, 1, 1), 1),  # several blocks of positions per output row
    (2, 8, 8, 3, 31, 3, 1, (1, 1, 1, 1), 1),  # the input's 97 grid positions end one into a block of 32
]


@pytest.fixture
def calls(monkeypatch):
    """Count the calls of conv_implicit's forward and backward."""
    counts = {"forward": 0, "backward": 0}
    for name in counts:
        original = getattr(conv_implicit, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(conv_implicit, name, counted)
    return counts


def run(case, rng, needs_input_grad=True):
    n, c, o, h, w, kernel_size, stride, pads, dilation = case
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weight = rng.standard_normal((o, c, *pair(kernel_size))).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    y, saved = conv2d_forward(x, weight, bias, stride, pads, dilation)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    grads = conv2d_backward(dy, saved, x.shape, weight, stride, pads, dilation, needs_input_grad=needs_input_grad)
    return (x, weight, bias, dy), (y, *grads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", IMPLICIT_CASES)
def test_implicit_convolution_matches_reference(case, threads, calls, monkeypatch):
    monkeypatch.setattr(conv, "MIN_MULTIPLY_ADDS_PER_THREAD", 1)  # share out even the smallest case
    monkeypatch.setattr(numba, "get_num_threads", lambda: threads)
    (x, weight, bias, dy), ours = run(case, np.random.default_rng(11))
    assert calls == {"forward": 1, "backward": 1}
    ref_y, ref_backward = ref_general_conv2d(x, weight, bias, case[6], case[7], case[8], 1)
    for actual, expected in zip(ours, (ref_y, *ref_backward(dy))):
        assert actual.dtype == np.float32 and actual.flags.c_contiguous
        assert_close(actual, expected, np.float32)


@pytest.mark.parametrize("case", IMPLICIT_CASES[:2])
def test_implicit_convolution_matches_gemm_path(case, calls, monkeypatch):
    _, implicit = run(case, np.random.default_rng(12))
    monkeypatch.setattr(conv, "MIN_IMPLICIT_ROW", 10**9)
    _, gemm = run(case, np.random.default_rng(12))
    assert calls == {"forward": 1, "backward": 1}
    for a, b in zip(implicit, gemm):
        assert_close(a, b, np.float32)


def test_implicit_weight_gradient_alone(calls):
    (x, weight, bias, dy), (y, dx, dweight, dbias) = run(IMPLICIT_CASES[1], np.random.default_rng(13),
                                                         needs_input_grad=False)
    assert dx is None and calls["backward"] == 1
    assert_close(dweight, ref_general_conv2d(x, weight, bias, 2, (1, 1, 1, 1), 1, 1)[1](dy)[1], np.float32)


@pytest.mark.parametrize("dtype, channels, groups", [(np.float32, 3, 1), (np.float64, 16, 1), (np.float32, 16, 2)])
def test_other_convolutions_take_the_gemm_path(dtype, channels, groups, calls):
    x = np.ones((2, channels, 6, 6), dtype)
    weight = np.ones((4, channels // groups, 3, 3), dtype)
    y, saved = conv2d_forward(x, weight, None, 1, 1, 1, groups)
    conv2d_backward(y, saved, x.shape, weight, 1, 1, 1, groups)
    assert calls == {"forward": 0, "backward": 0}


@pytest.mark.parametrize("needs_input_grad", [True, False])
def test_implicit_empty_batch(needs_input_grad, calls):
    x = np.zeros((0, 8, 8, 8), np.float32)
    weight = np.ones((4, 8, 3, 3), np.float32)
    y, saved = conv2d_forward(x, weight, None, 1, 1)
    dx, dweight, _ = conv2d_backward(y, saved, x.shape, weight, 1, 1, needs_input_grad=needs_input_grad)
    assert calls == {"forward": 1, "backward": 1} and y.shape == (0, 4, 8, 8)
    assert (dx is None) != needs_input_grad and (dx is None or dx.shape == x.shape)
    assert dweight.shape == weight.shape and not dweight.any()
