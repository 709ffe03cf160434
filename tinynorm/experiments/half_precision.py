"""BatchNorm statistics in half precision: why mixed-precision training keeps them in float32.

The tutorials (note 003, section 7.4): BatchNorm's running mean and variance are moving averages
accumulated over the whole of training; kept in float16 their rounding errors accumulate and the
estimate drifts from the true statistics, which is why autocast runs BatchNorm in float32.

A long stream of float16 activation batches (per-channel means and spreads that drift slowly, as during
training) is fed to five versions of BatchNorm's statistics, with momentum 0.1:

* ``float64``: batch statistics and running averages in float64 (the reference);
* ``float32``: the same in float32 (numpy);
* ``tinynorm, float32 layer``: ``nn.BatchNorm1d`` with its float32 parameters and buffers, given the
  float16 data (what autocast does: float16 data, float32 statistics);
* ``tinynorm, float16 layer``: the layer converted with ``.to(float16)``: batch statistics are still
  computed in float32, but the running buffers are float16 and every update is rounded to float16;
* ``float16 arithmetic``: a naive half-precision kernel: batch mean and variance summed in float16
  (numpy's pairwise float16 sums), running buffers float16.

Three kinds of channels: ordinary activations (mean about 0, std about 1), activations far from zero
(means 50-200, stds 5-40: unnormalized inputs such as raw pixel values, or post-ReLU features), and
activations whose variance exceeds float16's largest value 65504 (stds 260-400). Errors are measured
against ``float64``: the running mean's error in units of the channel's standard deviation (what
normalizing with it would shift the output by) and the running variance's relative error.

The CUDA path (the float32 layer on float16 data on the GPU) is run with tiny sizes in Numba's CUDA
simulator, in a subprocess (the simulator must be switched on before Numba is imported), and compared
with the same stream on the CPU.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import dtypes, nn
from ..tensor import tensor
from .claims import check, check_lines, quick_mode_checks
from .common import cpu_seconds, duration, markdown_table, new_figure, save_figure
from .records import write_outputs

MOMENTUM = 0.1
PIPELINES = ("float64", "float32", "tinynorm, float32 layer", "tinynorm, float16 layer", "float16 arithmetic")
# channel kinds: (low, high) of the initial mean, (low, high) of the initial std
CASES = {"ordinary": ((-1.0, 1.0), (0.5, 2.0)), "far from zero": ((50.0, 200.0), (5.0, 40.0)),
         "variance above 65504": ((-50.0, 50.0), (260.0, 400.0))}
DRIFT = 0.3  # means and stds change by up to this fraction over the stream
FLOAT16_MAX = float(np.finfo(np.float16).max)


@dataclass(frozen=True)
class Settings:
    batches: int
    batch_size: int
    channels: int
    record_every: int
    sim_batches: int
    sim_batch_size: int
    sim_channels: int


QUICK = Settings(batches=300, batch_size=64, channels=16, record_every=20, sim_batches=3, sim_batch_size=4,
                 sim_channels=2)
FULL = Settings(batches=5000, batch_size=256, channels=64, record_every=50, sim_batches=20, sim_batch_size=16,
                sim_channels=4)

# What a quick run judges: every claim (the full run bears each out; quick runs with seeds 0-4 passed each 5/5).
RESOLVED_IN_QUICK = frozenset({"drift", "overflow", "float32_layer", "cuda"})


# ------------------------------------------------------------------------------------------ the stream


def channel_plan(case: str, channels: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Initial means and stds of each channel, and each channel's drift factor in [-DRIFT, DRIFT]."""
    (mean_low, mean_high), (std_low, std_high) = CASES[case]
    return (rng.uniform(mean_low, mean_high, channels), rng.uniform(std_low, std_high, channels),
            rng.uniform(-DRIFT, DRIFT, channels))


def stream(case: str, seed: int, batches: int, batch_size: int, channels: int):
    """Yield float16 batches (batch_size, channels) whose statistics drift linearly over ``batches``."""
    rng = np.random.default_rng(seed)
    mean, std, drift = channel_plan(case, channels, rng)
    for step in range(batches):
        scale = 1 + drift * step / batches
        yield rng.normal(mean * scale, std * scale, (batch_size, channels)).astype(np.float16)


# ------------------------------------------------------------------------------------------ the pipelines


