"""The ReLU kernels against numpy's formulas of PyTorch's rule, on the serial and the parallel path,
for every memory order and dtype; and their errors."""
import numpy as np
import pytest

from helpers import assert_same_values
from tinynorm.kernels.cpu import _config
from tinynorm.kernels.cpu.relu import relu, relu_backward

SPECIAL = np.array([np.nan, -0.0, 0.0, -1.0, 2.0, np.inf, -np.inf, -3.0, 1e-30, -1e-30])


def reference(x):
    return np.where(x < 0, np.zeros((), x.dtype), x)


def reference_backward(grad, out):
    return np.where(out <= 0, np.zeros((), grad.dtype), grad)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [SPECIAL.size, 3 * 32_768 + 7])  # serial; parallel (the conftest's threshold)
def test_relu_and_its_gradient_follow_pytorchs_rule_at_every_value(dtype, size):
    rng = np.random.default_rng(size)
    x = np.resize(SPECIAL, size).astype(dtype) * np.where(rng.random(size) < 0.5, 1, rng.standard_normal(size))
    grad = np.resize(np.array([1.0, np.inf, np.nan, -2.0, 0.5]), size).astype(dtype)
    assert (size >= _config.PARALLEL_THRESHOLD) == (size > SPECIAL.size)
    out = relu(x)
    assert_same_values(out, reference(x))
    assert_same_values(relu_backward(grad, out), reference_backward(grad, out))


def test_parallel_results_equal_serial_results_chunk_by_chunk():
    x = np.random.default_rng(0).standard_normal((200, 400)).astype(np.float32)
    grad = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    assert x.size >= _config.PARALLEL_THRESHOLD
    rows = [slice(i, i + 20) for i in range(0, 200, 20)]  # below the threshold each
    assert_same_values(relu(x), np.concatenate([relu(x[r]) for r in rows]))
    out = relu(x)
    assert_same_values(relu_backward(grad, out), np.concatenate([relu_backward(grad[r], out[r]) for r in rows]))


def test_memory_order_is_kept_and_strided_views_take_the_numpy_path():
    x = np.random.default_rng(2).standard_normal((6, 5, 4))
    fortran = np.asfortranarray(x)
    out = relu(fortran)
    assert out.flags.f_contiguous and not out.flags.c_contiguous
    assert_same_values(out, reference(x))
    assert_same_values(relu_backward(fortran, out), reference_backward(x, reference(x)))
    assert_same_values(relu_backward(x, out), reference_backward(x, reference(x)))  # grad and out in two orders
    broadcast = np.broadcast_to(x[:, :, :1], x.shape)  # a gradient as a mean's backward gives it
    assert_same_values(relu_backward(broadcast, out), reference_backward(np.ascontiguousarray(broadcast), reference(x)))
    view = x[:, ::2].transpose(2, 0, 1)
    assert_same_values(relu(view), reference(view))
    assert relu(view).strides == np.maximum(view, 0).strides  # numpy's order K, as for every other op


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.int64, np.uint8])
def test_other_dtypes_keep_their_dtype(dtype):
    x = np.array([-3, -1, 0, 2, 5], dtype=np.int64).astype(dtype)
    assert_same_values(relu(x), reference(x))
    grad = np.arange(5).astype(dtype)
    assert_same_values(relu_backward(grad, relu(x)), reference_backward(grad, relu(x)))


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="x must be a numpy.ndarray, got list"):
        relu([1.0, -1.0])
    with pytest.raises(TypeError, match="grad must be a numpy.ndarray"):
        relu_backward(1.0, np.ones(2))
    with pytest.raises(ValueError, match=r"grad must have out's shape \(3,\), got \(2,\)"):
        relu_backward(np.ones(2), np.ones(3))
