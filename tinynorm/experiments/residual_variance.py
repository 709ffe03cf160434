"""How the variance of the residual stream grows with depth: no norm, Pre-LN and Post-LN.

The tutorials (note 003, sections 6.1-6.2): in a residual block x_{l+1} = x_l + F(x_l) with a branch
independent of its input, Var(x_{l+1}) = Var(x_l) + Var(F(x_l)), so without normalization the
variance accumulates layer by layer and deep stacks explode or vanish; Pre-LN (x + F(LN(x))) feeds
every branch a unit-scale input, so each layer adds about the same variance and the stream still grows
(linearly); Post-LN (LN(x + F(x))) renormalizes the stream after every layer.

Measured on two residual models of the placement experiment's kind, with their initialisations:
``ResidualMLP`` (Linear-GELU-Linear branches, PyTorch's default init) predicting the next character from
the four before it, and ``TinyTransformerLM`` (attention and MLP branches, Xavier init) as a character
LM, each with no norm, Pre-LN and Post-LN (LayerNorm), at depths up to 48 blocks. For every residual
connection l: Var(x_l) (the stream arriving), Var(F) (the branch's output), Var(x_l + F) (the sum, before
a Post-LN norm) and the cross term E[x_l F], each variance the mean square over all elements of one fixed
batch (the variance about zero, which a LayerNorm with gain 1 and shift 0 sets to exactly 1). At
initialization for several seeds, and again after training the models of one depth with Adam.
"""
from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import nn, optim
from ..autograd import no_grad
from ..data import CharTokenizer, load_text_corpus, sample_lm_batch
from ..models import ResidualMLP, TinyTransformerLM
from ..nn.residual import Residual
from ..random import manual_seed
from ..tensor import Tensor, tensor
from .claims import check, check_lines, quick_mode_checks, mean_and_stderr
from .common import cpu_seconds, duration, markdown_table, new_figure, run_seeds, save_figure, single_threaded
from .common import progress as progress_bar
from .records import write_outputs
from .training import train_steps

MODELS = ("mlp", "transformer")
VARIANTS = ("none", "pre", "post")
LABELS = {"none": "no norm", "pre": "Pre-LN", "post": "Post-LN"}
CONTEXT = 4  # characters the MLP sees
PROBE_SEED = 777


@dataclass(frozen=True)
class Settings:
    depths: tuple[int, ...]
    seeds: tuple[int, ...]
    d_model: int
    n_heads: int
    seq_len: int
    probe_batch: int  # Transformer windows (MLP: probe_batch * seq_len examples, the same number of rows)
    train_depth: int
    train_steps: int
    train_batch: int
    lr: float


QUICK = Settings(depths=(4, 16), seeds=(0,), d_model=32, n_heads=4, seq_len=16, probe_batch=8, train_depth=8,
                 train_steps=40, train_batch=16, lr=1e-3)
FULL = Settings(depths=(3, 6, 12, 24, 48), seeds=(0, 1, 2), d_model=64, n_heads=4, seq_len=32, probe_batch=16,
                train_depth=24, train_steps=300, train_batch=32, lr=1e-3)

# What a quick run judges: the claims the full run bears out that quick runs with seeds 0-4 each passed (5/5 for
# all four). Left to the full run: formula (quick runs passed 3/5: one seed and d_model 32 leave too few runs for
# its standard error) and none_grows (it fails in the full run, for the MLP).
RESOLVED_IN_QUICK = frozenset({"pre_linear", "post_unit", "pre_grows_trained", "post_flat_trained"})


# ------------------------------------------------------------------------------------------ models


def build(model: str, variant: str, depth: int, vocab: int, settings: Settings) -> nn.Module:
    """One residual model: 'none' is the Pre-LN model with every norm replaced by the identity."""
    norm, placement = ("layernorm", "pre") if variant == "none" else ("layernorm", variant)
    if model == "mlp":
        net = ResidualMLP(CONTEXT * vocab, settings.d_model, depth, vocab, norm, placement)
    else:
        net = TinyTransformerLM(vocab, settings.d_model, settings.n_heads, depth, settings.seq_len, norm, placement)
    if variant == "none":
        for unit in residual_units(net):
            unit.norm = nn.Identity()
        net.final_norm = nn.Identity()
    return net


def residual_units(model: nn.Module) -> list[Residual]:
    """The model's residual connections, input side first."""
    return [module for module in model.modules() if isinstance(module, Residual)]


