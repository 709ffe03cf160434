"""One time step of the recurrent cells, as PyTorch computes them (``torch.nn.RNNCell``, ``LSTMCell``,
``GRUCell``); the layers in ``tinynorm.nn.rnn`` call these once per step and layer.

The matrix products are ordinary ``linear`` ops. What follows them is fused into one Function per
cell, so that a step records a handful of graph nodes instead of a dozen elementwise ones (measured in
docs/benchmarks.md, "Recurrent layers"):

* LSTM (gates in PyTorch's order i, f, g, o): ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)`` is one op
  (:class:`LSTMCellState`); the output ``h' = sigmoid(o) * tanh(c')`` is composed, so that the
  LayerNorm-LSTM can put its norm on ``c'`` before the ``tanh``;
* GRU (gates r, z, n): ``r = sigmoid(i_r + h_r)``, ``z = sigmoid(i_z + h_z)``,
  ``n = tanh(i_n + r * h_n)``, ``h' = (1 - z) * n + z * h`` is one op (:class:`GRUCellState`), where
  ``i_*`` are the input's projections ``W_i* x + b_i*`` and ``h_*`` the hidden state's ``W_h* h + b_h*``.

The fused forwards and backwards are plain array math on the device's backend, so they run on every
device.
"""
from __future__ import annotations

from typing import Any

from ..autograd.function import Context, Function
from ..tensor import Tensor
from .elementwise import relu, sigmoid, tanh
from .linalg import linear
from .normalization import layer_norm


def _sigmoid(xp: Any, x: Any) -> Any:
    """The logistic function, through tanh so that it never overflows (as ``ops.sigmoid``)."""
    return 0.5 * (1 + xp.tanh(0.5 * x))


class LSTMCellState(Function):
    """c' = sigmoid(i) * tanh(g) + sigmoid(f) * c from the gate pre-activations (B, 4H) and c (B, H).

    The o quarter of the gates is not read; its gradient here is zero (``h'`` carries it)."""

    backward_name = "AddBackward0"  # PyTorch's CPU LSTMCell ends c' with an add

    @staticmethod
    def forward(ctx: Context, gates: Any, c: Any) -> Any:
        xp, hidden = ctx.xp, c.shape[-1]
        i = _sigmoid(xp, gates[..., :hidden])
        f = _sigmoid(xp, gates[..., hidden:2 * hidden])
        g = xp.tanh(gates[..., 2 * hidden:3 * hidden])
        ctx.save_for_backward(i, f, g, c)
        return f * c + i * g

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        i, f, g, c = ctx.saved_tensors
        xp = ctx.xp
        grad_i = grad * g * i * (1 - i)
        grad_gates = [grad_i, grad * c * f * (1 - f), grad * i * (1 - g * g), xp.zeros_like(grad_i)]
        return xp.concatenate(grad_gates, axis=-1), grad * f


class GRUCellState(Function):
    """h' of a GRU from the input projections (B, 3H), the hidden projections (B, 3H) and h (B, H)."""

    backward_name = "AddBackward0"  # PyTorch's CPU GRUCell ends h' with an add

    @staticmethod
    def forward(ctx: Context, input_gates: Any, hidden_gates: Any, h: Any) -> Any:
        xp, hidden = ctx.xp, h.shape[-1]
        r = _sigmoid(xp, input_gates[..., :hidden] + hidden_gates[..., :hidden])
        z = _sigmoid(xp, input_gates[..., hidden:2 * hidden] + hidden_gates[..., hidden:2 * hidden])
        hidden_n = hidden_gates[..., 2 * hidden:]
        n = xp.tanh(input_gates[..., 2 * hidden:] + r * hidden_n)
        ctx.save_for_backward(r, z, n, hidden_n, h)
        return n + z * (h - n)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        r, z, n, hidden_n, h = ctx.saved_tensors
        xp = ctx.xp
        grad_n = grad * (1 - z) * (1 - n * n)  # through tanh: d/d(i_n + r * h_n)
        grad_r = grad_n * hidden_n * r * (1 - r)
        grad_z = grad * (h - n) * z * (1 - z)
        grad_input = xp.concatenate([grad_r, grad_z, grad_n], axis=-1)
        grad_hidden = xp.concatenate([grad_r, grad_z, grad_n * r], axis=-1)
        return grad_input, grad_hidden, grad * z


def lstm_cell_state(gates: Tensor, c: Tensor) -> Tensor:
    """The LSTM's new cell state ``sigmoid(f) * c + sigmoid(i) * tanh(g)`` from gates (..., 4H), c (..., H)."""
    return LSTMCellState.apply(gates, c)


def rnn_tanh_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return tanh(linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh))


def rnn_relu_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return relu(linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh))


def lstm_cell(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None, w_hr: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(h', c') of an LSTM step; with ``w_hr`` (proj_size, H) the output is projected: h' = W_hr h'."""
    gates = linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh)
    c = lstm_cell_state(gates, c)
    h = sigmoid(gates[..., 3 * c.shape[-1]:]) * tanh(c)
    return (h if w_hr is None else linear(h, w_hr)), c


def gru_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """h' of a GRU step."""
    return GRUCellState.apply(linear(x, w_ih, b_ih), linear(h, w_hh, b_hh), h)


def layer_norm_lstm_cell(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, bias: Tensor | None,
                         norm_ih: Tensor, norm_hh: Tensor, norm_cell: Tensor, norm_cell_bias: Tensor,
                         eps: float = 1e-5) -> tuple[Tensor, Tensor]:
    """(h', c') of a LayerNorm-LSTM step (Ba et al. 2016, eq. 20-22):

        gates = LN(W_ih x) * norm_ih + LN(W_hh h) * norm_hh + bias
        c' = sigmoid(f) * c + sigmoid(i) * tanh(g),   h' = sigmoid(o) * tanh(LN(c') * norm_cell + norm_cell_bias)

    Each LN normalizes over all its features (the 4H gate pre-activations, the H cell units) of one
    sample; the two gate norms have gains only, their shift being ``bias``.
    """
    gates_shape, hidden = (w_ih.shape[0],), c.shape[-1]
    gates = (layer_norm(linear(x, w_ih), gates_shape, norm_ih, None, eps)
             + layer_norm(linear(h, w_hh), gates_shape, norm_hh, None, eps))
    if bias is not None:
        gates = gates + bias
    c = lstm_cell_state(gates, c)
    h = sigmoid(gates[..., 3 * hidden:]) * tanh(layer_norm(c, (hidden,), norm_cell, norm_cell_bias, eps))
    return h, c
