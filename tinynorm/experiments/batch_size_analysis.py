"""When BatchNorm breaks: the batch-size experiment's analysis of BatchNorm's batch statistics.

It reads the cells of ``batch_size.batch_norm_analysis``: per model kind and training batch size, the
per-layer noise of the batch statistics (``batch_size.statistics_noise``, means over seeds) and the
test errors of the same trained weights under running, recomputed and batch statistics (per seed).
It answers three questions, each with numbers, a figure panel and a check:

* **Does n_eff measure the noise?** A statistic pooling n_eff effective values has a batch mean that
  spreads by 1/sqrt(n_eff) of the population's standard deviation when the batch's samples are
  independent, which holds exactly at a network's first BatchNorm. Deeper BatchNorms see calmer batch
  means, because their inputs come out of BatchNorms that already standardized the batch.
* **Does the smallest n_eff decide when BatchNorm breaks, whatever the architecture?** Across the
  MLPs, the CNN stages and a 1x1 stage, one threshold on the smallest n_eff of a network's layers
  should separate the (model, batch size) cells whose error rises from those whose error does not.
* **Which part of the mechanism costs the accuracy?** The weights are trained with batch statistics and
  evaluated with running ones (what ``model.eval()`` uses). The train/eval discrepancy costs what
  evaluating the same weights as they were trained, with batch statistics of the training size,
  recovers: running minus batch error when positive, at most the whole rise in error over the
  reference batch. The rest of the rise is training noise: weights trained on noisy statistics are
  worse under any statistics (recomputed population statistics show it without the running
  averages' own error).
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .claims import paired_difference
from .common import markdown_table, new_figure, save_figure

MODES = ("running", "recomputed", "batch")  # the statistics a trained BatchNorm model is evaluated with
MIN_POINTS = 1.0  # a rise in error counts only above this many points (the paper's smallest step: 1.1 at B=8)
NOISE_SE = 2.0  # ... and above this many standard errors of the difference over seeds
EQUALITY_SE = 3.0  # a measured ratio agrees with its prediction within this many standard errors


def significant(difference: float, se: float) -> bool:
    """Whether a rise in error (points, with its standard error) counts: above MIN_POINTS and NOISE_SE
    standard errors."""
    return difference > MIN_POINTS and difference > NOISE_SE * se


def _difference(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    """a - b for two {mean, sem} cells over independent seeds."""
    return {"mean": a["mean"] - b["mean"], "se": math.hypot(a["sem"], b["sem"])}


def recovered_by_batch_statistics(cell: dict[str, Any]) -> dict[str, float]:
    """Running minus batch statistics' error on the same weights: mean and standard error over seeds."""
    mean, se = paired_difference(cell["errors"]["running"]["per_seed"], cell["errors"]["batch"]["per_seed"])
    return {"mean": mean, "se": se}


def degradation(analysis: dict[str, dict[str, Any]], reference: int) -> dict[str, dict[str, dict[str, Any]]]:
    """table[model][str(batch)]: BatchNorm's rise in test error over ``reference`` batch under each kind
    of statistics (each against its own error at the reference batch); ``recovered``, what evaluating
    with batch statistics of the training size gains over the running statistics on the same weights;
    the rise with running statistics split into ``discrepancy`` (the recovered part, between 0 and the
    rise) and ``training_noise`` (the rest); ``degraded`` when the rise with running statistics exceeds
    MIN_POINTS and NOISE_SE standard errors. Models without a cell at the reference batch are left out."""
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for kind, cells in analysis.items():
        base = cells.get(str(reference))
        if base is None:
            continue
        for batch, cell in cells.items():
            rise = {mode: _difference(cell["errors"][mode], base["errors"][mode]) for mode in MODES}
            running, recovered = rise["running"], recovered_by_batch_statistics(cell)
            discrepancy = min(max(recovered["mean"], 0.0), max(running["mean"], 0.0))
            table.setdefault(kind, {})[batch] = {
                "min_n_eff": cell["min_n_eff"], "min_values": cell["min_values"],
                "seeds": min(cell["seeds"], base["seeds"]), "rise": rise,
                "recovered": recovered, "discrepancy": discrepancy, "training_noise": running["mean"] - discrepancy,
                "degraded": int(batch) != reference and significant(running["mean"], running["se"])}
    return table


