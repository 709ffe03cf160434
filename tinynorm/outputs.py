"""PyTorch's ``out=`` for the top-level functions: ``tinynorm.matmul(a, b, out=c)`` writes the result
into ``c`` and returns it.

The ops themselves return new tensors; :func:`accepting_out` wraps the ``tinynorm.<name>`` functions
of :data:`FUNCTIONS` (those whose PyTorch counterpart returns one tensor and takes ``out=``) so that
they take it too. The result is computed as usual, checked to be castable to ``out``'s dtype, and
written by :func:`tinynorm.creation.write_out`: ``out`` must have the result's shape or no elements,
and no argument may require grad while grad mode is on (PyTorch's rules).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from . import dtypes
from .creation import write_out

FUNCTIONS = (
    "abs absolute acos acosh add addcdiv addcmul addmm all amax amin any arccos arccosh arcsin arcsinh arctan "
    "arctan2 arctanh argmax argmin asin asinh atan atan2 atanh baddbmm bitwise_and bitwise_not bitwise_or "
    "bitwise_xor bmm bucketize cat ceil clamp clamp_max clamp_min clip concat concatenate cos cosh cumprod cumsum "
    "deg2rad diag diff div divide dot eq erf erfinv exp exp2 expm1 fix float_power floor floor_divide fmod frac "
    "gather ge greater greater_equal gt hstack hypot index_select isneginf isposinf le lerp less less_equal log "
    "log1p log2 logaddexp logical_and logical_not logical_or logical_xor logsumexp lt masked_select matmul "
    "maximum mean minimum mm mul multiply mv nan_to_num nanmean nansum ne neg negative nonzero norm not_equal "
    "outer pow prod quantile rad2deg reciprocal remainder round row_stack rsqrt searchsorted sgn sigmoid sign sin "
    "sinh sqrt square stack std sub subtract sum take_along_dim tan tanh tril triu true_divide trunc var vstack "
    "where xlogy"
).split()


def accepting_out(function: Callable) -> Callable:
    """``function`` taking PyTorch's keyword ``out=``."""
    name = function.__name__

    @functools.wraps(function)
    def with_out(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        if out is None:
            return result
        if not dtypes.can_cast(result.dtype, out.dtype):
            raise RuntimeError(f"result type {dtypes.type_name(result.dtype)} can't be cast to the desired output "
                               f"type {dtypes.type_name(out.dtype)}")
        return write_out(out, result, name)

    return with_out


def install(namespace: dict) -> None:
    """Replace each function of :data:`FUNCTIONS` in ``namespace`` (tinynorm's) by its ``out=`` form."""
    for name in FUNCTIONS:
        namespace[name] = accepting_out(namespace[name])
