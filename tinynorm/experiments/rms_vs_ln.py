"""Is RMSNorm faster than LayerNorm? Kernel, layer and end-to-end timings (Zhang & Sennrich 2019).

RMSNorm drops LayerNorm's re-centring: y = x / rms(x) * g instead of (x - mean) / std * g + b. That saves
one reduction in the forward pass (the mean), one in the backward pass, and the bias. Zhang & Sennrich
("Root Mean Square Layer Normalization", NeurIPS 2019) report 7%-64% less running time than LayerNorm
at comparable quality, across their models.

Measured here, with the CPU kernels on one thread (see ``common.single_threaded``: on a shared
machine, thread oversubscription makes parallel timings noise):

* kernel: ``layer_norm_forward`` versus ``rms_norm_forward`` (and forward followed by backward) on
  float32 arrays of a fixed total size with widths from 64 to 4096 columns;
* layer: the same through ``nn.LayerNorm`` / ``nn.RMSNorm`` on tensors (autograd included), so the
  per-call overhead of the framework counts;
* training: TinyTransformerLM trained with each norm from the same initialization on the same
  batches: the final losses (quality) and the step times;
* end to end, as Amdahl's law: on models whose norms take different shares of a step (d_model and
  sequence length varied), the measured saving of a training step against the prediction "the
  norms' share of the step times what RMSNorm saves on them" (see :func:`amdahl`). A kernel saving
  of a third moves a step whose norms take 3% by 1%: the small end-to-end saving on a CPU is the law,
  not a flaw, and the check is that the law holds within the timing noise. That noise is mostly not
  step to step: two identical models built one after the other differ by about 2% per step (where
  their arrays land in memory), so each model is timed over several rounds of freshly built models,
  with a second LayerNorm model in every round as a control that must show no saving.

Times are medians of repeats of the thread's CPU time (see :func:`clock`), with the two norms' samples
interleaved so that a change in the machine's load (caches, memory bandwidth) hits both alike. Speed is
measured and reported, never assumed.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import nn, optim
from ..data import CharTokenizer, load_text_corpus, sample_lm_batch
from ..kernels.cpu.layer_norm import layer_norm_backward, layer_norm_forward
from ..kernels.cpu.rms_norm import rms_norm_backward, rms_norm_forward
from ..models import TinyTransformerLM
from ..nn.functional import cross_entropy
from ..random import manual_seed
from ..tensor import tensor
from .claims import check_lines, quick_mode_checks
from .common import markdown_table, new_figure, save_figure, single_threaded, write_json
from .common import progress as progress_bar

NORMS = ("layernorm", "rmsnorm")
EPS = 1e-5
# The models of the Amdahl comparison: (name, d_model, n_layers, seq_len, batch_size). The norms' share of a
# step falls as d_model grows (norms cost O(d) per token, the matmuls O(d^2)) and as the sequence grows
# (attention costs O(T) per token), so the predicted saving differs across them.
AMDAHL_MODELS = {
    "quick": (("d32 T32", 32, 2, 32, 16), ("d64 T32", 64, 2, 32, 16)),
    "full": (("d32 T32", 32, 4, 32, 32), ("d64 T32", 64, 4, 32, 16), ("d64 T128", 64, 4, 128, 4),
             ("d128 T64", 128, 4, 64, 8), ("d256 T32", 256, 2, 32, 8)),
}
SETTINGS = {
    "quick": {"widths": (64, 512, 4096), "total": 2**17, "repeat": 5, "d_model": 64, "n_layers": 2,
              "n_heads": 4, "seq_len": 32, "batch_size": 16, "steps": 10, "lr": 3e-3,
              "timing_rounds": 3, "timing_steps": 6},
    "full": {"widths": (64, 128, 256, 512, 1024, 2048, 4096), "total": 2**21, "repeat": 15, "d_model": 64,
             "n_layers": 4, "n_heads": 4, "seq_len": 32, "batch_size": 16, "steps": 200, "lr": 3e-3,
             "timing_rounds": 12, "timing_steps": 20},
}
TIMED_MODELS = ("layernorm", "rmsnorm", "layernorm")  # each timing round: the pair, and a LayerNorm control
WARMUP_STEPS = 2  # steps of each freshly built model left out of its timing (first calls allocate state)
BOOTSTRAP = 400  # resamples behind each standard error of a saving


def clock() -> float:
    """CPU seconds of the calling thread. Everything here runs on one thread, and on a shared machine
    wall-clock time also counts the waits for a free core (measured: per-call times scattered 10x under
    load); the thread's CPU clock only advances while it runs."""
    return time.thread_time()


