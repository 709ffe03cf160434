"""Utilities with PyTorch's names: :mod:`tinynorm.utils.data` (datasets, samplers, ``DataLoader``)."""
from . import data

__all__ = ["data"]
