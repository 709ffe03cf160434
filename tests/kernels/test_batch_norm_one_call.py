"""BatchNorm's one-call paths on the CPU give the values of the calls they stand for, bit for bit:
``batch_norm_training_forward`` those of batch_norm_stats, batch_norm_rstd, batch_norm_forward and
batch_norm_update_running in turn, and ``batch_norm_backward`` those of its two halves (reduce, then elemt).

The cases reach the one compiled call (below the parallel threshold, lowered to 32,768 elements here by
conftest.py) and the composed path (above it). In the forward, inputs whose statistics are out of range
(inf, NaN, a constant channel at eps = 0, float32 squares beyond float32's range) leave the compiled call
for the composed path, which redoes them exactly; NaN and inf parameters stay in it. The backward has no
such exit: every input takes the compiled call below the threshold.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers import assert_same_values
from tinynorm.kernels.cpu import _config, _shared
from tinynorm.kernels.cpu import batch_norm as batch_norm_module
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


def every_case(test):
    """``test`` for each dtype, shape and kind of values."""
    for name, choices in (("values", VALUES), ("shape", SHAPES), ("dtype", [np.float32, np.float64])):
        test = pytest.mark.parametrize(name, choices)(test)
    return test


def case_input(dtype, shape, values, test_number):
    """A generator seeded by the case (the same in every run) and the case's input from it."""
    rng = np.random.default_rng([SHAPES.index(shape), VALUES.index(values), test_number])
    return rng, make_input(shape, dtype, values, rng)


@pytest.fixture
def one_call_results(monkeypatch):
    """What each one-call kernel returned in the test, by name (None: the backward returns nothing)."""
    results = {"forward": [], "backward": []}
    for name, kernel in (("forward", "_training_forward_one_thread"), ("backward", "_backward_one_thread")):
        def recorded(*args, _kernel=getattr(batch_norm_module, kernel), _name=name):
            result = _kernel(*args)
            results[_name].append(result)
            return result
        monkeypatch.setattr(batch_norm_module, kernel, recorded)
    return results


def test_the_cases_reach_both_paths():
    sizes = [np.prod(shape) for shape in SHAPES]
    assert min(sizes) < _config.PARALLEL_THRESHOLD <= max(sizes)


def parameter_sets(channels, dtype, rng):
    """(weight, bias, buffers tracked): random ones, None, and NaN / inf entries."""
    weight, bias = rng.standard_normal(channels).astype(dtype), rng.standard_normal(channels).astype(dtype)
    special_weight, special_bias = weight.copy(), bias.copy()
    special_weight[0], special_bias[-1] = np.nan, np.inf
    return [(weight, bias, True), (None, None, False), (None, np.ones(channels, dtype), True),
            (special_weight, special_bias, True)]


@every_case
def test_training_forward_is_the_four_calls(dtype, shape, values, one_call_results):
    rng, x = case_input(dtype, shape, values, 1)
    channels = shape[1]
    eps = 0.0 if values == "constant" else 1e-5
    for weight, bias, tracked in parameter_sets(channels, dtype, rng):
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
    in_range = values in ("normal", "offset") or (values == "huge" and dtype == np.float64)
    expected = [] if _shared.use_parallel(x.size) else [in_range] * 4
    assert one_call_results["forward"] == expected


@every_case
def test_backward_is_reduce_then_elemt(dtype, shape, values, one_call_results):
    rng, x = case_input(dtype, shape, values, 2)
    dy = rng.standard_normal(shape).astype(dtype)
    dy[:, 0] = -0.0  # a channel whose sums are zeros: their signs too are the two halves'
    weight = rng.standard_normal(shape[1]).astype(dtype)
    with np.errstate(all="ignore"):
        _, mean, rstd = four_calls(x, None, None, 0.0 if values == "constant" else 1e-5, None, None, 0.1)
        for training in (True, False):
            for w in (weight, None):
                want = two_halves(dy, x, mean, rstd, w, training)
                got = batch_norm_backward(dy, x, mean, rstd, w, training)
                for actual, expected in zip(got, want):
                    assert_same_values(actual, expected, nan_signs=False)
    assert len(one_call_results["backward"]) == (0 if _shared.use_parallel(x.size) else 4)


@pytest.mark.parametrize("buffer_dtype", [np.float16, np.float64])
def test_buffers_of_another_dtype_take_the_four_calls(buffer_dtype, one_call_results):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    buffers = [(rng.standard_normal(3).astype(buffer_dtype), rng.random(3).astype(buffer_dtype))]
    buffers.append(tuple(buffer.copy() for buffer in buffers[0]))
    want = four_calls(x, None, None, 1e-5, *buffers[0], 0.2)
    got = batch_norm_training_forward(x, None, None, 1e-5, *buffers[1], 0.2)
    for actual, expected in zip((*got, *buffers[1]), (*want, *buffers[0])):
        assert_same_values(actual, expected)
    assert one_call_results["forward"] == []


@pytest.mark.parametrize("shape", [(4, 3, 5), (64, 8, 64)])  # one call, and the four
def test_out_receives_the_output(shape):
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    out = np.full_like(x, np.nan)
    y, mean, rstd = batch_norm_training_forward(x, None, None, 1e-5, out=out)
    assert y is out
    assert_same_values(out, four_calls(x, None, None, 1e-5, None, None, 0.1)[0])
    with pytest.raises(ValueError, match="out must have shape"):
        batch_norm_training_forward(x, None, None, 1e-5, out=out[:1])


