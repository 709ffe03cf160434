"""BatchNorm breaks at small batches; GroupNorm and LayerNorm do not (Wu & He, "Group Normalization", 2018).

Wu & He train ResNet-50 on ImageNet with 32, 16, 8, 4 and 2 images per batch, scaling the learning
rate linearly with the batch (0.1 * B / 32). BatchNorm's validation error climbs from 23.6% to 34.7%
as the batch shrinks; GroupNorm's stays at 24.1 +- 0.1%. The reason: BatchNorm normalizes each sample
with statistics of its batch. With two samples those statistics are noisy, training learns weights for
noisy statistics, and evaluation then swaps in the running averages the model never trained with.
GroupNorm and LayerNorm normalize each sample on its own, so the batch size cannot reach them.

Here the same protocol runs on the 8x8 digits: ``SmallCNN`` (and ``SmallMLP``) with each norm, batch
sizes 2 to 64, SGD with momentum 0.9 at ``lr = BASE_LR * B / 32`` annealed by a cosine over the run,
the same number of epochs (so the same number of samples seen) at every batch size, several seeds,
test error measured in eval mode.

On the trained models the experiment also shows the two classic BatchNorm mistakes and their fixes:

1. Evaluating in training mode: predictions then depend on which other images share the batch
   (fix: ``model.eval()``).
2. Stale running statistics: weights loaded into a model whose BatchNorm buffers were not loaded
   (fix: ``recompute_batch_norm_statistics(model, train_batches)``).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

import tinynorm as tn
import tinynorm.nn.functional as F
from tinynorm.data import load_digits, minibatches
from tinynorm.models import SmallCNN, SmallMLP
from tinynorm.nn import Module, recompute_batch_norm_statistics
from tinynorm.optim import SGD
from tinynorm.optim.lr_scheduler import CosineAnnealingLR

from .common import markdown_table, new_figure, progress, save_figure, write_json

REFERENCE_BATCH = 32  # lr = base_lr * B / REFERENCE_BATCH, as in the paper
EVAL_BATCH = 256
MODELS = {"cnn": ("batchnorm", "groupnorm", "layernorm", "instancenorm", "none"),
          "mlp": ("batchnorm", "layernorm", "rmsnorm", "none")}
PUBLISHED = {  # Wu & He 2018, Figure 5 / Table 3: ResNet-50 ImageNet validation error (%)
    "batch_sizes": [32, 16, 8, 4, 2],
    "batchnorm": [23.6, 23.7, 24.8, 27.3, 34.7],
    "groupnorm": [24.1, 24.2, 24.0, 24.2, 24.1],
}


@dataclass(frozen=True)
class Settings:
    """Everything that defines a run of the experiment (recorded in the JSON)."""

    models: dict[str, tuple[str, ...]]
    batch_sizes: tuple[int, ...]
    seeds: tuple[int, ...]
    epochs: int
    base_lr: float
    width: int  # SmallCNN channels
    train_samples: int | None  # None: the whole training split


QUICK = Settings(models={"cnn": ("batchnorm", "groupnorm", "layernorm")}, batch_sizes=(2, 32), seeds=(0,),
                 epochs=3, base_lr=0.1, width=16, train_samples=None)
FULL = Settings(models=MODELS, batch_sizes=(2, 4, 8, 16, 32, 64), seeds=(0, 1, 2), epochs=5, base_lr=0.1,
                width=16, train_samples=None)


def scaled_lr(base_lr: float, batch_size: int) -> float:
    """The linear scaling rule: the learning rate is proportional to the batch size."""
    return base_lr * batch_size / REFERENCE_BATCH


def steps_per_epoch(n_samples: int, batch_size: int) -> int:
    """Full batches per epoch (the short last batch is dropped: BatchNorm needs every batch at size B)."""
    if not 1 <= batch_size <= n_samples:
        raise ValueError(f"batch_size must be in [1, {n_samples}] (the number of samples), got {batch_size}")
    return n_samples // batch_size


def make_model(kind: str, norm: str, width: int = 16) -> Module:
    """``SmallCNN`` ('cnn') or ``SmallMLP`` ('mlp') with the given norm."""
    if kind == "cnn":
        return SmallCNN(norm=norm, width=width)
    if kind == "mlp":
        return SmallMLP(norm=norm)
    raise ValueError(f"model kind must be 'cnn' or 'mlp', got {kind!r}")


def inputs_for(kind: str, X: np.ndarray) -> np.ndarray:
    """Images (N, 1, 8, 8) for the CNN, flat 64-vectors for the MLP."""
    return X if kind == "cnn" else X.reshape(len(X), -1)


def train(model: Module, X: np.ndarray, y: np.ndarray, batch_size: int, lr: float, epochs: int,
          seed: int) -> list[float]:
    """SGD with momentum 0.9 and a per-step cosine schedule from ``lr`` to 0; returns the losses."""
    total_steps = epochs * steps_per_epoch(len(X), batch_size)
    optimizer = SGD(model.parameters(), lr=lr, momentum=0.9)
    schedule = CosineAnnealingLR(optimizer, T_max=total_steps)
    order = np.random.default_rng(seed)
    losses = []
    model.train()
    for _ in range(epochs):
        for xb, yb in minibatches(X, y, batch_size=batch_size, rng=order, drop_last=True):
            loss = F.cross_entropy(model(tn.tensor(xb)), tn.tensor(yb))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
    return losses


def predict(model: Module, X: np.ndarray, batch_size: int = EVAL_BATCH) -> np.ndarray:
    """Predicted classes, computed in batches of ``batch_size`` in the model's current mode."""
    with tn.no_grad():
        return np.concatenate([model(tn.tensor(X[i:i + batch_size])).argmax(1).numpy()
                               for i in range(0, len(X), batch_size)])


def error_percent(model: Module, X: np.ndarray, y: np.ndarray, batch_size: int = EVAL_BATCH) -> float:
    return float(100.0 * np.mean(predict(model, X, batch_size) != y))


def clone(model: Module, kind: str, norm: str, width: int, buffers: bool = True) -> Module:
    """A fresh model with ``model``'s parameters, and its buffers (running statistics) if ``buffers``."""
    copy = make_model(kind, norm, width)
    state = model.state_dict()
    if not buffers:
        parameter_names = {name for name, _ in model.named_parameters()}
        state = {name: value for name, value in state.items() if name in parameter_names}
    copy.load_state_dict(state, strict=buffers)
    return copy.eval()


@contextmanager
def single_threaded_kernels() -> Iterator[None]:
    """Run numba kernels on one thread: these tensors are tiny, and on a busy machine the parallel
    regions of the larger ones cost ~10x more than the work (measured: 24 vs 244 ms per step)."""
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(threads)
