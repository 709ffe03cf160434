"""In-place ops: ``x.add_(y)``, ``x += y``, ``x[i] = v``, ``x.copy_(y)``, ``x.zero_()`` ...

An in-place op writes into ``x``'s memory, so ``x`` keeps its identity and every tensor sharing that
memory (its views, its base, ``x.detach()``) sees the change; the version counter of that memory goes
up by one. When nothing needs recording, the write is direct (``x -= lr * g`` under ``no_grad`` runs
numpy's ``subtract(x, g, out=x)``: no new array for ``x``).

When the write is recorded (grad mode on, and ``x`` or an operand requires grad), autograd must stay
right, as in PyTorch:

- A leaf that requires grad (a parameter) cannot be written, nor can a view of one: its gradient would
  no longer describe the values it holds. Under ``no_grad`` both can (that is how parameters are
  updated).
- The op is computed out of place, recording its node as usual, and the result is copied into ``x``,
  whose ``grad_fn`` becomes that node: ``x``'s history now ends with the write. If the op saved ``x``'s
  own values for its backward, it keeps a copy, since the write is about to overwrite them.
- Written through a view, the write also changes the view's base. The base's new node, ``CopySlices``,
  sends the gradient of the viewed region to the op and the rest to the base's old history; the view is
  then derived again from the base, so both go on with the new history.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..autograd import grad_mode
from ..autograd.function import Context, Function
from ..backends import is_basic_index
from ..random import numpy_generator
from ..tensor import Tensor, on_device
from . import arithmetic, elementwise
from .shape import raw_index

_OUT_OF_PLACE = {"add": arithmetic.add, "subtract": arithmetic.sub, "multiply": arithmetic.mul,
                 "true_divide": arithmetic.div, "power": arithmetic.pow, "negative": arithmetic.neg,
                 "exp": elementwise.exp, "log": elementwise.log, "sqrt": elementwise.sqrt, "abs": elementwise.abs,
                 "tanh": elementwise.tanh}


# ----------------------------------------------------------------------------- the mechanism
def modify(target: Tensor, compute: Callable[..., Tensor], *args: Any) -> Tensor:
    """Write ``compute(target, *args)`` (an out-of-place op of the same shape) into ``target``."""
    if _records(target, args):
        return _recorded_write(target, compute(target, *args))
    _check_writable(target)
    result = compute(target, *args)
    _check_result(target, result.dtype, result.shape)
    target.array[...] = result.array
    target._bump_version()
    return target


def view_(target: Tensor, view: Callable[..., Tensor], *args: Any) -> Tensor:
    """An in-place view method (``unsqueeze_``, ``squeeze_``, ``t_``, ``transpose_``): ``target`` takes the
    shape and strides of ``view(target, *args)``, keeping its identity and its memory; recorded and
    versioned as PyTorch does (a leaf that requires grad is refused)."""
    recorded = _records(target, ())
    result = view(target, *args)
    target.array = result.array
    if recorded:
        target.grad_fn = result.grad_fn
    if target._view is not None:  # a view stays a view of its base, one step further
        target._view = result._view
    target._bump_version()
    return target


def _records(target: Tensor, args: tuple) -> bool:
    """Whether a write into ``target`` must be recorded; raises for the writes autograd forbids."""
    if not grad_mode._state.enabled:
        return False
    base = target._base
    if target.requires_grad and target.grad_fn is None and base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    return target.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args)


def _check_writable(target: Tensor) -> None:
    """Refuse a write through an expanded view (one memory element shown at several places)."""
    if any(stride == 0 and n > 1 for n, stride in zip(target.shape, target.array.strides)):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation."
        )


def _check_result(target: Tensor, dtype: np.dtype, shape: tuple) -> None:
    if not dtypes.can_cast(dtype, target.dtype):
        raise RuntimeError(f"result type {dtypes.type_name(dtype)} can't be cast to the desired output type "
                           f"{dtypes.type_name(target.dtype)}")
    if tuple(shape) != target.shape:
        raise RuntimeError(f"output with shape {list(target.shape)} doesn't match the broadcast shape {list(shape)}")


def _recorded_write(target: Tensor, result: Tensor) -> Tensor:
    """Copy ``result`` (computed out of place from ``target``, and recorded) into ``target``, and give
    ``target`` (and its base, for a view) the new history."""
    _check_writable(target)
    _check_result(target, result.dtype, result.shape)
    if result.grad_fn is not None:
        _keep_own_copies(result.grad_fn, target)
    target.array[...] = result.array
    target._bump_version()
    if target._base is None:
        target.grad_fn, target.requires_grad = result.grad_fn, result.requires_grad
        return target
    base, steps = target._base, target._view_steps
    written = CopySlices.apply(base, result, steps)
    base.grad_fn, base.requires_grad = written.grad_fn, True
    view = base
    for function, view_args, view_kwargs in steps:
        view = function.apply(view, *view_args, **view_kwargs)
    target.grad_fn, target.requires_grad = view.grad_fn, True
    return target


def _keep_own_copies(node: Context, target: Tensor) -> None:
    """Let ``node`` keep private copies of the arrays it saved from ``target``'s memory, which the write
    is about to change (its own version check then no longer concerns them)."""
    counter = target._counter()
    owned = {position for position, saved_counter, _ in node.saved_versions if saved_counter is counter}
    if owned:
        node._saved = tuple(node.xp.copy(a) if i in owned else a for i, a in enumerate(node._saved))
        node.saved_versions = tuple(v for v in node.saved_versions if v[0] not in owned)


def _replay(xp: Any, array: Any, steps: tuple) -> Any:
    """The view of ``array`` that ``steps`` (a view's derivation from its base) make."""
    for function, view_args, view_kwargs in steps:
        array = function.view(xp, array, *view_args, **view_kwargs)
    return array


class CopySlices(Function):
    """The base of a view that was written in place: inside the view, the write's result; elsewhere, the
    base's old values. Forward only hands the base's array on (the write already went through the view)."""

    backward_name = "CopySlices"

    @staticmethod
    def forward(ctx: Context, base: Any, values: Any, steps: tuple) -> Any:
        ctx.steps = steps
        return base

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        xp = ctx.xp
        grad_base = xp.copy(grad)
        _replay(xp, grad_base, ctx.steps)[...] = 0
        return grad_base, _replay(xp, grad, ctx.steps)


# ----------------------------------------------------------------------------- the ops
def arithmetic_(target: Tensor, name: str, other: Any, alpha: Any = 1) -> Tensor:
    """``target <op>= other`` for ``name`` one of the backend's add, subtract, multiply, true_divide, power."""
    if alpha != 1:
        other = other * alpha
    if _records(target, (other,)):
        return _recorded_write(target, _OUT_OF_PLACE[name](target, other))
    _check_writable(target)
    dtype = dtypes.result_type(target, other)
    if name == "true_divide" and dtype.kind != "f":
        dtype = dtypes.get_default_dtype()
    operand = _operand(target, other, dtype)
    if getattr(operand, "shape", ()) not in ((), target.shape):
        _check_result(target, dtype, np.broadcast_shapes(target.shape, operand.shape))
    else:
        _check_result(target, dtype, target.shape)
    try:
        getattr(target._backend, name)(target.array, operand, out=target.array)
    except ValueError as error:
        if "negative integer powers" in str(error):
            raise RuntimeError("Integers to negative integer powers are not allowed.") from None
        raise
    target._bump_version()
    return target


def unary_(target: Tensor, name: str) -> Tensor:
    """``target = <op>(target)`` for ``name`` a backend function such as exp, log, sqrt, tanh, abs."""
    if _records(target, ()):
        return _recorded_write(target, _OUT_OF_PLACE[name](target))
    _check_writable(target)
    if name not in ("abs", "negative") and target.dtype.kind != "f":
        _check_result(target, dtypes.get_default_dtype(), target.shape)
    if name == "negative" and target.dtype.kind == "b":
        arithmetic.neg(target)  # raises PyTorch's message
    getattr(target._backend, name)(target.array, out=target.array)
    target._bump_version()
    return target


def clamp_(target: Tensor, low: Any, high: Any) -> Tensor:
    return modify(target, elementwise.clamp, low, high)


def masked_fill_(target: Tensor, mask: Any, value: Any) -> Tensor:
    """``target`` with ``value`` where ``mask`` (a bool tensor broadcastable to it) is True."""
    mask = on_device(mask, target.device, "masked_fill_", "the mask is", "the tensor is")
    if mask.dtype.kind != "b":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    return modify(target, lambda t, v: elementwise.where(mask, _fill_value(t, v), t), value)


def _fill_value(target: Tensor, value: Any) -> Any:
    """A fill value in ``target``'s dtype: a number, or a 0-d tensor (kept, for its gradient)."""
    if isinstance(value, Tensor):
        return value if value.dtype == target.dtype else value.to(target.dtype)
    return np.asarray(value).astype(target.dtype)


def copy_(target: Tensor, src: Any) -> Tensor:
    """Copy ``src`` into ``target``, broadcast to its shape and cast to its dtype (any cast, as in PyTorch)."""
    if isinstance(src, Tensor):
        if src.device != target.device:
            src = src.to(target.device)
    else:
        src = on_device(src, target.device, "copy_", "the source is", "the tensor is")
    if _records(target, (src,)):
        return _recorded_write(target, CopyFrom.apply(target, src))
    _check_writable(target)
    try:
        target.array[...] = src.array
    except ValueError:
        raise RuntimeError(f"copy_: the source of shape {list(src.shape)} cannot be broadcast to the tensor's "
                           f"shape {list(target.shape)}") from None
    target._bump_version()
    return target


class CopyFrom(Function):
    """``target.copy_(src)`` out of place: ``src`` broadcast and cast to ``target``'s shape and dtype. The
    old values of ``target`` get a zero gradient, as PyTorch's ``fill_`` and ``copy_`` give them."""

    backward_name = "CopyBackwards"

    @staticmethod
    def forward(ctx: Context, target: Any, src: Any) -> Any:
        out = ctx.xp.empty(target.shape, dtype=target.dtype)
        try:
            out[...] = src
        except ValueError:
            raise RuntimeError(f"copy_: the source of shape {list(src.shape)} cannot be broadcast to the "
                               f"tensor's shape {list(target.shape)}") from None
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        return ctx.xp.zeros_like(grad), grad


def fill_(target: Tensor, value: Any) -> Tensor:
    """Every element of ``target`` set to ``value`` (a number, or a 0-d tensor)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               f"dimensions.")
        return copy_(target, value)
    if not isinstance(value, (bool, int, float, np.generic)):
        raise TypeError(f"fill_(): value must be a number or a 0-d tensor, got {type(value).__name__}")
    if _records(target, ()):
        return _recorded_write(target, CopyFrom.apply(target, np.asarray(value, dtype=target.dtype)))
    _check_writable(target)
    target.array[...] = value
    target._bump_version()
    return target


def normal_(target: Tensor, mean: float, std: float, generator: Any) -> Tensor:
    """Fill with samples of N(mean, std²) from ``generator`` (default: the global one)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    values = numpy_generator(generator, target.device, "normal_").normal(mean, std, target.shape)
    return copy_(target, values.astype(target.dtype))


def uniform_(target: Tensor, low: float, high: float, generator: Any) -> Tensor:
    """Fill with samples of U[low, high) from ``generator`` (default: the global one)."""
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}")
    values = numpy_generator(generator, target.device, "uniform_").uniform(low, high, target.shape)
    return copy_(target, values.astype(target.dtype))


