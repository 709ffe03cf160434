"""Elementwise kernels: one strided map kernel per (operation, operand kinds), built by a cached factory.

Every elementwise operation is a ``@cuda.jit(device=True)`` function of one to three values (``add``,
``exp``, ``where``, ...). :func:`map_kernel` wraps one in a grid-stride kernel that, for each C-order
position of ``shape``, loads each operand through its own ``offset`` and ``strides``, applies the
function and stores the result through the output's ``offset`` and ``strides``. That one kernel covers
contiguous arrays, transposed and sliced views, broadcasting (stride 0) and in-place updates of a view.
:func:`flat_map_kernel` is its variant for the usual case, whole C-contiguous arrays, where position
``i`` is element ``i`` of every storage; the host wrapper picks it when it applies.

An operand is either an array (its 1-D storage, offset, strides) or a scalar passed as a kernel
argument (no host-to-device copy for ``x * 2``); each operand position gets its own loader, so
``x - 1`` and ``1 - x`` are two variants of the same kernel. Each loaded value is cast to the
operand's compute type before the operation, so mixed inputs (``bool`` mask times ``float32``
gradient) need no converted copy and float32 work never promotes to float64.

The host wrapper :func:`map_strided` works on plain Numba device arrays.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...backends.cuda.runtime.compiler import config, cuda, from_dtype, types

from ..cpu.activations import INV_SQRT_2, INV_SQRT_2PI, SQRT_2_OVER_PI, TANH_CUBIC
from ...backends.cuda.runtime.launch import jit, launch
from ...backends.cuda.array import contiguous_strides
from .strided import blocks_for, collapse_dims, strided_offset, threads_for

MAX_OPERANDS = 3


# ------------------------------------------------------------------------------ the operations
@cuda.jit(device=True)
def identity(a):
    return a


@cuda.jit(device=True)
def negative(a):
    return -a


@cuda.jit(device=True)
def absolute(a):
    return abs(a)


@cuda.jit(device=True)
def square(a):
    return a * a


if config.ENABLE_CUDASIM:
    # The simulator runs these in Python, whose math module raises for exp(1000), log(0) and sqrt(-1)
    # where the GPU returns IEEE's inf, -inf and nan; numpy's functions return them, as the GPU does
    # (in float64, as math computes).
    def _ieee(function):
        def device_function(a):
            with np.errstate(all="ignore"):
                return function(np.float64(a))
        return cuda.jit(device=True)(device_function)

    exp, log, sqrt = _ieee(np.exp), _ieee(np.log), _ieee(np.sqrt)
else:
    @cuda.jit(device=True)
    def exp(a):
        return math.exp(a)

    @cuda.jit(device=True)
    def log(a):
        return math.log(a)

    @cuda.jit(device=True)
    def sqrt(a):
        return math.sqrt(a)


@cuda.jit(device=True)
def tanh(a):
    return math.tanh(a)


@cuda.jit(device=True)
def cos(a):
    return math.cos(a)


@cuda.jit(device=True)
def erf(a):
    return math.erf(a)


@cuda.jit(device=True)
def logical_not(a):
    return not a


@cuda.jit(device=True)
def sign(a, one):
    """-1, 0 or 1 in ``a``'s type (``one`` is 1 of that type: there is no typed literal); NaN stays NaN."""
    if a > 0:
        return one
    if a < 0:
        return -one
    return a - a  # 0 for zeros (and +0 for -0, as numpy), NaN for NaN


@cuda.jit(device=True)
def add(a, b):
    return a + b


@cuda.jit(device=True)
def subtract(a, b):
    return a - b


@cuda.jit(device=True)
def multiply(a, b):
    return a * b


@cuda.jit(device=True)
def true_divide(a, b):
    return a / b


@cuda.jit(device=True)
def power(a, b):
    return a**b


@cuda.jit(device=True)
def maximum(a, b):
    """The larger value; NaN if either is NaN (numpy's ``maximum``)."""
    return a if a > b or a != a else b  # noqa: PLR0124  (a != a: a is NaN; also types for ints)


@cuda.jit(device=True)
def minimum(a, b):
    """The smaller value; NaN if either is NaN (numpy's ``minimum``)."""
    return a if a < b or a != a else b  # noqa: PLR0124


@cuda.jit(device=True)
def equal(a, b):
    return a == b


@cuda.jit(device=True)
def not_equal(a, b):
    return a != b


@cuda.jit(device=True)
def less(a, b):
    return a < b


@cuda.jit(device=True)
def less_equal(a, b):
    return a <= b


@cuda.jit(device=True)
def greater(a, b):
    return a > b


@cuda.jit(device=True)
def greater_equal(a, b):
    return a >= b


@cuda.jit(device=True)
def logical_and(a, b):
    return a and b


@cuda.jit(device=True)
def logical_or(a, b):
    return a or b


@cuda.jit(device=True)
def clip(a, low, high):
    """``a`` limited to [low, high]; NaN stays NaN (numpy's ``clip`` = minimum(maximum(a, low), high))."""
    return minimum(maximum(a, low), high)


