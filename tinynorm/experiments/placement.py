"""Where does the norm go? Pre-LN versus Post-LN residual blocks (Xiong et al. 2020).

A residual block with its norm *after* the addition (Post-LN, the original Transformer: norm(x + f(x)))
normalizes the whole signal after every layer; one with its norm *inside* the branch (Pre-LN:
x + f(norm(x))) leaves an un-normalized identity path from input to output. Xiong et al. ("On Layer
Normalization in the Transformer Architecture", ICML 2020) show that at initialization

* the gradient of the last layer's FFN output weight W2 is about independent of the depth L for
  Post-LN, but shrinks like 1/sqrt(L) for Pre-LN (the residual stream grows like sqrt(L) and the final
  norm divides by it);
* per layer, Post-LN gradients grow toward the output while Pre-LN's stay about flat;
* so Post-LN needs a learning-rate warmup: trained with Adam and no warmup it reaches 8.45 BLEU on
  IWSLT14 De-En, against ~34 with warmup, while Pre-LN trains without one.

This experiment measures the same things on tinynorm's models, at a scale a laptop runs:

(a) gradient norms at initialization, per layer: the Frobenius norm of the gradient of each layer's
    W2 (the FFN's second Linear, the matrix Xiong et al. plot) and of all the block's weight matrices
    together. Two versions: *per example* (the mean over examples of the norm of one example's
    gradient: what the theory bounds) and *batch* (the norm of the batch-averaged gradient, which is
    what an optimizer sees; averaging shrinks its noise part). Each is averaged over seeds, a fresh
    model and batch per seed. Models: TinyTransformerLM on the character corpus, and ResidualMLP
    predicting the next character from the four before it (one-hot); LayerNorm and RMSNorm.
(b) the last layer's W2 gradient against depth, with the slope of a least-squares line on log-log
    axes (theory: -1/2 for Pre-LN, 0 for Post-LN).
(c) training curves of the Transformer LM, Pre-LN versus Post-LN, SGD (momentum 0.9) and Adam, with a
    linear warmup and without one (both then decay on the same cosine), from the same initialization
    and the same batches. Each run is classified:
      diverged: a training loss is NaN/inf, or the final loss is above the initial loss;
      stalled:  otherwise, the final loss is not below the corpus's unigram entropy by more than two
                standard errors: the model learned no more than how often each character occurs;
      trained:  otherwise.
    "Initial" and "final" are the mean cross-entropy on 64 fixed windows of the corpus (the same for
    every run) before and after training; the standard error is over those windows. The learning
    rates are fixed per mode, chosen by short calibration runs (``Settings.lr_note``) where Pre-LN
    trains without warmup.

Everything runs single-threaded (see :func:`single_threaded`): the matrices are small, and on a
shared 2-core machine thread start-up and oversubscription cost more than the threads save.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import nn, optim
from ..autograd import no_grad
from ..data import CharTokenizer, load_text_corpus, sample_lm_batch
from ..models import ResidualMLP, TinyTransformerLM
from ..nn.blocks import MLPBlock
from ..nn.functional import cross_entropy
from ..random import manual_seed
from ..tensor import Tensor, tensor
from .common import markdown_table, new_figure, save_figure, single_threaded, write_json
from .common import progress as progress_bar

NORMS = ("layernorm", "rmsnorm")
PLACEMENTS = ("pre", "post")
OPTIMIZERS = ("sgd", "adam")
MLP_CONTEXT = 4  # characters the ResidualMLP sees
EVAL_WINDOWS, EVAL_SEED = 64, 12345  # the fixed windows on which a training run is evaluated


@dataclass(frozen=True)
class Settings:
    """Sizes of one mode of the experiment."""

    depths: tuple[int, ...]  # (a), (b): numbers of blocks compared at initialization
    seeds: tuple[int, ...]  # (a), (b): one fresh model and batch per seed
    d_model: int
    n_heads: int
    seq_len: int
    batch_size: int  # (a): batch of the batch-averaged gradient
    examples: int  # (a): examples whose single-example gradients are averaged
    mlp_batch_size: int
    train_depth: int  # (c)
    train_d_model: int
    train_steps: int
    train_batch_size: int
    warmup_steps: int
    train_norms: tuple[str, ...]
    lr: dict[str, float]
    lr_note: str  # how the learning rates were chosen


QUICK = Settings(
    depths=(2, 4, 8), seeds=(0, 1), d_model=64, n_heads=4, seq_len=32, batch_size=16, examples=4,
    mlp_batch_size=64, train_depth=6, train_d_model=32, train_steps=80, train_batch_size=8, warmup_steps=20,
    train_norms=("layernorm",), lr={"sgd": 0.1, "adam": 1e-2},
    lr_note="calibration runs (depth 6, d_model 32, batch 16, 100 steps at a constant lr, no warmup, judged by the "
            "mean of the last 10 training losses against the unigram entropy): Pre-LN trained with Adam at 3e-3 and "
            "1e-2 and with SGD at 0.1 and 0.3; Post-LN trained with Adam at 3e-3 only, so Adam 1e-2 and SGD 0.1 "
            "are used")
FULL = Settings(
    depths=(3, 6, 12, 24), seeds=(0, 1, 2), d_model=64, n_heads=4, seq_len=32, batch_size=16, examples=8,
    mlp_batch_size=64, train_depth=12, train_d_model=64, train_steps=150, train_batch_size=16, warmup_steps=40,
    train_norms=NORMS, lr={"sgd": 0.1, "adam": 1e-3},
    lr_note="calibration runs (depth 12, d_model 64, batch 16, 150 steps at a constant lr, no warmup, judged as in "
            "quick mode): Pre-LN trained with Adam at 1e-3 and 3e-3 while Post-LN stalled at both, so the common "
            "1e-3 is used; SGD 0.1 as in quick mode (not calibrated at this depth)")


# ------------------------------------------------------------------------------------------ measuring


def loss_of(model: nn.Module, inputs: np.ndarray, targets: np.ndarray) -> Tensor:
    """Mean cross-entropy of ``model``: logits (N, C) for a classifier or (B, T, V) for a language model."""
    logits = model(tensor(inputs))
    return cross_entropy(logits.reshape(-1, logits.shape[-1]), tensor(targets).reshape(-1))


def feedforward_weights(model: nn.Module) -> list[Tensor]:
    """W2 of each block of ``model.blocks``: the output weight of the block's MLP, input layer first."""
    weights = []
    for index, block in enumerate(model.blocks):
        mlps = [module for module in block.modules() if isinstance(module, MLPBlock)]
        if len(mlps) != 1:
            raise ValueError(f"feedforward_weights: block {index} holds {len(mlps)} MLPBlocks, expected 1")
        weights.append(mlps[0][2].weight)
    return weights


