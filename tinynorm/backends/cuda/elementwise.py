"""Elementwise functions of the CUDA backend, with numpy's broadcasting and dtype rules.

Every function here (and every CudaArray operator) goes through :func:`apply`: it finds the result
dtype as numpy does (``np.result_type``, NEP 50: a Python number adapts to the array, so
``float32_array * 2.5`` stays float32), the broadcast shape, and then runs one strided map kernel
(:mod:`tinynorm.kernels.cuda.elementwise`) that reads each operand through its own strides: broadcasting
and transposed or sliced inputs never make a copy. Scalars travel as kernel arguments.

Operands compute in the result dtype (float16 computes in float32 and rounds once, as numpy's float16
loops do). ``out=`` writes into an existing array or view (in-place ``a += b``); as in numpy the result
must cast to it under 'same_kind' rules. Host (numpy) arrays are refused: copy them to the device
explicitly with ``from_numpy``/``asarray``.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from .runtime.compiler import from_dtype

from ...kernels.cuda import elementwise as kernels
from . import creation, shape
from .array import CudaArray, check_array

__all__ = ["abs", "add", "clip", "cos", "equal", "erf", "exp", "gelu", "gelu_backward", "greater", "greater_equal",
           "less", "less_equal", "log", "logical_and", "logical_not", "logical_or", "maximum", "minimum", "multiply",
           "negative", "not_equal", "power", "relu", "relu_backward", "sign", "sqrt", "square", "subtract", "tanh",
           "true_divide", "where"]

Scalar = bool | int | float | np.generic
Operand = CudaArray | Scalar


def operand(value: Any, name: str) -> Operand:
    """``value`` as an elementwise operand: a CudaArray or a scalar (a 0-d numpy array becomes a numpy
    scalar). TypeError for anything else, host arrays included (they must be copied to the device)."""
    if isinstance(value, (CudaArray, bool, int, float, np.bool_, np.integer, np.floating)):
        return value
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        raise TypeError(f"{name}: got a numpy array of shape {value.shape}; CUDA arrays do not mix with host "
                        f"arrays, copy it to the device first (from_numpy / asarray)")
    raise TypeError(f"{name}: unsupported operand of type {type(value).__name__} "
                    f"(expected a CudaArray or a real number)")


def result_type(*operands: Operand) -> np.dtype:
    """numpy's result dtype of ``operands`` (Python numbers are weak: they take the arrays' kind).
    Arrays of one dtype (the usual case) skip ``np.result_type``, which costs about a microsecond."""
    dtypes = [o.dtype if isinstance(o, CudaArray) else o for o in operands]
    first = dtypes[0]
    if isinstance(first, np.dtype) and all(d is first for d in dtypes):
        return first
    return np.result_type(*dtypes)


@functools.cache  # asked at every elementwise op
def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a result of ``dtype`` is computed in: float16 in float32, everything else in itself."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def apply(op: Callable, operands: list[Operand], result: np.dtype, computes: list[np.dtype],
          out: CudaArray | None = None, name: str = "elementwise", casting: str = "same_kind") -> CudaArray:
    """``op(*operands)`` broadcast, into a new array of dtype ``result`` or into ``out``; operand k is
    cast to ``computes[k]`` before ``op`` sees it. ValueError when the shapes do not broadcast."""
    arrays = [o for o in operands if isinstance(o, CudaArray)]
    shapes = [a.shape for a in arrays] + ([out.shape] if out is not None else [])
    same = shapes and all(s == shapes[0] for s in shapes)  # the usual case, without numpy's general rule
    target = shapes[0] if same else np.broadcast_shapes(*shapes)
    if out is None:
        out = CudaArray.empty(target, result)
    else:
        if check_array(f"{name}: out", out).shape != target:
            raise ValueError(f"{name}: non-broadcastable output operand with shape {out.shape} doesn't match "
                             f"the broadcast shape {target}")
        if not np.can_cast(result, out.dtype, casting):
            raise TypeError(f"{name}: cannot cast the result from dtype {result} to the output's dtype "
                            f"{out.dtype} with casting rule {casting!r}")
    arguments = [_argument(o, target, out, np.dtype(c)) for o, c in zip(operands, computes)]
    kernels.map_strided(op, out.storage, out.offset, out.strides, out.shape, arguments,
                        [_numba_type(c) for c in computes])
    return out


@functools.cache
def _numba_type(dtype: Any) -> Any:
    """Numba's scalar type for a numpy dtype (cached: it is asked for at every elementwise op)."""
    return from_dtype(np.dtype(dtype))


