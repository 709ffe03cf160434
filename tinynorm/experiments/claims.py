"""Checks of a paper's (or the tutorials') claims against a run, the same way in every experiment.

A check has an ``id``, states the claim and the measured numbers in ``claim``, and says in ``passed``
whether they bear it out. A quick run is small and noisy: it judges only the claims it resolves (those
whose quick measurement passed with every seed in quick runs with 5 different seeds, where the full run
bears them out); the others are returned apart, in ``full_run_only``, measured but not judged, never a
FAIL that is only noise.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

FULL_RUN_ONLY = "full run only: see docs/experiments.md"


def check(claim_id: str, claim: str, passed: bool) -> dict[str, Any]:
    return {"id": claim_id, "claim": claim, "passed": bool(passed)}


def quick_mode_checks(checks: list[dict[str, Any]], quick: bool,
                      resolvable: frozenset[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split ``checks`` into those a run may judge and those only the full run can.

    Every check has an ``id``; a full run judges them all. A quick run judges only the ids in
    ``resolvable``: the claims whose quick-mode measurement passes with every seed set when the
    full run bears them out (``python -m tinynorm.experiments.audit`` measures that). The others
    are returned apart, measured but not judged: their quick numbers are too noisy to mean a PASS
    or a FAIL.
    """
    if not quick:
        return checks, []
    unknown = resolvable - {c["id"] for c in checks}
    if unknown:
        raise ValueError(f"quick_mode_checks: resolvable ids {sorted(unknown)} name no check")
    return [c for c in checks if c["id"] in resolvable], [c for c in checks if c["id"] not in resolvable]


def check_lines(results: dict[str, Any]) -> list[str]:
    """Markdown bullet lines for a result's checks: PASS/FAIL, then the claims left to the full run."""
    lines = [f"- {'PASS' if c['passed'] else 'FAIL'}: {c['claim']}" for c in results["checks"]]
    return lines + [f"- {FULL_RUN_ONLY}: {c['claim']}" for c in results.get("full_run_only", [])]


def mean_and_stderr(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (0 for a single value)."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, 0.0
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def paired_difference(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Mean of ``a[i] - b[i]`` and its standard error: for two measurements of the same seeds (the same
    trained weights evaluated two ways), whose shared seed-to-seed spread cancels in the difference."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    return mean_and_stderr([x - y for x, y in zip(a, b)])
