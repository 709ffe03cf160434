"""Timing utilities shared by the benchmarks: median timing, the machine's copy bandwidth, a text table
and a JSON file that records the machine it was measured on.

Typical use::

    seconds = median_time(lambda: f(x), repeat=7, min_time=0.02)
    ours, theirs = alternating_medians([lambda: f(x), lambda: g(x)])
    rows.append({"op": "f", "ms": seconds * 1e3, "GB/s": 2 * x.nbytes / seconds / 1e9})
    print_table(rows, ["op", "ms", "GB/s"])
    write_json("benchmarks/out/f.json", {"rows": rows})
"""
from __future__ import annotations

import datetime
import json
import os

# Both contenders run under libgomp's own default spin (300,000 spins before an idle thread sleeps):
# tinynorm sets a shorter spin when nothing is set (see tinynorm/__init__.py), and PyTorch's OpenMP
# runtime would otherwise inherit it. Import this module before tinynorm and torch.
os.environ.setdefault("GOMP_SPINCOUNT", "300000")

import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numba
import numpy as np
from numba import njit, prange


def _calls_per_sample(fn: Callable[[], object], min_time: float) -> int:
    """Warm ``fn`` up (compilation, caches), then return how many calls last ``min_time``.

    The call that sizes the sample is timed after the warm-up: timing the first call instead (which
    loads compiled code) made fast functions look slow, one call per sample.
    """
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, int(min_time / once))


# "cpu" (this process's CPU time) is steadier than "wall" on a loaded machine, but only meaningful with
# one thread: with more, it adds up the time of all threads.
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def _sample(fn: Callable[[], object], number: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per call of ``fn`` over ``number`` back-to-back calls, on ``clock``."""
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def median_time(fn: Callable[[], object], repeat: int = 7, min_time: float = 0.02) -> float:
    """Median seconds per call of ``fn()`` over ``repeat`` samples, after one warm-up call.

    Each sample runs ``fn`` enough times back to back to last at least ``min_time`` seconds, so a
    fast call is not measured below the clock's resolution.
    """
    number = _calls_per_sample(fn, min_time)
    return float(np.median([_sample(fn, number) for _ in range(repeat)]))


def alternating_medians(fns: Sequence[Callable[[], object]], repeat: int = 7, min_time: float = 0.02,
                        clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Like :func:`median_time` for each of ``fns``, taking their samples in turns.

    On a shared machine, load from other processes then hits every contender alike, so their
    ratios stay meaningful even when the absolute times do not.
    """
    numbers = [_calls_per_sample(fn, min_time) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, number, times in zip(fns, numbers, samples):
            times.append(_sample(fn, number, clock))
    return [float(np.median(times)) for times in samples]


@njit(parallel=True, cache=True)
def _parallel_copy(src, dst):
    for i in prange(src.size):
        dst[i] = src[i]


def copy_bandwidth(nbytes: int = 256 * 2**20, repeat: int = 7) -> float:
    """Bytes per second (read + written) of a parallel copy of ``nbytes``: the machine's memory ceiling.

    The buffers are much larger than the caches, so this is what main memory sustains with all of
    Numba's threads; a memory-bound kernel can at best match it.
    """
    src = np.ones(nbytes // 4, np.float32)
    dst = np.zeros_like(src)
    seconds = median_time(lambda: _parallel_copy(src, dst), repeat=repeat, min_time=0.0)
    return 2 * src.nbytes / seconds


def _format(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def print_table(rows: Sequence[dict], columns: Sequence[str]) -> None:
    """Print ``rows`` (dicts) as an aligned text table of ``columns``; a missing or None value prints ``-``."""
    cells = [[_format(row.get(column, "-")) for column in columns] for row in rows]
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
    print("  ".join(column.rjust(width) for column, width in zip(columns, widths)))
    for line in cells:
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths)))


def machine_info() -> dict:
    """What the numbers depend on: CPU, thread counts, library versions and the date."""
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
    }
    try:
        info["numba_threading_layer"] = numba.threading_layer()
    except ValueError:  # known only once a parallel function has run
        info["numba_threading_layer"] = None
    try:
        import torch
        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
    except ImportError:
        info["torch"] = None
    return info


def replace_kernel_launches(replacement: Callable[..., None],
                            set_attribute: Callable[[Any, str, Any], None] = setattr) -> Callable[..., None]:
    """Make every loaded ``tinynorm.kernels.cuda`` module launch through ``replacement`` (same arguments
    as ``launch.launch``), to count launches; returns the original ``launch``. Import the kernel modules
    first: one imported later keeps the original. ``set_attribute`` makes the change (a test passes
    ``monkeypatch.setattr`` to have it undone)."""
    from tinynorm.backends.cuda.runtime import launch

    original = launch.launch
    for module in list(sys.modules.values()):
        in_package = getattr(module, "__name__", "").startswith("tinynorm.kernels.cuda")
        if in_package and getattr(module, "launch", None) is original:
            set_attribute(module, "launch", replacement)
    return original


def training_step(model: Any, optimizer: Any, inputs: Any, targets: Any) -> None:
    """One tinynorm training step: zero_grad, forward, cross-entropy over the last dim, backward, step."""
    import tinynorm.nn.functional as F

    optimizer.zero_grad()
    logits = model(inputs)
    F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)).backward()
    optimizer.step()


def write_json(path: str | os.PathLike, payload: dict) -> None:
    """Write ``payload`` plus ``"machine": machine_info()`` to ``path`` (folders are created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**payload, "machine": machine_info()}, indent=2))
