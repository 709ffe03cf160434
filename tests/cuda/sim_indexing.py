"""Advanced indexing on the CUDA backend (getitem, setitem, index_add, take_along_axis), run in Numba's
CUDA simulator against numpy and the CPU backend.

Run by test_cuda_simulator.py in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (or directly:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_indexing.py``). Arrays stay small: the
simulator runs one Python thread per CUDA thread.
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

from numba import cuda

from host_arrays import to_device

from tinynorm.backends import cpu
from tinynorm.backends.cuda import indexing
from tinynorm.backends.cuda.array import CudaArray
from tinynorm.kernels.cuda import indexing as kernels
from tinynorm.kernels.cuda import strided

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def device(array):
    return CudaArray.from_host(np.array(array, order="C"))


def host(a: CudaArray):
    return a.to_numpy()


def transposed(array):
    """A non-contiguous CudaArray with ``array``'s values: the transpose of a stored transpose."""
    stored = device(array.T)
    strides = tuple(reversed(stored.strides))
    return CudaArray(stored.storage, array.shape, strides)


INDICES = [
    [1, 0],  # a list: integer array on the first axis
    (slice(None), [0, 2], [1, -1]),  # adjacent arrays after a slice: in place
    (0, slice(None), [1, 2]),  # an int and an array split by a slice: index dims first
    (slice(None), [0], Ellipsis, [1]),  # an Ellipsis splits them too
    (None, [1], 2),  # new axis, then an array and an int (adjacent)
    (slice(None), np.array([[2], [0]]), np.array([0, 3, -4])),  # broadcasting index arrays
    (Ellipsis, np.array([[1], [3]], dtype=np.int32)),  # int32 indices, trailing axis
    (slice(None, None, -1), [2]),  # a reversed slice
    (np.array([], dtype=np.int64),),  # an empty index
    [],  # an empty list is an empty integer index
    (1, slice(1, 3)),  # basic indices only
    X > 5,  # a full-shape mask
    (slice(None), X[0, :, 0] > 4),  # a 1-D mask on the second axis
    (X[:, 0, 0] > 100,),  # a mask selecting nothing
    (X[:, :, 0] > 5, [1]),  # a 2-D mask broadcast with an array
]


@pytest.mark.parametrize("index", INDICES, ids=range(len(INDICES)))
def test_getitem_matches_numpy(index):
    expected = X[index]
    for a in (device(X), transposed(X)):
        got = indexing.getitem(a, index)
        assert got.shape == expected.shape and got.dtype == X.dtype and got.is_contiguous()
        np.testing.assert_array_equal(host(got), expected)


def test_getitem_with_device_index_arrays():
    rows, mask = device(np.array([1, -1, 0])), device(X[0, 0] > 1)
    np.testing.assert_array_equal(host(indexing.getitem(device(X), (rows, 2))), X[[1, -1, 0], 2])
    np.testing.assert_array_equal(host(indexing.getitem(device(X), (Ellipsis, mask))), X[..., X[0, 0] > 1])


def test_getitem_of_integers_and_masks_of_targets():
    """The cross-entropy loss keeps the targets that differ from ignore_index: ``target[target != -100]``."""
    target = np.array([3, -100, 0, 2, -100], dtype=np.int64)
    got = indexing.getitem(device(target), device(target != -100))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(host(got), [3, 0, 2])


@pytest.mark.parametrize("index, error, message", [
    ((slice(None), [3]), IndexError, "index 3 is out of bounds for axis 1 with size 3"),
    (([0], [0], [-5]), IndexError, "index -5 is out of bounds for axis 2 with size 4"),
    ((0, 3), IndexError, "index 3 is out of bounds for axis 1 with size 3"),
    ((0, 0, 0, 0), IndexError, "too many indices for array: array is 3-dimensional, but 4 were indexed"),
    ((Ellipsis, 0, Ellipsis), IndexError, "an index can only have a single ellipsis"),
    (([0, 1], [0, 1, 2]), IndexError, r"could not be broadcast together with shapes \(2,\) \(3,\)"),
    (np.array([0.5]), IndexError, "must be of integer .* type, got float64"),
    (np.ones(3, bool), IndexError, r"boolean index of shape \(3,\) does not match .* shape \(2,\)"),
    (True, TypeError, "a boolean scalar is not a supported index"),
    ("a", TypeError, "expected ints, slices, None, Ellipsis or integer/boolean arrays, got str"),
])
def test_getitem_errors(index, error, message):
    with pytest.raises(error, match=message):
        indexing.getitem(device(X), index)


