"""Thread timing in Numba's CUDA simulator: tinynorm's block-wide kernels give the right results however
the threads of a block interleave, and the simulator's shared arrays are made once per block.

Two things can go wrong, and each is provoked here on purpose:

* the simulator's own ``cuda.shared.array`` (``tinynorm/backends/cuda/runtime/simulator_compat.py``): under
  Numba's thread blocks (a Python thread per CUDA thread), a thread stalled while declaring a shared array
  made Numba's original give threads arrays of their own; the test shows the failure with the original
  and none with the replacement;
* a missing ``cuda.syncthreads()`` in a kernel: the runtime's blocks (``simulator_blocks.py``) run each
  stretch between two barriers thread by thread, in thread order or in reverse (:data:`schedule`), so a
  thread that reads shared memory before its writer has reached the barrier reads stale data every time.
  A control kernel without a barrier in its tree shows that the schedule catches one; then every
  block-wide reduction runs under both orders against numpy.

Run by test_cuda_simulator.py with ``NUMBA_ENABLE_CUDASIM=1``.
"""
import time

import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

from numba import cuda, float32
from numba.cuda.simulator import kernel as simulator_kernel
from numba.cuda.simulator import kernelapi

from tinynorm.backends import cpu
from tinynorm.backends.cuda import indexing, linalg, reductions
from tinynorm.backends.cuda import losses, softmax
from tinynorm.backends.cuda.array import CudaArray
from tinynorm.backends.cuda.runtime import simulator_blocks, simulator_compat
from tinynorm.kernels import cuda as kernels


def device(array) -> CudaArray:
    return CudaArray.from_host(np.ascontiguousarray(array))


# ------------------------------------------------------------------------- the simulator's shared arrays
class _StallingDict(dict):
    """A shared-array registry whose lookups stall, as a thread switched out right after one would, and
    which counts the arrays made."""

    made = 0

    def __setitem__(self, key, value):
        _StallingDict.made += 1
        super().__setitem__(key, value)

    def get(self, key, default=None):
        found = super().get(key, default)
        time.sleep(0.02)  # long beside the start of the next thread, even on a loaded machine
        return found


@cuda.jit
def _sum_through_shared(x, out):
    buffer = cuda.shared.array(32, float32)
    buffer[cuda.threadIdx.x] = x[cuda.threadIdx.x]
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        total = float32(0)
        for k in range(32):
            total += buffer[k]
        out[0] = total


@pytest.fixture
def stalling_shared_arrays(monkeypatch):
    """Numba's own thread blocks, whose shared-array lookups stall."""
    for name, original in simulator_blocks.originals.items():
        monkeypatch.setattr(simulator_kernel if name == "BlockManager" else kernelapi, name, original)
    original_init = kernelapi.FakeCUDAShared.__init__

    def init(self, dynshared_size):
        original_init(self, dynshared_size)
        self._allocations = _StallingDict()

    monkeypatch.setattr(kernelapi.FakeCUDAShared, "__init__", init)
    monkeypatch.setattr(_StallingDict, "made", 0)


@pytest.mark.parametrize("implementation", ["numba", "tinynorm"])
def test_every_thread_of_a_block_gets_the_same_shared_array(stalling_shared_arrays, monkeypatch, implementation):
    if implementation == "numba":
        monkeypatch.setattr(kernelapi.FakeCUDAShared, "array", simulator_compat.originals["array"])
    x, out = np.arange(32, dtype=np.float32), np.zeros(1, np.float32)
    _sum_through_shared[1, 32](x, out)
    if implementation == "numba":  # the control: threads made arrays of their own
        assert _StallingDict.made > 1
    else:
        assert _StallingDict.made == 1
        assert out[0] == x.sum()


# --------------------------------------------------------------------------- barriers in tinynorm's kernels
@pytest.fixture(params=["thread order", "reverse order"])
def ordered_threads(request, monkeypatch):
    """The runtime's thread blocks, each stretch of code between two barriers run thread by thread, in
    thread order or in reverse."""
    assert simulator_blocks.originals, "the runtime's thread blocks are not in place (is greenlet installed?)"
    monkeypatch.setattr(simulator_blocks, "schedule", request.param)
    return request.param


def _tree_sum(with_barriers: bool):
    @cuda.jit
    def kernel(x, out):
        buffer = cuda.shared.array(64, float32)
        t = cuda.threadIdx.x
        buffer[t] = x[t]
        cuda.syncthreads()
        half = 32
        while half > 0:
            if t < half:
                buffer[t] += buffer[t + half]
            if with_barriers:
                cuda.syncthreads()
            half //= 2
        if t == 0:
            out[0] = buffer[0]

    return kernel


