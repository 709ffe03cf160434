"""More elementwise functions of the CUDA backend, with numpy's names and dtype rules: sin, tan, the
inverse trigonometric and the hyperbolic functions, arctan2, hypot, log1p, expm1, log2, exp2, floor, ceil,
trunc, rint, isnan, isinf, isfinite, fmod, remainder, floor_divide,
bitwise_and/or/xor, invert, logical_xor.

Each runs one map kernel of :mod:`.elementwise` (its :func:`~.elementwise.apply`) on the operations of
:mod:`tinynorm.kernels.cuda.math`. Rounding an integer array returns a copy and the NaN/inf tests of
integers need no kernel, as in numpy. Integer division by zero is the caller's to refuse (the ops
raise PyTorch's error before calling); the kernels would return garbage.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
from .runtime.compiler import from_dtype

from ...kernels.cuda import math as kernels
from . import creation
from .array import CudaArray
from .elementwise import apply, compute_dtype, logical_not, operand, result_type

__all__ = ["arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "bitwise_and", "bitwise_or",
           "bitwise_xor", "ceil", "cosh", "exp2", "expm1", "floor", "floor_divide", "fmod", "hypot", "invert",
           "isfinite", "isinf", "isnan", "log1p", "log2", "logical_xor", "remainder", "rint", "sin", "sinh", "tan",
           "trunc"]


@functools.cache
def _numba_type(dtype: np.dtype) -> Any:
    return from_dtype(np.dtype(dtype))


def _float_op(name: str, compute: np.dtype) -> Callable:
    return kernels.float_functions(_numba_type(compute))[name]


def _values(name: str, operands: tuple) -> list:
    return [operand(value, name) for value in operands]


def _floating_unary(name: str, op: Callable | None = None) -> Callable:
    """``name(x)``: a float function (integers computed in the smallest float holding them, as numpy)."""
    def function(x: Any) -> CudaArray:
        (value,) = _values(name, (x,))
        result = np.result_type(result_type(value), np.float16)
        compute = compute_dtype(result)
        return apply(op or _float_op(name, compute), [value], result, [compute], None, name)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"numpy's ``{name}`` of a CUDA array, elementwise."
    return function


def _rounding(name: str) -> Callable:
    """``name(x)``: floor, ceil, trunc or rint of floats; integers and bools are returned as a copy."""
    def function(x: Any) -> CudaArray:
        (value,) = _values(name, (x,))
        dtype = result_type(value)
        if dtype.kind != "f":
            return value.copy() if isinstance(value, CudaArray) else creation.asarray(value)
        compute = compute_dtype(dtype)
        return apply(_float_op(name, compute), [value], dtype, [compute], None, name)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"numpy's ``{name}`` of a CUDA array, elementwise, in its dtype."
    return function


def _test(name: str, integer_answer: bool, op: Callable | None = None) -> Callable:
    """``name(x)``: a bool array saying which elements are NaN, infinite or finite (integers: all
    ``integer_answer``)."""
    def function(x: Any) -> CudaArray:
        (value,) = _values(name, (x,))
        dtype = result_type(value)
        if dtype.kind != "f":
            return creation.full(getattr(value, "shape", ()), integer_answer, dtype=np.bool_)
        compute = compute_dtype(dtype)
        return apply(op or _float_op(name, compute), [value], np.dtype(np.bool_), [compute], None, name)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"numpy's ``{name}`` of a CUDA array, elementwise."
    return function


def _floating_binary(name: str, op: Callable) -> Callable:
    """``name(a, b)``: a float function of two operands, broadcast (integers computed as floats, as numpy)."""
    def function(a: Any, b: Any) -> CudaArray:
        values = _values(name, (a, b))
        result = np.result_type(result_type(*values), np.float16)
        compute = compute_dtype(result)
        return apply(op, values, result, [compute, compute], None, name)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"numpy's ``{name}`` of CUDA arrays and scalars, broadcast."
    return function


def _division(name: str, integer_op: Callable) -> Callable:
    """``name(a, b)``: fmod, remainder or floor_divide, in the operands' result dtype."""
    def function(a: Any, b: Any) -> CudaArray:
        values = _values(name, (a, b))
        dtype = result_type(*values)
        if dtype.kind == "b":
            raise TypeError(f"{name}: not supported for bool arrays")
        compute = compute_dtype(dtype)
        op = _float_op(name, compute) if dtype.kind == "f" else integer_op
        return apply(op, values, dtype, [compute, compute], None, name)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"numpy's ``{name}`` of CUDA arrays and scalars, broadcast (integer divisors nonzero)."
    return function


def _bitwise(name: str, op: Callable, bool_op: Callable) -> Callable:
    """``name(a, b)``: bitwise logic of integers, or logic of bools."""
    def function(a: Any, b: Any) -> CudaArray:
        values = _values(name, (a, b))
        dtype = result_type(*values)
        if dtype.kind not in "biu":
            raise TypeError(f"{name}: only integer and bool arrays, got dtype {dtype}")
        return apply(bool_op if dtype.kind == "b" else op, values, dtype, [dtype, dtype], None, name)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"numpy's ``{name}`` of integer or bool CUDA arrays and scalars, broadcast."
    return function


sin = _floating_unary("sin", kernels.sin)
tan = _floating_unary("tan", kernels.tan)
log1p = _floating_unary("log1p", kernels.log1p)
expm1 = _floating_unary("expm1", kernels.expm1)
log2 = _floating_unary("log2", kernels.log2)
exp2 = _floating_unary("exp2")
arcsin = _floating_unary("arcsin")
arccos = _floating_unary("arccos")
arctan = _floating_unary("arctan", kernels.arctan)
sinh = _floating_unary("sinh", kernels.sinh)
cosh = _floating_unary("cosh", kernels.cosh)
arcsinh = _floating_unary("arcsinh", kernels.arcsinh)
arccosh = _floating_unary("arccosh")
arctanh = _floating_unary("arctanh")
arctan2 = _floating_binary("arctan2", kernels.arctan2)
hypot = _floating_binary("hypot", kernels.hypot)
floor = _rounding("floor")
ceil = _rounding("ceil")
trunc = _rounding("trunc")
rint = _rounding("rint")
isnan = _test("isnan", False, kernels.isnan)
isinf = _test("isinf", False)
isfinite = _test("isfinite", True)
fmod = _division("fmod", kernels.integer_fmod)
remainder = _division("remainder", kernels.integer_remainder)
floor_divide = _division("floor_divide", kernels.integer_floor_divide)
bitwise_and = _bitwise("bitwise_and", kernels.bitwise_and, kernels.bitwise_and)
bitwise_or = _bitwise("bitwise_or", kernels.bitwise_or, kernels.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", kernels.bitwise_xor, kernels.not_equal_bool)


def invert(x: Any) -> CudaArray:
    """numpy's ``invert`` (``~``): bitwise NOT of integers, logical NOT of bools."""
    (value,) = _values("invert", (x,))
    dtype = result_type(value)
    if dtype.kind == "b":
        return logical_not(value)
    if dtype.kind not in "iu":
        raise TypeError(f"invert: only integer and bool arrays, got dtype {dtype}")
    return apply(kernels.invert, [value], dtype, [dtype], None, "invert")


def logical_xor(a: Any, b: Any) -> CudaArray:
    """numpy's ``logical_xor`` of bool arrays (compare other dtypes with 0 first)."""
    values = _values("logical_xor", (a, b))
    return apply(kernels.not_equal_bool, values, np.dtype(np.bool_), [np.dtype(np.bool_)] * 2, None, "logical_xor")

