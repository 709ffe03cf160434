"""Recurrent layers: ``RNN`` (tanh or ReLU), ``LSTM`` (with ``proj_size``) and ``GRU``, as PyTorch's.

Arguments, defaults, shapes, parameter names (``weight_ih_l0``, ``bias_hh_l1_reverse``,
``weight_hr_l0``), initialisation (every parameter uniform in ±1/sqrt(hidden_size)) and errors are
PyTorch's, so state dicts load both ways. A layer steps through time in Python, one
:mod:`tinynorm.ops.recurrent` cell per step, layer and direction; autograd records every step, which
is backpropagation through time. Not provided: packed sequences (``nn.utils.rnn``).

Shapes, with L the sequence length, N the batch, D = 2 if bidirectional else 1, H_out = proj_size or
hidden_size:
* input (L, N, input_size), or (N, L, input_size) with ``batch_first``, or (L, input_size) unbatched;
* output (L, N, D * H_out) (batch first as the input);
* h_0 / h_n (D * num_layers, N, H_out), c_0 / c_n (D * num_layers, N, hidden_size), layer-major:
  index ``layer * D + direction``; both without N for an unbatched input.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from .. import creation
from ..ops import dropout as dropout_op
from ..ops import recurrent
from ..ops.shape import cat, stack
from ..tensor import Tensor
from . import init
from .module import Module, Parameter

State = tuple[Tensor, ...]  # (h,) or, for an LSTM, (h, c)

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def check_size(owner: str, name: str, value: Any, minimum: int = 1) -> int:
    """``value`` if it is an int of at least ``minimum``, else PyTorch's TypeError/ValueError."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{owner}: {name} should be of type int, got: {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{owner}: {name} must be greater than zero")
    return int(value)


def check_dtype(owner: str, x: Tensor, weight: Tensor, error: type[Exception] = ValueError) -> None:
    if x.dtype != weight.dtype:
        raise error(f"{owner} input dtype ({x.dtype}) does not match weight dtype ({weight.dtype}). Convert "
                    f"input: input.to({weight.dtype}), or convert model: model.to({x.dtype})")


