"""BatchNorm breaks at small batches; GroupNorm and LayerNorm do not (Wu & He, "Group Normalization", 2018).

Wu & He train ResNet-50 on ImageNet with 32, 16, 8, 4 and 2 images per batch, scaling the learning
rate linearly with the batch (0.1 * B / 32). BatchNorm's validation error climbs from 23.6% to 34.7%
as the batch shrinks; GroupNorm's stays at 24.1 +- 0.1%. The reason: BatchNorm normalizes each sample
with statistics of its batch. With two samples those statistics are noisy, training learns weights for
noisy statistics, and evaluation then swaps in the running averages the model never trained with.
GroupNorm and LayerNorm normalize each sample on its own, so the batch size cannot reach them.

Here the same protocol runs on the 8x8 digits: ``SmallCNN`` (and ``SmallMLP``) with each norm, batch
sizes 2 to 64, SGD with momentum 0.9 at ``lr = 0.1 * B / 32`` annealed by a cosine over the run,
the same number of epochs (so the same number of samples seen) at every batch size, several seeds,
test error measured in eval mode.

What the digits show: the MLP reproduces the paper (BatchNorm breaks at batch 2, the per-sample norms
stay flat), the CNN does not. BatchNorm suffers in proportion to the noise of its statistics, and each
pools B x H x W values: 2 per feature in the MLP at batch 2, but 2 x 8 x 8 = 128 per channel on the
CNN's first maps, enough to stay accurate. At batch 64 the models without BatchNorm lose instead:
the same number of epochs gives them too few steps.

On a trained CNN with BatchNorm the experiment also shows the two classic BatchNorm mistakes and their fixes:

1. Evaluating in training mode: predictions then depend on which other images share the batch
   (fix: ``model.eval()``).
2. Stale running statistics: weights loaded into a model whose BatchNorm buffers were not loaded
   (fix: ``recompute_batch_norm_statistics(model, train_batches)``).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

import tinynorm as tn
import tinynorm.nn.functional as F
from tinynorm.data import load_digits, minibatches
from tinynorm.models import SmallCNN, SmallMLP
from tinynorm.nn import Module, recompute_batch_norm_statistics
from tinynorm.optim import SGD
from tinynorm.optim.lr_scheduler import CosineAnnealingLR

from .common import markdown_table, new_figure, save_figure, single_threaded, write_json
from .common import progress as progress_bar

REFERENCE_BATCH = 32  # lr = base_lr * B / REFERENCE_BATCH, as in the paper
EVAL_BATCH = 256
MODELS = {"cnn": ("batchnorm", "groupnorm", "layernorm", "instancenorm", "none"),
          "mlp": ("batchnorm", "layernorm", "rmsnorm", "none")}
PUBLISHED = {  # Wu & He 2018, Figure 5 / Table 3: ResNet-50 ImageNet validation error (%)
    "batch_sizes": [2, 4, 8, 16, 32],
    "batchnorm": [34.7, 27.3, 24.8, 23.7, 23.6],
    "groupnorm": [24.1, 24.2, 24.0, 24.2, 24.1],
}


@dataclass(frozen=True)
class Settings:
    """Everything that defines a run of the experiment (recorded in the JSON)."""

    models: dict[str, tuple[str, ...]]
    batch_sizes: tuple[int, ...]
    seeds: tuple[int, ...]
    epochs: int
    base_lr: float
    width: int  # SmallCNN channels


QUICK = Settings(models={"mlp": ("batchnorm", "layernorm")}, batch_sizes=(2, 32), seeds=(0, 1), epochs=3,
                 base_lr=0.1, width=16)
FULL = Settings(models=MODELS, batch_sizes=(2, 4, 8, 16, 32, 64), seeds=(0, 1, 2), epochs=8, base_lr=0.1,
                width=16)


def scaled_lr(base_lr: float, batch_size: int) -> float:
    """The linear scaling rule: the learning rate is proportional to the batch size."""
    return base_lr * batch_size / REFERENCE_BATCH


def steps_per_epoch(n_samples: int, batch_size: int) -> int:
    """Full batches per epoch (the short last batch is dropped: BatchNorm needs every batch at size B)."""
    if not 1 <= batch_size <= n_samples:
        raise ValueError(f"batch_size must be in [1, {n_samples}] (the number of samples), got {batch_size}")
    return n_samples // batch_size


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The digits split of ``load_digits()``, pixels standardized with the training images' mean and std
    (without it the models without BatchNorm train much more slowly: fewer steps at large batches hurt)."""
    X_train, y_train, X_test, y_test = load_digits()
    mean, std = X_train.mean(), X_train.std()
    return (X_train - mean) / std, y_train, (X_test - mean) / std, y_test


