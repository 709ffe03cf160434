"""What every experiment shares: a progress bar, one-thread execution (in one process or one per core),
the run record (settings, seeds, versions) written as JSON, matplotlib figures saved without a screen,
and Markdown tables."""
from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

import numpy as np

T = TypeVar("T")


def progress(items: Iterable[T], total: int | None = None, label: str = "", enabled: bool = True) -> Iterator[T]:
    """Yield ``items`` while drawing a one-line progress bar with elapsed time on stderr."""
    total = total if total is not None else (len(items) if hasattr(items, "__len__") else None)  # type: ignore[arg-type]
    start = time.perf_counter()
    count = 0
    for count, item in enumerate(items, 1):
        yield item
        if enabled:
            _draw(label, count, total, time.perf_counter() - start)
    if enabled and count:
        sys.stderr.write("\n")


def _draw(label: str, count: int, total: int | None, elapsed: float) -> None:
    if total:
        filled = int(30 * count / total)
        bar = "#" * filled + "-" * (30 - filled)
        sys.stderr.write(f"\r{label} [{bar}] {count}/{total} {elapsed:6.1f}s")
    else:
        sys.stderr.write(f"\r{label} {count} {elapsed:6.1f}s")
    sys.stderr.flush()


JOB_THREADS = 1  # the threads of Numba and BLAS in single_threaded, and so in every job of run_jobs


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """Run Numba kernels and BLAS on one thread, restoring the previous settings afterwards.

    The experiments' tensors are small: on two cores shared with other work, parallel regions cost far
    more than they save: an LM or SmallCNN training step is several times faster on one thread
    (measured: docs/benchmarks.md). BLAS threads are limited through threadpoolctl
    when it is installed (it comes with scikit-learn); without it only Numba's are.
    """
    import numba

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    previous = numba.get_num_threads()
    numba.set_num_threads(JOB_THREADS)
    try:
        with threadpool_limits(JOB_THREADS, user_api="blas") if threadpool_limits else contextlib.nullcontext():
            yield
    finally:
        numba.set_num_threads(previous)


def available_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_jobs(function: Callable[..., T], jobs: list[tuple[Any, ...]], workers: int = 1, label: str = "",
             enabled: bool = True, cost: Callable[[tuple[Any, ...]], float] | None = None) -> list[T]:
    """``[function(*job) for job in jobs]``, each job on one thread (:func:`single_threaded`), with a
    progress bar.

    With ``workers`` > 1 the jobs run in that many processes at once, so independent trainings use every
    core. The processes are started fresh (``spawn``: a forked copy of a process whose OpenMP runtime
    has started may hang), so ``function`` and the jobs must be picklable; they start the costliest
    first (by ``cost``, when given), so that no long job is left running alone at the end. The results
    come back in job order, and a job's exception is raised here.
    """
    if workers <= 1 or len(jobs) <= 1:
        with single_threaded():
            return [function(*job) for job in progress(jobs, label=label, enabled=enabled)]
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn"),
                             initializer=_one_thread) as pool:
        starts = sorted(range(len(jobs)), key=lambda i: -cost(jobs[i])) if cost else range(len(jobs))
        futures = {i: pool.submit(function, *jobs[i]) for i in starts}
        try:
            for future in progress(as_completed(futures.values()), total=len(jobs), label=label, enabled=enabled):
                future.result()  # a failed job stops the run now, not after the others
        except BaseException:
            pool.shutdown(cancel_futures=True)  # the jobs not started yet never start
            raise
        return [futures[i].result() for i in range(len(jobs))]


_worker_threads: list[contextlib.AbstractContextManager[None]] = []


def _one_thread() -> None:
    """A worker process of :func:`run_jobs`: Numba and BLAS on one thread for its lifetime (the context
    is kept, so that it is never left)."""
    limits = single_threaded()
    limits.__enter__()
    _worker_threads.append(limits)


@contextlib.contextmanager
def forward_hooks(modules: Iterable[Any], hook: Callable[[Any, tuple[Any, ...], Any], None]) -> Iterator[None]:
    """Call ``hook(module, args, output)`` after every forward of each of ``modules`` inside the block:
    ``register_forward_hook`` on each, the handles removed on leaving."""
    handles = [module.register_forward_hook(hook) for module in modules]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def environment() -> dict[str, Any]:
    """Versions and machine facts recorded with every result."""
    import numba

    info = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "numba_threads": numba.get_num_threads(),
    }
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        pass
    return info


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` plus the environment as indented JSON (numpy values converted)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = dict(payload, environment=environment())
    path.write_text(json.dumps(record, indent=2, default=_to_builtin))
    return path


def _to_builtin(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def new_figure(ncols: int = 1, nrows: int = 1, size: tuple[float, float] = (6.0, 4.0)) -> tuple[Any, Any]:
    """A matplotlib figure and axes on the Agg backend (no screen needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False)


def save_figure(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def markdown_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """Lines of a Markdown table; floats printed with 3 significant digits."""
    def cell(value: Any) -> str:
        return f"{value:.3g}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def cpu_seconds() -> float:
    """CPU time used so far by this process and the subprocesses it waited for (MPI ranks, simulators):
    on a shared machine a steadier measure of an experiment's cost than its wall time."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def duration(results: dict[str, Any]) -> str:
    """'N s wall, M s CPU' for a run's record (the CPU part where the record has it)."""
    text = f"{results['seconds']:.0f} s wall"
    return text + (f", {results['cpu_seconds']:.0f} s CPU" if "cpu_seconds" in results else "")


def run_seeds(experiment: str, seeds: Any, default: tuple[int, ...]) -> tuple[int, ...]:
    """The seeds of an experiment's run: ``seeds``, or ``default`` when None; a clear error for an empty list."""
    chosen = tuple(seeds) if seeds is not None else default
    if not chosen:
        raise ValueError(f"{experiment}.run: seeds must name at least one seed")
    return chosen