@cuda.jit(device=True)
def where(condition, a, b):
    return a if condition else b


@cuda.jit(device=True)
def relu(a, zero):
    """0 where ``a < 0``, else ``a``: NaN and -0.0 pass (PyTorch's ``clamp_min(a, 0)``)."""
    return zero if a < zero else a


@cuda.jit(device=True)
def relu_backward(grad, out, zero):
    """0 where the ReLU's output ``out <= 0``, else ``grad`` (PyTorch's ``threshold_backward``)."""
    return zero if out <= zero else grad


# ---------------------------------------------------------------------------------- fused GELU
@functools.cache
def gelu_functions(compute: types.Type, approximate: str) -> tuple[Callable, Callable]:
    """GELU(x) and ``grad * GELU'(x)`` as device functions on values of the Numba type ``compute``.

    The formulas are those of tinynorm/kernels/cpu/activations.py (``approximate`` 'none': erf,
    'tanh': the tanh approximation); as array arithmetic they take 5 and 11 launches, as one map kernel
    each they take one. Every constant is a ``compute`` value: a Python float would make float32 work
    float64.
    """
    if approximate == "tanh":
        @cuda.jit(device=True)
        def forward(x):
            inner = compute(SQRT_2_OVER_PI) * (x + compute(TANH_CUBIC) * x * x * x)
            return compute(0.5) * x * (compute(1) + math.tanh(inner))

        @cuda.jit(device=True)
        def backward(grad, x):
            t = math.tanh(compute(SQRT_2_OVER_PI) * (x + compute(TANH_CUBIC) * x * x * x))
            d_inner = compute(SQRT_2_OVER_PI) * (compute(1) + compute(3 * TANH_CUBIC) * x * x)
            half, one = compute(0.5), compute(1)
            return grad * (half * (one + t) + half * x * (one - t * t) * d_inner)
    else:
        @cuda.jit(device=True)
        def forward(x):
            return compute(0.5) * x * (compute(1) + math.erf(x * compute(INV_SQRT_2)))

        @cuda.jit(device=True)
        def backward(grad, x):
            cdf = compute(0.5) * (compute(1) + math.erf(x * compute(INV_SQRT_2)))
            pdf = compute(INV_SQRT_2PI) * math.exp(compute(-0.5) * x * x)
            return grad * (cdf + x * pdf)
    return forward, backward


# ----------------------------------------------------------------------------- kernel factory
@functools.cache
def _with_three_arguments(op: Callable, arity: int) -> Callable:
    """``op`` of ``arity`` values as a function of three (the map kernel always passes three)."""
    if arity == 1:
        @cuda.jit(device=True)
        def apply(a, b, c):
            return op(a)
    elif arity == 2:
        @cuda.jit(device=True)
        def apply(a, b, c):
            return op(a, b)
    else:
        apply = op
    return apply


@functools.cache
def _loader(scalar: bool, cast: types.Type) -> Callable:
    """A device function giving an operand's value at C-order position ``index``, cast to ``cast``:
    the scalar itself, or the array element found through the operand's offset and strides."""
    if scalar:
        @cuda.jit(device=True)
        def load(value, offset, strides, shape, index):
            return cast(value)
    else:
        @cuda.jit(device=True)
        def load(storage, offset, strides, shape, index):
            return cast(storage[strided_offset(index, offset, strides, shape)])
    return load


@functools.cache
def map_kernel(op: Callable, arity: int, operands: tuple[tuple[bool, types.Type], ...]) -> Any:
    """The kernel ``out[i] = op(a[i], b[i], c[i])`` over every C-order position ``i`` of ``shape``.

    ``operands`` describes the three operand positions: (is a scalar argument, Numba type to cast
    the value to). Positions past ``arity`` are unused padding (pass scalar ``False``).
    Kernel arguments: ``out, out_offset, out_strides, shape, size`` then ``(value or storage, offset,
    strides)`` for each of the three operands; all strides tuples have ``len(shape)`` entries.
    """
    apply = _with_three_arguments(op, arity)
    load_a, load_b, load_c = (_loader(scalar, cast) for scalar, cast in operands)

    @jit
    def kernel(out, out_offset, out_strides, shape, size,
               a, a_offset, a_strides, b, b_offset, b_strides, c, c_offset, c_strides):
        for i in range(cuda.grid(1), size, cuda.gridsize(1)):
            value = apply(load_a(a, a_offset, a_strides, shape, i),
                          load_b(b, b_offset, b_strides, shape, i),
                          load_c(c, c_offset, c_strides, shape, i))
            out[strided_offset(i, out_offset, out_strides, shape)] = value

    return kernel


@functools.cache
def _flat_loader(scalar: bool, cast: types.Type) -> Callable:
    """:func:`_loader` for :func:`flat_map_kernel`: the scalar itself, or element ``index`` of the storage."""
    if scalar:
        @cuda.jit(device=True)
        def load(value, index):
            return cast(value)
    else:
        @cuda.jit(device=True)
        def load(storage, index):
            return cast(storage[index])
    return load


