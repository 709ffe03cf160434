"""The LayerNorm-LSTM of Ba, Kiros & Hinton ("Layer Normalization", 2016, eq. 20-22), as a cell and as a
multi-layer layer with ``nn.LSTM``'s interface.

LayerNorm sits inside the recurrence: on the two gate pre-activations (input and hidden projections,
each normalized over its 4H values per sample) and on the new cell state before its tanh::

    gates = LN(W_ih x) * norm_ih + LN(W_hh h) * norm_hh + bias       (gates i, f, g, o)
    c' = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h' = sigmoid(o) * tanh(LN(c') * norm_cell_weight + norm_cell_bias)

Because ``W_hh h`` is normalized whatever the scale of ``h``, the gates see the same spread at every
time step; the norm on ``c'`` keeps the output's scale independent of how much the cell has
accumulated. Not in PyTorch: the parameter names are tinynorm's (``weight_ih``, ``weight_hh``,
``bias``, ``norm_ih``, ``norm_hh``, ``norm_cell_weight``, ``norm_cell_bias``, with ``_l{k}`` and
``_reverse`` suffixes in the layer). Weights and bias are initialised as ``nn.LSTM``'s, norm gains to 1
and the cell norm's shift to 0.
"""
from __future__ import annotations

import math
from typing import Any

from .. import creation
from ..ops import recurrent
from ..tensor import Tensor
from . import init
from .module import Module, Parameter
from .rnn import RNNBase, State, check_size
from .rnn_cell import prepare_step, split_state

GAIN_STEMS = ("norm_ih", "norm_hh", "norm_cell_weight")


def layer_norm_lstm_shapes(input_size: int, hidden_size: int, bias: bool) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of one LayerNorm-LSTM cell's parameters, in the order they are registered."""
    gates = 4 * hidden_size
    shapes = [("weight_ih", (gates, input_size)), ("weight_hh", (gates, hidden_size))]
    if bias:
        shapes.append(("bias", (gates,)))
    return shapes + [("norm_ih", (gates,)), ("norm_hh", (gates,)), ("norm_cell_weight", (hidden_size,)),
                     ("norm_cell_bias", (hidden_size,))]


def reset_layer_norm_lstm(module: Module, hidden_size: int) -> None:
    """Weights and bias from U(-1/sqrt(H), 1/sqrt(H)); norm gains 1, the cell norm's shift 0."""
    bound = 1.0 / math.sqrt(hidden_size)
    for name, param in module.named_parameters():
        if name.startswith(GAIN_STEMS):
            init.ones_(param)
        elif name.startswith("norm_cell_bias"):
            init.zeros_(param)
        else:
            init.uniform_(param, -bound, bound)


class LayerNormLSTMCell(Module):
    """One LayerNorm-LSTM step: ``cell(input, (h, c)) -> (h', c')``, shapes as ``nn.LSTMCell``'s."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, eps: float = 1e-5, *,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size = check_size(type(self).__name__, "input_size", input_size)
        self.hidden_size = check_size(type(self).__name__, "hidden_size", hidden_size)
        self.eps = float(eps)
        for name, shape in layer_norm_lstm_shapes(input_size, hidden_size, bias):
            setattr(self, name, Parameter(creation.empty(*shape, dtype=dtype)))
        if not bias:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_layer_norm_lstm(self, self.hidden_size)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
        x, (h, c), batched = prepare_step(self, input, split_state(type(self).__name__, hx))
        h, c = recurrent.layer_norm_lstm_cell(x, h, c, self.weight_ih, self.weight_hh, self.bias, self.norm_ih,
                                              self.norm_hh, self.norm_cell_weight, self.norm_cell_bias, self.eps)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias is not None else ", bias=False")


class LayerNormLSTM(RNNBase):
    """A stack of LayerNorm-LSTM layers with ``nn.LSTM``'s arguments (no ``proj_size``), shapes and
    outputs: ``LayerNormLSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, eps=1e-5)``; ``forward(input, (h_0, c_0))`` returns
    (output, (h_n, c_n))."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, eps: float = 1e-5,
                 *, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         dtype=dtype)
        self.eps = float(eps)

    def _parameter_shapes(self, layer_input: int) -> list[tuple[str, tuple[int, ...]]]:
        return layer_norm_lstm_shapes(layer_input, self.hidden_size, self.bias)

    def reset_parameters(self) -> None:
        reset_layer_norm_lstm(self, self.hidden_size)

    def _step(self, x: Tensor, state: State, weights: list[Tensor]) -> State:
        w_ih, w_hh, *rest = weights
        bias = rest.pop(0) if self.bias else None
        return recurrent.layer_norm_lstm_cell(x, *state, w_ih, w_hh, bias, *rest, self.eps)

    def extra_repr(self) -> str:
        return super().extra_repr() + ("" if self.eps == 1e-5 else f", eps={self.eps}")