def interleaved_samples(fns: dict[str, Callable[[], object]], repeat: int,
                        min_time: float = 0.02) -> dict[str, np.ndarray]:
    """``repeat`` samples of the CPU seconds per call of each function, taken in turn so that load changes
    hit all alike. After a warm-up call each (which may compile) and a second one that sets how many
    calls make ``min_time``, every sample runs a function back to back that many times."""
    numbers = {}
    for name, fn in fns.items():
        fn()
        start = clock()
        fn()
        numbers[name] = max(1, int(min_time / max(clock() - start, 1e-7)))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = clock()
            for _ in range(numbers[name]):
                fn()
            samples[name].append((clock() - start) / numbers[name])
    return {name: np.array(values) for name, values in samples.items()}


def interleaved_medians(fns: dict[str, Callable[[], object]], repeat: int, min_time: float = 0.02) -> dict[str, float]:
    """Median of :func:`interleaved_samples` per function."""
    return {name: float(np.median(values)) for name, values in interleaved_samples(fns, repeat, min_time).items()}


def kernel_calls(rows: int, cols: int, rng: np.random.Generator) -> dict[str, Callable[[], object]]:
    """Forward and forward+backward calls of both kernels on one (rows, cols) float32 problem."""
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    dy = rng.standard_normal((rows, cols), dtype=np.float32)
    weight, bias = np.ones(cols, np.float32), np.zeros(cols, np.float32)

    def ln_both() -> None:
        _, mean, rstd = layer_norm_forward(x, weight, bias, EPS)
        layer_norm_backward(dy, x, mean, rstd, weight)

    def rms_both() -> None:
        _, rstd = rms_norm_forward(x, weight, EPS)
        rms_norm_backward(dy, x, rstd, weight)

    return {"layernorm forward": lambda: layer_norm_forward(x, weight, bias, EPS),
            "rmsnorm forward": lambda: rms_norm_forward(x, weight, EPS),
            "layernorm forward+backward": ln_both, "rmsnorm forward+backward": rms_both}


def layer_calls(rows: int, cols: int, rng: np.random.Generator, prefix: str = "") -> dict[str, Callable[[], object]]:
    """The same four calls through ``nn.LayerNorm`` / ``nn.RMSNorm`` on tensors (autograd included)."""
    x = tensor(rng.standard_normal((rows, cols), dtype=np.float32), requires_grad=True)
    dy = tensor(rng.standard_normal((rows, cols), dtype=np.float32))
    layers = {"layernorm": nn.LayerNorm(cols, eps=EPS), "rmsnorm": nn.RMSNorm(cols, eps=EPS)}
    calls: dict[str, Callable[[], object]] = {}
    for name, layer in layers.items():
        calls[f"{prefix}{name} forward"] = lambda layer=layer: layer(x)
        calls[f"{prefix}{name} forward+backward"] = lambda layer=layer: layer(x).backward(dy)
    return calls