class NumpyRunning:
    """Running statistics whose batch statistics and updates are computed in ``dtype`` (numpy)."""

    def __init__(self, channels: int, dtype: Any, batch_dtype: Any | None = None) -> None:
        self.dtype, self.batch_dtype = np.dtype(dtype), np.dtype(batch_dtype or dtype)
        self.mean = np.zeros(channels, self.dtype)
        self.var = np.ones(channels, self.dtype)

    def update(self, x: np.ndarray) -> None:
        x = x.astype(self.batch_dtype)
        n = x.shape[0]
        mean = np.sum(x, axis=0, dtype=self.batch_dtype) / self.batch_dtype.type(n)
        var = np.sum((x - mean) ** 2, axis=0, dtype=self.batch_dtype) / self.batch_dtype.type(n - 1)
        m = self.dtype.type(MOMENTUM)
        self.mean = (self.dtype.type(1) - m) * self.mean + m * mean.astype(self.dtype)
        self.var = (self.dtype.type(1) - m) * self.var + m * var.astype(self.dtype)


class LayerRunning:
    """A tinynorm ``BatchNorm1d`` in training mode, its buffers in ``dtype``; ``device`` 'cpu' or 'cuda'."""

    def __init__(self, channels: int, dtype: Any, device: str = "cpu") -> None:
        self.layer = nn.BatchNorm1d(channels, momentum=MOMENTUM).to(dtype=dtype, device=device)
        self.device = device

    def update(self, x: np.ndarray) -> None:
        self.layer(tensor(x, device=self.device))

    @property
    def mean(self) -> np.ndarray:
        return self.layer.running_mean.numpy()

    @property
    def var(self) -> np.ndarray:
        return self.layer.running_var.numpy()


def make_pipelines(channels: int) -> dict[str, Any]:
    return {"float64": NumpyRunning(channels, np.float64), "float32": NumpyRunning(channels, np.float32),
            "tinynorm, float32 layer": LayerRunning(channels, dtypes.float32),
            "tinynorm, float16 layer": LayerRunning(channels, dtypes.float16),
            "float16 arithmetic": NumpyRunning(channels, np.float16)}


def errors(pipeline: Any, reference: NumpyRunning) -> tuple[float, float]:
    """(largest mean error in reference stds, largest relative variance error) over the channels;
    inf where a statistic is not finite."""
    mean, var = pipeline.mean.astype(np.float64), pipeline.var.astype(np.float64)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var))):
        return float("inf"), float("inf")
    return (float(np.max(np.abs(mean - reference.mean) / np.sqrt(reference.var))),
            float(np.max(np.abs(var / reference.var - 1))))


def run_case(case: str, settings: Settings, seed: int) -> dict[str, Any]:
    """Every pipeline on one stream; the error curves and the final statistics."""
    pipelines = make_pipelines(settings.channels)
    reference = pipelines["float64"]
    curves: dict[str, dict[str, list[float]]] = {name: {"mean": [], "var": []} for name in PIPELINES}
    steps = []
    with np.errstate(over="ignore", invalid="ignore"):  # float16 overflow is what this case shows
        for step, x in enumerate(stream(case, seed, settings.batches, settings.batch_size,
                                        settings.channels), 1):
            for pipeline in pipelines.values():
                pipeline.update(x)
            if step % settings.record_every == 0:
                steps.append(step)
                for name, pipeline in pipelines.items():
                    mean_error, var_error = errors(pipeline, reference)
                    curves[name]["mean"].append(mean_error)
                    curves[name]["var"].append(var_error)
    final = {name: {"mean": p.mean.astype(np.float64).tolist(), "var": p.var.astype(np.float64).tolist()}
             for name, p in pipelines.items()}
    layer32, numpy32 = pipelines["tinynorm, float32 layer"], pipelines["float32"]
    return {"case": case, "steps": steps, "errors": curves, "final": final,
            "layer_vs_float32": max(float(np.max(np.abs(layer32.mean - numpy32.mean) / np.sqrt(numpy32.var))),
                                    float(np.max(np.abs(layer32.var / numpy32.var - 1)))),
            "float16_half_ulp": float(np.max(half_ulp(reference.mean) / np.sqrt(reference.var)))}


def half_ulp(values: np.ndarray) -> np.ndarray:
    """Half the float16 spacing at each value: the error of merely storing it in float16."""
    return np.spacing(np.abs(values).astype(np.float16)).astype(np.float64) / 2


# ------------------------------------------------------------------------------------------ CUDA simulator


def cuda_stream_check(settings: Settings, seed: int) -> dict[str, Any]:
    """In this process (the simulator switched on): the float32 layer on the CUDA device and on the CPU
    over the same tiny float16 stream of each case; also what a float16 layer does on the device."""
    out: dict[str, Any] = {}
    for case in CASES:
        cpu, gpu = LayerRunning(settings.sim_channels, dtypes.float32), LayerRunning(settings.sim_channels,
                                                                                        dtypes.float32, "cuda")
        for x in stream(case, seed, settings.sim_batches, settings.sim_batch_size, settings.sim_channels):
            cpu.update(x)
            gpu.update(x)
        out[case] = max(float(np.max(np.abs(gpu.mean - cpu.mean) / np.sqrt(cpu.var))),
                        float(np.max(np.abs(gpu.var / cpu.var - 1))))
    try:
        LayerRunning(settings.sim_channels, dtypes.float16, "cuda").update(
            np.ones((settings.sim_batch_size, settings.sim_channels), np.float16))
        out["float16_layer"] = "ran"
    except (TypeError, ValueError) as error:
        out["float16_layer"] = f"refused: {type(error).__name__}: {error}"
    return out


