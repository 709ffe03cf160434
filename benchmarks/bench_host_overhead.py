"""Host time per call on the CUDA device, layer by layer: the Python that runs before a kernel starts.

A small norm call is launch-bound: the GPU finishes a 64x64 LayerNorm in a few microseconds, so what
the caller waits for is the host's work. This script times that work at each layer of tinynorm, on
small float32 inputs, as back-to-back calls:

- ``kernel``: ``tinynorm.kernels.cuda.layer_norm_forward(x, w, b, eps, out=y)`` on ``CudaArray``s
  (argument checks, grid sizing, launch);
- ``backend``: the CUDA backend's ``layer_norm_forward`` (the same function: the backend's name is the
  kernel wrapper), allocating its output;
- ``functional``: ``tinynorm.nn.functional.layer_norm`` on tensors, autograd off (plus the op's reshapes
  and dtype rules, the Function machinery and the result tensor);
- ``functional + backward``: the same with autograd on, then ``backward`` with a given gradient;
- for comparison, an elementwise ``x + x`` on tensors;
- and, with ``--fake-device`` only, a whole training step (zero_grad, forward, cross-entropy, backward,
  optimizer step) of the two models of ``bench_training_cuda.py`` at its batch sizes: SmallCNN
  (BatchNorm, width 16, 32 8x8 images, SGD with momentum) and TinyTransformerLM (Pre-LN, d_model 64, 4
  layers, 16 x 32 tokens, Adam), on random data.

On a GPU (``python3 benchmarks/bench_host_overhead.py``) the times include the launches, through
tinynorm's driver-level launch or, with ``TINYNORM_FAST_LAUNCH=0``, through Numba's dispatcher; each row
says which path its launches took (``driver``/``dispatcher`` columns: launches per call). Two proxies
run without a GPU and time tinynorm's own Python, no GPU work:

- ``--fake-device`` (``tests/cuda/fake_device.py``): storages at made-up device addresses through the
  real caching allocator, and tinynorm's own launch path down to the driver call: the plans fill their
  parameter blocks and call a stand-in for ``cuLaunchKernel`` that records the launch. Everything a call
  does on the host but the driver's own work: the closer proxy.
- ``--simulator``: Numba's CUDA simulator, whose storages are host numpy arrays; launches are replaced
  by a counter.

Proxies are what a machine without a GPU can track, not GPU figures. The table gives the median
microseconds per call and the kernel launches per call; the JSON keeps both.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if "--simulator" in sys.argv:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported
elif "--fake-device" in sys.argv:
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)  # the fake device needs numba-cuda's real classes

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "cuda")]  # tinynorm from this checkout, and the fake device

import numpy as np  # noqa: E402
from common import median_time, print_table, replace_kernel_launches, training_step, write_json  # noqa: E402

import tinynorm  # noqa: E402
import tinynorm.nn.functional as F  # noqa: E402
from tinynorm.backends import cuda as backend  # noqa: E402
from tinynorm.backends.cuda.runtime import launch  # noqa: E402
from tinynorm.kernels import cuda as kernels  # noqa: E402
from tinynorm.models import SmallCNN, TinyTransformerLM  # noqa: E402

EPS = 1e-5
SHAPE = (64, 64)


def count_launches_instead() -> list:
    """Replace every kernel module's ``launch`` with a counter; returns the list it appends to."""
    launches: list = []
    replace_kernel_launches(lambda kernel, *args, **kwargs: launches.append(kernel))
    return launches


def calls(rng: np.random.Generator, fake: bool = False) -> dict:
    """The timed calls, by level, on the same small inputs (and, on the fake device, the training steps)."""
    x_host = rng.standard_normal(SHAPE).astype(np.float32)
    x = tinynorm.tensor(x_host, device="cuda")
    w = tinynorm.tensor(np.ones(SHAPE[1], np.float32), device="cuda")
    b = tinynorm.tensor(np.zeros(SHAPE[1], np.float32), device="cuda")
    leaf = tinynorm.tensor(x_host, device="cuda", requires_grad=True)
    grad = tinynorm.tensor(rng.standard_normal(SHAPE).astype(np.float32), device="cuda")
    y = x.array.copy()

    def forward_backward() -> None:
        F.layer_norm(leaf, SHAPE[1:], w, b, EPS).backward(grad)

    def functional() -> None:
        with tinynorm.no_grad():
            F.layer_norm(x, SHAPE[1:], w, b, EPS)

    def kernel() -> None:
        kernels.layer_norm_forward(x.array, w.array, b.array, EPS, out=y)

    return {
        "kernel layer_norm_forward(out=)": kernel,
        "backend layer_norm_forward": lambda: backend.layer_norm_forward(x.array, w.array, b.array, EPS),
        "functional layer_norm": functional,
        "functional layer_norm + backward": forward_backward,
        "tensor x + x": lambda: x + x,
        **(training_steps(rng) if fake else {}),
    }


