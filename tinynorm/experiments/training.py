"""The training loop the language-model experiments share: optimizer steps on the cross-entropy of
sampled batches, recording every loss and stopping at the first non-finite one."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import nn
from ..nn.functional import cross_entropy
from ..tensor import Tensor, tensor

Sampler = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


def loss_of(model: nn.Module, inputs: np.ndarray, targets: np.ndarray) -> Tensor:
    """Mean cross-entropy of ``model``: logits (N, C) for a classifier or (B, T, V) for a language model."""
    logits = model(tensor(inputs))
    return cross_entropy(logits.reshape(-1, logits.shape[-1]), tensor(targets).reshape(-1))


def train_steps(model: nn.Module, optimizer: Any, sample: Sampler, batch_size: int, steps: int, seed: int,
                schedule: Any = None) -> list[float]:
    """``steps`` optimizer steps (each followed by ``schedule.step()`` when given) on batches
    ``sample(rng, batch_size)`` drawn with ``numpy.random.default_rng(seed)``; the training losses.

    A non-finite loss ends the training before its step: it is the last loss recorded, so a diverged
    run is seen in its losses and no NaN reaches the weights."""
    rng = np.random.default_rng(seed)
    losses: list[float] = []
    for _ in range(steps):
        inputs, targets = sample(rng, batch_size)
        optimizer.zero_grad()
        loss = loss_of(model, inputs, targets)
        losses.append(float(loss.item()))
        if not math.isfinite(losses[-1]):
            break
        loss.backward()
        optimizer.step()
        if schedule is not None:
            schedule.step()
    return losses
