"""The CPU backend: numpy for general array math, tinynorm's Numba kernels for the fused ones.

Ops reach everything here as ``xp.<name>``; :mod:`tinynorm.backends.contract` declares each name, its
signature and meaning. Most names are numpy's own functions re-exported unchanged; the fused ones are
Numba kernels imported from ``tinynorm/kernels/cpu/``; the functions defined below are the few that
numpy lacks or that need tinynorm's rules (every result is an ``ndarray``, never a numpy scalar).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy import (  # noqa: F401  (re-exported for the ops)
    abs,
    add,
    arange,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    argmax,
    argmin,
    ascontiguousarray,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    broadcast_to,
    ceil,
    clip,
    concatenate,
    cos,
    cosh,
    cumprod,
    cumsum,
    empty,
    equal,
    exp,
    exp2,
    expand_dims,
    expm1,
    finfo,
    floor,
    floor_divide,
    fmod,
    full,
    greater,
    greater_equal,
    hypot,
    invert,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    log2,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    moveaxis,
    multiply,
    negative,
    not_equal,
    ones,
    ones_like,
    power,
    remainder,
    rint,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    stack,
    subtract,
    swapaxes,
    take,
    tan,
    tanh,
    transpose,
    true_divide,
    trunc,
    where,
    zeros,
    zeros_like,
)

from ..kernels.cpu.activations import erf  # noqa: F401
from ..kernels.cpu.gelu import gelu, gelu_backward  # noqa: F401
from ..kernels.cpu.batch_norm import (  # noqa: F401
    batch_norm_backward,
    batch_norm_backward_elemt,
    batch_norm_backward_reduce,
    batch_norm_forward,
    batch_norm_rstd,
    batch_norm_stats,
    batch_norm_training_forward,
    batch_norm_update_running,
)
from ..kernels.cpu.conv import conv2d_backward, conv2d_forward  # noqa: F401
from ..kernels.cpu.cross_entropy import cross_entropy_backward, cross_entropy_forward  # noqa: F401
from ..kernels.cpu.group_norm import group_norm_backward, group_norm_forward  # noqa: F401
from ..kernels.cpu.layer_norm import layer_norm_backward, layer_norm_forward  # noqa: F401
from ..kernels.cpu import index_add as _index_add_kernel
from ..kernels.cpu.index_count import count_indices  # noqa: F401  (an op's check of its indices)
from ..kernels.cpu import column_sums as _column_sums
from ..kernels.cpu.optim import adam_update, sgd_update  # noqa: F401
from ..kernels.cpu.matmul import matmul  # noqa: F401
from ..kernels.cpu.relu import relu, relu_backward  # noqa: F401
from ..kernels.cpu.pool import (  # noqa: F401
    avg_pool2d_backward,
    avg_pool2d_forward,
    max_pool2d_backward,
    max_pool2d_forward,
)
from ..kernels.cpu.rms_norm import rms_norm_backward, rms_norm_forward  # noqa: F401
from ..kernels.cpu.softmax import (  # noqa: F401  (over the last axis)
    log_softmax_backward,
    log_softmax_forward,
    softmax_backward,
    softmax_forward,
)
from . import is_basic_index

name = "cpu"
# The CPU norm kernels have no float16 version: ops convert float16 data to float32 for them.
HALF_NORM_KERNELS = False
ndarray = np.ndarray


def as_array(value: Any) -> np.ndarray:
    """An op's result as an ndarray (numpy reductions return scalars for full reductions)."""
    return value if type(value) is np.ndarray else np.asarray(value)


def asarray(data: Any, dtype: Any = None) -> np.ndarray:
    return np.asarray(data, dtype=dtype)


def copy(a: np.ndarray) -> np.ndarray:
    return np.array(a, copy=True)


