"""How much the autograd engine costs: tinynorm against PyTorch on the CPU, same threads, float32.

1. One training step (forward, backward, SGD update) of an MLP 64 -> 256 -> 256 -> 10 on a batch of
   64 with cross-entropy: small layers, so the engine's per-op bookkeeping shows next to the math.
2. A chain of 100 elementwise ops on a 16x16 tensor, forward + backward, reported per op: almost
   pure overhead (Function.apply, graph recording, the backward walk).

Both libraries get the same thread count (``--threads``, default Numba's), and so does numpy's BLAS,
which runs tinynorm's matmuls (threadpoolctl limits it). Samples of the two libraries alternate, so
load from other processes hits both alike. On a busy machine, use ``--threads 1 --clock cpu``: wall
times there swing by 3x from run to run, CPU times far less.

Run: ``python benchmarks/bench_engine.py [--threads N] [--clock wall|cpu] [--repeat 15] [--out PATH]``
(default ``--out benchmarks/out/bench_engine.json``).
"""
from __future__ import annotations

import argparse
from typing import Any, Callable

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

from common import CLOCKS, alternating_medians, print_table, write_json  # first: it fixes the OpenMP settings for both contenders
import numba
import numpy as np
from threadpoolctl import threadpool_limits

import tinynorm
import tinynorm.nn.functional as F
from tinynorm import nn
from tinynorm.optim import SGD

SIZES = (64, 256, 256, 10)
BATCH = 64
CHAIN = 100
LR = 0.01


def tinynorm_step(rng: np.random.Generator) -> Callable[[], None]:
    layers = []
    for n_in, n_out in zip(SIZES[:-1], SIZES[1:]):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    optimizer = SGD(model.parameters(), lr=LR)
    x = tinynorm.tensor(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
    y = tinynorm.tensor(rng.integers(0, SIZES[-1], BATCH))

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


def torch_step(torch: Any, rng: np.random.Generator) -> Callable[[], None]:
    layers = []
    for n_in, n_out in zip(SIZES[:-1], SIZES[1:]):
        layers += [torch.nn.Linear(n_in, n_out), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    x = torch.from_numpy(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, SIZES[-1], BATCH))

    def step() -> None:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


def op_chain(lib: Any, make_leaf: Callable[[np.ndarray], Any]) -> Callable[[], None]:
    """CHAIN elementwise ops (a cycle of *, +, tanh, -) on a 16x16 leaf, then backward."""
    x = make_leaf(np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32))

    def run() -> None:
        y = x
        for _ in range(CHAIN // 4):
            y = lib.tanh(y * 0.9 + 0.1) - 0.01
        y.sum().backward()
        x.grad = None

    return run


def measure(repeat: int, clock: Callable[[], float]) -> list[dict]:
    rng = np.random.default_rng(0)
    cases = {
        "step": [tinynorm_step(rng)],
        "chain": [op_chain(tinynorm, lambda a: tinynorm.tensor(a, requires_grad=True))],
    }
    try:
        import torch
        torch.set_num_threads(numba.get_num_threads())
        cases["step"].append(torch_step(torch, rng))
        cases["chain"].append(op_chain(torch, lambda a: torch.tensor(a, requires_grad=True)))
    except ImportError:
        print("PyTorch is not installed: tinynorm timings only")
    names = {"step": f"MLP {'-'.join(map(str, SIZES))} batch {BATCH} train step",
             "chain": f"per op, chain of {CHAIN} elementwise ops 16x16 fwd+bwd"}
    divisors = {"step": 1, "chain": CHAIN + 1}  # + 1: the final sum
    rows = []
    for key, fns in cases.items():
        seconds = alternating_medians(fns, repeat, clock=clock)
        row = {"case": names[key], "tinynorm_us": seconds[0] * 1e6 / divisors[key]}
        if len(seconds) > 1:
            row["torch_us"] = seconds[1] * 1e6 / divisors[key]
            row["ratio"] = row["tinynorm_us"] / row["torch_us"]
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/out/bench_engine.json")
    parser.add_argument("--repeat", type=int, default=15, help="timing samples per case (the median is kept)")
    parser.add_argument("--threads", type=int, default=numba.get_num_threads(),
                        help="threads for Numba, PyTorch and numpy's BLAS alike")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="'cpu' counts this process's CPU time: steadier on a busy machine, needs --threads 1")
    parser.add_argument("--quick", action="store_true", help="fewer timing samples (5), for the demo")
    args = parser.parse_args()
    if args.quick:
        args.repeat = 5
    if args.clock == "cpu" and args.threads != 1:
        parser.error("--clock cpu needs --threads 1 (idle worker threads spinning would count as work)")
    numba.set_num_threads(args.threads)
    with threadpool_limits(args.threads, user_api="blas"):
        rows = measure(args.repeat, CLOCKS[args.clock])
        print(f"threads: {args.threads} (Numba, PyTorch and BLAS), {args.clock} clock")
        print_table(rows, ["case", "tinynorm_us", "torch_us", "ratio"])
        write_json(args.out, {"benchmark": "engine", "threads": args.threads, "clock": args.clock, "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
