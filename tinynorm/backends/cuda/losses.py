"""Softmax cross-entropy over the rows of a 2-D :class:`CudaArray` of logits, forward and backward.

The names and semantics of :mod:`tinynorm.kernels.cpu.cross_entropy`; they are the wrappers of
:mod:`tinynorm.kernels.cuda.cross_entropy` themselves, one kernel each way.
"""
from __future__ import annotations

from ...kernels.cuda.cross_entropy import cross_entropy_backward, cross_entropy_forward

__all__ = ["cross_entropy_backward", "cross_entropy_forward"]