def stream_input(model: nn.Module, inputs: np.ndarray) -> Tensor:
    """x_0: what the first residual connection receives."""
    if isinstance(model, ResidualMLP):
        return model.embed(tensor(inputs))
    return model.token_embedding(tensor(inputs)) + model.position_embedding.weight[:inputs.shape[1]]


class Task:
    """The data of one model family: one-hot contexts for the MLP, character windows for the LM."""

    def __init__(self, model: str, ids: np.ndarray, vocab: int, seq_len: int) -> None:
        self.model, self.ids, self.vocab, self.seq_len = model, ids, vocab, seq_len

    def batch(self, rng: np.random.Generator, windows: int) -> tuple[np.ndarray, np.ndarray]:
        """``windows`` LM windows, or for the MLP as many (context, next character) examples as those
        windows hold positions."""
        if self.model == "transformer":
            return sample_lm_batch(self.ids, windows, self.seq_len, rng)
        chunks, _ = sample_lm_batch(self.ids, windows * self.seq_len, CONTEXT + 1, rng)
        one_hot = np.eye(self.vocab, dtype=np.float32)[chunks[:, :CONTEXT]]
        return one_hot.reshape(len(chunks), CONTEXT * self.vocab), chunks[:, CONTEXT]


# ------------------------------------------------------------------------------------------ measuring


def mean_square(a: np.ndarray) -> float:
    """E[a^2] over all elements, in float64: the variance about zero the tutorials' formula is about."""
    return float(np.mean(np.square(a, dtype=np.float64)))


def mean_product(a: np.ndarray, b: np.ndarray) -> float:
    """E[a b] over all elements: the cross term of E[(a + b)^2] = E[a^2] + E[b^2] + 2 E[a b]."""
    return float(np.mean(a.astype(np.float64) * b))


def variance_profile(model: nn.Module, inputs: np.ndarray) -> dict[str, list[Any]]:
    """Per residual connection: its branch's kind, Var(x_l), Var of the branch's input and output,
    Var(x_l + F), the cross term E[x_l F] and Var(x_{l+1}) (after a Post-LN norm), where Var is the
    mean square over all elements of the batch (the variance about zero; LayerNorm with gain 1 and shift 0
    makes it exactly 1)."""
    rows: dict[str, list[Any]] = {k: [] for k in ("kind", "stream", "branch_input", "branch", "sum", "cov", "out")}
    with no_grad():
        x = stream_input(model, inputs)
        for unit in residual_units(model):
            branch_input = unit.norm(x) if unit.placement == "pre" else x
            branch = unit.sublayer(branch_input)
            total = x + branch
            out = unit.norm(total) if unit.placement == "post" else total
            rows["kind"].append(type(unit.sublayer).__name__)
            for key, value in (("stream", x), ("branch_input", branch_input), ("branch", branch), ("sum", total),
                               ("out", out)):
                rows[key].append(mean_square(value.numpy()))
            rows["cov"].append(mean_product(x.numpy(), branch.numpy()))
            x = out
    return rows


def train(model: nn.Module, task: Task, settings: Settings, seed: int) -> list[float]:
    """Adam for ``train_steps`` steps; the training losses (stops at a non-finite one)."""
    optimizer = optim.Adam(model.parameters(), lr=settings.lr)
    return train_steps(model, optimizer, task.batch, settings.train_batch, settings.train_steps, seed)


# ------------------------------------------------------------------------------------------ run


def run(out_dir: str | Path, quick: bool = False, seeds: Sequence[int] | None = None,
        progress: bool = True) -> dict[str, Any]:
    """Profiles at initialization (every depth and seed) and after training (``train_depth``, first seed);
    write residual_variance.json, .md and .png into ``out_dir``."""
    settings = QUICK if quick else FULL
    seeds = run_seeds("residual_variance", seeds, settings.seeds)
    out_dir = Path(out_dir)
    start, start_cpu = time.perf_counter(), cpu_seconds()
    text = load_text_corpus()
    tokenizer = CharTokenizer(text)
    ids = tokenizer.encode(text)
    tasks = {m: Task(m, ids, tokenizer.vocab_size, settings.seq_len) for m in MODELS}
    probes = {m: tasks[m].batch(np.random.default_rng(PROBE_SEED), settings.probe_batch)[0] for m in MODELS}
    with single_threaded():
        init_jobs = [(m, v, d, s) for m in MODELS for v in VARIANTS for d in settings.depths for s in seeds]
        init = []
        for model_name, variant, depth, seed in progress_bar(init_jobs, label="profiles at init", enabled=progress):
            manual_seed(seed)
            model = build(model_name, variant, depth, tokenizer.vocab_size, settings)
            init.append({"model": model_name, "variant": variant, "depth": depth, "seed": seed,
                         **variance_profile(model, probes[model_name])})
        trained = []
        for model_name, variant in progress_bar([(m, v) for m in MODELS for v in VARIANTS], label="training",
                                                enabled=progress):
            manual_seed(seeds[0])
            model = build(model_name, variant, settings.train_depth, tokenizer.vocab_size, settings)
            losses = train(model, tasks[model_name], settings, seeds[0])
            trained.append({"model": model_name, "variant": variant, "depth": settings.train_depth, "seed": seeds[0],
                            "losses": losses, **variance_profile(model, probes[model_name])})
    results: dict[str, Any] = {"quick": quick, "seeds": list(seeds), "settings": asdict(settings), "init": init,
                               "trained": trained}
    results["seconds"], results["cpu_seconds"] = time.perf_counter() - start, cpu_seconds() - start_cpu
    return finish(results, out_dir)


