"""Convolution and whole training steps: tinynorm against PyTorch on the CPU, same threads, float32.

1. ``Conv2d`` alone (3x3 kernel, padding 1, no bias, as in SmallCNN) on a batch of 64 with 16 -> 32
   channels: forward (no autograd) and forward + backward with a random upstream gradient, per call,
   as GFLOP/s (2 flops per multiply-add; forward + backward counts 3 convolutions: y, dx and dweight).
2. One training step (forward, cross-entropy, backward, optimizer step) of whole models: SmallCNN on
   8x8 digit-sized images (BatchNorm and GroupNorm, batch 32 and 2) and TinyTransformerLM. PyTorch
   runs the same model: the same layers built from torch.nn, loaded with tinynorm's initial weights,
   with attention written as the same matmuls and softmax (not a fused kernel), so both compute the
   same function. Their losses on the first two steps must agree before anything is timed.

``ratio`` is tinynorm's time / PyTorch's: below 1 means tinynorm is faster. Both libraries get the
same thread count (``--threads``, default Numba's), and so does numpy's BLAS, which runs tinynorm's
GEMMs (threadpoolctl limits it). Samples of the two libraries alternate, so load from other processes
hits both alike. On a busy machine, use ``--threads 1 --clock cpu``: CPU times swing far less than
wall times there. Without PyTorch installed, tinynorm's times are printed alone.

Run: ``python benchmarks/bench_conv.py [--quick] [--threads N] [--clock wall|cpu] [--repeat 9] [--out PATH]``
(default ``--out benchmarks/out/bench_conv.json``).
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

from common import CLOCKS, alternating_medians, print_table, write_json  # first: it fixes the OpenMP settings for both contenders
from torch_twins import torch_small_cnn, torch_transformer_lm
import numba
import numpy as np
from threadpoolctl import threadpool_limits

import tinynorm
import tinynorm.nn.functional as F
from tinynorm import nn
from tinynorm.models import SmallCNN, TinyTransformerLM
from tinynorm.optim import SGD, Adam

CONV_BATCH, CONV_IN, CONV_OUT = 64, 16, 32
# (input size, stride) of each convolution case
CONV_CASES = [(8, 1), (28, 1), (28, 2)]
QUICK_CONV_CASES = [(8, 1), (28, 2)]
CNN_CASES = [("batchnorm", 32), ("batchnorm", 2), ("groupnorm", 32), ("groupnorm", 2)]
QUICK_CNN_CASES = [("batchnorm", 32), ("groupnorm", 2)]
LM = {"vocab": 96, "d_model": 64, "n_heads": 4, "block_size": 64, "batch": 16}
LM_LAYERS, QUICK_LM_LAYERS = (2, 4), (2,)
LOSS_TOLERANCE = 1e-4  # relative to max(1, |loss|); float32 sums in different orders differ by ~1e-7


# ------------------------------------------------------------ 1. the convolution alone
@dataclass
class ConvCase:
    """The forward and forward + backward of one convolution in each library (torch's are None without it)."""
    name: str
    flops: int  # of one forward
    forward: Callable[[], object]
    forward_backward: Callable[[], object]
    torch_forward: Callable[[], object] | None
    torch_forward_backward: Callable[[], object] | None


def _conv_pair(lib: Any, x: Any, weight: Any, dy: Any, stride: int) -> tuple[Callable[[], object], Callable[[], None]]:
    """(forward without autograd, forward + backward of ``dy``) of ``lib.nn.functional.conv2d``."""
    conv2d = lib.nn.functional.conv2d

    def forward() -> object:
        with lib.no_grad():
            return conv2d(x, weight, None, stride, 1)

    def forward_backward() -> None:
        conv2d(x, weight, None, stride, 1).backward(dy)
        x.grad = weight.grad = None

    return forward, forward_backward


def conv_case(size: int, stride: int, rng: np.random.Generator, torch: Any) -> ConvCase:
    x = rng.standard_normal((CONV_BATCH, CONV_IN, size, size), np.float32)
    weight = rng.standard_normal((CONV_OUT, CONV_IN, 3, 3), np.float32) / np.float32(np.sqrt(CONV_IN * 9))
    out_size = (size - 1) // stride + 1  # 3x3 kernel, padding 1
    dy = rng.standard_normal((CONV_BATCH, CONV_OUT, out_size, out_size), np.float32)
    ours = _conv_pair(tinynorm, tinynorm.tensor(x, requires_grad=True), tinynorm.tensor(weight, requires_grad=True),
                      tinynorm.tensor(dy), stride)
    theirs = (None, None)
    if torch is not None:
        theirs = _conv_pair(torch, torch.tensor(x, requires_grad=True), torch.tensor(weight, requires_grad=True),
                            torch.tensor(dy), stride)
    flops = 2 * CONV_BATCH * CONV_OUT * out_size * out_size * CONV_IN * 9
    name = f"{CONV_BATCH}x{CONV_IN}x{size}x{size} -> {CONV_OUT} s{stride}"
    return ConvCase(name, flops, *ours, *theirs)


def measure_conv(case: ConvCase, repeat: int, clock: Callable[[], float]) -> list[dict]:
    rows = []
    for label, passes, ours, theirs in (("fwd", 1, case.forward, case.torch_forward),
                                        ("fwd+bwd", 3, case.forward_backward, case.torch_forward_backward)):
        fns = [ours] + ([theirs] if theirs is not None else [])
        for fn in fns:  # compile and warm every cache before the block sizes are chosen
            fn()
        seconds = alternating_medians(fns, repeat, clock=clock)
        row = {"conv": case.name, "pass": label, "tinynorm_ms": seconds[0] * 1e3,
               "tinynorm_GFLOP/s": passes * case.flops / seconds[0] / 1e9}
        if len(seconds) > 1:
            row.update({"torch_ms": seconds[1] * 1e3, "torch_GFLOP/s": passes * case.flops / seconds[1] / 1e9,
                        "ratio": seconds[0] / seconds[1]})
        rows.append(row)
    return rows


# ------------------------------------------------------------ 2. whole training steps
@dataclass
class StepCase:
    """A training step of the same model in each library; each call returns the loss as a float."""
    name: str
    step: Callable[[], float]
    torch_step: Callable[[], float] | None


def _train_step(model: Any, optimizer: Any, x: Any, target: Any, cross_entropy: Callable) -> Callable[[], float]:
    def step() -> float:
        optimizer.zero_grad()
        logits = model(x)
        loss = cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def _copy_weights(torch: Any, source: nn.Module, target: Any) -> None:
    """Load ``source``'s parameters and buffers (tinynorm) into ``target`` (torch) by name."""
    target.load_state_dict({name: torch.tensor(value.numpy()) for name, value in source.state_dict().items()})


def cnn_case(norm: str, batch: int, rng: np.random.Generator, torch: Any) -> StepCase:
    model = SmallCNN(norm=norm)
    x = rng.standard_normal((batch, 1, 8, 8), np.float32)
    y = rng.integers(0, 10, batch)
    step = _train_step(model, SGD(model.parameters(), lr=0.05, momentum=0.9), tinynorm.tensor(x),
                       tinynorm.tensor(y), F.cross_entropy)
    torch_step = None
    if torch is not None:
        twin = torch_small_cnn(torch, norm, groups=4, width=16)
        _copy_weights(torch, model, twin)
        torch_step = _train_step(twin, torch.optim.SGD(twin.parameters(), lr=0.05, momentum=0.9),
                                 torch.tensor(x), torch.tensor(y), torch.nn.functional.cross_entropy)
    return StepCase(f"SmallCNN {norm} 8x8 batch {batch}, SGD", step, torch_step)


def lm_case(n_layers: int, rng: np.random.Generator, torch: Any) -> StepCase:
    sizes = {key: LM[key] for key in ("vocab", "d_model", "n_heads", "block_size")}
    model = TinyTransformerLM(**sizes, n_layers=n_layers)
    tokens = rng.integers(0, LM["vocab"], (LM["batch"], LM["block_size"] + 1))
    ids, targets = tokens[:, :-1], tokens[:, 1:]  # predict the next token
    step = _train_step(model, Adam(model.parameters(), lr=1e-3), tinynorm.tensor(ids), tinynorm.tensor(targets),
                       F.cross_entropy)
    torch_step = None
    if torch is not None:
        twin = torch_transformer_lm(torch, **sizes, n_layers=n_layers)
        _copy_weights(torch, model, twin)
        torch_step = _train_step(twin, torch.optim.Adam(twin.parameters(), lr=1e-3), torch.tensor(ids),
                                 torch.tensor(targets), torch.nn.functional.cross_entropy)
    name = (f"TinyTransformerLM {n_layers} layers d{LM['d_model']} T{LM['block_size']} "
            f"batch {LM['batch']}, Adam")
    return StepCase(name, step, torch_step)


def check_same_losses(case: StepCase) -> float:
    """Run two steps of each model (the second checks the optimizer's update) and return the largest
    relative loss difference; raise if the two libraries do not compute the same function."""
    worst = 0.0
    for _ in range(2):
        ours, theirs = case.step(), case.torch_step()
        worst = max(worst, abs(ours - theirs) / max(abs(theirs), 1.0))
    if not worst <= LOSS_TOLERANCE:
        raise RuntimeError(f"{case.name}: tinynorm and PyTorch losses differ by {worst:.2e} (relative), "
                           f"above {LOSS_TOLERANCE:.0e}: the two models do not compute the same function")
    return worst


def measure_step(case: StepCase, repeat: int, clock: Callable[[], float]) -> dict:
    if case.torch_step is None:
        case.step()  # warm-up: compile the kernels
        return {"model": case.name, "tinynorm_ms": alternating_medians([case.step], repeat, clock=clock)[0] * 1e3}
    loss_difference = check_same_losses(case)
    ours, theirs = alternating_medians([case.step, case.torch_step], repeat, clock=clock)
    return {"model": case.name, "tinynorm_ms": ours * 1e3, "torch_ms": theirs * 1e3, "ratio": ours / theirs,
            "loss_rel_diff": loss_difference}


# ------------------------------------------------------------ running
def import_torch(threads: int) -> Any:
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: tinynorm timings only")
        return None
    torch.set_num_threads(threads)
    return torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer cases and repeats (for the demo)")
    parser.add_argument("--out", default="benchmarks/out/bench_conv.json")
    parser.add_argument("--repeat", type=int, default=None, help="timing samples per case (default 9, 3 with --quick)")
    parser.add_argument("--threads", type=int, default=numba.get_num_threads(),
                        help="threads for Numba, PyTorch and numpy's BLAS alike")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="'cpu' counts this process's CPU time: steadier on a busy machine, needs --threads 1")
    args = parser.parse_args()
    if args.clock == "cpu" and args.threads != 1:
        parser.error("--clock cpu needs --threads 1 (idle worker threads spinning would count as work)")
    repeat = args.repeat or (3 if args.quick else 9)
    clock = CLOCKS[args.clock]
    numba.set_num_threads(args.threads)
    torch = import_torch(args.threads)
    rng = np.random.default_rng(0)
    tinynorm.manual_seed(0)
    with threadpool_limits(args.threads, user_api="blas"):
        conv_rows = []
        for size, stride in QUICK_CONV_CASES if args.quick else CONV_CASES:
            conv_rows += measure_conv(conv_case(size, stride, rng, torch), repeat, clock)
        steps = [cnn_case(norm, batch, rng, torch) for norm, batch in (QUICK_CNN_CASES if args.quick else CNN_CASES)]
        steps += [lm_case(layers, rng, torch) for layers in (QUICK_LM_LAYERS if args.quick else LM_LAYERS)]
        step_rows = [measure_step(case, repeat, clock) for case in steps]
    print(f"threads: {args.threads} (Numba, PyTorch and BLAS), {args.clock} clock, median of {repeat} samples")
    print_table(conv_rows, ["conv", "pass", "tinynorm_ms", "torch_ms", "ratio", "tinynorm_GFLOP/s", "torch_GFLOP/s"])
    print()
    print_table(step_rows, ["model", "tinynorm_ms", "torch_ms", "ratio", "loss_rel_diff"])
    if torch is not None:
        print(f"slowest training step: {max(row['ratio'] for row in step_rows):.2f}x PyTorch (target: <= 2x)")
    write_json(args.out, {"benchmark": "conv", "dtype": "float32", "threads": args.threads, "clock": args.clock,
                          "repeat": repeat, "conv_rows": conv_rows, "step_rows": step_rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