def training_steps(rng: np.random.Generator) -> dict:
    """One training step of each of bench_training_cuda.py's models (its full configs), on random data."""
    from bench_training_cuda import CONFIGS

    cnn_config, lm_config = CONFIGS["full"]
    vocab = 65  # the text corpus's character count
    cnn = SmallCNN(norm="batchnorm", width=cnn_config.width).to("cuda")
    lm = TinyTransformerLM(vocab, lm_config.d_model, lm_config.n_heads, lm_config.n_layers, lm_config.seq_len,
                           norm="layernorm", placement="pre").to("cuda")
    images = rng.standard_normal((cnn_config.batch_size, 1, 8, 8)).astype(np.float32)
    cnn_batch = [tinynorm.tensor(images, device="cuda"),
                 tinynorm.tensor(rng.integers(0, 10, cnn_config.batch_size), device="cuda")]
    lm_batch = [tinynorm.tensor(rng.integers(0, vocab, (lm_config.batch_size, lm_config.seq_len)), device="cuda")
                for _ in range(2)]
    cnn_optimizer = tinynorm.optim.SGD(cnn.parameters(), lr=cnn_config.lr, momentum=0.9)
    lm_optimizer = tinynorm.optim.Adam(lm.parameters(), lr=lm_config.lr)

    return {"training step SmallCNN": lambda: training_step(cnn, cnn_optimizer, *cnn_batch),
            "training step TinyTransformerLM": lambda: training_step(lm, lm_optimizer, *lm_batch)}


def measure(todo: dict, launches: list | None, fake: bool) -> list[dict]:
    """Median host µs per call of each of ``todo``, and the launches of one call by the path they took
    (``launches``: the fake device's record or the simulator's counter; None on a GPU, where the
    runtime's counts tell)."""
    rows = []
    for name, fn in todo.items():
        fn()
        seconds = median_time(fn, repeat=7, min_time=0.05)
        before = dict(launch.counts)
        if launches is not None:
            launches.clear()
        fn()
        row = {"call": name, "host us": seconds * 1e6}
        if fake:
            row["driver"] = sum(path == "driver" for path, _ in launches)
            row["dispatcher"] = sum(path == "dispatcher" for path, _ in launches)
        elif launches is not None:  # the simulator's counter: every launch would take the dispatcher
            row["launches"] = len(launches)
        else:
            row["driver"] = launch.counts["driver"] - before.get("driver", 0)
            row["dispatcher"] = launch.counts["dispatcher"] - before.get("dispatcher", 0)
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    proxies = parser.add_mutually_exclusive_group()
    proxies.add_argument("--fake-device", action="store_true",
                         help="storages at fake addresses, launched through tinynorm's plans onto a recording "
                              "stand-in driver (tests/cuda/fake_device.py): no GPU needed")
    proxies.add_argument("--simulator", action="store_true",
                         help="Numba's CUDA simulator, launches counted instead of run: tinynorm's Python only")
    parser.add_argument("--both-paths", action="store_true",
                        help="on a GPU: measure with the driver-level launch, then with Numba's dispatcher")
    parser.add_argument("--out", default="benchmarks/out/bench_host_overhead.json")
    args = parser.parse_args()
    if args.fake_device:
        from fake_device import fake_device

        with fake_device() as launches:
            rows = run(launches, fake=True)
        mode = "fake device, launches recorded: tinynorm's Python down to the driver call"
    elif not tinynorm.cuda.is_available():
        print("no CUDA device: run on a GPU, or with --fake-device or --simulator")
        return 1
    elif args.simulator:
        rows = run(None, fake=False, simulator=True)
        mode = "simulator, launches not run: tinynorm's Python only"
    else:
        rows = []
        for fast in ((True, False) if args.both_paths else (launch.fast_launch_enabled(),)):
            launch.set_fast_launch(fast)
            rows += [{"path": "driver-level" if launch.fast_launch_enabled() else "dispatcher", **row}
                     for row in run(None, fake=False)]
            tinynorm.cuda.synchronize()
        mode = "GPU: Python + launches"
    print(f"host time per call, {SHAPE} float32 ({mode})")
    print_table(rows, list(rows[0]))
    write_json(args.out, {"mode": mode, "shape": SHAPE, "fast_launch": launch.fast_launch_enabled(),
                          "refusals": dict(launch.refusals), "rows": rows})
    return 0


def run(launches: list | None, fake: bool, simulator: bool = False) -> list[dict]:
    """Build the calls, run each once (compiling, or in the simulator running, every kernel), then
    measure them."""
    todo = calls(np.random.default_rng(0), fake=fake)
    for fn in todo.values():
        fn()
    if simulator:
        launches = count_launches_instead()
    return measure(todo, launches, fake)


if __name__ == "__main__":
    sys.exit(main())