def _argument(value: Operand, target: tuple, out: CudaArray, compute: np.dtype) -> Any:
    """A kernel operand: a scalar of the compute dtype, or (storage, offset, strides) of the array
    broadcast to ``target`` (copied first if it overlaps ``out`` other than element for element)."""
    if not isinstance(value, CudaArray):
        return compute.type(value)
    view = shape.broadcast_to(value, target)
    if view.storage is out.storage and (view.offset, view.strides) != (out.offset, out.strides):
        view = shape.broadcast_to(value.copy(), target)
    return view.storage, view.offset, view.strides


def assign(destination: CudaArray, value: Any) -> CudaArray:
    """Write ``value`` (a scalar, a CudaArray or a host array, broadcast) into the view ``destination``,
    converting to its dtype whatever the kinds (numpy's assignment casting)."""
    if isinstance(value, np.ndarray) and value.ndim:
        value = creation.from_numpy(value)
    value = operand(value, "assignment")
    return apply(kernels.identity, [value], destination.dtype, [destination.dtype], destination,
                 "assignment", casting="unsafe")


# -------------------------------------------------------------------------- dtype rules by family
def _arithmetic(operands: list[Operand], name: str) -> tuple[np.dtype, np.dtype]:
    result = result_type(*operands)
    return result, compute_dtype(result)


def _signed(operands: list[Operand], name: str) -> tuple[np.dtype, np.dtype]:
    result, compute = _arithmetic(operands, name)
    if result == np.bool_:
        raise TypeError(f"{name}: not supported for bool arrays (use logical_not / ~ to flip booleans)")
    return result, compute


def _division(operands: list[Operand], name: str) -> tuple[np.dtype, np.dtype]:
    result = result_type(*operands)
    result = np.dtype(np.float64) if result.kind in "biu" else result  # true division of integers
    return result, compute_dtype(result)


def _floating(operands: list[Operand], name: str) -> tuple[np.dtype, np.dtype]:
    result = np.result_type(result_type(*operands), np.float16)  # ints to the smallest float that holds them
    return result, compute_dtype(result)


def _comparison(operands: list[Operand], name: str) -> tuple[np.dtype, np.dtype]:
    return np.dtype(np.bool_), compute_dtype(result_type(*operands))


def _logical(operands: list[Operand], name: str) -> tuple[np.dtype, np.dtype]:
    kinds = [result_type(o) for o in operands]
    if any(k != np.bool_ for k in kinds):
        raise TypeError(f"{name}: expected bool operands, got dtypes {[str(k) for k in kinds]} "
                        f"(compare first, e.g. x > 0)")
    return np.dtype(np.bool_), np.dtype(np.bool_)


def _function(name: str, op: Callable, arity: int, rule: Callable) -> Callable:
    """The backend function ``name(*operands, out=None)`` computing ``op`` with the dtype ``rule``."""
    def function(*operands: Any, out: CudaArray | None = None) -> CudaArray:
        if len(operands) != arity:
            raise TypeError(f"{name}: expected {arity} operand(s), got {len(operands)}")
        values = [operand(v, name) for v in operands]
        result, compute = rule(values, name)
        return apply(op, values, result, [compute] * arity, out, name)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"numpy's ``{name}`` on CUDA arrays and scalars, broadcast; optionally into ``out``."
    return function


