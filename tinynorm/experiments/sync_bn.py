"""SyncBatchNorm under data parallelism: local BatchNorm, SyncBatchNorm and GroupNorm over MPI processes.

The tutorials (note 003, section 7.3): with DistributedDataParallel every process normalizes with the
statistics of its own shard unless SyncBatchNorm merges them; without SyncBatchNorm, "training looks
normal but converges noticeably worse, especially with large batches".

Here ``SmallMLP``'s architecture on the 8x8 digits (Linear-norm-ReLU twice, then Linear) is trained
with ``tinynorm.distributed`` on 2 and 4 processes (``mpiexec``) with per-process batches of 1 to 16, with
each norm: BatchNorm (each process's shard statistics; rank 0's running statistics are broadcast, as
DDP does), SyncBatchNorm (the global batch's statistics) and GroupNorm (32 groups; no batch statistics).
The reference is a single process training on the global batch. Every run draws the same global
batches (a seeded permutation per epoch; process r takes the r-th slice of each), starts from the same
weights, and follows the batch-size experiment's protocol: SGD with momentum 0.9 at 0.1 * B / 32 for the
global batch B, a cosine decay to 0, the same number of epochs at every batch size, test error in eval
mode. Each process's loss is the mean over its shard, so DDP's gradient average is the gradient of the
global mean.

"The same computation" is judged on the first update (the first loss and the loss after one step),
before the rounding differences of any reordered float32 sum grow: BatchNorm over a few values
amplifies them step by step until the runs are different draws of training noise. Their size is
measured, not assumed: every single-process reference is repeated with each global batch's rows in
reverse order, mathematically the same training, rounded differently.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import nn
from ..autograd import no_grad
from ..data import load_digits
from ..nn.functional import cross_entropy
from ..optim import SGD
from ..optim.lr_scheduler import CosineAnnealingLR
from ..random import manual_seed
from ..tensor import tensor
from .claims import check, check_lines, quick_mode_checks, mean_and_stderr
from .common import cpu_seconds, duration, markdown_table, new_figure, run_seeds, save_figure, single_threaded
from .records import write_outputs

NORMS = ("batchnorm", "syncbn", "groupnorm")
LABELS = {"batchnorm": "local BatchNorm", "syncbn": "SyncBatchNorm", "groupnorm": "GroupNorm (32 groups)"}
HIDDEN, GROUPS, REFERENCE_BATCH, BASE_LR = 128, 32, 32, 0.1
COMPARED_STEPS = 20  # first training losses recorded, to follow how fast two runs drift apart
FIRST_UPDATE = 2  # the first loss and the loss after one update: every part of the step, once
ROUNDING = 1e-5  # "agree to float32 rounding": about 40 units in the last place of a loss near 2
TIMEOUT_S = 3600  # a guard against a hung MPI job; a loaded machine needs its margin
TEST_IMAGES = 450  # load_digits()'s test split


@dataclass(frozen=True)
class Settings:
    worlds: tuple[int, ...]
    per_process_batches: tuple[int, ...]
    norms: tuple[str, ...]
    seeds: tuple[int, ...]
    epochs: int


QUICK = Settings(worlds=(2,), per_process_batches=(2, 16), norms=("batchnorm", "syncbn"), seeds=(0,), epochs=1)
FULL = Settings(worlds=(2, 4), per_process_batches=(1, 2, 4, 8, 16), norms=NORMS, seeds=(0, 1, 2), epochs=8)

# What a quick run judges: the claims the full run bears out that quick runs with seeds 0-4 each passed (5/5).
# Left to the full run: syncbn_same_error (5/5, but not a test there: of its two pairs the batch-16 one never
# drifts apart, and with one difference of 0 the mean equals its standard error whatever the other is),
# local_worse (fails in the full run; 4/5 quick), looks_normal and worse_at_large (fail in both).
RESOLVED_IN_QUICK = frozenset({"syncbn_matches"})


# ------------------------------------------------------------------------------------------ training


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The digits as flat 64-vectors, standardized with the training pixels' mean and std."""
    X_train, y_train, X_test, y_test = load_digits()
    mean, std = X_train.mean(), X_train.std()
    flat = lambda X: ((X - mean) / std).reshape(len(X), -1).astype(np.float32)  # noqa: E731
    return flat(X_train), y_train, flat(X_test), y_test


