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
- for comparison, an elementwise ``x + x`` on tensors;
- and, with ``--fake-device`` only, a whole training step (zero_grad, forward, cross-entropy, backward,
  optimizer step) of the two models of ``bench_training_cuda.py`` at its batch sizes: SmallCNN
  (BatchNorm, width 16, 32 8x8 images, SGD with momentum) and TinyTransformerLM (Pre-LN, d_model 64, 4
  layers, 16 x 32 tokens, Adam), on random data. That is the host's share of a GPU step, which
  ``bench_training_cuda.py`` times whole on a GPU (the simulator would take minutes per step).

On a GPU (``python benchmarks/bench_host_overhead.py``) the times include the launches (through
tinynorm's driver-level launch) and the caching allocator. Two proxies run without a GPU and time
tinynorm's own Python, no GPU work:

- ``--fake-device``: numba-cuda's real device arrays and memory pointers, on made-up device addresses
  (the caching allocator takes its blocks from a fake driver; copies between host and device do
  nothing, and reads back return zeros), and tinynorm's own launch path down to the driver call: the
  plans of ``kernels/cuda/launch.py`` fill their parameter blocks and call a stand-in driver that
  records the launch (Numba's dispatcher, taken by a kernel's first launch, only records it). Everything
  a call does on the host but the driver's own work: the closer proxy. The column "via dispatcher"
  counts launches that missed the driver-level path (0 expected).
- ``--simulator``: Numba's CUDA simulator, whose device arrays are host numpy arrays, cheaper to make
  and view than numba-cuda's; launches are replaced by a counter.

Proxies are what a machine without a GPU can track, not GPU figures. The table gives the median
microseconds per call and the kernel launches per call; the JSON keeps both.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from types import SimpleNamespace

if "--simulator" in sys.argv:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported
elif "--fake-device" in sys.argv:
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)  # the fake device needs numba-cuda's real classes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

import numpy as np  # noqa: E402
from common import median_time, print_table, replace_kernel_launches, training_step, write_json  # noqa: E402

import tinynorm  # noqa: E402
import tinynorm.nn.functional as F  # noqa: E402
from tinynorm.backends import cuda as backend  # noqa: E402
from tinynorm.kernels import cuda as kernels  # noqa: E402
from tinynorm.kernels.cuda import _shared, memory  # noqa: E402
from tinynorm.models import SmallCNN, TinyTransformerLM  # noqa: E402

EPS = 1e-5
SHAPE = (64, 64)


def count_launches_instead() -> list:
    """Replace every kernel module's ``launch`` with a counter; returns the list it appends to."""
    launches: list = []
    replace_kernel_launches(lambda kernel, *args, **kwargs: launches.append(kernel))
    return launches


class CountingDriver:
    """Stands in for ``cuda.bindings.driver`` in the launch plans: ``cuLaunchKernel`` records the launch."""

    CUresult = SimpleNamespace(CUDA_SUCCESS=0)
    CUstream = int

    def __init__(self, launches: list) -> None:
        self.launches = launches

    def cuLaunchKernel(self, function, *configuration) -> tuple:  # noqa: N802  (the driver's name)
        self.launches.append(("driver", function))
        return (self.CUresult.CUDA_SUCCESS,)


def launch_through_a_counting_driver() -> list:
    """On the fake device, launch through tinynorm's own ``launch`` (the driver-level path a GPU takes),
    with every driver call recorded instead of made; returns the list of launches.

    Numba's dispatcher, which compiles a kernel and launches it the first time, records the launch and
    does nothing else (there is no GPU to compile for); the plan it would leave is made for the
    counting driver. Every later launch then runs all of the fast path's Python (argument keys,
    parameter block) up to the driver call. Launches that stay on the dispatcher are recorded as such.
    """
    from numba.cuda.dispatcher import CUDADispatcher

    from tinynorm.kernels.cuda import launch

    launches: list = []
    driver = CountingDriver(launches)
    CUDADispatcher.__getitem__ = lambda kernel, configuration: lambda *args: launches.append(("dispatcher", kernel))
    launch._make_plan = lambda kernel, args: launch._Plan(driver, kernel, tuple(map(kernel.typeof_pyval, args)), args)
    launch.set_fast_launch(True)
    return launches


