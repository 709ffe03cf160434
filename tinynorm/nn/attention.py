"""Multi-head self-attention (Vaswani et al. 2017), optionally causal.

For input x (B, T, D) and H heads of size Dh = D / H:
    q, k, v = split(x W_qkv^T + b_qkv)                 each (B, H, T, Dh)
    A = softmax(q k^T / sqrt(Dh) + mask)               (B, H, T, T); mask = -inf above the diagonal if causal
    y = merge_heads(A v) W_o^T + b_o                   (B, T, D)
Built from differentiable ops, so its backward is autograd's.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..ops import matmul, softmax
from ..tensor import Tensor, tensor
from .linear import Linear
from .module import Module


def causal_mask(length: int, dtype: np.dtype) -> np.ndarray:
    """(T, T) additive mask: 0 where a query may attend (key position <= query position), -inf elsewhere."""
    mask = np.zeros((length, length), dtype=dtype)
    mask[np.triu_indices(length, k=1)] = -np.inf
    return mask


@functools.lru_cache(maxsize=32)
def _causal_mask_tensor(length: int, dtype: np.dtype, device: str) -> Tensor:
    """:func:`causal_mask` as a tensor on ``device``, made once per (length, dtype, device): a forward
    then adds it without rebuilding it or copying it to the GPU again. Never written to."""
    return tensor(causal_mask(length, dtype), device=device)


class MultiheadSelfAttention(Module):
    def __init__(self, d_model: int, n_heads: int, causal: bool = True, bias: bool = True) -> None:
        super().__init__()
        if n_heads <= 0 or d_model % n_heads:
            raise ValueError(f"MultiheadSelfAttention: d_model={d_model} must be divisible by n_heads={n_heads}")
        self.d_model, self.n_heads, self.causal = d_model, n_heads, causal
        self.qkv = Linear(d_model, 3 * d_model, bias=bias)
        self.proj = Linear(d_model, d_model, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 3 or x.shape[2] != self.d_model:
            raise ValueError(f"MultiheadSelfAttention: expected input (B, T, {self.d_model}), got {tuple(x.shape)}")
        batch, length, _ = x.shape
        head = self.d_model // self.n_heads
        qkv = self.qkv(x).reshape(batch, length, 3, self.n_heads, head).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(head))
        if self.causal:
            scores = scores + _causal_mask_tensor(length, scores.dtype, scores.device)
        out = matmul(softmax(scores, dim=-1), v)
        return self.proj(out.transpose(1, 2).reshape(batch, length, self.d_model))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, causal={self.causal}"
