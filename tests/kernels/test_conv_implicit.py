"""The float32 register-blocked convolution (conv_implicit.py) against the float64 references and
against the GEMM path, and which convolutions take it."""
import functools
import os
import subprocess
import sys
from pathlib import Path

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
    (2, 8, 35, 1, 1, 3, 1, (1, 1, 1, 1), 1),  # a 1x1 input under a 3x3 kernel; 35 output channels
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


def force_lanes(monkeypatch, lanes):
    """Make every product of the implicit kernels use blocks ``lanes`` wide ('auto': lanes_for's choice)."""
    if lanes != "auto":
        monkeypatch.setattr(conv_implicit, "lanes_for", lambda count: lanes)
    # A fresh cache of backward plans (they hold the input gradient's width), dropped after the test.
    monkeypatch.setattr(conv_implicit, "_backward_plan", functools.lru_cache(conv_implicit._backward_plan.__wrapped__))


def force_gemm_path(monkeypatch):
    """Send every convolution, forward and backward, down the GEMM path."""
    monkeypatch.setattr(conv, "MIN_IMPLICIT_ROW", 10**9)
    monkeypatch.setattr(conv, "_is_forward_by_rows", lambda *args: False)


@pytest.mark.parametrize("lanes", ["auto", conv_implicit.NARROW_LANES, conv_implicit.LANES])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", IMPLICIT_CASES)
def test_implicit_convolution_matches_reference(case, threads, lanes, calls, monkeypatch):
    matches_reference(case, threads, lanes, monkeypatch, seed=11)
    assert calls == {"forward": 1, "backward": 1}


def matches_reference(case, threads, lanes, monkeypatch, seed):
    """Run ``case`` forward and backward on ``threads`` threads in blocks ``lanes`` wide, check every
    result against the float64 reference, and return them."""
    monkeypatch.setattr(conv, "MIN_MULTIPLY_ADDS_PER_THREAD", 1)  # share out even the smallest case
    monkeypatch.setattr(numba, "get_num_threads", lambda: threads)
    force_lanes(monkeypatch, lanes)
    (x, weight, bias, dy), ours = run(case, np.random.default_rng(seed))
    ref_y, ref_backward = ref_general_conv2d(x, weight, bias, case[6], case[7], case[8], 1)
    for actual, expected in zip(ours, (ref_y, *ref_backward(dy))):
        assert actual.dtype == np.float32 and actual.flags.c_contiguous
        assert_close(actual, expected, np.float32)
    return ours


@pytest.mark.parametrize("case", IMPLICIT_CASES[:2])
def test_implicit_convolution_matches_gemm_path(case, calls, monkeypatch):
    _, implicit = run(case, np.random.default_rng(12))
    force_gemm_path(monkeypatch)
    _, gemm = run(case, np.random.default_rng(12))
    assert calls == {"forward": 1, "backward": 1}
    for a, b in zip(implicit, gemm):
        assert_close(a, b, np.float32)


@pytest.mark.parametrize("lanes", [conv_implicit.NARROW_LANES, conv_implicit.LANES])
@pytest.mark.parametrize("threads", [1, 2])
def test_implicit_weight_gradient_alone(threads, lanes, calls, monkeypatch):
    monkeypatch.setattr(conv, "MIN_MULTIPLY_ADDS_PER_THREAD", 1)
    monkeypatch.setattr(numba, "get_num_threads", lambda: threads)
    force_lanes(monkeypatch, lanes)
    (x, weight, bias, dy), (y, dx, dweight, dbias) = run(IMPLICIT_CASES[1], np.random.default_rng(13),
                                                         needs_input_grad=False)
    assert dx is None and calls["backward"] == 1
    assert_close(dweight, ref_general_conv2d(x, weight, bias, 2, (1, 1, 1, 1), 1, 1)[1](dy)[1], np.float32)


