"""Optimizers (SGD, Adam, AdamW) and learning-rate schedules, with PyTorch's names and semantics."""
from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Adam", "AdamW", "Optimizer", "SGD", "lr_scheduler"]
