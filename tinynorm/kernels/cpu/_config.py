"""Compilation settings shared by the CPU kernels.

``FASTMATH`` lets LLVM reassociate and vectorize reductions (the difference between ~7 and ~44 GB/s for
a row sum) while keeping NaN/Inf semantics: the ``nnan``/``ninf`` flags of ``fastmath=True`` would let
LLVM assume no NaN ever appears, which silently breaks NaN propagation and ``isnan`` checks.

``JIT_OPTIONS`` adds ``error_model="numpy"`` for the normalization kernels: a division by zero then
gives IEEE inf/NaN, as in PyTorch (``eps=0`` on a constant row), instead of the ``ZeroDivisionError``
that Numba's default Python error model raises from inside the kernel.
"""
FASTMATH = {"reassoc", "contract", "arcp", "nsz"}  # a set: numba rejects other collections

JIT_OPTIONS = {"cache": True, "fastmath": FASTMATH, "error_model": "numpy"}

# Below this many elements a kernel runs its serial version: starting a parallel region costs more
# than the work itself.
PARALLEL_THRESHOLD = 32_768
