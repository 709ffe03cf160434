"""Worker processes for ``DataLoader(num_workers=n)``, with PyTorch's semantics.

The main process deals batches of indices round-robin to the workers, keeping ``prefetch_factor``
batches per worker in flight, and yields the results in sampling order (``in_order=False``: as they
arrive). Each worker fetches and collates its batches (:mod:`.fetch`) and sends each one back
pickled. For an iterable dataset every worker iterates its own copy (:func:`get_worker_info` tells a
worker its share) and stops when its copy is exhausted; the loader ends when all have.

Worker ``i`` seeds tinynorm's global generator and Python's ``random`` with ``base_seed + i``, and
numpy's legacy global generator from the pair, so random augmentations differ between workers and
repeat with ``tinynorm.manual_seed``. An exception inside a worker is raised again in the main
process, with the worker's traceback in its message; a worker that dies is a ``RuntimeError``.
"""
from __future__ import annotations

import os
import pickle
import queue
import random
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from ... import random as tinynorm_random
from ...backends import get_backend
from .fetch import FetchSetup

_POLL_S = 1.0  # how often a waiting process checks that the other side is still alive
_worker_info: "WorkerInfo | None" = None


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker process knows about itself (``get_worker_info()`` inside a worker)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


def get_worker_info() -> WorkerInfo | None:
    """This worker's :class:`WorkerInfo` inside a DataLoader worker process; None in the main process."""
    return _worker_info


@dataclass(frozen=True)
class _Exhausted:
    """A worker's reply once its copy of an iterable dataset has no more batches."""

    worker_id: int


class _WorkerError:
    """An exception raised in a worker, carried to the main process to be raised there."""

    def __init__(self, where: str) -> None:
        self.exc_type = sys.exc_info()[0]
        self.message = f"Caught {self.exc_type.__name__} {where}.\nOriginal {traceback.format_exc()}"

    def reraise(self) -> None:
        raise self._exception()  # made in a call: no local of this frame refers to it (no reference cycle)

    def _exception(self) -> BaseException:
        message = _KeyErrorMessage(self.message) if self.exc_type is KeyError else self.message
        try:
            return self.exc_type(message)
        except Exception:  # an exception type whose constructor takes other arguments
            return RuntimeError(self.message)


class _KeyErrorMessage(str):
    """``str(KeyError(message))`` is the message's repr; this one shows the traceback's lines instead."""

    def __repr__(self) -> str:
        return self


def _seed_worker(base_seed: int, worker_id: int) -> int:
    seed = (base_seed + worker_id) % 2**64
    tinynorm_random.manual_seed(seed)
    random.seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(1))
    return seed


def _worker_loop(setup: FetchSetup, worker_init_fn: Any, worker_id: int, num_workers: int, base_seed: int,
                 index_queue: Any, result_queue: Any, done: Any, parent_pid: int) -> None:
    """A worker's life: seed, run ``worker_init_fn``, then answer fetch requests until told to stop."""
    global _worker_info
    result_queue.cancel_join_thread()  # exit even if the main process stopped reading
    seed = _seed_worker(base_seed, worker_id)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, setup.dataset)
    init_error = None
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
    except Exception:
        init_error = _WorkerError(f"in DataLoader worker process {worker_id} in worker_init_fn")
    fetcher, error = (None, init_error) if init_error else _new_fetcher(setup, worker_id)
    exhausted = False
    while True:
        try:
            message = index_queue.get(timeout=_POLL_S)
        except queue.Empty:
            if done.is_set() or os.getppid() != parent_pid:  # the loader is closed, or the main process gone
                return
            continue
        if message is None:
            return
        kind, epoch, task, index = message
        if kind == "reset":  # a new epoch with persistent workers
            fetcher, error = (None, init_error) if init_error else _new_fetcher(setup, worker_id)
            exhausted = False
            continue
        if error is not None:
            reply: Any = error
        elif exhausted:
            reply = _Exhausted(worker_id)
        else:
            try:
                reply = fetcher.fetch(index)
            except StopIteration:
                reply, exhausted = _Exhausted(worker_id), True
            except Exception:
                reply = _WorkerError(f"in DataLoader worker process {worker_id}")
        try:
            payload = bytes(ForkingPickler.dumps((epoch, task, reply)))
        except Exception:
            payload = bytes(ForkingPickler.dumps((epoch, task, _WorkerError(
                f"in DataLoader worker process {worker_id} while sending a batch (it must be picklable)"))))
        result_queue.put(payload)


def _new_fetcher(setup: FetchSetup, worker_id: int) -> tuple[Any, _WorkerError | None]:
    """A fetcher for a new pass over the dataset, or the error that making it raised."""
    try:
        return setup.fetcher(), None
    except Exception:
        return None, _WorkerError(f"in DataLoader worker process {worker_id} while starting a pass over the dataset")


