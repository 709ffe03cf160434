"""The ``tinynorm`` command line (also ``python -m tinynorm``).

    tinynorm demo                       quick experiments + a short kernel benchmark -> results/report.md
    tinynorm experiment NAME [options]  one experiment, quick or full
    tinynorm bench [NAME ...] [options] the benchmarks against PyTorch (tinynorm.benchmarks)
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path
from typing import Any

from . import benchmarks

# benchmark name on the command line -> module in tinynorm.benchmarks
BENCHMARKS = benchmarks.BENCHMARKS
# which of --threads/--clock/--order a benchmark takes, where not all three
SETTINGS_TAKEN = {"import-order": ()}

# experiment name on the command line -> module in tinynorm.experiments
EXPERIMENTS = {
    "batch-size": "batch_size",
    "placement": "placement",
    "rms-vs-ln": "rms_vs_ln",
    "standardization": "standardization",
    "rnn-layernorm": "rnn_layernorm",
    "residual-variance": "residual_variance",
    "half-precision": "half_precision",
    "sync-bn": "sync_bn",
}


def run_experiment(name: str, out: Path, quick: bool, seeds: int | None, show_progress: bool,
                   seed_list: list[int] | None = None) -> dict[str, Any]:
    """Run one experiment by its command-line name; returns its result dict (with 'summary').

    ``seeds`` runs seeds 0..seeds-1; ``seed_list`` (which wins) names them.
    """
    module = importlib.import_module(f"tinynorm.experiments.{EXPERIMENTS[name]}")
    if seed_list is None and seeds is not None:
        seed_list = list(range(seeds))
    if name == "standardization":  # a numpy-only study: one seed
        return module.run(out, quick=quick, seed=0 if seed_list is None else seed_list[-1])
    return module.run(out, quick=quick, seeds=seed_list, progress=show_progress)


def _checks_table(results: dict[str, dict[str, Any]]) -> list[str]:
    """Every claim of every result: PASS/FAIL where the run can judge it, else left to the full run."""
    from .experiments.claims import FULL_RUN_ONLY

    lines = ["| experiment | claim | result |", "|---|---|---|"]
    for name, result in results.items():
        for check in result.get("checks", []):
            lines.append(f"| {name} | {check['claim']} | {'PASS' if check['passed'] else 'FAIL'} |")
        for check in result.get("full_run_only", []):
            lines.append(f"| {name} | {check['claim']} | {FULL_RUN_ONLY} |")
    return lines


def _print_summary(results: dict[str, dict[str, Any]], seconds: dict[str, float]) -> None:
    print("\nSummary")
    for name, result in results.items():
        checks = result.get("checks", [])
        passed = sum(c["passed"] for c in checks)
        left = len(result.get("full_run_only", []))
        print(f"  {name:16s} {seconds[name]:7.1f} s   checks passed: {passed}/{len(checks)}"
              + (f" ({left} more for the full run only)" if left else ""))


def _experiment_command(args: argparse.Namespace) -> int:
    out = Path(args.out)
    start = time.perf_counter()
    result = run_experiment(args.name, out, args.quick, args.seeds, not args.no_progress)
    _print_summary({args.name: result}, {args.name: time.perf_counter() - start})
    print(f"\nresults written to {out.resolve()}")
    return 0


def _demo_command(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    seconds: dict[str, float] = {}
    for name in EXPERIMENTS:
        print(f"== experiment {name} (quick)", flush=True)
        start = time.perf_counter()
        results[name] = run_experiment(name, out, True, None, not args.no_progress)
        seconds[name] = time.perf_counter() - start
    print("== benchmark: normalization kernels (quick)", flush=True)
    bench_json = out / "bench_norms.json"
    _run_benchmark("norms", ["--quick", "--out", str(bench_json)])
    report = out / "report.md"
    lines = ["# tinynorm demo report", "",
             ("Quick versions of every experiment; `docs/experiments.md` has the full runs. A quick run judges only "
              "the claims it can resolve (they pass with every seed set whenever the full run bears them out); the "
              "others are measured but marked 'full run only'."), ""]
    lines += ["## Checks", ""] + _checks_table(results) + [""]
    for name, result in results.items():
        lines += [f"## {name}", ""] + list(result.get("summary", [])) + [""]
    lines += ["## Kernel benchmark (quick)", ""] + _benchmark_table(bench_json) + [""]
    report.write_text("\n".join(lines))
    _print_summary(results, seconds)
    print(f"\nresults written to {out.resolve()}\nreport: {report.resolve()}")
    return 0


def _benchmark_table(path: Path) -> list[str]:
    """The norm benchmark's JSON as a Markdown table (times in ms, x torch > 1: tinynorm is faster)."""
    import json

    from .experiments.common import markdown_table

    record = json.loads(path.read_text())
    columns = ["op", "shape", "fwd ms", "fwd %copy", "fwd x torch", "f+b ms", "f+b %copy", "f+b x torch"]
    rows = [[row.get(column, "-") for column in columns] for row in record["rows"]]
    note = (f"float32; copy bandwidth {record['copy_GB_per_s']:.1f} GB/s; '%copy' = throughput over it; "
            f"'x torch' = PyTorch's time over tinynorm's. Full table: `{path.name}`, docs/benchmarks.md.")
    return [note, ""] + markdown_table(columns, rows)


