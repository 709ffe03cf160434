"""The CUDA backend's reductions (sum, mean, amax, amin, argmax, argmin, unbroadcast) in Numba's CUDA
simulator, against numpy (float64 references for float sums).

Run by test_cuda_simulator.py in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``. The simulator runs
one Python thread per CUDA thread, so blocks are lowered to 32 threads (64 where a test needs a block
wider than a segment) and rows are split into segments from 40 columns on where a test needs the
two-pass path.
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

from numba import cuda

from host_arrays import to_device

from tinynorm.backends import cpu
from tinynorm.backends.cuda import reductions as backend
from tinynorm.backends.cuda.array import CudaArray
from tinynorm.kernels.cuda import reductions as kernels


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(kernels, "BLOCK_THREADS", 32)


@pytest.fixture
def split_rows(monkeypatch):
    """Rows of 40+ columns are reduced in segments of at least 40 columns, then a second pass."""
    monkeypatch.setattr(kernels, "MIN_SEGMENT_COLS", 40)


@pytest.fixture
def chunked_columns(monkeypatch):
    """Column sums split rows into chunks of at least 4 rows until 64 threads would run."""
    monkeypatch.setattr(kernels, "COLUMN_TARGET_THREADS", 64)
    monkeypatch.setattr(kernels, "MIN_CHUNK_ROWS", 4)


@pytest.fixture
def column_path(monkeypatch):
    """Counts the backend's column-sum calls and the strided copies of CudaArrays: ``{name: count}``."""
    from tinynorm.backends.cuda import array

    calls = {"column_sums": 0, "copy_strided": 0}

    def counted(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(backend, "column_sums", counted("column_sums", backend.column_sums))
    monkeypatch.setattr(array, "copy_strided", counted("copy_strided", array.copy_strided))
    return calls


def on_device(array: np.ndarray) -> CudaArray:
    return CudaArray.from_host(np.array(array, order="C"))  # ascontiguousarray makes 0-d 1-d


def host(array: CudaArray) -> np.ndarray:
    array = array.contiguous()
    return array.storage.to_numpy()[array.offset:array.offset + array.size].reshape(array.shape)


def strided_view(base: np.ndarray, shape, strides, offset=0) -> tuple[CudaArray, np.ndarray]:
    """The same non-contiguous view (strides and offset in elements) of ``base`` on both devices."""
    flat = np.ascontiguousarray(base).ravel()
    expected = np.lib.stride_tricks.as_strided(flat[offset:], shape, [s * flat.itemsize for s in strides])
    return CudaArray(to_device(flat).storage, shape, strides, offset), expected.copy()


def assert_result(actual: CudaArray, expected, dtype, rtol=0.0):
    """``actual`` is a CudaArray of numpy's shape and ``dtype`` whose values match ``expected``."""
    assert isinstance(actual, CudaArray)
    assert actual.shape == np.shape(expected) and actual.dtype == dtype, (actual.shape, actual.dtype)
    np.testing.assert_allclose(host(actual), expected, rtol=rtol, atol=rtol * max(1.0, np.abs(expected).max(initial=0)))


@pytest.mark.parametrize("axis, keepdims", [(None, False), (None, True), (0, True), (-1, False), ((0, 2), True),
                                            ((-1, 1), False)])
def test_float32_sum_mean_amax_amin_match_numpy(rng, axis, keepdims):
    """Rows of 4 to 240 columns: thread-per-row and block kernels, tuple and negative axes."""
    x = rng.standard_normal((4, 3, 20)).astype(np.float32)
    device = on_device(x)
    for name in ("sum", "mean", "amax", "amin"):
        expected = getattr(np, name)(x.astype(np.float64), axis=axis, keepdims=keepdims)
        assert_result(getattr(backend, name)(device, axis, keepdims), expected, np.float32, 1e-5)


def test_full_reductions_return_0d_arrays(rng):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    for name in ("sum", "mean", "amax", "amin", "argmax", "argmin"):
        result = getattr(backend, name)(on_device(x))
        assert isinstance(result, CudaArray) and result.shape == ()
        np.testing.assert_allclose(host(result), getattr(np, name)(x), rtol=1e-6)
    scalar = on_device(np.array(2.5, np.float32))  # a 0-d input reduces nothing
    assert_result(backend.sum(scalar, axis=0), 2.5, np.float32)
    assert_result(backend.amax(scalar, keepdims=True), 2.5, np.float32)


@pytest.mark.parametrize("threads", [32, 64])
def test_non_contiguous_views(rng, monkeypatch, threads):
    """A transposed slice with an offset, and a broadcast (stride 0); 64 threads > 40 columns."""
    monkeypatch.setattr(kernels, "BLOCK_THREADS", threads)
    base = rng.standard_normal((6, 50)).astype(np.float32)
    device, view = strided_view(base, (40, 3), (1, 100), offset=5)  # x[0::2, 5:45].T
    for axis in (0, 1, None):
        assert_result(backend.sum(device, axis), view.astype(np.float64).sum(axis=axis), np.float32, 1e-5)
        assert_result(backend.amin(device, axis), view.min(axis=axis), np.float32)
        assert_result(backend.argmax(device, axis), view.argmax(axis=axis), np.int64)
    device, view = strided_view(base[0], (3, 50), (0, 1))
    assert_result(backend.mean(device, axis=0), view.mean(axis=0), np.float32, 1e-6)
    assert_result(backend.amax(device, axis=1, keepdims=True), view.max(axis=1, keepdims=True), np.float32)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.int64])
