"""Elementwise functions numpy lacks: the error function, for the exact GELU."""
import math

from numba import float32, float64, vectorize


@vectorize([float32(float32), float64(float64)], cache=True)
def erf(x):  # type: ignore[no-untyped-def]
    """erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt, elementwise (a numpy ufunc)."""
    return math.erf(x)
