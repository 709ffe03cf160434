"""The CUDA matmul (kernel wrappers and the backend's numpy-semantics ``matmul``) in Numba's CUDA
simulator, against numpy float64 references.

Run by ``test_cuda_simulator.py`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (or directly:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_matmul.py``). A block computes a 64 x 64
output tile in steps of 16 along K, so the shapes cross those edges while staying at a few blocks
(the simulator runs one Python thread per CUDA thread). Views (transposes, slices, broadcasts,
negative strides) are built in numpy and mapped onto the device with the same strides and offset.
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

from numba import cuda

from host_arrays import OnDevice, to_device

from tinynorm.backends.cuda import linalg
from tinynorm.backends.cuda.array import CudaArray
from tinynorm.kernels.cuda import matmul

kernels = OnDevice(matmul)  # the wrappers take CudaArrays; the tests write host arrays

# Error bound per output element, relative to (|a| @ |b|): summation error over K <= 70 terms in the
# accumulator, plus the rounding of the result to its dtype.
TOLERANCE = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-13}


def operand(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def assert_product(actual, a, b):
    """``actual`` (host) equals ``a @ b`` computed in float64, within the dtype's bound."""
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert actual.shape == expected.shape
    assert actual.dtype == np.result_type(a.dtype, b.dtype)
    bound = TOLERANCE[actual.dtype.type] * np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    error = np.abs(actual.astype(np.float64) - expected)
    assert np.all(error <= bound), f"max error {error.max()}, max allowed {bound.min()}..{bound.max()}"


