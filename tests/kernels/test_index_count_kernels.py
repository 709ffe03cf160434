"""count_indices (the compiled check of an op's indices) against a count over Python ints, and against
its numpy form, for every integer dtype, ignore indices in and out of the dtype's range, and layouts."""
import numba
import numpy as np
import pytest

from tinynorm.kernels.cpu import index_count
from tinynorm.kernels.cpu.index_count import _count, count_indices, count_indices_numpy

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def python_count(indices, upper, ignore_index):
    """(outside, ignored) over the entries as Python ints: no dtype, no promotion rules."""
    values = [int(v) for v in np.asarray(indices).reshape(-1).tolist()]
    ignored = sum(v == ignore_index for v in values) if ignore_index is not None else 0
    outside = sum((v < 0 or v >= upper) and v != ignore_index for v in values)
    return outside, ignored


def sample(dtype, shape, rng):
    """Entries across the dtype's whole range, with many small ones (valid classes, -100, -1)."""
    info = np.iinfo(dtype)
    wide = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    small = rng.integers(max(info.min, -120), min(info.max, 20), shape, endpoint=True).astype(dtype)
    return np.where(rng.random(shape) < 0.7, small, wide)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("upper", [0, 1, 10, 2 ** 40])
@pytest.mark.parametrize("ignore_index", [None, -100, 0, 3, 300, -1, 2 ** 63, 2 ** 70, -2 ** 70])
def test_counts_equal_a_count_over_python_ints(dtype, upper, ignore_index):
    rng = np.random.default_rng(upper + (0 if ignore_index is None else ignore_index % 1000))
    indices = sample(dtype, (257,), rng)
    expected = python_count(indices, upper, ignore_index)
    assert count_indices(indices, upper, ignore_index) == expected
    assert count_indices_numpy(indices, upper, ignore_index) == expected


@pytest.mark.parametrize("value, ignore_index", [
    (2 ** 64 - 100, -100), (2 ** 63 + 3, 3), (2 ** 64 - 1, -1),  # as an int64 its bits would read -100, 3, -1
    (2 ** 62, 2 ** 62 + 1),  # in float64 (Numba's uint64-with-int64 comparison) the two are equal
])
def test_a_uint64_entry_equals_only_its_own_value(value, ignore_index):
    indices = np.array([value, 1], np.uint64)
    assert count_indices(indices, 10, ignore_index) == (1, 0)


@pytest.mark.parametrize("upper, ignore_index", [
    (2 ** 63 - 1, None), (2 ** 63 - 1, 2 ** 63 - 1), (2 ** 63 - 1, -2 ** 63),  # the compiled pass's limits
    (2 ** 63, None), (2 ** 63, -2 ** 63 - 1), (2 ** 63 - 1, 2 ** 63),  # beyond them
])
def test_bounds_at_the_limits_of_int64(upper, ignore_index):
    info = np.iinfo(np.int64)
    indices = np.array([info.max, info.max - 1, info.min, 0, -1])
    assert count_indices(indices, upper, ignore_index) == python_count(indices, upper, ignore_index)


@pytest.mark.parametrize("dtype", [">i8", ">i4", ">u2"])
def test_big_endian_indices_count_as_numpy_does(dtype):
    indices = np.array([1, 300, 7, 9], dtype)
    assert count_indices(indices, 8, 7) == python_count(indices, 8, 7) == (2, 1)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32])
def test_the_compiled_pass_runs_for_the_loop_dtypes(dtype):
    indices = np.array([0, 2, 5], dtype)
    assert count_indices(indices, 2, 5) == (1, 1)
    assert any(signature[0].dtype == numba.from_dtype(np.dtype(dtype)) for signature in _count.signatures)


@pytest.mark.parametrize("make", [
    lambda a: a[::3],  # strided
    lambda a: a.reshape(4, 25),  # 2-D
    lambda a: a.reshape(4, 25).T,  # Fortran order
    lambda a: a[:0],  # empty
    lambda a: a[7].reshape(()),  # 0-d
])
def test_layouts(make):
    base = sample(np.int64, (100,), np.random.default_rng(1))
    indices = make(base)
    assert count_indices(indices, 10, -100) == python_count(indices, 10, -100)


@pytest.mark.parametrize("upper, ignore_index", [
    (np.int64(10), np.int64(-100)),  # numpy integers take the compiled pass too
    (np.uint64(10), np.uint64(3)),
    (10, True),  # a bool ignore index keeps numpy's comparison (True == 1)
    (True, None),
])
def test_numpy_integer_and_bool_arguments_count_as_numpy_does(upper, ignore_index):
    indices = np.array([-100, 0, 1, 3, 9, 10, 11, -1])
    assert count_indices(indices, upper, ignore_index) == count_indices_numpy(indices, upper, ignore_index)


def test_a_subclass_keeps_numpy_form(monkeypatch):
    class Marked(np.ndarray):
        pass

    def compiled_pass(*args):
        raise AssertionError("a subclass took the compiled pass")

    monkeypatch.setattr(index_count, "_count", compiled_pass)
    assert count_indices(np.array([0, 4, -100]).view(Marked), 3, -100) == (1, 1)
    with pytest.raises(AssertionError, match="compiled pass"):  # the spy is in place
        count_indices(np.array([0, 4, -100]), 3, -100)