def bernoulli_(target: Tensor, p: float, generator: Any) -> Tensor:
    """Fill with 1 with probability ``p``, else 0."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    values = numpy_generator(generator, target.device, "bernoulli_").random(target.shape) < p
    return copy_(target, values.astype(target.dtype))


def setitem(target: Tensor, index: Any, value: Any) -> None:
    """``target[index] = value``: ``value`` (a tensor, number or host array) broadcast to ``target[index]``."""
    raw = raw_index(index, target)
    if not isinstance(value, Tensor):
        value = on_device(value, target.device, "setitem", "the value is", "the tensor is")
    elif value.device != target.device:
        raise RuntimeError(f"setitem: the value is on {value.device} but the tensor is on {target.device}; move it "
                           f"with .to('{target.device}')")
    recording = grad_mode._state.enabled and (target.requires_grad or value.requires_grad)
    if recording and is_basic_index(raw):
        copy_(target[index], value)  # a view: the write goes through it, and is recorded there
        return
    if recording and _records(target, (value,)):
        _recorded_write(target, IndexPut.apply(target, value, raw))
        return
    _check_writable(target)
    _write(target.array, raw, value.array)
    target._bump_version()


def _write(array: Any, index: Any, values: Any) -> None:
    """``array[index] = values``, with PyTorch's error when ``values`` does not fit."""
    try:
        array[index] = values
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(array[index].shape)}") from None


class IndexPut(Function):
    """``x[index] = value`` out of place, for an advanced index (integer arrays, masks)."""

    backward_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, value: Any, index: Any) -> Any:
        ctx.index = index
        out = ctx.xp.copy(x)
        _write(out, index, value)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        grad_x = ctx.xp.copy(grad)
        grad_x[ctx.index] = 0
        return grad_x, grad[ctx.index]


def _operand(target: Tensor, other: Any, dtype: np.dtype) -> Any:
    """``other`` as an array or number for the backend's in-place ``out=`` functions, in ``dtype``."""
    if isinstance(other, Tensor):
        on_device(other, target.device, "in-place op", "the operand is", "the tensor is")
        return other.array if other.dtype == dtype else other.array.astype(dtype)
    if isinstance(other, (bool, int, float)):
        return other
    if isinstance(other, np.generic):
        return other.item()
    return on_device(other, target.device, "in-place op", "the operand is", "the tensor is").array.astype(dtype)