def make_model(kind: str, norm: str, width: int = 16) -> Module:
    """``SmallCNN`` ('cnn') or ``SmallMLP`` ('mlp') with the given norm."""
    if kind == "cnn":
        return SmallCNN(norm=norm, width=width)
    if kind == "mlp":
        return SmallMLP(norm=norm)
    raise ValueError(f"model kind must be 'cnn' or 'mlp', got {kind!r}")


def inputs_for(kind: str, X: np.ndarray) -> np.ndarray:
    """Images (N, 1, 8, 8) for the CNN, flat 64-vectors for the MLP."""
    return X if kind == "cnn" else X.reshape(len(X), -1)


def train(model: Module, X: np.ndarray, y: np.ndarray, batch_size: int, lr: float, epochs: int,
          seed: int) -> list[float]:
    """SGD with momentum 0.9 and a per-step cosine schedule from ``lr`` to 0; returns the losses."""
    total_steps = epochs * steps_per_epoch(len(X), batch_size)
    optimizer = SGD(model.parameters(), lr=lr, momentum=0.9)
    schedule = CosineAnnealingLR(optimizer, T_max=total_steps)
    order = np.random.default_rng(seed)
    losses = []
    model.train()
    for _ in range(epochs):
        for xb, yb in minibatches(X, y, batch_size=batch_size, rng=order, drop_last=True):
            loss = F.cross_entropy(model(tn.tensor(xb)), tn.tensor(yb))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
    return losses


def predict(model: Module, X: np.ndarray, batch_size: int = EVAL_BATCH) -> np.ndarray:
    """Predicted classes, computed in batches of ``batch_size`` in the model's current mode."""
    with tn.no_grad():
        return np.concatenate([model(tn.tensor(X[i:i + batch_size])).argmax(1).numpy()
                               for i in range(0, len(X), batch_size)])


def error_percent(model: Module, X: np.ndarray, y: np.ndarray, batch_size: int = EVAL_BATCH) -> float:
    """Percentage of misclassified samples (the model's mode decides eval or batch statistics)."""
    return float(100.0 * np.mean(predict(model, X, batch_size) != y))


def clone(model: Module, kind: str, norm: str, width: int, buffers: bool = True) -> Module:
    """A fresh model with ``model``'s parameters, and its buffers (running statistics) if ``buffers``."""
    copy = make_model(kind, norm, width)
    state = model.state_dict()
    if not buffers:
        parameter_names = {name for name, _ in model.named_parameters()}
        state = {name: value for name, value in state.items() if name in parameter_names}
    copy.load_state_dict(state, strict=buffers)
    return copy.eval()


# --------------------------------------------------------------------------- the two BatchNorm mistakes


