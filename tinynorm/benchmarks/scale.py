"""Training steps as the models grow: tinynorm against PyTorch on the CPU, float32.

SmallCNN (BatchNorm or GroupNorm) from 8x8 images at width 16 to 28x28 at width 64, and
TinyTransformerLM from d_model 64 to 256, 4 to 8 layers, 64 to 256 tokens. PyTorch trains the same
model (``twins.py``) from the same weights on the same batch; the first two losses of both must agree
before anything is timed. Samples of the two libraries alternate, so load from other processes hits
both alike; ``ratio`` is tinynorm's median step time over PyTorch's (below 1: tinynorm is faster).
``GFLOP`` counts the convolutions' and linear layers' work per step (3x a forward), the x axis of the
plot of step time against model size (``--plot``).

By default each library runs with its own thread count and OpenMP settings, PyTorch imported first, as
a user's comparison script would; the printed line and the JSON say which settings were in effect.

Run: ``tinynorm bench scale [--quick] [--plot] [--threads N] [--order torch-first|tinynorm-first]``.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

import tinynorm

from . import common
from .steps import StepCase, cnn_case, lm_case, measure_step

# (norm, width, image size, batch)
CNN_SIZES = [("batchnorm", 16, 8, 2), ("batchnorm", 16, 8, 32), ("batchnorm", 32, 28, 32), ("batchnorm", 64, 28, 64),
             ("groupnorm", 32, 28, 32)]
# (d_model, layers, tokens, batch, heads)
LM_SIZES = [(64, 4, 64, 16, 4), (128, 4, 128, 16, 4), (256, 4, 128, 16, 8), (256, 8, 256, 8, 8)]
QUICK_CNN_SIZES = [("batchnorm", 16, 8, 32), ("batchnorm", 32, 28, 32)]
QUICK_LM_SIZES = [(64, 4, 64, 16, 4), (128, 4, 128, 16, 4)]
SMOKE_CNN_SIZES, SMOKE_LM_SIZES = [("groupnorm", 4, 8, 2)], [(16, 1, 8, 2, 2)]


def build_cases(cnn_sizes: Sequence[tuple], lm_sizes: Sequence[tuple], torch: object) -> list[StepCase]:
    rng = np.random.default_rng(0)
    tinynorm.manual_seed(0)
    cases = [cnn_case(norm, width, size, batch, rng, torch) for norm, width, size, batch in cnn_sizes]
    cases += [lm_case(d, layers, length, batch, rng, torch, heads) for d, layers, length, batch, heads in lm_sizes]
    return cases


def plot(rows: list[dict], path: str) -> None:
    """Step time against GFLOP per step, log-log, one line per model family and library."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 5))
    for family, marker in (("SmallCNN", "o"), ("TinyTransformerLM", "s")):
        members = sorted((row for row in rows if row["model"].startswith(family)), key=lambda row: row["GFLOP"])
        for library, style in (("tinynorm", "-"), ("torch", "--")):
            points = [(row["GFLOP"], row[f"{library}_ms"]) for row in members if f"{library}_ms" in row]
            if points:
                axes.plot(*zip(*points), style, marker=marker, label=f"{family}, {library}")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("GFLOP per training step (convolutions and linear layers)")
    axes.set_ylabel("median step time (ms)")
    axes.legend()
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: Sequence[str] | None = None) -> int:
    parser = common.make_parser("scale", __doc__, repeat=7)
    parser.add_argument("--plot", action="store_true", help="also write a PNG next to the JSON")
    parser.add_argument("--smoke", action="store_true", help="one tiny model of each kind, one sample (a test)")
    args, child = common.parse(parser, argv, "tinynorm.benchmarks.scale")
    if child is not None:
        return child
    torch = common.import_torch()
    sizes = ((SMOKE_CNN_SIZES, SMOKE_LM_SIZES) if args.smoke else (QUICK_CNN_SIZES, QUICK_LM_SIZES) if args.quick
             else (CNN_SIZES, LM_SIZES))
    repeat, min_time = (1, 0.0) if args.smoke else (min(args.repeat, 5), 0.2) if args.quick else (args.repeat, 0.3)
    with common.ThreadSettings(args.threads) as settings:
        rows = [measure_step(case, repeat, common.CLOCKS[args.clock], min_time) for case in build_cases(*sizes, torch)]
        threading = settings.threading_info()
    common.report(args, rows, ["model", "GFLOP", "tinynorm_ms", "torch_ms", "ratio", "loss_rel_diff"], threading,
                  {"benchmark": "scale", "dtype": "float32"}, repeat, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
