"""Recurrent layers on the CPU: tinynorm's LSTM and GRU against PyTorch's, and what fusing the cell step buys.

For one layer (batch 32, input 64, hidden 128, 50 steps, float32) the forward and backward of a whole
sequence is timed for
* tinynorm's ``nn.LSTM`` / ``nn.GRU`` (one fused op per cell step after the two matrix products);
* the same step composed of tinynorm's elementwise ops (slices, sigmoid, tanh, *, +: the unfused
  version), with the same weights;
* PyTorch's ``nn.LSTM`` / ``nn.GRU``;
and, to bound what a compiled (Numba) kernel for the fused op could still save, the fused op's own
forward+backward at the step's shape times the number of steps, as a share of the layer's time.

Run: ``tinynorm bench rnn [--threads 1 --clock cpu] [--repeat 9 | --quick] [--order ...] [--out PATH]``.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tinynorm
from tinynorm import nn
from tinynorm.ops import linear, recurrent, sigmoid, stack, tanh

from . import common

BATCH, INPUT, HIDDEN, STEPS = 32, 64, 128, 50


def composed_lstm(x: Any, layer: nn.LSTM) -> Any:
    """The LSTM's time loop with the cell step composed of elementwise ops."""
    w_ih, w_hh, b_ih, b_hh = layer.all_weights[0]
    h = c = tinynorm.zeros(x.shape[1], HIDDEN)
    outputs = []
    for t in range(x.shape[0]):
        gates = linear(x[t], w_ih, b_ih) + linear(h, w_hh, b_hh)
        i, f = sigmoid(gates[:, :HIDDEN]), sigmoid(gates[:, HIDDEN:2 * HIDDEN])
        g, o = tanh(gates[:, 2 * HIDDEN:3 * HIDDEN]), sigmoid(gates[:, 3 * HIDDEN:])
        c = f * c + i * g
        h = o * tanh(c)
        outputs.append(h)
    return stack(outputs)


def composed_gru(x: Any, layer: nn.GRU) -> Any:
    """The GRU's time loop with the cell step composed of elementwise ops."""
    w_ih, w_hh, b_ih, b_hh = layer.all_weights[0]
    h = tinynorm.zeros(x.shape[1], HIDDEN)
    outputs = []
    for t in range(x.shape[0]):
        gi, gh = linear(x[t], w_ih, b_ih), linear(h, w_hh, b_hh)
        r = sigmoid(gi[:, :HIDDEN] + gh[:, :HIDDEN])
        z = sigmoid(gi[:, HIDDEN:2 * HIDDEN] + gh[:, HIDDEN:2 * HIDDEN])
        n = tanh(gi[:, 2 * HIDDEN:] + r * gh[:, 2 * HIDDEN:])
        h = (1 - z) * n + z * h
        outputs.append(h)
    return stack(outputs)


def backward_of(forward: Callable[[], Any], grad: Any) -> Callable[[], None]:
    def run() -> None:
        forward().backward(grad)
    return run


def fused_op_alone(kind: str, rng: np.random.Generator) -> Callable[[], None]:
    """STEPS forward+backward calls of the fused cell op at the step's shape."""
    def leaf(*shape: int) -> Any:
        return tinynorm.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)

    grad = tinynorm.tensor(rng.standard_normal((BATCH, HIDDEN)).astype(np.float32))
    if kind == "LSTM":
        gates, c = leaf(BATCH, 4 * HIDDEN), leaf(BATCH, HIDDEN)
        op = lambda: recurrent.lstm_cell_state(gates, c)  # noqa: E731
    else:
        gi, gh, h = leaf(BATCH, 3 * HIDDEN), leaf(BATCH, 3 * HIDDEN), leaf(BATCH, HIDDEN)
        op = lambda: recurrent.GRUCellState.apply(gi, gh, h)  # noqa: E731

    def run() -> None:
        for _ in range(STEPS):
            op().backward(grad)
    return run


def measure(torch: Any, repeat: int, clock: Callable[[], float]) -> list[dict]:
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((STEPS, BATCH, INPUT)).astype(np.float32)
    grad_np = rng.standard_normal((STEPS, BATCH, HIDDEN)).astype(np.float32)
    x, grad = tinynorm.tensor(x_np, requires_grad=True), tinynorm.tensor(grad_np)
    rows = []
    for kind, composed in (("LSTM", composed_lstm), ("GRU", composed_gru)):
        layer = getattr(nn, kind)(INPUT, HIDDEN)
        fns = [backward_of(lambda: layer(x)[0], grad), backward_of(lambda: composed(x, layer), grad),
               fused_op_alone(kind, rng)]
        if torch is not None:
            theirs = getattr(torch.nn, kind)(INPUT, HIDDEN)
            theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in layer.state_dict().items()})
            tx, tgrad = torch.from_numpy(x_np).requires_grad_(), torch.from_numpy(grad_np)
            fns.append(backward_of(lambda: theirs(tx)[0], tgrad))
        seconds = common.alternating_medians(fns, repeat, clock=clock)
        row = {"layer": f"{kind} {INPUT}->{HIDDEN}, batch {BATCH}, {STEPS} steps, fwd+bwd",
               "fused_ms": seconds[0] * 1e3, "composed_ms": seconds[1] * 1e3,
               "composed/fused": seconds[1] / seconds[0], "fused_op_share": seconds[2] / seconds[0]}
        if torch is not None:
            row["torch_ms"] = seconds[3] * 1e3
            row["fused/torch"] = seconds[0] / seconds[3]
        rows.append(row)
    return rows


COLUMNS = ["layer", "fused_ms", "composed_ms", "composed/fused", "fused_op_share", "torch_ms", "fused/torch"]


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_table_benchmark("rnn", __doc__, argv, measure, COLUMNS, repeat=9, quick_repeat=3)


if __name__ == "__main__":
    sys.exit(main())
