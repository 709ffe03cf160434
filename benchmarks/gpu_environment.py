"""What a GPU run depends on, printed first: paths and versions, the driver, the clocks, and a first
tinynorm kernel launched through its driver-level path.

Run: ``python3 benchmarks/gpu_environment.py`` (tinynorm from this checkout). Prints one line
``environment: {json}`` (``benchmarks/run_gpu_suite.py`` keeps it in ``run.json``) after a readable
report. Every probe is guarded: one that fails records its error and the next one runs.

Probes: the paths and versions of numpy, numba, numba-cuda and cuda-bindings; where NVVM and nvJitLink
were found and their versions; the driver's CUDA version; ``CUDA_HOME`` and
``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM``; ``nvidia-smi``'s name, driver, clocks and power limit;
one RMSNorm forward of tinynorm on the GPU, checked against numpy, with the launch path it took and any
plan refusal; and the registers and maximum threads per block of the wide LayerNorm/RMSNorm kernels
(they launch with up to 1024 threads, which needs at most 64 registers).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

record: dict[str, Any] = {}


def probe(name: str, function: Callable[[], Any]) -> None:
    """``record[name] = function()``, or the error it raised."""
    try:
        record[name] = function()
    except Exception as error:  # noqa: BLE001  (a probe that fails is a finding, not the end)
        record[name] = {"error": f"{type(error).__name__}: {error}"}
    print(f"{name}: {record[name]}", flush=True)


def module(name: str) -> dict:
    imported = __import__(name, fromlist=["__version__"])
    return {"version": getattr(imported, "__version__", None), "path": getattr(imported, "__file__", None)}


def nvvm() -> dict:
    from numba.cuda.cudadrv import nvvm as numba_nvvm

    library = numba_nvvm.NVVM()
    return {"version": list(library.get_version()), "ir_version": list(library.get_ir_version()),
            "found": str(getattr(library, "_libpath", None) or "through cuda-pathfinder")}


def nvjitlink() -> dict:
    from cuda.bindings import nvjitlink as binding

    return {"version": list(binding.version()), "path": binding.__file__}


def driver() -> dict:
    from cuda.bindings import driver as binding

    binding.cuInit(0)
    error, version = binding.cuDriverGetVersion()
    return {"cuda_driver_version": version, "error": str(error)}


def nvidia_smi() -> str:
    query = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,temperature.gpu"
    return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv"], capture_output=True, text=True,
                          timeout=20, check=True).stdout.strip()


def first_norm() -> dict:
    import numpy as np

    from tinynorm.backends.cuda.array import CudaArray
    from tinynorm.backends.cuda.runtime import launch
    from tinynorm.kernels import cuda as kernels

    x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    before = dict(launch.counts)
    y, _ = kernels.rms_norm_forward(CudaArray.from_host(x), None, 1e-5)
    expected = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    return {"max_error": float(np.abs(y.to_numpy() - expected).max()),
            "driver_launches": launch.counts["driver"] - before.get("driver", 0),
            "dispatcher_launches": launch.counts["dispatcher"] - before.get("dispatcher", 0),
            "refusals": dict(launch.refusals), "fast_launch": launch.fast_launch_enabled()}


def wide_kernels() -> dict:
    from numba import types

    from tinynorm.kernels.cuda import _row_norm

    report = {}
    for dtype in (types.float32, types.float16):
        x, p1, p3 = types.Array(dtype, 2, "C"), types.Array(types.float32, 1, "C"), types.Array(types.float32, 3, "C")
        for name, kernel, signature in [
                ("LN forward", _row_norm.wide_forward, (x, p1, p1, types.float32, x, p1, p1, types.int64)),
                ("LN backward", _row_norm.wide_backward, (x, x, p1, p1, p1, x, p3, types.int64)),
                ("RMS backward, no weight", _row_norm.wide_backward, (x, x, types.none, p1, types.none, x, p3,
                                                                      types.int64))]:
            compiled = kernel.compile(signature)
            report[f"{name} [{dtype}]"] = {"registers": compiled.regs_per_thread,
                                           "max_threads_per_block": compiled.max_threads_per_block}
    return report


def main() -> int:
    import argparse

    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    for name in ("numpy", "numba", "numba_cuda", "cuda.bindings"):
        probe(name, lambda name=name: module(name))
    probe("environment variables", lambda: {key: os.environ.get(key) for key in (
        "CUDA_HOME", "CUDA_PATH", "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "NUMBA_ENABLE_CUDASIM",
        "TINYNORM_FAST_LAUNCH", "CUDA_LAUNCH_BLOCKING", "PYTHONPATH")})
    from numba import config

    record["simulator"] = bool(config.ENABLE_CUDASIM)
    if not config.ENABLE_CUDASIM:
        probe("nvvm", nvvm)
        probe("nvjitlink", nvjitlink)
        probe("driver", driver)
        probe("nvidia-smi", nvidia_smi)
    probe("first tinynorm kernel (RMSNorm forward 64x256)", first_norm)
    if not config.ENABLE_CUDASIM:
        probe("wide row-norm kernels", wide_kernels)
    print("environment:", json.dumps(record, default=str))
    first = record["first tinynorm kernel (RMSNorm forward 64x256)"]
    return 0 if isinstance(first, dict) and first.get("max_error", 1) < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
