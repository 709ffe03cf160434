"""The runtime's thread blocks for Numba's CUDA simulator (``tinynorm/backends/cuda/runtime/simulator_blocks.py``):
what a kernel sees of its block is what Numba's own blocks give it (indices, barriers that wait for the
threads still running, block votes, errors naming the thread), in a fixed schedule.

Run by test_cuda_simulator.py with ``NUMBA_ENABLE_CUDASIM=1``.
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

from numba import cuda, int32
from numba.cuda.simulator import kernel as simulator_kernel
from numba.cuda.simulator import kernelapi

from tinynorm.backends.cuda.runtime import simulator_blocks


@pytest.fixture(params=["runtime", "numba"])
def blocks(request, monkeypatch):
    """Each test runs under the runtime's blocks and, as the reference, under Numba's own."""
    assert simulator_blocks.originals, "the runtime's thread blocks are not in place (is greenlet installed?)"
    if request.param == "numba":
        monkeypatch.setattr(simulator_kernel, "BlockManager", simulator_blocks.originals["BlockManager"])
        monkeypatch.setattr(kernelapi, "threading", simulator_blocks.originals["threading"])
    return request.param


@cuda.jit
def _indices(out):
    t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
    b = cuda.blockIdx.x + cuda.gridDim.x * cuda.blockIdx.y
    row = b * cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z + t
    out[row, 0] = cuda.threadIdx.x
    out[row, 1] = cuda.threadIdx.y
    out[row, 2] = cuda.threadIdx.z
    out[row, 3] = cuda.blockIdx.x
    out[row, 4] = cuda.blockIdx.y
    out[row, 5] = cuda.laneid


def test_every_thread_sees_its_own_indices(blocks):
    grid, block = (2, 3), (5, 2, 4)
    out = np.full((6 * 40, 6), -1, np.int64)
    _indices[grid, block](out)
    expected = [(x, y, z, bx, by, (x + 5 * (y + 2 * z)) % 32)
                for by in range(3) for bx in range(2) for z in range(4) for y in range(2) for x in range(5)]
    assert [tuple(row) for row in out] == expected


@cuda.jit
def _rotate_with_early_exits(x, out, live):
    """Threads at or above ``live`` leave at once; the others pass values around through shared memory,
    one barrier between each write and the read of another thread's value."""
    buffer = cuda.shared.array(64, int32)
    t = cuda.threadIdx.x
    if t >= live:
        return
    buffer[t] = x[t]
    for _ in range(3):
        cuda.syncthreads()
        value = buffer[(t + 1) % live]
        cuda.syncthreads()
        buffer[t] = value
    cuda.syncthreads()
    out[t] = buffer[t]


def test_barriers_wait_for_the_threads_still_running(blocks, monkeypatch):
    for schedule in simulator_blocks.SCHEDULES if blocks == "runtime" else ["thread order"]:
        monkeypatch.setattr(simulator_blocks, "schedule", schedule)
        x, out = np.arange(64, dtype=np.int32) * 7, np.full(64, -1, np.int32)
        _rotate_with_early_exits[1, 64](x, out, 40)
        np.testing.assert_array_equal(out[:40], np.roll(x[:40], -3))
        assert (out[40:] == -1).all()


def test_an_unknown_schedule_is_refused(monkeypatch):
    monkeypatch.setattr(simulator_blocks, "schedule", "reverse")
    with pytest.raises(ValueError, match="schedule must be one of"):
        _rotate_with_early_exits[1, 8](np.arange(8, dtype=np.int32), np.zeros(8, np.int32), 8)


@cuda.jit
def _votes(flags, out):
    t = cuda.threadIdx.x
    out[0] = cuda.syncthreads_count(flags[t])
    out[1] = cuda.syncthreads_and(flags[t])
    out[2] = cuda.syncthreads_or(flags[t])
    out[3] = cuda.syncthreads_count(1 - flags[t])  # a second vote of the same block


@pytest.mark.parametrize("flags", [[1, 0, 1, 1, 0, 0, 1], [1] * 7, [0] * 7])
def test_block_votes(blocks, flags):
    flags, out = np.array(flags, np.int32), np.full(4, -1, np.int64)
    _votes[1, 7](flags, out)
    assert out.tolist() == [flags.sum(), int(flags.all()), int(flags.any()), len(flags) - flags.sum()]


@cuda.jit
def _fails_in_one_thread(out):
    if cuda.blockIdx.x == 1 and cuda.threadIdx.x == 3:
        out[100] = 1.0  # out of bounds
    cuda.syncthreads()
    out[cuda.threadIdx.x] = 1.0


@cuda.jit(device=True)
def _barrier_then_block_size(fail):
    if fail and cuda.threadIdx.x == 3:
        raise ValueError("thread 3 fails")
    cuda.syncthreads()
    return cuda.blockDim.x


@cuda.jit
def _block_size_through_a_device_function(out, fail):
    out[cuda.threadIdx.x] = _barrier_then_block_size(fail)


def test_threads_waiting_when_another_fails_are_ended():
    """The threads left at a barrier by a failed launch must not keep its context: the next launch of the
    same code sees its own block size. (Numba's blocks leave their threads to unwind on their own, so
    there the next launch may or may not see it: the runtime's blocks only.)"""
    with pytest.raises(ValueError, match="thread 3 fails"):
        _block_size_through_a_device_function[1, 4](np.zeros(4, np.int64), True)
    out = np.zeros(8, np.int64)
    _block_size_through_a_device_function[1, 8](out, False)
    assert out.tolist() == [8] * 8


def test_an_error_names_the_thread_and_block(blocks):
    with pytest.raises(IndexError, match=r"tid=\[3, 0, 0\] ctaid=\[1, 0, 0\]"):
        _fails_in_one_thread[2, 8](np.zeros(8, np.float32))
    x, out = np.arange(8, dtype=np.int32), np.zeros(8, np.int32)  # the next launch runs normally
    _rotate_with_early_exits[1, 8](x, out, 8)
    np.testing.assert_array_equal(out, np.roll(x, -3))
