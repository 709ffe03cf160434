"""The dtypes tinynorm tensors can hold, and the default floating-point dtype (float32)."""
from __future__ import annotations

import builtins  # the names int, float and bool below are dtypes, as in PyTorch
from typing import Any

import numpy as np

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")
# PyTorch's aliases; ``tinynorm.int`` and ``tinynorm.bool`` are dtypes, as ``torch.int`` and ``torch.bool``.
half, float, double, short, int, long, bool = float16, float32, float64, int16, int32, int64, bool_

SUPPORTED = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_)
_default = float32


def get_default_dtype() -> np.dtype:
    """The floating-point dtype of tensors made from Python floats (float32 unless changed)."""
    return _default


def set_default_dtype(dtype: Any) -> None:
    """Make float32 or float64 the default floating-point dtype (e.g. float64 for gradient checks)."""
    global _default
    dtype = as_dtype(dtype)
    if dtype not in (float32, float64):
        raise TypeError(f"set_default_dtype: only float32 or float64 can be the default, got {dtype}")
    _default = dtype


def as_dtype(dtype: Any) -> np.dtype:
    """``dtype`` (a tinynorm/numpy dtype, a numpy scalar type or a name) as an ``np.dtype``."""
    try:
        result = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a dtype such as tinynorm.float32, got {dtype!r}") from None
    if result not in SUPPORTED:
        raise TypeError(f"unsupported dtype {result}; tinynorm supports {', '.join(map(str, SUPPORTED))}")
    return result


def is_floating(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


# ------------------------------------------------------------------------------ type promotion
# PyTorch's rules, which differ from numpy's where a tensor meets a number or a zero-dim tensor:
# ``int_tensor * 2.5`` and ``int_tensor / 2`` give the default float dtype (numpy: float64), a 0-d
# float64 tensor does not upcast a float32 tensor, and an integer tensor with a float16 one gives float16.
_BOOL, _INTEGER, _FLOATING = 0, 1, 2


def category(dtype: np.dtype) -> int:
    """0 for bool, 1 for integers, 2 for floating point: promotion only ever moves up this order."""
    return _FLOATING if dtype.kind == "f" else _BOOL if dtype.kind == "b" else _INTEGER


def promote_types(a: Any, b: Any) -> np.dtype:
    """The smallest dtype both ``a`` and ``b`` convert to (``torch.promote_types``): within a category
    numpy's rule (int8 with uint8 is int16), across categories the higher one's dtype (int64 with
    float16 is float16)."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    category_a, category_b = category(a), category(b)
    if category_a != category_b:
        return a if category_a > category_b else b
    return np.promote_types(a, b)


def _scalar_dtype(value: Any) -> np.dtype:
    """The dtype PyTorch gives a Python (or numpy) number taking part in arithmetic with a tensor."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return bool_
    if isinstance(value, (builtins.int, np.integer)):
        return int64
    return get_default_dtype()


def result_type(*operands: Any) -> np.dtype:
    """The dtype of an elementwise op on ``operands`` (tensors, arrays and numbers), as ``torch.result_type``.

    Operands with dimensions decide; zero-dim tensors count only if they are of a higher category (bool <
    integer < floating), and Python numbers only if higher still than both. So ``float32 (3,)`` with a
    float64 0-d tensor is float32, ``int64 (3,)`` with ``2.5`` is the default float dtype, and ``uint8``
    with ``1000`` stays uint8.
    """
    dimensioned = zero_dim = number = None
    for value in operands:
        dtype = getattr(value, "dtype", None)
        if dtype is None or isinstance(value, np.generic):  # Python and numpy numbers
            dtype = _scalar_dtype(value)
            number = dtype if number is None else promote_types(number, dtype)
        elif getattr(value, "ndim", 0):
            dimensioned = dtype if dimensioned is None else promote_types(dimensioned, dtype)
        else:
            zero_dim = dtype if zero_dim is None else promote_types(zero_dim, dtype)
    return _combine(dimensioned, _combine(zero_dim, number))


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """``higher``'s dtype, unless ``lower`` is of a higher category (then the two promoted)."""
    if higher is None:
        return lower
    if lower is None or category(higher) >= category(lower):
        return higher
    return promote_types(higher, lower)


def can_cast(source: Any, target: Any) -> bool:
    """Whether an in-place op may write ``source`` values into a ``target`` tensor (``torch.can_cast``):
    never down a category (floats into integers, integers into bool)."""
    return category(np.dtype(source)) <= category(np.dtype(target))


def type_name(dtype: np.dtype) -> str:
    """PyTorch's name of a dtype in messages: ``Float``, ``Long``, ``Half``, ``Bool``."""
    return _TYPE_NAMES.get(np.dtype(dtype).name, str(dtype))


_TYPE_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char", "uint8": "Byte",
               "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool"}