def test_results_depend_on_the_thread_count_only(monkeypatch):
    """y and dx come from one thread per sample whatever the count; dweight adds the threads' parts in a
    fixed order, so it repeats exactly for a given count."""
    monkeypatch.setattr(conv, "MIN_MULTIPLY_ADDS_PER_THREAD", 1)
    results = {}
    for threads in (1, 2, 3, 3):
        monkeypatch.setattr(numba, "get_num_threads", lambda: threads)
        _, (y, dx, dweight, _) = run(IMPLICIT_CASES[4], np.random.default_rng(14))
        if threads in results:
            assert np.array_equal(dweight, results[threads][2])
        results[threads] = (y, dx, dweight)
    for y, dx, _ in results.values():
        assert np.array_equal(y, results[1][0]) and np.array_equal(dx, results[1][1])


def force_blocks_by_channels(monkeypatch, by_channels):
    """Make the forward and the input gradient take their blocks by channels, or never."""
    order = conv_implicit.BY_CHANNELS if by_channels else conv_implicit.WIDE
    monkeypatch.setattr(conv_implicit, "forward_order", lambda plan, out_channels, by_rows: order)
    monkeypatch.setattr(conv_implicit, "input_gradient_by_channels", lambda *args: by_channels)
    conv_implicit._backward_plan.cache_clear()  # the plans hold the input gradient's choice


@pytest.mark.parametrize("lanes", ["auto", conv_implicit.NARROW_LANES, conv_implicit.LANES])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", IMPLICIT_CASES)
def test_blocks_by_channels_compute_the_wide_blocks_values_exactly(case, threads, lanes, calls, monkeypatch):
    """Both orders add each output's (and each input pixel's) products in the same order."""
    force_blocks_by_channels(monkeypatch, True)
    by_channels = matches_reference(case, threads, lanes, monkeypatch, seed=18)
    force_blocks_by_channels(monkeypatch, False)
    wide = matches_reference(case, threads, lanes, monkeypatch, seed=18)
    assert calls == {"forward": 2, "backward": 2}
    for a, b in zip(by_channels, wide):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("size, out_channels, stride, order", [
    (8, 16, 1, "BY_CHANNELS"), (8, 32, 1, "BY_CHANNELS"), (8, 64, 1, "BY_CHANNELS"),  # 64 of 80 wide positions
    (8, 10, 1, "BY_CHANNELS"),  # 10 channels pad to 16 either way
    (8, 24, 1, "WIDE"),  # 24 channels: whole blocks of 8, but not of 16
    (4, 32, 1, "WIDE"), (16, 32, 1, "WIDE"), (14, 64, 1, "WIDE"), (28, 32, 1, "WIDE"), (28, 32, 2, "WIDE"),
])
def test_forward_blocks_by_channels_where_they_compute_the_fewest_values(size, out_channels, stride, order):
    geometry = conv.conv2d_geometry((1, 16, size, size), (out_channels, 16, 3, 3), stride, 1, 1)
    plan = conv._grid_plan(size, size, geometry)
    assert conv_implicit.forward_order(plan, out_channels, False) == getattr(conv_implicit, order)
    assert conv_implicit.forward_order(plan, out_channels, True) == conv_implicit.BY_ROWS


@pytest.mark.parametrize("size, channels, stride, by_channels", [
    (8, 16, 1, True), (8, 32, 1, True), (8, 10, 1, True),  # 64 pixels in a span of 78 positions
    (8, 24, 1, False), (4, 32, 1, False), (16, 32, 1, False), (28, 32, 1, False), (28, 32, 2, False),
])
def test_input_gradient_blocks_by_channels_where_they_compute_the_fewest_values(size, channels, stride,
                                                                                 by_channels):
    geometry = conv.conv2d_geometry((1, channels, size, size), (16, channels, 3, 3), stride, 1, 1)
    plan = conv._grid_plan(size, size, geometry)
    backward = conv_implicit._backward_plan(channels, size, size, plan.pad_top, plan.pad_left, plan.stride, plan.wq,
                                            plan.plane_size, tuple(plan.tap_phase), tuple(plan.tap_offset))
    assert backward.input_by_channels == by_channels
    expected = conv_implicit.lanes_for(channels) if by_channels else conv_implicit.lanes_for(
        int((backward.phase_span[:, 1] - backward.phase_span[:, 0]).max()))
    assert backward.input_lanes == expected


