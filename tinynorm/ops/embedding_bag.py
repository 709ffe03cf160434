"""``F.embedding_bag``: the sum, mean or max of the embedding vectors of each bag of ids, as
``torch.nn.functional.embedding_bag`` computes it, without materializing per-bag lists.

Bags are the rows of a 2-D ``input``, or the runs of a 1-D ``input`` that ``offsets`` start (the
text-classification idiom: every sentence's token ids concatenated, their start positions in
``offsets``). The looked-up vectors are gathered into a (bags, longest bag, D) block padded with a
neutral value (0 for sum and mean, -inf for max) and reduced over the bag; an empty bag gives zeros,
``padding_idx`` ids are left out (and not counted by 'mean'), and ``per_sample_weights`` scales each
vector before a 'sum'. The plan of positions is made on the host (on the CUDA device, ``offsets`` are
read back). Gradients are those of the lookup, gather and reduction.
"""
from __future__ import annotations

import numpy as np

from .._checks import check_tensor
from ..tensor import Tensor
from .elementwise import where
from .lookup import embedding
from .shape import cat

MODES = ("sum", "mean", "max")


def _bags(ids: Tensor, offsets: Tensor | None, include_last_offset: bool) -> tuple[np.ndarray, int]:
    """(bags, longest) positions into the flat ids (``len(ids)`` marks padding), and the flat id count."""
    if ids.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        bags, length = ids.shape
        return np.arange(bags * length).reshape(bags, length), bags * length
    if ids.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {ids.ndim}")
    if offsets is None or check_tensor("embedding_bag", "offsets", offsets).ndim != 1:
        raise ValueError(f"offsets has to be a 1D Tensor but got {None if offsets is None else offsets.ndim}")
    total = ids.shape[0]
    starts = offsets.numpy().astype(np.int64)
    if starts.size and starts[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {starts[0]}")
    ends = np.append(starts[1:], total) if not include_last_offset else starts[1:]
    starts = starts if not include_last_offset else starts[:-1]
    if np.any(ends < starts) or (ends.size and ends[-1] > total):
        raise RuntimeError(f"embedding_bag: offsets must be non-decreasing and at most the number of ids ({total}), "
                           f"got {offsets.numpy().tolist()}")
    longest = int((ends - starts).max()) if starts.size else 0
    positions = starts[:, None] + np.arange(longest)[None, :]
    return np.where(positions < ends[:, None], positions, total), total


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """One vector per bag of ids: the sum, mean or max of the bag's rows of ``weight``."""
    check_tensor("embedding_bag", "input", input)
    check_tensor("embedding_bag", "weight", weight)
    if mode not in MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                      "on GitHub.")
        if tuple(check_tensor("embedding_bag", "per_sample_weights", per_sample_weights).shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, "
                             f"then it must have the same shape as the input ({list(input.shape)})")
    index, total = _bags(input, offsets, include_last_offset)
    flat = input.reshape(-1)
    vectors = embedding(flat, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
    if per_sample_weights is not None:
        vectors = vectors * per_sample_weights.reshape(-1, 1)
    counted = flat != padding_idx if padding_idx is not None else None
    fill = -np.inf if mode == "max" else 0.0
    if counted is not None:
        vectors = where(counted.reshape(-1, 1), vectors, fill)
    neutral = Tensor._from_array(weight._backend.full((1, weight.shape[1]), fill, dtype=vectors.dtype),
                                 weight.device)
    gathered = cat([vectors, neutral])[weight._backend.from_numpy(index)]  # (bags, longest, D)
    if mode == "max":
        if index.shape[1] == 0:
            return gathered.sum(1)
        best = gathered.amax(1)
        return where(best == -np.inf, 0.0, best)  # an empty bag gives zeros
    summed = gathered.sum(1)
    if mode == "sum":
        return summed
    members = np.arange(total + 1) < total if counted is None else np.append(counted.numpy(), False)
    sizes = np.maximum(members[index].sum(1, keepdims=True), 1).astype(np.dtype(vectors.dtype))
    return summed / Tensor._from_array(weight._backend.from_numpy(sizes), weight.device)  # empty bags: 0 / 1
