"""Activation and dropout modules: thin wrappers around the functions in ``tinynorm.ops``."""
from __future__ import annotations

from .._checks import check_number
from ..ops import dropout, gelu, log_softmax, relu, sigmoid, softmax, tanh
from ..tensor import Tensor
from .module import Module


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return relu(x)


class GELU(Module):
    """GELU; ``approximate='tanh'`` for the tanh approximation used by GPT-2."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return tanh(x)


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return sigmoid(x)


class Softmax(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return softmax(x, self.dim)


class LogSoftmax(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return log_softmax(x, self.dim)


class Dropout(Module):
    """Zeroes elements with probability p in training mode (scaling the rest by 1/(1-p)); identity in eval."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= check_number("Dropout", "p", p) <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