@pytest.mark.parametrize("index, value", [
    ((slice(None), [0, 2], [1, -1]), 5.0),  # a scalar
    ((slice(None), [0, 2], [1, -1]), np.array([1.0, 2.0], np.float32)),  # broadcast over the slice
    (([1, 0], slice(1, 3)), np.arange(16, dtype=np.float32).reshape(2, 2, 4)),
    ((0, slice(None), [1, 2]), np.arange(6, dtype=np.float32).reshape(2, 3)),  # index dims first
    (X > 20, -1.0),  # a mask
    ((1, slice(1, 3)), np.float32(7)),  # basic indices
])
def test_setitem_matches_numpy(index, value):
    expected = X.copy()
    expected[index] = value
    for a in (device(X), transposed(X)):
        indexing.setitem(a, index, value if np.ndim(value) == 0 else device(value))
        np.testing.assert_array_equal(host(a), expected)


def test_setitem_writes_through_a_view():
    """The write goes through the view's strides and offset into the storage it shares."""
    base = device(np.zeros((4, 5), np.float32))
    view = CudaArray(base.storage, (2, 5), strides=(10, 1), offset=5)  # rows 1 and 3
    indexing.setitem(view, ([0, 1], [4, 0]), device(np.array([1.0, 2.0], np.float32)))
    expected = np.zeros((4, 5), np.float32)
    expected[1, 4], expected[3, 0] = 1, 2
    np.testing.assert_array_equal(host(base), expected)


def test_setitem_repeated_indices_last_wins():
    a = device(np.zeros(4, np.float32))
    indexing.setitem(a, np.array([2, 0, 2, 2, 0]), device(np.arange(1, 6, dtype=np.float32)))
    np.testing.assert_array_equal(host(a), [5, 0, 4, 0])


def test_setitem_the_losses_patterns():
    """``target_dist[arange(n), target] = 1 - s`` and ``dlogp[arange(n), target] = -(scale * valid)``."""
    n, classes = 5, 4
    target = np.array([3, 0, 0, 2, 1])
    rows = device(np.arange(n))
    dist = device(np.zeros((n, classes), np.float32))
    indexing.setitem(dist, (rows, device(target)), 1 - 0.1)
    values = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    dlogp = device(np.zeros((n, classes), np.float32))
    indexing.setitem(dlogp, (rows, device(target)), device(-values))
    expected_dist, expected_dlogp = np.zeros((n, classes), np.float32), np.zeros((n, classes), np.float32)
    expected_dist[np.arange(n), target] = np.float32(0.9)
    expected_dlogp[np.arange(n), target] = -values
    np.testing.assert_array_equal(host(dist), expected_dist)
    np.testing.assert_array_equal(host(dlogp), expected_dlogp)


def test_setitem_from_a_view_of_itself():
    a = device(np.arange(5, dtype=np.float32))
    indexing.setitem(a, [1, 2, 3, 4], CudaArray(a.storage, (4,)))  # a[1:] = a[:4], read before written
    np.testing.assert_array_equal(host(a), [0, 0, 1, 2, 3])


def test_setitem_errors():
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,\) into shape \(2,\)"):
        indexing.setitem(device(X), (0, 0, [1, 2]), device(np.ones(3, np.float32)))
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 2 with size 4"):
        indexing.setitem(device(X), (0, 0, [4]), 1.0)