def test_the_schedule_catches_a_missing_barrier(ordered_threads):
    x = np.arange(64, dtype=np.float32)
    results = {}
    for with_barriers in (True, False):
        out = np.zeros(1, np.float32)
        _tree_sum(with_barriers)[1, 64](x, out)
        results[with_barriers] = out[0]
    assert results[True] == x.sum()
    if ordered_threads == "thread order":  # thread 0 runs every level before the others add theirs
        assert results[False] != x.sum()


def _assert_close(actual: CudaArray, expected, tol=2e-5):
    np.testing.assert_allclose(actual.to_numpy(), expected, rtol=tol, atol=tol)


def test_softmax_and_cross_entropy(ordered_threads, rng):
    x = rng.standard_normal((2, 70)).astype(np.float32)
    target = np.array([3, 69])
    _assert_close(softmax.log_softmax_forward(device(x)), cpu.log_softmax_forward(x))
    out = cpu.softmax_forward(x)
    grad = rng.standard_normal(x.shape).astype(np.float32)
    _assert_close(softmax.softmax_backward(device(grad), device(out)), cpu.softmax_backward(grad, out))
    row_losses, lse = losses.cross_entropy_forward(device(x), device(target))
    expected_losses, expected_lse = cpu.cross_entropy_forward(x, target)
    _assert_close(row_losses, expected_losses)
    _assert_close(lse, expected_lse)


def test_row_norm_block_sums(ordered_threads, rng, monkeypatch):
    """LayerNorm's wide kernels (one block per row, ``_reduce.block_sum``), forward and backward."""
    from tinynorm.kernels.cuda import _row_norm
    monkeypatch.setattr(_row_norm, "NARROW_MAX_COLS", 32)
    x = (rng.standard_normal((2, 80)) + 3).astype(np.float32)
    weight, bias = rng.standard_normal(80).astype(np.float32), rng.standard_normal(80).astype(np.float32)
    y, mean, rstd = kernels.layer_norm_forward(device(x), device(weight), device(bias), 1e-5)
    expected = cpu.layer_norm_forward(x, weight, bias, 1e-5)
    for actual, wanted in zip((y, mean, rstd), expected):
        _assert_close(actual, wanted, 1e-4)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    grads = kernels.layer_norm_backward(device(dy), device(x), mean, rstd, device(weight))
    for actual, wanted in zip(grads, cpu.layer_norm_backward(dy, x, *expected[1:], weight)):
        _assert_close(actual, wanted, 1e-4)


def test_group_norm_block_sums(ordered_threads, rng):
    x = rng.standard_normal((1, 4, 40)).astype(np.float32)
    y, mean, rstd = kernels.group_norm_forward(device(x), 2, None, None, 1e-5)
    expected = cpu.group_norm_forward(x, 2, None, None, 1e-5)
    for actual, wanted in zip((y, mean, rstd), expected):
        _assert_close(actual, wanted, 1e-4)


def test_reductions_over_long_rows(ordered_threads, rng, monkeypatch):
    """The block-per-segment sum and argmax, in two passes (segments, then their partials)."""
    from tinynorm.kernels.cuda import reductions as reduction_kernels
    monkeypatch.setattr(reduction_kernels, "BLOCK_THREADS", 64)
    monkeypatch.setattr(reduction_kernels, "MIN_SEGMENT_COLS", 64)
    x = rng.standard_normal((1, 200)).astype(np.float32)
    _assert_close(reductions.sum(device(x), 1), x.sum(1), 1e-5)
    assert reductions.argmax(device(x), 1).to_numpy().tolist() == x.argmax(1).tolist()


def test_matmul_tiles(ordered_threads, rng):
    a, b = rng.standard_normal((3, 20)).astype(np.float32), rng.standard_normal((20, 5)).astype(np.float32)
    _assert_close(linalg.matmul(device(a), device(b)), a @ b, 1e-5)


def test_scatter_sort(ordered_threads, rng):
    """index_add with repeated indices: the radix sort's shared-memory counts and scan."""
    index = np.array([3, 1, 3, 0, 1, 3])
    values = rng.standard_normal((6, 2)).astype(np.float32)
    expected = np.zeros((4, 2), np.float32)
    np.add.at(expected, index, values)
    _assert_close(indexing.index_add((4, 2), device(index), device(values)), expected, 1e-6)


@pytest.fixture
def rng():
    return np.random.default_rng(7)
