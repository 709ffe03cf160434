"""What every benchmark shares: median timing with samples taken in turns, the machine's copy bandwidth,
text tables, JSON that records the machine and the threading settings, and the process set-up (thread
counts, the order in which PyTorch and tinynorm are imported).

Typical use::

    ours, theirs = alternating_medians([lambda: f(x), lambda: g(x)])
    print_table(rows, ["op", "ms", "ratio"])
    write_json(path, {"rows": rows})          # adds "machine" and "threading"
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numba
import numpy as np
from numba import njit, prange

from .. import _malloc, _openblas, _openmp
from ..kernels.cpu import blas_pool

# "cpu" (this process's CPU time) is steadier than "wall" on a loaded machine, but only meaningful with
# one thread: with more, it adds up the time of all threads, spinning ones included.
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
# The pause before each sample when contenders take turns. An idle OpenMP thread spins before it
# sleeps, on a core the next contender's threads need: after a PyTorch convolution its libgomp thread
# (default spin) burnt 9.8 ms of CPU time, and a tinynorm convolution started at once took 10.1 ms
# against 5.9 ms after a 20 ms pause and a call (docs/benchmarks.md).
SETTLE_SECONDS = 0.03
ORDERS = ("torch-first", "tinynorm-first")


# ------------------------------------------------------------ timing
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
                        clock: Callable[[], float] = time.perf_counter,
                        settle: float = SETTLE_SECONDS) -> list[float]:
    """Like :func:`median_time` for each of ``fns``, taking their samples in turns.

    On a shared machine, load from other processes then hits every contender alike, so their
    ratios stay meaningful even when the absolute times do not. With several contenders each sample
    starts after a pause of ``settle`` seconds and one untimed call: the idle threads of the one that
    ran before have stopped spinning by then, and the sample's own threads are awake, as in a loop
    that runs one library only.
    """
    numbers = [_calls_per_sample(fn, min_time) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, number, times in zip(fns, numbers, samples):
            if len(fns) > 1:
                time.sleep(settle)
                fn()
            times.append(_sample(fn, number, clock))
    return [float(np.median(times)) for times in samples]


@njit(parallel=True, cache=True)
def _parallel_copy(src, dst):
    for i in prange(src.size):
        dst[i] = src[i]


def parallel_speedup(size: int = 1024, repeat: int = 9, number: int = 2) -> float | None:
    """How many times faster a float32 ``size x size`` product runs on all of BLAS's threads than on one,
    medians of ``repeat`` samples of ``number`` products taken in turns: about the thread count when the
    cores are free, near 1 when other load holds them (a virtual machine's cores can be shared with its
    neighbours, for a while). None with one BLAS thread, or when BLAS's threads cannot be set."""
    blas = blas_pool.blas()
    threads = blas.get_num_threads() if blas else 1
    if threads < 2:
        return None
    a = np.ones((size, size), np.float32)
    samples: dict[int, list[float]] = {1: [], threads: []}
    try:
        for _ in range(repeat):
            for count, times in samples.items():
                blas.set_num_threads(count)
                a @ a  # untimed: the first product after a change of the thread count is slower
                times.append(_sample(lambda: a @ a, number))
    finally:
        blas.set_num_threads(threads)
    return float(np.median(samples[1]) / np.median(samples[threads]))


def copy_bandwidth(nbytes: int = 256 * 2**20, repeat: int = 7) -> float:
    """Bytes per second (read + written) of a parallel copy of ``nbytes``: the machine's memory ceiling.

    The buffers are much larger than the caches, so this is what main memory sustains with all of
    Numba's threads; a memory-bound kernel can at best match it.
    """
    src = np.ones(nbytes // 4, np.float32)
    dst = np.zeros_like(src)
    seconds = median_time(lambda: _parallel_copy(src, dst), repeat=repeat, min_time=0.0)
    return 2 * src.nbytes / seconds


# ------------------------------------------------------------ tables and JSON
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


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict:
    """What the numbers depend on: CPU, core count, library versions and the date."""
    torch = sys.modules.get("torch")
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "torch": torch.__version__ if torch is not None else None,
    }
    return info


def _blas_info() -> dict | None:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    pools = [pool for pool in threadpool_info() if pool.get("user_api") == "blas"]
    pools.sort(key=lambda pool: "numpy" not in pool.get("filepath", ""))  # numpy's, which tinynorm's GEMMs use
    if not pools:
        return None
    return {key: pools[0].get(key) for key in ("internal_api", "version", "architecture", "num_threads",
                                                "threading_layer", "filepath")}


