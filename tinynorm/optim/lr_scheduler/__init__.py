"""Learning-rate schedules: set each parameter group's ``'lr'`` as training goes, as PyTorch 2.13's do.

Call ``scheduler.step()`` once after each ``optimizer.step()`` (or once per epoch, as you prefer: a
scheduler counts calls, in ``last_epoch``); ``ReduceLROnPlateau.step(metric)`` takes the monitored
value. Most schedules are chainable (see :mod:`.base`), so they compose: two schedulers on one
optimizer multiply their effects, ``ChainedScheduler`` and ``SequentialLR`` combine them, and an lr
set by hand carries on from where it was put.
"""
from .base import LRScheduler
from .composite import ChainedScheduler, SequentialLR
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts, LinearWarmupCosine
from .cyclic import CyclicLR, OneCycleLR
from .multiplicative import (
    ConstantLR, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR, MultiStepLR, PolynomialLR, StepLR,
)
from .plateau import ReduceLROnPlateau

_LRScheduler = LRScheduler  # the base class's old name, which older scripts subclass (PyTorch keeps it too)

__all__ = [
    "ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR", "ExponentialLR",
    "LRScheduler", "LambdaLR", "LinearLR", "LinearWarmupCosine", "MultiStepLR", "MultiplicativeLR", "OneCycleLR",
    "PolynomialLR", "ReduceLROnPlateau", "SequentialLR", "StepLR",
]
