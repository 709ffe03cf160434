"""Checks of a paper's (or the tutorials') claims against a run, the same way in every experiment.

A check states the claim and the measured numbers in ``claim`` and whether they bear it out in
``passed``. A quick run is small and noisy: it checks a claim only where that claim was resolved in
quick mode, i.e. where quick runs with 5 different seeds all agreed with the full run; elsewhere it
reports ``passed: None`` with a pointer to the full run, never a FAIL that is only noise.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FULL_RUN_ONLY = "full run only: see docs/experiments.md"


def check(claim: str, passed: bool, quick: bool = False, resolved_in_quick: bool = True) -> dict[str, Any]:
    """One check; in a quick run a claim not ``resolved_in_quick`` is reported but not judged."""
    if quick and not resolved_in_quick:
        return {"claim": claim, "passed": None, "note": FULL_RUN_ONLY}
    return {"claim": claim, "passed": bool(passed)}


def verdict(check_record: dict[str, Any]) -> str:
    """'PASS', 'FAIL' or the full-run-only note."""
    if check_record["passed"] is None:
        return check_record.get("note", FULL_RUN_ONLY)
    return "PASS" if check_record["passed"] else "FAIL"


def check_lines(checks: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown bullet lines, one per check."""
    return [f"- {verdict(c)}: {c['claim']}" for c in checks]


def mean_and_stderr(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (0 for a single value)."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, 0.0
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def quick_agreement(module: Any, out_dir: str | Path, seeds: Sequence[int] = range(5)) -> list[dict[str, Any]]:
    """How often each claim passes in quick runs of ``module`` (an experiment with ``run`` and
    ``make_checks``), one run per seed: what decides which claims a quick run may judge.

    Every claim is judged here, as in a full run. Returns one record per claim: its text in the first
    run, and the seeds where it passed and where it failed.
    """
    import json

    name = module.__name__.rsplit(".", 1)[-1]
    tally: list[dict[str, Any]] = []
    for seed in seeds:
        folder = Path(out_dir) / f"seed_{seed}"
        module.run(folder, quick=True, seeds=[seed], progress=False)
        analysis = json.loads((folder / f"{name}.json").read_text())["analysis"]
        for index, judged in enumerate(module.make_checks(analysis, quick=False)):
            if index == len(tally):
                tally.append({"claim": judged["claim"], "passed": [], "failed": []})
            tally[index]["passed" if judged["passed"] else "failed"].append(seed)
    return tally
