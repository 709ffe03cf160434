"""Check the CUDA norm kernels, both launch paths and the caching allocator on a real GPU.

Run from the repository root on a machine with a GPU and numba-cuda (tinynorm need not be installed)::

    python3 benchmarks/gpu_check.py --out benchmarks/out/gpu_check.json      # run_gpu_suite.py gives it 100 s

1. Correctness on real shapes: every norm kernel (forward and backward; LayerNorm and RMSNorm on narrow,
   wide and wider-than-the-shared-cache rows; BatchNorm (N, C) and (N, C, S); GroupNorm, InstanceNorm)
   against the CPU kernels of ``tinynorm.kernels.cpu`` in float32 (float16 inputs: against the CPU
   kernels run on the same values in float32), and bitwise determinism of every backward on the GPU.
2. The driver-level launch (``tinynorm/backends/cuda/runtime/launch.py``) against Numba's dispatcher:
   bitwise identical results for every norm forward and backward on small inputs, a plan made for every
   launch and no plan refused (each refusal is listed with its reason), and the host time of small calls
   through each path.
3. The caching allocator (``runtime/memory.py``): repeating every norm call asks the driver for no new
   block once the first round has run, and dropping the results gives back all they used.

Each section that raises is recorded as a failed check and the next one runs; the JSON is written after
every section. The norm kernels' speed against PyTorch is ``python -m tinynorm.benchmarks.norms --device cuda``.
``--smoke`` runs sections 1 and 2 on tiny shapes, so the script itself can be checked in the CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1 python3 benchmarks/gpu_check.py --smoke``). The exit status is 1 when
any check fails.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

import traceback  # noqa: E402

from common import write_json  # noqa: E402
from numba import cuda  # noqa: E402

from tinynorm.backends.cuda.array import CudaArray  # noqa: E402
from tinynorm.backends.cuda.runtime import launch, memory  # noqa: E402
from tinynorm.kernels import cuda as gpu  # noqa: E402
from tinynorm.kernels.cpu import batch_norm as cpu_bn  # noqa: E402
from tinynorm.kernels.cpu import group_norm as cpu_gn  # noqa: E402
from tinynorm.kernels.cpu import layer_norm as cpu_ln  # noqa: E402
from tinynorm.kernels.cpu import rms_norm as cpu_rms  # noqa: E402

EPS = 1e-5
TOLERANCE = {np.float32: 1e-4, np.float16: 4e-3}  # max error / max |reference|

# (rows, cols): narrow (warp per row) 128..1024, wide (block per row), wider than the shared cache.
ROW_SHAPES = [(65536, 128), (65536, 512), (16384, 1024), (16384, 4096), (4096, 16384)]
BN_SHAPES = [(8192, 1024, 1), (64, 256, 784)]  # (N, C, S): BatchNorm1d and a ResNet-like activation
GN_SHAPES = [(32, 256, 1024, 32), (32, 64, 1024, 64)]  # (N, C, S, groups); groups == C: InstanceNorm
SMOKE = {"rows": [(3, 40), (2, 1100)], "bn": [(6, 3, 1), (2, 3, 20)], "gn": [(2, 4, 20, 2)]}


def _host(array) -> np.ndarray:
    return array.to_numpy() if isinstance(array, CudaArray) else np.asarray(array)


def _device(array: np.ndarray) -> CudaArray:
    return CudaArray.from_host(array)


def _error(actual, expected) -> float:
    """Max error relative to the largest reference value (at least 1)."""
    expected = np.asarray(expected, np.float64)
    return float(np.abs(_host(actual).astype(np.float64) - expected).max(initial=0)
                 / max(1.0, np.abs(expected).max(initial=0)))


def _random(rng, shape, dtype, loc=0.0, scale=1.0) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=np.float32) * scale + loc).astype(dtype)


def _check(results: list, name: str, dtype, pairs: dict, deterministic: bool | None = None) -> None:
    """Record one case: the error of each named output and whether a rerun was bitwise identical."""
    errors = {key: _error(actual, expected) for key, (actual, expected) in pairs.items()}
    ok = max(errors.values()) <= TOLERANCE[dtype] and deterministic is not False
    results.append({"case": name, "dtype": np.dtype(dtype).name, "max_error": max(errors.values()),
                    "errors": errors, "deterministic": deterministic, "ok": ok})
    print(f"{'ok  ' if ok else 'FAIL'} {name} [{np.dtype(dtype).name}] max error {max(errors.values()):.2e}"
          + ("" if deterministic is None else f", deterministic={deterministic}"), flush=True)


def _same(first, second) -> bool:
    return all(np.array_equal(_host(a), _host(b)) for a, b in zip(first, second))


def check_rows(results: list, rng, shapes, dtypes) -> None:
    """LayerNorm and RMSNorm, forward and backward, against the CPU kernels in float32."""
    for rows, cols in shapes:
        for dtype in dtypes:
            x, dy = _random(rng, (rows, cols), dtype), _random(rng, (rows, cols), dtype)
            weight, bias = _random(rng, cols, np.float32, 1.0, 0.5), _random(rng, cols, np.float32)
            x32, dy32 = x.astype(np.float32), dy.astype(np.float32)
            x_d, dy_d, weight_d, bias_d = _device(x), _device(dy), _device(weight), _device(bias)
            y, mean, rstd = gpu.layer_norm_forward(x_d, weight_d, bias_d, EPS)
            y_ref, mean_ref, rstd_ref = cpu_ln.layer_norm_forward(x32, weight, bias, EPS)
            grads = gpu.layer_norm_backward(dy_d, x_d, mean, rstd, weight_d)
            refs = cpu_ln.layer_norm_backward(dy32, x32, mean_ref, rstd_ref, weight)
            _check(results, f"layer_norm {rows}x{cols}", dtype,
                   {"y": (y, y_ref), "mean": (mean, mean_ref), "rstd": (rstd, rstd_ref), "dx": (grads[0], refs[0]),
                    "dweight": (grads[1], refs[1]), "dbias": (grads[2], refs[2])},
                   _same(grads, gpu.layer_norm_backward(dy_d, x_d, mean, rstd, weight_d)))
            y, rstd = gpu.rms_norm_forward(x_d, weight_d, EPS)
            y_ref, rstd_ref = cpu_rms.rms_norm_forward(x32, weight, EPS)
            grads = gpu.rms_norm_backward(dy_d, x_d, rstd, weight_d)
            refs = cpu_rms.rms_norm_backward(dy32, x32, rstd_ref, weight)
            _check(results, f"rms_norm {rows}x{cols}", dtype,
                   {"y": (y, y_ref), "rstd": (rstd, rstd_ref), "dx": (grads[0], refs[0]), "dweight": (grads[1], refs[1])},
                   _same(grads, gpu.rms_norm_backward(dy_d, x_d, rstd, weight_d)))


def check_batch_norm(results: list, rng, shapes, dtypes) -> None:
    """BatchNorm statistics, forward (batch and running statistics) and backward (training and eval)."""
    for shape in shapes:
        channels = shape[1]
        for dtype in dtypes:
            x, dy = _random(rng, shape, dtype, loc=3.0), _random(rng, shape, dtype)
            weight, bias = _random(rng, channels, np.float32, 1.0, 0.5), _random(rng, channels, np.float32)
            x32, dy32 = x.astype(np.float32), dy.astype(np.float32)
            x_d, dy_d, weight_d, bias_d = _device(x), _device(dy), _device(weight), _device(bias)
            mean, var = gpu.batch_norm_stats(x_d)
            mean_ref, var_ref = cpu_bn.batch_norm_stats(x32)
            rstd = (1 / np.sqrt(var_ref + EPS)).astype(np.float32)  # the same rstd for both sides
            mean_d, rstd_d = _device(mean_ref), _device(rstd)
            pairs = {"mean": (mean, mean_ref), "var": (var, var_ref),
                     "y": (gpu.batch_norm_forward(x_d, mean_d, rstd_d, weight_d, bias_d),
                           cpu_bn.batch_norm_forward(x32, mean_ref, rstd, weight, bias))}
            deterministic = _same(gpu.batch_norm_stats(x_d), (mean, var))
            for training in (True, False):
                grads = gpu.batch_norm_backward(dy_d, x_d, mean_d, rstd_d, weight_d, training)
                refs = cpu_bn.batch_norm_backward(dy32, x32, mean_ref, rstd, weight, training)
                for key, actual, expected in zip(("dx", "dweight", "dbias"), grads, refs):
                    pairs[f"{key} {'train' if training else 'eval'}"] = (actual, expected)
                deterministic &= _same(grads, gpu.batch_norm_backward(dy_d, x_d, mean_d, rstd_d, weight_d, training))
            _check(results, f"batch_norm {shape}", dtype, pairs, deterministic)


def check_group_norm(results: list, rng, shapes, dtypes) -> None:
    for batch, channels, spatial, groups in shapes:
        for dtype in dtypes:
            x, dy = _random(rng, (batch, channels, spatial), dtype), _random(rng, (batch, channels, spatial), dtype)
            weight, bias = _random(rng, channels, np.float32, 1.0, 0.5), _random(rng, channels, np.float32)
            x32, dy32 = x.astype(np.float32), dy.astype(np.float32)
            x_d, dy_d, weight_d, bias_d = _device(x), _device(dy), _device(weight), _device(bias)
            y, mean, rstd = gpu.group_norm_forward(x_d, groups, weight_d, bias_d, EPS)
            y_ref, mean_ref, rstd_ref = cpu_gn.group_norm_forward(x32, groups, weight, bias, EPS)
            grads = gpu.group_norm_backward(dy_d, x_d, mean, rstd, groups, weight_d)
            refs = cpu_gn.group_norm_backward(dy32, x32, mean_ref, rstd_ref, groups, weight)
            _check(results, f"group_norm {(batch, channels, spatial)} G={groups}", dtype,
                   {"y": (y, y_ref), "mean": (mean, mean_ref), "rstd": (rstd, rstd_ref), "dx": (grads[0], refs[0]),
                    "dweight": (grads[1], refs[1]), "dbias": (grads[2], refs[2])},
                   _same(grads, gpu.group_norm_backward(dy_d, x_d, mean, rstd, groups, weight_d)))


def _small_norms(rng) -> Callable[[], list]:
    """Every norm wrapper, forward and backward, on small inputs (each call is launch-bound)."""
    x, dy = (_device(_random(rng, (64, 64), np.float32)) for _ in range(2))
    x3, dy3 = (_device(_random(rng, (8, 16, 64), np.float32)) for _ in range(2))
    w, b = _device(_random(rng, 64, np.float32, 1.0, 0.5)), _device(_random(rng, 64, np.float32))
    c_w, c_b = _device(_random(rng, 16, np.float32, 1.0, 0.5)), _device(_random(rng, 16, np.float32))

    def run() -> list:
        _, mean, rstd = out = gpu.layer_norm_forward(x, w, b, EPS)
        outputs = [*out, *gpu.layer_norm_backward(dy, x, mean, rstd, w)]
        _, rstd = out = gpu.rms_norm_forward(x, None, EPS)
        outputs += [*out, *gpu.rms_norm_backward(dy, x, rstd, None)]
        mean, var = gpu.batch_norm_stats(x3)
        outputs += [mean, var, gpu.batch_norm_forward(x3, mean, var, c_w, c_b),  # var: any positive rstd
                    *gpu.batch_norm_backward(dy3, x3, mean, var, c_w, True)]
        _, mean, rstd = out = gpu.group_norm_forward(x3, 4, c_w, None, EPS)
        return outputs + [*out, *gpu.group_norm_backward(dy3, x3, mean, rstd, 4, c_w)]

    return run


def _host_microseconds(fn: Callable[[], object], calls: int = 2000) -> float:
    """Host time per call of back-to-back calls, measured before the final synchronize."""
    fn()
    cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - start) / calls
    cuda.synchronize()
    return host * 1e6


def check_launch_paths(results: list, rng, timing: bool) -> dict:
    """The driver-level launch against Numba's dispatcher: the same outputs bit for bit, plans made
    for the kernels, and (``timing``) host microseconds of small calls through each path."""
    run = _small_norms(rng)
    enabled = launch.set_fast_launch(False)  # False in the simulator, or with TINYNORM_FAST_LAUNCH=0
    expected = [_host(a) for a in run()]
    launch.set_fast_launch(enabled)
    launch.refusals.clear()
    before = dict(launch.counts)
    actual = [_host(a) for a in run()]
    same = len(actual) == len(expected) and all(np.array_equal(a, e) for a, e in zip(actual, expected))
    driver = launch.counts["driver"] - before.get("driver", 0)
    dispatcher = launch.counts["dispatcher"] - before.get("dispatcher", 0)
    report = {"fast launch available": enabled, "driver launches": driver, "dispatcher launches": dispatcher,
              "refusals": dict(launch.refusals), "still enabled": launch.fast_launch_enabled()}
    # Every launch of these calls must take a plan: a refusal here is unexpected (each names its reason).
    ok = same and (not enabled or (dispatcher == 0 and not launch.refusals and launch.fast_launch_enabled()))
    results.append({"case": "low-overhead launch vs dispatcher", "dtype": "float32", "max_error": 0.0 if same else 1.0,
                    "errors": {}, "deterministic": same, "ok": ok, **report})
    print(f"{'ok  ' if ok else 'FAIL'} low-overhead launch: identical={same} {report}", flush=True)
    if timing:
        x = _device(_random(rng, (64, 64), np.float32))
        w, b, y = _device(np.ones(64, np.float32)), _device(np.zeros(64, np.float32)), CudaArray.empty(x.shape, x.dtype)
        kernel, args = gpu._row_norm.narrow_forward(2), (x, w, b, np.float32(EPS), y, CudaArray.empty(64, np.float32),
                                                         CudaArray.empty(64, np.float32))
        calls = {"one kernel launch (LN forward, 4 arrays + 3)": lambda: launch.launch(kernel, 16, 128, args),
                 "layer_norm_forward 64x64, out=": lambda: gpu.layer_norm_forward(x, w, b, EPS, out=y),
                 "layer_norm_forward 64x64": lambda: gpu.layer_norm_forward(x, w, b, EPS),
                 "every norm, forward and backward (15 kernels)": run}
        for name, fn in calls.items():
            times = {}
            for fast in (False, True):
                launch.set_fast_launch(fast and enabled)
                key = "driver-level us" if fast and enabled else "dispatcher us"
                times[key] = _host_microseconds(fn, 200 if fn is run else 2000)
            report[name] = times
            print(f"     host time, {name}: {times}", flush=True)
    launch.set_fast_launch(enabled)
    return report


def check_allocator(results: list, rng) -> dict:
    """The caching allocator on real memory: after a first round, repeating every norm call asks the
    driver for no new block, and dropping the results gives their memory back (no leak)."""
    import gc

    cache = memory.block_cache()
    run = _small_norms(rng)
    run()
    gc.collect()
    in_use, driver_allocations = cache.allocated_bytes, cache.driver_allocations
    for _ in range(3):
        outputs = run()
        del outputs  # before the next round: its results must reuse these blocks, not new ones
    gc.collect()
    cuda.synchronize()
    report = {"new driver allocations in 3 rounds": cache.driver_allocations - driver_allocations,
              "bytes still in use after the rounds": cache.allocated_bytes - in_use,
              "reserved MiB": cache.reserved_bytes / 2**20}
    ok = report["new driver allocations in 3 rounds"] == 0 and report["bytes still in use after the rounds"] == 0
    results.append({"case": "caching allocator reuses blocks", "dtype": "float32", "max_error": 0.0, "errors": {},
                    "deterministic": True, "ok": ok, **report})
    print(f"{'ok  ' if ok else 'FAIL'} caching allocator: {report}", flush=True)
    return report


def _section(results: list, name: str, check: Callable[[], object]) -> object:
    """Run one section; an exception is a failed check (with its traceback in the JSON), not the end."""
    try:
        return check()
    except Exception as error:  # noqa: BLE001
        results.append({"case": name, "dtype": "-", "max_error": None, "errors": {}, "deterministic": None,
                        "ok": False, "error": f"{type(error).__name__}: {error}",
                        "traceback": traceback.format_exc()[-3000:]})
        print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/out/gpu_check.json")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes, no timing (for the CUDA simulator)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    dtypes = [np.float32, np.float16]
    start = time.perf_counter()
    results: list = []
    payload: dict = {"checks": results}
    sections = [
        ("layer and RMS norms", lambda: check_rows(results, rng, SMOKE["rows"] if args.smoke else ROW_SHAPES, dtypes)),
        ("batch norm", lambda: check_batch_norm(results, rng, SMOKE["bn"] if args.smoke else BN_SHAPES, dtypes)),
        ("group norm", lambda: check_group_norm(results, rng, SMOKE["gn"] if args.smoke else GN_SHAPES, dtypes)),
        ("launch paths", lambda: payload.update(launch=check_launch_paths(results, rng, timing=not args.smoke))),
    ]
    if not args.smoke:  # the simulator's storages are host arrays: nothing is cached there
        sections.append(("caching allocator", lambda: payload.update(allocator=check_allocator(results, rng))))
    for name, section in sections:
        _section(results, name, section)
        payload["seconds"] = time.perf_counter() - start
        write_json(args.out, payload)
    failed = [r["case"] + " " + r["dtype"] for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} checks passed in {payload['seconds']:.0f} s; wrote {args.out}")
    if failed:
        print("FAILED:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
