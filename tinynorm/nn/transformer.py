"""PyTorch's Transformer layers (Vaswani et al. 2017): ``TransformerEncoderLayer``,
``TransformerDecoderLayer``, their stacks ``TransformerEncoder``/``TransformerDecoder``, and
``Transformer``, with PyTorch's submodule names (so state dicts carry over), defaults and reprs.

A layer is attention and a feed-forward block, each in a residual branch, with LayerNorm after the
residual sum (Post-LN, the default) or at the branch's input (``norm_first=True``, Pre-LN; see
docs/normalization.md on which trains better):

    Post-LN:  x = norm1(x + sa(x));          x = norm2(x + ff(x))
    Pre-LN:   x = x + sa(norm1(x));          x = x + ff(norm2(x))

``sa`` is self-attention (a decoder layer adds attention over the encoder's output, ``memory``), ``ff``
is linear2(dropout(activation(linear1(x)))), and each branch ends in dropout.
"""
from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..tensor import Tensor, tensor
from . import functional as F
from . import init
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .multihead_attention import MultiheadAttention
from .normalization import LayerNorm

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    if callable(activation):
        return activation
    if activation not in _ACTIVATIONS:
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return _ACTIVATIONS[activation]


def _clones(module: Module, count: int) -> ModuleList:
    """``count`` independent deep copies of ``module`` (each with its own parameters), as PyTorch stacks."""
    return ModuleList([copy.deepcopy(module) for _ in range(count)])


def generate_square_subsequent_mask(size: int, device: Any = None, dtype: Any = None) -> Tensor:
    """(size, size) float mask: 0 where a position may attend (itself and earlier), -inf above the diagonal."""
    mask = np.triu(np.full((size, size), -np.inf), k=1)
    return tensor(mask, dtype=dtype or dtypes.get_default_dtype(), device=device)


class _Layer(Module):
    """What encoder and decoder layers share: the feed-forward block and the options."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float, activation: Any,
                 layer_norm_eps: float, batch_first: bool, norm_first: bool, bias: bool, dtype: Any,
                 norms: int) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype)
        if norms == 3:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                     batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        for index in range(1, norms + 1):
            setattr(self, f"norm{index}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        for index in range(1, norms + 1):
            setattr(self, f"dropout{index}", Dropout(dropout))
        self.activation = _activation(activation)

    def _ff_block(self, x: Tensor, dropout: Dropout) -> Tensor:
        return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    @staticmethod
    def _attention(attention: MultiheadAttention, dropout: Dropout, x: Tensor, source: Tensor, mask: Any,
                   padding: Any, is_causal: bool) -> Tensor:
        output = attention(x, source, source, attn_mask=mask, key_padding_mask=padding, need_weights=False,
                           is_causal=is_causal)[0]
        return dropout(output)


class TransformerEncoderLayer(_Layer):
    """Self-attention and feed-forward, each in a residual branch with LayerNorm (module docstring)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, *,
                 dtype: Any = None) -> None:
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                         norm_first, bias, dtype, norms=2)

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        def self_attention(x: Tensor) -> Tensor:
            return self._attention(self.self_attn, self.dropout1, x, x, src_mask, src_key_padding_mask, is_causal)

        x = src
        if self.norm_first:
            x = x + self_attention(self.norm1(x))
            return x + self._ff_block(self.norm2(x), self.dropout2)
        x = self.norm1(x + self_attention(x))
        return self.norm2(x + self._ff_block(x, self.dropout2))


class TransformerDecoderLayer(_Layer):
    """Self-attention over the target, attention over ``memory`` and feed-forward, each in a residual
    branch with LayerNorm (module docstring)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, *,
                 dtype: Any = None) -> None:
        super().__init__(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                         norm_first, bias, dtype, norms=3)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        def self_attention(x: Tensor) -> Tensor:
            return self._attention(self.self_attn, self.dropout1, x, x, tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)

        def memory_attention(x: Tensor) -> Tensor:
            return self._attention(self.multihead_attn, self.dropout2, x, memory, memory_mask,
                                   memory_key_padding_mask, memory_is_causal)

        x = tgt
        if self.norm_first:
            x = x + self_attention(self.norm1(x))
            x = x + memory_attention(self.norm2(x))
            return x + self._ff_block(self.norm3(x), self.dropout3)
        x = self.norm1(x + self_attention(x))
        x = self.norm2(x + memory_attention(x))
        return self.norm3(x + self._ff_block(x, self.dropout3))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` applied in turn, then ``norm`` if given."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` applied in turn (each attending ``memory``), then ``norm``."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """Encoder-decoder Transformer: an encoder over ``src`` and a decoder over ``tgt`` attending the
    encoder's output, each a stack of layers ending in LayerNorm; weights of rank >= 2 Xavier-uniform."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu, custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, *, dtype: Any = None) -> None:
        super().__init__()
        options = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                       layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first, bias=bias,
                       dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(d_model, nhead, **options), num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(d_model, nhead, **options), num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        for parameter in self.parameters():
            if parameter.ndim > 1:
                init.xavier_uniform_(parameter)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and tgt.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    generate_square_subsequent_mask = staticmethod(generate_square_subsequent_mask)
