"""Work shared out among Python threads, each running its BLAS calls on one BLAS thread.

On a few cores, OpenBLAS's own threading pays poorly for the products tinynorm makes: every call hands
its work to OpenBLAS's thread pool and back, and the idle pool threads spin while Numba's kernels and
the next call want the same cores. Splitting the work at a coarser grain instead (a batched product's
batch, a convolution's samples), with one Python thread per part and BLAS at one thread, costs one
hand-off per operation. numpy and tinynorm's serial Numba kernels release the GIL, so the parts run
side by side.

While a split runs, BLAS calls from other threads of the process also run on one thread: OpenBLAS's
thread count is process-wide. Splits therefore run one at a time.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, TypeVar

Result = TypeVar("Result")

_lock = threading.Lock()  # one split at a time: the BLAS thread count is process-wide
_state: dict[str, Any] = {"blas": None, "pool": None, "workers": 0}


def blas() -> Any:
    """threadpoolctl's controller of numpy's BLAS (False when there is none to control)."""
    if _state["blas"] is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # a dependency, but the source checkout runs without installing it
            _state["blas"] = False
            return False
        controllers = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
        controllers.sort(key=lambda c: "numpy" not in c.filepath)  # numpy's own first
        _state["blas"] = controllers[0] if controllers and controllers[0].get_num_threads() else False
    return _state["blas"]


def _pool(workers: int) -> ThreadPoolExecutor:
    """The pool, with at least ``workers`` threads; it only grows, so that its threads (and their
    scratch buffers) last from one split to the next whatever the number of parts."""
    if _state["workers"] < workers:
        if _state["pool"] is not None:
            _state["pool"].shutdown(wait=False)
        _state["pool"] = ThreadPoolExecutor(workers, thread_name_prefix="tinynorm-blas")
        _state["workers"] = workers
    return _state["pool"]


def _forget_pool_in_child() -> None:
    """A forked child inherits the pool object but not its threads (and maybe a held lock): start afresh."""
    global _lock
    _lock = threading.Lock()
    _state.update(pool=None, workers=0)


os.register_at_fork(after_in_child=_forget_pool_in_child)


def run_split(parts: Sequence[Callable[[], Result]]) -> list[Result]:
    """Run each of ``parts`` on its own thread with BLAS at one thread; their results, in order. The
    calling thread runs the first part itself, while the pool's threads wake up for the others (a
    wake-up costs 0.1-0.2 ms here).

    When BLAS cannot be controlled, or a split is already running on another thread (whose BLAS is
    then on one thread), the parts run one after another on the calling thread.
    """
    controller = blas()
    if not parts or not controller or not _lock.acquire(blocking=False):
        return [part() for part in parts]
    try:
        threads = controller.get_num_threads()
        controller.set_num_threads(1)
        try:
            futures = [_pool(len(parts) - 1).submit(part) for part in parts[1:]] if len(parts) > 1 else []
            try:
                first = parts[0]()
            finally:
                wait(futures)  # all of them, even when one fails, before BLAS gets its threads back
            return [first] + [future.result() for future in futures]
        finally:
            controller.set_num_threads(threads)
    finally:
        _lock.release()
