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
* end to end: TinyTransformerLM trained with each norm from the same initialization on the same
  batches; the median step time, the final loss, and the share of a step the norms take (their
  forward+backward measured in isolation at the model's shape, times the number of norms).

Times are medians of repeats of the thread's CPU time (see :func:`clock`), with the two norms' samples
interleaved so that a change in the machine's load (caches, memory bandwidth) hits both alike. Speed is
measured and reported, never assumed.
"""
from __future__ import annotations

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
from .common import markdown_table, new_figure, save_figure, write_json
from .common import progress as progress_bar
from .common import single_threaded

NORMS = ("layernorm", "rmsnorm")
EPS = 1e-5
SETTINGS = {
    "quick": {"widths": (64, 512, 4096), "total": 2**17, "repeat": 5, "d_model": 64, "n_layers": 2,
              "n_heads": 4, "seq_len": 32, "batch_size": 16, "steps": 10, "lr": 3e-3},
    "full": {"widths": (64, 128, 256, 512, 1024, 2048, 4096), "total": 2**21, "repeat": 15, "d_model": 64,
             "n_layers": 4, "n_heads": 4, "seq_len": 32, "batch_size": 16, "steps": 200, "lr": 3e-3},
}


def clock() -> float:
    """CPU seconds of the calling thread. Everything here runs on one thread, and on a shared machine
    wall-clock time also counts the waits for a free core (measured: per-call times scattered 10x under
    load); the thread's CPU clock only advances while it runs."""
    return time.thread_time()


def interleaved_medians(fns: dict[str, Callable[[], object]], repeat: int, min_time: float = 0.02) -> dict[str, float]:
    """Median CPU seconds per call of each function, sampling them in turn so load changes hit all alike.

    After one warm-up call each, every sample runs a function back to back for at least ``min_time``.
    """
    numbers = {}
    for name, fn in fns.items():
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
    return {name: float(np.median(values)) for name, values in samples.items()}


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


def train_both(config: dict[str, Any], seed: int, show: bool) -> dict[str, dict[str, Any]]:
    """Train one TinyTransformerLM per norm from the same seed on the same batches, steps interleaved.

    Returns per norm: the losses, the median step time and the final loss (mean of the last tenth).
    """
    text = load_text_corpus()
    tokenizer = CharTokenizer(text)
    ids = tokenizer.encode(text)
    runs = {}
    for norm in NORMS:
        manual_seed(seed)
        model = TinyTransformerLM(tokenizer.vocab_size, config["d_model"], config["n_heads"], config["n_layers"],
                                  config["seq_len"], norm, "pre")
        runs[norm] = {"model": model, "optimizer": optim.Adam(model.parameters(), lr=config["lr"]),
                      "losses": [], "seconds": []}
    rng = np.random.default_rng(seed)
    for step in progress_bar(range(config["steps"]), label="training", enabled=show):
        inputs, targets = sample_lm_batch(ids, config["batch_size"], config["seq_len"], rng)
        for norm in NORMS[::1 if step % 2 == 0 else -1]:  # alternate who goes first
            run = runs[norm]
            start = clock()
            run["optimizer"].zero_grad()
            logits = run["model"](tensor(inputs))
            loss = cross_entropy(logits.reshape(-1, logits.shape[-1]), tensor(targets).reshape(-1))
            loss.backward()
            run["optimizer"].step()
            run["seconds"].append(clock() - start)
            run["losses"].append(float(loss.item()))
    tail = max(1, config["steps"] // 10)
    return {norm: {"losses": run["losses"], "step_seconds": float(np.median(run["seconds"][1:] or run["seconds"])),
                   "final_loss": float(np.mean(run["losses"][-tail:])),
                   "norm_layers": 2 * config["n_layers"] + 1}
            for norm, run in runs.items()}


def norm_share(config: dict[str, Any], training: dict[str, dict[str, Any]], repeat: int) -> dict[str, float]:
    """Fraction of a training step spent in the norm layers, from their isolated forward+backward time
    at the model's activation shape (batch * seq_len, d_model) times the number of norms."""
    rows = config["batch_size"] * config["seq_len"]
    calls = layer_calls(rows, config["d_model"], np.random.default_rng(1))
    times = interleaved_medians({norm: calls[f"{norm} forward+backward"] for norm in NORMS}, repeat)
    return {norm: times[norm] * training[norm]["norm_layers"] / training[norm]["step_seconds"] for norm in NORMS}


def run(out_dir: str | Path, quick: bool = False, seeds: Sequence[int] | None = None, device: str = "cpu",
        progress: bool = True) -> dict[str, Any]:
    """Run the timings and the training comparison; write rms_vs_ln.json, .md and .png into ``out_dir``.

    ``seeds``: the first one seeds the training comparison (default 0).
    """
    if device != "cpu":
        raise ValueError(f"rms_vs_ln.run: device={device!r} is not supported yet; only 'cpu' works")
    config = SETTINGS["quick" if quick else "full"]
    seed = int(seeds[0]) if seeds else 0
    out_dir = Path(out_dir)
    start = time.perf_counter()
    with single_threaded():
        widths = time_widths(config["widths"], config["total"], config["repeat"], progress)
        training = train_both(config, seed, progress)
        share = norm_share(config, training, config["repeat"])
    results: dict[str, Any] = {"quick": quick, "seed": seed, "settings": config, "widths": widths,
                               "training": training, "norm_share": share,
                               "step_ratio": training["rmsnorm"]["step_seconds"] / training["layernorm"]["step_seconds"]}
    results["checks"] = make_checks(results)
    results["seconds"] = time.perf_counter() - start
    results["summary"] = summarize(results)
    figure = plot(results, out_dir / "rms_vs_ln.png")
    results["figures"] = [str(figure)]
    write_json(out_dir / "rms_vs_ln.json", results)
    (out_dir / "rms_vs_ln.md").write_text(report(results))
    return {"summary": results["summary"], "checks": results["checks"], "figures": results["figures"]}


def ratio_range(widths: list[dict[str, Any]], key: str) -> tuple[float, float]:
    """Smallest and largest RMSNorm/LayerNorm time ratio over the widths."""
    values = [row["ratio"][key] for row in widths]
    return min(values), max(values)


def make_checks(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's claims against the measurements (speed is reported as measured, pass or fail)."""
    low, high = ratio_range(results["widths"], "forward+backward")
    ln, rms = results["training"]["layernorm"], results["training"]["rmsnorm"]
    return [
        {"claim": f"RMSNorm kernel forward+backward is faster than LayerNorm's at every width "
                  f"(time ratio {low:.2f}-{high:.2f})", "passed": high < 1.0},
        {"claim": f"the kernel saving lies in the paper's 7%-64% range at every width "
                  f"(saving {1 - high:.0%}-{1 - low:.0%})", "passed": 0.07 <= 1 - high and 1 - low <= 0.64},
        {"claim": f"end to end, RMSNorm saves at least the paper's smallest 7% of a training step "
                  f"(saving {1 - results['step_ratio']:.1%}; the norms take "
                  f"{results['norm_share']['layernorm']:.1%} of a LayerNorm step)",
         "passed": results["step_ratio"] <= 0.93},
        {"claim": f"comparable quality: final losses within 0.1 nats (LayerNorm {ln['final_loss']:.3f}, "
                  f"RMSNorm {rms['final_loss']:.3f})", "passed": abs(ln["final_loss"] - rms["final_loss"]) <= 0.1},
    ]


def summarize(results: dict[str, Any]) -> list[str]:
    """Markdown lines with the measured ratios."""
    lines = ["**RMSNorm vs LayerNorm** (time ratio RMSNorm / LayerNorm, < 1 means RMSNorm is faster):"]
    for key, label in (("forward", "kernel forward"), ("forward+backward", "kernel forward+backward"),
                       ("nn forward", "nn layer forward"), ("nn forward+backward", "nn layer forward+backward")):
        low, high = ratio_range(results["widths"], key)
        lines.append(f"- {label}: {low:.2f}-{high:.2f} over widths {results['settings']['widths'][0]}-"
                     f"{results['settings']['widths'][-1]} (saving {1 - high:.0%} to {1 - low:.0%})")
    ln, rms = results["training"]["layernorm"], results["training"]["rmsnorm"]
    share = results["norm_share"]
    lines.append(f"- TinyTransformerLM step (CPU time): {ln['step_seconds'] * 1e3:.1f} ms (LayerNorm) vs "
                 f"{rms['step_seconds'] * 1e3:.1f} ms (RMSNorm), ratio {results['step_ratio']:.3f}; the norms take "
                 f"{share['layernorm']:.1%} / {share['rmsnorm']:.1%} of a step, so even a large kernel saving "
                 f"moves the step time little.")
    lines.append(f"- Final training loss after {results['settings']['steps']} steps: LayerNorm "
                 f"{ln['final_loss']:.3f}, RMSNorm {rms['final_loss']:.3f}")
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
    lines += ["", (f"## End to end: TinyTransformerLM (Pre-LN, d_model {st['d_model']}, {st['n_layers']} layers, "
              f"batch {st['batch_size']}x{st['seq_len']}, Adam lr {st['lr']}, {st['steps']} steps, same seed and batches)"),
              "", *markdown_table(["norm", "median step (ms CPU)", "norm share of a step", "final loss"],
                                  [[name, run["step_seconds"] * 1e3, f"{results['norm_share'][name]:.1%}",
                                    run["final_loss"]] for name, run in (("layernorm", ln), ("rmsnorm", rms))]),
              "", (f"Step time ratio RMSNorm / LayerNorm: {results['step_ratio']:.3f}. The norm share is the norms' "
              "forward+backward time measured alone at the model's shape, times the number of norm layers, over the "
              "step time: an estimate, but it bounds what a faster norm can save end to end."),
              "", "## Checks", "", *(f"- {'PASS' if c['passed'] else 'FAIL'}: {c['claim']}" for c in results["checks"]),
              "", "## The paper beside this run", "",
              *markdown_table(["", "Zhang & Sennrich 2019", "here"], [
                  ["running-time saving", "7%-64% (whole models, GPU)",
                   "kernels: " + "{:.0%}-{:.0%}".format(*(1 - v for v in ratio_range(results["widths"], "forward+backward")[::-1]))
                   + f"; end to end: {1 - results['step_ratio']:.1%}"],
                  ["quality", "comparable to LayerNorm", f"final loss {rms['final_loss']:.3f} vs {ln['final_loss']:.3f}"],
              ]),
              "", ("The paper timed whole models on GPUs; here both norms are single fused CPU kernels, so the kernel "
              "saving is what skipping the mean (one reduction, and the bias) buys, and the end-to-end saving is "
              "bounded by the share of a step the norms take.")]
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], file: Path) -> Path:
    """Left: time ratio RMSNorm / LayerNorm against width; right: the two training curves."""
    fig, axes = new_figure(ncols=2, size=(5.5, 4.0))
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
    return save_figure(fig, file)