def layer_gradient_norms(model: nn.Module, inputs: np.ndarray, targets: np.ndarray) -> dict[str, np.ndarray]:
    """Gradient norms per block of the mean cross-entropy on one batch, input layer first.

    Returns ``{"ffn_w2": ..., "block": ...}``, arrays with one value per block: the Frobenius norm of
    the gradient of the block's W2, and of all the block's weight matrices (2-D parameters) together.
    """
    model.zero_grad()
    loss_of(model, inputs, targets).backward()
    ffn = [np.linalg.norm(weight.grad.array) for weight in feedforward_weights(model)]
    block = [math.sqrt(sum(float(np.sum(p.grad.array.astype(np.float64) ** 2))
                           for p in layer.parameters() if p.ndim == 2))
             for layer in model.blocks]
    model.zero_grad()
    return {"ffn_w2": np.array(ffn, dtype=np.float64), "block": np.array(block)}


def per_example_gradient_norms(model: nn.Module, inputs: np.ndarray, targets: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`layer_gradient_norms` of each example on its own, averaged over the examples."""
    each = [layer_gradient_norms(model, inputs[i:i + 1], targets[i:i + 1]) for i in range(len(inputs))]
    return {key: np.mean([norms[key] for norms in each], axis=0) for key in each[0]}


def loglog_slope(depths: Any, values: Any) -> float:
    """Slope of the least-squares line through (log depth, log value): -0.5 means value ~ 1/sqrt(depth)."""
    return float(np.polyfit(np.log(depths), np.log(values), 1)[0])


# ------------------------------------------------------------------------------------------ the tasks


@dataclass
class Task:
    """A model family and its data: ``build(depth, norm, placement)`` and ``sample(rng, batch_size)``."""

    name: str
    build: Callable[[int, str, str], nn.Module]
    sample: Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


def language_task(ids: np.ndarray, vocab: int, d_model: int, n_heads: int, seq_len: int) -> Task:
    """TinyTransformerLM predicting the next character of windows of ``seq_len`` characters."""
    return Task(
        "transformer",
        lambda depth, norm, placement: TinyTransformerLM(vocab, d_model, n_heads, depth, seq_len, norm, placement),
        lambda rng, batch_size: sample_lm_batch(ids, batch_size, seq_len, rng),
    )


def context_task(ids: np.ndarray, vocab: int, d: int, context: int) -> Task:
    """ResidualMLP (blocks of width ``d``) predicting the next character from the one-hot codes of the
    ``context`` characters before it."""
    eye = np.eye(vocab, dtype=np.float32)

    def sample(rng: np.random.Generator, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        windows, _ = sample_lm_batch(ids, batch_size, context + 1, rng)
        return eye[windows[:, :context]].reshape(batch_size, context * vocab), windows[:, context]

    return Task("mlp", lambda depth, norm, placement: ResidualMLP(context * vocab, d, depth, vocab, norm, placement),
                sample)


def measure_at_init(task: Task, depth: int, norm: str, placement: str, seeds: tuple[int, ...],
                    batch_size: int, examples: int) -> dict[str, Any]:
    """Per-layer gradient norms at initialization, each averaged over ``seeds``."""
    batch, single = [], []
    for seed in seeds:
        manual_seed(seed)
        model = task.build(depth, norm, placement)
        inputs, targets = task.sample(np.random.default_rng(seed), batch_size)
        batch.append(layer_gradient_norms(model, inputs, targets))
        single.append(per_example_gradient_norms(model, inputs[:examples], targets[:examples]))
    record: dict[str, Any] = {"model": task.name, "norm": norm, "placement": placement, "depth": depth}
    for key in ("ffn_w2", "block"):
        record[f"{key}_batch"] = np.mean([norms[key] for norms in batch], axis=0).tolist()
        record[f"{key}_example"] = np.mean([norms[key] for norms in single], axis=0).tolist()
    return record


# ------------------------------------------------------------------------------------------ training


def train_run(task: Task, settings: Settings, norm: str, placement: str, optimizer: str, warmup: bool,
              seed: int, unigram_entropy: float) -> dict[str, Any]:
    """Train one LM and classify the run (see the module docstring for the definitions)."""
    manual_seed(seed)
    model = task.build(settings.train_depth, norm, placement)
    lr = settings.lr[optimizer]
    opt = optim.Adam(model.parameters(), lr=lr) if optimizer == "adam" else \
        optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    schedule = optim.lr_scheduler.LinearWarmupCosine(
        opt, settings.warmup_steps if warmup else 0, settings.train_steps, min_lr=0.1 * lr)
    eval_inputs, eval_targets = task.sample(np.random.default_rng(EVAL_SEED), EVAL_WINDOWS)
    initial, _ = evaluate(model, eval_inputs, eval_targets)
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(settings.train_steps):
        inputs, targets = task.sample(rng, settings.train_batch_size)
        opt.zero_grad()
        loss = loss_of(model, inputs, targets)
        losses.append(float(loss.item()))
        if not math.isfinite(losses[-1]):
            break
        loss.backward()
        opt.step()
        schedule.step()
    final, stderr = evaluate(model, eval_inputs, eval_targets)
    return {"norm": norm, "placement": placement, "optimizer": optimizer, "warmup": warmup, "lr": lr,
            "losses": losses, "initial_loss": initial, "final_loss": final, "final_loss_stderr": stderr,
            "outcome": classify(losses, initial, final, stderr, unigram_entropy)}


def evaluate(model: nn.Module, inputs: np.ndarray, targets: np.ndarray) -> tuple[float, float]:
    """Mean cross-entropy over the windows of (inputs, targets), and its standard error over windows."""
    with no_grad():
        logits = model(tensor(inputs))
        per_token = cross_entropy(logits.reshape(-1, logits.shape[-1]), tensor(targets).reshape(-1), reduction="none")
    per_window = per_token.numpy().astype(np.float64).reshape(len(inputs), -1).mean(axis=1)
    return float(per_window.mean()), float(per_window.std(ddof=1) / math.sqrt(len(per_window)))


def classify(losses: list[float], initial: float, final: float, stderr: float, unigram_entropy: float) -> str:
    """'diverged', 'stalled' or 'trained' (definitions in the module docstring)."""
    if not all(math.isfinite(loss) for loss in losses) or not final <= initial:
        return "diverged"
    return "trained" if final < unigram_entropy - 2 * stderr else "stalled"


def unigram_entropy_of(ids: np.ndarray) -> float:
    """Entropy (nats) of the character frequencies: the loss of the best context-free predictor."""
    p = np.bincount(ids) / len(ids)
    p = p[p > 0]
    return float(-np.sum(p * np.log(p)))


# ------------------------------------------------------------------------------------------ run


def run(out_dir: str | Path, quick: bool = False, seeds: Sequence[int] | None = None, device: str = "cpu",
        progress: bool = True) -> dict[str, Any]:
    """Run the experiment; write placement.json, placement.md and three figures into ``out_dir``.

    ``seeds`` replaces the mode's seeds for (a)/(b); (c) uses the first one. Quick mode takes about a
    minute on two cores, full mode about a quarter of an hour.
    """
    if device != "cpu":
        raise ValueError(f"placement.run: device={device!r} is not supported yet; only 'cpu' works")
    settings = QUICK if quick else FULL
    seeds = tuple(seeds) if seeds is not None else settings.seeds
    if not seeds:
        raise ValueError("placement.run: seeds must name at least one seed")
    out_dir = Path(out_dir)
    start = time.perf_counter()
    text = load_text_corpus()
    tokenizer = CharTokenizer(text)
    ids = tokenizer.encode(text)
    unigram = unigram_entropy_of(ids)
    lm = language_task(ids, tokenizer.vocab_size, settings.d_model, settings.n_heads, settings.seq_len)
    mlp = context_task(ids, tokenizer.vocab_size, settings.d_model, MLP_CONTEXT)
    train_lm = language_task(ids, tokenizer.vocab_size, settings.train_d_model, settings.n_heads, settings.seq_len)

    with single_threaded():
        cases = [(task, depth, norm, placement, batch) for task, batch in ((lm, settings.batch_size),
                                                                           (mlp, settings.mlp_batch_size))
                 for norm in NORMS for placement in PLACEMENTS for depth in settings.depths]
        init = [measure_at_init(task, depth, norm, placement, seeds, batch, settings.examples)
                for task, depth, norm, placement, batch in progress_bar(cases, label="gradients at init",
                                                                        enabled=progress)]
        runs = [(norm, placement, name, warmup) for norm in settings.train_norms for name in OPTIMIZERS
                for warmup in (False, True) for placement in PLACEMENTS]
        training = [train_run(train_lm, settings, norm, placement, name, warmup, seeds[0], unigram)
                    for norm, placement, name, warmup in progress_bar(runs, label="training", enabled=progress)]

    slopes = depth_slopes(init)
    checks = make_checks(init, slopes, training, settings.depths)
    results: dict[str, Any] = {
        "quick": quick, "seeds": list(seeds), "settings": asdict(settings),
        "unigram_entropy": unigram, "init": init, "depth_slopes": slopes, "training": training,
        "checks": checks,
    }
    figures = [plot_layers(init, out_dir / "placement_grad_norms.png"),
               plot_depth(init, slopes, out_dir / "placement_depth.png"),
               plot_training(training, unigram, out_dir / "placement_training.png")]
    results["seconds"] = time.perf_counter() - start
    results["summary"] = summarize(results)
    results["figures"] = [str(path) for path in figures]
    write_json(out_dir / "placement.json", results)
    (out_dir / "placement.md").write_text(report(results))
    return {"summary": results["summary"], "checks": checks, "figures": results["figures"]}


# ------------------------------------------------------------------------------------------ analysis


def find(records: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """The first record whose ``fields`` have the given values."""
    return next(r for r in records if all(r[key] == value for key, value in fields.items()))


def last_layer(init: list[dict[str, Any]], model: str, norm: str, placement: str,
               key: str = "ffn_w2_example") -> tuple[list[int], list[float]]:
    """(depths, the last layer's gradient norm at each depth) for one configuration."""
    rows = sorted((r for r in init if (r["model"], r["norm"], r["placement"]) == (model, norm, placement)),
                  key=lambda r: r["depth"])
    return [r["depth"] for r in rows], [r[key][-1] for r in rows]


def depth_slopes(init: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log-log slope of the last layer's W2 gradient against depth, per configuration."""
    out = []
    for model in sorted({r["model"] for r in init}, reverse=True):
        for norm in NORMS:
            for placement in PLACEMENTS:
                record = {"model": model, "norm": norm, "placement": placement}
                for kind in ("example", "batch"):
                    d, values = last_layer(init, model, norm, placement, f"ffn_w2_{kind}")
                    record[f"slope_{kind}"] = loglog_slope(d, values)
                out.append(record)
    return out


def post_pre_ratios(init: list[dict[str, Any]], model: str, norm: str) -> list[float]:
    """Post-LN over Pre-LN last-layer W2 gradient (per example) at each depth."""
    _, post = last_layer(init, model, norm, "post")
    _, pre = last_layer(init, model, norm, "pre")
    return [a / b for a, b in zip(post, pre)]


def make_checks(init: list[dict[str, Any]], slopes: list[dict[str, Any]], training: list[dict[str, Any]],
                depths: tuple[int, ...]) -> list[dict[str, Any]]:
    """The paper's claims as PASS/FAIL checks on the measured numbers (per-example W2 gradients)."""
    checks = []
    for model in ("transformer", "mlp"):
        for norm in NORMS:
            tag = f"[{model}, {norm}]"
            ratios = post_pre_ratios(init, model, norm)
            checks.append({"id": f"{model}.{norm}.ratio_grows", "claim": f"{tag} Post-LN/Pre-LN last-layer gradient ratio grows with depth "
                                    f"({', '.join(f'{r:.2f}' for r in ratios)})",
                           "passed": bool(np.all(np.diff(ratios) > 0))})
            slope = {s["placement"]: s["slope_example"] for s in slopes if (s["model"], s["norm"]) == (model, norm)}
            checks.append({"id": f"{model}.{norm}.pre_slope", "claim": f"{tag} Pre-LN last-layer gradient ~ 1/sqrt(L): log-log slope "
                                    f"{slope['pre']:.2f} within 0.25 of -0.5",
                           "passed": abs(slope["pre"] + 0.5) <= 0.25})
            checks.append({"id": f"{model}.{norm}.post_slope", "claim": f"{tag} Post-LN last-layer gradient about independent of L: log-log slope "
                                    f"{slope['post']:.2f} within 0.25 of 0",
                           "passed": abs(slope["post"]) <= 0.25})
            for placement, claim, test in (
                    ("post", "grow toward the output (last/first layer > 1)", lambda r: r > 1.0),
                    ("pre", "stay flat (last/first layer within [0.5, 2])", lambda r: 0.5 <= r <= 2.0)):
                ratio = layer_trend(init, model, norm, placement, max(depths))
                checks.append({"claim": f"{tag} {placement.capitalize()}-LN per-layer gradients {claim}, "
                                        f"L={max(depths)}: {ratio:.2f}",
                               "passed": bool(test(ratio))})
    for norm in sorted({r["norm"] for r in training}):
        run = {(r["placement"], r["optimizer"], r["warmup"]): r for r in training if r["norm"] == norm}
        post, pre = run["post", "adam", False], run["pre", "adam", False]
        checks.append({"id": f"training.{norm}.post_fails", "claim": f"[training, {norm}] Adam without warmup: Post-LN fails (diverges or stalls) "
                                f"while Pre-LN trains (Post-LN {post['outcome']}, Pre-LN {pre['outcome']})",
                       "passed": post["outcome"] != "trained" and pre["outcome"] == "trained"})
        gap = post["final_loss"] - pre["final_loss"]
        error = math.hypot(post["final_loss_stderr"], pre["final_loss_stderr"])
        checks.append({"id": f"training.{norm}.post_worse", "claim": f"[training, {norm}] Adam without warmup: Post-LN ends worse than Pre-LN by more "
                                f"than 2 standard errors (gap {gap:.2f} ± {error:.2f} nats)",
                       "passed": gap > 2 * error})
        checks.append({"id": f"training.{norm}.warmup_rescues", "claim": f"[training, {norm}] warmup lets Post-LN train with Adam "
                                f"({run['post', 'adam', True]['outcome']})",
                       "passed": run["post", "adam", True]["outcome"] == "trained"})
    return checks


def layer_trend(init: list[dict[str, Any]], model: str, norm: str, placement: str, depth: int) -> float:
    """Last layer's W2 gradient over the first layer's (per example) at ``depth``."""
    row = find(init, model=model, norm=norm, placement=placement, depth=depth)
    return row["ffn_w2_example"][-1] / row["ffn_w2_example"][0]


# ------------------------------------------------------------------------------------------ figures

COLORS = {"pre": "tab:blue", "post": "tab:red"}


def plot_layers(init: list[dict[str, Any]], file: Path) -> Path:
    """Per-layer W2 gradient norm (per example), one line per (placement, depth); a panel per model and norm."""
    models = sorted({r["model"] for r in init}, reverse=True)
    fig, axes = new_figure(ncols=len(NORMS), nrows=len(models), size=(5.5, 3.8))
    depths = sorted({r["depth"] for r in init})
    for row, model in enumerate(models):
        for col, norm in enumerate(NORMS):
            ax = axes[row][col]
            for r in init:
                if (r["model"], r["norm"]) != (model, norm):
                    continue
                shade = 0.35 + 0.65 * depths.index(r["depth"]) / max(1, len(depths) - 1)
                layers = np.arange(1, r["depth"] + 1)
                ax.plot(layers, r["ffn_w2_example"], "o-", color=COLORS[r["placement"]], alpha=shade, markersize=3,
                        label=f"{r['placement']}-LN, L={r['depth']}")
            ax.set_yscale("log")
            ax.set_xlabel("layer (1 = input side)")
            ax.set_ylabel("||grad W2|| per example")
            ax.set_title(f"{model}, {norm}: gradient norm per layer at init")
            ax.legend(fontsize=7, ncol=2)
    return save_figure(fig, file)


def plot_depth(init: list[dict[str, Any]], slopes: list[dict[str, Any]], file: Path) -> Path:
    """Last-layer W2 gradient against depth, log-log, with a 1/sqrt(L) line through Pre-LN's first point."""
    models = sorted({r["model"] for r in init}, reverse=True)
    fig, axes = new_figure(ncols=len(models), size=(5.5, 4.2))
    for ax, model in zip(axes[0], models):
        for norm, style in zip(NORMS, ("o-", "s--")):
            for placement in PLACEMENTS:
                depths, values = last_layer(init, model, norm, placement)
                slope = find(slopes, model=model, norm=norm, placement=placement)["slope_example"]
                ax.plot(depths, values, style, color=COLORS[placement],
                        label=f"{placement}-LN, {norm} (slope {slope:.2f})")
                if placement == "pre" and norm == NORMS[0]:
                    reference = values[0] * np.sqrt(depths[0] / np.array(depths, dtype=float))
                    ax.plot(depths, reference, ":", color="gray", label="1/sqrt(L)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("depth L (blocks)")
        ax.set_ylabel("||grad W2|| of the last block, per example")
        ax.set_title(f"{model}: last-layer gradient vs depth")
        ax.legend(fontsize=7)
    return save_figure(fig, file)


def plot_training(training: list[dict[str, Any]], unigram: float, file: Path) -> Path:
    """Training loss curves: a panel per (norm, optimizer), solid without warmup, dashed with."""
    norms = sorted({r["norm"] for r in training})
    fig, axes = new_figure(ncols=len(OPTIMIZERS), nrows=len(norms), size=(5.5, 3.8))
    for row, norm in enumerate(norms):
        for col, name in enumerate(OPTIMIZERS):
            ax = axes[row][col]
            panel = [r for r in training if (r["norm"], r["optimizer"]) == (norm, name)]
            for r in panel:
                ax.plot(_smooth(r["losses"]), "--" if r["warmup"] else "-", color=COLORS[r["placement"]],
                        label=f"{r['placement']}-LN, {'warmup' if r['warmup'] else 'no warmup'}: {r['outcome']} "
                              f"({r['final_loss']:.2f})")
            ax.axhline(unigram, color="gray", linewidth=0.8, label=f"unigram entropy {unigram:.2f}")
            ax.set_xlabel("step")
            ax.set_ylabel("training loss (nats, smoothed)")
            ax.set_title(f"{name}, {norm}, lr {panel[0]['lr']:g}")
            ax.legend(fontsize=7)
    return save_figure(fig, file)


def _smooth(losses: list[float], window: int = 10) -> np.ndarray:
    """Moving average over ``window`` steps (shorter at the start), so the curves are readable."""
    values = np.asarray(losses, dtype=np.float64)
    sums = np.cumsum(values)
    counts = np.minimum(np.arange(1, len(values) + 1), window)
    shifted = np.concatenate([np.zeros(window), sums])[: len(values)]
    return (sums - shifted) / counts


# ------------------------------------------------------------------------------------------ reporting


def summarize(results: dict[str, Any]) -> list[str]:
    """Markdown lines stating the main measured figures."""
    lines = ["**Pre-LN vs Post-LN** (Xiong et al. 2020), per-example W2 gradients at initialization:"]
    for s in results["depth_slopes"]:
        lines.append(f"- {s['model']}, {s['norm']}, {s['placement']}-LN: last-layer gradient vs depth, "
                     f"log-log slope {s['slope_example']:.2f} (theory {-0.5 if s['placement'] == 'pre' else 0.0})")
    for model in ("transformer", "mlp"):
        for norm in NORMS:
            ratios = post_pre_ratios(results["init"], model, norm)
            lines.append(f"- {model}, {norm}: Post/Pre last-layer ratio at L = {results['settings']['depths']}: "
                         + ", ".join(f"{r:.2f}" for r in ratios))
    outcomes = ", ".join(f"{r['placement']}-LN {r['optimizer']} {'warmup' if r['warmup'] else 'no warmup'} "
                         f"({r['norm']}): {r['outcome']} ({r['final_loss']:.2f})" for r in results["training"])
    lines.append(f"- Training, depth {results['settings']['train_depth']}: {outcomes}")
    passed = sum(c["passed"] for c in results["checks"])
    lines.append(f"- Checks passed: {passed} of {len(results['checks'])}")
    return lines


def report(results: dict[str, Any]) -> str:
    """placement.md: settings, tables, checks, the paper's numbers beside ours, and what matched."""
    st = results["settings"]
    init = results["init"]
    lines = ["# Pre-LN vs Post-LN (Xiong et al. 2020)", "",
             (f"Mode: {'quick' if results['quick'] else 'full'}, seeds {results['seeds']}, "
             f"{results['seconds']:.0f} s. Transformer: TinyTransformerLM, d_model {st['d_model']}, "
             f"{st['n_heads']} heads, windows of {st['seq_len']} characters; MLP: ResidualMLP width "
             f"{st['d_model']} predicting the next character from the {MLP_CONTEXT} before it (one-hot). "
             "Gradients of the mean cross-entropy at initialization; "
             f"'per example' averages the norms of {st['examples']} single-example gradients, 'batch' is the "
             f"norm of the gradient of a batch of {st['batch_size']} (MLP: {st['mlp_batch_size']})."), "",
             "## Last-layer W2 gradient norm vs depth", ""]
    rows = []
    for model in ("transformer", "mlp"):
        for norm in NORMS:
            for placement in PLACEMENTS:
                _, example = last_layer(init, model, norm, placement)
                _, batch = last_layer(init, model, norm, placement, "ffn_w2_batch")
                slope = find(results["depth_slopes"], model=model, norm=norm, placement=placement)
                rows.append([model, norm, placement, ", ".join(f"{v:.3g}" for v in example),
                             ", ".join(f"{v:.3g}" for v in batch), slope["slope_example"], slope["slope_batch"]])
    lines += markdown_table(["model", "norm", "placement", f"per example, L={list(st['depths'])}",
                             "batch", "slope (example)", "slope (batch)"], rows)
    lines += ["", "## Per-layer W2 gradient norm (per example) at the largest depth, input layer first", ""]
    depth = max(st["depths"])
    rows = [[r["model"], r["norm"], r["placement"], ", ".join(f"{v:.2g}" for v in r["ffn_w2_example"]),
             r["ffn_w2_example"][-1] / r["ffn_w2_example"][0], r["block_example"][-1] / r["block_example"][0]]
            for r in init if r["depth"] == depth]
    lines += markdown_table(["model", "norm", "placement", "layers 1..L", "last/first (W2)",
                             "last/first (whole block)"], rows)
    lines += ["", (f"## Training (depth {st['train_depth']}, d_model {st['train_d_model']}, {st['train_steps']} steps, "
              f"batch {st['train_batch_size']}, warmup {st['warmup_steps']} steps, cosine decay to 0.1 lr)"), "",
              (f"Learning rates chosen from {st['lr_note']}. Unigram entropy of the corpus: "
              f"{results['unigram_entropy']:.3f} nats. diverged = a non-finite loss or final > initial; stalled = "
              f"final not below the unigram entropy by more than 2 standard errors; initial and final = loss on "
              f"{EVAL_WINDOWS} fixed windows before and after training."), ""]
    rows = [[r["norm"], r["placement"], r["optimizer"], r["lr"], "yes" if r["warmup"] else "no", r["initial_loss"],
             f"{r['final_loss']:.3f} ± {r['final_loss_stderr']:.3f}", r["outcome"]] for r in results["training"]]
    lines += markdown_table(["norm", "placement", "optimizer", "lr", "warmup", "initial loss", "final loss ± s.e.",
                             "outcome"], rows)
    lines += ["", "## Checks", ""]
    lines += [f"- {'PASS' if c['passed'] else 'FAIL'}: {c['claim']}" for c in results["checks"]]
    lines += ["", "## The paper beside this run", "",
              *markdown_table(["claim", "Xiong et al. 2020", "here"], paper_rows(results)),
              "", "## What matched, what did not", "", *verdict(results)]
    return "\n".join(lines) + "\n"


def paper_rows(results: dict[str, Any]) -> list[list[str]]:
    """The paper's figures and ours, side by side."""
    slope = {(s["model"], s["norm"], s["placement"]): s["slope_example"] for s in results["depth_slopes"]}
    outcome = {(r["norm"], r["placement"], r["optimizer"], r["warmup"]): f"{r['outcome']} ({r['final_loss']:.2f})"
               for r in results["training"]}
    norm, depth = "layernorm", max(results["settings"]["depths"])
    trend = {placement: layer_trend(results["init"], "transformer", norm, placement, depth) for placement in PLACEMENTS}
    return [
        ["last-layer gradient vs L, Post-LN", "O(1): slope 0 (Theorem 1)",
         f"slope {slope['transformer', norm, 'post']:.2f} (transformer), {slope['mlp', norm, 'post']:.2f} (mlp)"],
        ["last-layer gradient vs L, Pre-LN", "O(1/sqrt(L)): slope -0.5 (Theorem 1)",
         f"slope {slope['transformer', norm, 'pre']:.2f} (transformer), {slope['mlp', norm, 'pre']:.2f} (mlp)"],
        ["per-layer gradient, Post-LN", "grows toward the output (Fig. 3)",
         f"last/first layer {trend['post']:.2f} (transformer, L={depth})"],
        ["per-layer gradient, Pre-LN", "about flat (Fig. 3)",
         f"last/first layer {trend['pre']:.2f} (transformer, L={depth})"],
        ["Post-LN, Adam, no warmup", "8.45 BLEU (IWSLT14 De-En): fails", outcome[norm, "post", "adam", False]],
        ["Post-LN, Adam, warmup", "~34 BLEU", outcome[norm, "post", "adam", True]],
        ["Pre-LN, Adam, no warmup", "trains (comparable BLEU, faster)", outcome[norm, "pre", "adam", False]],
    ]


def verdict(results: dict[str, Any]) -> list[str]:
    """One line per check group: what matched the paper and what did not, from the checks themselves."""
    matched = [c["claim"] for c in results["checks"] if c["passed"]]
    missed = [c["claim"] for c in results["checks"] if not c["passed"]]
    lines = ["Matched:"] + ([f"- {claim}" for claim in matched] or ["- nothing"])
    lines += ["", "Did not match:"] + ([f"- {claim}" for claim in missed] or ["- nothing"])
    lines += ["", ("Scale matters: these models are tiny (d_model 32-64, at most "
              f"{max(results['settings']['depths'])} blocks, a few hundred steps on characters) against the "
              "paper's d_model 512 translation models trained for tens of thousands of steps; the paper's bounds "
              "grow with d, so effects that need large d or long training may be weak or absent here.")]
    return lines
