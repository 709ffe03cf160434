"""Compilation settings shared by the CPU kernels.

``FASTMATH`` lets LLVM reassociate and vectorize reductions (a row sum several times faster; measured:
docs/benchmarks.md) while keeping NaN/Inf semantics: the ``nnan``/``ninf`` flags of ``fastmath=True``
would let LLVM assume no NaN ever appears, which silently breaks NaN propagation and ``isnan`` checks.

``IEEE_JIT_OPTIONS`` is for the kernels that compute ``1 / sqrt(var + eps)``: ``error_model="numpy"``
makes a zero denominator (``eps=0`` on a constant row) give inf, as IEEE arithmetic and PyTorch do,
instead of the ``ZeroDivisionError`` that Numba's default Python error model raises from inside the
kernel. Only there: it made the backward loops, which divide only by nonzero counts, slower.

``NUMPY_ROUNDING`` is for the loops that must round as numpy's array operations do (an optimizer's
rule, BatchNorm's per-channel arithmetic): no fastmath, which would fuse multiplies and adds or divide
by a reciprocal, and IEEE division. It says ``fastmath=False`` rather than leaving it out: Numba
compiles a function whose options leave it unset with the flags of the jitted caller that calls it
first, and caches that version for every later call.
"""
FASTMATH = {"reassoc", "contract", "arcp", "nsz"}  # a set: numba rejects other collections

JIT_OPTIONS = {"cache": True, "fastmath": FASTMATH}
IEEE_JIT_OPTIONS = {**JIT_OPTIONS, "error_model": "numpy"}
NUMPY_ROUNDING = {"cache": True, "fastmath": False, "error_model": "numpy"}

# Below this many elements a kernel runs its serial version: starting a parallel region, and waking
# threads that compete for the cores with BLAS, costs more than it saves (measured: docs/benchmarks.md).
PARALLEL_THRESHOLD = 1 << 19
