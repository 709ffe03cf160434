"""``nn.MultiheadAttention``: PyTorch's (query, key, value) attention layer, with its parameters,
shapes, masks and returned attention weights.

For query (L, N, E), key (S, N, kdim) and value (S, N, vdim) (``batch_first``: (N, L, E) ...; unbatched:
(L, E) ...) and H heads of size E / H:

    q, k, v = query Wq^T + bq, key Wk^T + bk, value Wv^T + bv      split into heads, (N, H, L|S, E / H)
    A = softmax(q k^T / sqrt(E / H) + mask)                          (N, H, L, S), dropped out in training
    out = merge_heads(A v) Wo^T + bo                                 (L, N, E)

``mask`` adds ``attn_mask`` ((L, S) or (N * H, L, S)) and ``key_padding_mask`` ((N, S)); a bool mask
forbids its True entries (-inf), a float one is added as it is. ``need_weights`` also returns A, averaged
over the heads unless ``average_attn_weights=False``; without it the attention runs through
``F.scaled_dot_product_attention``, whose queries that may attend no key get zeros (PyTorch's safe
softmax) where the explicit softmax gives NaN, as in PyTorch. Built from differentiable ops.
"""
from __future__ import annotations

import math
from typing import Any

from .. import creation
from .._checks import check_tensor
from ..ops import cat, linear, matmul, softmax, where
from ..ops.attention import scaled_dot_product_attention
from ..ops.dropout import dropout
from ..tensor import Tensor
from . import init
from .linear import Linear
from .module import Module, Parameter


class NonDynamicallyQuantizableLinear(Linear):
    """``MultiheadAttention.out_proj``'s class in PyTorch (a Linear under another name)."""


def _float_mask(mask: Tensor | None, name: str, dtype: Any) -> Tensor | None:
    """``mask`` as an additive float mask: -inf where a bool mask is True, a float mask as it is."""
    if mask is None:
        return None
    check_tensor("MultiheadAttention", name, mask)
    if mask.dtype.kind == "b":
        return where(mask, -math.inf, 0.0).to(dtype)
    if mask.dtype.kind != "f":
        raise RuntimeError(f"MultiheadAttention: only bool and floating types of {name} are supported, "
                           f"got {mask.dtype}")
    return mask.to(dtype)


