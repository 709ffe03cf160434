"""Which claims can an experiment's quick mode resolve? Run the quick mode with several seed sets.

A claim belongs in quick mode (the demo, the tests) only if its quick measurement passes with every
seed set whenever the full run bears the claim out: then a quick FAIL means something broke, not
noise. This tool runs the quick mode ``--runs`` times with disjoint seeds and prints per claim how many
runs passed it (claims left to the full run carry their measured verdict too), beside the verdict of a
full-run record (``--full``, e.g. docs/runs/NAME.json).

    python -m tinynorm.experiments.audit batch-size --runs 5 --full docs/runs/batch_size.json
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from .common import markdown_table


def quick_seeds(run_index: int, per_run: int) -> list[int]:
    """The seeds of quick run ``run_index``: the next ``per_run`` integers after the previous run's."""
    return list(range(run_index * per_run, (run_index + 1) * per_run))


def audit(name: str, runs: int = 5, seeds_per_run: int = 2) -> dict[str, dict[str, Any]]:
    """Per claim id: its claim text (from the first run), and how many of ``runs`` quick runs passed it."""
    from ..cli import run_experiment

    tally: dict[str, dict[str, Any]] = {}
    for index in range(runs):
        with tempfile.TemporaryDirectory() as out:
            result = run_experiment(name, Path(out), True, None, False,
                                    seed_list=quick_seeds(index, seeds_per_run))
        for check in result["checks"] + result.get("full_run_only", []):
            entry = tally.setdefault(check["id"], {"claim": check["claim"], "passed": 0, "runs": 0})
            entry["passed"] += bool(check["passed"])
            entry["runs"] += 1
    return tally


def full_verdicts(path: Path) -> dict[str, bool]:
    """Claim id -> passed, from a full-run JSON record."""
    record = json.loads(path.read_text())
    if record.get("quick"):
        raise ValueError(f"{path} is a quick-mode record; --full needs a full run's JSON")
    return {c["id"]: bool(c["passed"]) for c in record["checks"]}


def table(tally: dict[str, dict[str, Any]], full: dict[str, bool] | None) -> list[str]:
    """Markdown table: claim id, full-run verdict, quick passes, and whether quick mode may judge it."""
    rows = []
    for claim_id, entry in tally.items():
        holds = None if full is None else full.get(claim_id)
        always = entry["passed"] == entry["runs"]
        rows.append([claim_id, {None: "-", True: "PASS", False: "FAIL"}[holds], f"{entry['passed']}/{entry['runs']}",
                     "yes" if always and holds is not False else "no"])
    return markdown_table(["claim", "full run", "quick runs passing", "judged in quick mode"], rows)


def main(argv: list[str] | None = None) -> int:
    from ..cli import EXPERIMENTS

    parser = argparse.ArgumentParser(prog="python -m tinynorm.experiments.audit", description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(EXPERIMENTS), help="which experiment")
    parser.add_argument("--runs", type=int, default=5, help="quick runs with disjoint seeds (default 5)")
    parser.add_argument("--seeds-per-run", type=int, default=2, help="seeds in each quick run (default 2)")
    parser.add_argument("--full", type=Path, default=None, help="a full run's JSON record, for its verdicts")
    parser.add_argument("--tally", type=Path, default=None,
                        help="JSON file of the per-claim counts: written after the runs, or read instead of "
                             "running them if it exists")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.seeds_per_run < 1:
        parser.error("--runs and --seeds-per-run must be positive")
    if args.tally is not None and args.tally.exists():
        tally = json.loads(args.tally.read_text())
    else:
        tally = audit(args.name, args.runs, args.seeds_per_run)
        if args.tally is not None:
            args.tally.write_text(json.dumps(tally, indent=2))
    print("\n".join(table(tally, full_verdicts(args.full) if args.full else None)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