def finish(results: dict[str, Any], out_dir: str | Path) -> dict[str, Any]:
    """Analysis, checks, summary, figure and files from a run's raw results."""
    out_dir = Path(out_dir)
    results["analysis"] = analyse(results["init"], results["trained"], Settings(**results["settings"]))
    results["checks"], results["full_run_only"] = quick_mode_checks(make_checks(results["analysis"]),
                                                                    results["quick"], RESOLVED_IN_QUICK)
    return write_outputs(results, out_dir, "residual_variance", summarize, report, plot, record_curves)


def record_curves(results: dict[str, Any]) -> dict[str, Any]:
    """What the record keeps beyond the analysis, per model and variant: the deepest stack's profile at
    init (first seed) and the trained model's, as Var(x + F) and Var(x) + Var(F) per connection."""
    deepest, first = max(results["settings"]["depths"]), results["seeds"][0]

    def sums(profile: dict[str, Any]) -> dict[str, list[float]]:
        return {"sum": profile["sum"], "predicted": [a + f for a, f in zip(profile["stream"], profile["branch"])]}

    profiles = {}
    for model in MODELS:
        for variant in VARIANTS:
            init = next(p for p in results["init"] if p["model"] == model and p["variant"] == variant
                        and p["depth"] == deepest and p["seed"] == first)
            trained = next(p for p in results["trained"] if p["model"] == model and p["variant"] == variant)
            profiles[f"{model}/{variant}"] = {"init": sums(init), "trained": sums(trained)}
    return {"profiles": profiles}


# ------------------------------------------------------------------------------------------ analysis


def formula_error(profile: dict[str, list[float]]) -> list[float]:
    """(Var(x + F) - (Var(x) + Var(F))) / (Var(x) + Var(F)) per connection: 2 E[x F] / prediction."""
    return [(s - (a + f)) / (a + f) for s, a, f in zip(profile["sum"], profile["stream"], profile["branch"])]


def linear_fit_r2(values: Sequence[float]) -> float:
    """R^2 of the least-squares line through (l, values[l])."""
    y = np.asarray(values, dtype=np.float64)
    x = np.arange(len(y), dtype=np.float64)
    residual = y - np.polyval(np.polyfit(x, y, 1), x)
    return float(1 - residual.var() / y.var())


def spread_by_kind(values: Sequence[float], kinds: Sequence[str]) -> float:
    """The largest max/min of ``values`` over the connections of one branch kind (attention and MLP
    branches of a Transformer are compared among themselves)."""
    return max(max(v for v, k in zip(values, kinds) if k == kind) / min(v for v, k in zip(values, kinds) if k == kind)
               for kind in set(kinds))


