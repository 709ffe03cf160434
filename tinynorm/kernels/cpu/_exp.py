"""exp of a non-positive float without a libm call, so that LLVM vectorizes the loops calling it.

Numba turns ``math.exp`` into a scalar libm call per element, which keeps a loop from vectorizing.
Here, as in libm: ``exp(v) = 2^k * exp(r)`` with ``k = round(v / ln 2)`` and ``|r| <= ln(2) / 2``; ``r``
comes from ``v - k ln 2`` with ln 2 split in two parts (Cody and Waite), so that the subtraction is
exact, ``exp(r)`` from a polynomial, and ``2^k`` from its bits. :func:`exp_nonpositive` computes in its
argument's type:

- float64: the Taylor polynomial of degree 13 (truncation error 4e-18); within one rounding of the
  exact value for ``-708 <= v <= 0``.
- float32: the polynomial of Cephes' ``expf`` (Moshier), of degree 7, all in float32; within 1.02 ulp
  of the exact value (measured on 7 million arguments in ``[-87.3, 0]``), and subnormal results, as
  libm's, down to ``-103.97``: twice the lanes per vector of float64, and half the terms.

Below the lowest argument, where exp rounds to 0 (float32) or is under the smallest normal number
(float64), and for NaN, the result is 0. :func:`exp_of_sum_float32` takes the argument in two parts.
The module is compiled without ``reassoc``: reordering the reduction would lose the low part of ln 2;
for the same reason callers compiled with ``reassoc`` must not inline these functions at Numba's level
(``inline="always"``), which would compile them with the caller's flags: LLVM's own inlining keeps them.
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

LOWEST = -708.0  # exp(-708) = 3.3e-308, above float64's smallest normal number, 2.2e-308
LOWEST_FLOAT32 = np.float32(-103.97208)  # ln(2^-150): below, exp rounds to 0 in float32
LOG2_E = 1.4426950408889634
LN2_HIGH = 6.93147180369123816490e-01  # the leading bits of ln 2: k * LN2_HIGH is exact
LN2_LOW = 1.90821492927058770002e-10  # ln 2 - LN2_HIGH
LN2_HIGH_FLOAT32 = np.float32(0.693359375)  # 9 bits: exact times any k of float32's exponent range
LN2_LOW_FLOAT32 = np.float32(-2.12194440e-4)
EXPF_COEFFICIENTS = tuple(np.float32(c) for c in (  # Cephes expf: exp(r) = 1 + r + r^2 * P(r)
    1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))


@intrinsic
def _float_from_bits(typingctx, bits, like):
    """The float of ``like``'s type whose IEEE-754 bits are the integer ``bits`` (a bit cast, which LLVM
    vectorizes); wider ``bits`` are truncated to the float's width."""
    if like not in (types.float32, types.float64) or not isinstance(bits, types.Integer) \
            or bits.bitwidth < like.bitwidth:
        return None

    def codegen(context, builder, signature, args):
        integer = args[0]
        if bits.bitwidth > like.bitwidth:
            integer = builder.trunc(integer, ir.IntType(like.bitwidth))
        return builder.bitcast(integer, context.get_value_type(like))

    return like(bits, like), codegen


@njit(cache=True, fastmath={"contract"}, error_model="numpy", nogil=True)
def _exp_float64(v):
    w = max(v, LOWEST)
    k = math.floor(w * LOG2_E + 0.5)
    r = (w - k * LN2_HIGH) - k * LN2_LOW
    p = 1.0 + r * (1.0 + r * (1 / 2 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120 + r * (1 / 720 + r * (
        1 / 5040 + r * (1 / 40320 + r * (1 / 362880 + r * (1 / 3628800 + r * (1 / 39916800 + r * (
            1 / 479001600 + r * (1 / 6227020800)))))))))))))
    power = _float_from_bits((np.int64(k) + 1023) << 52, v)  # 2^k
    return p * power if v >= LOWEST else 0.0


@njit(cache=True, fastmath={"contract"}, error_model="numpy", nogil=True)
def exp_of_sum_float32(high, low, factor):
    """``factor * exp(high + low)`` in float32 for ``high + low <= 0``, ``|low|`` at most a few units:
    the reduction is taken on the sum and ``low`` joins the reduced argument after it, so that it keeps
    its bits where ``high + low`` would round them away (GELU's ``exp(-x^2 / 2 + P)``); ``factor``
    (of magnitude at least 1e-7, say) is applied before the power of 2, so that a product in float32's
    normal range never passes through a subnormal. 0 below LOWEST_FLOAT32 and for NaN."""
    v = high + low
    w = max(v, LOWEST_FLOAT32)
    k = np.floor(w * np.float32(LOG2_E) + np.float32(0.5))  # np.floor keeps float32 (math.floor gives an int)
    r = ((high - k * LN2_HIGH_FLOAT32) + low) - k * LN2_LOW_FLOAT32
    c0, c1, c2, c3, c4, c5 = EXPF_COEFFICIENTS
    e = (((((c0 * r + c1) * r + c2) * r + c3) * r + c4) * r + c5) * r * r + r + np.float32(1.0)
    # 2^k as two normal powers of 2, so that results below float32's smallest normal number come out
    # subnormal, as libm's; above it the second factor is 1. The exponent is an int32, as wide as the
    # float: int64 lanes would halve the vectors' width (measured: docs/benchmarks.md).
    whole = np.int32(k)
    normal = max(whole, np.int32(-126))
    scale = _float_from_bits((normal + np.int32(127)) << np.int32(23), v)
    rest = _float_from_bits((whole - normal + np.int32(127)) << np.int32(23), v)
    return ((e * factor) * scale) * rest if v >= LOWEST_FLOAT32 else np.float32(0.0)


def exp_nonpositive(v):
    """exp(v) for v <= 0 in v's type (float32 or float64), for compiled kernels (module docstring)."""
    raise TypeError("exp_nonpositive is called from numba-compiled kernels only")


@overload(exp_nonpositive)
def _exp_nonpositive_of(v):
    if v == types.float32:
        return lambda v: exp_of_sum_float32(v, np.float32(-0.0), np.float32(1.0))  # x + -0.0 is x: folded
    if v == types.float64:
        return lambda v: _exp_float64(v)
    return None