def train_mode_evaluation(model: Module, kind: str, width: int, X: np.ndarray, y: np.ndarray,
                          probes: int = 40, companions: int = 10) -> dict[str, Any]:
    """Mistake 1: evaluating a BatchNorm model in training mode.

    Errors in eval mode and in train mode with test batches of 2 and of EVAL_BATCH; then each of the
    first ``probes`` test images is evaluated in a batch of two with each of ``companions`` other test
    images, in both modes, counting the images whose prediction depends on the companion.
    Runs on copies: a train-mode forward would overwrite the model's running statistics.
    """
    evaluating = clone(model, kind, "batchnorm", width)
    training = clone(model, kind, "batchnorm", width).train()
    offsets = np.random.default_rng(0).integers(1, len(X), size=(probes, companions))  # companion of i: i + offset
    varying, example = {"train": 0, "eval": 0}, None
    for i in range(probes):
        pairs = np.stack([np.stack([X[i], X[(i + j) % len(X)]]) for j in offsets[i]])
        for mode, copy in (("train", training), ("eval", evaluating)):
            predictions = [int(predict(copy, pair)[0]) for pair in pairs]
            varying[mode] += len(set(predictions)) > 1
            if mode == "train" and len(set(predictions)) > 1 and example is None:
                example = {"test_index": i, "label": int(y[i]),
                           "predictions": {str(c): predictions.count(c) for c in sorted(set(predictions))}}
    return {
        "eval_mode_error": error_percent(evaluating, X, y),
        "train_mode_error_batch_2": error_percent(training, X, y, batch_size=2),
        f"train_mode_error_batch_{EVAL_BATCH}": error_percent(training, X, y, batch_size=EVAL_BATCH),
        "probes": probes, "companions": companions,
        "images_with_varying_prediction": varying, "example": example,
    }


def stale_statistics(model: Module, kind: str, width: int, data: tuple[np.ndarray, ...]) -> dict[str, Any]:
    """Mistake 2: the trained weights loaded into a fresh model without its BatchNorm buffers
    (running mean 0, variance 1), then the fix: re-estimate them from the training images."""
    X_train, _, X_test, y_test = data
    fresh = clone(model, kind, "batchnorm", width, buffers=False)
    stale = error_percent(fresh, X_test, y_test)
    batches = [tn.tensor(xb) for (xb,) in minibatches(X_train, batch_size=REFERENCE_BATCH, shuffle=False)]
    recompute_batch_norm_statistics(fresh, batches)
    return {"trained_error": error_percent(model.eval(), X_test, y_test), "stale_error": stale,
            "recomputed_error": error_percent(fresh, X_test, y_test), "recompute_batches": len(batches)}


# --------------------------------------------------------------------------- the experiment


def run(out_dir: str | Path, quick: bool = False, seeds: list[int] | None = None, device: str = "cpu",
        progress: bool = True) -> dict[str, Any]:
    """Train every (model, norm, batch size, seed) of the settings, measure test errors and the two
    BatchNorm mistakes; write batch_size.json, batch_size.png and batch_size.md into ``out_dir``.

    The mistakes are shown on the CNN with BatchNorm trained at batch 32 with the first seed.
    ``quick``: the MLP with BatchNorm and LayerNorm at batch 2 and 32, two seeds, 3 epochs, plus that CNN
    (~40-75 s on two busy cores). The full run: both models, every norm, batch sizes 2 to 64, three seeds,
    8 epochs.
    """
    if device != "cpu":
        raise ValueError(f"device: only 'cpu' is supported by this experiment for now, got {device!r}")
    settings = QUICK if quick else FULL
    if seeds is not None:
        settings = replace(settings, seeds=_checked_seeds(seeds))
    out_dir = Path(out_dir)
    start = time.perf_counter()
    data = load_data()
    subject = ("cnn", "batchnorm", REFERENCE_BATCH, settings.seeds[0])  # the model the mistakes study
    jobs = [(kind, norm, batch, seed) for kind, norms in settings.models.items() for norm in norms
            for batch in settings.batch_sizes for seed in settings.seeds]
    extra = [] if subject in jobs else [subject]  # quick mode has no CNN runs: train the subject alone
    runs, mistakes = [], {}
    with single_threaded():
        for job in progress_bar(jobs + extra, label="batch_size", enabled=progress):
            record, model = train_and_evaluate(*job, settings, data)
            if job not in extra:
                runs.append(record)
            if job == subject:
                mistakes = {"model": "cnn", "norm": "batchnorm", "batch_size": REFERENCE_BATCH, "seed": job[3],
                            "test_error": record["test_error"],
                            "train_mode": train_mode_evaluation(model, "cnn", settings.width, data[2], data[3]),
                            "stale_statistics": stale_statistics(model, "cnn", settings.width, data)}
    errors = error_table(runs)
    results: dict[str, Any] = {
        "settings": dict(asdict(settings), reference_batch=REFERENCE_BATCH, eval_batch=EVAL_BATCH, momentum=0.9,
                         schedule="cosine to 0 over all steps, per step", data="load_digits(), standardized"),
        "published": PUBLISHED,
        "runs": runs,
        "errors": errors,
        "mistakes": mistakes,
        "checks": checks(errors, mistakes, settings),
        "figures": [str(plot(errors, settings, out_dir / "batch_size.png"))],
    }
    results["wall_seconds"] = time.perf_counter() - start
    results["summary"] = summarize(results)
    write_json(out_dir / "batch_size.json", results)
    (out_dir / "batch_size.md").write_text("\n".join(report(results)) + "\n")
    return results


