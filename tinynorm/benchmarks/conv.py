"""Convolutions and small training steps: tinynorm against PyTorch on the CPU, float32.

1. ``F.conv2d`` alone (no bias, padding ``kernel // 2``) on the shapes small CNNs use: 3x3 at stride 1
   and 2, 1x1, widths 16-64, images 8x8 to 32x32, batches 2-128. Forward (no autograd) and forward +
   backward with a random upstream gradient, per call, and GFLOP/s (2 flops per multiply-add; forward
   + backward counts 3 convolutions: y, dx and dweight).
2. Training steps (forward, cross-entropy, backward, optimizer step) of the small models, where
   per-op overhead matters: SmallCNN on 8x8 digits (BatchNorm and GroupNorm, batch 32 and 2) and
   TinyTransformerLM d64; ``tinynorm bench scale`` has the larger ones. PyTorch runs the same model from
   the same weights, and their first losses must agree before anything is timed.

``ratio`` is tinynorm's time over PyTorch's: below 1, tinynorm is faster. Samples alternate between the
two libraries, so load from other processes hits both alike.

Run: ``tinynorm bench conv [--quick] [--threads N] [--clock wall|cpu] [--repeat 9] [--order ...]``.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import tinynorm

from . import common
from .steps import cnn_case, lm_case, measure_step

# (batch, in channels, out channels, image size, kernel, stride)
CONV_CASES = [(64, 16, 32, 8, 3, 1), (2, 16, 16, 8, 3, 1), (128, 64, 64, 8, 3, 1), (32, 32, 32, 16, 3, 1),
              (64, 16, 32, 28, 3, 1), (64, 16, 32, 28, 3, 2), (32, 64, 64, 14, 3, 1), (32, 32, 64, 32, 3, 2),
              (64, 64, 64, 14, 1, 1), (32, 32, 128, 28, 1, 1)]
QUICK_CONV_CASES = [(64, 16, 32, 8, 3, 1), (64, 16, 32, 28, 3, 2), (64, 64, 64, 14, 1, 1)]
# (norm, width, image size, batch) and (d_model, layers, tokens, batch, heads)
CNN_CASES = [("batchnorm", 16, 8, 32), ("batchnorm", 16, 8, 2), ("groupnorm", 16, 8, 32), ("groupnorm", 16, 8, 2)]
LM_CASES = [(64, 2, 64, 16, 4), (64, 4, 64, 16, 4)]
QUICK_CNN_CASES, QUICK_LM_CASES = CNN_CASES[:2], LM_CASES[:1]


@dataclass
class ConvCase:
    """The forward and forward + backward of one convolution in each library (torch's are None without it)."""
    name: str
    flops: int  # of one forward
    forward: Callable[[], object]
    forward_backward: Callable[[], object]
    torch_forward: Callable[[], object] | None
    torch_forward_backward: Callable[[], object] | None


def _conv_pair(lib: Any, x: np.ndarray, weight: np.ndarray, dy: np.ndarray, stride: int) -> tuple:
    """(forward without autograd, forward + backward of ``dy``) of ``lib.nn.functional.conv2d``."""
    conv2d, padding = lib.nn.functional.conv2d, weight.shape[-1] // 2
    x, weight, dy = lib.tensor(x, requires_grad=True), lib.tensor(weight, requires_grad=True), lib.tensor(dy)

    def forward() -> object:
        with lib.no_grad():
            return conv2d(x, weight, None, stride, padding)

    def forward_backward() -> None:
        conv2d(x, weight, None, stride, padding).backward(dy)
        x.grad = weight.grad = None

    return forward, forward_backward


def conv_case(batch: int, n_in: int, n_out: int, size: int, kernel: int, stride: int, rng: np.random.Generator,
              torch: Any) -> ConvCase:
    x = rng.standard_normal((batch, n_in, size, size), np.float32)
    weight = rng.standard_normal((n_out, n_in, kernel, kernel), np.float32) / np.float32(np.sqrt(n_in * kernel ** 2))
    out_size = (size - 1) // stride + 1  # padding kernel // 2, odd kernel
    dy = rng.standard_normal((batch, n_out, out_size, out_size), np.float32)
    ours = _conv_pair(tinynorm, x, weight, dy, stride)
    theirs = _conv_pair(torch, x, weight, dy, stride) if torch is not None else (None, None)
    flops = 2 * batch * n_out * out_size * out_size * n_in * kernel * kernel
    name = f"{batch}x{n_in}x{size}x{size} -> {n_out} {kernel}x{kernel} s{stride}"
    return ConvCase(name, flops, *ours, *theirs)


def measure_conv(case: ConvCase, repeat: int, clock: Callable[[], float]) -> list[dict]:
    rows = []
    for label, passes, ours, theirs in (("fwd", 1, case.forward, case.torch_forward),
                                        ("fwd+bwd", 3, case.forward_backward, case.torch_forward_backward)):
        fns = [ours] + ([theirs] if theirs is not None else [])
        for fn in fns:  # compile and warm every cache before the sample sizes are chosen
            fn()
        seconds = common.alternating_medians(fns, repeat, clock=clock)
        row = {"conv": case.name, "pass": label, "tinynorm_ms": seconds[0] * 1e3,
               "tinynorm_GFLOP/s": passes * case.flops / seconds[0] / 1e9}
        if len(seconds) > 1:
            row.update({"torch_ms": seconds[1] * 1e3, "torch_GFLOP/s": passes * case.flops / seconds[1] / 1e9,
                        "ratio": seconds[0] / seconds[1]})
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = common.make_parser("conv", __doc__, repeat=9)
    args, child = common.parse(parser, argv, "tinynorm.benchmarks.conv")
    if child is not None:
        return child
    torch = common.import_torch()
    repeat, clock = (min(args.repeat, 3) if args.quick else args.repeat), common.CLOCKS[args.clock]
    rng = np.random.default_rng(0)
    tinynorm.manual_seed(0)
    with common.ThreadSettings(args.threads) as settings:
        conv_rows = []
        for shape in QUICK_CONV_CASES if args.quick else CONV_CASES:
            conv_rows += measure_conv(conv_case(*shape, rng, torch), repeat, clock)
        steps = [cnn_case(*sizes, rng, torch) for sizes in (QUICK_CNN_CASES if args.quick else CNN_CASES)]
        steps += [lm_case(d, layers, length, batch, rng, torch, heads)
                  for d, layers, length, batch, heads in (QUICK_LM_CASES if args.quick else LM_CASES)]
        step_rows = [measure_step(case, repeat, clock) for case in steps]
        threading = settings.threading_info()
    print(common.describe_threading(threading))
    print(f"{args.clock} clock, median of {repeat} samples taken in turns")
    common.print_table(conv_rows, ["conv", "pass", "tinynorm_ms", "torch_ms", "ratio", "tinynorm_GFLOP/s",
                                   "torch_GFLOP/s"])
    print()
    common.print_table(step_rows, ["model", "tinynorm_ms", "torch_ms", "ratio", "loss_rel_diff"])
    common.write_json(args.out, {"benchmark": "conv", "dtype": "float32", "clock": args.clock, "repeat": repeat,
                                 "conv_rows": conv_rows, "step_rows": step_rows}, threading)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