def device_view(view: np.ndarray) -> CudaArray:
    """A CudaArray with ``view``'s shape, strides and offset (in elements) over a device copy of the
    memory ``view`` looks at (its base, or itself)."""
    base = view if view.base is None else view.base
    while base.base is not None:
        base = base.base
    itemsize = view.itemsize
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // itemsize
    storage = to_device(np.ascontiguousarray(base).reshape(-1))
    return CudaArray(storage.storage, view.shape, tuple(s // itemsize for s in view.strides), offset)


def to_host(array: CudaArray) -> np.ndarray:
    return array.to_numpy()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# ----------------------------------------------------------------------------- kernel wrapper
@pytest.mark.parametrize("m, k, n", [(70, 35, 67), (3, 17, 65), (1, 1, 1)])
def test_kernel_crosses_tile_edges(rng, m, k, n):
    a, b = operand(rng, (m, k)), operand(rng, (k, n))
    assert_product(kernels.matmul(a, b).to_numpy(), a, b)


@pytest.mark.parametrize("a_shape, b_shape", [((2, 5, 9), (9, 6)), ((5, 9), (3, 9, 6)), ((1, 5, 9), (2, 9, 6)),
                                              ((2, 5, 9), (2, 9, 6))])
def test_kernel_batches_and_broadcasts(rng, a_shape, b_shape):
    a, b = operand(rng, a_shape), operand(rng, b_shape)
    assert_product(kernels.matmul(a, b).to_numpy(), a, b)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_kernel_dtypes(rng, dtype):
    """float16 sums in float32 (within float16 rounding of the result); float64 stays float64."""
    a, b = operand(rng, (6, 40), dtype), operand(rng, (40, 7), dtype)
    assert_product(kernels.matmul(a, b).to_numpy(), a, b)


def test_kernel_writes_into_out_and_is_deterministic(rng):
    a, b = operand(rng, (2, 9, 20)), operand(rng, (2, 20, 5))
    out = CudaArray.empty((2, 9, 5), np.float32)
    assert kernels.matmul(a, b, out=out) is out
    first = out.to_numpy()
    assert_product(first, a, b)
    assert np.array_equal(kernels.matmul(a, b).to_numpy(), first)


@pytest.mark.parametrize("a_shape, b_shape, error, match", [
    ((4, 3), (4, 2), ValueError, "a \\(4, 3\\) has 3 columns but b \\(4, 2\\) has 4 rows"),
    ((2, 4, 3), (3, 3, 2), ValueError, "batch sizes 2 .* and 3"),
    ((3,), (3, 2), ValueError, "a must be 2-D .* or 3-D .*, got shape \\(3,\\)"),
])
def test_kernel_rejects_bad_shapes(a_shape, b_shape, error, match):
    with pytest.raises(error, match=match):
        kernels.matmul(np.zeros(a_shape, np.float32), np.zeros(b_shape, np.float32))


def test_kernel_rejects_bad_out_and_dtype():
    a, b = np.zeros((4, 3), np.float32), np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match="out must be an array of shape \\(4, 2\\) and dtype float32"):
        kernels.matmul(a, b, out=CudaArray.empty((4, 3), np.float32))
    with pytest.raises(TypeError, match="dtype complex64 is not supported"):
        kernels.matmul(a.astype(np.complex64), b.astype(np.complex64))


def test_kernel_copies_strided_inputs_to_c_order():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    b = np.arange(6, dtype=np.float32).reshape(3, 2)
    got = kernels.matmul(to_device(a)[:, ::2], b)
    assert_product(got.to_numpy(), np.ascontiguousarray(a[:, ::2]), b)


def test_strided_entry_checks_its_views():
    """``matmul_strided`` refuses a view that would read past the end of its storage."""
    storage = to_device(np.zeros(12, np.float32))
    out = CudaArray.empty((1, 4, 4), np.float32)
    with pytest.raises(ValueError, match="reads past the end of its storage of 12 elements"):
        kernels.matmul_strided(storage, (0, 3, 1), storage, (0, 5, 1), (1,), 3, out)  # B row 2 ends at 13


# ------------------------------------------------------------------- backend (numpy semantics)
@pytest.fixture(autouse=True)
def gemm_batches(monkeypatch):
    """The backend launches the GEMM without ``matmul_strided``'s checks, because its views are valid
    by construction; here every backend product goes through those checks, so each test below also
    proves that claim for its case. Returns the batch shapes launched."""
    batches = []

    def checked(a, a_strides, b, b_strides, batch_shape, inner, out, bias=None):
        batches.append(batch_shape)
        kernels.matmul_strided(a, a_strides, b, b_strides, batch_shape, inner, out, bias)

    monkeypatch.setattr(linalg, "gemm", checked)
    return batches


@pytest.mark.parametrize("a_shape, b_shape", [
    ((9,), (9,)), ((9,), (9, 5)), ((4, 9), (9,)), ((9,), (2, 9, 5)), ((2, 4, 9), (9,)),
])
def test_vectors_are_rows_and_columns(rng, a_shape, b_shape):
    a, b = operand(rng, a_shape), operand(rng, b_shape)
    result = linalg.matmul(device_view(a), device_view(b))
    assert result.shape == np.matmul(a, b).shape
    assert_product(to_host(result), a, b)


@pytest.mark.parametrize("a_shape, b_shape", [((2, 1, 3, 9), (3, 9, 4)), ((1, 3, 9), (2, 1, 9, 4))])
def test_batch_dims_broadcast(rng, a_shape, b_shape):
    a, b = operand(rng, a_shape), operand(rng, b_shape)
    assert_product(to_host(linalg.matmul(device_view(a), device_view(b))), a, b)


def test_transposed_and_sliced_views_are_read_in_place(rng):
    """``x @ w.T`` (swapped strides) across tile edges, a transposed batch, an offset slice and a
    reversed view (copied: the kernel reads forwards)."""
    x, w = operand(rng, (70, 20)), operand(rng, (67, 20))
    assert_product(to_host(linalg.matmul(device_view(x), device_view(w.T))), x, w.T)
    a, b = operand(rng, (2, 20, 5)), operand(rng, (2, 6, 20))
    a_t, b_t = a.transpose(0, 2, 1), b.transpose(0, 2, 1)
    assert_product(to_host(linalg.matmul(device_view(a_t), device_view(b_t))), a_t, b_t)
    big = operand(rng, (9, 30))
    a_s, b_r = big[2:7, 3:23], operand(rng, (20, 4))[::-1]
    assert_product(to_host(linalg.matmul(device_view(a_s), device_view(b_r))), a_s, b_r)


def test_batch_times_matrix_is_one_product(rng, gemm_batches):
    """(B, M, K) @ (K, N) with a contiguous A runs as a single (B*M, K) @ (K, N) GEMM."""
    a, b = operand(rng, (2, 3, 7, 9)), operand(rng, (9, 5))
    assert_product(to_host(linalg.matmul(device_view(a), device_view(b))), a, b)
    a_t = operand(rng, (2, 9, 7)).transpose(0, 2, 1)  # rows do not follow the batch: a batched GEMM
    assert_product(to_host(linalg.matmul(device_view(a_t), device_view(b))), a_t, b)
    assert gemm_batches == [(1,), (2,)]


@pytest.mark.parametrize("a_dtype, b_dtype", [(np.float32, np.float64), (np.float16, np.float16)])
def test_result_dtype_follows_numpy(rng, a_dtype, b_dtype):
    a, b = operand(rng, (5, 18), a_dtype), operand(rng, (18, 3), b_dtype)
    assert_product(to_host(linalg.matmul(device_view(a), device_view(b))), a, b)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_integer_and_bool_products_are_exact(rng, dtype):
    a = rng.integers(-3, 4, (4, 11)).astype(dtype)
    b = rng.integers(-3, 4, (11, 5)).astype(dtype)
    result = to_host(linalg.matmul(device_view(a), device_view(b)))
    expected = np.matmul(a, b)
    assert result.dtype == expected.dtype and np.array_equal(result, expected)


@pytest.mark.parametrize("a_shape, b_shape", [((3, 0), (0, 4)), ((0, 5), (5, 4)), ((2, 0, 3, 5), (5, 2))])
def test_empty_operands(a_shape, b_shape):
    a, b = np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)
    result = linalg.matmul(device_view(a), device_view(b))
    assert result.shape == np.matmul(a, b).shape
    assert np.array_equal(to_host(result), np.matmul(a, b))