def threading_info(speedup_before: float | None = None) -> dict:
    """The threads and OpenMP settings both libraries run with in this process, and the
    :func:`parallel_speedup` now and, when given, measured before the benchmark's rows."""
    info: dict[str, Any] = {"tinynorm": _openmp.threading_settings(), "blas": _blas_info(),
                            "openblas_thread_timeout": os.environ.get("OPENBLAS_THREAD_TIMEOUT"),
                            "openblas_thread_timeout_set_by_tinynorm": _openblas.configured,
                            "malloc_kept_for_reuse": _malloc.configured,
                            "parallel_speedup": {"before": speedup_before, "after": parallel_speedup()},
                            "settle_seconds": SETTLE_SECONDS}
    torch = sys.modules.get("torch")
    if torch is not None:
        spin = "libgomp default (300000)"
        if not (_openmp.torch_imported_first and _openmp.spin_set_by_tinynorm):
            spin = os.environ.get("GOMP_SPINCOUNT", spin)  # torch read the environment tinynorm had set
        info["torch"] = {"threads": torch.get_num_threads(), "GOMP_SPINCOUNT": spin,
                         "imported_first": _openmp.torch_imported_first}
    return info


def describe_threading(info: dict) -> str:
    """One line a reader can check: thread counts, OpenMP spin of each runtime, the import order."""
    ours, blas = info["tinynorm"], info["blas"]
    parts = [f"tinynorm: {ours['numba_threads']} Numba threads ({ours['numba_threading_layer'] or 'layer not started'}"
             f", OpenMP layer loaded {ours['openmp_layer_load']}), GOMP_SPINCOUNT {ours['GOMP_SPINCOUNT']}"
             f"{' (its default)' if ours['GOMP_SPINCOUNT_set_by_tinynorm'] else ''}",
             "BLAS: " + (f"{blas['internal_api']} {blas['architecture']}, {blas['num_threads']} threads" if blas
                         else "unknown (install threadpoolctl to see it)")]
    if info.get("openblas_thread_timeout"):
        parts[-1] += (f", idle spin 2^{info['openblas_thread_timeout']} cycles"
                      f"{' (its default)' if info.get('openblas_thread_timeout_set_by_tinynorm') else ''}")
    if info.get("malloc_kept_for_reuse"):
        parts.append("malloc: freed memory kept for reuse (tinynorm's default, process-wide)")
    if "torch" in info:
        torch = info["torch"]
        parts.append(f"PyTorch: {torch['threads']} threads, GOMP_SPINCOUNT {torch['GOMP_SPINCOUNT']}, imported "
                     f"{'before' if torch['imported_first'] else 'after'} tinynorm")
    if "settle_seconds" in info:
        parts.append(f"contenders' samples in turns, each after a {info['settle_seconds'] * 1e3:g} ms pause and an "
                     "untimed call")
    speedups = {when: value for when, value in info.get("parallel_speedup", {}).items() if value is not None}
    if speedups and blas:
        parts.append(f"cores: {blas['num_threads']} BLAS threads ran a 1024x1024 product "
                     + " and ".join(f"{value:.2f}x ({when} the rows)" for when, value in speedups.items())
                     + f" as fast as 1 ({blas['num_threads']}x: as many free cores)")
    return "; ".join(parts)


