"""The Tensor methods that are doorways to ``tinynorm.ops``, family by family.

Most of PyTorch's Tensor methods are its functions with the tensor first: ``x.gather(1, i)`` is
``torch.gather(x, 1, i)``. Here such a method *is* the op: ``Tensor.gather`` is
``tinynorm.ops.gather``, attached to the class by :func:`install` when ``tinynorm`` is imported
(the ops build on ``Tensor``, so the class cannot name them when it is defined). That keeps
``tensor.py`` about what a tensor is, keeps each signature in one place, and costs no extra call.
Methods whose arguments differ from the function's (``x.reshape(2, 3)``, ``x.where(cond, y)``) are
small functions below, and every in-place method ``x.op_(...)`` writes ``op``'s result into ``x``
through :func:`tinynorm.ops.inplace.modify`, which applies autograd's rules for in-place writes.
"""
from __future__ import annotations

from typing import Any, Callable

from . import creation, dtypes, tensor_operators
from .ops import (
    arithmetic, bitwise, comparison, division, elementwise, inplace, linalg, matrix, pointwise, rearrange, reductions,
    products, scan, selection, sorting, special, statistics, trigonometric,
)
from .ops import shape as shape_ops  # the module; ``shape`` is the methods' argument, as in PyTorch
from .ops.dims import normalize_dim
from .ops.softmax import log_softmax, logsumexp, softmax
from .random_fills import FILLS
from .tensor import Tensor


def _shape_args(args: tuple) -> tuple:
    """Accept both ``x.reshape(2, 3)`` and ``x.reshape((2, 3))``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


# ------------------------------------------------------------------ methods with their own arguments
def reshape(self: Tensor, *shape: Any) -> Tensor:
    """This tensor in another shape (one size may be -1, inferred from the others): a view of the
    same memory when the strides allow it, else a copy."""
    return shape_ops.reshape(self, _shape_args(shape))


def view(self: Tensor, *shape: Any) -> Tensor:
    """A tensor with the same data in another shape: ``x.view(2, 3)`` or ``x.view((2, 3))``.

    The result shares this tensor's memory (writing into one changes the other) and has the same
    number of elements; one size may be -1, inferred from the others. A view needs strides that
    allow it: each new dim must lie within one old dim or span old dims that are contiguous with
    each other. When they do not (e.g. ``x.t().view(-1)``), ``view`` raises ``RuntimeError``; then use
    :meth:`reshape`, which returns a view when it can and copies only when it must.
    ``view(dtype)`` (the same bytes as another dtype) is not supported: it raises ``TypeError``;
    ``x.to(dtype)`` converts the values instead.
    """
    if len(shape) == 1 and isinstance(shape[0], dtypes.DType):
        raise TypeError(f"view(dtype): reinterpreting a tensor's bytes as {shape[0]} is not supported; "
                        f"use .to({shape[0]}) to convert its values")
    return shape_ops.view(self, _shape_args(shape))


def view_as(self: Tensor, other: Tensor) -> Tensor:
    return shape_ops.view(self, other.array.shape)


def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return shape_ops.reshape(self, other.array.shape)


def permute(self: Tensor, *dims: Any) -> Tensor:
    return shape_ops.permute(self, _shape_args(dims))


def expand(self: Tensor, *sizes: Any) -> Tensor:
    return shape_ops.expand(self, _shape_args(sizes))


def expand_as(self: Tensor, other: Tensor) -> Tensor:
    return shape_ops.expand(self, other.array.shape)


def flip(self: Tensor, *dims: Any) -> Tensor:
    return rearrange.flip(self, _shape_args(dims))


def tile(self: Tensor, *dims: Any) -> Tensor:
    return rearrange.tile(self, _shape_args(dims))


def where(self: Tensor, condition: Any, other: Any) -> Tensor:
    """``self`` where ``condition`` holds, else ``other`` (``torch.where(condition, self, other)``)."""
    return elementwise.where(condition, self, other)


def contiguous(self: Tensor, memory_format: Any = None) -> Tensor:
    """This tensor if it is contiguous, else a contiguous copy (recorded by autograd)."""
    return self if self.is_contiguous() else shape_ops.clone(self, contiguous=True)


def clone(self: Tensor, *, memory_format: Any = None) -> Tensor:
    return shape_ops.clone(self)


def new_tensor(self: Tensor, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new tensor of ``data``, with this tensor's dtype and device unless given."""
    from .tensor import tensor
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new(self: Tensor, *data: Any) -> Tensor:
    """PyTorch's legacy ``x.new(...)``: ``x.new(2, 3)`` (or a Size) a zero-filled tensor of that size,
    ``x.new([1, 2])`` a tensor of those values, ``x.new()`` an empty one; this tensor's dtype and device."""
    from .size import Size
    from .tensor import tensor
    if len(data) == 1 and isinstance(data[0], Size):
        data = tuple(data[0])
    if all(isinstance(n, int) and not isinstance(n, bool) for n in data):
        return creation.zeros(data or (0,), dtype=self.dtype, device=self.device)
    if len(data) == 1:
        return tensor(data[0], dtype=self.dtype, device=self.device)
    raise TypeError(f"new(): expected sizes (ints) or one sequence of values, got "
                    f"({', '.join(type(d).__name__ for d in data)})")