def _run_benchmark(name: str, argv: list[str]) -> int:
    """Run one benchmark with command-line arguments ``argv``; its exit status."""
    return importlib.import_module(BENCHMARKS[name]).main(argv)


def _bench_command(args: argparse.Namespace) -> int:
    status = 0
    for name in args.which or list(BENCHMARKS):
        print(f"== benchmark {name}", flush=True)
        argv = ["--out", str(Path(args.out) / f"bench_{name}.json")] + (["--quick"] if args.quick else [])
        for option in SETTINGS_TAKEN.get(name, ("threads", "clock", "order")):
            if getattr(args, option) is not None:
                argv += [f"--{option}", str(getattr(args, option))]
        argv += ["--plot"] if args.plot and name in ("norms", "scale") else []
        status = max(status, _run_benchmark(name, argv))
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tinynorm",
        description="tinynorm: reproduce what the normalization papers report, and benchmark the kernels.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser("demo", help="quick versions of all experiments plus a kernel benchmark, with a report",
                               description="Run every experiment in quick mode and a short kernel benchmark; "
                                           "write plots, JSON and report.md into --out.")
    demo.add_argument("--out", default="results", help="folder for plots, JSON and report.md (default: results)")
    demo.add_argument("--no-progress", action="store_true", help="do not draw progress bars")
    demo.set_defaults(run=_demo_command)

    experiment = commands.add_parser("experiment", help="run one experiment",
                                     description="Run one experiment and write NAME.json, NAME.md and its PNG figures.")
    experiment.add_argument("name", choices=sorted(EXPERIMENTS), help="which experiment")
    experiment.add_argument("--quick", action="store_true", help="the small version used by the tests and the demo")
    experiment.add_argument("--seeds", type=_positive_int, default=None,
                            help="number of random seeds (default: the experiment's own, 1-3)")
    experiment.add_argument("--out", default="results", help="output folder (default: results)")
    experiment.add_argument("--no-progress", action="store_true", help="do not draw progress bars")
    experiment.set_defaults(run=_experiment_command)

    bench = commands.add_parser("bench", help="benchmarks against PyTorch (when installed)",
                                description="Run benchmarks (all by default); each prints its threading settings "
                                            "and a table, and writes OUT/bench_NAME.json. By default each library "
                                            "runs with its own thread count and OpenMP settings, PyTorch imported "
                                            "before tinynorm.")
    bench.add_argument("which", nargs="*", type=_benchmark_name, help=f"which benchmarks (default: all of {', '.join(BENCHMARKS)})")
    bench.add_argument("--quick", action="store_true", help="a fast subset of shapes and samples")
    bench.add_argument("--out", default="results", help="folder for the JSON files (default: results)")
    bench.add_argument("--threads", type=_positive_int, default=None,
                       help="threads for Numba, PyTorch and BLAS alike (default: each library's own)")
    bench.add_argument("--clock", choices=("wall", "cpu"), default=None,
                       help="'cpu': this process's CPU time, steadier on a busy machine (needs --threads 1)")
    bench.add_argument("--order", choices=("torch-first", "tinynorm-first"), default=None,
                       help="import PyTorch before tinynorm (the default) or after")
    bench.add_argument("--plot", action="store_true", help="also write the PNG plots (norms, scale)")
    bench.set_defaults(run=_bench_command)
    return parser


def _benchmark_name(text: str) -> str:
    if text not in BENCHMARKS:
        raise argparse.ArgumentTypeError(f"unknown benchmark {text!r}; choose from {', '.join(BENCHMARKS)}")
    return text


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, RuntimeError) as error:
        print(f"tinynorm: error: {error}", file=sys.stderr)
        return 2
