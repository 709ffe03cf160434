"""BatchNorm housekeeping: freeze statistics, and recompute them from data.

Two classic BatchNorm failures have a one-line fix here:
* fine-tuning with tiny batches ruins good running statistics -> ``freeze_batch_norm(model)``;
* running statistics that no longer match the weights (after fine-tuning, weight averaging or
  loading weights from elsewhere) -> ``recompute_batch_norm_statistics(model, batches)``.

``tinynorm.nn.utils`` also holds PyTorch's ``torch.nn.utils`` functions over parameters
(``clip_grad_norm_``, ``clip_grad_value_``, ``parameters_to_vector``...), defined in ``parameter_utils.py``.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ..autograd import no_grad
from .module import Module
from .normalization import _BatchNorm
from .parameter_utils import (  # noqa: F401  (re-exported: PyTorch's torch.nn.utils names)
    clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm, parameters_to_vector,
    vector_to_parameters,
)


def batch_norm_layers(model: Module) -> list[_BatchNorm]:
    return [m for m in model.modules() if isinstance(m, _BatchNorm)]


def freeze_batch_norm(model: Module) -> Module:
    """Freeze the running statistics of every BatchNorm in ``model`` (they are used, never updated),
    in a way that a later ``model.train()`` does not undo. Returns the model."""
    for layer in batch_norm_layers(model):
        layer.freeze()
    return model


def unfreeze_batch_norm(model: Module) -> Module:
    for layer in batch_norm_layers(model):
        layer.unfreeze()
    return model


def recompute_batch_norm_statistics(model: Module, batches: Iterable[Any],
                                    forward: Callable[[Module, Any], Any] | None = None) -> Module:
    """Re-estimate every BatchNorm's running statistics as the plain average over ``batches``.

    Each BatchNorm is reset and run in training mode with ``momentum=None`` (a cumulative average);
    everything else stays in eval mode (so dropout does not disturb the estimate) and no parameter
    changes. Afterwards the model's modes, momentums and freeze flags are restored. ``batches`` yields
    inputs; ``forward(model, batch)`` calls the model on one (default ``model(batch)``, or
    ``model(batch[0])`` for (input, target) pairs).
    """
    layers = batch_norm_layers(model)
    if not layers:
        return model
    modes = {module: module.training for module in model.modules()}
    saved = {layer: (layer.momentum, layer.frozen) for layer in layers}
    model.eval()
    for layer in layers:
        layer.reset_running_stats()
        layer.momentum, layer.frozen = None, False
        layer.train()
    try:
        with no_grad():
            for batch in batches:
                if forward is not None:
                    forward(model, batch)
                else:
                    model(batch[0] if isinstance(batch, (tuple, list)) else batch)
    finally:
        for layer, (momentum, frozen) in saved.items():
            layer.momentum, layer.frozen = momentum, frozen
        for module, training in modes.items():
            object.__setattr__(module, "training", training)
    return model