@functools.cache
def flat_map_kernel(op: Callable, arity: int, operands: tuple[tuple[bool, types.Type], ...]) -> Any:
    """:func:`map_kernel` for the usual case, where every array is read and written in C order from
    the start of its storage (one shape, contiguous, nothing broadcast): ``out[i] = op(a[i], b[i], c[i])``
    for every ``i`` of ``out``. ``operands`` as for :func:`map_kernel`; kernel arguments ``out, a, b, c``.

    The same values as the strided kernel, without its index arithmetic per element and with 4 kernel
    arguments instead of 14: a launch's host time grows with its arguments (see :func:`map_strided`).
    """
    apply = _with_three_arguments(op, arity)
    load_a, load_b, load_c = (_flat_loader(scalar, cast) for scalar, cast in operands)

    @jit
    def kernel(out, a, b, c):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = apply(load_a(a, i), load_b(b, i), load_c(c, i))

    return kernel


@functools.cache
def arange_kernel(cast: types.Type) -> Any:
    """The kernel ``out[i] = start + i * step`` with ``i`` cast to ``cast`` (the output's type), so a
    float32 range is computed in float32."""
    @jit
    def kernel(out, start, step):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = start + cast(i) * step

    return kernel


# -------------------------------------------------------------------------------- host wrappers
Operand = Any
"""An array operand ``(storage, offset, strides)`` (1-D Numba device array, element offset and strides
as ints), or a scalar (a numpy scalar of the type the operation computes in)."""


def map_strided(op: Callable, out: Any, out_offset: int, out_strides: Sequence[int], shape: Sequence[int],
                operands: Sequence[Operand], casts: Sequence[types.Type]) -> None:
    """Write ``op(*operands)`` at every position of ``shape`` into the view (``out`` storage,
    ``out_offset``, ``out_strides``), reading each array operand through its own offset and strides
    (stride 0 broadcasts) and casting each operand's values to ``casts[k]`` first.

    The caller guarantees that no array operand overlaps ``out`` except at identical positions
    (an in-place ``a += b`` is fine, writing a view onto a shifted view of itself is not).

    When every view is its storage read in C order (``out`` whole, nothing offset, transposed or
    broadcast), :func:`flat_map_kernel` does the work: the same values for less host time (measured:
    docs/benchmarks.md).
    """
    if not 1 <= len(operands) <= MAX_OPERANDS or len(casts) != len(operands):
        raise ValueError(f"map_strided: expected 1 to {MAX_OPERANDS} operands with one cast each, "
                         f"got {len(operands)} operands and {len(casts)} casts")
    size = math.prod(shape)
    if size == 0:
        return
    padding = MAX_OPERANDS - len(operands)
    padded = [*operands, *[False] * padding]  # unused positions: a scalar False, never read
    kinds = tuple((not isinstance(operand, tuple), cast) for operand, cast in
                  zip(padded, [*casts, *[types.boolean] * padding]))
    if _in_c_order(out, out_offset, out_strides, tuple(shape), size, operands):
        values = [operand[0] if isinstance(operand, tuple) else operand for operand in padded]
        launch(flat_map_kernel(op, len(operands), kinds), blocks_for(size), threads_for(size), (out, *values))
        return
    arrays = [k for k, operand in enumerate(operands) if isinstance(operand, tuple)]
    shape, strides = collapse_dims(tuple(shape), [tuple(out_strides)] + [operands[k][2] for k in arrays])
    zeros = (0,) * len(shape)
    arguments = []
    for k, operand in enumerate(padded):
        if k in arrays:
            storage, offset, _ = operand
            arguments += [storage, offset, strides[1 + arrays.index(k)]]
        else:
            arguments += [operand, 0, zeros]
    kernel = map_kernel(op, len(operands), kinds)
    launch(kernel, blocks_for(size), threads_for(size), (out, out_offset, strides[0], shape, size, *arguments))


def _in_c_order(out: Any, out_offset: int, out_strides: Sequence[int], shape: tuple, size: int,
                operands: Sequence[Operand]) -> bool:
    """Whether position ``i`` of ``shape`` (``size`` positions) is element ``i`` of ``out`` and of every
    array operand's storage, and ``out`` has no other elements."""
    c_order = contiguous_strides(shape)
    return (out_offset == 0 and tuple(out_strides) == c_order and out.size == size
            and all(operand[1] == 0 and tuple(operand[2]) == c_order
                    for operand in operands if isinstance(operand, tuple)))


def arange_into(out: Any, start: Any, step: Any) -> None:
    """Fill the 1-D ``out`` with ``start + i * step`` (``start`` and ``step`` of ``out``'s dtype)."""
    if out.size:
        kernel = arange_kernel(from_dtype(out.dtype))
        launch(kernel, blocks_for(out.size), threads_for(out.size), (out, start, step))
