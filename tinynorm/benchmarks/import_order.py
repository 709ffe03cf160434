"""Whether tinynorm's speed depends on what the process imported before it (``tinynorm/_openmp.py``).

Each order runs in a fresh process with the environment a user has (no OpenMP settings): PyTorch
imported before tinynorm, and after it. Each process reports the CPU time its idle threads burn in
0.2 s after a parallel kernel, and the CPU time (and wall time) of a step that mixes BLAS (a 256x256
matmul) with a parallel kernel (LayerNorm over 512x1024, just at the parallel threshold) five times.
CPU time counts the process's own spinning threads, not other processes, so it stays meaningful on a
shared machine; the ratio of the two orders is the figure (1.0: the order does not matter).

Run: ``tinynorm bench import-order [--rounds 8]`` (needs PyTorch).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence

from .. import _openblas
from . import common

# Prints a JSON object: the CPU ms that idle threads burn in 0.2 s after a parallel kernel (median of
# 5), the least CPU and the least wall ms of the mixed step over ROUNDS samples of 10 steps, and how
# tinynorm loaded its OpenMP layer.
SCRIPT = """
import json, sys, time
if sys.argv[1] == "torch-first":
    import torch
import numpy as np
import tinynorm
import tinynorm.nn.functional as F
rounds = int(sys.argv[2])
x = tinynorm.randn(512, 1024)
a = tinynorm.randn(256, 256)
def step():
    for _ in range(5):
        a @ a
        F.layer_norm(x, (1024,))
def ms(fn, calls):
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.process_time() - cpu) / calls * 1e3, (time.perf_counter() - wall) / calls * 1e3
def idle_after_kernel():
    F.layer_norm(x, (1024,))
    return ms(lambda: time.sleep(0.2), 1)[0]
step()
cpu_ms, wall_ms = (min(times) for times in zip(*(ms(step, 10) for _ in range(rounds))))
idle_ms = float(np.median([idle_after_kernel() for _ in range(5)]))
print(json.dumps({"idle_cpu_ms": idle_ms, "step_cpu_ms": cpu_ms, "step_wall_ms": wall_ms,
                  "layer_load": tinynorm._openmp.layer_load}))
"""


def user_environment() -> dict[str, str]:
    """This process's environment without the OpenMP settings a user did not choose (tinynorm's own), nor
    the OpenBLAS spin tinynorm set."""
    env = dict(os.environ)
    for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "OMP_NUM_THREADS"):
        env.pop(name, None)
    if _openblas.configured:
        env.pop("OPENBLAS_THREAD_TIMEOUT", None)
    return env


def measure(order: str, rounds: int = 8, env: dict[str, str] | None = None) -> dict:
    """Run the mixed step in a fresh process importing PyTorch in ``order``; returns its JSON report."""
    result = subprocess.run([sys.executable, "-c", SCRIPT, order, str(rounds)], capture_output=True, text=True,
                            env=user_environment() if env is None else env, timeout=600, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tinynorm bench import-order", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="samples of 10 steps per process (the least is kept)")
    parser.add_argument("--out", default="results/bench_import-order.json", help="JSON output (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if not common.torch_installed():
        print("tinynorm bench import-order compares importing PyTorch before and after tinynorm: install torch")
        return 1
    rounds = 3 if args.quick else args.rounds
    rows = [{"order": order, **measure(order, rounds)} for order in common.ORDERS]
    for key in ("step_cpu_ms", "step_wall_ms", "idle_cpu_ms"):
        rows[0][f"{key} ratio"] = rows[0][key] / rows[1][key]
    common.print_table(rows, ["order", "layer_load", "step_cpu_ms", "step_wall_ms", "idle_cpu_ms", "step_cpu_ms ratio",
                              "step_wall_ms ratio"])
    print("ratio: torch-first over tinynorm-first (1.0: the import order does not matter)")
    common.write_json(args.out, {"benchmark": "import-order", "rounds": rounds, "rows": rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
