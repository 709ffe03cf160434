"""``Embedding``: a lookup table of learned vectors, indexed by integer ids."""
from __future__ import annotations

from typing import Any

from .. import creation
from ..ops.shape import check_indices, take_rows
from ..tensor import Tensor, on_device
from . import init
from .module import Module, Parameter


class Embedding(Module):
    """Row ``i`` of ``weight`` (num_embeddings, embedding_dim) for each id ``i``; N(0, 1) init as PyTorch."""

    def __init__(self, num_embeddings: int, embedding_dim: int, *, dtype: object = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter(creation.empty(num_embeddings, embedding_dim, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)

    def forward(self, ids: Tensor) -> Tensor:
        return embedding(ids, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


def embedding(ids: Any, weight: Tensor) -> Tensor:
    """``weight[ids]``: ids of any shape give vectors of shape ids.shape + (embedding_dim,).

    ``ids`` is an integer tensor on ``weight``'s device, or host data (a list, a numpy array), which is
    copied there.
    """
    ids = on_device(ids, weight.device, "embedding", "ids are", "the weight is")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids must be integers, got dtype {ids.dtype}")
    check_indices(weight._backend, ids.array, weight.shape[0], "embedding", "ids")
    return take_rows(weight, ids)
