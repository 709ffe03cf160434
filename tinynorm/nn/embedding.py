"""``Embedding``: a lookup table of learned vectors, indexed by integer ids."""
from __future__ import annotations

from .. import creation
from ..ops import getitem
from ..tensor import Tensor
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


def embedding(ids: Tensor, weight: Tensor) -> Tensor:
    """``weight[ids]``: ids of any shape give vectors of shape ids.shape + (embedding_dim,)."""
    data = ids.data if isinstance(ids, Tensor) else ids
    if data.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids must be integers, got dtype {data.dtype}")
    if data.size and (data.min() < 0 or data.max() >= weight.shape[0]):
        raise IndexError(f"embedding: ids must be in [0, {weight.shape[0] - 1}], got values in [{data.min()}, {data.max()}]")
    return getitem(weight, ids)