def test_integer_and_bool_results_have_numpy_dtypes(rng, dtype):
    """Sums widen to int64 (uint64), means are float64, extremes keep the dtype: all exact."""
    x = rng.integers(0, 2 if dtype is np.bool_ else 100, (3, 40)).astype(dtype)
    device = on_device(x)
    for name in ("sum", "mean", "amax", "amin", "argmax", "argmin"):
        for axis in (None, 0, 1):  # 120, 3 and 40 columns
            expected = getattr(np, name)(x, axis=axis)
            assert_result(getattr(backend, name)(device, axis), expected, np.asarray(expected).dtype)


def test_float16_accumulates_in_float32_and_float64_stays_float64(rng):
    x16 = (rng.standard_normal((2, 300)) + 10).astype(np.float16)  # float16 running sums would lose ~1%
    expected = x16.astype(np.float64).sum(axis=1)
    assert_result(backend.sum(on_device(x16), axis=1), expected, np.float16, 1e-3)
    assert_result(backend.mean(on_device(x16), axis=1), expected / 300, np.float16, 1e-3)
    assert_result(backend.amax(on_device(x16), axis=1), x16.max(axis=1), np.float16)
    x64 = rng.standard_normal((3, 45))
    assert_result(backend.sum(on_device(x64), axis=1), x64.sum(axis=1), np.float64, 1e-13)
    assert_result(backend.sum(on_device(x64), axis=1, dtype=np.float32), x64.sum(axis=1), np.float32, 1e-5)


def test_ties_go_to_the_first_index(rng, split_rows):
    x = np.zeros((3, 120), np.float32)
    x[0, [7, 50, 90]] = 2.0  # the same maximum in three segments
    x[1, [100, 60]] = -1.0
    x[2] = 1.0
    for axis in (1, None):
        for name in ("argmax", "argmin"):
            assert_result(getattr(backend, name)(on_device(x), axis), getattr(np, name)(x, axis=axis), np.int64)
    small = np.array([[3, 1, 3, 1]], np.int32)  # the thread-per-row kernel
    assert_result(backend.argmax(on_device(small), 1), [0], np.int64)
    assert_result(backend.argmin(on_device(small), -1, keepdims=True), [[1]], np.int64)


