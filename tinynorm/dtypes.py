"""The dtypes tinynorm tensors can hold, and the default floating-point dtype (float32)."""
from __future__ import annotations

from typing import Any

import numpy as np

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
bool_ = np.dtype("bool")
half, float, double, long = float16, float32, float64, int64  # PyTorch's aliases

SUPPORTED = (float16, float32, float64, int32, int64, bool_, np.dtype("int8"), np.dtype("uint8"), np.dtype("int16"))
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