def _new(make: Callable) -> Callable:
    def method(self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
               **kwargs: Any) -> Tensor:
        return make(*size, **kwargs, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)
    method.__doc__ = f"A new tensor like ``{make.__name__}``, with this tensor's dtype and device unless given."
    return method


def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A new tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device unless given."""
    return creation.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def msort(self: Tensor) -> Tensor:
    """The values sorted along dim 0 (``sort(self, 0).values``)."""
    return sorting.sort(self, 0).values


# -------------------------------------------------------------------------- memory and type
def stride(self: Tensor, dim: Any = None) -> Any:
    """The step in elements between neighbours along each dim (a tuple), or along ``dim``."""
    strides, _ = self._backend.layout(self.array)
    if dim is None:
        return strides
    dim = normalize_dim(dim, self.ndim, "stride")
    if self.ndim == 0:
        raise IndexError(f"stride(): Dimension specified as {dim} but tensor has no dimensions")
    return strides[dim]


def storage_offset(self: Tensor) -> int:
    """Where this tensor's first element lies in the memory it shares with its views, in elements."""
    return self._backend.layout(self.array)[1]


def data_ptr(self: Tensor) -> int:
    """The address of the first element (the device address for a CUDA tensor)."""
    return self._backend.data_pointer(self.array)


def is_complex(self: Tensor) -> bool:
    """False: tinynorm has no complex dtypes."""
    return False


def is_signed(self: Tensor) -> bool:
    """Whether the dtype holds negative numbers (floats and signed integers)."""
    return self.dtype.is_signed


def is_inference(self: Tensor) -> bool:
    """False: tinynorm has no inference tensors (``inference_mode`` runs as ``no_grad``)."""
    return False