def _checked_seeds(seeds: Any) -> tuple[int, ...]:
    if (not isinstance(seeds, (list, tuple)) or not seeds
            or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in seeds)):
        raise TypeError(f"seeds must be a non-empty list of ints, got {seeds!r}")
    return tuple(int(s) for s in seeds)


def train_and_evaluate(kind: str, norm: str, batch: int, seed: int, settings: Settings,
                       data: tuple[np.ndarray, ...]) -> tuple[dict[str, Any], Module]:
    """Train one model from seed ``seed``; return its record and the trained model (in eval mode)."""
    X_train, y_train, X_test, y_test = data
    tn.manual_seed(seed)
    model = make_model(kind, norm, settings.width)
    lr = scaled_lr(settings.base_lr, batch)
    started = time.perf_counter()
    losses = train(model, inputs_for(kind, X_train), y_train, batch, lr, settings.epochs, seed)
    model.eval()
    record = {"model": kind, "norm": norm, "batch_size": batch, "seed": seed, "lr": lr, "steps": len(losses),
              "samples_seen": len(losses) * batch,
              "final_train_loss": float(np.mean(losses[-steps_per_epoch(len(X_train), batch):])),
              "test_error": error_percent(model, inputs_for(kind, X_test), y_test),
              "seconds": time.perf_counter() - started}
    return record, model


