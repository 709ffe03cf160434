"""Bringing the operands of an elementwise op to the dtype PyTorch computes it in.

numpy and PyTorch agree when two tensors share a dtype, and when a Python number meets a float tensor.
They differ elsewhere (``int_tensor * 2.5``: numpy float64, PyTorch float32; a float32 tensor times a
0-d float64 tensor: numpy float64, PyTorch float32), so an op converts its operands first with
:func:`promote`, using :func:`tinynorm.dtypes.result_type`; numpy then computes in that dtype.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from .shape import cast


def promote(a: Any, b: Any, floating: bool = False) -> tuple[Any, Any]:
    """``a`` and ``b`` in their common dtype (the default float dtype at least, when ``floating``: true
    division, and functions such as ``exp`` of integers)."""
    # The usual cases first, cheaply: a float tensor with a Python number, or two tensors of one dtype.
    if type(b) is float or type(b) is int:
        if type(a) is Tensor and a.array.dtype.kind == "f":
            return a, b
    elif type(a) is Tensor and type(b) is Tensor and a.array.dtype == b.array.dtype:
        if not floating or a.array.dtype.kind == "f":
            return a, b
    target = dtypes.result_type(a, b)
    if floating and target.kind != "f":
        target = dtypes.get_default_dtype()
    return convert(a, target), convert(b, target)


def convert(value: Any, dtype: np.dtype) -> Any:
    """``value`` (a tensor, a numpy array or a number) ready to take part in an op computed in ``dtype``."""
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else cast(value, dtype)
    if isinstance(value, np.ndarray):
        return value if value.dtype == dtype else value.astype(dtype)
    if dtype.kind in "iu" and not isinstance(value, (bool, np.bool_)):
        return np.asarray(value).astype(dtype)  # an integer wraps into the tensor's range, as in PyTorch
    if isinstance(value, np.generic):
        return value.item()  # a Python number: numpy then keeps the array's dtype
    return value