@pytest.mark.parametrize("channels, kernel, implicit", [(7, 3, False), (16, 2, True)])
def test_weight_rows_from_min_implicit_row_take_the_implicit_path(channels, kernel, implicit, calls):
    """Shorter rows run the forward by rows and the backward on the GEMM path."""
    assert conv.MIN_IMPLICIT_ROW == 64  # 7 * 3 * 3 = 63 values, 16 * 2 * 2 = 64
    x = np.ones((2, channels, 6, 6), np.float32)
    weight = np.ones((4, channels, kernel, kernel), np.float32)
    y, saved = conv2d_forward(x, weight, None, 1, 1)
    conv2d_backward(y, saved, x.shape, weight, 1, 1)
    assert calls == {"forward": 1, "backward": 1 if implicit else 0}
    assert conv._is_forward_by_rows(np.dtype(np.float32), 1, channels * kernel * kernel) == (not implicit)
    assert not conv._is_forward_by_rows(np.dtype(np.float64), 1, 9)  # float64 and groups: the GEMM path
    assert not conv._is_forward_by_rows(np.dtype(np.float32), 2, 9)


# Short weight rows (C * kh * kw < MIN_IMPLICIT_ROW): the forward by rows.
BY_ROWS_CASES = [
    (3, 1, 13, 7, 9, 3, 1, (1, 1, 1, 1), 1),  # one channel (a first layer), 13 outputs
    (2, 3, 40, 11, 10, 3, 2, (1, 1, 1, 1), 1),  # three channels, stride 2, O > 32
    (2, 2, 8, 9, 12, (3, 2), (2, 3), (2, 0, 1, 2), (2, 1)),  # asymmetric kernel, stride, padding, dilation
    (2, 1, 8, 5, 70, 3, 1, (1, 1, 1, 1), 1),  # 70 outputs a row: three blocks of 32 lanes, the last short
    (2, 7, 9, 16, 16, 3, 1, (1, 1, 1, 1), 1),  # 63 values a row, rows exactly one block of 16
    (2, 2, 5, 6, 4, 5, 1, (2, 2, 2, 2), 1),  # 5x5 kernel on two channels
    (2, 1, 3, 1, 1, 3, 1, (1, 1, 1, 1), 1),  # a 1x1 input
    (2, 2, 5, 1, 70, 3, 1, (1, 1, 1, 1), 1),  # one output row over three blocks
]


@pytest.mark.parametrize("lanes", ["auto", conv_implicit.NARROW_LANES, conv_implicit.LANES])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", BY_ROWS_CASES)
def test_forward_by_rows_matches_reference_and_gemm_path(case, threads, lanes, calls, monkeypatch):
    ours = matches_reference(case, threads, lanes, monkeypatch, seed=16)
    assert calls == {"forward": 1, "backward": 0}
    force_gemm_path(monkeypatch)
    _, gemm = run(case, np.random.default_rng(16))
    assert_close(ours[0], gemm[0], np.float32)


