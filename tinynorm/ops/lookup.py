"""Lookups by integer ids: ``embedding`` (rows of a weight matrix) and ``one_hot``, as in ``F``.

``embedding`` options, as PyTorch's: the row ``padding_idx`` gets no gradient (a padding token's vector
stays what it is); ``max_norm`` first rescales, in place, each looked-up row whose ``norm_type``-norm
exceeds it to that norm; ``scale_grad_by_freq`` divides each row's gradient by how often its id occurs
in the batch.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import no_grad
from ..autograd.function import Context, Function
from ..tensor import Tensor, on_device
from .shape import check_indices


class Embedding(Function):
    """Rows of ``weight`` at ``ids`` (checked to lie in range); backward adds each gradient row into
    its id's row, except for ``padding_idx``, scaled by 1/count with ``scale_grad_by_freq``."""

    backward_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx: Context, weight: Any, ids: Any, padding_idx: int | None, scale_grad_by_freq: bool) -> Any:
        ctx.shape, ctx.ids = weight.shape, ids
        ctx.padding_idx, ctx.scale_grad_by_freq = padding_idx, scale_grad_by_freq
        return ctx.xp.take(weight, ids, axis=0, mode="clip")  # clipping leaves checked ids unchanged

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        xp, ids = ctx.xp, ctx.ids
        if ctx.padding_idx is not None:
            grad = grad * (ids != ctx.padding_idx).reshape(ids.shape + (1,))
        if ctx.scale_grad_by_freq:
            flat = ids.reshape(-1)
            counts = xp.index_add((ctx.shape[0],), flat, xp.ones(flat.shape, dtype=grad.dtype))
            grad = grad / xp.take(counts, ids, mode="clip").reshape(ids.shape + (1,))
        return xp.index_add(ctx.shape, ids, grad), None


def _renorm_rows(weight: Tensor, ids: Tensor, max_norm: float, norm_type: float) -> None:
    """Rescale (in place, unrecorded) each row of ``weight`` that ``ids`` name and whose norm exceeds
    ``max_norm`` to norm ``max_norm`` (PyTorch's ``embedding_renorm_``, with its 1e-7 guard)."""
    with no_grad():
        xp = weight._backend
        rows = np.unique(xp.to_numpy(ids.array).reshape(-1))
        device_rows = xp.from_numpy(rows)
        values = xp.take(weight.array, device_rows, axis=0, mode="clip")
        host = xp.to_numpy(values).astype(np.float64)
        norms = np.sum(np.abs(host) ** norm_type, axis=1) ** (1.0 / norm_type)
        scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(weight.dtype)
        weight.array[device_rows] = values * xp.from_numpy(scale.reshape(-1, 1))
        weight._bump_version()


def embedding(input: Any, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``weight[input]``: ids of any shape give vectors of shape ids.shape + (embedding_dim,).

    ``input`` is an integer tensor on ``weight``'s device, or host data (a list, a numpy array), which
    is copied there.
    """
    if sparse:
        raise NotImplementedError("embedding: sparse=True is not supported (tinynorm has no sparse gradients); "
                                  "sparse=False gives the same values as a dense gradient")
    if input is None:
        raise TypeError("embedding(): argument 'input' must be a tensor of ids (or host data), not NoneType")
    ids = on_device(input, weight.device, "embedding", "ids are", "the weight is")
    if ids.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {ids.dtype} instead (while checking arguments for embedding)")
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.shape[0], "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.shape[0], "Padding_idx must be within num_embeddings"
            padding_idx = weight.shape[0] + padding_idx
    check_indices(weight._backend, ids.array, weight.shape[0], "embedding", "ids")
    if max_norm is not None:
        _renorm_rows(weight, ids, max_norm, norm_type)
    return Embedding.apply(weight, ids.array, padding_idx, scale_grad_by_freq)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot vectors: shape tensor.shape + (num_classes,) (max + 1 classes when -1)."""
    if not isinstance(tensor, Tensor) or tensor.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    xp = tensor._backend
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(xp.to_numpy(xp.amax(tensor.array))) + 1
    if tensor.numel():
        if int(xp.to_numpy(xp.amin(tensor.array))) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(xp.to_numpy(xp.amax(tensor.array))) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    hits = tensor.array.reshape(tensor.shape + (1,)) == xp.arange(num_classes)
    return Tensor._from_array(hits.astype(np.int64), tensor.device)
