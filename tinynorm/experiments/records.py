"""An experiment's files: the compact JSON record of a run, its Markdown page and its figure.

A run measures much more than it keeps: per-step losses, per-channel statistics, profiles at every
depth and seed. The analysis and the checks are computed from all of it; the record keeps what a
reader needs to see the result again: the settings, the analysis, the checks, the summary and the
curves the figure draws, subsampled and rounded to the figure's resolution, as one-line JSON. The
figure is drawn from the record itself, so a record always carries what its figure shows.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .common import environment

DIGITS = 4  # significant digits kept in a record: far finer than a figure or a table shows
RUN_KEYS = ("quick", "seed", "seeds", "settings", "seconds", "cpu_seconds", "analysis", "checks", "full_run_only",
            "summary", "environment")


def rounded(value: Any, digits: int = DIGITS) -> Any:
    """``value`` with every finite float rounded to ``digits`` significant digits, in nested dicts,
    lists and tuples (tuples become lists, numpy scalars Python numbers); anything else unchanged."""
    if isinstance(value, (np.generic, np.ndarray)):
        value = value.tolist()
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else value
    if isinstance(value, dict):
        return {key: rounded(item, digits) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(item, digits) for item in value]
    return value


def thinned(values: Sequence[Any], count: int) -> list[Any]:
    """At most ``count`` (>= 2) evenly spaced items of ``values``, the first and the last among them."""
    if count < 2:
        raise ValueError(f"thinned: count must be at least 2, got {count}")
    n = len(values)
    if n <= count:
        return list(values)
    return [values[round(k * (n - 1) / (count - 1))] for k in range(count)]


def write_outputs(results: dict[str, Any], out_dir: Path, name: str, summarize: Callable, report: Callable,
                  plot: Callable, curves: Callable) -> dict[str, Any]:
    """Write NAME.json (the record), NAME.md and NAME.png of an analysed run into ``out_dir``; returns what
    an experiment's ``run`` returns (summary, checks, the checks left to the full run, figures).

    ``summarize(results)`` gives the summary's Markdown lines, ``report(results)`` the page,
    ``curves(results)`` the record's data beyond the run's settings and analysis (what the figure
    draws), ``plot(record, file)`` the figure from the record."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results["summary"] = summarize(results)
    record = {key: results[key] for key in RUN_KEYS if key in results}
    record.setdefault("environment", environment())
    record = rounded({**record, **curves(results)})
    figure = plot(record, out_dir / f"{name}.png")
    record["figures"] = [figure.name]
    (out_dir / f"{name}.json").write_text(json.dumps(record, separators=(",", ":")) + "\n")
    (out_dir / f"{name}.md").write_text(report(results))
    return {"summary": results["summary"], "checks": results["checks"],
            "full_run_only": results.get("full_run_only", []), "figures": [str(figure)]}