def breaking_point(table: dict[str, dict[str, dict[str, Any]]], reference: int) -> dict[str, Any]:
    """The degraded and the intact (model, batch) cells below the reference batch with their smallest
    n_eff, the largest n_eff at which BatchNorm degraded and the smallest at which it did not."""
    degraded, intact = [], []
    for kind, cells in table.items():
        for batch, cell in cells.items():
            if int(batch) != reference:
                (degraded if cell["degraded"] else intact).append({"model": kind, "batch": int(batch),
                                                                   "n_eff": cell["min_n_eff"]})
    return {"degraded": degraded, "intact": intact,
            "largest_degraded_n_eff": max((c["n_eff"] for c in degraded), default=None),
            "smallest_intact_n_eff": min((c["n_eff"] for c in intact), default=None)}


def first_layer_noise(analysis: dict[str, dict[str, Any]], noise_batches: int,
                      reference_samples: int) -> dict[str, dict[str, float]]:
    """Per model: the first BatchNorm's measured variance of the batch mean over the one n_eff predicts
    (``mean_variance_ratio``), averaged over batch sizes with each run weighted equally, and its
    standard error. The error follows from the measurement, not from the scatter: a variance from
    ``noise_batches`` batch means has a relative standard error of sqrt(2 / (batches - 1)) for
    Gaussian batch means, independent from run to run; the population variance behind the prediction
    one of sqrt(2 / (samples - 1)), counted once per seed, as a run draws its reference samples with
    its seed, the same ones at every batch size. Averaging over channels is not counted: the
    channels share the batches."""
    found = {}
    for kind, cells in analysis.items():
        runs, seeds = sum(c["seeds"] for c in cells.values()), max(c["seeds"] for c in cells.values())
        ratio = sum(c["layers"][0]["mean_variance_ratio"] * c["seeds"] for c in cells.values()) / runs
        se = math.sqrt(2 / (noise_batches - 1) / runs + 2 / (reference_samples - 1) / seeds)
        found[kind] = {"ratio": ratio, "se": se, "estimates": runs}
    return found


def deeper_layer_ratios(analysis: dict[str, dict[str, Any]]) -> dict[str, list[float]]:
    """Per model: ``mean_variance_ratio`` of every BatchNorm after the first, at every batch size."""
    return {kind: [layer["mean_variance_ratio"] for cell in cells.values() for layer in cell["layers"][1:]]
            for kind, cells in analysis.items()}


def std_spread_ratios(analysis: dict[str, dict[str, Any]]) -> dict[str, list[float]]:
    """Per model: every BatchNorm's relative spread of the batch standard deviation over the
    1/sqrt(2 n_eff) of independent Gaussian values, at every batch size."""
    return {kind: [layer["std_spread"] * math.sqrt(2 * layer["n_eff"]) for cell in cells.values()
                   for layer in cell["layers"]] for kind, cells in analysis.items()}


