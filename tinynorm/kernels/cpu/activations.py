"""Elementwise functions numpy lacks: the error function, for the exact GELU."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._config import FASTMATH


@njit(cache=True, fastmath=FASTMATH)
def _erf_flat(x, out):  # type: ignore[no-untyped-def]
    for i in range(x.size):
        out[i] = math.erf(x[i])


def erf(x: np.ndarray) -> np.ndarray:
    """erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt, elementwise, in x's float dtype.

    A plain ``@njit`` loop rather than ``@vectorize``: it compiles on first use and is cached on disk,
    where an eager ``@vectorize`` signature recompiled at every import of tinynorm (~2.5 s).
    """
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    _erf_flat(x.reshape(-1), out.reshape(-1))
    return out
