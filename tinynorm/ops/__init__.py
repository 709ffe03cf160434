"""Differentiable operations, grouped by family; each file holds forwards and backwards side by side."""
from .arithmetic import add, div as true_divide, mul, neg, pow, sub
from .bitwise import (
    bitwise_and, bitwise_not, bitwise_or, bitwise_xor, logical_and, logical_not, logical_or, logical_xor,
)
from .comparison import (
    allclose, compare, eq, equal, ge, greater, greater_equal, gt, isclose, le, less, less_equal, lt, ne, not_equal,
)
from .division import div, floor_divide, fmod, remainder
from .dropout import dropout
from .einsum import einsum
from .elementwise import abs, clamp, exp, gelu, log, maximum, minimum, relu, rsqrt, sigmoid, sqrt, tanh
from .linalg import addmm, baddbmm, bmm, cdist, dot, linear, matmul, mm, mv, norm, outer
from .losses import cross_entropy, nll_loss
from .pointwise_losses import mse_loss
from .matrix import diag, diagonal, trace, tril, tril_indices, triu, triu_indices
from .pointwise import (
    addcdiv, addcmul, ceil, clamp_max, clamp_min, cos, erf, exp2, expm1, fix, float_power, floor, frac, isfinite, isinf,
    isnan, isneginf, isposinf, lerp, log1p, log2, logaddexp, nan_to_num, reciprocal, round, sgn, sign, sin, square, tan,
    trunc, xlogy,
)
from .products import cross, kron, tensordot
from .rearrange import (
    atleast_1d, atleast_2d, broadcast_to, concat, concatenate, flip, fliplr, flipud, hstack, meshgrid, moveaxis,
    movedim, repeat_interleave, roll, rot90, row_stack, tile, unflatten, unfold, vstack,
)
from .reductions import (
    all, amax, amin, any, argmax, argmin, count_nonzero, max, mean, min, prod, std, std_mean, sum, var, var_mean,
)
from .scan import cummax, cummin, cumprod, cumsum
from .selection import (
    argwhere, gather, index_add, index_copy, index_fill, index_select, masked_fill, masked_select, nonzero, scatter,
    scatter_add, take_along_dim, where,
)
from .shape import (
    cast, cat, chunk, clone, expand, flatten, getitem, narrow, permute, reshape, split, squeeze, stack, t, to_device,
    transpose, unbind, unsqueeze, view,
)
from .softmax import log_softmax, logsumexp, softmax
from .special import erfinv
from .sorting import argsort, bincount, bucketize, searchsorted, sort, topk, unique
from .statistics import aminmax, diff, median, nanmean, nansum, quantile
from .trigonometric import (
    acos, acosh, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, asin, asinh, atan, atan2, atanh, cosh,
    deg2rad, hypot, rad2deg, sinh,
)

# PyTorch's other names for some of these.
absolute, clip, divide, multiply, negative, subtract, swapaxes = abs, clamp, div, mul, neg, sub, transpose

__all__ = [
    "absolute", "clip", "divide", "multiply", "negative", "subtract", "swapaxes",
    "add", "sub", "mul", "div", "true_divide", "pow", "neg", "floor_divide", "fmod", "remainder", "dropout",
    "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "logical_and", "logical_not", "logical_or",
    "logical_xor",
    "compare", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
    "allclose", "isclose", "equal",
    "abs", "clamp", "exp", "gelu", "log", "maximum", "minimum", "relu", "rsqrt", "sigmoid", "sqrt", "tanh", "where",
    "ceil", "cos", "erf", "exp2", "expm1", "fix", "float_power", "floor", "frac", "isfinite", "isinf", "isnan",
    "isneginf", "isposinf", "lerp", "log1p", "log2", "nan_to_num", "reciprocal", "round", "sign", "sin", "square",
    "tan", "trunc", "addcdiv", "addcmul", "clamp_max", "clamp_min", "logaddexp", "sgn", "xlogy",
    "acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "asin", "asinh", "atan",
    "atan2", "atanh", "cosh", "deg2rad", "hypot", "rad2deg", "sinh",
    "addmm", "baddbmm", "bmm", "cdist", "dot", "einsum", "linear", "matmul", "mm", "mv", "norm", "outer",
    "diag", "tril", "triu", "cross_entropy", "mse_loss", "nll_loss",
    "all", "amax", "amin", "any", "argmax", "argmin", "count_nonzero", "max", "mean", "min", "prod", "std", "sum",
    "var", "std_mean", "var_mean", "cumprod", "cumsum", "logsumexp", "argsort", "bincount", "sort", "topk", "unique",
    "gather", "index_select", "masked_fill", "nonzero", "scatter", "scatter_add", "take_along_dim",
    "argwhere", "index_add", "index_copy", "index_fill", "masked_select",
    "aminmax", "diff", "median", "nanmean", "nansum", "quantile", "diagonal", "trace", "tril_indices", "triu_indices",
    "bucketize", "searchsorted", "erfinv", "cummax", "cummin", "cross", "kron", "tensordot", "rot90", "unfold",
    "atleast_1d", "atleast_2d", "broadcast_to", "concat", "concatenate", "flip", "fliplr", "flipud", "hstack",
    "meshgrid", "moveaxis", "movedim", "repeat_interleave", "roll", "row_stack", "tile", "unflatten", "vstack",
    "cast", "cat", "chunk", "clone", "expand", "flatten", "getitem", "narrow", "permute", "reshape", "split", "squeeze",
    "stack", "t", "to_device", "transpose", "unbind", "unsqueeze", "view", "log_softmax", "softmax",
]