def checks(analysis: dict[str, dict[str, Any]], reference: int, small: int, noise_batches: int,
           reference_samples: int) -> list[dict[str, Any]]:
    """The analysis' claims with their measured verdicts: per model, the first BatchNorm's batch mean
    spreads as n_eff predicts; across models, one threshold on the smallest n_eff separates degraded
    from intact cells (when both kinds were measured); per model whose BatchNorm degrades at batch
    ``small``, the train/eval discrepancy explains less than half of the rise."""
    found = []
    for kind, noise in first_layer_noise(analysis, noise_batches, reference_samples).items():
        off = noise["ratio"] - 1.0
        found.append({"id": f"{kind}.noise_follows_n_eff",
                      "claim": f"{kind}: the first BatchNorm's batch mean varies as 1/n_eff predicts for independent "
                               f"samples: measured/predicted variance {noise['ratio']:.3f} +- {noise['se']:.3f} "
                               f"({noise['estimates']} run(s) of {noise_batches} batches each; within "
                               f"{EQUALITY_SE:g} standard errors of 1)",
                      "passed": abs(off) <= EQUALITY_SE * noise["se"]})
    table = degradation(analysis, reference)
    point = breaking_point(table, reference)
    if point["degraded"] and point["intact"]:
        high, low = point["largest_degraded_n_eff"], point["smallest_intact_n_eff"]
        found.append({"id": "batchnorm.n_eff_decides",
                      "claim": f"the smallest n_eff alone tells where BatchNorm breaks, across "
                               f"{len(table)} model(s): all {len(point['degraded'])} cells whose error rises (running "
                               f"statistics, > {MIN_POINTS:g} point and {NOISE_SE:g} standard errors over batch "
                               f"{reference}) have a smaller n_eff (at most {high:.1f}) than all "
                               f"{len(point['intact'])} cells whose error does not (at least {low:.1f})",
                      "passed": high < low})
    for kind, cells in table.items():
        cell = cells.get(str(small))
        if cell is None or not cell["degraded"]:
            continue
        running, recovered = cell["rise"]["running"], cell["recovered"]
        margin = running["mean"] / 2 - recovered["mean"]
        se = math.hypot(running["se"] / 2, recovered["se"])
        found.append({"id": f"{kind}.breakdown_is_training_noise",
                      "claim": f"{kind}: at batch {small} BatchNorm's rise of {running['mean']:.2f} +- "
                               f"{running['se']:.2f} points (running statistics) is mostly training noise, not the "
                               f"train/eval discrepancy: evaluating the same weights with batch statistics of the "
                               f"training size recovers {recovered['mean']:+.2f} +- {recovered['se']:.2f} points, less "
                               f"than half the rise by more than {NOISE_SE:g} standard errors",
                      "passed": margin > NOISE_SE * se})
    return found


def summary_lines(analysis: dict[str, dict[str, Any]], reference: int, noise_batches: int,
                  reference_samples: int) -> list[str]:
    """Markdown lines: where BatchNorm breaks in n_eff, the noise there, and the split of the rise."""
    table = degradation(analysis, reference)
    point = breaking_point(table, reference)
    lines = []
    if point["degraded"]:
        low = min(c["n_eff"] for c in point["degraded"])
        high = point["largest_degraded_n_eff"]
        intact = [c["n_eff"] for c in point["intact"]]
        lines.append(f"- When BatchNorm breaks: its error rises (running statistics) in {len(point['degraded'])} of "
                     f"{len(point['degraded']) + len(intact)} cells below batch {reference}, at a smallest n_eff of "
                     f"{low:.1f}-{high:.1f} (a batch mean spreading by {low ** -0.5:.2f}-{high ** -0.5:.2f} of the "
                     f"std at the first BatchNorm)" + (f"; it does not in {len(intact)}, at n_eff {min(intact):.1f}-"
                                                       f"{max(intact):.1f}." if intact else "."))
    for kind, cells in table.items():
        for batch in sorted((b for b, c in cells.items() if c["degraded"]), key=int):
            c = cells[batch]
            lines.append(f"- {kind} at batch {batch}: +{c['rise']['running']['mean']:.2f} points with running "
                         f"statistics, +{c['rise']['recomputed']['mean']:.2f} recomputed, "
                         f"{c['rise']['batch']['mean']:+.2f} with batch statistics; evaluating as trained recovers "
                         f"{c['recovered']['mean']:+.2f}: {c['training_noise']:.2f} points training noise, "
                         f"{c['discrepancy']:.2f} train/eval discrepancy.")
    deeper, stds = deeper_layer_ratios(analysis), std_spread_ratios(analysis)
    for kind, noise in first_layer_noise(analysis, noise_batches, reference_samples).items():
        tail = f"; deeper BatchNorms median {np.median(deeper[kind]):.2f}" if deeper[kind] else ""
        q25, q50, q75 = np.percentile(stds[kind], [25, 50, 75])
        lines.append(f"- {kind}: batch-mean variance over the n_eff prediction, first BatchNorm "
                     f"{noise['ratio']:.2f} +- {noise['se']:.2f}{tail}; batch-std spread over 1/sqrt(2 n_eff), every "
                     f"BatchNorm: median {q50:.2f} (quartiles {q25:.2f}-{q75:.2f}).")
    return lines