add = _function("add", kernels.add, 2, _arithmetic)
subtract = _function("subtract", kernels.subtract, 2, _arithmetic)
multiply = _function("multiply", kernels.multiply, 2, _arithmetic)
true_divide = _function("true_divide", kernels.true_divide, 2, _division)
power = _function("power", kernels.power, 2, _arithmetic)
maximum = _function("maximum", kernels.maximum, 2, _arithmetic)
minimum = _function("minimum", kernels.minimum, 2, _arithmetic)
equal = _function("equal", kernels.equal, 2, _comparison)
not_equal = _function("not_equal", kernels.not_equal, 2, _comparison)
less = _function("less", kernels.less, 2, _comparison)
less_equal = _function("less_equal", kernels.less_equal, 2, _comparison)
greater = _function("greater", kernels.greater, 2, _comparison)
greater_equal = _function("greater_equal", kernels.greater_equal, 2, _comparison)
logical_and = _function("logical_and", kernels.logical_and, 2, _logical)
logical_or = _function("logical_or", kernels.logical_or, 2, _logical)
logical_not = _function("logical_not", kernels.logical_not, 1, _logical)
negative = _function("negative", kernels.negative, 1, _signed)
abs = _function("abs", kernels.absolute, 1, _arithmetic)
square = _function("square", kernels.square, 1, _arithmetic)
exp = _function("exp", kernels.exp, 1, _floating)
log = _function("log", kernels.log, 1, _floating)
sqrt = _function("sqrt", kernels.sqrt, 1, _floating)
tanh = _function("tanh", kernels.tanh, 1, _floating)
cos = _function("cos", kernels.cos, 1, _floating)
erf = _function("erf", kernels.erf, 1, _floating)


def gelu(x: Any, approximate: str = "none") -> CudaArray:
    """GELU of ``x`` in one launch (tinynorm/kernels/cpu/activations.py has the formulas)."""
    value = operand(x, "gelu")
    result, compute = _floating([value], "gelu")
    forward, _ = kernels.gelu_functions(_numba_type(compute), approximate)
    return apply(forward, [value], result, [compute], None, "gelu")


def gelu_backward(grad: Any, x: Any, approximate: str = "none") -> CudaArray:
    """``grad * GELU'(x)``, broadcast, in one launch."""
    values = [operand(grad, "gelu_backward"), operand(x, "gelu_backward")]
    result, compute = _floating(values, "gelu_backward")
    _, backward = kernels.gelu_functions(_numba_type(compute), approximate)
    return apply(backward, values, result, [compute, compute], None, "gelu_backward")


def relu(x: Any) -> CudaArray:
    """0 where ``x < 0``, else ``x``, in ``x``'s dtype, in one launch (NaN and -0.0 pass)."""
    value = operand(x, "relu")
    result, compute = _signed([value], "relu")
    return apply(kernels.relu, [value, compute.type(0)], result, [compute, compute], None, "relu")


def relu_backward(grad: Any, out: Any) -> CudaArray:
    """0 where :func:`relu`'s output ``out <= 0``, else ``grad``, broadcast, in one launch."""
    values = [operand(grad, "relu_backward"), operand(out, "relu_backward")]
    result, compute = _arithmetic(values, "relu_backward")
    return apply(kernels.relu_backward, [*values, compute.type(0)], result, [compute] * 3, None, "relu_backward")


def sign(x: Any, out: CudaArray | None = None) -> CudaArray:
    """-1, 0 or 1 by the sign of ``x`` (NaN stays NaN), in ``x``'s dtype (numpy's ``sign``)."""
    value = operand(x, "sign")
    result, compute = _signed([value], "sign")
    return apply(kernels.sign, [value, compute.type(1)], result, [compute, compute], out, "sign")


def clip(a: Any, a_min: Any, a_max: Any, out: CudaArray | None = None) -> CudaArray:
    """``a`` limited to [a_min, a_max]; a None bound is no bound; NaN stays NaN (numpy's ``clip``)."""
    values = [operand(v, "clip") for v in (a, a_min, a_max) if v is not None]
    result, compute = _arithmetic(values, "clip")
    lowest, highest = _range(compute)
    low = lowest if a_min is None else operand(a_min, "clip")
    high = highest if a_max is None else operand(a_max, "clip")
    return apply(kernels.clip, [values[0], low, high], result, [compute] * 3, out, "clip")


def where(condition: Any, x: Any, y: Any) -> CudaArray:
    """``x`` where ``condition`` (cast to bool) holds, else ``y``, all broadcast (numpy's 3-argument ``where``)."""
    values = [operand(v, "where") for v in (condition, x, y)]
    result, compute = _arithmetic(values[1:], "where")
    return apply(kernels.where, values, result, [np.dtype(np.bool_), compute, compute], None, "where")


def _range(dtype: np.dtype) -> tuple[Any, Any]:
    """The lowest and highest values of ``dtype`` (infinities for floats): an unbounded clip's ends."""
    if dtype.kind == "f":
        return -np.inf, np.inf
    if dtype.kind == "b":
        return False, True
    info = np.iinfo(dtype)
    return info.min, info.max