def analyse(init: list[dict[str, Any]], trained: list[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    """The formula's relative cross term at init: its mean per run (model, variant, depth, seed), the mean
    and standard error of those over the runs, and the median and largest single deviation. Per model
    and variant at the largest depth (mean over seeds): the stream's growth (the last connection's output
    variance over the first one's), the spread
    (max/min per branch kind) of the branch variance, and the R^2 of straight lines through the stream's
    variance and through its logarithm (linear or geometric growth); the same growth after training."""
    deepest = max(settings.depths)
    per_run = [float(np.mean(formula_error(r))) for r in init]
    every_error = np.abs(np.concatenate([formula_error(r) for r in init]))
    mean, stderr = mean_and_stderr(per_run)
    out: dict[str, Any] = {"formula": {"mean": mean, "stderr": stderr, "median_abs": float(np.median(every_error)),
                                       "max_abs": float(every_error.max())}}
    for model in MODELS:
        for variant in VARIANTS:
            mine = [r for r in init if r["model"] == model and r["variant"] == variant]
            deep = [r for r in mine if r["depth"] == deepest]
            after = next(r for r in trained if r["model"] == model and r["variant"] == variant)
            streams = [np.array(r["out"]) for r in deep]
            out[f"{model}/{variant}"] = {
                "growth_init": float(np.mean([r["out"][-1] / r["out"][0] for r in deep])),
                "branch_spread_init": float(np.mean([spread_by_kind(r["branch"], r["kind"]) for r in deep])),
                "linear_r2_init": float(np.mean([linear_fit_r2(v) for v in streams])),
                "log_linear_r2_init": float(np.mean([linear_fit_r2(np.log(v)) for v in streams])),
                "out_range_init": [min(min(r["out"]) for r in deep), max(max(r["out"]) for r in deep)],
                "formula_error_trained": float(np.max(np.abs(formula_error(after)))),
                "growth_trained": after["out"][-1] / after["out"][0],
                "final_loss": float(np.mean(after["losses"][-max(1, len(after["losses"]) // 10):])),
                "diverged": not all(math.isfinite(v) for v in after["losses"]) or
                            len(after["losses"]) < settings.train_steps,
            }
    return out


def make_checks(analysis: dict[str, Any]) -> list[dict[str, Any]]:
    """The tutorials' statements against the measurements. The formula is about expectations (a branch
    independent of its input): its cross term must vanish on average over the connections (within two
    standard errors over the runs); single connections deviate by the fluctuations of finite widths.
    Geometric or linear growth: over the connections of the deepest stack, a straight line through the
    log-variance (geometric) or through the variance (linear) fits with R^2 >= 0.95, and better than the
    other one. Renormalized: every layer's output variance within 10% of 1 at init (LayerNorm with gain 1)
    and, after training, no growth with depth (the last layer's output variance at most twice the first's)."""
    def every(predicate: Any, variant: str) -> bool:
        return all(predicate(analysis[f"{m}/{variant}"]) for m in MODELS)

    def show(key: str, variant: str, fmt: str = ".3g") -> str:
        return ", ".join(f"{m} {analysis[f'{m}/{variant}'][key]:{fmt}}" for m in MODELS)

    f = analysis["formula"]
    post_range = ", ".join(f"{m} [{lo:.3f}, {hi:.3f}]" for m in MODELS
                           for lo, hi in [analysis[f"{m}/post"]["out_range_init"]])
    return [
        check("formula", "At initialization Var(x + F(x)) = Var(x) + Var(F(x)): the cross term 2E[xF] vanishes on "
              f"average (relative to the prediction {f['mean']:+.3f} +- {f['stderr']:.3f} over all runs; single "
              f"connections deviate by a median {f['median_abs']:.1%}, at most {f['max_abs']:.1%})",
              abs(f["mean"]) <= 2 * f["stderr"]),
        check("none_grows", "Without a norm the variance accumulates layer by layer, geometrically (R^2 of a line "
              f"through log Var: {show('log_linear_r2_init', 'none', '.3f')}; through Var: "
              f"{show('linear_r2_init', 'none', '.3f')}): it grows {show('growth_init', 'none')}x over the deepest "
              "stack",
              every(lambda a: a["log_linear_r2_init"] >= max(0.95, a["linear_r2_init"]), "none")),
        check("pre_linear", "Pre-LN: every branch gets a unit-scale input, so the stream still grows, about linearly "
              f"(R^2 of a line through Var: {show('linear_r2_init', 'pre', '.3f')}; through log Var: "
              f"{show('log_linear_r2_init', 'pre', '.3f')}; growth {show('growth_init', 'pre')}x; branch variance "
              f"max/min per kind {show('branch_spread_init', 'pre', '.2f')})",
              every(lambda a: a["linear_r2_init"] >= max(0.95, a["log_linear_r2_init"]), "pre")),
        check("post_unit", "Post-LN renormalizes the stream at every layer at initialization (output variance "
              f"range {post_range})",
              all(abs(v - 1) <= 0.1 for m in MODELS for v in analysis[f"{m}/post"]["out_range_init"])),
        check("pre_grows_trained", "After training, Pre-LN's stream still grows with depth (last/first layer output "
              f"variance {show('growth_trained', 'pre', '.2f')})", every(lambda a: a["growth_trained"] > 1, "pre")),
        check("post_flat_trained", "After training, Post-LN's stream does not grow with depth (last/first "
              f"{show('growth_trained', 'post', '.2f')}, at most 2)",
              every(lambda a: a["growth_trained"] <= 2, "post")),
    ]


def summarize(results: dict[str, Any]) -> list[str]:
    analysis, st = results["analysis"], results["settings"]
    lines = [f"**Residual stream variance** at depth {max(st['depths'])} (growth over the stack at init; after "
             f"training at depth {st['train_depth']}):"]
    for model in MODELS:
        parts = [f"{LABELS[v]} {analysis[f'{model}/{v}']['growth_init']:.3g}x / "
                 f"{analysis[f'{model}/{v}']['growth_trained']:.3g}x" for v in VARIANTS]
        lines.append(f"- {model}: " + "; ".join(parts))
    f = analysis["formula"]
    lines.append(f"- Var(x + F) vs Var(x) + Var(F) at init: mean relative cross term {f['mean']:+.3f} +- "
                 f"{f['stderr']:.3f}, median single deviation {f['median_abs']:.1%}")
    return lines


def report(results: dict[str, Any]) -> str:
    st, analysis = results["settings"], results["analysis"]
    rows = [[model, LABELS[v], a["growth_init"], a["branch_spread_init"], a["linear_r2_init"], a["log_linear_r2_init"],
             a["growth_trained"], f"{a['formula_error_trained']:.1%}",
             "diverged" if a["diverged"] else f"{a['final_loss']:.3f}"]
            for model in MODELS for v in VARIANTS for a in [analysis[f"{model}/{v}"]]]
    f = analysis["formula"]
    lines = ["# Residual stream variance: no norm, Pre-LN, Post-LN", "",
             (f"Mode: {'quick' if results['quick'] else 'full'}, {duration(results)}, seeds {results['seeds']}. "
              f"d_model {st['d_model']}, depths {list(st['depths'])}; training at depth {st['train_depth']}: Adam lr "
              f"{st['lr']}, {st['train_steps']} steps of {st['train_batch']} windows of {st['seq_len']} characters "
              f"(MLP: as many examples)."), "",
             f"## At depth {max(st['depths'])} (init, mean over seeds) and after training", "",
             *markdown_table(["model", "variant", "growth at init", "Var(F) max/min", "R^2 linear", "R^2 log",
                              "growth trained", "max formula deviation trained", "final train loss"], rows),
             "", ("Var is the mean square over all elements of a fixed batch. Growth: the last connection's output "
                  "variance over the first one's output variance. Formula "
                  "deviation: (Var(x+F) - Var(x) - Var(F)) / (Var(x) + Var(F)) = 2 E[xF] / (Var(x) + Var(F)); at init "
                  f"its mean over all runs is {f['mean']:+.3f} +- {f['stderr']:.3f}, the median single deviation "
                  f"{f['median_abs']:.1%} and the largest {f['max_abs']:.1%}."),
             "", "## Checks", "", *check_lines(results), "",
             "## The tutorials' statements beside this run", "",
             "- Var(x_{l+1}) = Var(x_l) + Var(F(x_l)) for a branch independent of its input; without normalization "
             "the variance accumulates layer by layer (explosion or vanishing in deep stacks).",
             "- Pre-LN keeps every branch's input at unit scale; Post-LN renormalizes the stream after every layer."]
    return "\n".join(lines) + "\n"


def plot(record: dict[str, Any], file: Path) -> Path:
    """From the record, per model: the stream's variance over the connections of the deepest model (solid:
    measured Var(x_l + F); dots: Var(x_l) + Var(F) predicted), at init (first seed) and after training
    (dashed)."""
    fig, axes = new_figure(ncols=2, size=(5.5, 4.0))
    st = record["settings"]
    colors = {"none": "tab:red", "pre": "tab:blue", "post": "tab:green"}
    for ax, model in zip(axes[0], MODELS):
        for variant in VARIANTS:
            profiles = record["profiles"][f"{model}/{variant}"]
            r, t = profiles["init"], profiles["trained"]
            layers = np.arange(1, len(r["sum"]) + 1)
            ax.semilogy(layers, r["sum"], "-", color=colors[variant], label=f"{LABELS[variant]}: Var(x + F), init")
            ax.semilogy(layers, r["predicted"], ".", color=colors[variant], markersize=3, label="Var(x) + Var(F)")
            ax.semilogy(np.arange(1, len(t["sum"]) + 1), t["sum"], "--", color=colors[variant],
                        label=f"{LABELS[variant]}, trained (depth {st['train_depth']})")
        ax.set(xlabel="residual connection", ylabel="variance", title=f"{model}: residual stream")
        ax.legend(fontsize=6)
    return save_figure(fig, file)
