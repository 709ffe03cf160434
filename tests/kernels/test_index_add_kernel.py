"""index_add_rows (rows added at integer indices) against numpy's np.add.at, bit for bit."""
import numpy as np
import pytest

from tinynorm.kernels.cpu.index_add import can_add_rows, index_add_rows


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("out_shape, ids_shape", [((7,), (20,)), ((7, 5), (4, 6)), ((3, 2, 4), (9,)), ((5, 3), ())])
def test_equals_numpy_add_at_with_repeated_and_negative_ids(dtype, out_shape, ids_shape):
    rng = np.random.default_rng(0)
    rows = out_shape[0]
    ids = rng.integers(-rows, rows, ids_shape)  # many repeats, negatives counted from the end
    values = rng.standard_normal(ids_shape + out_shape[1:]).astype(dtype)
    start = rng.standard_normal(out_shape).astype(dtype)
    expected, ours = start.copy(), start.copy()
    np.add.at(expected, ids, values)
    assert can_add_rows(ours, ids, values)
    index_add_rows(ours, ids, values)
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("bad", [5, -6, 100])
def test_an_index_out_of_range_raises_index_error_and_adds_nothing(bad):
    out = np.zeros((5, 2), np.float32)
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis 0 with size 5"):
        index_add_rows(out, np.array([0, bad, 1]), np.ones((3, 2), np.float32))
    np.testing.assert_array_equal(out, 0)


def _read_only(array):
    array.flags.writeable = False
    return array


@pytest.mark.parametrize("out, ids, values", [
    (np.zeros((4, 2), np.float32), np.array([0, 1]), np.ones((2, 2), np.float64)),  # dtypes differ
    (np.zeros((4, 2), np.int64), np.array([0, 1]), np.ones((2, 2), np.int64)),  # not a float array
    (np.zeros((4, 2), np.float32), np.array([0.0, 1.0]), np.ones((2, 2), np.float32)),  # float ids
    (np.zeros((4, 2), np.float32), np.array([True, False, True, False]), np.ones((2, 2), np.float32)),  # a mask
    (np.zeros((4, 2), np.float32), np.array([0, 1]), np.ones((2, 3), np.float32)),  # wrong row width
    (np.zeros((2, 4), np.float32).T, np.array([0, 1]), np.ones((2, 2), np.float32)),  # not C-contiguous
    (_read_only(np.zeros((4, 2), np.float32)), np.array([0, 1]), np.ones((2, 2), np.float32)),
    (np.zeros((4, 2), np.float32), (np.array([0, 1]), np.array([0, 1])), np.ones(2, np.float32)),  # two axes
])
def test_other_arguments_are_left_to_numpy(out, ids, values):
    assert not can_add_rows(out, ids, values)
    with pytest.raises(TypeError, match="index_add_rows takes integer ids"):
        index_add_rows(out, ids, values)
