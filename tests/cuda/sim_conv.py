"""Convolution and pooling on the CUDA backend, run in Numba's CUDA simulator, against the CPU backend.

Run by test_cuda_simulator.py in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (or directly:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_conv.py``). The simulator runs one Python
thread per CUDA thread and a GEMM launch takes a second or two, so shapes are small (N=2, C=3, 5x5 to
7x7) and the convolution cases are few. Gradients use a random upstream gradient.
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

from numba import cuda

from host_arrays import OnDevice, to_device

from tinynorm.backends import cpu
from tinynorm.backends.cuda import conv as backend
from tinynorm.backends.cuda.array import CudaArray
from tinynorm.kernels.cpu import conv as cpu_conv
from tinynorm.kernels.cuda import conv

TOLERANCE = {np.float32: 1e-5, np.float64: 1e-12}

kernels = OnDevice(conv)  # the wrappers take CudaArrays; the tests write host arrays


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def device(array: np.ndarray, transposed: bool = False) -> CudaArray:
    """``array`` on the device; with ``transposed``, as a non-contiguous view with the same values
    (storage holding the last two axes swapped, read back through swapped strides)."""
    if not transposed:
        return CudaArray.from_host(array)
    storage = CudaArray.from_host(np.swapaxes(array, -1, -2))
    strides = storage.strides[:-2] + (storage.strides[-1], storage.strides[-2])
    view = CudaArray(storage.storage, array.shape, strides)
    assert not view.is_contiguous()
    return view


def host(a: CudaArray) -> np.ndarray:
    return a.to_numpy()


def assert_close(actual: CudaArray, expected: np.ndarray) -> None:
    """Same shape and dtype as the CPU result, values within the dtype's tolerance of its scale."""
    assert isinstance(actual, CudaArray)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    tol = TOLERANCE[expected.dtype.type]
    np.testing.assert_allclose(host(actual), expected, rtol=tol, atol=tol * max(1.0, np.abs(expected).max(initial=0)))


