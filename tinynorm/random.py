"""The global random generator behind ``randn``, ``rand``, dropout masks and parameter init.

``tinynorm.manual_seed(0)`` makes a whole run reproducible, as ``torch.manual_seed`` does (the
numbers themselves differ from PyTorch's: tinynorm draws from numpy's PCG64 generator).
"""
from __future__ import annotations

import numpy as np

_generator = np.random.default_rng(0)


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed the global generator; returns it."""
    global _generator
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
    _generator = np.random.default_rng(int(seed))
    return _generator


def default_generator() -> np.random.Generator:
    """The generator tinynorm draws from unless a function is given its own."""
    return _generator
