"""The CUDA compiler tinynorm's kernels are written for, chosen in one place.

Kernels and their wrappers take ``cuda`` (the ``@cuda.jit`` API), ``types``, the scalar types and
``from_dtype`` from here. The default is numba-cuda (``numba.cuda``), the target every test and GPU run
uses. ``TINYNORM_CUDA_COMPILER=numba-cuda-mlir``, set before tinynorm's CUDA backend is imported, takes
them from NVIDIA's successor package, numba-cuda-mlir, which has the same API under its own module and
type system (and no CUDA simulator): that is how docs/cuda.md's probe compiles every kernel with it.
"""
from __future__ import annotations

import os

NAME = os.environ.get("TINYNORM_CUDA_COMPILER", "numba-cuda")
COMPILERS = ("numba-cuda", "numba-cuda-mlir")

if NAME == "numba-cuda-mlir":
    from numba import config  # numba's own settings (tinynorm needs numba anyway); this compiler has no simulator
    from numba_cuda_mlir import cuda
    from numba_cuda_mlir.numba_cuda import types
    from numba_cuda_mlir.numba_cuda.np.numpy_support import from_dtype
elif NAME == "numba-cuda":
    from numba import config, cuda, types
    from numba.cuda.np.numpy_support import from_dtype
else:
    raise ImportError(f"TINYNORM_CUDA_COMPILER must be one of {COMPILERS}, got {NAME!r}")

boolean, float16, float32, float64 = types.boolean, types.float16, types.float32, types.float64
int32, int64, uint32, uint64 = types.int32, types.int64, types.uint32, types.uint64

__all__ = ["NAME", "boolean", "config", "cuda", "float16", "float32", "float64", "from_dtype", "int32", "int64",
           "types", "uint32", "uint64"]
