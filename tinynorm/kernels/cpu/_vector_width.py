"""Let LLVM vectorize a Numba kernel with the CPU's widest registers (512 bits with AVX-512).

LLVM's tuning for many AVX-512 processors (Intel's from Skylake-X to Sapphire Rapids among them) prefers
256-bit vectors, so the vectorizers use half the register width and half the registers' capacity the CPU
has. The convolution's register blocks (``conv_implicit.py``) are sized for 32 AVX-512 registers: in
256-bit registers the block needs twice as many, and spills to the stack. Calling :func:`wide_vectors`
in a kernel sets its function's ``prefer-vector-width`` to 512, as clang's ``-mprefer-vector-width=512``
does; on a CPU without AVX-512 LLVM still uses the widest registers it has. Every function of a kernel
that its loops are inlined into needs the call, since each is compiled and vectorized on its own.
"""
from numba import types
from numba.extending import intrinsic

PREFERRED_WIDTH = '"prefer-vector-width"="512"'


@intrinsic
def wide_vectors(typingctx):
    """``wide_vectors()`` at the top of a kernel: compile it preferring 512-bit vectors (module docstring)."""

    def codegen(context, builder, signature, args):
        # llvmlite's attribute set accepts only its list of known names; a string attribute goes in as text.
        set.add(builder.function.attributes, PREFERRED_WIDTH)
        return context.get_dummy_value()

    return types.none(), codegen
