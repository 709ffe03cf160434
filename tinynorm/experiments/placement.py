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
(c) the per-layer profile of their Fig. 3 at the paper's width: d_model 512, 8 heads, FFN 2048, 6
    and 12 layers, batch gradients at initialization, with two initialisations: 'gpt2' (learned
    embeddings N(0, 0.02^2), the model's default) and 'fairseq' (the paper's code base: unit-variance
    token embeddings and sinusoidal positions). Xavier-uniform linear weights in both. Beside each
    profile, the RMS of the residual stream after each block, which predicts it: at initialization
    the gradient reaching a block's output is about inversely proportional to the stream's RMS there
    (every sublayer's backward gain matches the variance it adds going forward), so a layer's W2
    gradient goes as 1 / rms(stream after the block) and the profile's last/first ratio as
    rms(after block 1) / rms(after block L). Pre-LN's stream grows with every block, Post-LN's is
    renormalized after every sublayer.
(d) the paper's training setting at a laptop's scale: the Transformer LM trained with Adam (betas 0.9,
    0.98) at the paper's peak learning rates 5e-4 and 1e-3, at two depths, Pre-LN without warmup and
    Post-LN without and with a linear warmup (all then decay on the same cosine), several seeds, from
    the same initialization and the same batches per seed. The loss of each run is measured on 64
    fixed windows of the corpus before and after training, beside the loss of the unigram predictor
    (the characters' frequencies) on the same windows, and each run is classified:
      diverged: a training loss is NaN/inf, or the final loss is above the initial loss;
      stalled:  otherwise, the model beats the unigram predictor by no more than two standard errors
                (of the per-window differences): it learned how often each character occurs, nothing more;
      trained:  otherwise.
    A Post-LN run *fails* when it diverges or learns less than half of what Pre-LN (same depth,
    learning rate and seed, no warmup) learns beyond the unigram predictor: the paper's failing
    Post-LN reaches 8.45 BLEU against ~34 for the models that train, a quarter.

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
from .claims import check_lines, quick_mode_checks
from .common import forward_hooks, markdown_table, new_figure, run_seeds, save_figure, single_threaded, write_json
from .common import progress as progress_bar
from .training import loss_of, train_steps

NORMS = ("layernorm", "rmsnorm")
PLACEMENTS = ("pre", "post")
INITS = ("gpt2", "fairseq")
MLP_CONTEXT = 4  # characters the ResidualMLP sees
EVAL_WINDOWS, EVAL_SEED = 64, 12345  # the fixed windows on which a training run is evaluated
# (placement, warmup) of the trainings: what the paper's three training claims compare
TRAINING_ARMS = (("pre", False), ("post", False), ("post", True))
FAILURE_FRACTION = 0.5  # a Post-LN run fails below this fraction of Pre-LN's gain over the unigram predictor


@dataclass(frozen=True)
class Settings:
    """Sizes of one mode of the experiment."""

    depths: tuple[int, ...]  # (a), (b): numbers of blocks compared at initialization
    seeds: tuple[int, ...]  # one fresh model and batch per seed in (a), (b), (c); (d) trains the first few
    d_model: int
    n_heads: int
    seq_len: int
    batch_size: int  # (a): batch of the batch-averaged gradient
    examples: int  # (a): examples whose single-example gradients are averaged
    mlp_batch_size: int
    profile_d_model: int  # (c)
    profile_heads: int
    profile_depths: tuple[int, ...]
    profile_batch_size: int
    train_depths: tuple[int, ...]  # (d)
    train_d_model: int
    train_heads: int
    train_steps: int
    train_batch_size: int
    warmup_steps: int
    train_lrs: tuple[float, ...]
    train_betas: tuple[float, float]
    train_seed_count: int  # (d) trains from the first this many seeds
    train_init: str


QUICK = Settings(
    depths=(2, 4, 8), seeds=(0, 1), d_model=64, n_heads=4, seq_len=32, batch_size=16, examples=4,
    mlp_batch_size=64, profile_d_model=64, profile_heads=4, profile_depths=(6,), profile_batch_size=8,
    train_depths=(6,), train_d_model=32, train_heads=4, train_steps=60, train_batch_size=8, warmup_steps=15,
    train_lrs=(1e-3,), train_betas=(0.9, 0.98), train_seed_count=1, train_init="fairseq")
FULL = Settings(
    depths=(3, 6, 12, 24), seeds=(0, 1, 2), d_model=64, n_heads=4, seq_len=32, batch_size=16, examples=8,
    mlp_batch_size=64, profile_d_model=512, profile_heads=8, profile_depths=(6, 12), profile_batch_size=8,
    train_depths=(6, 12), train_d_model=128, train_heads=4, train_steps=300, train_batch_size=16, warmup_steps=75,
    train_lrs=(5e-4, 1e-3), train_betas=(0.9, 0.98), train_seed_count=2, train_init="fairseq")


# ------------------------------------------------------------------------------------------ measuring


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


def gradient_norms_and_stream(model: nn.Module, inputs: np.ndarray,
                              targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`layer_gradient_norms`' W2 norms of one batch, and the RMS of the residual stream after
    each block (the block's output) in the same forward pass, input layer first."""
    stream: list[float] = []

    def record(block: nn.Module, args: tuple[Any, ...], output: Tensor) -> None:
        stream.append(float(np.sqrt(np.mean(output.array.astype(np.float64) ** 2))))

    with forward_hooks(model.blocks, record):
        norms = layer_gradient_norms(model, inputs, targets)["ffn_w2"]
    return norms, np.array(stream)


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


def language_task(ids: np.ndarray, vocab: int, d_model: int, n_heads: int, seq_len: int, init: str = "gpt2") -> Task:
    """TinyTransformerLM (initialised as ``init``) predicting the next character of windows of ``seq_len``."""
    return Task(
        "transformer",
        lambda depth, norm, placement: TinyTransformerLM(vocab, d_model, n_heads, depth, seq_len, norm, placement, init),
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


def profile_at_init(ids: np.ndarray, vocab: int, settings: Settings, seeds: tuple[int, ...],
                    show: bool) -> list[dict[str, Any]]:
    """(c): batch gradient norm of each layer's W2 and the residual stream's RMS after each block, at
    initialization at the profile width, per initialisation, depth and placement (LayerNorm): the means
    over seeds, and per seed the profile's last/first ratio and the ratio the stream predicts,
    rms(after block 1) / rms(after block L)."""
    cases = [(init, depth, placement) for init in INITS for depth in settings.profile_depths for placement in PLACEMENTS]
    records = []
    for init, depth, placement in progress_bar(cases, label="profile at init", enabled=show):
        task = language_task(ids, vocab, settings.profile_d_model, settings.profile_heads, settings.seq_len, init)
        norms, streams = [], []
        for seed in seeds:
            manual_seed(seed)
            model = task.build(depth, "layernorm", placement)
            inputs, targets = task.sample(np.random.default_rng(seed), settings.profile_batch_size)
            seed_norms, seed_stream = gradient_norms_and_stream(model, inputs, targets)
            norms.append(seed_norms)
            streams.append(seed_stream)
        records.append({"init": init, "depth": depth, "placement": placement,
                        "ffn_w2": np.mean(norms, axis=0).tolist(), "stream_rms": np.mean(streams, axis=0).tolist(),
                        "last_over_first": [float(n[-1] / n[0]) for n in norms],
                        "stream_prediction": [float(s[0] / s[-1]) for s in streams]})
    return records


# ------------------------------------------------------------------------------------------ training


def window_losses(model: nn.Module, inputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Mean cross-entropy of each window (row) of (inputs, targets), in float64."""
    with no_grad():
        logits = model(tensor(inputs))
        per_token = cross_entropy(logits.reshape(-1, logits.shape[-1]), tensor(targets).reshape(-1), reduction="none")
    return per_token.numpy().astype(np.float64).reshape(len(inputs), -1).mean(axis=1)


def evaluate(model: nn.Module, inputs: np.ndarray, targets: np.ndarray) -> tuple[float, float]:
    """Mean cross-entropy over the windows of (inputs, targets), and its standard error over windows."""
    per_window = window_losses(model, inputs, targets)
    return float(per_window.mean()), _sem(per_window)


def unigram_entropy_of(ids: np.ndarray) -> float:
    """Entropy (nats) of the character frequencies: the loss of the best context-free predictor."""
    p = np.bincount(ids) / len(ids)
    p = p[p > 0]
    return float(-np.sum(p * np.log(p)))


def unigram_window_losses(ids: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per window, the mean cross-entropy of the unigram predictor (each character with its frequency in
    ``ids``) on the windows' ``targets``: the baseline a run's loss is compared with on the same windows."""
    log_p = np.log(np.bincount(ids, minlength=int(targets.max()) + 1) / len(ids))
    return -log_p[targets].mean(axis=1)


def train_run(task: Task, settings: Settings, depth: int, placement: str, lr: float, warmup: bool, seed: int,
              evaluation: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict[str, Any]:
    """Train one LM (LayerNorm) with Adam and classify the run (see the module docstring).

    ``evaluation``: the fixed windows (inputs, targets) and the unigram predictor's loss on each.
    """
    manual_seed(seed)
    model = task.build(depth, "layernorm", placement)
    opt = optim.Adam(model.parameters(), lr=lr, betas=settings.train_betas)
    schedule = optim.lr_scheduler.LinearWarmupCosine(
        opt, settings.warmup_steps if warmup else 0, settings.train_steps, min_lr=0.1 * lr)
    eval_inputs, eval_targets, unigram = evaluation
    initial = float(window_losses(model, eval_inputs, eval_targets).mean())
    losses = train_steps(model, opt, task.sample, settings.train_batch_size, settings.train_steps, seed, schedule)
    final = window_losses(model, eval_inputs, eval_targets)
    gain = unigram - final  # per window: how much better than the character frequencies
    record = {"depth": depth, "placement": placement, "lr": lr, "warmup": warmup, "seed": seed, "losses": losses,
              "initial_loss": initial, "final_loss": float(final.mean()), "final_loss_stderr": _sem(final),
              "unigram_loss": float(unigram.mean()), "gain": float(gain.mean()), "gain_stderr": _sem(gain)}
    record["outcome"] = classify(losses, initial, record["final_loss"], record["gain"], record["gain_stderr"])
    return record


def classify(losses: list[float], initial: float, final: float, gain: float, gain_stderr: float) -> str:
    """'diverged', 'stalled' or 'trained' (definitions in the module docstring)."""
    if not all(math.isfinite(loss) for loss in losses) or not final <= initial:
        return "diverged"
    return "trained" if gain > 2 * gain_stderr else "stalled"


def add_fractions_of_pre_ln(training: list[dict[str, Any]]) -> None:
    """Give every run ``fraction_of_pre_ln``: its gain over the unigram predictor over the gain of the
    Pre-LN run without warmup of the same depth, learning rate and seed. NaN where there is nothing to
    compare: the run diverged, or that Pre-LN run gained nothing."""
    reference = {(r["depth"], r["lr"], r["seed"]): r["gain"] for r in training
                 if (r["placement"], r["warmup"]) == ("pre", False)}
    for r in training:
        pre_gain = reference[r["depth"], r["lr"], r["seed"]]
        r["fraction_of_pre_ln"] = (r["gain"] / pre_gain if r["outcome"] != "diverged" and pre_gain > 0
                                   else float("nan"))


def learns_enough(run: dict[str, Any]) -> bool:
    """The run trained and learned at least FAILURE_FRACTION of what Pre-LN learns (NaN: it did not)."""
    return run["outcome"] == "trained" and run["fraction_of_pre_ln"] >= FAILURE_FRACTION


# ------------------------------------------------------------------------------------------ run


def run(out_dir: str | Path, quick: bool = False, seeds: Sequence[int] | None = None,
        progress: bool = True) -> dict[str, Any]:
    """Run the experiment; write placement.json, placement.md and four figures into ``out_dir``.

    ``seeds`` replaces the mode's seeds; (d) trains from the first ``Settings.train_seed_count`` of them.
    """
    settings = QUICK if quick else FULL
    seeds = run_seeds("placement", seeds, settings.seeds)
    out_dir = Path(out_dir)
    start = time.perf_counter()
    text = load_text_corpus()
    tokenizer = CharTokenizer(text)
    ids = tokenizer.encode(text)
    lm = language_task(ids, tokenizer.vocab_size, settings.d_model, settings.n_heads, settings.seq_len)
    mlp = context_task(ids, tokenizer.vocab_size, settings.d_model, MLP_CONTEXT)
    train_lm = language_task(ids, tokenizer.vocab_size, settings.train_d_model, settings.train_heads, settings.seq_len,
                             settings.train_init)
    eval_inputs, eval_targets = train_lm.sample(np.random.default_rng(EVAL_SEED), EVAL_WINDOWS)
    evaluation = (eval_inputs, eval_targets, unigram_window_losses(ids, eval_targets))

    parts: dict[str, float] = {}
    with single_threaded():
        cases = [(task, depth, norm, placement, batch) for task, batch in ((lm, settings.batch_size),
                                                                           (mlp, settings.mlp_batch_size))
                 for norm in NORMS for placement in PLACEMENTS for depth in settings.depths]
        began = time.perf_counter()
        init = [measure_at_init(task, depth, norm, placement, seeds, batch, settings.examples)
                for task, depth, norm, placement, batch in progress_bar(cases, label="gradients at init",
                                                                        enabled=progress)]
        parts["gradients at init"] = time.perf_counter() - began
        began = time.perf_counter()
        profile = profile_at_init(ids, tokenizer.vocab_size, settings, seeds, progress)
        parts["profile at the paper's width"] = time.perf_counter() - began
        began = time.perf_counter()
        runs = [(depth, lr, placement, warmup, seed) for depth in settings.train_depths for lr in settings.train_lrs
                for placement, warmup in TRAINING_ARMS for seed in seeds[:settings.train_seed_count]]
        training = [train_run(train_lm, settings, depth, placement, lr, warmup, seed, evaluation)
                    for depth, lr, placement, warmup, seed in progress_bar(runs, label="training", enabled=progress)]
        add_fractions_of_pre_ln(training)
        parts["training"] = time.perf_counter() - began

    slopes = depth_slopes(init)
    checks, full_run_only = quick_mode_checks(make_checks(init, slopes, profile, training), quick, QUICK_CLAIMS)
    results: dict[str, Any] = {
        "quick": quick, "seeds": list(seeds), "settings": asdict(settings),
        "unigram_entropy": unigram_entropy_of(ids), "init": init, "depth_slopes": slopes, "profile": profile,
        "training": training, "checks": checks, "full_run_only": full_run_only,
    }
    figures = [plot_layers(init, out_dir / "placement_grad_norms.png"),
               plot_depth(init, slopes, out_dir / "placement_depth.png"),
               plot_profile(profile, out_dir / "placement_profile.png"),
               plot_training(training, out_dir / "placement_training.png")]
    results["seconds"] = time.perf_counter() - start
    results["seconds_by_part"] = parts
    results["summary"] = summarize(results)
    results["figures"] = [str(path) for path in figures]
    write_json(out_dir / "placement.json", results)
    (out_dir / "placement.md").write_text(report(results))
    return {key: results[key] for key in ("summary", "checks", "full_run_only", "figures")}


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


def training_groups(training: list[dict[str, Any]]) -> dict[tuple[int, float], dict[tuple[str, bool], list[dict]]]:
    """The training runs by (depth, lr), then by arm (placement, warmup), in seed order."""
    groups: dict[tuple[int, float], dict[tuple[str, bool], list[dict]]] = {}
    for r in training:
        groups.setdefault((r["depth"], r["lr"]), {}).setdefault((r["placement"], r["warmup"]), []).append(r)
    return groups


FLAT_BAND = (0.5, 2.0)  # "about flat": last/first layer within a factor 2; "grows": above the band
# Claims quick mode judges (python -m tinynorm.experiments.audit placement): the depth scaling at
# initialization; the profile at the paper's width and the training outcomes need the full run.
QUICK_CLAIMS = frozenset(f"{model}.{norm}.{claim}" for model in ("transformer", "mlp") for norm in NORMS
                         for claim in ("ratio_grows", "pre_slope", "post_slope"))


def make_checks(init: list[dict[str, Any]], slopes: list[dict[str, Any]], profile: list[dict[str, Any]],
                training: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paper's claims as PASS/FAIL checks on the measured numbers (per-example W2 gradients for
    the depth scaling, batch gradients at the paper's width for the per-layer profile)."""
    checks = []
    for model in ("transformer", "mlp"):
        for norm in NORMS:
            tag = f"[{model}, {norm}]"
            ratios = post_pre_ratios(init, model, norm)
            checks.append({"id": f"{model}.{norm}.ratio_grows",
                           "claim": f"{tag} Post-LN/Pre-LN last-layer gradient ratio grows with depth "
                                    f"({', '.join(f'{r:.2f}' for r in ratios)})",
                           "passed": bool(np.all(np.diff(ratios) > 0))})
            slope = {s["placement"]: s["slope_example"] for s in slopes if (s["model"], s["norm"]) == (model, norm)}
            checks.append({"id": f"{model}.{norm}.pre_slope",
                           "claim": f"{tag} Pre-LN last-layer gradient ~ 1/sqrt(L): log-log slope "
                                    f"{slope['pre']:.2f} within 0.25 of -0.5",
                           "passed": abs(slope["pre"] + 0.5) <= 0.25})
            checks.append({"id": f"{model}.{norm}.post_slope",
                           "claim": f"{tag} Post-LN last-layer gradient about independent of L: log-log slope "
                                    f"{slope['post']:.2f} within 0.25 of 0",
                           "passed": abs(slope["post"]) <= 0.25})
    low, high = FLAT_BAND
    for r in profile:
        ratio, spread = float(np.mean(r["last_over_first"])), _sem(r["last_over_first"])
        tag = f"[Fig. 3, {r['init']} init, L={r['depth']}]"
        if r["placement"] == "post":
            checks.append({"id": f"profile.{r['init']}.L{r['depth']}.post_grows",
                           "claim": f"{tag} Post-LN per-layer W2 gradients grow toward the output: last/first layer "
                                    f"{ratio:.2f} +- {spread:.2f} above {high:g}",
                           "passed": ratio > high})
        else:
            checks.append({"id": f"profile.{r['init']}.L{r['depth']}.pre_flat",
                           "claim": f"{tag} Pre-LN per-layer W2 gradients stay about flat: last/first layer "
                                    f"{ratio:.2f} +- {spread:.2f} within [{low:g}, {high:g}]",
                           "passed": low <= ratio <= high})
    for (depth, lr), arms in training_groups(training).items():
        pre, post, warm = arms["pre", False], arms["post", False], arms["post", True]
        tag = f"[training, L={depth}, Adam lr {lr:g}]"
        checks.append({"id": f"training.L{depth}.lr{lr:g}.post_fails",
                       "claim": f"{tag} without warmup Post-LN fails in every seed (diverges, or learns less than "
                                f"{FAILURE_FRACTION:g} of what Pre-LN learns beyond the unigram predictor: "
                                f"{_fractions(post)}) while Pre-LN trains ({_outcomes(pre)})",
                       "passed": not any(learns_enough(r) for r in post) and all(r["outcome"] == "trained" for r in pre)})
        gap, error = loss_gap(post, pre)
        checks.append({"id": f"training.L{depth}.lr{lr:g}.post_worse",
                       "claim": f"{tag} without warmup Post-LN ends worse than Pre-LN by more than 2 standard errors "
                                f"(gap {gap:.2f} +- {error:.2f} nats, mean over seeds)",
                       "passed": gap > 2 * error})
        checks.append({"id": f"training.L{depth}.lr{lr:g}.warmup_rescues",
                       "claim": f"{tag} with warmup Post-LN trains and learns at least {FAILURE_FRACTION:g} of what "
                                f"Pre-LN learns, in every seed ({_fractions(warm)}; {_outcomes(warm)})",
                       "passed": all(learns_enough(r) for r in warm)})
    return checks


def _fractions(runs: list[dict[str, Any]]) -> str:
    return "fractions " + ", ".join(f"{r['fraction_of_pre_ln']:.2f}" for r in runs)


def _outcomes(runs: list[dict[str, Any]]) -> str:
    return ", ".join(r["outcome"] for r in runs)


def loss_gap(worse: list[dict[str, Any]], better: list[dict[str, Any]]) -> tuple[float, float]:
    """Mean final-loss difference of two groups of runs (paired by seed), and its standard error: the
    spread over seeds, or with one seed the windows' standard errors."""
    differences = [a["final_loss"] - b["final_loss"] for a, b in zip(worse, better)]
    if len(differences) > 1:
        return float(np.mean(differences)), _sem(differences)
    a, b = worse[0], better[0]
    return differences[0], math.hypot(a["final_loss_stderr"], b["final_loss_stderr"])


def _sem(values: Sequence[float]) -> float:
    """Standard error of the mean over ``values`` (0 for a single value)."""
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0


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


def plot_profile(profile: list[dict[str, Any]], file: Path) -> Path:
    """Fig. 3 at the paper's width, a panel per initialisation: each layer's W2 batch gradient norm over
    layer 1's (solid), and the stream's prediction rms(after block 1) / rms(after the block) (dotted)."""
    inits = sorted({r["init"] for r in profile}, key=INITS.index)
    fig, axes = new_figure(ncols=len(inits), size=(5.5, 3.8))
    depths = sorted({r["depth"] for r in profile})
    for ax, init in zip(axes[0], inits):
        for r in (r for r in profile if r["init"] == init):
            shade = 0.45 + 0.55 * depths.index(r["depth"]) / max(1, len(depths) - 1)
            layers = np.arange(1, r["depth"] + 1)
            norms, stream = np.array(r["ffn_w2"]), np.array(r["stream_rms"])
            ax.plot(layers, norms / norms[0], "o-", color=COLORS[r["placement"]], alpha=shade, markersize=3,
                    label=f"{r['placement']}-LN, L={r['depth']}: last/first {np.mean(r['last_over_first']):.2f}")
            ax.plot(layers, stream[0] / stream, ":", color=COLORS[r["placement"]], alpha=shade,
                    label=f"  stream predicts {np.mean(r['stream_prediction']):.2f}")
        ax.axhspan(*FLAT_BAND, color="gray", alpha=0.08)
        ax.set_yscale("log")
        ax.set_xlabel("layer (1 = input side)")
        ax.set_ylabel("||grad W2|| over layer 1's (batch)")
        ax.set_title(f"{init} init: per-layer gradient at init (shaded: 'about flat')", fontsize=9)
        ax.legend(fontsize=6)
    return save_figure(fig, file)


def plot_training(training: list[dict[str, Any]], file: Path) -> Path:
    """Training loss curves, a panel per (depth, learning rate): one line per run, Pre-LN and Post-LN
    without warmup solid, Post-LN with warmup dashed; the unigram predictor's loss as a gray line."""
    groups = training_groups(training)
    depths, lrs = sorted({d for d, _ in groups}), sorted({lr for _, lr in groups})
    fig, axes = new_figure(ncols=len(lrs), nrows=len(depths), size=(5.5, 3.8))
    for (depth, lr), arms in groups.items():
        ax = axes[depths.index(depth)][lrs.index(lr)]
        for (placement, warmup), runs in arms.items():
            for r in runs:
                ax.plot(_smooth(r["losses"]), "--" if warmup else "-", color=COLORS[placement], linewidth=1,
                        label=f"{placement}-LN, {'warmup' if warmup else 'no warmup'}, seed {r['seed']}: "
                              f"{r['outcome']}, {r['final_loss']:.2f}")
        unigram = next(iter(arms.values()))[0]["unigram_loss"]  # the same windows for every run
        ax.axhline(unigram, color="gray", linewidth=0.8, label=f"unigram predictor {unigram:.2f}")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (nats, smoothed)")
        ax.set_title(f"{depth} blocks, Adam, peak lr {lr:g}", fontsize=9)
        ax.legend(fontsize=6)
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
    for r in results["profile"]:
        lines.append(f"- Fig. 3 profile, d_model {results['settings']['profile_d_model']}, {r['init']} init, "
                     f"{r['placement']}-LN, L={r['depth']}: last/first layer {np.mean(r['last_over_first']):.2f} "
                     f"(the residual stream predicts {np.mean(r['stream_prediction']):.2f})")
    for (depth, lr), arms in training_groups(results["training"]).items():
        lines.append(f"- Training, {depth} blocks, Adam lr {lr:g}: " + "; ".join(
            f"{placement}-LN {'warmup' if warmup else 'no warmup'}: "
            + ", ".join(f"{r['outcome']} {r['final_loss']:.2f}" for r in runs)
            + ("" if placement == "pre" else f" ({_fractions(runs)} of Pre-LN's gain)")
            for (placement, warmup), runs in arms.items()))
    passed = sum(c["passed"] for c in results["checks"])
    left = len(results["full_run_only"])
    lines.append(f"- Checks passed: {passed} of {len(results['checks'])}"
                 + (f" ({left} more judged by the full run only)" if left else ""))
    return lines


def report(results: dict[str, Any]) -> str:
    """placement.md: settings, tables, checks, the paper's numbers beside ours, and what matched."""
    st = results["settings"]
    init = results["init"]
    parts = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in results["seconds_by_part"].items())
    lines = ["# Pre-LN vs Post-LN (Xiong et al. 2020)", "",
             (f"Mode: {'quick' if results['quick'] else 'full'}, seeds {results['seeds']}, "
              f"{results['seconds']:.0f} s ({parts}). Transformer: TinyTransformerLM, d_model {st['d_model']}, "
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
    lines += ["", (f"## Fig. 3, per-layer profile: d_model {st['profile_d_model']}, {st['profile_heads']} heads, "
                   f"FFN {4 * st['profile_d_model']}, batch gradients of {st['profile_batch_size']} windows at "
                   f"initialization, mean over seeds {results['seeds']}"), "",
              ("'stream predicts': rms(residual stream after block 1) / rms(after block L), the last/first ratio "
               "if each layer's gradient goes as 1 / rms(stream after it)."), ""]
    rows = [[r["init"], r["placement"], r["depth"], ", ".join(f"{v:.3g}" for v in r["ffn_w2"]),
             ", ".join(f"{v:.2f}" for v in r["stream_rms"]),
             f"{np.mean(r['last_over_first']):.2f} +- {_sem(r['last_over_first']):.2f}",
             f"{np.mean(r['stream_prediction']):.2f}"] for r in results["profile"]]
    lines += markdown_table(["init", "placement", "L", "||grad W2||, layers 1..L", "stream RMS after each block",
                             "last/first", "stream predicts"], rows)
    lines += ["", (f"## Training (LayerNorm, d_model {st['train_d_model']}, {st['train_heads']} heads, "
                   f"{st['train_init']} init, {st['train_steps']} steps, batch {st['train_batch_size']}, Adam betas "
                   f"{tuple(st['train_betas'])}, warmup {st['warmup_steps']} steps or none, cosine decay to 0.1 lr)"), "",
              (f"Losses on {EVAL_WINDOWS} fixed windows; 'gain' = the unigram predictor's loss on them minus the "
               "run's (± the standard error of the per-window differences); 'of Pre-LN' = the gain over that of "
               "Pre-LN without warmup at the same depth, lr and seed. diverged = a non-finite loss or final > "
               "initial; stalled = gain within 2 standard errors of 0. A Post-LN run fails below "
               f"{FAILURE_FRACTION:g} of Pre-LN's gain (the paper: 8.45 of ~34 BLEU)."), ""]
    rows = [[r["depth"], r["lr"], r["placement"], "yes" if r["warmup"] else "no", r["seed"], r["initial_loss"],
             f"{r['final_loss']:.3f} ± {r['final_loss_stderr']:.3f}", f"{r['gain']:.3f} ± {r['gain_stderr']:.3f}",
             f"{r['fraction_of_pre_ln']:.2f}", r["outcome"]] for r in results["training"]]
    lines += markdown_table(["blocks", "peak lr", "placement", "warmup", "seed", "initial loss", "final loss ± s.e.",
                             "gain ± s.e.", "of Pre-LN", "outcome"], rows)
    lines += ["", "## Checks", ""] + check_lines(results)
    lines += ["", "## The paper beside this run", "",
              *markdown_table(["claim", "Xiong et al. 2020", "here"], paper_rows(results)),
              "", "## What matched, what did not", "", *verdict(results)]
    return "\n".join(lines) + "\n"


def paper_rows(results: dict[str, Any]) -> list[list[str]]:
    """The paper's figures and ours, side by side."""
    slope = {(s["model"], s["norm"], s["placement"]): s["slope_example"] for s in results["depth_slopes"]}
    norm = "layernorm"
    profile = {(r["init"], r["placement"], r["depth"]): np.mean(r["last_over_first"]) for r in results["profile"]}

    def trend(placement: str) -> str:
        return "; ".join(f"{init} L={depth}: {value:.2f}" for (init, p, depth), value in profile.items() if p == placement)

    def outcomes(placement: str, warmup: bool) -> str:
        return "; ".join(f"L={depth}, lr {lr:g}: " + ", ".join(
            f"{r['outcome']} {r['final_loss']:.2f}" + ("" if placement == "pre" else f" ({r['fraction_of_pre_ln']:.2f})")
            for r in arms[placement, warmup])
            for (depth, lr), arms in training_groups(results["training"]).items())

    return [
        ["last-layer gradient vs L, Post-LN", "O(1): slope 0 (Theorem 1)",
         f"slope {slope['transformer', norm, 'post']:.2f} (transformer), {slope['mlp', norm, 'post']:.2f} (mlp)"],
        ["last-layer gradient vs L, Pre-LN", "O(1/sqrt(L)): slope -0.5 (Theorem 1)",
         f"slope {slope['transformer', norm, 'pre']:.2f} (transformer), {slope['mlp', norm, 'pre']:.2f} (mlp)"],
        ["per-layer gradient, Post-LN (last/first)", "grows toward the output (Fig. 3)", trend("post")],
        ["per-layer gradient, Pre-LN (last/first)", "about flat (Fig. 3)", trend("pre")],
        ["Post-LN, Adam, no warmup (final loss, fraction of Pre-LN's gain)", "8.45 BLEU (IWSLT14 De-En): fails",
         outcomes("post", False)],
        ["Post-LN, Adam, warmup", "~34 BLEU", outcomes("post", True)],
        ["Pre-LN, Adam, no warmup", "trains (comparable BLEU, faster)", outcomes("pre", False)],
    ]


def verdict(results: dict[str, Any]) -> list[str]:
    """What matched the paper and what did not, from the checks themselves."""
    matched = [c["claim"] for c in results["checks"] if c["passed"]]
    missed = [c["claim"] for c in results["checks"] if not c["passed"]]
    st = results["settings"]
    lines = ["Matched:"] + ([f"- {claim}" for claim in matched] or ["- nothing"])
    lines += ["", "Did not match:"] + ([f"- {claim}" for claim in missed] or ["- nothing"])
    lines += ["", (f"Scale matters: the trained models are small (d_model {st['train_d_model']}, "
                   f"{' and '.join(map(str, st['train_depths']))} blocks, {st['train_steps']} steps on characters) "
                   "against the paper's d_model 512 translation models trained for tens of thousands of steps.")]
    return lines
