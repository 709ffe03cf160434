"""The CUDA backend: the names of :mod:`tinynorm.backends.contract`, for :class:`CudaArray` device arrays.

Each family of the contract lives in the module of its name (``contract.Normalization`` in
``normalization.py``) and lists its names in ``__all__``; this package gathers them into the one
namespace ops see as ``ctx.xp``, and lists them all in its own ``__all__``. Importing it
imports ``numba.cuda`` (``import tinynorm`` never does: the backend is loaded on first use of
``device='cuda'``).
"""
# ruff: noqa: F401, F403  (this module is the union of its submodules' names)
from .array import CudaArray
from .conv import *
from .creation import *
from .elementwise import *
from .indexing import *
from .linalg import *
from .losses import *
from .math import *
from .normalization import *
from .optim import *
from .random import *
from .reductions import *
from .scan import *
from .shape import *
from .sorting import *
from .softmax import *

name = "cuda"
ndarray = CudaArray

__all__ = sorted({"name", "ndarray", *conv.__all__, *creation.__all__, *elementwise.__all__, *indexing.__all__,
                  *linalg.__all__, *losses.__all__, *math.__all__, *normalization.__all__, *optim.__all__,
                  *random.__all__, *reductions.__all__, *scan.__all__, *shape.__all__, *sorting.__all__,
                  *softmax.__all__})
"""Every name the ops may reach as ``xp.<name>`` on this backend."""
