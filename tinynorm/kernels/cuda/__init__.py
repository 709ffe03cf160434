"""Numba CUDA kernels: the normalizations (exported here, with the signatures of
:mod:`tinynorm.kernels.cpu`) and, one module per family, the kernels behind the CUDA backend
(elementwise, reductions, matmul, conv, pool, indexing, softmax, random, optim). The host wrappers
take and return :class:`~tinynorm.backends.cuda.array.CudaArray`; every kernel is made with
``runtime.launch.jit`` and started with ``runtime.launch.launch`` (``tinynorm/backends/cuda/runtime``).

Importing this package imports ``numba.cuda`` (``import tinynorm`` never does). Without a GPU the
kernels run under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set before Numba is imported) and
compile to PTX with ``numba.cuda.compile_ptx``; see docs/cuda.md.
"""
# The wrappers work on the CUDA backend's arrays, and the backend calls the wrappers: importing the
# backend first loads both in an order where every module finds the names it imports.
from ...backends import cuda as _backend  # noqa: F401
from .batch_norm import (
    batch_norm_backward,
    batch_norm_backward_elemt,
    batch_norm_backward_reduce,
    batch_norm_forward,
    batch_norm_rstd,
    batch_norm_stats,
    batch_norm_update_running,
)
from .group_norm import group_norm_backward, group_norm_forward
from .layer_norm import layer_norm_backward, layer_norm_forward
from .rms_norm import rms_norm_backward, rms_norm_forward

__all__ = ["batch_norm_backward", "batch_norm_backward_elemt", "batch_norm_backward_reduce", "batch_norm_forward",
           "batch_norm_rstd", "batch_norm_stats", "batch_norm_update_running", "group_norm_backward",
           "group_norm_forward", "layer_norm_backward", "layer_norm_forward", "rms_norm_backward", "rms_norm_forward"]