def test_an_empty_batch_leaves_the_running_statistics():
    running_mean, running_var = np.full(3, 0.5, np.float32), np.full(3, 2.0, np.float32)
    y, mean, rstd = batch_norm_training_forward(np.empty((0, 3, 4), np.float32), None, None, 1e-5, running_mean,
                                                running_var, 0.1)
    assert y.shape == (0, 3, 4) and np.isnan(mean).all() and np.isnan(rstd).all()
    assert (running_mean == 0.5).all() and (running_var == 2.0).all()


@pytest.mark.parametrize("call, error, message", [
    (lambda x, m, v: batch_norm_training_forward(x, None, None, 1e-5, m[:2], v), ValueError,
     r"running_mean must have shape \(3,\), one value per channel of x, got \(2,\)"),
    (lambda x, m, v: batch_norm_training_forward(x, None, None, 1e-5, m, None), TypeError,
     "running_var must be a numpy.ndarray .*got NoneType"),
    (lambda x, m, v: batch_norm_training_forward(x, None, None, 1e-5, None, v), TypeError,
     "running_mean must be a numpy.ndarray .*got NoneType"),
    (lambda x, m, v: batch_norm_training_forward(x, None, None, 1e-5, m, v.astype(np.int32)), TypeError,
     "running_var must be a floating-point array, got dtype int32"),
    (lambda x, m, v: batch_norm_training_forward(x, None, None, 1e-5, m, read_only(v)), ValueError,
     "running_var is read-only"),
    (lambda x, m, v: batch_norm_training_forward(x[:1, :, :1], None, None, 1e-5, m, v), ValueError,
     r"x of shape \(1, 3, 1\) has one value per channel"),
    (lambda x, m, v: batch_norm_training_forward(x, None, None, 1e-5, m, v, 1.5), ValueError,
     r"momentum must be a number in \[0, 1\]"),
    (lambda x, m, v: batch_norm_training_forward(x[:0], None, None, 1e-5, m[:2], v, 0.1), ValueError,
     r"running_mean must have shape \(3,\)"),
    (lambda x, m, v: batch_norm_training_forward(x[:0], None, None, 1e-5, m, v, -0.5), ValueError,
     r"momentum must be a number in \[0, 1\]"),
    (lambda x, m, v: batch_norm_training_forward(x, np.ones(4, np.float32), None, 1e-5, m, v), ValueError,
     r"weight must have shape \(3,\), got \(4,\)"),
    (lambda x, m, v: batch_norm_training_forward(x, None, None, -1.0, m, v), ValueError,
     "eps must be a non-negative"),
    (lambda x, m, v: batch_norm_training_forward(x.astype(np.int32), None, None, 1e-5, m, v), TypeError,
     "x must have dtype float32 or float64, got int32"),
])
def test_training_forward_errors_name_the_argument_and_change_nothing(call, error, message):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    running_mean, running_var = rng.standard_normal(3).astype(np.float32), rng.random(3).astype(np.float32)
    before = running_mean.copy(), running_var.copy()
    with pytest.raises(error, match=message):
        call(x, running_mean, running_var)
    assert_same_values(running_mean, before[0])
    assert_same_values(running_var, before[1])


def read_only(array):
    """A copy of ``array`` that cannot be written."""
    array = array.copy()
    array.flags.writeable = False
    return array


def test_the_helpers_round_as_numpy_whichever_caller_compiles_them_first(tmp_path):
    """The per-channel helpers state ``fastmath=False``: one that left it unset would be compiled with the
    flags of the compiled loop that calls it first (Numba inherits them), fusing its multiplies and adds or
    dividing by a reciprocal. A fresh process with an empty cache compiles them inside the one-call paths
    first, then checks each against its numpy form."""
    script = textwrap.dedent("""
        import numpy as np
        from tinynorm.kernels.cpu import batch_norm as bn
        rng = np.random.default_rng(3)
        x = rng.standard_normal((2, 40, 8)).astype(np.float32)
        bn.batch_norm_training_forward(x, None, None, 1e-5, np.zeros(40, np.float32), np.ones(40, np.float32), 0.1)
        bn.batch_norm_backward(x, x, np.zeros(40, np.float32), np.ones(40, np.float32), None, True)
        a, b, c, d = (rng.standard_normal(4096).astype(np.float32) for _ in range(4))
        var, momentum, count = rng.uniform(0, 5, 4096), np.float32(1 / 3), 30
        out = [np.empty(4096, np.float32) for _ in range(4)]
        want_a = (1 - momentum) * a + momentum * c
        want_b = (1 - momentum) * b + momentum * (var * (count / (count - 1))).astype(np.float32)
        bn._update_running(a, b, c, var, count / (count - 1), np.float32(1) - momentum, momentum)
        assert np.array_equal(a, want_a) and np.array_equal(b, want_b), "_update_running"
        rstd = np.empty(4096)
        bn._rstd(var, 1e-5, 1.0, rstd)
        assert np.array_equal(rstd, 1 / np.sqrt(var + 1e-5)), "_rstd"
        bn._affine_scale(c, d, out[0])
        assert np.array_equal(out[0], c * d), "_affine_scale"
        bn._elemt_scales(c, d, a, b, *out[:3])
        assert np.array_equal(out[1], -c * b * (c * d)) and np.array_equal(out[2], -a * (c * d)), "_elemt_scales"
        bn._reduced_means(a, b, c, np.float32(count), *out)
        assert np.array_equal(out[1], b * c) and np.array_equal(out[3], (b * c) / np.float32(count)), "_reduced_means"
        print("same values")
    """)
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                            timeout=600)
    assert result.returncode == 0 and "same values" in result.stdout, result.stderr
