"""exp of a non-positive float64 without a libm call, so that LLVM vectorizes the loops calling it.

Numba turns ``math.exp`` into a scalar libm call per element, which keeps a loop from vectorizing.
Here, as in libm: ``exp(v) = 2^k * exp(r)`` with ``k = round(v / ln 2)`` and ``|r| <= ln(2) / 2``; ``r``
comes from ``v - k ln 2`` with ln 2 split in two parts (Cody and Waite), so that the subtraction is
exact, ``exp(r)`` from its Taylor polynomial of degree 13 (truncation error 4e-18), and ``2^k`` from its
bits. The result is within one rounding of the exact value for ``-708 <= v <= 0``; below, where exp is
under float64's smallest normal number, and for NaN, it is 0. The module is compiled without
``reassoc``: reordering the reduction would lose the low part of ln 2.
"""
import math

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

LOWEST = -708.0  # exp(-708) = 3.3e-308, above float64's smallest normal number, 2.2e-308
LOG2_E = 1.4426950408889634
LN2_HIGH = 6.93147180369123816490e-01  # the leading bits of ln 2: k * LN2_HIGH is exact
LN2_LOW = 1.90821492927058770002e-10  # ln 2 - LN2_HIGH
EXPONENT_BIAS = 1023
MANTISSA_BITS = 52


@intrinsic
def _float64_from_bits(typingctx, bits):
    """The float64 whose IEEE-754 bits are the int64 ``bits`` (a bit cast, which LLVM vectorizes)."""
    if bits != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


@njit(cache=True, fastmath={"contract"}, error_model="numpy", nogil=True)
def exp_nonpositive(v):
    """exp(v) for v <= 0 to within a rounding; 0 below LOWEST and for NaN (see the module docstring)."""
    w = max(v, LOWEST)
    k = math.floor(w * LOG2_E + 0.5)
    r = (w - k * LN2_HIGH) - k * LN2_LOW
    p = 1.0 + r * (1.0 + r * (1 / 2 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120 + r * (1 / 720 + r * (
        1 / 5040 + r * (1 / 40320 + r * (1 / 362880 + r * (1 / 3628800 + r * (1 / 39916800 + r * (
            1 / 479001600 + r * (1 / 6227020800)))))))))))))
    power = _float64_from_bits((np.int64(k) + EXPONENT_BIAS) << MANTISSA_BITS)  # 2^k
    return p * power if v >= LOWEST else 0.0
