"""Whole training steps of the same model in tinynorm and in PyTorch, checked to compute the same thing.

A case builds a tinynorm model, its ``torch.nn`` twin (``twins.py``) loaded with the same initial
weights, the same batch and the same optimizer; each step (zero_grad, forward, cross-entropy, backward,
optimizer step) returns its loss. Before anything is timed the first two losses of both must agree
(the second one checks the optimizer's update too).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import tinynorm
import tinynorm.nn.functional as F
from tinynorm import nn
from tinynorm.models import SmallCNN, TinyTransformerLM
from tinynorm.optim import SGD, Adam

from .common import alternating_medians
from .twins import torch_small_cnn, torch_transformer_lm

LOSS_TOLERANCE = 1e-4  # relative to max(1, |loss|); float32 sums in different orders differ by ~1e-7
LM_VOCAB = 96


@dataclass
class StepCase:
    """A training step of the same model in each library; each call returns the loss as a float."""
    name: str
    gflop: float  # multiply-adds x 2 of one training step (forward x 3) in the convolutions and linear layers
    step: Callable[[], float]
    torch_step: Callable[[], float] | None


def train_step(model: Any, optimizer: Any, x: Any, target: Any, cross_entropy: Callable) -> Callable[[], float]:
    def step() -> float:
        optimizer.zero_grad()
        logits = model(x)
        loss = cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def copy_weights(torch: Any, source: nn.Module, target: Any) -> None:
    """Load ``source``'s parameters and buffers (tinynorm) into ``target`` (torch) by name."""
    target.load_state_dict({name: torch.tensor(value.numpy()) for name, value in source.state_dict().items()})


def forward_gflop(model: nn.Module, x: Any) -> float:
    """GFLOP of one forward of ``model`` on ``x`` in its Conv2d and Linear layers (2 per multiply-add),
    counted from their outputs' sizes with forward hooks; attention's own matrix products are left out."""
    total = [0]

    def count(module: nn.Module, inputs: Any, output: Any) -> None:
        if isinstance(module, nn.Conv2d):
            fan_in = module.in_channels // module.groups * module.kernel_size[0] * module.kernel_size[1]
        else:
            fan_in = module.in_features
        total[0] += 2 * output.numel() * fan_in

    handles = [m.register_forward_hook(count) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    try:
        with tinynorm.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return total[0] / 1e9


def cnn_case(norm: str, width: int, size: int, batch: int, rng: np.random.Generator, torch: Any) -> StepCase:
    """SmallCNN on ``size x size`` single-channel images, SGD with momentum."""
    model = SmallCNN(norm=norm, width=width)
    x = rng.standard_normal((batch, 1, size, size), np.float32)
    y = rng.integers(0, 10, batch)
    gflop = 3 * forward_gflop(model, tinynorm.tensor(x))
    step = train_step(model, SGD(model.parameters(), lr=0.05, momentum=0.9), tinynorm.tensor(x), tinynorm.tensor(y),
                      F.cross_entropy)
    torch_step = None
    if torch is not None:
        twin = torch_small_cnn(torch, norm, groups=4, width=width)
        copy_weights(torch, model, twin)
        torch_step = train_step(twin, torch.optim.SGD(twin.parameters(), lr=0.05, momentum=0.9), torch.tensor(x),
                                torch.tensor(y), torch.nn.functional.cross_entropy)
    name = f"SmallCNN {'BatchNorm' if norm == 'batchnorm' else 'GroupNorm'} w{width} {size}x{size} batch {batch}, SGD"
    return StepCase(name, gflop, step, torch_step)


def lm_case(d_model: int, n_layers: int, length: int, batch: int, rng: np.random.Generator, torch: Any,
            n_heads: int = 4) -> StepCase:
    """TinyTransformerLM (Pre-LN) predicting the next of ``length`` random tokens, Adam."""
    sizes = {"vocab": LM_VOCAB, "d_model": d_model, "n_heads": n_heads, "block_size": length}
    model = TinyTransformerLM(**sizes, n_layers=n_layers)
    tokens = rng.integers(0, LM_VOCAB, (batch, length + 1))
    ids, targets = tokens[:, :-1], tokens[:, 1:]
    gflop = 3 * forward_gflop(model, tinynorm.tensor(ids))
    step = train_step(model, Adam(model.parameters(), lr=1e-3), tinynorm.tensor(ids), tinynorm.tensor(targets),
                      F.cross_entropy)
    torch_step = None
    if torch is not None:
        twin = torch_transformer_lm(torch, **sizes, n_layers=n_layers)
        copy_weights(torch, model, twin)
        torch_step = train_step(twin, torch.optim.Adam(twin.parameters(), lr=1e-3), torch.tensor(ids),
                                torch.tensor(targets), torch.nn.functional.cross_entropy)
    name = f"TinyTransformerLM d{d_model} {n_layers} layers {n_heads} heads T{length} batch {batch}, Adam"
    return StepCase(name, gflop, step, torch_step)


def check_same_losses(case: StepCase) -> float:
    """Run two steps of each model and return the largest relative loss difference; raise if the two
    libraries do not compute the same function."""
    worst = 0.0
    for _ in range(2):
        ours, theirs = case.step(), case.torch_step()
        worst = max(worst, abs(ours - theirs) / max(abs(theirs), 1.0))
    if not worst <= LOSS_TOLERANCE:
        raise RuntimeError(f"{case.name}: tinynorm and PyTorch losses differ by {worst:.2e} (relative), "
                           f"above {LOSS_TOLERANCE:.0e}: the two models do not compute the same function")
    return worst


def measure_step(case: StepCase, repeat: int, clock: Callable[[], float], min_time: float = 0.02) -> dict:
    """Median step times of both libraries, samples taken in turns, and their ratio (tinynorm / PyTorch)."""
    row: dict[str, Any] = {"model": case.name, "GFLOP": case.gflop}
    if case.torch_step is None:
        case.step()  # warm-up: compile the kernels
        row["tinynorm_ms"] = alternating_medians([case.step], repeat, min_time, clock)[0] * 1e3
        return row
    row["loss_rel_diff"] = check_same_losses(case)
    ours, theirs = alternating_medians([case.step, case.torch_step], repeat, min_time, clock)
    row.update(tinynorm_ms=ours * 1e3, torch_ms=theirs * 1e3, ratio=ours / theirs)
    return row