@pytest.mark.filterwarnings("ignore:invalid value encountered in matmul:RuntimeWarning")  # the GEMM path's inf
@pytest.mark.parametrize("mode", ["zeros", "reflect", "circular"])
@pytest.mark.parametrize("shape", [(2, 3, 3, 70), (2, 1, 7, 5), (0, 3, 6, 6)])  # rows over 3 blocks; no samples
def test_forward_by_rows_padding_modes_and_edges_match_gemm_path(shape, mode, calls, monkeypatch):
    rng = np.random.default_rng(17)
    x = rng.standard_normal(shape).astype(np.float32)
    x[..., 1, 1] = np.inf  # a non-finite input reaches the same outputs both ways
    weight = rng.standard_normal((9, shape[1], 3, 3)).astype(np.float32)
    by_rows = conv2d_forward(x, weight, None, 1, 1, padding_mode=mode)[0]
    assert calls == {"forward": 1, "backward": 0}
    force_gemm_path(monkeypatch)
    gemm = conv2d_forward(x, weight, None, 1, 1, padding_mode=mode)[0]
    assert by_rows.shape == gemm.shape == (shape[0], 9, *shape[2:])
    if not gemm.size:
        return
    np.testing.assert_array_equal(np.isnan(by_rows), np.isnan(gemm))
    finite = np.isfinite(gemm)
    assert_close(np.where(finite, by_rows, 0), np.where(finite, gemm, 0), np.float32)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_implicit_padding_modes_match_gemm_path(mode, calls, monkeypatch):
    rng = np.random.default_rng(15)
    x = rng.standard_normal((2, 8, 7, 6)).astype(np.float32)
    weight = rng.standard_normal((5, 8, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((2, 5, 7, 6)).astype(np.float32)

    def both_passes():
        y, saved = conv2d_forward(x, weight, None, 1, 1, padding_mode=mode)
        return (y, *conv2d_backward(dy, saved, x.shape, weight, 1, 1, padding_mode=mode)[:2])

    implicit = both_passes()
    force_gemm_path(monkeypatch)
    for a, b in zip(implicit, both_passes()):
        assert_close(a, b, np.float32)
    assert calls == {"forward": 1, "backward": 1}


@pytest.mark.filterwarnings("ignore:invalid value encountered in matmul:RuntimeWarning")
def test_non_finite_values_reach_what_the_gemm_path_reaches(calls, monkeypatch):
    """An infinite input pixel or weight gives inf/NaN exactly where it does without the blocks (which
    meet zeros around the outputs, and 0 * inf is NaN)."""
    rng = np.random.default_rng(16)
    x = rng.standard_normal((1, 8, 5, 6)).astype(np.float32)
    x[0, 0, 2, 0] = np.inf  # on the left edge: the taps of the right column never read it
    weight = rng.standard_normal((4, 8, 3, 3)).astype(np.float32)
    dy = np.ones((1, 4, 5, 6), np.float32)
    infinite_weight = weight.copy()
    infinite_weight[0, 0, 0, 2] = np.inf

    def passes(w):
        y, saved = conv2d_forward(x, w, None, 1, 1)
        return (y, *conv2d_backward(dy, saved, x.shape, w, 1, 1)[:2])

    implicit = passes(weight) + passes(infinite_weight)
    force_gemm_path(monkeypatch)
    gemm = passes(weight) + passes(infinite_weight)
    assert calls == {"forward": 2, "backward": 1}  # a non-finite weight's backward takes the GEMM path
    assert not np.isfinite(implicit[2]).all()  # the test reaches non-finite weight gradients
    for a, b in zip(implicit, gemm):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
        finite = np.isfinite(b)
        assert_close(np.where(finite, a, 0), np.where(finite, b, 0), np.float32)


@pytest.mark.parametrize("count, lanes", [(80, 16), (16, 16), (48, 16), (78, 16), (64, 32), (24, 32), (224, 32),
                                          (840, 32), (1, 16), (33, 16), (96, 32)])
def test_narrow_blocks_where_wide_ones_would_pad_by_a_tenth_more(count, lanes):
    """An 8x8 image's 80 wide positions and 16 output channels take blocks of 16; 64 or 840 take 32."""
    assert conv_implicit.lanes_for(count) == lanes


@pytest.mark.parametrize("h, w, kernel, stride, pads, dilation", [
    (1, 1, 3, 1, (1, 1, 1, 1), 1), (7, 9, 3, 2, (1, 1, 1, 1), 1), (9, 12, (3, 2), (2, 3), (2, 0, 1, 2), (2, 1)),
    (5, 40, 5, 3, (2, 2, 0, 4), 2), (8, 8, 1, 2, (1, 1, 1, 1), 1), (3, 31, 3, 1, (1, 1, 1, 1), 1),
    (16, 30, 3, 1, (1, 1, 1, 1), 1),  # the last row's block ends where the wide ones do
    (4, 70, 3, 1, (1, 1, 1, 1), 1),  # and past them
])
def test_grid_planes_have_room_for_every_block_the_kernels_read(h, w, kernel, stride, pads, dilation):
    """The kernels do not check their indices: the forward reads a tap's run up to the last whole block of
    wide positions (or, by rows, up to the last row's last whole block), the input gradient ``dy`` up to
    LANES past the last phase position."""
    geometry = conv.conv2d_geometry((1, 1, h, w), (1, 1, *pair(kernel)), stride, pads, dilation)
    plan = conv._grid_plan(h, w, geometry)
    assert plan.wide_pixel.size % conv_implicit.LANES == 0
    assert plan.plane_size >= plan.tap_offset.max() + plan.wide_pixel.size
    (out_h, out_w), lanes = plan.out_size, conv_implicit.LANES
    assert plan.plane_size >= plan.tap_offset.max() + (out_h - 1) * plan.wq + conv_implicit.padded(out_w, lanes)
    backward = conv_implicit._backward_plan(1, h, w, plan.pad_top, plan.pad_left, plan.stride, plan.wq,
                                            plan.plane_size, tuple(plan.tap_phase), tuple(plan.tap_offset))
    span = backward.phase_span.max()
    assert backward.phase_pixel.shape[1] >= span + conv_implicit.LANES - 1 and span <= plan.plane_size


@pytest.mark.parametrize("dtype, channels, groups, forward", [(np.float32, 3, 1, 1), (np.float64, 16, 1, 0),
                                                               (np.float32, 16, 2, 0)])
def test_other_convolutions_take_the_gemm_path(dtype, channels, groups, forward, calls):
    """Short float32 rows only for the forward (by rows); float64 and groups both ways."""
    x = np.ones((2, channels, 6, 6), dtype)
    weight = np.ones((4, channels // groups, 3, 3), dtype)
    y, saved = conv2d_forward(x, weight, None, 1, 1, 1, groups)
    conv2d_backward(y, saved, x.shape, weight, 1, 1, 1, groups)
    assert calls == {"forward": forward, "backward": 0}


@pytest.mark.parametrize("needs_input_grad", [True, False])
def test_implicit_empty_batch(needs_input_grad, calls):
    x = np.zeros((0, 8, 8, 8), np.float32)
    weight = np.ones((4, 8, 3, 3), np.float32)
    y, saved = conv2d_forward(x, weight, None, 1, 1)
    dx, dweight, _ = conv2d_backward(y, saved, x.shape, weight, 1, 1, needs_input_grad=needs_input_grad)
    assert calls == {"forward": 1, "backward": 1} and y.shape == (0, 4, 8, 8)
    assert (dx is None) != needs_input_grad and (dx is None or dx.shape == x.shape)
    assert dweight.shape == weight.shape and not dweight.any()


BOUNDS_CHECK = """
import sys
import numba
sys.path.insert(0, sys.argv[1])
import numpy as np
from test_conv_implicit import IMPLICIT_CASES, run
from tinynorm.kernels.cpu import conv, conv_implicit
conv.MIN_MULTIPLY_ADDS_PER_THREAD = 1
for lanes in (conv_implicit.NARROW_LANES, conv_implicit.LANES):
    conv_implicit.lanes_for = lambda count: lanes
    conv_implicit._backward_plan.cache_clear()
    for threads in (1, 2):
        numba.get_num_threads = lambda: threads
        for by_channels in (False, True):
            conv_implicit.forward_order = lambda *args: conv_implicit.BY_CHANNELS if by_channels else conv_implicit.WIDE
            conv_implicit.input_gradient_by_channels = lambda *args: by_channels
            conv_implicit._backward_plan.cache_clear()
            for case in IMPLICIT_CASES:
                for needs_input_grad in (True, False):
                    run(case, np.random.default_rng(0), needs_input_grad)
print("in bounds")
"""


@pytest.mark.slow
def test_kernels_stay_in_bounds(tmp_path):
    """Every case at both block widths and in both orders of the blocks again with Numba's bounds
    checks compiled in (its own cache: Numba's cache does not tell checked and unchecked code
    apart): an out-of-range index raises instead of reading a neighbour."""
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", BOUNDS_CHECK, str(Path(__file__).parent)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "in bounds" in done.stdout, done.stderr[-3000:]
