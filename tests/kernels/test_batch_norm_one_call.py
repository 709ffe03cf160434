"""BatchNorm's one-call paths on the CPU give the values of the calls they stand for, bit for bit:
``batch_norm_training_forward`` those of batch_norm_stats, batch_norm_update_running, batch_norm_rstd and
batch_norm_forward in turn, and ``batch_norm_backward`` those of its two halves (reduce, then elemt).

The cases reach the one compiled call (below the parallel threshold, lowered to 32,768 elements here by
conftest.py) and the composed path (above it, and where a channel's statistics need the exact redo),
with inf, NaN, constant channels at eps = 0 and float32 squares beyond float32's range.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers import assert_same_values
from tinynorm.kernels.cpu import _config
from tinynorm.kernels.cpu.batch_norm import (batch_norm_backward, batch_norm_backward_elemt,
                                             batch_norm_backward_reduce, batch_norm_forward, batch_norm_rstd,
                                             batch_norm_stats, batch_norm_training_forward,
                                             batch_norm_update_running)

SHAPES = [(2, 16, 64), (5, 3, 1), (1, 4, 7), (3, 6, 17), (64, 8, 64), (4096, 8, 1)]  # the last two: parallel
VALUES = ["normal", "offset", "inf", "nan", "constant", "huge"]


def four_calls(x, weight, bias, eps, running_mean, running_var, momentum):
    mean, var = batch_norm_stats(x)
    if running_mean is not None and x.size:
        batch_norm_update_running(running_mean, running_var, mean, var, x.shape[0] * x.shape[2], momentum)
    rstd = batch_norm_rstd(var, eps).astype(x.dtype)
    return batch_norm_forward(x, mean, rstd, weight, bias), mean, rstd


def two_halves(dy, x, mean, rstd, weight, training):
    sum_dy, sum_dy_xhat = batch_norm_backward_reduce(dy, x, mean, rstd)
    if training:
        count = x.shape[0] * x.shape[2]
        mean_dy, mean_dy_xhat = sum_dy / count, sum_dy_xhat / count
    else:
        mean_dy = mean_dy_xhat = np.zeros_like(sum_dy)
    return batch_norm_backward_elemt(dy, x, mean, rstd, weight, mean_dy, mean_dy_xhat), sum_dy_xhat, sum_dy


def make_input(shape, dtype, values, rng):
    x = rng.standard_normal(shape)
    if values == "offset":
        x = x * 1e-3 + 1e4  # |mean| >> std
    elif values == "inf":
        x[0, 0, 0] = np.inf
    elif values == "nan":
        x[-1, -1, -1] = np.nan
    elif values == "constant":
        x[:, 0] = 3.0
    elif values == "huge" and dtype == np.float32:
        x = x * 1e25  # squares beyond float32's range: the statistics are redone exactly
    return x.astype(dtype)


def test_the_cases_reach_both_paths():
    sizes = [np.prod(shape) for shape in SHAPES]
    assert min(sizes) < _config.PARALLEL_THRESHOLD <= max(sizes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("values", VALUES)
def test_training_forward_is_the_four_calls(dtype, shape, values):
    rng = np.random.default_rng(abs(hash((shape, values))) % 2**32)
    x = make_input(shape, dtype, values, rng)
    channels = shape[1]
    eps = 0.0 if values == "constant" else 1e-5
    for weight, bias, tracked in ((rng.standard_normal(channels).astype(dtype), rng.standard_normal(channels)
                                   .astype(dtype), True), (None, None, False), (None, np.ones(channels, dtype), True)):
        running = [(rng.standard_normal(channels).astype(dtype), rng.random(channels).astype(dtype))
                   if tracked else (None, None)]
        running.append(tuple(None if a is None else a.copy() for a in running[0]))
        with np.errstate(all="ignore"):
            want = four_calls(x, weight, bias, eps, *running[0], 0.3)
        got = batch_norm_training_forward(x, weight, bias, eps, *running[1], 0.3)
        for actual, expected in zip(got, want):
            assert_same_values(actual, expected, nan_signs=False)
        if tracked:
            for actual, expected in zip(running[1], running[0]):
                assert_same_values(actual, expected, nan_signs=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("values", VALUES)
def test_backward_is_reduce_then_elemt(dtype, shape, values):
    rng = np.random.default_rng(abs(hash((shape, values, "backward"))) % 2**32)
    x = make_input(shape, dtype, values, rng)
    dy = rng.standard_normal(shape).astype(dtype)
    weight = rng.standard_normal(shape[1]).astype(dtype)
    with np.errstate(all="ignore"):
        _, mean, rstd = four_calls(x, None, None, 0.0 if values == "constant" else 1e-5, None, None, 0.1)
        for training in (True, False):
            for w in (weight, None):
                want = two_halves(dy, x, mean, rstd, w, training)
                got = batch_norm_backward(dy, x, mean, rstd, w, training)
                for actual, expected in zip(got, want):
                    assert_same_values(actual, expected, nan_signs=False)


def test_an_empty_batch_leaves_the_running_statistics():
    running_mean, running_var = np.full(3, 0.5, np.float32), np.full(3, 2.0, np.float32)
    y, mean, rstd = batch_norm_training_forward(np.empty((0, 3, 4), np.float32), None, None, 1e-5, running_mean,
                                                running_var, 0.1)
    assert y.shape == (0, 3, 4) and np.isnan(mean).all() and np.isnan(rstd).all()
    assert (running_mean == 0.5).all() and (running_var == 2.0).all()


@pytest.mark.parametrize("call, error, message", [
    (lambda x, r: batch_norm_training_forward(x, None, None, 1e-5, r[:2], r), ValueError,
     r"running_var must have running_mean's shape \(2,\)"),
    (lambda x, r: batch_norm_training_forward(x, None, None, 1e-5, r, None), TypeError,
     "running_var must be an array, got NoneType"),
    (lambda x, r: batch_norm_training_forward(x[:1, :, :1], None, None, 1e-5, r, r.copy()), ValueError,
     "count must be an integer > 1"),
    (lambda x, r: batch_norm_training_forward(x, None, None, 1e-5, r, r.copy(), 1.5), ValueError,
     r"momentum must be a number in \[0, 1\]"),
    (lambda x, r: batch_norm_training_forward(x, np.ones(4, np.float32), None, 1e-5), ValueError,
     r"weight must have shape \(3,\), got \(4,\)"),
    (lambda x, r: batch_norm_training_forward(x, None, None, -1.0), ValueError, "eps must be a non-negative"),
    (lambda x, r: batch_norm_training_forward(x.astype(np.int32), None, None, 1e-5), TypeError,
     "x must have dtype float32 or float64, got int32"),
])
def test_training_forward_errors_name_the_argument(call, error, message):
    x, running = np.ones((2, 3, 4), np.float32), np.zeros(3, np.float32)
    with pytest.raises(error, match=message):
        call(x, running)
    assert (running == 0).all()


def test_the_helpers_round_as_numpy_whichever_caller_compiles_them_first(tmp_path):
    """The per-channel helpers state ``fastmath=False``: one that left it unset would be compiled with the
    flags of the compiled loop that calls it first (Numba inherits them), fusing its multiplies and adds.
    A fresh process with an empty cache compiles them inside the one-call paths first, then checks them."""
    script = textwrap.dedent("""
        import numpy as np
        from tinynorm.kernels.cpu.batch_norm import (batch_norm_backward, batch_norm_forward, batch_norm_rstd,
                                                     batch_norm_training_forward, batch_norm_update_running)
        rng = np.random.default_rng(3)
        x = rng.standard_normal((2, 40, 8)).astype(np.float32)
        batch_norm_training_forward(x, None, None, 1e-5, np.zeros(40, np.float32), np.ones(40, np.float32), 0.1)
        batch_norm_backward(x, x, np.zeros(40, np.float32), np.ones(40, np.float32), None, True)
        running_mean = rng.standard_normal(40).astype(np.float32)
        running_var = rng.uniform(0.1, 3.0, 40).astype(np.float32)
        mean, var, momentum, count = (rng.standard_normal(40) * 10).astype(np.float32), rng.uniform(0, 5, 40), 1 / 3, 30
        want_mean = (1 - momentum) * running_mean + momentum * mean
        want_var = (1 - momentum) * running_var + momentum * (var * (count / (count - 1))).astype(np.float32)
        batch_norm_update_running(running_mean, running_var, mean, var, count, momentum)
        assert np.array_equal(running_mean, want_mean) and np.array_equal(running_var, want_var)
        assert np.array_equal(batch_norm_rstd(var, 1e-5), 1 / np.sqrt(var + 1e-5))
        rstd, weight = rng.uniform(0.5, 2, 40).astype(np.float32), rng.standard_normal(40).astype(np.float32)
        zero = np.zeros(40, np.float32)
        y = batch_norm_forward(np.ones((1, 40, 1), np.float32), zero, rstd, weight, None)
        assert np.array_equal(y[0, :, 0], rstd * weight)  # (1 - 0) * scale + 0: the scale itself
        print("same values")
    """)
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                            timeout=600)
    assert result.returncode == 0 and "same values" in result.stdout, result.stderr