class MultiheadAttention(Module):
    """Attention of a query sequence over key/value sequences in ``num_heads`` heads (module docstring)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, *, dtype: Any = None) -> None:
        super().__init__()
        if not isinstance(embed_dim, int) or embed_dim <= 0 or not isinstance(num_heads, int) or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim!r} "
                             f"and num_heads={num_heads!r} instead")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim must be divisible by num_heads, got {embed_dim} and {num_heads}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be a probability in [0, 1], got {dropout!r}")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(creation.empty(3 * embed_dim, embed_dim, dtype=dtype))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(creation.empty(embed_dim, embed_dim, dtype=dtype))
            self.k_proj_weight = Parameter(creation.empty(embed_dim, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(creation.empty(embed_dim, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(creation.empty(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(creation.empty(1, 1, embed_dim, dtype=dtype))
            self.bias_v = Parameter(creation.empty(1, 1, embed_dim, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's initialisation: Xavier-uniform projections, zero biases, Xavier-normal bias_k/bias_v."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _projections(self) -> tuple[Tensor, Tensor, Tensor]:
        if self._qkv_same_embed_dim:
            e = self.embed_dim
            w = self.in_proj_weight
            return w[:e], w[e:2 * e], w[2 * e:]
        return self.q_proj_weight, self.k_proj_weight, self.v_proj_weight

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        for name, tensor in (("query", query), ("key", key), ("value", value)):
            check_tensor("MultiheadAttention", name, tensor)
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                               "module method `generate_square_subsequent_mask` to create this mask.")
        batched = query.ndim == 3
        self._check_shapes(query, key, value, batched)
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        output, weights = self._attend(query, key, value, key_padding_mask, need_weights, attn_mask,
                                       average_attn_weights)
        if not batched:
            return output.squeeze(1), None if weights is None else weights.squeeze(0)
        return (output.transpose(0, 1) if self.batch_first else output), weights

    def _check_shapes(self, query: Tensor, key: Tensor, value: Tensor, batched: bool) -> None:
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise RuntimeError(f"MultiheadAttention: query, key and value must all be 3-D (batched) or 2-D "
                               f"(unbatched), got shapes {list(query.shape)}, {list(key.shape)} and "
                               f"{list(value.shape)}")
        expected = ((self.embed_dim, "embed_dim", query), (self.kdim, "kdim", key), (self.vdim, "vdim", value))
        for size, name, tensor in expected:
            if tensor.shape[-1] != size:
                raise RuntimeError(f"MultiheadAttention: expected the last dim of a {name}-sized input to be "
                                   f"{size}, got shape {list(tensor.shape)}")
        if key.shape[:-1] != value.shape[:-1]:
            raise RuntimeError(f"key shape {list(key.shape)} does not match value shape {list(value.shape)}")
        batch_dim = 0 if self.batch_first else 1
        if batched and query.shape[batch_dim] != key.shape[batch_dim]:
            raise RuntimeError(f"MultiheadAttention: query and key have batch sizes {query.shape[batch_dim]} and "
                               f"{key.shape[batch_dim]}")

    def _attend(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                need_weights: bool, attn_mask: Tensor | None, average: bool) -> tuple[Tensor, Tensor | None]:
        """Attention of sequence-first (L, N, E) query over (S, N, .) key/value."""
        length, batch, _ = query.shape
        w_q, w_k, w_v = self._projections()
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            e = self.embed_dim
            b_q, b_k, b_v = self.in_proj_bias[:e], self.in_proj_bias[e:2 * e], self.in_proj_bias[2 * e:]
        q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)
        mask = self._mask(attn_mask, key_padding_mask, length, batch, key.shape[0], q.dtype)
        if self.bias_k is not None:
            k, v = cat([k, self.bias_k.expand(1, batch, -1)]), cat([v, self.bias_v.expand(1, batch, -1)])
            mask = None if mask is None else _extra_key(mask)
        q, k, v = self._heads(q), self._heads(k), self._heads(v)  # (N, H, L|S, E / H)
        if self.add_zero_attn:
            zeros = creation.zeros(batch, self.num_heads, 1, self.head_dim, dtype=k.dtype, device=k.device)
            k, v = cat([k, zeros], 2), cat([v, zeros], 2)
            mask = None if mask is None else _extra_key(mask)
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = matmul(q * (1 / math.sqrt(self.head_dim)), k.transpose(-2, -1))
            weights = softmax(scores if mask is None else scores + mask, -1)
            weights = dropout(weights, p, True) if p > 0 else weights
            heads = matmul(weights, v)
        else:
            weights, heads = None, scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        merged = heads.permute(2, 0, 1, 3).reshape(length, batch, self.embed_dim)
        output = self.out_proj(merged)
        if weights is not None and average:
            weights = weights.mean(1)
        return output, weights

    def _heads(self, x: Tensor) -> Tensor:
        """(T, N, E) as (N, H, T, E / H)."""
        return x.reshape(x.shape[0], x.shape[1], self.num_heads, self.head_dim).permute(1, 2, 0, 3)

    def _mask(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, length: int, batch: int,
              keys: int, dtype: Any) -> Tensor | None:
        """``attn_mask`` and ``key_padding_mask`` as one additive mask broadcastable to (N, H, L, S)."""
        attn = _float_mask(attn_mask, "attn_mask", dtype)
        if attn is not None:
            if attn.ndim == 2 and tuple(attn.shape) != (length, keys):
                raise RuntimeError(f"The shape of the 2D attn_mask is torch.Size({list(attn.shape)}), but should "
                                   f"be {(length, keys)}.")
            if attn.ndim == 3:
                if tuple(attn.shape) != (batch * self.num_heads, length, keys):
                    raise RuntimeError(f"The shape of the 3D attn_mask is torch.Size({list(attn.shape)}), but "
                                       f"should be {(batch * self.num_heads, length, keys)}.")
                attn = attn.reshape(batch, self.num_heads, length, keys)
            elif attn.ndim != 2:
                raise RuntimeError(f"attn_mask's dimension {attn.ndim} is not supported")
        padding = _float_mask(key_padding_mask, "key_padding_mask", dtype)
        if padding is not None:
            if tuple(padding.shape) != (batch, keys):
                raise RuntimeError(f"MultiheadAttention: expecting key_padding_mask shape of {(batch, keys)}, "
                                   f"but got {tuple(padding.shape)}")
            padding = padding.reshape(batch, 1, 1, keys)
            attn = padding if attn is None else attn + padding
        return attn


def _extra_key(mask: Tensor) -> Tensor:
    """``mask`` with a zero column for a key appended to every sequence (``bias_k`` or a zero key)."""
    zeros = creation.zeros(*mask.shape[:-1], 1, dtype=mask.dtype, device=mask.device)
    return cat([mask, zeros], -1)