def use_fake_device() -> None:
    """Let tinynorm make numba-cuda device arrays without a GPU: blocks at made-up addresses from a fake
    driver, no CUDA context, an H200's SM count. Only valid when no kernel runs (see
    :func:`launch_through_a_counting_driver`)."""
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    from numba.cuda.cudadrv.driver import binding

    next_address = [1 << 32]

    def fake_driver_block(size: int) -> SimpleNamespace:
        next_address[0] += size
        return SimpleNamespace(device_pointer=binding.CUdeviceptr(next_address[0] - size))

    cache = memory.BlockCache(fake_driver_block, lambda: None)
    memory.block_cache = lambda: cache
    memory._context = lambda: None
    tinynorm.cuda._unavailable_reason = lambda: None  # device='cuda' is allowed
    DeviceNDArray.copy_to_device = lambda self, *args, **kwargs: None
    DeviceNDArray.copy_to_host = lambda self, *args, **kwargs: np.zeros(self.shape, self.dtype)
    real_device = _shared.cuda.get_current_device
    _shared.cuda.get_current_device = lambda: SimpleNamespace(MULTIPROCESSOR_COUNT=132)
    _shared.sm_count.cache_clear()
    _shared.sm_count()  # cached from now on: 132, an H200's
    _shared.cuda.get_current_device = real_device


def calls(rng: np.random.Generator, fake: bool = False) -> dict:
    """The timed calls, by level, on the same small inputs (and, on the fake device, the training steps)."""
    x_host = rng.standard_normal(SHAPE).astype(np.float32)
    x = tinynorm.tensor(x_host, device="cuda")
    w = tinynorm.tensor(np.ones(SHAPE[1], np.float32), device="cuda")
    b = tinynorm.tensor(np.zeros(SHAPE[1], np.float32), device="cuda")
    leaf = tinynorm.tensor(x_host, device="cuda", requires_grad=True)
    grad = tinynorm.tensor(rng.standard_normal(SHAPE).astype(np.float32), device="cuda")
    x_numba, w_numba, b_numba = (t.array.as_numba() for t in (x, w, b))
    y_numba = x.array.copy().as_numba()

    def forward_backward() -> None:
        F.layer_norm(leaf, SHAPE[1:], w, b, EPS).backward(grad)

    def functional() -> None:
        with tinynorm.no_grad():
            F.layer_norm(x, SHAPE[1:], w, b, EPS)

    def kernel() -> None:
        kernels.layer_norm_forward(x_numba, w_numba, b_numba, EPS, out=y_numba)

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    proxies = parser.add_mutually_exclusive_group()
    proxies.add_argument("--fake-device", action="store_true",
                         help="numba-cuda's device arrays on fake addresses, launched through tinynorm's plans "
                              "onto a recording stand-in driver: no GPU needed")
    proxies.add_argument("--simulator", action="store_true",
                         help="Numba's CUDA simulator, launches counted instead of run: tinynorm's Python only")
    parser.add_argument("--out", default="benchmarks/out/bench_host_overhead.json")
    args = parser.parse_args()
    if args.fake_device:
        use_fake_device()
    elif not tinynorm.cuda.is_available():
        print("no CUDA device: run on a GPU, or with --fake-device or --simulator")
        return 1
    launches = launch_through_a_counting_driver() if args.fake_device else None  # nothing may launch there
    todo = calls(np.random.default_rng(0), fake=args.fake_device)
    for fn in todo.values():
        fn()  # compile (or, in the simulator, run) every kernel once before the launches are counted
    if args.simulator:
        launches = count_launches_instead()
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
        if args.fake_device:
            row["via dispatcher"] = sum(path == "dispatcher" for path, _ in launches)
        rows.append(row)
    if launches is None:
        tinynorm.cuda.synchronize()
    mode = ("simulator, launches not run: tinynorm's Python only" if args.simulator else
            "fake device, launches recorded: tinynorm's Python on numba-cuda's arrays and launch plans"
            if args.fake_device else
            "GPU: Python + launches")
    print(f"host time per call, {SHAPE} float32 ({mode})")
    print_table(rows, list(rows[0]))
    write_json(args.out, {"mode": mode, "shape": SHAPE, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