@pytest.mark.parametrize("a_shape, b_shape, error, match", [
    ((4, 3), (4, 2), ValueError, "a \\(4, 3\\) has 3 columns but b \\(4, 2\\) has 4 rows"),
    ((2, 4, 3), (3, 3, 2), ValueError, "batch dims of a \\(2, 4, 3\\) and b \\(3, 3, 2\\) do not broadcast"),
    ((), (3,), ValueError, "a must have at least one dimension"),
])
def test_backend_rejects_bad_shapes(a_shape, b_shape, error, match):
    a, b = np.zeros(a_shape, np.float32), np.zeros(b_shape, np.float32)
    with pytest.raises(error, match=match):
        linalg.matmul(device_view(a), device_view(b))


def test_backend_rejects_host_arrays():
    b = device_view(np.zeros((3, 2), np.float32))
    with pytest.raises(TypeError, match="a must be a CudaArray, got ndarray"):
        linalg.matmul(np.zeros((4, 3), np.float32), b)


# ------------------------------------------------------------------- linear: the bias in the GEMM
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_linear_adds_the_bias_in_one_launch(rng, monkeypatch, dtype):
    """``x @ w.T + b`` (F.linear) is one GEMM launch: the bias is added to the float32 sums before the
    result is rounded to its dtype, for every row of a batched input and across tile edges."""
    x, w, b = operand(rng, (2, 70, 20), dtype), operand(rng, (67, 20), dtype), operand(rng, 67, dtype)
    launches, real = [], matmul.launch
    monkeypatch.setattr(matmul, "launch", lambda *args: (launches.append(args[0]), real(*args)))
    result = to_host(linalg.linear(device_view(x), device_view(w), device_view(b)))
    assert len(launches) == 1
    expected = np.matmul(x.astype(np.float64), w.T.astype(np.float64)) + b
    bound = TOLERANCE[dtype] * (np.matmul(np.abs(x).astype(np.float64), np.abs(w.T).astype(np.float64)) + np.abs(b))
    assert result.dtype == dtype and result.shape == (2, 70, 67)
    error = np.abs(result - expected)
    assert np.all(error <= bound), f"max error {error.max()}"


def test_linear_with_a_bias_of_another_dtype_follows_numpy(rng):
    """A float64 bias on a float32 product is a separate add, promoted as numpy promotes ``out + bias``."""
    x, w, b = operand(rng, (5, 18)), operand(rng, (3, 18)), operand(rng, 3, np.float64)
    result = to_host(linalg.linear(device_view(x), device_view(w), device_view(b)))
    assert result.dtype == np.float64
    np.testing.assert_allclose(result, np.matmul(x, w.T).astype(np.float64) + b, rtol=1e-5, atol=1e-5)


def test_gemm_bias_must_match_the_output_columns():
    a = to_device(np.ones(16, np.float32))  # A (3, 4) and B (4, 4) read the same storage
    out = CudaArray.empty((1, 3, 4), np.float32)
    with pytest.raises(ValueError, match=r"bias must have shape \(4,\), got \(3,\)"):
        kernels.matmul_strided(a, (0, 4, 1), a, (0, 4, 1), (1,), 4, out, to_device(np.ones(3, np.float32)))
