"""More elementwise operations for the map kernels of :mod:`.elementwise`: trigonometric and hyperbolic
functions and their inverses, exp/log variants,
rounding, NaN/inf tests, remainders, floor division and bitwise logic.

They are device functions of one or two values, run by the same strided map kernels. Rounding is
written out in arithmetic rather than with ``math.floor`` (which Numba types as an integer, overflowing
for infinities and large values) or libdevice (which the CUDA simulator does not run): below
``2**(mantissa bits)`` a float truncates exactly through an int64, above it every float is an integer
already. Functions whose constants must carry the operands' type (a Python float would make float32
work float64) come from factories cached per Numba type, as :func:`.elementwise.gelu_functions` does.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable

from ...backends.cuda.runtime.compiler import cuda, types


@cuda.jit(device=True)
def sin(a):
    return math.sin(a)


@cuda.jit(device=True)
def tan(a):
    return math.tan(a)


@cuda.jit(device=True)
def log1p(a):
    return math.log1p(a)


@cuda.jit(device=True)
def expm1(a):
    return math.expm1(a)


@cuda.jit(device=True)
def log2(a):
    return math.log2(a)


@cuda.jit(device=True)
def arctan(a):
    return math.atan(a)


@cuda.jit(device=True)
def sinh(a):
    return math.sinh(a)


@cuda.jit(device=True)
def cosh(a):
    return math.cosh(a)


@cuda.jit(device=True)
def arcsinh(a):
    return math.asinh(a)


@cuda.jit(device=True)
def arctan2(a, b):
    return math.atan2(a, b)


@cuda.jit(device=True)
def hypot(a, b):
    return math.hypot(a, b)


@cuda.jit(device=True)
def isnan(a):
    return a != a  # noqa: PLR0124  (only NaN differs from itself)


@cuda.jit(device=True)
def bitwise_and(a, b):
    return a & b


@cuda.jit(device=True)
def bitwise_or(a, b):
    return a | b


@cuda.jit(device=True)
def bitwise_xor(a, b):
    return a ^ b


@cuda.jit(device=True)
def invert(a):
    return ~a


@cuda.jit(device=True)
def not_equal_bool(a, b):
    return a != b


@cuda.jit(device=True)
def integer_floor_divide(a, b):
    return a // b  # Numba's integer // rounds toward minus infinity, as Python's (b != 0 is checked before)


@cuda.jit(device=True)
def integer_remainder(a, b):
    return a - (a // b) * b  # the sign of b, as Python's %


@cuda.jit(device=True)
def integer_fmod(a, b):
    """C's remainder of integers: the sign of ``a``."""
    r = a - (a // b) * b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


@functools.cache
def float_functions(compute: types.Type) -> dict[str, Callable]:
    """The operations whose constants are of the Numba float type ``compute`` (float32 or float64):
    exp2, isinf, isfinite, trunc, floor, ceil, rint (half to even), arcsin, arccos, arccosh, arctanh, fmod,
    remainder, floor_divide."""
    exact = compute(2.0**23 if compute == types.float32 else 2.0**52)  # from here on every float is an integer
    zero, one, half, two, infinity = compute(0), compute(1), compute(0.5), compute(2), compute(math.inf)

    @cuda.jit(device=True)
    def exp2(a):
        return two**a

    @cuda.jit(device=True)
    def isinf(a):
        return abs(a) == infinity

    @cuda.jit(device=True)
    def isfinite(a):
        return abs(a) < infinity  # False for NaN too

    @cuda.jit(device=True)
    def trunc(a):
        if not abs(a) < exact:  # large, infinite or NaN: already an integer (or NaN)
            return a
        t = compute(types.int64(a))
        return a * zero if t == zero else t  # a zero keeps the sign of a, as numpy's trunc(-0.5) = -0.

    @cuda.jit(device=True)
    def floor(a):
        t = trunc(a)
        return t - one if t > a else t

    @cuda.jit(device=True)
    def ceil(a):
        t = trunc(a)
        return t + one if t < a else t

    @cuda.jit(device=True)
    def rint(a):
        if not abs(a) < exact:
            return a
        r = floor(a)
        fraction = a - r
        if fraction > half or (fraction == half and r - two * floor(r / two) != zero):
            r += one
        return a * zero if r == zero else r

    # The inverse functions outside their domain are NaN (and atanh(+-1) is +-inf), written out: on the
    # GPU math.asin and the others return these already, the simulator's Python math raises instead.
    nan = compute(math.nan)

    @cuda.jit(device=True)
    def arcsin(a):
        return math.asin(a) if abs(a) <= one else nan

    @cuda.jit(device=True)
    def arccos(a):
        return math.acos(a) if abs(a) <= one else nan

    @cuda.jit(device=True)
    def arccosh(a):
        return math.acosh(a) if a >= one else nan

    @cuda.jit(device=True)
    def arctanh(a):
        if abs(a) < one:
            return math.atanh(a)
        return a * infinity if abs(a) == one else nan

    @cuda.jit(device=True)
    def fmod(a, b):
        return math.fmod(a, b)

    @cuda.jit(device=True)
    def remainder(a, b):
        r = math.fmod(a, b)
        if r != zero and (r < zero) != (b < zero):
            r += b
        return r

    @cuda.jit(device=True)
    def floor_divide(a, b):
        """numpy's and PyTorch's floor division of floats: exact where ``floor(a / b)`` would round."""
        if b == zero:
            return a / b
        mod = math.fmod(a, b)
        quotient = (a - mod) / b
        if mod != zero and (b < zero) != (mod < zero):
            quotient -= one
        if quotient == zero:
            return zero * (a / b)  # a signed zero, the sign of a / b
        result = floor(quotient)
        return result + one if quotient - result > half else result

    return {"exp2": exp2, "isinf": isinf, "isfinite": isfinite, "trunc": trunc, "floor": floor, "ceil": ceil,
            "rint": rint, "arcsin": arcsin, "arccos": arccos, "arccosh": arccosh, "arctanh": arctanh, "fmod": fmod,
            "remainder": remainder, "floor_divide": floor_divide}
