"""``scaled_dot_product_attention``, as ``F.scaled_dot_product_attention`` computes it:

    softmax(q k^T * scale + bias) v,    scale = 1 / sqrt(E) by default,

for query (..., L, E), key (..., S, E) and value (..., S, Ev). The bias is 0 where a query may attend a
key and -inf where it may not: ``is_causal`` forbids keys after the query (the upper triangle), a bool
``attn_mask`` forbids its False entries, and a float ``attn_mask`` is added as it is. A query that may
attend no key at all gets zeros (PyTorch's safe softmax), not the NaN of softmax over -inf alone, and
no NaN reaches the gradients either.

Without a mask (or with only the causal one) and without dropout, 4-D (batch, heads, L, E) attention is
one op of its own, as PyTorch's fused CPU kernel is for such calls: two batched products and the
backend's softmax, which applies the scale and the causal mask in its pass over the scores (masked
scores are not read, so a NaN there stays out of the result, as in PyTorch's kernel); backward is four
products and the softmax's backward pass. That saves the passes over the (..., L, S) scores that
scaling, masking and the safe softmax's guards take as separate ops (docs/benchmarks.md). Every other
call is built from differentiable ops (PyTorch's math path), so its backward is autograd's.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..autograd.function import Context, Function
from ..tensor import Tensor, on_device
from .dropout import dropout
from .elementwise import where
from .linalg import matmul
from .softmax import softmax


def _bias(attn_mask: Any, is_causal: bool, query: Tensor, length: int, keys: int) -> Tensor | None:
    """The additive bias (broadcastable to (..., L, S)), or None without masking."""
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        allowed = np.tril(np.ones((length, keys), dtype=bool))
        return Tensor._from_array(query._backend.from_numpy(np.where(allowed, 0, -np.inf).astype(query.dtype)),
                                  query.device)
    if attn_mask is None:
        return None
    mask = on_device(attn_mask, query.device, "scaled_dot_product_attention", "attn_mask is", "query is")
    if mask.dtype.kind == "b":
        return where(mask, 0.0, -math.inf).to(query.dtype)
    if mask.dtype != query.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {mask.dtype} and  query.dtype: {query.dtype} instead.")
    return mask


def _grouped(key: Tensor, heads: int) -> Tensor:
    """``key`` (..., Hk, S, E) with each of its heads repeated for ``heads // Hk`` query heads."""
    groups = key.shape[-3]
    if heads % groups:
        raise RuntimeError(f"scaled_dot_product_attention: the number of query heads ({heads}) must be a multiple "
                           f"of the number of key/value heads ({groups}) with enable_gqa=True")
    return key[(Ellipsis, np.repeat(np.arange(groups), heads // groups), slice(None), slice(None))]


class _Attention(Function):
    """``softmax(scale * q k^T, causal) v`` for query, key and value of one batch shape and dtype."""
    backward_name = "ScaledDotProductFlashAttentionForCpuBackward0"

    @staticmethod
    def forward(ctx: Context, query: Any, key: Any, value: Any, scale: float, causal: bool) -> Any:
        xp = ctx.xp
        weights = xp.softmax_forward(xp.matmul(query, xp.swapaxes(key, -1, -2)), scale, causal)
        ctx.save_for_backward(query, key, value, weights)
        ctx.scale, ctx.causal = scale, causal
        return xp.matmul(weights, value)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        query, key, value, weights = ctx.saved_tensors
        xp = ctx.xp
        need_query, need_key, need_value = ctx.needs_input_grad[:3]
        grad_value = xp.matmul(xp.swapaxes(weights, -1, -2), grad) if need_value else None
        grad_query = grad_key = None
        if need_query or need_key:
            grad_weights = xp.matmul(grad, xp.swapaxes(value, -1, -2))
            grad_scores = xp.softmax_backward(grad_weights, weights, ctx.scale, ctx.causal)
            grad_query = xp.matmul(grad_scores, key) if need_query else None
            grad_key = xp.matmul(xp.swapaxes(grad_scores, -1, -2), query) if need_key else None
        return grad_query, grad_key, grad_value, None, None


def _fusable(query: Tensor, key: Tensor, value: Tensor, attn_mask: Any, dropout_p: float) -> bool:
    """Whether :class:`_Attention` computes this call: no mask but the causal one, no dropout, and 4-D
    float32/float64 operands of one batch shape, dtype and device whose sizes agree."""
    if attn_mask is not None or dropout_p > 0 or not query.ndim == key.ndim == value.ndim == 4:
        return False
    if not query.dtype == key.dtype == value.dtype or query.dtype not in (dtypes.float32, dtypes.float64):
        return False
    return (query.shape[:-2] == key.shape[:-2] == value.shape[:-2] and query.shape[-1] == key.shape[-1]
            and key.shape[-2] == value.shape[-2] and query.device == key.device == value.device)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """Attention of ``query`` over ``key``/``value`` (see the module docstring); ``dropout_p`` drops
    attention weights (always, as in PyTorch: pass 0.0 outside training)."""
    length, keys = query.shape[-2], key.shape[-2]
    if enable_gqa and query.ndim >= 3:
        key, value = _grouped(key, query.shape[-3]), _grouped(value, query.shape[-3])
    factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    if _fusable(query, key, value, attn_mask, dropout_p):
        return _Attention.apply(query, key, value, factor, is_causal)
    scores = matmul(query, key.transpose(-2, -1)) * factor
    bias = _bias(attn_mask, is_causal, query, length, keys)
    if bias is None:
        weights = softmax(scores, -1)
    else:
        scores = scores + bias
        blocked = bias.detach().amax(-1, keepdim=True) == -math.inf  # rows that may attend nothing
        weights = where(blocked, 0.0, softmax(where(blocked, 0.0, scores), -1))
    if dropout_p > 0:
        weights = dropout(weights, dropout_p, True)
    return matmul(weights, value)
