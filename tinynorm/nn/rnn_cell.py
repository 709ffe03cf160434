"""One-step recurrent cells: ``RNNCell``, ``LSTMCell``, ``GRUCell``, as PyTorch's.

A cell computes one time step; a loop over time is the caller's. Parameters ``weight_ih`` (G * H, input),
``weight_hh`` (G * H, H), ``bias_ih`` and ``bias_hh`` (G * H) with G = 1, 4 or 3 gates, all initialised
from U(-1/sqrt(H), 1/sqrt(H)). Input (N, input_size) or unbatched (input_size); hidden state (N, H)
or (H); a missing state is zeros. The equations are those of the matching layers in :mod:`.rnn`.
"""
from __future__ import annotations

import math
from typing import Any

from .. import creation
from ..ops import recurrent
from ..tensor import Tensor
from . import init
from .module import Module, Parameter
from .rnn import check_dtype, check_size


class RNNCellBase(Module):
    """Parameters, initialisation and the input/state checks every cell shares."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, *, dtype: Any = None) -> None:
        super().__init__()
        name = type(self).__name__
        self.input_size = check_size(name, "input_size", input_size)
        self.hidden_size = check_size(name, "hidden_size", hidden_size)
        self.bias = bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(creation.empty(gates, input_size, dtype=dtype))
        self.weight_hh = Parameter(creation.empty(gates, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(creation.empty(gates, dtype=dtype))
            self.bias_hh = Parameter(creation.empty(gates, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _weights(self) -> tuple[Tensor | None, ...]:
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh), or ReLU with ``nonlinearity='relu'``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", *,
                 dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, (h,), batched = prepare_step(self, input, (hx,))
        cell = recurrent.rnn_tanh_cell if self.nonlinearity == "tanh" else recurrent.rnn_relu_cell
        h = cell(x, h, *self._weights())
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """(h', c') of one LSTM step; ``hx`` is the tuple (h, c) or None."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
        x, (h, c), batched = prepare_step(self, input, split_state(type(self).__name__, hx))
        h, c = recurrent.lstm_cell(x, h, c, *self._weights())
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """h' of one GRU step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, (h,), batched = prepare_step(self, input, (hx,))
        h = recurrent.gru_cell(x, h, *self._weights())
        return h if batched else h.squeeze(0)


def prepare_step(cell: Module, input: Tensor,  # noqa: A002  (PyTorch's name)
                 states: tuple[Tensor | None, ...]) -> tuple[Tensor, tuple[Tensor, ...], bool]:
    """A cell's input as (N, input_size) and states as (N, H) each (zeros for None), checked, and whether
    the input was batched. ``cell`` has ``input_size``, ``hidden_size``, ``weight_ih`` and ``weight_hh``."""
    name = type(cell).__name__
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    if input.ndim not in (1, 2):
        raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
    check_dtype(name, input, cell.weight_ih, RuntimeError)
    if input.shape[-1] != cell.input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected {cell.input_size}")
    batched = input.ndim == 2
    x = input if batched else input.unsqueeze(0)
    prepared = []
    for k, h in enumerate(states):
        if h is None:
            prepared.append(creation.zeros(x.shape[0], cell.hidden_size, dtype=x.dtype, device=x.device))
            continue
        if not isinstance(h, Tensor):
            raise TypeError(f"{name}: the hidden state must be a Tensor, got {type(h).__name__}")
        if h.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.ndim}D instead")
        if h.ndim != input.ndim:
            raise RuntimeError(f"{name}: a {input.ndim}-D input needs a {input.ndim}-D hidden state, got "
                               f"{h.ndim}-D")
        h = h if batched else h.unsqueeze(0)
        if h.shape[0] != x.shape[0]:
            raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{k} batch size {h.shape[0]}")
        if h.shape[1] != cell.hidden_size:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, expected "
                               f"{cell.hidden_size}")
        check_dtype(name, h, cell.weight_hh, RuntimeError)
        prepared.append(h)
    return x, tuple(prepared), batched


def split_state(owner: str, hx: Any) -> tuple[Any, Any]:
    """An LSTM cell's ``hx``: None (zeros) or a tuple (h, c)."""
    if hx is None:
        return None, None
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise TypeError(f"{owner}: hx must be a tuple (h, c) of tensors, got {type(hx).__name__}")
    return hx[0], hx[1]
