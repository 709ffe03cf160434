"""Thread blocks for Numba's CUDA simulator as greenlets: the same results, far less host time.

Numba's simulator (numba-cuda 0.30) runs every CUDA thread of a block as an operating-system thread and
a manager thread that polls them all until each has finished or reached ``cuda.syncthreads()``. Starting
the threads and the polling, not the kernel code, take nearly all of a launch's time (docs/benchmarks.md):
a 256-thread block costs tens of milliseconds, and the simulator tests spend minutes doing it.

:class:`CooperativeBlock` runs a block's threads as greenlets in one operating-system thread. Each
thread runs until it finishes or reaches a barrier; when every live thread has done so, all of them
resume. That is the semantics of Numba's manager (a barrier waits for the threads still running), in a
fixed schedule: the stretches of code between two barriers run thread by thread, in thread order, or in
reverse when :data:`schedule` says so (``tests/cuda/sim_races.py`` runs the block-wide kernels both ways,
so a read of shared memory before its writer's barrier reads stale data every time). Threads never
interleave between barriers: a missing barrier that only a lower thread's write before a higher thread's
read would expose passes in thread order, and a thread spinning on a flag another thread of its block
sets never ends. An exception in a thread ends the launch with the thread and block named, as Numba's
does (the first failing thread of the schedule), and ends the block's other threads.

:func:`apply` puts it in place of Numba's ``BlockManager`` and makes the simulator's ``threadIdx``,
``blockIdx``, ``laneid`` and barriers find the running greenlet (the simulator asks
``threading.current_thread()``). Without the ``greenlet`` package (the ``cuda`` extra installs it),
Numba's own blocks run.
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Callable

import numpy as np

try:
    import greenlet
except ImportError:  # the simulator then runs Numba's own thread blocks
    greenlet = None

SCHEDULES = ("thread order", "reverse order")
schedule = "thread order"
"""The order in which a block's threads run each stretch between two barriers: 'thread order' or
'reverse order'."""
originals: dict[str, Any] = {}
"""What :func:`apply` replaced: Numba's ``BlockManager`` and the ``threading`` module its API reads."""


class SimulatedThread(greenlet.greenlet if greenlet else object):
    """One CUDA thread of a :class:`CooperativeBlock`: its indices and its barriers."""

    def __init__(self, block: CooperativeBlock, body: Callable[[], None], block_index: tuple[int, ...],
                 thread_index: tuple[int, ...]) -> None:
        super().__init__(run=body)
        self.block = block
        self.blockIdx = block.Dim3(*block_index)
        self.threadIdx = block.Dim3(*thread_index)
        x, y, _ = block.block_dim
        self.thread_id = self.threadIdx.x + x * (self.threadIdx.y + y * self.threadIdx.z)

    def syncthreads(self) -> None:
        """Wait here until every live thread of the block has reached a barrier or finished."""
        self.parent.switch()

    def syncthreads_count(self, value: Any) -> int:
        return int(np.count_nonzero(self._vote(value)))

    def syncthreads_and(self, value: Any) -> int:
        return int(np.all(self._vote(value)))

    def syncthreads_or(self, value: Any) -> int:
        return int(np.any(self._vote(value)))

    def _vote(self, value: Any) -> np.ndarray:
        """Every thread's ``value``, after a barrier (a second barrier lets the block vote again)."""
        self.block.votes[self.threadIdx.x, self.threadIdx.y, self.threadIdx.z] = value
        self.syncthreads()
        votes = self.block.votes.copy()
        self.syncthreads()
        return votes


class CooperativeBlock:
    """Numba's ``BlockManager`` interface: ``CooperativeBlock(kernel, grid_dim, block_dim, debug)``,
    then ``run(block_index, *args)`` runs the block's threads to the end."""

    def __init__(self, kernel: Callable[..., None], grid_dim: tuple[int, ...], block_dim: tuple[int, ...],
                 debug: bool) -> None:
        from numba.cuda.simulator.kernelapi import Dim3

        self.Dim3 = Dim3  # the simulator's index triple, what threadIdx and blockIdx return
        self.kernel = kernel
        self.block_dim = tuple(block_dim)
        self.debug = debug
        self.votes = np.zeros(self.block_dim, dtype=np.bool_)

    def run(self, block_index: tuple[int, ...], *args: Any) -> None:
        if schedule not in SCHEDULES:
            raise ValueError(f"simulator_blocks.schedule must be one of {SCHEDULES}, got {schedule!r}")
        threads = [SimulatedThread(self, self._body(block_index, thread_index, args), block_index, thread_index)
                   for thread_index in np.ndindex(*self.block_dim)]
        try:
            while threads:  # each pass runs every live thread to its next barrier or its end
                for thread in reversed(threads) if schedule == "reverse order" else threads:
                    thread.switch()
                threads = [thread for thread in threads if not thread.dead]
        finally:  # after an error, end the threads waiting at a barrier (Numba's kernel context unwinds)
            for thread in threads:
                if not thread.dead:
                    thread.throw(greenlet.GreenletExit)

    def _body(self, block_index: tuple[int, ...], thread_index: tuple[int, ...],
              args: tuple[Any, ...]) -> Callable[[], None]:
        def body() -> None:
            try:
                if self.debug:
                    np.seterr(divide="raise")
                self.kernel(*args)
            except Exception as error:  # named as Numba's simulator names it
                where = f"tid={list(thread_index)} ctaid={list(block_index)}"
                raise type(error)(f"{where}: {error}" if str(error) else where).with_traceback(
                    sys.exc_info()[2]) from None
        return body


class _ThreadingForKernels:
    """The ``threading`` module as the simulator's kernel API sees it: ``current_thread()`` is the
    running :class:`SimulatedThread` inside a cooperative block."""

    def __getattr__(self, name: str) -> Any:
        return getattr(threading, name)

    @staticmethod
    def current_thread() -> Any:
        current = greenlet.getcurrent()
        return current if isinstance(current, SimulatedThread) else threading.current_thread()


def apply() -> bool:
    """In the simulator with ``greenlet`` installed, run thread blocks as :class:`CooperativeBlock`
    (once); returns whether they run so."""
    from numba import config

    if not config.ENABLE_CUDASIM or greenlet is None:
        return False
    from numba.cuda.simulator import kernel, kernelapi

    if not originals:
        originals["BlockManager"], kernel.BlockManager = kernel.BlockManager, CooperativeBlock
        originals["threading"], kernelapi.threading = kernelapi.threading, _ThreadingForKernels()
    return True
