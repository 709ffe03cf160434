"""``Linear``, ``Identity`` and ``Flatten``."""
from __future__ import annotations

import math

from .. import creation
from ..ops import flatten, linear
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