def run_cuda_simulator(settings: Settings, seed: int) -> dict[str, Any]:
    """:func:`cuda_stream_check` in a subprocess with NUMBA_ENABLE_CUDASIM=1; {'error': ...} when it fails."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    code = ("import json, sys; from tinynorm.experiments import half_precision as h; "
            f"print('RESULT' + json.dumps(h.cuda_stream_check(h.{'QUICK' if settings == QUICK else 'FULL'}, {seed})))")
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return {"error": "the simulator run took more than 600 s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1][len("RESULT"):])


# ------------------------------------------------------------------------------------------ run


def run(out_dir: str | Path, quick: bool = False, seeds: Sequence[int] | None = None,
        progress: bool = True) -> dict[str, Any]:
    """Every case on the CPU, then the CUDA path in the simulator; write half_precision.json, .md and .png.

    ``seeds``: the first one draws the streams (default 0). The CUDA path always runs, in the simulator
    (a subprocess of its own)."""
    settings = QUICK if quick else FULL
    seed = int(seeds[0]) if seeds else 0
    out_dir = Path(out_dir)
    start, start_cpu = time.perf_counter(), cpu_seconds()
    cases = [run_case(case, settings, seed) for case in CASES]
    results: dict[str, Any] = {"quick": quick, "seed": seed, "settings": asdict(settings), "momentum": MOMENTUM,
                               "cases": cases, "cuda_simulator": run_cuda_simulator(settings, seed)}
    results["seconds"], results["cpu_seconds"] = time.perf_counter() - start, cpu_seconds() - start_cpu
    return finish(results, out_dir)


def finish(results: dict[str, Any], out_dir: str | Path) -> dict[str, Any]:
    """Analysis, checks, summary, figure and the files, from a run's raw results."""
    out_dir = Path(out_dir)
    results["analysis"] = analyse(results)
    results["checks"], results["full_run_only"] = quick_mode_checks(make_checks(results["analysis"]),
                                                                    results["quick"], RESOLVED_IN_QUICK)
    return write_outputs(results, out_dir, "half_precision", summarize, report, plot, record_curves)


def record_curves(results: dict[str, Any]) -> dict[str, Any]:
    """What the record keeps beyond the analysis: the momentum, the simulator's outcome and each case's
    error curves over the stream (the per-channel final statistics are left out)."""
    return {"momentum": results["momentum"], "cuda_simulator": results["cuda_simulator"],
            "cases": [{"case": c["case"], "steps": c["steps"], "errors": c["errors"]} for c in results["cases"]]}


# ------------------------------------------------------------------------------------------ analysis


def analyse(results: dict[str, Any]) -> dict[str, Any]:
    """Per case and pipeline: the largest errors over the stream and at its end."""
    out: dict[str, Any] = {"cuda_simulator": results["cuda_simulator"]}
    for case in results["cases"]:
        entry = {"layer_vs_float32": case["layer_vs_float32"], "float16_half_ulp": case["float16_half_ulp"],
                 "largest_variance": max(case["final"]["float64"]["var"])}
        for name in PIPELINES[1:]:
            curve = case["errors"][name]
            entry[name] = {"mean_max": max(curve["mean"]), "var_max": max(curve["var"]),
                           "mean_final": curve["mean"][-1], "var_final": curve["var"][-1]}
        out[case["case"]] = entry
    return out