def error_table(runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """errors[model][norm][str(batch)] = mean and std (over seeds, ddof=0) and the per-seed errors in %."""
    table: dict[str, Any] = {}
    for r in runs:
        cell = table.setdefault(r["model"], {}).setdefault(r["norm"], {}).setdefault(str(r["batch_size"]), {})
        cell.setdefault("per_seed", []).append(r["test_error"])
    for cell in (c for norms in table.values() for batches in norms.values() for c in batches.values()):
        cell["mean"], cell["std"] = float(np.mean(cell["per_seed"])), float(np.std(cell["per_seed"]))
    return table


# --------------------------------------------------------------------------- checks and report

BN_MIN_RATIO = 2.0  # BatchNorm's error at the smallest batch is at least this many times its error at 32
FLAT_MARGIN = 1.5  # points: GroupNorm/LayerNorm at the smallest batch vs at 32 (~3 standard errors of a mean)
STALE_MIN_RATIO = 3.0  # error with stale running statistics vs the trained model's
BATCH_INDEPENDENT = ("groupnorm", "layernorm")


def checks(errors: dict[str, Any], mistakes: dict[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """The claims of the experiment, each with its measured verdict."""
    small, ref = str(min(settings.batch_sizes)), str(REFERENCE_BATCH)
    found = []
    for kind, norms in errors.items():
        if "batchnorm" in norms and ref in norms["batchnorm"]:
            at_small, at_ref = norms["batchnorm"][small]["mean"], norms["batchnorm"][ref]["mean"]
            found.append({"id": f"{kind}.batchnorm_breaks", "claim": f"{kind}: BatchNorm's test error at batch {small} ({at_small:.2f}%) is at least "
                                   f"{BN_MIN_RATIO:g}x its error at batch {ref} ({at_ref:.2f}%)",
                          "passed": at_small >= BN_MIN_RATIO * at_ref})
        for norm in (n for n in BATCH_INDEPENDENT if n in norms and ref in norms[n]):
            at_small, at_ref = norms[norm][small]["mean"], norms[norm][ref]["mean"]
            found.append({"id": f"{kind}.{norm}_flat", "claim": f"{kind}: {norm}'s test error at batch {small} ({at_small:.2f}%) is within "
                                   f"{FLAT_MARGIN:g} points of its error at batch {ref} ({at_ref:.2f}%)",
                          "passed": abs(at_small - at_ref) <= FLAT_MARGIN})
    t, s = mistakes["train_mode"], mistakes["stale_statistics"]
    found.append({"id": "mistake.train_mode", "claim": f"mistake 1 (CNN): train-mode evaluation in batches of 2 errs more "
                           f"({t['train_mode_error_batch_2']:.2f}%) than eval mode ({t['eval_mode_error']:.2f}%), and "
                           f"{t['images_with_varying_prediction']['train']} of {t['probes']} test images change their "
                           f"prediction with their batch companion (eval mode: {t['images_with_varying_prediction']['eval']})",
                  "passed": t["train_mode_error_batch_2"] > t["eval_mode_error"]
                  and t["images_with_varying_prediction"]["train"] > 0 and t["images_with_varying_prediction"]["eval"] == 0})
    found.append({"id": "mistake.stale_statistics", "claim": f"mistake 2 (CNN): stale running statistics raise the error from {s['trained_error']:.2f}% "
                           f"to {s['stale_error']:.2f}% (>= {STALE_MIN_RATIO:g}x), and recomputing them brings it back "
                           f"to {s['recomputed_error']:.2f}% (within 1 point)",
                  "passed": s["stale_error"] >= STALE_MIN_RATIO * s["trained_error"]
                  and abs(s["recomputed_error"] - s["trained_error"]) <= 1})
    return found


def plot(errors: dict[str, Any], settings: Settings, file: Path) -> Path:
    """Test error against batch size (log2 axis), one line per norm with std-over-seeds error bars;
    the first panel shows the published ResNet-50 / ImageNet curves."""
    colors = {norm: f"C{i}" for i, norm in enumerate(dict.fromkeys(n for norms in MODELS.values() for n in norms))}
    fig, axes = new_figure(ncols=1 + len(errors), size=(5.0, 4.0))
    published = axes[0][0]
    for norm in ("batchnorm", "groupnorm"):
        published.plot(PUBLISHED["batch_sizes"], PUBLISHED[norm], "o-", color=colors[norm], label=norm)
    published.set_title("published: ResNet-50 on ImageNet")
    for ax, (kind, norms) in zip(axes[0][1:], errors.items()):
        for norm, cells in norms.items():
            batches = sorted(int(b) for b in cells)
            ax.errorbar(batches, [cells[str(b)]["mean"] for b in batches], yerr=[cells[str(b)]["std"] for b in batches],
                        marker="o", capsize=3, color=colors[norm], label=norm)
        ax.set_title(f"tinynorm {kind} on digits ({len(settings.seeds)} seeds, {settings.epochs} epochs)")
    for ax in axes[0]:
        ax.set_xscale("log", base=2)
        ticks = sorted({int(x) for line in ax.get_lines() for x in line.get_xdata()})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("images per batch")
        ax.set_ylabel("test error (%)")
        ax.legend(fontsize=8)
    return save_figure(fig, file)


def summarize(results: dict[str, Any]) -> list[str]:
    """Markdown lines with the measured figures, for the demo report."""
    small, ref = str(min(results["settings"]["batch_sizes"])), str(REFERENCE_BATCH)
    lines = [(f"**Batch size (Wu & He 2018)**, digits, test error (mean over {len(results['settings']['seeds'])} "
             f"seed(s)) at batch {small} -> batch {ref}; published ResNet-50/ImageNet: BatchNorm 34.7% -> 23.6%, "
             f"GroupNorm 24.1% -> 24.1%:")]
    for kind, norms in results["errors"].items():
        cells = ", ".join(f"{norm} {c[small]['mean']:.2f}% -> {c[ref]['mean']:.2f}%" for norm, c in norms.items())
        lines.append(f"- {kind}: {cells}")
    t, s = results["mistakes"]["train_mode"], results["mistakes"]["stale_statistics"]
    lines.append(f"- CNN with BatchNorm (batch {REFERENCE_BATCH}) evaluated in train mode: error "
                 f"{t['train_mode_error_batch_2']:.2f}% in batches of 2, {t[f'train_mode_error_batch_{EVAL_BATCH}']:.2f}% "
                 f"in batches of {EVAL_BATCH}, {t['eval_mode_error']:.2f}% after `model.eval()`; "
                 f"{t['images_with_varying_prediction']['train']} of {t['probes']} test images change their prediction "
                 f"with their batch companion.")
    lines.append(f"- Its weights loaded without the running statistics: error {s['stale_error']:.2f}%; after "
                 f"`recompute_batch_norm_statistics`: {s['recomputed_error']:.2f}% (trained: {s['trained_error']:.2f}%).")
    lines.append("- How much BatchNorm suffers depends on the values each statistic pools: B x H x W per channel in "
                 "the CNN (at batch 2: 128 on its 8x8 maps, 32 on its 4x4 maps), only B per feature in the MLP (2).")
    passed = sum(c["passed"] for c in results["checks"])
    lines.append(f"- Checks passed: {passed}/{len(results['checks'])}; wall time {results['wall_seconds']:.0f} s.")
    return lines


def report(results: dict[str, Any]) -> list[str]:
    """The Markdown report: settings, error tables, published numbers, mistakes and checks."""
    settings = results["settings"]
    lines = ["# BatchNorm at small batches (Wu & He 2018) on 8x8 digits", "",
             (f"SGD, momentum 0.9, lr = {settings['base_lr']} * B / {REFERENCE_BATCH}, cosine to 0, "
             f"{settings['epochs']} epochs at every batch size, seeds {list(settings['seeds'])}, "
             f"test error (%) in eval mode, mean +- std over seeds. Wall time {results['wall_seconds']:.0f} s."), ""]
    for kind, norms in results["errors"].items():
        batches = sorted({int(b) for cells in norms.values() for b in cells})
        rows = [[norm] + [f"{cells[str(b)]['mean']:.2f} +- {cells[str(b)]['std']:.2f}" for b in batches]
                for norm, cells in norms.items()]
        lines += [f"## {kind}", ""] + markdown_table(["norm"] + [f"B={b}" for b in batches], rows) + [""]
    lines += ["## Published (ResNet-50, ImageNet validation error %)", ""]
    lines += markdown_table(["norm"] + [f"B={b}" for b in PUBLISHED["batch_sizes"]],
                            [[norm] + PUBLISHED[norm] for norm in ("batchnorm", "groupnorm")]) + [""]
    lines += ["## Summary", ""] + results["summary"] + ["", "## Checks", ""]
    lines += [f"- {'PASS' if c['passed'] else 'FAIL'}: {c['claim']}" for c in results["checks"]]
    return lines
