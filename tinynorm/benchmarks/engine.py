"""How much the autograd engine costs: tinynorm against PyTorch on the CPU, float32.

1. One training step (forward, backward, SGD update) of an MLP 64 -> 256 -> 256 -> 10 on a batch of
   64 with cross-entropy: small layers, so the engine's per-op bookkeeping shows next to the math.
2. A chain of 100 elementwise ops on a 16x16 tensor, forward + backward, reported per op: almost
   pure overhead (Function.apply, graph recording, the backward walk).

Samples of the two libraries alternate, so load from other processes hits both alike. On a busy
machine, ``--threads 1 --clock cpu`` is steadier: wall times there swing by 3x from run to run.

Run: ``tinynorm bench engine [--threads N] [--clock wall|cpu] [--repeat 15] [--order ...]``.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tinynorm
import tinynorm.nn.functional as F
from tinynorm.optim import SGD

from . import common

SIZES = (64, 256, 256, 10)
BATCH = 64
CHAIN = 100
LR = 0.01


def mlp_step(lib: Any, rng: np.random.Generator) -> Callable[[], None]:
    """The MLP training step in ``lib`` (tinynorm or torch); both draw the same data from ``rng``'s seed."""
    layers = []
    for n_in, n_out in zip(SIZES[:-1], SIZES[1:]):
        layers += [lib.nn.Linear(n_in, n_out), lib.nn.ReLU()]
    model = lib.nn.Sequential(*layers[:-1])
    optimizer = (SGD if lib is tinynorm else lib.optim.SGD)(model.parameters(), lr=LR)
    x = lib.tensor(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
    y = lib.tensor(rng.integers(0, SIZES[-1], BATCH))
    cross_entropy = F.cross_entropy if lib is tinynorm else lib.nn.functional.cross_entropy

    def step() -> None:
        optimizer.zero_grad()
        cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


def op_chain(lib: Any) -> Callable[[], None]:
    """CHAIN elementwise ops (a cycle of *, +, tanh, -) on a 16x16 leaf, then backward."""
    x = lib.tensor(np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32), requires_grad=True)

    def run() -> None:
        y = x
        for _ in range(CHAIN // 4):
            y = lib.tanh(y * 0.9 + 0.1) - 0.01
        y.sum().backward()
        x.grad = None

    return run


def measure(torch: Any, repeat: int, clock: Callable[[], float]) -> list[dict]:
    libraries = [tinynorm] + ([torch] if torch is not None else [])
    cases = {
        f"MLP {'-'.join(map(str, SIZES))} batch {BATCH} train step": ([mlp_step(lib, np.random.default_rng(0))
                                                                       for lib in libraries], 1),
        f"per op, chain of {CHAIN} elementwise ops 16x16 fwd+bwd": ([op_chain(lib) for lib in libraries],
                                                                    CHAIN + 1),  # + 1: the final sum
    }
    rows = []
    for name, (fns, ops) in cases.items():
        seconds = common.alternating_medians(fns, repeat, clock=clock)
        row = {"case": name, "tinynorm_us": seconds[0] * 1e6 / ops}
        if len(seconds) > 1:
            row.update(torch_us=seconds[1] * 1e6 / ops, ratio=seconds[0] / seconds[1])
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_table_benchmark("engine", __doc__, argv, measure, ["case", "tinynorm_us", "torch_us", "ratio"],
                                      repeat=15, quick_repeat=5)


if __name__ == "__main__":
    sys.exit(main())