def write_json(path: str | os.PathLike, payload: dict, threading: dict | None = None) -> None:
    """Write ``payload`` plus ``"machine"`` and ``"threading"`` (the settings measured under, by default
    this process's now) to ``path`` (folders are created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {**payload, "machine": machine_info(), "threading": threading or threading_info()}
    path.write_text(json.dumps(record, indent=2))


def report(args: argparse.Namespace, rows: list[dict], columns: Sequence[str], threading: dict, payload: dict,
           repeat: int, plot: Callable[[list[dict], str], None] | None = None) -> None:
    """What every benchmark ends with: the settings line, the clock, the table of ``rows``; the JSON
    (``payload`` plus the clock, ``repeat`` and the rows) at ``args.out``; the plot with ``--plot``."""
    print(describe_threading(threading))
    print(f"{args.clock} clock, median of {repeat} samples taken in turns")
    print_table(rows, columns)
    write_json(args.out, {**payload, "clock": args.clock, "repeat": repeat, "rows": rows}, threading)
    print(f"wrote {args.out}")
    if plot is not None and args.plot:
        png = str(args.out).removesuffix(".json") + ".png"
        plot(rows, png)
        print(f"wrote {png}")


def run_table_benchmark(name: str, doc: str, argv: Sequence[str] | None,
                        measure: Callable[[Any, int, Callable[[], float]], list[dict]], columns: Sequence[str],
                        repeat: int, quick_repeat: int) -> int:
    """The ``main`` of a benchmark whose ``measure(torch, repeat, clock)`` returns its one table's rows:
    the common options, the import order, the thread settings, then :func:`report`."""
    args, child = parse(make_parser(name, doc, repeat), argv, f"tinynorm.benchmarks.{name}")
    if child is not None:
        return child
    torch = import_torch()
    repeat = min(args.repeat, quick_repeat) if args.quick else args.repeat
    with ThreadSettings(args.threads) as settings:
        rows = measure(torch, repeat, CLOCKS[args.clock])
        threading = settings.threading_info()
    report(args, rows, columns, threading, {"benchmark": name}, repeat)
    return 0


# ------------------------------------------------------------ process set-up
def make_parser(name: str, doc: str, repeat: int) -> argparse.ArgumentParser:
    """The parser of ``tinynorm bench NAME`` (its description: ``doc``'s first line) with the options
    every benchmark takes; add a benchmark's own before :func:`parse`."""
    parser = argparse.ArgumentParser(prog=f"tinynorm bench {name}", description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer cases and samples")
    parser.add_argument("--out", default=f"results/bench_{name}.json", help="JSON output (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=repeat, help="timing samples per case (the median is kept)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for Numba, PyTorch and BLAS alike (default: each library's own)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="'cpu' counts this process's CPU time: steadier on a busy machine, needs --threads 1")
    parser.add_argument("--order", choices=ORDERS, default="torch-first",
                        help="import PyTorch before tinynorm (as a script comparing the two does) or after")
    return parser


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None, module: str) -> tuple[argparse.Namespace, int | None]:
    """Parse and check ``argv`` (default: the command line); run ``module`` again in a fresh process when
    it must import PyTorch in another order (see :func:`rerun_in_import_order`). Returns the arguments and
    that process's exit status (None: the benchmark runs here)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args.clock == "cpu" and args.threads != 1:
        parser.error("--clock cpu needs --threads 1 (idle worker threads spinning would count as work)")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be a positive integer, got {args.threads}")
    return args, rerun_in_import_order(module, argv, args.order)


def torch_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def rerun_in_import_order(module: str, argv: Sequence[str], order: str) -> int | None:
    """Run ``module``'s ``main(argv)`` in a fresh process that imports PyTorch in ``order``, unless this
    process already did (then None: go on here). Returns the child's exit status.

    The child gets the environment as the user set it: without the ``GOMP_SPINCOUNT`` that importing
    tinynorm here set, which PyTorch's OpenMP runtime would otherwise read as if the user had chosen it
    (nor the ``OPENBLAS_THREAD_TIMEOUT`` it set).
    """
    if not torch_installed() or _openmp.torch_imported_first == (order == "torch-first"):
        return None
    prelude = "import torch\n" if order == "torch-first" else ""
    code = f"{prelude}import sys\nfrom {module} import main\nsys.exit(main(sys.argv[1:]))"
    env = dict(os.environ)
    if _openmp.spin_set_by_tinynorm:
        env.pop("GOMP_SPINCOUNT", None)
    if _openblas.configured:
        env.pop("OPENBLAS_THREAD_TIMEOUT", None)
    return subprocess.run([sys.executable, "-c", code, *argv], env=env, check=False).returncode


class ThreadSettings:
    """Apply ``--threads`` to Numba, PyTorch and BLAS for the duration of a ``with`` block (nothing when
    None: each library keeps its own default), and measure how free the cores are as it starts
    (:func:`parallel_speedup`); :meth:`threading_info` inside the block adds how free they are then."""

    def __init__(self, threads: int | None) -> None:
        self.threads, self._limits, self.speedup_before = threads, None, None

    def __enter__(self) -> "ThreadSettings":
        self._apply()
        self.speedup_before = parallel_speedup()
        return self

    def threading_info(self) -> dict:
        """:func:`threading_info` with the speed-up measured when the block started."""
        return threading_info(self.speedup_before)

    def _apply(self) -> None:
        if self.threads is None:
            return
        numba.set_num_threads(self.threads)
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(self.threads)
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            raise SystemExit("--threads needs threadpoolctl to limit BLAS's threads: pip install threadpoolctl") from None
        self._limits = threadpool_limits(self.threads, user_api="blas")

    def __exit__(self, *exc: object) -> None:
        if self._limits is not None:
            self._limits.unregister()


def import_torch() -> Any:
    """PyTorch if installed (for the comparison), else None with a note."""
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: tinynorm timings only (pip install torch to compare)")
        return None
    return torch