def reshape(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return np.reshape(a, shape)


def view(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``a`` in ``shape`` without copying; ValueError when its strides do not allow that."""
    return np.reshape(a, shape, copy=False)


def storage_of(a: Any) -> Any:
    """The array that owns ``a``'s memory (``a`` itself unless it is a view); any other value is its own."""
    while True:
        base = getattr(a, "base", None)
        if not isinstance(base, np.ndarray):
            return a
        a = base


def shares_storage(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are views of the same memory."""
    return storage_of(a) is storage_of(b)


def is_contiguous(a: np.ndarray) -> bool:
    return a.flags.c_contiguous


def layout(a: np.ndarray) -> tuple[tuple[int, ...], int]:
    """``a``'s strides and its offset in its storage, counted in elements (as PyTorch's ``stride()`` and
    ``storage_offset()``)."""
    itemsize = a.dtype.itemsize
    offset = (a.ctypes.data - storage_of(a).ctypes.data) // itemsize
    return tuple(stride // itemsize for stride in a.strides), int(offset)


def data_pointer(a: np.ndarray) -> int:
    """The address of ``a``'s first element (0 for an empty array, as PyTorch)."""
    return int(a.ctypes.data) if a.size else 0


def sum(a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:  # noqa: A001
    """numpy's sum; a float matrix's column sums (a Linear layer's bias gradient) by the kernel that adds
    its rows as numpy does, faster (``kernels/cpu/column_sums.py``)."""
    if _column_sums.takes(a, axis, keepdims):
        return _column_sums.column_sums(a)
    return np.asarray(np.sum(a, axis=axis, keepdims=keepdims))


def mean(a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.mean(a, axis=axis, keepdims=keepdims))


def prod(a: np.ndarray, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> np.ndarray:
    return np.asarray(np.prod(a, axis=axis, keepdims=keepdims, dtype=dtype))


def argsort(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """The int64 indices that sort ``a`` along ``axis``, stably (equal values keep their order; NaN last)."""
    return np.argsort(a, axis=axis, kind="stable").astype(np.int64, copy=False)


def unique(a: np.ndarray, return_inverse: bool = False, return_counts: bool = False, axis: int | None = None) -> Any:
    return np.unique(a, return_inverse=return_inverse, return_counts=return_counts, axis=axis)


def nonzero(a: np.ndarray) -> tuple[np.ndarray, ...]:
    """One int64 array per dim (``a.ndim >= 1``) of the positions of ``a``'s nonzero entries, in C order."""
    return tuple(index.astype(np.int64, copy=False) for index in np.nonzero(a))


def amax(a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.max(a, axis=axis, keepdims=keepdims))


def amin(a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return np.asarray(np.min(a, axis=axis, keepdims=keepdims))


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``grad`` over the axes that broadcasting added or stretched, giving it ``shape``.

    The adjoint of broadcasting: if ``x`` of shape (3, 1) was broadcast to (2, 3, 4), every copy of an
    element contributed to the output, so its gradient is the sum over the copies.
    """
    extra = grad.ndim - len(shape)
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(axis=stretched, keepdims=True)
    return grad.reshape(shape)


def linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """``x @ weight.T + bias`` (PyTorch's ``F.linear``; the CUDA backend adds the bias inside its GEMM).

    A contiguous (..., in) input is one (rows, in) GEMM, not one per leading index as numpy's batched
    matmul would run, and the bias is added in place (measured: docs/benchmarks.md).
    """
    rows = x.reshape(-1, x.shape[-1]) if x.ndim > 2 and x.flags.c_contiguous else x
    out = np.matmul(rows, weight.T)
    if bias is not None:
        out = np.add(out, bias, out=out) if bias.dtype == out.dtype else out + bias
    return out.reshape(*x.shape[:-1], weight.shape[0])


def take_along_axis(a: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """numpy's ``take_along_axis``, for indices the op has checked (numpy checks them again, for free)."""
    return np.take_along_axis(a, indices, axis)


def index_add(shape: tuple[int, ...], index: Any, values: np.ndarray) -> np.ndarray:
    """Zeros of ``shape`` with ``values`` added at ``index`` (repeated indices add up), for an index the
    op has checked. The adjoint of ``x[index]``: the gradient of an indexing op."""
    out = np.zeros(shape, dtype=values.dtype)
    if is_basic_index(index):
        out[index] = values  # slices and ints never select an element twice
    elif _index_add_kernel.can_add_rows(out, index, values):
        _index_add_kernel.add_accepted_rows(out, index, values)  # np.add.at's sums, in a compiled loop
    else:
        np.add.at(out, index, values)
    return out


def random_uniform(generator: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return generator.random(shape, dtype=np.float64).astype(dtype, copy=False)


def to_numpy(a: np.ndarray) -> np.ndarray:
    return a


def from_numpy(a: np.ndarray) -> np.ndarray:
    return a