class RNNBase(Module):
    """What RNN, LSTM and GRU share: the stack of layers and directions, the checks and the time loop.

    A subclass gives the per-layer parameters (:meth:`_parameter_shapes`) and one time step
    (:meth:`_step`); ``mode`` is one of 'RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU'.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, *, dtype: Any = None) -> None:
        super().__init__()
        if mode not in GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode!r}; expected one of {sorted(GATES)}")
        name = type(self).__name__
        if not isinstance(dropout, numbers.Real) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        self.mode = mode
        self.input_size = check_size(name, "input_size", input_size)
        self.hidden_size = check_size(name, "hidden_size", hidden_size)
        self.num_layers = check_size(name, "num_layers", num_layers)
        self.bias, self.batch_first, self.bidirectional = bias, batch_first, bidirectional
        self.dropout, self.proj_size = float(dropout), proj_size
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        if not isinstance(proj_size, numbers.Integral) or proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.num_directions = 2 if bidirectional else 1
        self._weight_names: list[tuple[str, ...]] = []  # per layer * D + direction, in PyTorch's order
        for layer in range(self.num_layers):
            layer_input = self.input_size if layer == 0 else self.output_size * self.num_directions
            for direction in range(self.num_directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                names = []
                for stem, shape in self._parameter_shapes(layer_input):
                    setattr(self, stem + suffix, Parameter(creation.empty(*shape, dtype=dtype)))
                    names.append(stem + suffix)
                self._weight_names.append(tuple(names))
        self.reset_parameters()

    @property
    def output_size(self) -> int:
        """H_out: the size of each direction's output and hidden state (proj_size if set)."""
        return self.proj_size or self.hidden_size

    def _parameter_shapes(self, layer_input: int) -> list[tuple[str, tuple[int, ...]]]:
        """(name stem, shape) of one layer and direction's parameters, in PyTorch's order."""
        gates = GATES[self.mode] * self.hidden_size
        shapes = [("weight_ih", (gates, layer_input)), ("weight_hh", (gates, self.output_size))]
        if self.bias:
            shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
        if self.proj_size:
            shapes.append(("weight_hr", (self.proj_size, self.hidden_size)))
        return shapes

    def reset_parameters(self) -> None:
        """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self) -> None:
        """Does nothing: PyTorch packs the weights into one block for cuDNN; tinynorm needs no packing."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, as PyTorch's ``all_weights``."""
        return [[getattr(self, name) for name in names] for names in self._weight_names]

    # ------------------------------------------------------------------------------------ steps
    def _step(self, x: Tensor, state: State, weights: list[Tensor]) -> State:
        """The state after one time step with input ``x`` (N, layer_input)."""
        if self.mode == "LSTM":
            return recurrent.lstm_cell(x, *state, *self._cell_weights(weights))
        cell = {"RNN_TANH": recurrent.rnn_tanh_cell, "RNN_RELU": recurrent.rnn_relu_cell,
                "GRU": recurrent.gru_cell}[self.mode]
        return (cell(x, *state, *self._cell_weights(weights)),)

    def _cell_weights(self, weights: list[Tensor]) -> list[Tensor | None]:
        """(w_ih, w_hh, b_ih, b_hh[, w_hr]) with None for the biases of a layer without them."""
        w_ih, w_hh, *rest = weights
        biases = rest[:2] if self.bias else [None, None]
        return [w_ih, w_hh, *biases, *rest[2 if self.bias else 0:]]

    def _state_sizes(self) -> tuple[int, ...]:
        return (self.output_size, self.hidden_size) if self.mode == "LSTM" else (self.output_size,)

    # ---------------------------------------------------------------------------------- forward
    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Any]:  # noqa: A002  (PyTorch's name)
        """(output, h_n), or for an LSTM (output, (h_n, c_n)); see the module docstring for shapes."""
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__} (packed sequences are "
                            "not supported)")
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D tensor instead")
        check_dtype(name, input, self.weight_ih_l0)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(1)  # (L, 1, input_size), whatever batch_first says
        time_dim = 1 if self.batch_first and batched else 0
        steps, batch = x.shape[time_dim], x.shape[1 - time_dim]
        if steps == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        states = self._initial_states(hx, batch, batched, x)
        inputs = [x[:, t] if time_dim else x[t] for t in range(steps)]
        finals: list[State] = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self.num_directions):
                index = layer * self.num_directions + direction
                sequence, final = self._scan(inputs, states[index], self._weight_names[index], reverse=direction == 1)
                finals.append(final)
                outputs.append(sequence)
            inputs = outputs[0] if self.num_directions == 1 else [cat(pair, -1) for pair in zip(*outputs)]
            if self.dropout and self.training and layer < self.num_layers - 1:
                inputs = [dropout_op(step, self.dropout, True) for step in inputs]
        output = stack(inputs, dim=time_dim)
        final = tuple(stack([state[k] for state in finals]) for k in range(len(self._state_sizes())))
        if not batched:
            output = output.squeeze(1)
            final = tuple(f.squeeze(1) for f in final)
        return output, (final if self.mode == "LSTM" else final[0])

    def _scan(self, inputs: list[Tensor], state: State, weight_names: tuple[str, ...],
              reverse: bool) -> tuple[list[Tensor], State]:
        """One layer and direction over the sequence: its output at every step (in time order) and its
        last state. The reverse direction starts at the last step."""
        weights = [getattr(self, name) for name in weight_names]
        sequence: list[Tensor] = [None] * len(inputs)  # type: ignore[list-item]
        for t in (reversed(range(len(inputs))) if reverse else range(len(inputs))):
            state = self._step(inputs[t], state, weights)
            sequence[t] = state[0]
        return sequence, state

    def _initial_states(self, hx: Any, batch: int, batched: bool, x: Tensor) -> list[State]:
        """Each layer and direction's starting state: zeros, or the slices of the given ``hx``."""
        name, count = type(self).__name__, self.num_layers * self.num_directions
        sizes = self._state_sizes()
        if hx is None:
            zeros = [creation.zeros(batch, size, dtype=x.dtype, device=x.device) for size in sizes]
            return [tuple(zeros)] * count
        given = self._check_hx(hx)
        dims = 3 if batched else 2
        if any(h.ndim != dims for h in given):
            kind = f"{'batched 3-D' if batched else 'unbatched 2-D'} input"
            what = "hx should also be" if len(given) == 1 else "hx and cx should also be"
            got = ", ".join(f"{h.ndim}-D" for h in given)
            got = f"{got} tensor" if len(given) == 1 else f"({got}) tensors"
            raise RuntimeError(f"For {kind}, {what} {dims}-D but got {got}")
        if not batched:
            given = tuple(h.unsqueeze(1) for h in given)
        for k, (h, size) in enumerate(zip(given, sizes)):
            expected = (count, batch, size)
            if tuple(h.shape) != expected:
                which = "hidden" if len(given) == 1 else f"hidden[{k}]"
                raise RuntimeError(f"Expected {which} size {expected}, got {list(h.shape)}")
            if h.dtype != x.dtype:
                raise RuntimeError(f"{name}: hx dtype {h.dtype} does not match the input's {x.dtype}")
        return [tuple(h[index] for h in given) for index in range(count)]

    def _check_hx(self, hx: Any) -> tuple[Tensor, ...]:
        name = type(self).__name__
        if self.mode == "LSTM":
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2 and all(isinstance(h, Tensor) for h in hx)):
                raise TypeError(f"{name}: hx must be a tuple (h_0, c_0) of two tensors, got {type(hx).__name__}")
            return tuple(hx)
        if not isinstance(hx, Tensor):
            raise TypeError(f"{name}: hx must be a Tensor, got {type(hx).__name__}")
        return (hx,)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), or ReLU with nonlinearity='relu'.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``, positionally too, as PyTorch.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            if "nonlinearity" in kwargs:
                raise TypeError("RNN: got multiple values for argument 'nonlinearity'")
            kwargs["nonlinearity"] = args[3]
            args = args[:3] + args[4:]
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o in PyTorch's order):

        c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g),  h_t = sigmoid(o) * tanh(c_t)

    and with ``proj_size > 0`` h_t = W_hr h_t (LSTMP). ``LSTM(input_size, hidden_size, num_layers=1,
    bias=True, batch_first=False, dropout=0.0, bidirectional=False, proj_size=0)``; ``forward``
    returns (output, (h_n, c_n)).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n in PyTorch's order):

        r = sigmoid(W_ir x + b_ir + W_hr h + b_hr),  z = sigmoid(W_iz x + b_iz + W_hz h + b_hz),
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),  h' = (1 - z) * n + z * h
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)
