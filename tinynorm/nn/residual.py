"""Residual connections with the norm before or after: the Pre-LN / Post-LN choice (Xiong et al. 2020).

``Residual(sublayer, norm, placement)`` computes
* ``'pre'``:  x + sublayer(norm(x))   -- the norm sits inside the residual branch; the identity path
  from input to output is never normalized, so gradients reach early layers undamped;
* ``'post'``: norm(x + sublayer(x))   -- the original Transformer's order; every layer's output
  passes through a norm, which makes gradients near the output large at initialisation and is why
  Post-LN needs learning-rate warmup.
"""
from __future__ import annotations

from ..tensor import Tensor
from .linear import Identity
from .module import Module

PLACEMENTS = ("pre", "post")


def check_placement(placement: str) -> str:
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be 'pre' (x + f(norm(x))) or 'post' (norm(x + f(x))), got {placement!r}")
    return placement


class Residual(Module):
    """A residual connection around ``sublayer`` with ``norm`` placed 'pre' or 'post' (None: no norm)."""

    def __init__(self, sublayer: Module, norm: Module | None = None, placement: str = "pre") -> None:
        super().__init__()
        self.placement = check_placement(placement)
        self.sublayer = sublayer
        self.norm = norm if norm is not None else Identity()

    def forward(self, x: Tensor) -> Tensor:
        if self.placement == "pre":
            return x + self.sublayer(self.norm(x))
        return self.norm(x + self.sublayer(x))

    def extra_repr(self) -> str:
        return f"placement={self.placement!r}"
