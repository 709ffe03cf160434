"""The dtypes tinynorm tensors can hold, and the default floating-point dtype (float32)."""
from __future__ import annotations

import builtins  # the names int, float and bool below are dtypes, as in PyTorch
from typing import Any

import numpy as np


class DType:
    """The type of a tensor's elements, as ``torch.dtype``: one object per type (``tinynorm.float32``,
    ``tinynorm.int64``, ...), printed as ``tinynorm.float32``.

    Each stands for a numpy dtype, which numpy reads from its ``dtype`` attribute, so it goes wherever
    numpy takes a dtype (``np.zeros(3, tinynorm.float32)``, ``array.astype(t.dtype)``). It compares and
    hashes equal to that numpy dtype (``t.dtype == np.float32``) and has numpy's ``kind``, ``itemsize``,
    ``name``, ``type``, ``str``, ``char`` and PyTorch's ``is_floating_point``, ``is_signed``,
    ``is_complex``. Tensors report theirs with :func:`of`.
    """

    __slots__ = ("dtype", "kind", "itemsize", "name", "type", "str", "char", "is_floating_point", "is_signed",
                 "is_complex")

    def __init__(self, name: str) -> None:
        numpy_dtype = np.dtype(name)
        self.dtype, self.kind, self.itemsize, self.name = numpy_dtype, numpy_dtype.kind, numpy_dtype.itemsize, name
        self.type, self.str, self.char = numpy_dtype.type, numpy_dtype.str, numpy_dtype.char
        self.is_floating_point, self.is_signed, self.is_complex = self.kind == "f", self.kind in "fi", False

    def __repr__(self) -> str:
        return f"tinynorm.{self.name}"

    def __eq__(self, other: Any) -> builtins.bool:
        if type(other) is DType:
            return other is self
        if isinstance(other, (np.dtype, type, builtins.str)):  # numpy dtypes, scalar types and names
            try:
                return self.dtype == np.dtype(other)
            except TypeError:
                return False
        return NotImplemented

    def __hash__(self) -> builtins.int:
        return hash(self.dtype)  # as the numpy dtype's, which it equals

    def __reduce__(self) -> builtins.str:
        return self.name  # pickled as the module-level name: one object per dtype, also after loading


float16, float32, float64 = DType("float16"), DType("float32"), DType("float64")
int8, int16, int32, int64, uint8 = DType("int8"), DType("int16"), DType("int32"), DType("int64"), DType("uint8")
bool_ = DType("bool")
# PyTorch's aliases; ``tinynorm.int`` and ``tinynorm.bool`` are dtypes, as ``torch.int`` and ``torch.bool``.
half, float, double, short, int, long, bool = float16, float32, float64, int16, int32, int64, bool_

SUPPORTED = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_)
_OF = {d.dtype: d for d in SUPPORTED}
_default = float32


def of(numpy_dtype: np.dtype) -> DType:
    """The :class:`DType` of a backend array's numpy dtype (``Tensor.dtype``)."""
    return _OF.get(numpy_dtype) or DType(np.dtype(numpy_dtype).name)


def get_default_dtype() -> DType:
    """The floating-point dtype of tensors made from Python floats (float32 unless changed)."""
    return _default


def set_default_dtype(dtype: Any) -> None:
    """Make float32 or float64 the default floating-point dtype (e.g. float64 for gradient checks)."""
    global _default
    dtype = as_dtype(dtype)
    if dtype not in (float32, float64):
        raise TypeError(f"set_default_dtype: only float32 or float64 can be the default, got {dtype}")
    _default = dtype


def as_dtype(dtype: Any) -> DType:
    """``dtype`` (a tinynorm or numpy dtype, a numpy scalar type, or a name such as ``'float32'`` or
    ``'tinynorm.float32'``) as a :class:`DType`; TypeError for anything else and for dtypes tinynorm
    has no kernels for."""
    if type(dtype) is DType:
        return dtype
    if isinstance(dtype, builtins.str):
        dtype = dtype.removeprefix("tinynorm.")
    try:
        numpy_dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a dtype such as tinynorm.float32, got {dtype!r}") from None
    if numpy_dtype not in _OF:
        raise TypeError(f"unsupported dtype {numpy_dtype}; tinynorm supports {', '.join(map(builtins.str, SUPPORTED))}")
    return _OF[numpy_dtype]


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


def promote_types(a: Any, b: Any) -> DType:
    """The smallest dtype both ``a`` and ``b`` convert to (``torch.promote_types``): within a category
    numpy's rule (int8 with uint8 is int16), across categories the higher one's dtype (int64 with
    float16 is float16)."""
    a, b = as_dtype(a), as_dtype(b)
    if a is b:
        return a
    category_a, category_b = category(a), category(b)
    if category_a != category_b:
        return a if category_a > category_b else b
    return of(np.promote_types(a.dtype, b.dtype))


def _scalar_dtype(value: Any) -> DType:
    """The dtype PyTorch gives a Python (or numpy) number taking part in arithmetic with a tensor."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return bool_
    if isinstance(value, (builtins.int, np.integer)):
        return int64
    if isinstance(value, (builtins.float, np.floating)):
        return get_default_dtype()
    raise TypeError(f"unsupported operand of type {type(value).__name__}: expected a tensor, a number or a numpy array")


def result_type(*operands: Any) -> DType:
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
    return as_dtype(_combine(dimensioned, _combine(zero_dim, number)))


def _combine(higher: Any, lower: Any) -> Any:
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