def time_widths(widths: tuple[int, ...], total: int, repeat: int, show: bool) -> list[dict[str, Any]]:
    """Median times (seconds) of every call at each width, ``total // width`` rows."""
    rng = np.random.default_rng(0)
    rows = []
    for width in progress_bar(widths, label="norm timings", enabled=show):
        calls = {**kernel_calls(total // width, width, rng), **layer_calls(total // width, width, rng, "nn ")}
        times = interleaved_medians(calls, repeat)
        rows.append({"width": width, "rows": total // width, "seconds": times,
                     "ratio": {f"{level}{kind}": times[f"{level}rmsnorm {kind}"] / times[f"{level}layernorm {kind}"]
                               for level in ("", "nn ") for kind in ("forward", "forward+backward")}})
    return rows


def train_interleaved(config: dict[str, Any], norms: Sequence[str], steps: int, seed: int, show: bool = False,
                      label: str = "training") -> list[dict[str, list[float]]]:
    """Train one TinyTransformerLM per entry of ``norms`` (a norm may appear twice) from the same seed on
    the same batches, their steps interleaved with the order rotating every step, so that none always
    runs first. Returns per model its losses and every step's CPU seconds."""
    text = load_text_corpus()
    tokenizer = CharTokenizer(text)
    ids = tokenizer.encode(text)
    runs = []
    for norm in norms:
        manual_seed(seed)
        model = TinyTransformerLM(tokenizer.vocab_size, config["d_model"], config["n_heads"], config["n_layers"],
                                  config["seq_len"], norm, "pre")
        runs.append({"model": model, "optimizer": optim.Adam(model.parameters(), lr=config["lr"]),
                     "losses": [], "seconds": []})
    rng = np.random.default_rng(seed)
    for step in progress_bar(range(steps), label=label, enabled=show):
        inputs, targets = sample_lm_batch(ids, config["batch_size"], config["seq_len"], rng)
        shift = step % len(runs)
        for run in runs[shift:] + runs[:shift]:
            start = clock()
            run["optimizer"].zero_grad()
            logits = run["model"](tensor(inputs))
            loss = cross_entropy(logits.reshape(-1, logits.shape[-1]), tensor(targets).reshape(-1))
            loss.backward()
            run["optimizer"].step()
            run["seconds"].append(clock() - start)
            run["losses"].append(float(loss.item()))
    return [{"losses": run["losses"], "seconds": run["seconds"]} for run in runs]


def train_both(config: dict[str, Any], seed: int, show: bool) -> dict[str, dict[str, Any]]:
    """The quality comparison: one model per norm, ``config['steps']`` interleaved steps. Per norm: the
    losses, every step's CPU time, their median (the first step, which compiles, left out) and the final
    loss (mean of the last tenth)."""
    tail = max(1, config["steps"] // 10)
    trained = train_interleaved(config, NORMS, config["steps"], seed, show)
    return {norm: {"losses": run["losses"], "seconds": run["seconds"],
                   "step_seconds": float(np.median(run["seconds"][1:] or run["seconds"])),
                   "final_loss": float(np.mean(run["losses"][-tail:])),
                   "norm_layers": 2 * config["n_layers"] + 1}
            for norm, run in zip(NORMS, trained)}


def timing_rounds(config: dict[str, Any], seed: int, show: bool, label: str) -> dict[str, np.ndarray]:
    """Median step CPU time of each of TIMED_MODELS, per round of ``config['timing_rounds']``: every round
    builds the models afresh (the construction order rotating) and trains them ``config['timing_steps']``
    interleaved steps, the first WARMUP_STEPS left out. Returns 'layernorm', 'rmsnorm' and 'control'
    arrays of one median per round."""
    medians: dict[str, list[float]] = {"layernorm": [], "rmsnorm": [], "control": []}
    names = ("layernorm", "rmsnorm", "control")
    for index in progress_bar(range(config["timing_rounds"]), label=label, enabled=show):
        shift = index % len(TIMED_MODELS)
        order = list(range(shift, len(TIMED_MODELS))) + list(range(shift))
        runs = train_interleaved(config, [TIMED_MODELS[i] for i in order], config["timing_steps"], seed + index)
        for i, run in zip(order, runs):
            medians[names[i]].append(float(np.median(run["seconds"][WARMUP_STEPS:])))
    return {name: np.array(values) for name, values in medians.items()}


def norm_seconds(config: dict[str, Any], repeat: int) -> dict[str, np.ndarray]:
    """Samples of one step's CPU time in the norm layers, per norm: everything one layer costs a training
    step, timed alone at the model's activation shape (batch * seq_len, d_model): its forward and
    backward, and Adam's update and zero_grad of its parameters (LayerNorm's bias is one more); times the
    number of norm layers."""
    rows = config["batch_size"] * config["seq_len"]
    rng = np.random.default_rng(1)
    x = tensor(rng.standard_normal((rows, config["d_model"]), dtype=np.float32), requires_grad=True)
    dy = tensor(rng.standard_normal((rows, config["d_model"]), dtype=np.float32))
    calls = {}
    for norm, layer in (("layernorm", nn.LayerNorm(config["d_model"], eps=EPS)),
                        ("rmsnorm", nn.RMSNorm(config["d_model"], eps=EPS))):
        optimizer = optim.Adam(layer.parameters(), lr=config["lr"])

        def step(layer: nn.Module = layer, optimizer: optim.Adam = optimizer) -> None:
            optimizer.zero_grad()
            layer(x).backward(dy)
            optimizer.step()

        calls[norm] = step
    samples = interleaved_samples(calls, repeat)
    return {norm: samples[norm] * (2 * config["n_layers"] + 1) for norm in NORMS}


def amdahl(rounds: dict[str, np.ndarray], norms: dict[str, np.ndarray], seed: int = 0) -> dict[str, Any]:
    """Measured against predicted end-to-end saving of RMSNorm over LayerNorm, with standard errors.

    Amdahl's law: if the norms take a share p of a LayerNorm step and RMSNorm cuts their time by a
    fraction k, the step shrinks by p * k = (T_LN - T_RMS) / step_LN, where T is the norms' time per step
    (measured alone, :func:`norm_seconds`). The measured saving is the mean over the timing rounds of
    1 - step_RMS / step_LN (each a median over the round's steps), its standard error the spread over
    rounds; the control's is the same with the round's second LayerNorm model in place of RMSNorm. The
    prediction's standard error comes from resampling the rounds and the norm samples.
    """
    ln, rms, control = rounds["layernorm"], rounds["rmsnorm"], rounds["control"]
    ln_norms, rms_norms = norms["layernorm"], norms["rmsnorm"]
    savings, nulls = 1.0 - rms / ln, 1.0 - control / ln

    def predicted(step_ln: np.ndarray, t_ln: np.ndarray, t_rms: np.ndarray) -> float:
        return float((np.median(t_ln) - np.median(t_rms)) / np.median(step_ln))

    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(BOOTSTRAP):
        steps, picks = rng.integers(0, len(ln), len(ln)), rng.integers(0, len(ln_norms), len(ln_norms))
        boot.append(predicted(ln[steps], ln_norms[picks], rms_norms[picks]))
    measured_se, predicted_se = _sem(savings), float(np.std(boot))
    return {"share": float(np.median(ln_norms) / np.median(ln)),
            "norm_saving": 1.0 - float(np.median(rms_norms) / np.median(ln_norms)),
            "measured": float(np.mean(savings)), "measured_se": measured_se,
            "predicted": predicted(ln, ln_norms, rms_norms), "predicted_se": predicted_se,
            "difference_se": float(np.hypot(measured_se, predicted_se)),
            "control": float(np.mean(nulls)), "control_se": _sem(nulls), "rounds": len(ln)}


def _sem(values: np.ndarray) -> float:
    """Standard error of the mean (0 for a single value)."""
    return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def amdahl_cases(config: dict[str, Any], models: tuple[tuple[Any, ...], ...], seed: int,
                 show: bool) -> list[dict[str, Any]]:
    """:func:`amdahl` for each model of ``models``."""
    cases = []
    for name, d_model, n_layers, seq_len, batch_size in models:
        case_config = dict(config, d_model=d_model, n_layers=n_layers, seq_len=seq_len, batch_size=batch_size)
        rounds = timing_rounds(case_config, seed, show, label=f"timing {name}")
        cases.append({"model": name, "d_model": d_model, "n_layers": n_layers, "seq_len": seq_len,
                      "batch_size": batch_size,
                      "step_seconds": {norm: float(np.median(rounds[norm])) for norm in NORMS},
                      "round_seconds": {name: values.tolist() for name, values in rounds.items()},
                      **amdahl(rounds, norm_seconds(case_config, config["repeat"]), seed)})
    return cases


def run(out_dir: str | Path, quick: bool = False, seeds: Sequence[int] | None = None,
        progress: bool = True) -> dict[str, Any]:
    """Run the timings, the training comparison and the Amdahl comparison; write rms_vs_ln.json, .md and
    .png into ``out_dir``.

    ``seeds``: the first one seeds the trainings (default 0).
    """
    mode = "quick" if quick else "full"
    config = SETTINGS[mode]
    seed = int(seeds[0]) if seeds else 0
    out_dir = Path(out_dir)
    start = time.perf_counter()
    with single_threaded():
        widths = time_widths(config["widths"], config["total"], config["repeat"], progress)
        training = train_both(config, seed, progress)
        cases = amdahl_cases(config, AMDAHL_MODELS[mode], seed, progress)
    results: dict[str, Any] = {"quick": quick, "seed": seed, "settings": config, "widths": widths,
                               "training": training, "amdahl": cases}
    results["checks"], results["full_run_only"] = quick_mode_checks(make_checks(results), quick, QUICK_CLAIMS)
    results["seconds"] = time.perf_counter() - start
    results["summary"] = summarize(results)
    figure = plot(results, out_dir / "rms_vs_ln.png")
    results["figures"] = [str(figure)]
    write_json(out_dir / "rms_vs_ln.json", results)
    (out_dir / "rms_vs_ln.md").write_text(report(results))
    return {key: results[key] for key in ("summary", "checks", "full_run_only", "figures")}


def ratio_range(widths: list[dict[str, Any]], key: str) -> tuple[float, float]:
    """Smallest and largest RMSNorm/LayerNorm time ratio over the widths."""
    values = [row["ratio"][key] for row in widths]
    return min(values), max(values)


# Claims quick mode judges (python -m tinynorm.experiments.audit rms-vs-ln): the kernel timings and the
# quality are resolved by its short runs; a few timing rounds cannot resolve a saving of 1% of a step.
QUICK_CLAIMS = frozenset({"kernel.faster", "kernel.paper_range", "quality"})


def chi_square_bound(k: int, z: float = 1.6449) -> float:
    """The 95% quantile of the chi-square distribution with ``k`` degrees of freedom, by Wilson and
    Hilferty's cube-root approximation (1% low at k = 2, closer above): the largest sum of ``k`` squared
    standard scores that pure noise exceeds one time in twenty."""
    return k * (1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3


def make_checks(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's claims, and Amdahl's law for the end-to-end saving, against the measurements.

    Amdahl's law is judged once over all the models, by the sum of the squared differences between
    measured and predicted savings over their standard errors (chi-square with one degree of freedom per
    model): one check with a 5% chance to fail by noise alone, where one 2-standard-error check per model
    would fail one time in four with five models. The control (two identical LayerNorm models) is judged
    the same way against a saving of zero: it tests the standard errors themselves.
    """
    low, high = ratio_range(results["widths"], "forward+backward")
    ln, rms = results["training"]["layernorm"], results["training"]["rmsnorm"]
    checks = [
        {"id": "kernel.faster", "claim": f"RMSNorm kernel forward+backward is faster than LayerNorm's at every width "
                                         f"(time ratio {low:.2f}-{high:.2f})", "passed": high < 1.0},
        {"id": "kernel.paper_range", "claim": f"the kernel saving lies in the paper's 7%-64% range at every width "
                                              f"(saving {1 - high:.0%}-{1 - low:.0%})",
         "passed": 0.07 <= 1 - high and 1 - low <= 0.64},
    ]
    cases = results["amdahl"]
    bound = chi_square_bound(len(cases))
    agreement = sum(((c["measured"] - c["predicted"]) / c["difference_se"]) ** 2 for c in cases)
    null = sum((c["control"] / c["control_se"]) ** 2 for c in cases)
    pairs = ", ".join(f"{c['model']} {c['measured']:.2%} vs {c['predicted']:.2%}" for c in cases)
    controls = ", ".join(f"{c['model']} {c['control']:+.2%} +- {c['control_se']:.2%}" for c in cases)
    checks += [
        {"id": "amdahl", "passed": agreement <= bound,
         "claim": (f"Amdahl's law end to end: across {len(cases)} models the measured saving of a training step "
                   f"equals the norms' share of it times their saving, within the timing noise (measured vs "
                   f"predicted: {pairs}; chi-square {agreement:.1f}, 95% bound {bound:.1f})")},
        {"id": "control", "passed": null <= bound,
         "claim": (f"the timing noise is measured right: two identical LayerNorm models timed the same way show "
                   f"no saving ({controls}; chi-square {null:.1f}, 95% bound {bound:.1f})")},
    ]
    checks.append({"id": "quality", "claim": f"comparable quality: final losses within 0.1 nats (LayerNorm "
                                             f"{ln['final_loss']:.3f}, RMSNorm {rms['final_loss']:.3f})",
                   "passed": abs(ln["final_loss"] - rms["final_loss"]) <= 0.1})
    return checks


def summarize(results: dict[str, Any]) -> list[str]:
    """Markdown lines with the measured ratios."""
    lines = ["**RMSNorm vs LayerNorm** (time ratio RMSNorm / LayerNorm, < 1 means RMSNorm is faster):"]
    for key, label in (("forward", "kernel forward"), ("forward+backward", "kernel forward+backward"),
                       ("nn forward", "nn layer forward"), ("nn forward+backward", "nn layer forward+backward")):
        low, high = ratio_range(results["widths"], key)
        lines.append(f"- {label}: {low:.2f}-{high:.2f} over widths {results['settings']['widths'][0]}-"
                     f"{results['settings']['widths'][-1]} (saving {1 - high:.0%} to {1 - low:.0%})")
    ln, rms = results["training"]["layernorm"], results["training"]["rmsnorm"]
    lines.append(f"- TinyTransformerLM step (CPU time): {ln['step_seconds'] * 1e3:.1f} ms (LayerNorm) vs "
                 f"{rms['step_seconds'] * 1e3:.1f} ms (RMSNorm); final training loss after "
                 f"{results['settings']['steps']} steps: LayerNorm {ln['final_loss']:.3f}, RMSNorm {rms['final_loss']:.3f}")
    cases = ", ".join(f"{c['model']}: {c['measured']:.2%} +- {c['measured_se']:.2%} measured vs "
                      f"{c['predicted']:.2%} predicted (share {c['share']:.1%})" for c in results["amdahl"])
    lines.append(f"- End-to-end saving against Amdahl's prediction (the norms' share of a step x their saving): {cases}")
    return lines


def report(results: dict[str, Any]) -> str:
    """rms_vs_ln.md: settings, timing table, training table, checks and the paper's numbers."""
    st = results["settings"]
    lines = ["# RMSNorm vs LayerNorm (Zhang & Sennrich 2019)", "",
             (f"Mode: {'quick' if results['quick'] else 'full'}, {results['seconds']:.0f} s. float32, "
             f"{st['total']:,} elements per problem, median of {st['repeat']} interleaved samples of the "
             "thread's CPU time, one thread (Numba and BLAS)."), "",
             "## CPU time per call (microseconds) and ratio RMSNorm / LayerNorm", ""]
    rows = []
    for row in results["widths"]:
        s = row["seconds"]
        rows.append([row["width"], row["rows"],
                     *(s[f"{level}{norm} {kind}"] * 1e6 for level in ("", "nn ") for kind in ("forward", "forward+backward")
                       for norm in NORMS),
                     *(row["ratio"][f"{level}{kind}"] for level in ("", "nn ") for kind in ("forward", "forward+backward"))])
    lines += markdown_table(["width", "rows", "LN fwd", "RMS fwd", "LN f+b", "RMS f+b", "nn LN fwd", "nn RMS fwd",
                             "nn LN f+b", "nn RMS f+b", "ratio fwd", "ratio f+b", "nn ratio fwd", "nn ratio f+b"], rows)
    ln, rms = results["training"]["layernorm"], results["training"]["rmsnorm"]
    lines += ["", (f"## Training: TinyTransformerLM (Pre-LN, d_model {st['d_model']}, {st['n_layers']} layers, "
              f"batch {st['batch_size']}x{st['seq_len']}, Adam lr {st['lr']}, {st['steps']} steps, same seed and batches)"),
              "", *markdown_table(["norm", "median step (ms CPU)", "final loss"],
                                  [[name, run["step_seconds"] * 1e3, run["final_loss"]]
                                   for name, run in (("layernorm", ln), ("rmsnorm", rms))]),
              "", "## End to end: measured saving against Amdahl's prediction", "",
              (f"Each model is timed over {st['timing_rounds']} rounds; every round builds a LayerNorm model, an "
               "RMSNorm model and a second LayerNorm model (the control) afresh from the same seed (the "
               f"construction order rotating) and trains them {st['timing_steps']} interleaved steps on the same "
               f"batches, the first {WARMUP_STEPS} left out. Measured saving: the mean over rounds of 1 - median "
               "step RMSNorm / median step LayerNorm, ± its standard error over rounds; the control's likewise. "
               "Predicted: everything the norm layers cost a step (forward, backward, Adam's update and "
               "zero_grad of their parameters), timed alone at the model's shape (batch x seq_len, d_model) "
               "times the 2L + 1 norm layers, LayerNorm's minus RMSNorm's, over the LayerNorm step: the norms' "
               f"share times their saving, ± a standard error from {BOOTSTRAP} bootstrap resamples."), "",
              *markdown_table(["model", "layers", "batch", "step LN (ms)", "norms' share", "norms' saving",
                               "predicted saving", "measured saving", "difference / s.e.", "control (LN vs LN)"],
                              [[c["model"], c["n_layers"], c["batch_size"], c["step_seconds"]["layernorm"] * 1e3,
                                f"{c['share']:.1%}", f"{c['norm_saving']:.0%}",
                                f"{c['predicted']:.2%} +- {c['predicted_se']:.2%}",
                                f"{c['measured']:.2%} +- {c['measured_se']:.2%}",
                                (c["measured"] - c["predicted"]) / max(c["difference_se"], 1e-12),
                                f"{c['control']:+.2%} +- {c['control_se']:.2%}"]
                               for c in results["amdahl"]]),
              "", "## Checks", "", *check_lines(results),
              "", "## The paper beside this run", "",
              *markdown_table(["", "Zhang & Sennrich 2019", "here"], [
                  ["running-time saving", "7%-64% (whole models, GPU)",
                   "kernels: " + "{:.0%}-{:.0%}".format(*(1 - v for v in ratio_range(results["widths"], "forward+backward")[::-1]))
                   + "; end to end: " + ", ".join(f"{c['measured']:.1%}" for c in results["amdahl"])],
                  ["quality", "comparable to LayerNorm", f"final loss {rms['final_loss']:.3f} vs {ln['final_loss']:.3f}"],
              ]),
              "", ("The paper timed whole models on GPUs, where normalization is a large share of a step. Here the "
              "end-to-end saving is what Amdahl's law allows: the norms' share of a CPU step (small: the matmuls, "
              "attention and the optimizer dominate) times what RMSNorm saves on the norms themselves.")]
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], file: Path) -> Path:
    """Left: kernel time ratio against width; middle: the training curves; right: measured against
    predicted end-to-end saving, one point per model, with the line measured = predicted."""
    fig, axes = new_figure(ncols=3, size=(5.5, 4.0))
    ax = axes[0][0]
    widths = [row["width"] for row in results["widths"]]
    for key, style in (("forward", "o-"), ("forward+backward", "s-"), ("nn forward", "o--"),
                       ("nn forward+backward", "s--")):
        ax.plot(widths, [row["ratio"][key] for row in results["widths"]], style, label=key.replace("nn ", "nn layer "))
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.axhspan(0.36, 0.93, color="tab:green", alpha=0.1, label="paper: 7%-64% saving")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("width (columns normalized)")
    ax.set_ylabel("time RMSNorm / LayerNorm")
    ax.set_title("RMSNorm vs LayerNorm, CPU kernels")
    ax.legend(fontsize=7)
    ax = axes[0][1]
    for norm in NORMS:
        run = results["training"][norm]
        ax.plot(run["losses"], label=f"{norm}: {run['step_seconds'] * 1e3:.0f} ms CPU/step, final {run['final_loss']:.2f}")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (nats)")
    ax.set_title("TinyTransformerLM, same seed and batches")
    ax.legend(fontsize=7)
    ax = axes[0][2]
    cases = results["amdahl"]
    for case in cases:
        ax.errorbar(100 * case["predicted"], 100 * case["measured"], xerr=100 * case["predicted_se"],
                    yerr=100 * case["measured_se"], marker="o", capsize=3,
                    label=f"{case['model']} (share {case['share']:.1%})")
    ax.errorbar([100 * c["predicted"] for c in cases], [100 * c["control"] for c in cases],
                yerr=[100 * c["control_se"] for c in cases], fmt="x", color="gray", capsize=2,
                label="control: LayerNorm vs LayerNorm")
    edges = [100 * v for c in cases for v in (c["predicted"], c["measured"], c["control"])]
    low, high = min(edges + [0.0]) - 0.5, max(edges) + 0.5
    ax.plot([low, high], [low, high], ":", color="gray", label="measured = predicted")
    ax.set_xlabel("predicted saving (%): norms' share x their saving")
    ax.set_ylabel("measured end-to-end saving (%)")
    ax.set_title("Amdahl's law for RMSNorm, one point per model")
    ax.legend(fontsize=7)
    return save_figure(fig, file)
