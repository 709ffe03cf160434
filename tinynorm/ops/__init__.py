"""Differentiable operations, grouped by family; each file holds forwards and backwards side by side."""
from .arithmetic import add, div, mul, neg, pow, sub
from .comparison import compare
from .dropout import dropout
from .elementwise import abs, clamp, exp, gelu, log, maximum, minimum, relu, rsqrt, sigmoid, sqrt, tanh, where
from .linalg import linear, matmul
from .losses import cross_entropy, mse_loss, nll_loss
from .reductions import amax, amin, argmax, argmin, max, mean, min, std, sum, var
from .shape import (
    cast, cat, chunk, clone, expand, flatten, getitem, narrow, permute, reshape, split, squeeze, stack, t, to_device,
    transpose, unbind, unsqueeze, view,
)
from .softmax import log_softmax, softmax

__all__ = [
    "add", "sub", "mul", "div", "pow", "neg", "compare", "dropout",
    "abs", "clamp", "exp", "gelu", "log", "maximum", "minimum", "relu", "rsqrt", "sigmoid", "sqrt", "tanh", "where",
    "linear", "matmul", "cross_entropy", "mse_loss", "nll_loss",
    "amax", "amin", "argmax", "argmin", "max", "mean", "min", "std", "sum", "var",
    "cast", "cat", "chunk", "clone", "expand", "flatten", "getitem", "narrow", "permute", "reshape", "split", "squeeze",
    "stack", "t", "to_device", "transpose", "unbind", "unsqueeze", "view", "log_softmax", "softmax",
]