def make_model(norm: str) -> nn.Module:
    """The MLP with ``norm`` after each hidden Linear."""
    def layer() -> nn.Module:
        if norm == "groupnorm":
            return nn.GroupNorm(GROUPS, HIDDEN)
        if norm == "syncbn":
            return nn.SyncBatchNorm(HIDDEN)
        if norm == "batchnorm":
            return nn.BatchNorm1d(HIDDEN)
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")

    return nn.Sequential(nn.Linear(64, HIDDEN), layer(), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), layer(), nn.ReLU(),
                         nn.Linear(HIDDEN, 10))


def global_batches(n: int, batch: int, epochs: int, seed: int) -> list[np.ndarray]:
    """Every step's global batch of sample indices: a fresh seeded permutation per epoch, short tail dropped."""
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(epochs):
        order = rng.permutation(n)
        steps += [order[start:start + batch] for start in range(0, n - batch + 1, batch)]
    return steps


def train_and_test(norm: str, per_process: int, seed: int, epochs: int, data: tuple[np.ndarray, ...],
                   comm: Any = None, reverse_rows: bool = False) -> dict[str, Any]:
    """Train on this process's shard of each global batch (all of it without ``comm``); the test error.

    With ``comm`` (an mpi4py communicator) the model is wrapped in DistributedDataParallel and every
    process must call this with the same arguments. ``reverse_rows`` feeds each global batch's rows in
    reverse order: the same training, with its float32 sums in another order. A configuration
    BatchNorm refuses (one value per channel) is reported as an error, on every process alike.
    """
    from .. import distributed

    X_train, y_train, X_test, y_test = data
    world, rank = (1, 0) if comm is None else (comm.Get_size(), comm.Get_rank())
    batch = per_process * world
    record: dict[str, Any] = {"norm": norm, "world": world, "per_process": per_process, "global_batch": batch,
                              "seed": seed, "reverse_rows": reverse_rows}
    manual_seed(seed)
    model = make_model(norm)
    trained = model if comm is None else distributed.DistributedDataParallel(model, comm=comm)
    steps = global_batches(len(X_train), batch, epochs, seed)
    optimizer = SGD(model.parameters(), lr=BASE_LR * batch / REFERENCE_BATCH, momentum=0.9)
    schedule = CosineAnnealingLR(optimizer, T_max=len(steps))
    losses = []
    trained.train()
    try:
        for indices in steps:
            rows = indices[::-1] if reverse_rows else indices
            shard = rows[rank * per_process:(rank + 1) * per_process]
            loss = cross_entropy(trained(tensor(X_train[shard])), tensor(y_train[shard]))
            optimizer.zero_grad()
            loss.backward()
            if comm is not None:
                trained.allreduce_gradients()
            optimizer.step()
            schedule.step()
            losses.append(float(loss.item()))
    except ValueError as error:
        return dict(record, error=str(error))
    model.eval()
    with no_grad():
        predictions = model(tensor(X_test)).numpy().argmax(axis=1)
    # The global batch's mean loss (each rank's is its shard's mean): the first steps, and the last epoch
    # in training mode, as training shows it.
    summary = np.array(losses[:COMPARED_STEPS] + [float(np.mean(losses[-(len(steps) // epochs):]))])
    if comm is not None:
        summary = comm.allreduce(summary) / world
    return dict(record, test_error=float(100 * np.mean(predictions != y_test)),
                first_losses=[float(v) for v in summary[:-1]], train_loss=float(summary[-1]), steps=len(steps))


def worker(settings: Settings, out_file: str) -> None:
    """The body of every MPI process: all runs of the settings on this world; rank 0 writes them."""
    from .. import distributed

    comm = distributed.init()
    data = load_data()
    runs = []
    with single_threaded():
        for norm in settings.norms:
            for per_process in settings.per_process_batches:
                for seed in settings.seeds:
                    runs.append(train_and_test(norm, per_process, seed, settings.epochs, data, comm))
    if comm.Get_rank() == 0:
        Path(out_file).write_text(json.dumps(runs))


# ------------------------------------------------------------------------------------------ run


def mpiexec() -> str:
    """mpiexec beside this Python (the mpich wheel installs it into the environment), else on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        raise RuntimeError('sync-bn: mpiexec not found beside this Python or on PATH: pip install "tinynorm[mpi]"')
    return found


def run_world(world: int, settings: Settings) -> list[dict[str, Any]]:
    """Every run of ``settings`` on ``world`` MPI processes (a subprocess under mpiexec)."""
    with tempfile.TemporaryDirectory() as folder:
        out_file = os.path.join(folder, "runs.json")
        command = [mpiexec(), "-n", str(world), sys.executable, "-m", "mpi4py", "-m", "tinynorm.experiments.sync_bn",
                   "--worker", json.dumps(asdict(settings)), out_file]
        env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")  # several processes share few cores
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"sync-bn: {world} processes gave no result within {TIMEOUT_S} s") from None
        if done.returncode != 0 or not os.path.exists(out_file):
            raise RuntimeError(f"sync-bn: {world} processes failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return json.loads(Path(out_file).read_text())


def run(out_dir: str | Path, quick: bool = False, seeds: Sequence[int] | None = None,
        progress: bool = True) -> dict[str, Any]:
    """The DDP runs for every world size, then the single-process references (each also with its batches'
    rows reversed); write sync_bn.json, .md, .png."""
    settings = QUICK if quick else FULL
    settings = replace(settings, seeds=run_seeds("sync_bn", seeds, settings.seeds))
    out_dir = Path(out_dir)
    start, start_cpu = time.perf_counter(), cpu_seconds()
    distributed_runs = []
    for world in settings.worlds:
        if progress:
            print(f"sync-bn: {world} processes ...", file=sys.stderr, flush=True)
        distributed_runs += run_world(world, settings)
    data = load_data()
    batches = sorted({w * b for w in settings.worlds for b in settings.per_process_batches})
    reference_norms = [n for n in settings.norms if n != "syncbn"]  # one process: SyncBatchNorm is BatchNorm
    if progress:
        print("sync-bn: single-process references ...", file=sys.stderr, flush=True)
    with single_threaded():
        references = [train_and_test(norm, batch, seed, settings.epochs, data, reverse_rows=reverse)
                      for norm in reference_norms for batch in batches for seed in settings.seeds
                      for reverse in (False, True)]
    results: dict[str, Any] = {"quick": quick, "settings": asdict(settings), "hidden": HIDDEN, "groups": GROUPS,
                               "distributed": distributed_runs, "single_process": references}
    results["seconds"], results["cpu_seconds"] = time.perf_counter() - start, cpu_seconds() - start_cpu
    return finish(results, out_dir)


def finish(results: dict[str, Any], out_dir: str | Path) -> dict[str, Any]:
    """Analysis, checks, summary, figure and the files, from a run's raw results."""
    out_dir = Path(out_dir)
    results["analysis"] = analyse(results["distributed"], results["single_process"], Settings(**results["settings"]))
    results["checks"], results["full_run_only"] = quick_mode_checks(make_checks(results["analysis"]),
                                                                    results["quick"], RESOLVED_IN_QUICK)
    return write_outputs(results, out_dir, "sync_bn", summarize, report, plot, record_curves)


def record_curves(results: dict[str, Any]) -> dict[str, Any]:
    """What the record keeps beyond the analysis (which holds the figure's data): the model's sizes and
    every run's outcome (test error, training loss, or the error that stopped it), without its per-step
    losses."""
    def outcome(run: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in run.items() if key != "first_losses"}

    return {"hidden": results["hidden"], "groups": results["groups"],
            "distributed": [outcome(r) for r in results["distributed"]],
            "single_process": [outcome(r) for r in results["single_process"]]}


# ------------------------------------------------------------------------------------------ analysis


def matching(runs: list[dict[str, Any]], **fields: Any) -> list[dict[str, Any]]:
    """The runs whose ``fields`` have the given values, in seed order."""
    return sorted((r for r in runs if all(r[k] == v for k, v in fields.items())), key=lambda r: r["seed"])


def trained(runs: list[dict[str, Any]]) -> bool:
    """Whether there are runs and every one of them could train."""
    return bool(runs) and not any("error" in r for r in runs)


def summary_of(runs: list[dict[str, Any]], key: str) -> list[float] | None:
    """Mean and standard error over seeds of the runs' ``key``; None if one of them could not train."""
    return list(mean_and_stderr([r[key] for r in runs])) if trained(runs) else None


def paired_gap(first: list[dict[str, Any]], second: list[dict[str, Any]], key: str) -> list[float] | None:
    """Mean and standard error over seeds of first[key] - second[key], seed by seed."""
    if not (trained(first) and trained(second)):
        return None
    return list(mean_and_stderr([a[key] - b[key] for a, b in zip(first, second, strict=True)]))


def compare(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """How closely runs follow their references: the largest loss difference over the first update and
    at each of the first steps, and the test error difference (mean, s.e. over all pairs)."""
    drift = np.max([np.abs(np.subtract(run["first_losses"], ref["first_losses"])) for run, ref in pairs], axis=0)
    return {"pairs": len(pairs), "first_update": float(drift[:FIRST_UPDATE].max()), "drift": drift.tolist(),
            "test_error": list(mean_and_stderr([run["test_error"] - ref["test_error"] for run, ref in pairs]))}


def analyse(distributed_runs: list[dict[str, Any]], references: list[dict[str, Any]],
            settings: Settings) -> dict[str, Any]:
    """Per number of processes and per-process batch: each norm's test error (mean, s.e. over seeds), the
    single-process reference on the same global batch, and the seed-paired gaps local BatchNorm -
    SyncBatchNorm in test error and in training loss. Over all of them, how closely SyncBatchNorm (and
    GroupNorm) under DDP follow the single process, beside how closely the single process with its
    batches' rows reversed follows itself."""
    table: list[dict[str, Any]] = []
    pairs: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for world in settings.worlds:
        for b in settings.per_process_batches:
            row: dict[str, Any] = {"world": world, "per_process": b, "global_batch": world * b}
            runs = {n: matching(distributed_runs, norm=n, world=world, per_process=b) for n in settings.norms}
            for norm, mine in runs.items():
                row[norm] = summary_of(mine, "test_error")
                reference_norm = "batchnorm" if norm == "syncbn" else norm  # one process: SyncBatchNorm is BatchNorm
                theirs = matching(references, norm=reference_norm, global_batch=world * b, reverse_rows=False)
                row[f"reference_{reference_norm}"] = summary_of(theirs, "test_error")
                if norm != "batchnorm" and trained(mine) and trained(theirs):
                    pairs.setdefault(norm, []).extend(zip(mine, theirs, strict=True))
            row["gap"] = paired_gap(runs["batchnorm"], runs["syncbn"], "test_error")
            row["train_loss"] = {n: summary_of(runs[n], "train_loss") for n in ("batchnorm", "syncbn")}
            row["train_loss_gap"] = paired_gap(runs["batchnorm"], runs["syncbn"], "train_loss")
            table.append(row)
    for norm in sorted({r["norm"] for r in references}):
        for batch in sorted({r["global_batch"] for r in references}):
            plain, flipped = (matching(references, norm=norm, global_batch=batch, reverse_rows=reverse)
                              for reverse in (False, True))
            pairs.setdefault(f"reversed_{norm}", []).extend(zip(flipped, plain, strict=True))
    return {"table": table, "comparisons": {name: compare(p) for name, p in pairs.items()}}


def make_checks(analysis: dict[str, Any]) -> list[dict[str, Any]]:
    """'Matches': the first loss and the loss after one update agree to float32 rounding (ROUNDING),
    and the test errors after training do not differ on average (the mean difference over all runs
    within two standard errors of 0). 'Noticeably worse' (and 'higher'): local BatchNorm's value above
    SyncBatchNorm's by more than two standard errors of the seed-paired gap; 'especially with large
    batches': the gap at the largest per-process batch above the gap at the smallest one that trains,
    for every number of processes."""
    table, comparisons = analysis["table"], analysis["comparisons"]
    rows = [r for r in table if r["gap"] is not None]
    worlds = sorted({r["world"] for r in rows})
    worse = [f"{r['world']} x {r['per_process']}" for r in rows if r["gap"][0] > 2 * r["gap"][1]]
    higher = [f"{r['world']} x {r['per_process']}" for r in rows
              if r["train_loss_gap"][0] > 2 * r["train_loss_gap"][1]]
    refused = [f"{r['world']} x {r['per_process']}" for r in table if r["batchnorm"] is None]
    gaps = {w: [r["gap"][0] for r in rows if r["world"] == w] for w in worlds}

    def configurations(names: list[str]) -> str:
        return ", ".join(names) or "none"

    def follows(norm: str, label: str, reference: str) -> list[dict[str, Any]]:
        mine, ruler = comparisons[norm], comparisons[f"reversed_{reference}"]
        error, ruler_error = mine["test_error"], ruler["test_error"]
        return [
            check(f"{norm}_matches", f"{label} under DDP computes what one process computes on the global batch: "
                  f"the first loss and the loss after one update agree to {mine['first_update']:.1g} in all "
                  f"{mine['pairs']} runs (float32 rounding: at most {ROUNDING:g}; one process with its batches' "
                  f"rows reversed: {ruler['first_update']:.1g})", mine["first_update"] <= ROUNDING),
            check(f"{norm}_same_error", f"... and trains to the same test error: difference from one process "
                  f"{error[0]:+.2f} ± {error[1]:.2f} points over all runs, within 2 s.e. of 0 (rows reversed: "
                  f"{ruler_error[0]:+.2f} ± {ruler_error[1]:.2f})", abs(error[0]) <= 2 * error[1]),
        ]

    checks = follows("syncbn", "SyncBatchNorm", "batchnorm") + [
        check("local_worse", "Tutorial: DDP without SyncBatchNorm converges noticeably worse: local BatchNorm's test "
              "error is above SyncBatchNorm's by more than 2 s.e. at every (processes x per-process batch) that trains "
              f"(it is at: {configurations(worse)}"
              + (f"; local BatchNorm cannot train at {', '.join(refused)}: one value per channel" if refused else "")
              + ")", len(worse) == len(rows)),
        check("looks_normal", "Tutorial: ... while training looks normal: local BatchNorm's training loss over the "
              "last epoch is not above SyncBatchNorm's by more than 2 s.e. anywhere (it is at: "
              f"{configurations(higher)})", not higher),
        check("worse_at_large", "Tutorial: ... especially with large batches: the gap at the largest per-process batch "
              "exceeds the gap at the smallest, for every number of processes (gaps by per-process batch: "
              + "; ".join(f"{w} processes " + ", ".join(f"{g:+.1f}" for g in gaps[w]) for w in worlds) + " points)",
              all(gaps[w][-1] > gaps[w][0] for w in worlds)),
    ]
    if "groupnorm" in comparisons:
        checks += follows("groupnorm", "GroupNorm, which does not depend on how the batch is split,", "groupnorm")
    return checks


def _cell(value: list[float] | None, digits: int = 1) -> str:
    return "cannot train" if value is None else f"{value[0]:.{digits}f} ± {value[1]:.{digits}f}"


def summarize(results: dict[str, Any]) -> list[str]:
    lines = ["**SyncBatchNorm under DDP** (test error %, mean ± s.e. over seeds; processes x per-process batch):"]
    for row in results["analysis"]["table"]:
        parts = [f"{LABELS[n]} {_cell(row.get(n))}" for n in results["settings"]["norms"]]
        lines.append(f"- {row['world']} x {row['per_process']} (global {row['global_batch']}): " + "; ".join(parts)
                     + f"; one process, BatchNorm on the global batch {_cell(row.get('reference_batchnorm'))}")
    return lines


COMPARED = {"syncbn": "SyncBatchNorm under DDP vs one process (BatchNorm)",
            "reversed_batchnorm": "one process, BatchNorm, rows reversed vs as drawn",
            "groupnorm": "GroupNorm under DDP vs one process",
            "reversed_groupnorm": "one process, GroupNorm, rows reversed vs as drawn"}


def report(results: dict[str, Any]) -> str:
    st, analysis = results["settings"], results["analysis"]
    header = ["processes", "per-process batch", "global batch", *(LABELS[n] for n in st["norms"]),
              "1 process, BatchNorm", "gap local - Sync", "training loss, local", "training loss, Sync"]
    rows = [[r["world"], r["per_process"], r["global_batch"], *(_cell(r.get(n)) for n in st["norms"]),
             _cell(r.get("reference_batchnorm")), _cell(r["gap"]), _cell(r["train_loss"]["batchnorm"], 3),
             _cell(r["train_loss"]["syncbn"], 3)] for r in analysis["table"]]
    compared = [[COMPARED[name], c["pairs"], f"{c['first_update']:.1g}", f"{max(c['drift']):.2g}",
                 _cell(c["test_error"], 2)] for name, c in analysis["comparisons"].items()]
    lines = ["# SyncBatchNorm under data parallelism", "",
             (f"Mode: {'quick' if results['quick'] else 'full'}, {duration(results)}, seeds {list(st['seeds'])}. "
              f"MLP 64-{HIDDEN}-{HIDDEN}-10 on the 8x8 digits, {st['epochs']} epochs, SGD momentum 0.9, lr 0.1 x B / "
              f"32 for the global batch B, cosine to 0; test error (%) in eval mode on {TEST_IMAGES} test images; "
              "training loss: the mean over the last epoch, in training mode."), "",
             *markdown_table(header, rows), "",
             "'cannot train': BatchNorm refuses a batch with one value per channel (as PyTorch's does).", "",
             "## The same computation?", "",
             *markdown_table(["runs compared", "pairs", "largest loss difference, first update",
                              f"... over the first {COMPARED_STEPS} steps", "test error difference (points)"],
                             compared), "",
             "## Checks", "", *check_lines(results), "",
             "## The tutorials' statement beside this run", "",
             "- Note 003, 7.3: without SyncBatchNorm, DDP training looks normal but converges noticeably worse, "
             "especially with large batches."]
    return "\n".join(lines) + "\n"


def plot(record: dict[str, Any], file: Path) -> Path:
    """From the record: test error against the per-process batch, one panel per number of processes; then
    how far runs that compute the same thing drift apart over the first steps."""
    st, analysis = record["settings"], record["analysis"]
    fig, axes = new_figure(ncols=len(st["worlds"]) + 1, size=(5.0, 3.8))
    for ax, world in zip(axes[0], st["worlds"]):
        rows = [r for r in analysis["table"] if r["world"] == world]
        for key, label, style in [*((n, LABELS[n], "o-") for n in st["norms"]),
                                  ("reference_batchnorm", "1 process, BatchNorm, global batch", "k--")]:
            points = [(r["per_process"], r[key]) for r in rows if r.get(key) is not None]
            if points:
                x, values = zip(*points)
                ax.errorbar(x, [v[0] for v in values], yerr=[v[1] for v in values], fmt=style, label=label, capsize=2)
        ax.set_xscale("log", base=2)
        ax.set_xticks(st["per_process_batches"], [str(b) for b in st["per_process_batches"]])
        ax.set(xlabel="per-process batch", ylabel="test error (%)", title=f"{world} processes")
        ax.legend(fontsize=7)
    ax = axes[0][-1]
    for name, comparison in analysis["comparisons"].items():
        drift = np.maximum(comparison["drift"], 1e-9)  # an exact match drawn at the axis' floor
        ax.semilogy(np.arange(len(drift)), drift, "--" if name.startswith("reversed") else "-", label=COMPARED[name])
    ax.axhline(ROUNDING, color="gray", lw=0.8)
    ax.set_xticks(range(0, COMPARED_STEPS, 5))
    ax.set(xlabel="training step", ylabel="largest loss difference", title="The same computation, rounded differently")
    ax.legend(fontsize=6)
    return save_figure(fig, file)


def main(argv: list[str] | None = None) -> None:
    """``python -m mpi4py -m tinynorm.experiments.sync_bn --worker SETTINGS_JSON OUT_FILE`` (what
    :func:`run_world` starts under mpiexec)."""
    parser = argparse.ArgumentParser(description="one MPI process of the sync-bn experiment")
    parser.add_argument("--worker", required=True, help="the settings as JSON")
    parser.add_argument("out_file")
    args = parser.parse_args(argv)
    fields = json.loads(args.worker)
    worker(Settings(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}), args.out_file)


if __name__ == "__main__":
    main()