def report_lines(analysis: dict[str, dict[str, Any]], reference: int) -> list[str]:
    """Markdown table of the rise in error per kind of statistics and its split, per model and batch
    (the standard errors where both batch sizes have several seeds)."""
    def shown(value: dict[str, float], seeds: int) -> str:
        return f"{value['mean']:+.2f}" + (f" +- {value['se']:.2f}" if seeds > 1 else "")

    rows = []
    for kind, cells in degradation(analysis, reference).items():
        for batch in sorted(cells, key=int):
            c = cells[batch]
            rows.append([kind, batch, c["seeds"], f"{c['min_n_eff']:.1f}", f"{c['min_n_eff'] ** -0.5:.2f}",
                         *(shown(c["rise"][m], c["seeds"]) for m in MODES),
                         shown(c["recovered"], c["seeds"]), f"{c['training_noise']:.2f}",
                         f"{c['discrepancy']:.2f}", "yes" if c["degraded"] else "no"])
    return markdown_table(["model", "B", "seeds", "smallest n_eff", "1/sqrt(n_eff)", "rise: running", "rise: recomputed",
                           "rise: batch", "running - batch (same weights)", "training noise", "train/eval discrepancy",
                           "degraded"], rows)


MODE_STYLES = {"running": ("o", "-"), "recomputed": ("s", "--"), "batch": ("^", ":")}


