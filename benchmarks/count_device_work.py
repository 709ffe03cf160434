"""Count what one training step asks of the CUDA device, in Numba's CUDA simulator (no GPU needed).

For TinyTransformerLM and SmallCNN on ``device='cuda'``, one step after a first one (zero_grad, forward,
cross-entropy, backward, Adam) is run with counters on:

- kernel launches (``launch.launch`` calls);
- reads back to the host and copies to the device (``runtime.memory.copy_to_host`` and
  ``copy_to_device``): each one makes the host wait for the GPU to finish its queued work;
- allocations (non-empty storages from ``runtime.memory.allocate``): on a GPU each takes a cached block
  and gives it back when its arrays are gone.

These are counts, so the simulator gives the GPU's numbers (it runs the same host code); only the
times need a GPU. ``python3 benchmarks/count_device_work.py [--tiny] [--out benchmarks/out/count_device_work.json]``
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

import numpy as np  # noqa: E402
from common import print_table, replace_kernel_launches, training_step, write_json  # noqa: E402

import tinynorm  # noqa: E402
from tinynorm.backends.cuda.runtime import memory  # noqa: E402
from tinynorm.models import SmallCNN, TinyTransformerLM  # noqa: E402

COUNTED = ("launches", "allocations", "reads back", "copies to device")


class Counters:
    """Counts launches, allocations and copies while in effect; ``with Counters() as counts: ...``."""

    def __enter__(self) -> collections.Counter:
        self.counts: collections.Counter = collections.Counter()
        counts = self.counts
        self.saved = {name: getattr(memory, name) for name in ("allocate", "copy_to_host", "copy_to_device")}
        allocate, copy_to_host, copy_to_device = self.saved.values()

        def counted_allocate(length, dtype):
            counts["allocations"] += length > 0
            return allocate(length, dtype)

        def counted_copy_to_host(*args):
            counts["reads back"] += 1
            return copy_to_host(*args)

        def counted_copy_to_device(*args):
            counts["copies to device"] += 1
            return copy_to_device(*args)

        memory.allocate, memory.copy_to_host, memory.copy_to_device = (
            counted_allocate, counted_copy_to_host, counted_copy_to_device)
        self.launches_before = len(LAUNCHES)
        return counts

    def __exit__(self, *exc) -> None:
        for name, function in self.saved.items():
            setattr(memory, name, function)
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
        rows.append({"model": name, **{key: counts[key] for key in COUNTED}})
    print("one training step on device='cuda', counted in Numba's CUDA simulator")
    print_table(rows, list(rows[0]))
    write_json(args.out, {"rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