@pytest.mark.parametrize("index", [
    (slice(None), [0, 2, 0, 0], [1, 1, 1, -3]),  # repeated positions add up
    np.array([[1, 1], [0, 1]]),
    (0, slice(None), [3, 3]),
    (1, slice(0, 2)),  # basic indices
    X > 10,  # a mask
])
def test_index_add_matches_numpy(index):
    values = np.random.default_rng(1).standard_normal(X[index].shape).astype(np.float32)
    got = indexing.index_add(X.shape, index, device(values))
    expected = np.zeros(X.shape, np.float32)
    np.add.at(expected, index, values)
    np.testing.assert_allclose(host(got), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(host(got), cpu.index_add(X.shape, index, values), rtol=1e-6, atol=1e-6)


def test_index_add_is_the_embedding_gradient_and_deterministic():
    """``weight[ids]`` backward: rows of repeated ids add up, in index order, bit-identical per run."""
    rng = np.random.default_rng(2)
    ids = np.array([[1, 4, 1], [1, 0, 4]])
    grad = rng.standard_normal((2, 3, 6)).astype(np.float64)
    runs = [host(indexing.index_add((5, 6), device(ids), transposed(grad))) for _ in range(2)]
    expected = np.zeros((5, 6))
    np.add.at(expected, ids, grad)
    np.testing.assert_allclose(runs[0], expected, rtol=1e-14)
    assert runs[0].tobytes() == runs[1].tobytes()


def test_index_add_errors():
    with pytest.raises(TypeError, match="values must be a CudaArray, got ndarray"):
        indexing.index_add((3,), [0], np.ones(1))
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(2,\) into shape \(3,\)"):
        indexing.index_add((3,), [0, 1, 2], device(np.ones(2, np.float32)))


@pytest.mark.parametrize("shape, indices, axis", [
    ((4, 5), [[2], [0], [4], [-1]], 1),  # the cross-entropy pick: logp[i, target[i]]
    ((4, 5), [[0, 3, 1, 2, 0]], 0),
    ((2, 3, 4), np.zeros((2, 3, 2), np.int64) + [1, -2], -1),
    ((2, 3, 4), [[[2]], [[0]]], 1),  # broadcast against a's other dims
])
def test_take_along_axis_matches_numpy(shape, indices, axis):
    a = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    indices = np.asarray(indices)
    expected = np.take_along_axis(a, indices, axis)
    for source in (device(a), transposed(a)):
        got = indexing.take_along_axis(source, device(indices), axis)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(host(got), expected)


def test_take_along_axis_errors():
    a = device(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="same number of dims, got 1 and 2"):
        indexing.take_along_axis(a, device(np.array([0])), 1)
    with pytest.raises(ValueError, match="axis 2 is out of range for a 2-d array"):
        indexing.take_along_axis(a, device(np.array([[0]])), 2)
    with pytest.raises(IndexError, match="indices must be integers, got dtype float32"):
        indexing.take_along_axis(a, device(np.array([[0.0]], np.float32)), 1)
    with pytest.raises(ValueError, match=r"indices of shape \(3, 1\) do not broadcast against a of shape \(2, 3\)"):
        indexing.take_along_axis(a, device(np.zeros((3, 1), np.int64)), 1)


@pytest.mark.parametrize("count, key_count", [
    (5, 10),  # one pass, one tile
    (300, 70_000),  # three passes over two tiles
    (40, 1),  # a single possible key: no pass, the index order
    (0, 7),  # nothing to sort
])
def test_sort_keys_is_a_stable_sort(count, key_count):
    keys = np.random.default_rng(5).integers(0, key_count, count)
    keys[::3] = keys[0] if count else 0  # repeated keys, so stability is visible
    sorted_keys, order = kernels.sort_keys(to_device(keys), key_count)
    expected = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(order.to_numpy(), expected)
    np.testing.assert_array_equal(sorted_keys.to_numpy(), keys[expected])


def _sequential_index_add(shape, ids, values):
    """The float32 reference: rows of ``values`` added one after another, in index order."""
    out = np.zeros(shape, np.float32)
    for i, row in zip(ids, values):
        out[i] = out[i] + row
    return out


@pytest.mark.parametrize("ids", [
    [3, 1, 3, 3, 0, 1, 3],  # repeated ids, runs of different lengths
    [2] * 300 + [0, 2, 1],  # a large bucket, over two sort tiles: one id 301 times (a padding token)
])
def test_index_add_sums_repeated_indices_in_index_order(ids):
    """Bitwise equal to adding the rows one by one in float32: the order of the additions is the index's."""
    ids = np.array(ids)
    values = np.random.default_rng(6).standard_normal((ids.size, 2)).astype(np.float32) * 1e3
    runs = [host(indexing.index_add((4, 2), device(ids), device(values))) for _ in range(2)]
    expected = _sequential_index_add((4, 2), ids, values)
    assert runs[0].tobytes() == expected.tobytes()
    assert runs[1].tobytes() == runs[0].tobytes()  # deterministic


def test_scatter_of_an_empty_index_changes_nothing():
    empty = device(np.zeros(0, np.int64))
    a = device(X)
    indexing.setitem(a, (slice(None), empty), device(np.zeros((2, 0, 4), np.float32)))
    np.testing.assert_array_equal(host(a), X)
    got = indexing.index_add((3, 2), empty, device(np.zeros((0, 2), np.float32)))
    np.testing.assert_array_equal(host(got), np.zeros((3, 2), np.float32))


def _count_reads(monkeypatch) -> list:
    """Record the size of every device-to-host copy from now on (each one makes the host wait)."""
    reads = []
    device_array_type = type(cuda.device_array(1))
    copy_to_host = device_array_type.copy_to_host

    def counting_copy_to_host(self, *args, **kwargs):
        reads.append(self.size)
        return copy_to_host(self, *args, **kwargs)

    monkeypatch.setattr(device_array_type, "copy_to_host", counting_copy_to_host)
    return reads


def test_scatters_with_device_indices_read_back_one_flag_at_most(monkeypatch):
    """No round trip of the positions through the host: setitem reads back only the one-element
    out-of-range flag, and index_add (Embedding's backward, indices checked by the op) nothing."""
    reads = _count_reads(monkeypatch)
    ids, rows = device(np.array([[1, 4, 1], [1, 0, 4]])), device(np.arange(3))
    grad = indexing.index_add((5, 6), ids, device(np.ones((2, 3, 6), np.float32)))
    assert reads == []
    a = device(np.zeros((3, 5), np.float32))
    indexing.setitem(a, (rows, device(np.array([4, 0, 4]))), device(np.ones(3, np.float32)))
    assert reads == [1]
    monkeypatch.undo()
    np.testing.assert_array_equal(host(grad)[:, 0], [1, 3, 0, 0, 2])
    np.testing.assert_array_equal(host(a).sum(axis=1), [1, 1, 1])


@pytest.mark.parametrize("shape", [(150,), (3, 50), (2, 0)])
def test_nonzero_over_several_chunks(shape):
    mask = np.random.default_rng(4).random(shape) < 0.3
    coords = kernels.nonzero(to_device(mask.ravel()), shape).to_numpy()
    np.testing.assert_array_equal(coords, np.stack(np.nonzero(mask)))


@pytest.mark.parametrize("axis", [0, 1, -1, None])
@pytest.mark.parametrize("mode", ["raise", "clip"])
def test_take_matches_numpy(axis, mode):
    a = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    indices = np.array([[2, 0], [-1, 1]])  # -1: the last entry for 'raise', clipped to 0 for 'clip'
    expected = np.take(a, indices, axis=axis, mode=mode)
    for source in (device(a), transposed(a)):
        got = indexing.take(source, device(indices), axis=axis, mode=mode)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(host(got), expected)
    np.testing.assert_array_equal(host(indexing.take(device(a), [5, -7], axis=axis, mode="clip")),
                                  np.take(a, [5, -7], axis=axis, mode="clip"))


def test_take_checks_only_in_raise_mode(monkeypatch):
    a = device(np.arange(6, dtype=np.float32).reshape(3, 2))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        indexing.take(a, device(np.array([0, 3])), axis=0)
    with pytest.raises(ValueError, match="mode must be 'raise' or 'clip' on the CUDA device, got 'wrap'"):
        indexing.take(a, device(np.array([0])), axis=0, mode="wrap")
    with pytest.raises(TypeError, match="indices must be integers, got dtype float32"):
        indexing.take(a, device(np.array([0.0], np.float32)), axis=0)
    reads = _count_reads(monkeypatch)
    indexing.take(a, device(np.array([2, 0])), axis=0, mode="clip")
    assert reads == []  # clipping needs no check: the host never waits
    indexing.take(a, device(np.array([2, 0])), axis=0)
    assert reads == [1]  # the out-of-range flag


def test_index_add_and_take_along_axis_trust_the_ops_check(monkeypatch):
    """The ops check their indices once (a gradient reuses the forward's, a loss checks its targets), so
    index_add and take_along_axis read nothing back and fill no fresh flag (a shared unread one takes
    its place); negative indices still count from the end, as numpy's."""
    ids = np.array([[1, -1, 1], [-5, 0, 4]])
    values = np.random.default_rng(5).standard_normal((2, 3, 6)).astype(np.float32)
    logp = np.random.default_rng(6).standard_normal((4, 5)).astype(np.float32)
    targets = np.array([[4], [0], [-3], [2]])
    reads = _count_reads(monkeypatch)
    monkeypatch.setattr(strided, "zeros", lambda *args: pytest.fail("a trusted call made a new flag"))
    grad = indexing.index_add((5, 6), device(ids), device(values))
    picked = indexing.take_along_axis(device(logp), device(targets), 1)
    assert reads == []
    monkeypatch.undo()
    expected_grad = np.zeros((5, 6), np.float32)
    np.add.at(expected_grad, ids, values)
    np.testing.assert_allclose(host(grad), expected_grad, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(host(picked), np.take_along_axis(logp, targets, 1))