def plot(analysis: dict[str, dict[str, Any]], reference: int, file: Path) -> Path:
    """Four panels: the relative spread of the batch mean and of the batch standard deviation of every
    BatchNorm layer against its n_eff, with the 1/sqrt(n_eff) and 1/sqrt(2 n_eff) of independent
    (Gaussian) values (first layers filled, deeper ones open); BatchNorm's rise in error over the
    reference batch against the network's smallest n_eff under the three kinds of statistics; and n_eff
    against the nominal values per statistic."""
    fig, axes = new_figure(ncols=2, nrows=2, size=(5.6, 4.4))
    (mean_ax, std_ax), (rise_ax, count_ax) = axes
    table = degradation(analysis, reference)
    for i, (kind, cells) in enumerate(analysis.items()):
        color = f"C{i}"
        for cell in cells.values():
            for depth, layer in enumerate(cell["layers"]):
                face = color if depth == 0 else "none"
                mean_ax.plot(layer["n_eff"], layer["mean_spread"], "o", color=color, markerfacecolor=face,
                             markersize=4, alpha=0.8)
                std_ax.plot(layer["n_eff"], layer["std_spread"], "o", color=color, markerfacecolor=face,
                            markersize=4, alpha=0.8)
                count_ax.plot(layer["values"], layer["n_eff"], "o", color=color, markersize=3, alpha=0.7)
        for ax in (mean_ax, std_ax, count_ax):
            ax.plot([], [], "o", color=color, label=kind)
        if kind in table:
            batches = sorted(table[kind], key=int)
            x = [table[kind][b]["min_n_eff"] for b in batches]
            for mode, (marker, line) in MODE_STYLES.items():
                rise_ax.errorbar(x, [table[kind][b]["rise"][mode]["mean"] for b in batches],
                                 yerr=[table[kind][b]["rise"][mode]["se"] for b in batches], marker=marker,
                                 linestyle=line, color=color, capsize=2, markersize=4)
            rise_ax.plot([], [], "-", color=color, label=kind)
    for mode, (marker, line) in MODE_STYLES.items():
        rise_ax.plot([], [], marker=marker, linestyle=line, color="gray", label=f"{mode} statistics")
    n = np.geomspace(1, max([l["n_eff"] for c in analysis.values() for cell in c.values() for l in cell["layers"]]
                            + [2]), 50)
    mean_ax.plot(n, n ** -0.5, color="black", linewidth=1, label="1/sqrt(n_eff)")
    std_ax.plot(n, (2 * n) ** -0.5, color="black", linewidth=1, label="1/sqrt(2 n_eff)")
    mean_ax.set_title("noise of the batch mean (filled: first BatchNorm)", fontsize=9)
    std_ax.set_title("noise of the batch std (filled: first BatchNorm)", fontsize=9)
    for ax in (mean_ax, std_ax):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("effective values per statistic n_eff")
        ax.set_ylabel("spread over batches / population std")
    rise_ax.set_xscale("log", base=2)
    rise_ax.set_yscale("symlog", linthresh=2.0)
    ticks = [-2, -1, 0, 1, 2, 5, 10, 20, 50]
    rise_ax.set_yticks(ticks, [str(t) for t in ticks])
    rise_ax.axhline(0.0, color="gray", linewidth=0.8)
    rise_ax.set_xlabel("smallest n_eff of the network's BatchNorms")
    rise_ax.set_ylabel(f"test error minus error at batch {reference} (points)")
    rise_ax.set_title("when BatchNorm breaks (same weights, three kinds of statistics)", fontsize=9)
    count_ax.set_xscale("log", base=2)
    count_ax.set_yscale("log", base=2)
    span = [v for line in count_ax.get_lines() for v in line.get_xdata()]
    if span:
        count_ax.plot([min(span), max(span)], [min(span), max(span)], ":", color="gray", label="independent values")
    count_ax.set_xlabel("nominal values per statistic (B x H x W)")
    count_ax.set_ylabel("effective values n_eff")
    count_ax.set_title("correlated neighbours count less (every layer, every batch)", fontsize=9)
    for ax in (mean_ax, std_ax, rise_ax, count_ax):
        ax.legend(fontsize=7)
    return save_figure(fig, file)


def main(argv: list[str] | None = None) -> int:
    """Rebuild the analysis from single training jobs, one JSON record per line (``train_and_evaluate``'s)."""
    from .batch_size import NOISE_BATCHES, NOISE_REFERENCE, REFERENCE_BATCH, batch_norm_analysis

    parser = argparse.ArgumentParser(prog="python -m tinynorm.experiments.batch_size_analysis",
                                     description=main.__doc__)
    parser.add_argument("records", nargs="+", type=Path, help="JSON-lines files of training jobs")
    parser.add_argument("--figure", type=Path, default=None, help="where to draw the figure (PNG)")
    args = parser.parse_args(argv)
    runs = [json.loads(line) for path in args.records for line in path.read_text().splitlines() if line.strip()]
    analysis = batch_norm_analysis(runs)
    lines = report_lines(analysis, REFERENCE_BATCH) + [""]
    lines += summary_lines(analysis, REFERENCE_BATCH, NOISE_BATCHES, NOISE_REFERENCE) + [""]
    small = min(int(r["batch_size"]) for r in runs)
    lines += [f"- {'PASS' if c['passed'] else 'FAIL'} {c['id']}: {c['claim']}"
              for c in checks(analysis, REFERENCE_BATCH, small, NOISE_BATCHES, NOISE_REFERENCE)]
    print("\n".join(lines))
    if args.figure is not None:
        plot(analysis, REFERENCE_BATCH, args.figure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