@pytest.mark.parametrize("cols", [10, 120], ids=["thread-per-row", "two passes"])
def test_nan_wins_and_the_first_nan_is_found(rng, split_rows, cols):
    x = rng.standard_normal((3, cols)).astype(np.float32)
    x[0, [cols - 1, cols // 2]] = np.nan
    x[1, 3] = np.nan
    device = on_device(x)
    for name in ("argmax", "argmin"):
        assert_result(getattr(backend, name)(device, 1), getattr(np, name)(x, axis=1), np.int64)
        assert_result(getattr(backend, name)(device), getattr(np, name)(x), np.int64)
    for name in ("amax", "amin"):
        result = host(getattr(backend, name)(device, axis=1))
        np.testing.assert_array_equal(result, getattr(np, name)(x, axis=1))  # NaNs compare equal here


def test_two_pass_reductions_match_and_are_deterministic(rng, split_rows):
    """Two rows of 200 columns: five segments each, then a pass over the partials."""
    assert kernels._segments(2, 200) == (5, 40)
    x = rng.standard_normal((2, 200)).astype(np.float32)
    device = on_device(x)
    first = backend.sum(device, axis=1)
    assert_result(first, x.astype(np.float64).sum(axis=1), np.float32, 1e-5)
    np.testing.assert_array_equal(host(backend.sum(device, axis=1)), host(first))
    assert_result(backend.mean(device), x.astype(np.float64).mean(), np.float32, 1e-5)
    assert_result(backend.amin(device, axis=1), x.min(axis=1), np.float32)
    assert_result(backend.argmax(device), x.argmax(), np.int64)


def test_empty_reductions_follow_numpy():
    empty_rows = on_device(np.zeros((3, 0), np.float32))
    assert_result(backend.sum(empty_rows, axis=1), np.zeros(3), np.float32)
    assert_result(backend.sum(on_device(np.zeros((0, 2), np.int32))), 0, np.int64)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert np.isnan(host(backend.mean(empty_rows, axis=1))).all()
    assert_result(backend.amax(on_device(np.zeros((0, 3), np.float32)), axis=1), np.zeros(0), np.float32)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        backend.amax(empty_rows, axis=1)
    with pytest.raises(ValueError, match="attempt to get argmin of an empty sequence"):
        backend.argmin(empty_rows)


@pytest.mark.parametrize("shape", [(3, 1), (4,), (1, 3, 4), (2, 3, 4), ()])
def test_unbroadcast_matches_the_cpu_backend(rng, shape):
    grad = rng.standard_normal((2, 3, 4)).astype(np.float32)
    expected = cpu.unbroadcast(grad.astype(np.float64), shape)
    assert_result(backend.unbroadcast(on_device(grad), shape), expected, np.float32, 1e-6)


def test_bad_arguments_raise_clear_errors():
    x = on_device(np.zeros((2, 3), np.float32))
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds for array of dimension 2"):
        backend.sum(x, axis=2)
    with pytest.raises(ValueError, match=r"sum: duplicate value in axis, got \(1, -1\)"):
        backend.sum(x, axis=(1, -1))
    with pytest.raises(TypeError, match="mean: axis must be None, an int or a tuple of ints, got 1.0"):
        backend.mean(x, axis=1.0)
    with pytest.raises(TypeError, match=r"argmax: axis must be None or an int, got \(0,\)"):
        backend.argmax(x, axis=(0,))
    with pytest.raises(TypeError, match="amax: expected a CudaArray, got ndarray"):
        backend.amax(np.zeros(3))
    with pytest.raises(ValueError, match=r"unbroadcast: grad of shape \(2, 3\) cannot come from broadcasting "
                                         r"shape \(2,\)"):
        backend.unbroadcast(x, (2,))


@pytest.mark.parametrize("chunked", [False, True], ids=["single pass", "chunked"])
@pytest.mark.parametrize("shape, axis", [((37, 5), 0), ((6, 7, 3), (0, 1)), ((1, 40, 2), 1), ((9, 30), (0,))])
def test_leading_axis_sums_are_column_sums_without_a_copy(rng, monkeypatch, column_path, chunked, shape, axis):
    """Sums and means over the leading axes (size-1 kept axes aside) read the array in place."""
    if chunked:
        monkeypatch.setattr(kernels, "COLUMN_TARGET_THREADS", 64)
        monkeypatch.setattr(kernels, "MIN_CHUNK_ROWS", 4)
    x = rng.standard_normal(shape).astype(np.float32)
    device = on_device(x)
    for keepdims in (False, True):
        expected = x.astype(np.float64).sum(axis=axis, keepdims=keepdims)
        assert_result(backend.sum(device, axis, keepdims), expected, np.float32, 1e-5)
        assert_result(backend.mean(device, axis, keepdims), expected / (x.size // expected.size), np.float32, 1e-5)
    assert column_path == {"column_sums": 4, "copy_strided": 0}


def test_row_chunks_split_only_tall_narrow_arrays(chunked_columns):
    assert kernels._row_chunks(37, 5) == (8, 5)  # 13 chunks would fill 64 threads, 9 keep >= 4 rows: 8 of 5
    assert kernels._row_chunks(7, 5) == (1, 7)  # too few rows to split
    assert kernels._row_chunks(100, 64) == (1, 100)  # enough columns to fill the target
    assert kernels._row_chunks(40, 3) == (10, 4)


def test_chunked_column_sums_are_deterministic_and_take_several_passes(rng, chunked_columns):
    """200 rows of 3 columns: 20 chunks of 10 rows, then 5 chunks of 4 partials, then one of 5."""
    assert [kernels._row_chunks(rows, 3) for rows in (200, 20, 5)] == [(20, 10), (5, 4), (1, 5)]
    x = rng.standard_normal((200, 3)).astype(np.float32)
    device = on_device(x)
    first = host(backend.sum(device, axis=0))
    np.testing.assert_allclose(first, x.astype(np.float64).sum(axis=0), rtol=1e-5)
    for _ in range(2):
        np.testing.assert_array_equal(host(backend.sum(device, axis=0)), first)


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.uint8, np.bool_])
def test_column_sums_keep_numpy_dtypes_and_accumulators(rng, chunked_columns, column_path, dtype):
    """float16 adds in float32, float64 in float64, ints and bools in int64 (uint64): numpy's results."""
    if np.dtype(dtype).kind == "f":
        x = (rng.standard_normal((60, 4)) + 10).astype(dtype)  # float16 running sums would lose ~1%
    else:
        x = rng.integers(0, 2 if dtype is np.bool_ else 100, (60, 4)).astype(dtype)
    device = on_device(x)
    tolerance = {np.float16: 1e-3, np.float64: 1e-13}.get(dtype, 0.0)
    for name in ("sum", "mean"):
        expected = getattr(np, name)(x, axis=0, dtype=np.float64 if tolerance else None)
        result_dtype = dtype if tolerance else getattr(np, name)(x, axis=0).dtype
        assert_result(getattr(backend, name)(device, axis=0), expected, result_dtype, tolerance)
    assert column_path == {"column_sums": 2, "copy_strided": 0}


def test_other_layouts_keep_the_row_path(rng, column_path):
    """A trailing axis, a transposed view and a full reduction are not column sums."""
    x = rng.standard_normal((4, 6)).astype(np.float32)
    assert_result(backend.sum(on_device(x), axis=1), x.astype(np.float64).sum(axis=1), np.float32, 1e-5)
    assert_result(backend.sum(on_device(x)), x.astype(np.float64).sum(), np.float32, 1e-5)
    device, view = strided_view(x, (6, 4), (1, 6))  # x.T: axis 0 is not leading in memory
    assert_result(backend.sum(device, axis=0), view.astype(np.float64).sum(axis=0), np.float32, 1e-5)
    assert column_path["column_sums"] == 0
