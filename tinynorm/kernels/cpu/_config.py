"""Compilation settings shared by every CPU kernel.

``FASTMATH`` lets LLVM reassociate and vectorize reductions (the difference between ~7 and ~44 GB/s for
a row sum) while keeping NaN/Inf semantics: the ``nnan``/``ninf`` flags of ``fastmath=True`` would let
LLVM assume no NaN ever appears, which silently breaks NaN propagation and ``isnan`` checks.
"""
FASTMATH = {"reassoc", "contract", "arcp", "nsz"}  # a set: numba rejects other collections

# Below this many elements a kernel runs its serial version: starting a parallel region costs more
# than the work itself.
PARALLEL_THRESHOLD = 32_768
