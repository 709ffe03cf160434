"""The ``tinynorm`` command line: ``tinynorm demo`` runs the quick experiments into ``results/``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _demo(args: argparse.Namespace) -> int:
    from .experiments import standardization

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = standardization.run(out, quick=True, seed=0)
    report = out / "report.md"
    report.write_text("# tinynorm demo\n\n## Why normalize inputs\n\n" + "\n".join(result["summary"]) + "\n")
    print(f"results written to {out.resolve()} (report: {report})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tinynorm", description="tinynorm: experiments and benchmarks on normalization.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run quick versions of the experiments and write plots and a report")
    demo.add_argument("--out", default="results", help="folder for plots, JSON and report.md (default: results)")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
