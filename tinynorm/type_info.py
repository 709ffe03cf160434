"""``tinynorm.finfo`` and ``tinynorm.iinfo``: the limits of a dtype, as ``torch.finfo``/``torch.iinfo``.

Models read them for masks and guards: ``scores.masked_fill(mask, tinynorm.finfo(scores.dtype).min)``,
``x.clamp(min=tinynorm.finfo(x.dtype).eps)``. The values are numpy's for the same type (they are the
IEEE and two's-complement limits, identical in both libraries), as Python floats and ints.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes


def _expect_dtype(function: str, value: Any) -> dtypes.DType:
    if type(value) is not dtypes.DType:
        raise TypeError(f"{function}(): argument 'type' (position 1) must be tinynorm.dtype, not "
                        f"{type(value).__name__}")
    return value


class finfo:  # noqa: N801  (PyTorch's name)
    """The limits of a floating-point dtype (the default dtype when none is given): ``bits``, ``eps``
    (the gap between 1 and the next float), ``max``, ``min`` (the lowest finite value, ``-max``),
    ``tiny``/``smallest_normal`` (the smallest positive normal number), ``resolution`` and ``dtype``
    (its name, ``'float32'``)."""

    def __init__(self, type: Any = None) -> None:  # noqa: A002  (PyTorch's argument name)
        dtype = dtypes.get_default_dtype() if type is None else _expect_dtype("finfo", type)
        if dtype.kind != "f":
            raise TypeError("tinynorm.finfo() requires a floating point input type. Use tinynorm.iinfo to handle "
                            "'tinynorm.finfo'")
        info = np.finfo(dtype.dtype)
        self.bits, self.dtype = int(info.bits), dtype.name
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801
    """The limits of an integer dtype: ``bits``, ``min``, ``max`` and ``dtype`` (its name, ``'int64'``)."""

    def __init__(self, type: Any) -> None:  # noqa: A002
        dtype = _expect_dtype("iinfo", type)
        if dtype.kind == "b":
            raise TypeError("tinynorm.bool is not supported by tinynorm.iinfo")
        if dtype.kind not in "iu":
            raise TypeError("tinynorm.iinfo() requires an integer input type. Use tinynorm.finfo to handle "
                            "'tinynorm.iinfo'")
        info = np.iinfo(dtype.dtype)
        self.bits, self.min, self.max, self.dtype = int(info.bits), int(info.min), int(info.max), dtype.name

    def __repr__(self) -> str:
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"