# -------------------------------------------------------------------------------- in place
def _in_place(op: Callable, name: str) -> Callable:
    """The method ``x.name(*args, **kwargs)``: ``op(x, *args, **kwargs)`` written into ``x``."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if not kwargs:
            return inplace.modify(self, op, *args)
        names = tuple(kwargs)

        def compute(target: Tensor, *values: Any) -> Tensor:  # keyword tensors stay visible to autograd
            return op(target, *values[:len(args)], **dict(zip(names, values[len(args):])))

        return inplace.modify(self, compute, *args, *kwargs.values())

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{op.__name__}`` of this tensor, written into it (returns the tensor)."
    return method


def float_power_(self: Tensor, exponent: Any) -> Tensor:
    """``float_power`` in place: the tensor must be float64, as the result is."""
    if self.dtype != dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {dtypes.type_name(self.dtype)} but the "
                           f"operation's result requires dtype Double")
    return inplace.modify(self, pointwise.float_power, exponent)


# --------------------------------------------------------------------------------- the table
METHODS: dict[str, Callable] = {
    # arithmetic and pointwise math
    "add": arithmetic.add, "sub": arithmetic.sub, "subtract": arithmetic.sub, "mul": arithmetic.mul,
    "multiply": arithmetic.mul, "div": division.div, "divide": division.div, "true_divide": arithmetic.div,
    "floor_divide": division.floor_divide, "remainder": division.remainder, "fmod": division.fmod,
    "pow": arithmetic.pow, "neg": arithmetic.neg, "negative": arithmetic.neg, "float_power": pointwise.float_power,
    "exp": elementwise.exp, "log": elementwise.log, "sqrt": elementwise.sqrt, "rsqrt": elementwise.rsqrt,
    "abs": elementwise.abs, "absolute": elementwise.abs, "tanh": elementwise.tanh, "sigmoid": elementwise.sigmoid,
    "relu": elementwise.relu, "clamp": elementwise.clamp, "clip": elementwise.clamp,
    "maximum": elementwise.maximum, "minimum": elementwise.minimum,
    "sin": pointwise.sin, "cos": pointwise.cos, "tan": pointwise.tan, "log1p": pointwise.log1p,
    "expm1": pointwise.expm1, "log2": pointwise.log2, "exp2": pointwise.exp2, "erf": pointwise.erf,
    "floor": pointwise.floor, "ceil": pointwise.ceil, "trunc": pointwise.trunc, "fix": pointwise.trunc,
    "round": pointwise.round, "frac": pointwise.frac, "sign": pointwise.sign, "reciprocal": pointwise.reciprocal,
    "square": pointwise.square, "lerp": pointwise.lerp, "nan_to_num": pointwise.nan_to_num,
    "isnan": pointwise.isnan, "isinf": pointwise.isinf, "isfinite": pointwise.isfinite,
    "isposinf": pointwise.isposinf, "isneginf": pointwise.isneginf,
    "softmax": softmax, "log_softmax": log_softmax, "clamp_min": pointwise.clamp_min, "clamp_max": pointwise.clamp_max,
    "addcmul": pointwise.addcmul, "addcdiv": pointwise.addcdiv, "logaddexp": pointwise.logaddexp,
    "xlogy": pointwise.xlogy, "sgn": pointwise.sgn, "erfinv": special.erfinv,
    "asin": trigonometric.asin, "arcsin": trigonometric.asin, "acos": trigonometric.acos,
    "arccos": trigonometric.acos, "atan": trigonometric.atan, "arctan": trigonometric.atan,
    "atan2": trigonometric.atan2, "arctan2": trigonometric.atan2, "sinh": trigonometric.sinh,
    "cosh": trigonometric.cosh, "asinh": trigonometric.asinh, "arcsinh": trigonometric.asinh,
    "acosh": trigonometric.acosh, "arccosh": trigonometric.acosh, "atanh": trigonometric.atanh,
    "arctanh": trigonometric.atanh, "hypot": trigonometric.hypot, "deg2rad": trigonometric.deg2rad,
    "rad2deg": trigonometric.rad2deg,
    # comparison and logic
    "eq": comparison.eq, "ne": comparison.ne, "lt": comparison.lt, "le": comparison.le, "gt": comparison.gt,
    "ge": comparison.ge, "greater": comparison.gt, "greater_equal": comparison.ge, "less": comparison.lt,
    "less_equal": comparison.le, "not_equal": comparison.ne, "isclose": comparison.isclose,
    "allclose": comparison.allclose, "equal": comparison.equal,
    "bitwise_and": bitwise.bitwise_and, "bitwise_or": bitwise.bitwise_or, "bitwise_xor": bitwise.bitwise_xor,
    "bitwise_not": bitwise.bitwise_not, "logical_and": bitwise.logical_and, "logical_or": bitwise.logical_or,
    "logical_xor": bitwise.logical_xor, "logical_not": bitwise.logical_not,
    # reductions and scans
    "sum": reductions.sum, "mean": reductions.mean, "var": reductions.var, "std": reductions.std,
    "prod": reductions.prod, "amax": reductions.amax, "amin": reductions.amin, "max": reductions.max,
    "min": reductions.min, "argmax": reductions.argmax, "argmin": reductions.argmin, "any": reductions.any,
    "all": reductions.all, "count_nonzero": reductions.count_nonzero, "logsumexp": logsumexp,
    "norm": linalg.norm, "cumsum": scan.cumsum, "cumprod": scan.cumprod, "cummax": scan.cummax,
    "cummin": scan.cummin, "median": statistics.median,
    "quantile": statistics.quantile, "nansum": statistics.nansum, "nanmean": statistics.nanmean,
    "aminmax": statistics.aminmax, "diff": statistics.diff,
    # sorting and counting
    "sort": sorting.sort, "argsort": sorting.argsort, "topk": sorting.topk, "unique": sorting.unique,
    "bincount": sorting.bincount,
    # matrices
    "matmul": linalg.matmul, "mm": linalg.mm, "bmm": linalg.bmm, "mv": linalg.mv, "dot": linalg.dot,
    "outer": linalg.outer, "addmm": linalg.addmm, "baddbmm": linalg.baddbmm, "tril": matrix.tril,
    "triu": matrix.triu, "diag": matrix.diag, "t": shape_ops.t, "diagonal": matrix.diagonal, "trace": matrix.trace,
    "cross": products.cross, "kron": products.kron,
    # selection
    "gather": selection.gather, "scatter": selection.scatter, "scatter_add": selection.scatter_add,
    "index_select": selection.index_select, "take_along_dim": selection.take_along_dim,
    "masked_fill": selection.masked_fill, "nonzero": selection.nonzero, "where": where,
    "masked_select": selection.masked_select, "argwhere": selection.argwhere, "index_add": selection.index_add,
    "index_copy": selection.index_copy, "index_fill": selection.index_fill,
    # shape
    "reshape": reshape, "view": view, "view_as": view_as, "reshape_as": reshape_as, "permute": permute,
    "expand": expand, "expand_as": expand_as, "broadcast_to": rearrange.broadcast_to, "flatten": shape_ops.flatten,
    "unflatten": rearrange.unflatten, "transpose": shape_ops.transpose, "swapaxes": shape_ops.transpose,
    "unsqueeze": shape_ops.unsqueeze, "squeeze": shape_ops.squeeze, "narrow": shape_ops.narrow,
    "unbind": shape_ops.unbind, "split": shape_ops.split, "chunk": shape_ops.chunk, "movedim": rearrange.movedim,
    "moveaxis": rearrange.movedim,
    "flip": flip, "fliplr": rearrange.fliplr, "flipud": rearrange.flipud, "roll": rearrange.roll,
    "repeat": rearrange.repeat, "tile": tile, "repeat_interleave": rearrange.repeat_interleave,
    "contiguous": contiguous, "clone": clone, "unfold": rearrange.unfold, "rot90": rearrange.rot90,
    "split_with_sizes": shape_ops.split, "msort": msort,
    # new tensors like this one
    "new": new, "new_tensor": new_tensor, "new_zeros": _new(creation.zeros), "new_ones": _new(creation.ones),
    "new_empty": _new(creation.empty), "new_full": new_full,
    # memory and type
    "stride": stride, "storage_offset": storage_offset, "data_ptr": data_ptr, "is_complex": is_complex,
    "is_signed": is_signed, "is_inference": is_inference,
}

PROPERTIES: dict[str, property] = {
    "itemsize": property(lambda self: self.array.dtype.itemsize, doc="The size of one element in bytes."),
    "nbytes": property(lambda self: self.array.dtype.itemsize * self.array.size,
                       doc="The size of the elements in bytes (of this view, as PyTorch counts)."),
}

# In-place variants of the methods above: ``x.sin_()`` writes ``sin(x)`` into ``x``. (add_, mul_, exp_, ...,
# copy_, fill_, normal_, uniform_ and bernoulli_ have direct forms in tensor_operators.py; the other random
# fills come from random_fills.FILLS.)
IN_PLACE = [
    "sin", "cos", "tan", "log1p", "expm1", "log2", "exp2", "erf", "floor", "ceil", "trunc", "fix", "round", "frac",
    "sign", "reciprocal", "square", "lerp", "nan_to_num", "fmod", "remainder", "floor_divide", "true_divide",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "logical_and", "logical_or", "logical_xor",
    "logical_not", "cumsum", "cumprod", "tril", "triu", "scatter", "scatter_add", "addmm", "baddbmm",
    "addcmul", "addcdiv", "xlogy", "sgn", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "atan2", "arctan2",
    "sinh", "cosh", "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "hypot", "deg2rad", "rad2deg",
    "index_add", "index_copy", "index_fill", "erfinv",
]


# In-place view methods: ``x.unsqueeze_(0)`` gives ``x`` itself the view's shape (its memory is unchanged).
VIEWS_IN_PLACE = ["unsqueeze", "squeeze", "t", "transpose", "swapaxes"]


def _view_in_place(view: Callable, name: str) -> Callable:
    def method(self: Any, *args: Any) -> Any:
        return inplace.view_(self, view, *args)

    method.__name__ = name
    method.__doc__ = f"``{name[:-1]}`` of this tensor, in place: the tensor itself takes the new shape."
    return method


def install(cls: type) -> None:
    """Attach the methods of :data:`METHODS`, the properties of :data:`PROPERTIES`, the in-place
    variants of :data:`IN_PLACE`, the random fills of :mod:`tinynorm.random_fills` and the operators of
    :mod:`tinynorm.tensor_operators` to ``cls``."""
    tensor_operators.install(cls)
    for name, function in METHODS.items():
        setattr(cls, name, function)
    for name, attribute in PROPERTIES.items():
        setattr(cls, name, attribute)
    for name, fill in FILLS.items():
        setattr(cls, name, fill)
    for name in IN_PLACE:
        setattr(cls, name + "_", _in_place(METHODS[name], name + "_"))
    for name in VIEWS_IN_PLACE:
        setattr(cls, name + "_", _view_in_place(METHODS[name], name + "_"))
    cls.float_power_ = float_power_