def make_checks(analysis: dict[str, Any]) -> list[dict[str, Any]]:
    """'Drift': the float16 buffers' running mean ends further from the float64 one than half a float16
    spacing at its value, i.e. more than storing the true value in float16 would cost: the error was
    accumulated. 'float32 result': within 1e-5 (relative; means in stds) of numpy's float32 pipeline."""
    far, over = analysis["far from zero"], analysis["variance above 65504"]
    half16 = far["tinynorm, float16 layer"]
    layer_gap = max(analysis[c]["layer_vs_float32"] for c in CASES)
    layer_error = max(max(analysis[c]["tinynorm, float32 layer"][key] for key in ("mean_max", "var_max"))
                      for c in CASES)
    sim = analysis["cuda_simulator"]
    sim_gap = float("inf") if "error" in sim else max(sim[c] for c in CASES)
    sim_text = f"not run: {sim['error']}" if "error" in sim else f"largest difference {sim_gap:.2g}"
    overflowed = [over[n]["var_final"] == float("inf") for n in ("tinynorm, float16 layer", "float16 arithmetic")]
    return [
        check("drift", "Running statistics kept in float16 drift from the true ones: channels far from zero, float16 "
              f"buffers (float32 batch statistics) end {half16['mean_final']:.3g} stds off in the mean (storing the "
              f"true mean in float16 costs at most {far['float16_half_ulp']:.3g}) and {half16['var_final']:.1%} in the "
              "variance", half16["mean_final"] > far["float16_half_ulp"]),
        check("overflow", f"A variance above float16's largest value ({over['largest_variance']:.3g} > "
              f"{FLOAT16_MAX:.0f}) overflows float16 running statistics to inf (float16 buffers: {overflowed[0]}, "
              f"float16 arithmetic: {overflowed[1]})", all(overflowed)),
        check("float32_layer", "tinynorm's float32 layer given float16 data gives the float32 result in every case "
              f"(largest difference from numpy's float32 statistics {layer_gap:.2g}; error against float64 "
              f"{layer_error:.2g})", layer_gap <= 1e-5),
        check("cuda", "The same on the CUDA path (Numba's simulator, tiny stream): the device's running statistics "
              f"equal the CPU's ({sim_text})", sim_gap <= 1e-5),
    ]


def summarize(results: dict[str, Any]) -> list[str]:
    analysis, st = results["analysis"], results["settings"]
    lines = [f"**BatchNorm statistics in float16** ({st['batches']} batches of {st['batch_size']} x {st['channels']}, "
             "largest error over the stream: running mean in stds / running variance relative):"]
    for case in CASES:
        parts = [f"{name} {analysis[case][name]['mean_max']:.2g} / {analysis[case][name]['var_max']:.2g}"
                 for name in PIPELINES[1:]]
        lines.append(f"- {case}: " + "; ".join(parts))
    return lines


def report(results: dict[str, Any]) -> str:
    analysis, st = results["analysis"], results["settings"]
    rows = [[case, name, a["mean_max"], a["mean_final"], a["var_max"], a["var_final"]]
            for case in CASES for name in PIPELINES[1:] for a in [analysis[case][name]]]
    sim = analysis["cuda_simulator"]
    lines = ["# BatchNorm statistics in half precision", "",
             (f"Mode: {'quick' if results['quick'] else 'full'}, {duration(results)}, seed {results['seed']}. "
              f"{st['batches']} float16 batches of {st['batch_size']} samples x {st['channels']} channels per case, "
              f"momentum {results['momentum']}, statistics drifting by up to {DRIFT:.0%} over the stream."), "",
             "## Errors against float64 (largest over the stream, and at its end)", "",
             *markdown_table(["channels", "pipeline", "mean err (stds), max", "at end", "var rel. err, max", "at end"],
                             rows),
             "", "## CUDA path (Numba's simulator)", "",
             (f"{st['sim_batches']} batches of {st['sim_batch_size']} x {st['sim_channels']}: " +
              (f"error {sim['error']}" if "error" in sim else
               "; ".join(f"{c}: largest difference from the CPU {sim[c]:.2g}" for c in CASES)
               + f". A float16 layer on the device: {sim['float16_layer']}.")),
             "", "## Checks", "", *check_lines(results), "",
             "## The tutorials' statement beside this run", "",
             "- Note 003, 7.4: accumulated in float16, BatchNorm's moving averages drift from the true mean; autocast "
             "therefore keeps BatchNorm in float32."]
    return "\n".join(lines) + "\n"


def plot(record: dict[str, Any], file: Path) -> Path:
    """From the record: mean (top) and variance (bottom) error over the stream, one column per case, log
    scale; a statistic that overflowed (inf) is drawn on the line at the top of its panel."""
    fig, axes = new_figure(ncols=len(CASES), nrows=2, size=(4.6, 3.4))
    for column, case in enumerate(record["cases"]):
        for row, key in enumerate(("mean", "var")):
            ax = axes[row][column]
            curves = {name: np.array(case["errors"][name][key], dtype=np.float64) for name in PIPELINES[1:]}
            finite = [v[np.isfinite(v)].max() for v in curves.values() if np.isfinite(v).any()]
            ceiling = 10 * max(finite, default=1.0)
            for name, values in curves.items():
                overflowed = not np.isfinite(values).all()
                ax.semilogy(case["steps"], np.where(np.isfinite(values), np.maximum(values, 1e-9), ceiling),
                            "--" if overflowed else "-", label=name + (" (inf: overflow)" if overflowed else ""))
            ax.axhline(ceiling, color="gray", linewidth=0.6)
            ax.legend(fontsize=6)
        axes[0][column].set(title=case["case"], ylabel="running mean error (stds)")
        axes[1][column].set(xlabel="batch", ylabel="running variance rel. error")
    return save_figure(fig, file)
