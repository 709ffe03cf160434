"""Host time per call on the CUDA device, layer by layer: the Python that runs before a kernel starts.

A small norm call is launch-bound: the GPU finishes a 64x64 LayerNorm in a few microseconds, so what
the caller waits for is the host's work. This script times that work at each layer of tinynorm, on
small float32 inputs, as back-to-back calls:

- ``kernel``: ``tinynorm.kernels.cuda.layer_norm_forward(x, w, b, eps, out=y)`` on Numba device arrays
  (argument checks, grid sizing, launch);
- ``backend``: the CUDA backend's ``layer_norm_forward`` on ``CudaArray`` views (plus unwrapping and
  wrapping the arrays);
- ``functional``: ``tinynorm.nn.functional.layer_norm`` on tensors, autograd off (plus the op's reshapes
  and dtype rules, the Function machinery and the result tensor);
- ``functional + backward``: the same with autograd on, then ``backward`` with a given gradient;
- and, for comparison, an elementwise ``x + x`` on tensors.

On a GPU (``python benchmarks/bench_host_overhead.py``) the times include the launches (through
tinynorm's driver-level launch) and the caching allocator. With ``--simulator`` the script runs in
Numba's CUDA simulator with every launch replaced by a counter: it then times only tinynorm's own
Python, with the simulator's host arrays standing in for device arrays. That is a proxy a machine
without a GPU can track, not a GPU figure. The table gives the median microseconds per call and the
kernel launches per call; the JSON keeps both.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if "--simulator" in sys.argv:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

import numpy as np  # noqa: E402
from common import median_time, print_table, write_json  # noqa: E402

import tinynorm  # noqa: E402
import tinynorm.nn.functional as F  # noqa: E402
from tinynorm.backends import cuda as backend  # noqa: E402
from tinynorm.kernels import cuda as kernels  # noqa: E402
from tinynorm.kernels.cuda import launch  # noqa: E402

EPS = 1e-5
SHAPE = (64, 64)


def count_launches_instead() -> list:
    """Replace every kernel module's ``launch`` with a counter; returns the list it appends to."""
    launches: list = []
    original = launch.launch

    def counted(*args, **kwargs) -> None:
        launches.append(args[0])

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("tinynorm.kernels.cuda") and getattr(module, "launch", None) is original:
            module.launch = counted
    return launches


def calls(rng: np.random.Generator) -> dict:
    """The timed calls, by level, on the same small inputs."""
    x_host = rng.standard_normal(SHAPE).astype(np.float32)
    x = tinynorm.tensor(x_host, device="cuda")
    w = tinynorm.tensor(np.ones(SHAPE[1], np.float32), device="cuda")
    b = tinynorm.tensor(np.zeros(SHAPE[1], np.float32), device="cuda")
    leaf = tinynorm.tensor(x_host, device="cuda", requires_grad=True)
    grad = tinynorm.tensor(rng.standard_normal(SHAPE).astype(np.float32), device="cuda")
    x_numba, w_numba, b_numba = (t.data.as_numba() for t in (x, w, b))
    y_numba = x.data.copy().as_numba()

    def forward_backward() -> None:
        F.layer_norm(leaf, SHAPE[1:], w, b, EPS).backward(grad)

    def functional() -> None:
        with tinynorm.no_grad():
            F.layer_norm(x, SHAPE[1:], w, b, EPS)

    return {
        "kernel layer_norm_forward(out=)": lambda: kernels.layer_norm_forward(x_numba, w_numba, b_numba, EPS, out=y_numba),
        "backend layer_norm_forward": lambda: backend.layer_norm_forward(x.data, w.data, b.data, EPS),
        "functional layer_norm": functional,
        "functional layer_norm + backward": forward_backward,
        "tensor x + x": lambda: x + x,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulator", action="store_true",
                        help="Numba's CUDA simulator, launches counted instead of run: tinynorm's Python only")
    parser.add_argument("--out", default="benchmarks/out/bench_host_overhead.json")
    args = parser.parse_args()
    if not tinynorm.cuda.is_available():
        print("no CUDA device: run on a GPU, or with --simulator")
        return 1
    todo = calls(np.random.default_rng(0))
    for fn in todo.values():
        fn()  # compile (or, in the simulator, run) every kernel once before the launches are counted
    launches = count_launches_instead() if args.simulator else None
    rows = []
    for name, fn in todo.items():
        fn()
        seconds = median_time(fn, repeat=7, min_time=0.05)
        if launches is not None:
            launches.clear()
            fn()
        row = {"call": name, "host us": seconds * 1e6}
        if launches is not None:
            row["launches"] = len(launches)
        rows.append(row)
    if not args.simulator:
        tinynorm.cuda.synchronize()
    mode = "simulator, launches not run: tinynorm's Python only" if args.simulator else "GPU: Python + launches"
    print(f"host time per call, {SHAPE} float32 ({mode})")
    print_table(rows, list(rows[0]))
    write_json(args.out, {"mode": mode, "shape": SHAPE, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
