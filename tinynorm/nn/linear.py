"""``Linear``, ``Bilinear``, ``Identity``, ``Flatten`` and ``Unflatten``."""
from __future__ import annotations

import math
from typing import Any

from .. import creation
from ..ops import flatten, linear
from ..ops.linalg import bilinear
from ..ops.dims import normalize_dim
from ..tensor import Tensor
from . import init
from .module import Module, Parameter


class Linear(Module):
    """y = x W^T + b, with PyTorch's default initialisation.

    W and b are drawn from U(-1/sqrt(in_features), 1/sqrt(in_features)) (kaiming_uniform_ with
    a=sqrt(5), exactly what PyTorch does).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, dtype: object = None) -> None:
        super().__init__()
        for name, value in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"Linear: {name} must be a positive int, got {value!r}")
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(creation.empty(out_features, in_features, dtype=dtype))
        self.bias = Parameter(creation.empty(out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"



class Bilinear(Module):
    """y = x1^T A x2 + b, with PyTorch's initialisation U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, *,
                 dtype: object = None) -> None:
        super().__init__()
        for name, value in (("in1_features", in1_features), ("in2_features", in2_features),
                            ("out_features", out_features)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"Bilinear: {name} must be a positive int, got {value!r}")
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(creation.empty(out_features, in1_features, in2_features, dtype=dtype))
        self.bias = Parameter(creation.empty(out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")

class Identity(Module):
    """Returns its input (a placeholder, e.g. for 'no normalization')."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return x


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into the dims ``unflattened_size`` (whose product is that dim's size; one
    entry may be -1), e.g. (N, 50) -> (N, 2, 5, 5): the inverse of ``Flatten``."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(unflattened_size).__name__}")
        for index, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(size).__name__} at pos {index}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        d = normalize_dim(self.dim, input.ndim, "unflatten")
        known = math.prod(n for n in self.unflattened_size if n != -1)
        if (-1 not in self.unflattened_size and known != input.shape[d]) or (known and input.shape[d] % known):
            raise RuntimeError(f"unflatten: Provided sizes {list(self.unflattened_size)} don't multiply up to the "
                               f"size of dim {self.dim} ({input.shape[d]}) in the input tensor")
        return input.reshape(tuple(input.shape[:d]) + tuple(self.unflattened_size) + tuple(input.shape[d + 1:]))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
