"""Order statistics and NaN-aware reductions: ``median``, ``quantile``, ``nansum``, ``nanmean``,
``aminmax``, and ``diff``.

All are compositions of differentiable ops. A median or quantile is read from the input sorted along
its dim (the backend's stable sort, NaN last), so its gradient is the sort's and goes to the elements
it was read from. A NaN in a row makes its median and quantiles NaN, as in PyTorch; the median's index
is then that of the row's first NaN, else the lower middle element's (for equal values, the first
of them in the sorted order).
"""
from __future__ import annotations

import builtins
import math
from typing import Any

from .. import dtypes, return_types
from ..tensor import Tensor
from . import arithmetic, comparison, elementwise, pointwise, reductions
from .dims import normalize_dim
from .selection import gather
from .shape import cat, narrow, reshape, squeeze, unsqueeze
from .sorting import sort


def _nonempty(input: Tensor, dim: int, op: str) -> None:  # noqa: A002
    if input.ndim and input.shape[dim] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size.")


def median(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A002
    """The lower median: of all elements (a 0-d tensor; NaN for an empty tensor), or along ``dim`` as
    ``(values, indices)``, the indices saying where each median lies in ``input``."""
    if dim is None:
        if input.numel() == 0:
            return Tensor._from_array(input._backend.full((), math.nan, dtype=input.dtype), input.device)
        return median(reshape(input, (-1,)), 0).values
    d = normalize_dim(dim, input.ndim, "median")
    _nonempty(input, d, "median")
    x = input if input.ndim else reshape(input, (1,))
    order = sort(x, d).indices
    size = x.shape[d]
    nans = reductions.sum(pointwise.isnan(x), d, keepdim=True)
    rank = elementwise.where(comparison.gt(nans, 0), arithmetic.sub(size, nans), (size - 1) // 2)
    indices = gather(order, d, rank)
    values = gather(x, d, indices)
    if not keepdim or input.ndim == 0:
        values, indices = squeeze(values, d), squeeze(indices, d)
    return return_types.median(values, indices)


INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile(input: Tensor, q: Any, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles (a number, or a 1-D tensor of them, in [0, 1]) of all elements or along
    ``dim``, between neighbouring sorted values as ``interpolation`` says. A tensor ``q`` puts its dim
    first in the result."""
    if input.dtype.kind != "f":
        raise RuntimeError(f"quantile() input tensor must be either float or double dtype, got "
                           f"{dtypes.type_name(input.dtype)}")
    if interpolation not in INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of {', '.join(INTERPOLATIONS[:-1])} or "
                           f"{INTERPOLATIONS[-1]}, but got {interpolation}")
    levels = q.tolist() if isinstance(q, Tensor) else q
    if isinstance(q, Tensor) and q.ndim > 1:
        raise RuntimeError(f"quantile() q must be a scalar or 1D tensor, got {q.ndim}D")
    levels = [levels] if not isinstance(levels, list) else levels
    if not builtins.all(0 <= level <= 1 for level in levels):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    x, d = (reshape(input, (-1,)), 0) if dim is None else (input, normalize_dim(dim, input.ndim, "quantile"))
    x = x if x.ndim else reshape(x, (1,))
    size = x.shape[d]
    if size == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    ordered = sort(x, d).values
    last = narrow(ordered, d, size - 1, 1)  # NaN sorts last: a row with one ends with it, and gives it
    has_nan = pointwise.isnan(last)          # as every quantile (its gradient too, as PyTorch's)
    answers = [elementwise.where(has_nan, last, _between(ordered, d, level * (size - 1), interpolation))
               for level in levels]  # each keeps the reduced dim, of size 1
    several = isinstance(q, Tensor) and q.ndim == 1
    result = cat([unsqueeze(answer, 0) for answer in answers], 0) if several else answers[0]
    lead = result.shape[:1] if several else ()
    if dim is None:
        return reshape(result, lead + ((1,) * input.ndim if keepdim else ()))
    return result if keepdim and input.ndim else squeeze(result, d + len(lead))


def _between(ordered: Tensor, d: int, position: float, interpolation: str) -> Tensor:
    """The value at fractional ``position`` along ``d`` of the sorted ``ordered`` (kept as a size-1 dim)."""
    below, above = math.floor(position), math.ceil(position)
    if interpolation == "nearest":
        below = above = builtins.round(position)  # half to even, as PyTorch
    elif interpolation == "lower":
        above = below
    elif interpolation == "higher":
        below = above
    low, high = narrow(ordered, d, below, 1), narrow(ordered, d, above, 1)
    if below == above:
        return low
    if interpolation == "midpoint":
        return pointwise.lerp(low, high, 0.5)
    return pointwise.lerp(low, high, position - below)


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """The sum with NaN counted as zero."""
    if input.dtype.kind == "f":
        input = elementwise.where(pointwise.isnan(input), 0.0, input)
    return reductions.sum(input, dim, keepdim, dtype=dtype)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """The mean of the elements that are not NaN (NaN where all are)."""
    if input.dtype.kind != "f":
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{dtypes.type_name(input.dtype)}")
    counted = reductions.sum(bitwise_not_nan(input), dim, keepdim)
    return arithmetic.div(nansum(input, dim, keepdim, dtype=dtype), counted)


def bitwise_not_nan(input: Tensor) -> Tensor:  # noqa: A002
    return comparison.eq(input, input)  # only NaN differs from itself


def aminmax(input: Tensor, *, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A002
    """``(min, max)`` of all elements or along ``dim``, as ``amin`` and ``amax``."""
    if input.numel() == 0 and (dim is None or input.shape[normalize_dim(dim, input.ndim, "aminmax")] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if dim is None:
        low, high = reductions.amin(input), reductions.amax(input)
        if keepdim:
            low, high = (reshape(t, (1,) * input.ndim) for t in (low, high))
        return return_types.aminmax(low, high)
    return return_types.aminmax(reductions.amin(input, dim, keepdim), reductions.amax(input, dim, keepdim))


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,  # noqa: A002
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``x[i + 1] - x[i]``; for bools, ``x[i + 1] != x[i]``),
    of ``input`` with ``prepend`` and ``append`` joined at its ends."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim(dim, input.ndim, "diff")
    for name, value in (("prepend", prepend), ("append", append)):
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"diff(): argument '{name}' must be Tensor, not {type(value).__name__}")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        later, earlier = narrow(x, d, 1, size - 1), narrow(x, d, 0, size - 1)
        x = comparison.ne(later, earlier) if x.dtype.kind == "b" else arithmetic.sub(later, earlier)
    return x