class MultiProcessIterator:
    """The main process's side: start the workers, deal indices, collect batches in order."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        context = loader.multiprocessing_context
        self._results = context.Queue()
        self._done = context.Event()  # set by close(): it reaches the workers even if a queue cannot
        self._queues, self._workers = [], []
        self._closed = False
        base_seed = loader._base_seed()
        setup = loader._fetch_setup()
        get_backend("cpu")  # import the CPU kernels once here, not once per (forked) worker
        for worker_id in range(loader.num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()
            worker = context.Process(target=_worker_loop, daemon=True,
                                     args=(setup, loader.worker_init_fn, worker_id, loader.num_workers, base_seed,
                                           index_queue, self._results, self._done, os.getpid()))
            worker.start()
            self._queues.append(index_queue)
            self._workers.append(worker)
        self._epoch = 0
        self._start_epoch()

    def _start_epoch(self) -> None:
        self._indices = iter(self._loader._index_sampler)
        self._active = [True] * len(self._workers)
        self._next_worker = 0
        self._sent = 0
        self._waiting: set[int] = set()  # tasks sent whose reply has not been used
        self._ready: dict[int, Any] = {}  # replies that arrived before their turn
        for _ in range(self._loader.prefetch_factor * len(self._workers)):
            self._send_next()

    def reset(self) -> None:
        """Start a new epoch with the same workers (``persistent_workers=True``)."""
        self._epoch += 1
        for index_queue in self._queues:
            index_queue.put(("reset", self._epoch, None, None))
        self._start_epoch()

    def _send_next(self) -> None:
        """Give the next batch of indices to the next worker that still has data, if any."""
        for _ in range(len(self._workers)):
            worker_id = self._next_worker
            self._next_worker = (worker_id + 1) % len(self._workers)
            if self._active[worker_id]:
                break
        else:
            return
        try:
            index = next(self._indices)
        except StopIteration:
            return
        self._queues[worker_id].put(("fetch", self._epoch, self._sent, index))
        self._waiting.add(self._sent)
        self._sent += 1

    def __iter__(self) -> "MultiProcessIterator":
        return self

    def __next__(self) -> Any:
        while True:
            if not self._waiting:
                if not self._loader.persistent_workers:
                    self.close()
                raise StopIteration
            task, reply = self._next_reply()
            self._waiting.discard(task)
            if isinstance(reply, _Exhausted):
                self._active[reply.worker_id] = False
                continue
            self._send_next()
            if isinstance(reply, _WorkerError):
                reply.reraise()
            return reply

    def _next_reply(self) -> tuple[int, Any]:
        """The reply to use next: the oldest task's when in order, else the first to arrive."""
        while True:
            if self._loader.in_order and min(self._waiting) in self._ready:
                task = min(self._waiting)
                return task, self._ready.pop(task)
            if not self._loader.in_order and self._ready:
                task = next(iter(self._ready))
                return task, self._ready.pop(task)
            epoch, task, reply = pickle.loads(self._receive())
            if epoch == self._epoch:
                self._ready[task] = reply

    def _receive(self) -> bytes:
        deadline = time.monotonic() + self._loader.timeout if self._loader.timeout else None
        while True:
            try:
                return self._results.get(timeout=_POLL_S if deadline is None else min(_POLL_S, self._loader.timeout))
            except queue.Empty:
                dead = [worker for worker in self._workers if not worker.is_alive()]
                if dead:
                    self.close()
                    pids = ", ".join(f"{worker.pid} (exit code {worker.exitcode})" for worker in dead)
                    hint = ""
                    if any(worker.exitcode == -signal.SIGTERM for worker in dead):
                        hint = ("; a forked worker that runs tinynorm's parallel CPU kernels after the main process "
                                "did is stopped by Numba's OpenMP check: pass multiprocessing_context='forkserver'")
                    raise RuntimeError(f"DataLoader worker(s) {pids} exited unexpectedly{hint}") from None
                if deadline is not None and time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(f"DataLoader timed out after {self._loader.timeout} seconds") from None

    def __len__(self) -> int:
        return len(self._loader)

    def close(self) -> None:
        """Stop the workers and release the queues (also when the iterator is dropped mid-epoch)."""
        if self._closed:
            return
        self._closed = True
        self._done.set()
        for index_queue in self._queues:
            try:
                index_queue.put(None)
            except (OSError, ValueError):
                pass
        for worker in self._workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()
        for channel in self._queues + [self._results]:
            channel.cancel_join_thread()
            channel.close()

    def __del__(self) -> None:
        self.close()
