"""The in-place random fills beyond ``normal_``/``uniform_``/``bernoulli_``: ``exponential_``,
``geometric_``, ``cauchy_``, ``log_normal_`` and ``random_`` (integers), as PyTorch's Tensor methods.

Each draws from numpy's generator (the global one, or ``generator=``) on the host and copies the
samples into the tensor in its dtype, as the other fills do: reproducible under ``manual_seed``, with
PyTorch's distributions and argument checks, but not PyTorch's numbers (docs/differences.md).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ops.inplace import copy_
from .random import numpy_generator
from .tensor import Tensor


def _fill(target: Tensor, values: np.ndarray) -> Tensor:
    return copy_(target, values.astype(target.dtype))


def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with samples of the exponential distribution of rate ``lambd`` (mean ``1 / lambd``)."""
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill(self, numpy_generator(generator, self.device, "exponential_").exponential(1 / lambd, self.shape))


def geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill(self, numpy_generator(generator, self.device, "geometric_").geometric(p, self.shape))


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with samples of the Cauchy distribution of ``median`` and scale ``sigma``."""
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    rng = numpy_generator(generator, self.device, "cauchy_")
    return _fill(self, median + sigma * rng.standard_cauchy(self.shape))


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> Tensor:
    """Fill with ``exp`` of samples of N(``mean``, ``std``²)."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _fill(self, numpy_generator(generator, self.device, "log_normal_").lognormal(mean, std, self.shape))


def random_(self: Tensor, from_: int = 0, to: int | None = None, *, generator: Any = None) -> Tensor:
    """Fill with integers drawn uniformly from ``[from_, to)``; ``random_(to)`` is ``[0, to)``; without
    bounds, from 0 to the largest integer the dtype holds exactly (``2**24`` for float32)."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        dtype = self.dtype
        to = 2 if dtype.kind == "b" else (2 ** (np.finfo(dtype.dtype).nmant + 1) + 1 if dtype.kind == "f"
                                          else int(np.iinfo(dtype.dtype).max) + 1)
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    if self.dtype.kind in "iu" and not (np.iinfo(self.dtype.dtype).min <= to - 1 <= np.iinfo(self.dtype.dtype).max):
        raise RuntimeError(f"to - 1 is out of bounds for {self.dtype}")
    return _fill(self, numpy_generator(generator, self.device, "random_").integers(from_, to, self.shape))


FILLS = {"exponential_": exponential_, "geometric_": geometric_, "cauchy_": cauchy_, "log_normal_": log_normal_,
         "random_": random_}