def random(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


# --- im2col / col2im -----------------------------------------------------------------------------------

# (input shape, kernel, stride, padding): square and rectangular windows, strides and paddings.
WINDOW_CASES = [((2, 3, 5, 5), 3, 1, 0), ((2, 3, 7, 6), 3, 2, 1), ((2, 3, 6, 7), (2, 3), (1, 2), (1, 0)),
                ((1, 2, 5, 5), 5, 1, 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, kernel, stride, padding", WINDOW_CASES)
def test_im2col_and_col2im_match_cpu(rng, shape, kernel, stride, padding, dtype):
    x = random(rng, shape, dtype)
    cols = kernels.im2col(to_device(x), kernel, stride, padding).to_numpy()
    np.testing.assert_array_equal(cols, cpu_conv.im2col(x, kernel, stride, padding))
    dcols = random(rng, cols.shape, dtype)
    dx = kernels.col2im(to_device(dcols), shape, kernel, stride, padding).to_numpy()
    expected = cpu_conv.col2im(dcols, shape, kernel, stride, padding)
    assert dx.dtype == dtype
    np.testing.assert_allclose(dx, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def test_batch_and_channel_sums(rng):
    a = random(rng, (3, 4, 37), np.float64)
    np.testing.assert_allclose(kernels.sum_batches(to_device(a)).to_numpy(), a.sum(axis=0), rtol=1e-13)
    # more terms per channel than threads in a block: every thread adds several, then the tree
    b = random(rng, (3, 2, 300), np.float32)
    np.testing.assert_allclose(kernels.channel_sums(to_device(b)).to_numpy(),
                               b.astype(np.float64).sum(axis=(0, 2)), rtol=1e-5)


# --- conv2d --------------------------------------------------------------------------------------------

# (dtype, H, W, stride, padding, with bias, needs_input_grad, x as a non-contiguous view)
CONV_CASES = [
    (np.float32, 7, 7, 1, 0, True, True, False),
    (np.float32, 6, 5, 2, 1, True, True, True),
    (np.float64, 5, 7, (1, 2), (1, 0), True, True, False),
    (np.float64, 6, 6, 2, 0, False, False, False),
]


@pytest.mark.parametrize("dtype, h, w, stride, padding, with_bias, need_x, transposed", CONV_CASES)
def test_conv2d_matches_cpu_backend(rng, dtype, h, w, stride, padding, with_bias, need_x, transposed):
    x, weight = random(rng, (2, 3, h, w), dtype), random(rng, (4, 3, 3, 3), dtype)
    bias = random(rng, 4, dtype) if with_bias else None
    y_ref, saved_ref = cpu.conv2d_forward(x, weight, bias, stride, padding)  # each backend saves its own layout
    y, cols = backend.conv2d_forward(device(x, transposed), device(weight),
                                     None if bias is None else device(bias), stride, padding)
    assert_close(y, y_ref)
    assert_close(cols, cpu_conv.im2col(x, 3, stride, padding))

    dy = random(rng, y_ref.shape, dtype)
    dx_ref, dweight_ref, dbias_ref = cpu.conv2d_backward(dy, saved_ref, x.shape, weight, stride, padding,
                                                         needs_input_grad=need_x)
    dx, dweight, dbias = backend.conv2d_backward(device(dy), cols, x.shape, device(weight), stride, padding, need_x)
    assert backend.conv2d_backward(device(dy), cols, x.shape, device(weight), stride, padding, need_x,
                                   needs_bias_grad=False)[2] is None
    if need_x:
        assert_close(dx, dx_ref)
    else:
        assert dx is None
    assert_close(dweight, dweight_ref)
    assert_close(dbias, dbias_ref)


def test_conv2d_of_an_empty_batch(rng):
    x, weight = np.zeros((0, 3, 5, 5), np.float32), random(rng, (4, 3, 3, 3), np.float32)
    y, cols = backend.conv2d_forward(device(x), device(weight), device(np.ones(4, np.float32)), 1, 1)
    assert y.shape == (0, 4, 5, 5) and cols.shape == (0, 27, 25)
    dy = device(np.zeros(y.shape, np.float32))
    dx, dweight, dbias = backend.conv2d_backward(dy, cols, x.shape, device(weight), 1, 1)
    assert dx.shape == x.shape
    np.testing.assert_array_equal(host(dweight), np.zeros(weight.shape))
    np.testing.assert_array_equal(host(dbias), np.zeros(4))


# --- pooling -------------------------------------------------------------------------------------------

# (kernel, stride, padding): default stride (= kernel), overlapping windows, padding, rectangles.
POOL_CASES = [(2, None, 0), (3, 1, 1), (3, 2, 1), ((2, 3), (2, 1), (1, 0))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel, stride, padding", POOL_CASES)
def test_max_pool_matches_cpu_backend(rng, kernel, stride, padding, dtype):
    # Small integers: many ties, where the first maximum must win; one NaN, which wins and propagates.
    x = rng.integers(-2, 3, size=(2, 3, 6, 7)).astype(dtype)
    x[1, 2, 3, 3] = np.nan
    y_ref, argmax_ref = cpu.max_pool2d_forward(x, kernel, stride, padding)
    y, argmax = backend.max_pool2d_forward(device(x), kernel, stride, padding)
    assert y.dtype == dtype and argmax.dtype == np.int64
    np.testing.assert_array_equal(host(y), y_ref)
    np.testing.assert_array_equal(host(argmax), argmax_ref)

    dy = random(rng, y_ref.shape, dtype)
    expected = cpu.max_pool2d_backward(dy, argmax_ref, x.shape)
    assert_close(backend.max_pool2d_backward(device(dy), argmax, x.shape), expected)
    assert_close(backend.max_pool2d_backward(device(dy), argmax, x.shape, checked=True), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel, stride, padding", POOL_CASES)
def test_avg_pool_matches_cpu_backend(rng, kernel, stride, padding, dtype):
    x = random(rng, (2, 3, 7, 6), dtype)
    y_ref = cpu.avg_pool2d_forward(x, kernel, stride, padding)
    assert_close(backend.avg_pool2d_forward(device(x, transposed=True), kernel, stride, padding), y_ref)
    dy = random(rng, y_ref.shape, dtype)
    assert_close(backend.avg_pool2d_backward(device(dy), x.shape, kernel, stride, padding),
                 cpu.avg_pool2d_backward(dy, x.shape, kernel, stride, padding))


# --- argument errors -----------------------------------------------------------------------------------


def _bad_calls():
    """(name, call) pairs; each call takes the backend (cpu or cuda) and an array maker, and must fail
    the same way on both."""
    x = np.zeros((2, 3, 5, 6), np.float32)
    w = np.zeros((4, 3, 3, 3), np.float32)
    y_shape, cols_shape = (2, 4, 3, 4), (2, 27, 12)
    return [
        ("x not 4-D", lambda b, d: b.conv2d_forward(d(x[0]), d(w))),
        ("x not float", lambda b, d: b.avg_pool2d_forward(d(x.astype(np.int64)), 2)),
        ("channel mismatch", lambda b, d: b.conv2d_forward(d(x), d(w[:, :2]))),
        ("weight dtype", lambda b, d: b.conv2d_forward(d(x), d(w.astype(np.float64)))),
        ("bias shape", lambda b, d: b.conv2d_forward(d(x), d(w), d(np.zeros(3, np.float32)))),
        ("bias dtype", lambda b, d: b.conv2d_forward(d(x), d(w), d(np.zeros(4)))),
        ("kernel too large", lambda b, d: b.conv2d_forward(d(x), d(np.zeros((4, 3, 6, 3), np.float32)))),
        ("bad stride", lambda b, d: b.conv2d_forward(d(x), d(w), None, 0)),
        ("bad padding type", lambda b, d: b.max_pool2d_forward(d(x), 2, 2, 1.5)),
        ("pool padding over half", lambda b, d: b.max_pool2d_forward(d(x), 2, 1, 2)),
        ("dy shape", lambda b, d: b.conv2d_backward(d(np.zeros((2, 4, 3, 3), np.float32)),
                                                    d(np.zeros(cols_shape, np.float32)), x.shape, d(w))),
        ("x_shape not 4-D", lambda b, d: b.avg_pool2d_backward(d(np.zeros(y_shape, np.float32)), (2, 3, 5), 2)),
        ("argmax out of range", lambda b, d: b.max_pool2d_backward(
            d(np.zeros((2, 3, 2, 3), np.float32)), d(np.full((2, 3, 2, 3), 30)), x.shape)),
    ]


@pytest.mark.parametrize("name, call", _bad_calls(), ids=[name for name, _ in _bad_calls()])
def test_errors_match_the_cpu_backend(name, call):
    with pytest.raises((TypeError, ValueError)) as cpu_error:
        call(cpu, lambda a: a)
    with pytest.raises(cpu_error.type) as cuda_error:
        call(backend, device)
    assert str(cuda_error.value) == str(cpu_error.value)


def test_kernels_copy_strided_inputs_to_c_order(rng):
    """The kernels index their arrays as C-contiguous: a strided view is copied first, as on the CPU."""
    x = rng.standard_normal((1, 2, 5, 10)).astype(np.float32)
    weight = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    strided = to_device(x)[..., ::2]
    assert not strided.is_contiguous()
    got, _ = kernels.conv2d_forward(strided, weight, None, 1, 1)
    want, _ = kernels.conv2d_forward(np.ascontiguousarray(x[..., ::2]), weight, None, 1, 1)
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())


def test_backward_refuses_columns_of_another_shape():
    """The CUDA backend saves im2col's columns (the CPU its own grid layout, checked in tests/kernels)."""
    dy, w = np.zeros((2, 4, 3, 4), np.float32), np.zeros((4, 3, 3, 3), np.float32)
    with pytest.raises(ValueError, match=r"cols must have shape \(2, 27, 12\) for input shape \(2, 3, 5, 6\)"):
        backend.conv2d_backward(device(dy), device(np.zeros((2, 27, 11), np.float32)), (2, 3, 5, 6), device(w))


def test_inputs_must_be_cuda_arrays():
    with pytest.raises(TypeError, match="x must be a CudaArray, got ndarray"):
        backend.max_pool2d_forward(np.zeros((1, 1, 4, 4), np.float32), 2)
    with pytest.raises(ValueError, match="argmax must be an integer"):
        backend.max_pool2d_backward(device(np.zeros((1, 1, 2, 2), np.float32)),
                                    device(np.zeros((1, 1, 2, 2), np.float32)), (1, 1, 4, 4))



# --- the op: what the CUDA kernels take, and clear refusals of the rest ---------------------------------
def test_conv_op_on_cuda_matches_cpu_for_the_geometries_it_supports(rng):
    import tinynorm as tn
    import tinynorm.nn.functional as F

    x1, w1 = random(rng, (2, 3, 9), np.float64), random(rng, (4, 3, 3), np.float64)
    x2, w2 = random(rng, (2, 3, 5, 6), np.float64), random(rng, (4, 3, 3, 3), np.float64)
    for fn, x, w in ((lambda a, b: F.conv1d(a, b, stride=2, padding=1), x1, w1),
                     (lambda a, b: F.conv2d(a, b, padding="same"), x2, w2)):
        expected = fn(tn.tensor(x), tn.tensor(w)).numpy()
        got = fn(tn.tensor(x, device="cuda"), tn.tensor(w, device="cuda"))
        assert got.device == "cuda"
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_conv_op_on_cuda_names_what_its_kernels_lack():
    import tinynorm as tn
    import tinynorm.nn.functional as F

    x, w = tn.zeros(1, 4, 6, 6, device="cuda"), tn.zeros(4, 2, 3, 3, device="cuda")
    with pytest.raises(RuntimeError, match=r"conv2d on the cuda device supports .*got dilation=\(2, 2\), groups=2"):
        F.conv2d(x, w, dilation=2, groups=2)
    with pytest.raises(RuntimeError, match=r"asymmetric padding \(0, 1, 0, 1\).*Run this convolution on the CPU"):
        F.conv2d(x, tn.zeros(4, 4, 2, 2, device="cuda"), padding="same")
