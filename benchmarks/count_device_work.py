"""Count what one training step asks of the CUDA device, in Numba's CUDA simulator (no GPU needed).

For TinyTransformerLM and SmallCNN on ``device='cuda'``, one step after a first one (zero_grad, forward,
cross-entropy, backward, Adam) is run with counters on:

- kernel launches (``launch.launch`` calls);
- reads back to the host (``copy_to_host``) and copies to the device (``cuda.to_device``): each one makes
  the host wait for the GPU to finish its queued work;
- Numba device-array views made on the host: slices and reshapes through Numba's own indexing, and
  ``tinynorm.kernels.cuda.memory.view`` calls that make a new view. On a GPU these cost host time:
  about 15 µs per Numba slice, 4.4 µs per reshape and 1.7 µs per ``memory.view``, measured with
  numba-cuda 0.30.4's classes on this project's CPU machine (``tests/cuda/test_memory.py`` checks that
  the views agree). The ``view µs`` column multiplies the counts by those costs: an estimate, not a
  GPU measurement;
- allocations (non-empty ``memory.empty`` arrays): on a GPU each lends a cached block, about 2.1 µs for
  the array, its block and the block's return, measured the same way.

These are counts, so the simulator gives the GPU's numbers (it runs the same host code); only the
times need a GPU. ``python benchmarks/count_device_work.py [--tiny] [--out benchmarks/out/count_device_work.json]``
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import traceback
from pathlib import Path

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

import numpy as np  # noqa: E402
from common import print_table, replace_kernel_launches, training_step, write_json  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray  # noqa: E402

import tinynorm  # noqa: E402
from tinynorm.kernels.cuda import memory  # noqa: E402
from tinynorm.models import SmallCNN, TinyTransformerLM  # noqa: E402

# Host microseconds per Numba view on a GPU machine's software stack (see the module docstring).
VIEW_US = {"numba slices": 15.0, "numba reshapes": 4.4, "memory.view": 1.7}


def _in_kernel_or_view() -> bool:
    """Whether the caller runs inside a simulated kernel (array accesses there are not host views) or
    inside memory.view (counted once, as itself)."""
    return any("simulator/kernel" in frame.filename or (frame.name == "view" and frame.filename.endswith("memory.py"))
               for frame in traceback.extract_stack()[:-2])


class Counters:
    """Patches the simulator and tinynorm to count; ``with Counters() as counts: ...``."""

    def __enter__(self) -> collections.Counter:
        self.counts: collections.Counter = collections.Counter()
        self.saved = [(FakeCUDAArray, "__getitem__"), (FakeCUDAArray, "reshape"), (FakeCUDAArray, "copy_to_host"),
                      (cuda, "to_device"), (memory, "view"), (memory, "empty")]
        self.saved = [(owner, name, getattr(owner, name)) for owner, name in self.saved]
        originals = {name: function for _, name, function in self.saved}
        counts = self.counts

        def host_view(kind: str, function):
            def counted(self, *args, **kwargs):
                if not _in_kernel_or_view():
                    counts[kind] += 1
                return function(self, *args, **kwargs)
            return counted

        def counted_copy_to_host(self, *args, **kwargs):
            counts["reads back"] += 1
            return originals["copy_to_host"](self, *args, **kwargs)

        def counted_to_device(*args, **kwargs):
            counts["copies to device"] += 1
            return originals["to_device"](*args, **kwargs)

        def counted_view(array, *args, **kwargs):
            result = originals["view"](array, *args, **kwargs)
            counts["memory.view"] += result is not array
            return result

        def counted_empty(shape, dtype):
            result = originals["empty"](shape, dtype)
            counts["allocations"] += result.size > 0
            return result

        FakeCUDAArray.__getitem__ = host_view("numba slices", originals["__getitem__"])
        FakeCUDAArray.reshape = host_view("numba reshapes", originals["reshape"])
        FakeCUDAArray.copy_to_host = counted_copy_to_host
        cuda.to_device = counted_to_device
        memory.view = counted_view
        memory.empty = counted_empty
        self.launches_before = len(LAUNCHES)
        return counts

    def __exit__(self, *exc) -> None:
        for owner, name, function in self.saved:
            setattr(owner, name, function)
        self.counts["launches"] = len(LAUNCHES) - self.launches_before


LAUNCHES: list = []


def _count_launches() -> None:
    """Record every kernel launch (the kernels still run)."""
    def counted(kernel, *args, **kwargs):
        LAUNCHES.append(kernel)
        return original(kernel, *args, **kwargs)

    original = replace_kernel_launches(counted)


def models(rng: np.random.Generator, tiny: bool) -> dict:
    """Small models (the simulator runs a Python thread per CUDA thread) and one batch each; ``tiny``:
    smaller still (1 layer, 4x4 images), for the tests."""
    layers, tokens, side = (1, 3, 4) if tiny else (2, 8, 8)
    lm = TinyTransformerLM(vocab=11, d_model=8, n_heads=2, n_layers=layers, block_size=8)
    cnn = SmallCNN(norm="batchnorm", width=2, num_classes=3)
    images = rng.standard_normal((2, 1, side, side)).astype(np.float32)
    return {
        f"TinyTransformerLM ({layers} layers)": (lm, *(rng.integers(0, 11, (2, tokens)) for _ in range(2))),
        "SmallCNN (BatchNorm)": (cnn, images, rng.integers(0, 3, 2)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/out/count_device_work.json")
    parser.add_argument("--tiny", action="store_true", help="1 layer, 4x4 images: faster, for the tests")
    args = parser.parse_args()
    _count_launches()
    tinynorm.manual_seed(0)
    rows = []
    for name, (model, inputs, targets) in models(np.random.default_rng(0), args.tiny).items():
        model.to("cuda")
        optimizer = tinynorm.optim.Adam(model.parameters(), lr=1e-3)
        inputs, targets = tinynorm.tensor(inputs, device="cuda"), tinynorm.tensor(targets, device="cuda")
        training_step(model, optimizer, inputs, targets)
        with Counters() as counts:
            training_step(model, optimizer, inputs, targets)
        row = {"model": name, **{key: counts[key] for key in ("launches", "allocations", "reads back",
                                                                "copies to device", *VIEW_US)}}
        row["view us (estimate)"] = sum(VIEW_US[key] * counts[key] for key in VIEW_US)
        rows.append(row)
    print("one training step on device='cuda', counted in Numba's CUDA simulator")
    print_table(rows, list(rows[0]))
    write_json(args.out, {"rows": rows, "view_us": VIEW_US})
    return 0


if __name__ == "__main__":
    sys.exit(main())
