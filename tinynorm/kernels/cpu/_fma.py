"""``fused_multiply_add(a, b, c)``: ``a * b + c`` with a single rounding, in compiled kernels.

Numba has no fma, and ``fastmath``'s ``contract`` only allows LLVM to fuse, so a kernel cannot count on
it. With a single rounding, ``low = fused_multiply_add(x, x, -x * x)`` is exactly the rounding error of
``x * x`` (Dekker's product), which GELU needs for ``exp(-x^2 / 2)`` in float32. LLVM's ``llvm.fma``
intrinsic vectorizes into the CPU's FMA instructions.
"""
from numba import types
from numba.extending import intrinsic


@intrinsic
def fused_multiply_add(typingctx, a, b, c):
    """``a * b + c`` rounded once, for three float32 or three float64 values."""
    if not (a == b == c and a in (types.float32, types.float64)):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return a(a, b, c), codegen
