"""Check and time the CUDA norm kernels on a real GPU, in one run that fits a short device lease.

Run from the repository root on a machine with a GPU, numba-cuda and a CUDA build of PyTorch::

    python benchmarks/gpu_check.py --out $OUT/gpu_check.json          # estimated 2-4 minutes on an H200

1. Correctness on real shapes: every kernel (forward and backward; LayerNorm and RMSNorm on narrow,
   wide and wider-than-the-shared-cache rows; BatchNorm (N, C) and (N, C, S); GroupNorm, InstanceNorm)
   against the CPU kernels of ``tinynorm.kernels.cpu`` in float32 (float16 inputs: against the CPU
   kernels run on the same values in float32), and bitwise determinism of every backward on the GPU.
2. The low-overhead launch (``tinynorm.kernels.cuda.launch``) against Numba's dispatcher: bitwise
   identical results for every norm forward and backward on small inputs, plans really made (no silent
   fallback), and the host time of a small call through each path (target: <= 10 us).
   Then the caching allocator (``tinynorm.kernels.cuda.memory``): repeated calls take no new block from
   the driver and give back all they used.
3. Speed against ``torch.nn.functional`` on the same GPU and the same tensors: milliseconds per call
   (back-to-back calls, one final synchronize: Python launch overhead included, as a user pays it),
   GB/s of the minimum traffic (forward: x read, y written; backward: x, dy read, dx written) and its
   fraction of the copy bandwidth measured in the same run. ``benchmarks/bench_norms.py --device cuda``
   reuses this timing on the shapes of the GPU issue.

``--smoke`` runs step 1 on tiny shapes without PyTorch, so the script itself can be checked in the
CUDA simulator (``NUMBA_ENABLE_CUDASIM=1 python benchmarks/gpu_check.py --smoke``).
The exit status is 1 when any check fails. docs/cuda.md says how to prepare the GPU machine (its
image's numpy 2.5 breaks numba-cuda 0.30: carry a numpy 2.4 wheel).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

from common import print_table, write_json
from numba import cuda

from tinynorm.kernels import cuda as gpu
from tinynorm.kernels.cpu import batch_norm as cpu_bn
from tinynorm.kernels.cpu import group_norm as cpu_gn
from tinynorm.kernels.cpu import layer_norm as cpu_ln
from tinynorm.kernels.cpu import rms_norm as cpu_rms
from tinynorm.kernels.cuda import launch, memory

EPS = 1e-5
TOLERANCE = {np.float32: 1e-4, np.float16: 4e-3}  # max error / max |reference|

# (rows, cols): narrow (warp per row) 128..1024, wide (block per row), wider than the shared cache.
ROW_SHAPES = [(65536, 128), (65536, 512), (16384, 1024), (16384, 4096), (4096, 16384)]
BN_SHAPES = [(8192, 1024, 1), (64, 256, 784)]  # (N, C, S): BatchNorm1d and a ResNet-like activation
GN_SHAPES = [(32, 256, 1024, 32), (32, 64, 1024, 64)]  # (N, C, S, groups); groups == C: InstanceNorm
# Timed shapes: those of the GPU issue (rows, and NCHW images for BatchNorm and GroupNorm with 32 groups).
BENCH_ROW_SHAPES = [(4096, 1024), (16384, 4096), (32768, 8192), (65536, 512)]
BENCH_IMAGE_SHAPES = [(32, 64, 56, 56), (256, 256, 14, 14)]
SMOKE = {"rows": [(3, 40), (2, 1100)], "bn": [(6, 3, 1), (2, 3, 20)], "gn": [(2, 4, 20, 2)]}


def _host(array) -> np.ndarray:
    return array.copy_to_host() if hasattr(array, "copy_to_host") else np.asarray(array)


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
            x_d, dy_d = cuda.to_device(x), cuda.to_device(dy)
            y, mean, rstd = gpu.layer_norm_forward(x_d, weight, bias, EPS)
            y_ref, mean_ref, rstd_ref = cpu_ln.layer_norm_forward(x32, weight, bias, EPS)
            grads = gpu.layer_norm_backward(dy_d, x_d, mean, rstd, weight)
            refs = cpu_ln.layer_norm_backward(dy32, x32, mean_ref, rstd_ref, weight)
            _check(results, f"layer_norm {rows}x{cols}", dtype,
                   {"y": (y, y_ref), "mean": (mean, mean_ref), "rstd": (rstd, rstd_ref), "dx": (grads[0], refs[0]),
                    "dweight": (grads[1], refs[1]), "dbias": (grads[2], refs[2])},
                   _same(grads, gpu.layer_norm_backward(dy_d, x_d, mean, rstd, weight)))
            y, rstd = gpu.rms_norm_forward(x_d, weight, EPS)
            y_ref, rstd_ref = cpu_rms.rms_norm_forward(x32, weight, EPS)
            grads = gpu.rms_norm_backward(dy_d, x_d, rstd, weight)
            refs = cpu_rms.rms_norm_backward(dy32, x32, rstd_ref, weight)
            _check(results, f"rms_norm {rows}x{cols}", dtype,
                   {"y": (y, y_ref), "rstd": (rstd, rstd_ref), "dx": (grads[0], refs[0]), "dweight": (grads[1], refs[1])},
                   _same(grads, gpu.rms_norm_backward(dy_d, x_d, rstd, weight)))


def check_batch_norm(results: list, rng, shapes, dtypes) -> None:
    """BatchNorm statistics, forward (batch and running statistics) and backward (training and eval)."""
    for shape in shapes:
        channels = shape[1]
        for dtype in dtypes:
            x, dy = _random(rng, shape, dtype, loc=3.0), _random(rng, shape, dtype)
            weight, bias = _random(rng, channels, np.float32, 1.0, 0.5), _random(rng, channels, np.float32)
            x32, dy32 = x.astype(np.float32), dy.astype(np.float32)
            x_d, dy_d = cuda.to_device(x), cuda.to_device(dy)
            mean, var = gpu.batch_norm_stats(x_d)
            mean_ref, var_ref = cpu_bn.batch_norm_stats(x32)
            rstd = (1 / np.sqrt(var_ref + EPS)).astype(np.float32)  # the same rstd for both sides
            pairs = {"mean": (mean, mean_ref), "var": (var, var_ref),
                     "y": (gpu.batch_norm_forward(x_d, mean_ref, rstd, weight, bias),
                           cpu_bn.batch_norm_forward(x32, mean_ref, rstd, weight, bias))}
            deterministic = _same(gpu.batch_norm_stats(x_d), (mean, var))
            for training in (True, False):
                grads = gpu.batch_norm_backward(dy_d, x_d, mean_ref, rstd, weight, training)
                refs = cpu_bn.batch_norm_backward(dy32, x32, mean_ref, rstd, weight, training)
                for key, actual, expected in zip(("dx", "dweight", "dbias"), grads, refs):
                    pairs[f"{key} {'train' if training else 'eval'}"] = (actual, expected)
                deterministic &= _same(grads, gpu.batch_norm_backward(dy_d, x_d, mean_ref, rstd, weight, training))
            _check(results, f"batch_norm {shape}", dtype, pairs, deterministic)


def check_group_norm(results: list, rng, shapes, dtypes) -> None:
    for batch, channels, spatial, groups in shapes:
        for dtype in dtypes:
            x, dy = _random(rng, (batch, channels, spatial), dtype), _random(rng, (batch, channels, spatial), dtype)
            weight, bias = _random(rng, channels, np.float32, 1.0, 0.5), _random(rng, channels, np.float32)
            x32, dy32 = x.astype(np.float32), dy.astype(np.float32)
            x_d, dy_d = cuda.to_device(x), cuda.to_device(dy)
            y, mean, rstd = gpu.group_norm_forward(x_d, groups, weight, bias, EPS)
            y_ref, mean_ref, rstd_ref = cpu_gn.group_norm_forward(x32, groups, weight, bias, EPS)
            grads = gpu.group_norm_backward(dy_d, x_d, mean, rstd, groups, weight)
            refs = cpu_gn.group_norm_backward(dy32, x32, mean_ref, rstd_ref, groups, weight)
            _check(results, f"group_norm {(batch, channels, spatial)} G={groups}", dtype,
                   {"y": (y, y_ref), "mean": (mean, mean_ref), "rstd": (rstd, rstd_ref), "dx": (grads[0], refs[0]),
                    "dweight": (grads[1], refs[1]), "dbias": (grads[2], refs[2])},
                   _same(grads, gpu.group_norm_backward(dy_d, x_d, mean, rstd, groups, weight)))


def _small_norms(rng) -> Callable[[], list]:
    """Every norm wrapper, forward and backward, on small inputs (each call is launch-bound)."""
    x, dy = (cuda.to_device(_random(rng, (64, 64), np.float32)) for _ in range(2))
    x3, dy3 = (cuda.to_device(_random(rng, (8, 16, 64), np.float32)) for _ in range(2))
    w, b = cuda.to_device(_random(rng, 64, np.float32, 1.0, 0.5)), cuda.to_device(_random(rng, 64, np.float32))
    c_w, c_b = cuda.to_device(_random(rng, 16, np.float32, 1.0, 0.5)), cuda.to_device(_random(rng, 16, np.float32))

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
    run()  # first calls: through the dispatcher, then the plans are made
    actual = [_host(a) for a in run()]
    same = len(actual) == len(expected) and all(np.array_equal(a, e) for a, e in zip(actual, expected))
    plans = sum(plan is not None for plan in launch._plans.values())
    report = {"fast launch available": enabled, "plans": plans, "plans refused": len(launch._plans) - plans,
              "still enabled": launch.fast_launch_enabled()}
    ok = same and (not enabled or (plans > 0 and launch.fast_launch_enabled()))
    results.append({"case": "low-overhead launch vs dispatcher", "dtype": "float32", "max_error": 0.0 if same else 1.0,
                    "errors": {}, "deterministic": same, "ok": ok, **report})
    print(f"{'ok  ' if ok else 'FAIL'} low-overhead launch: identical={same} {report}", flush=True)
    if timing:
        x = cuda.to_device(_random(rng, (64, 64), np.float32))
        w, b, y = cuda.to_device(np.ones(64, np.float32)), cuda.to_device(np.zeros(64, np.float32)), cuda.device_array_like(x)
        kernel, args = gpu._row_norm.narrow_forward(2), (x, w, b, np.float32(EPS), y, cuda.device_array(64, np.float32),
                                                         cuda.device_array(64, np.float32))
        calls = {"one kernel launch (LN forward, 4 arrays + 3)": lambda: launch.launch(kernel, 16, 128, args),
                 "layer_norm_forward 64x64, out=": lambda: gpu.layer_norm_forward(x, w, b, EPS, out=y),
                 "layer_norm_forward 64x64": lambda: gpu.layer_norm_forward(x, w, b, EPS),
                 "every norm, forward and backward (15 kernels)": run}
        for name, fn in calls.items():
            times = {}
            for fast in (False, True):
                launch.set_fast_launch(fast and enabled)
                times["fast us" if fast else "dispatcher us"] = _host_microseconds(fn, 200 if fn is run else 2000)
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
    del outputs
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


def _seconds_per_call(fn: Callable[[], object], synchronize: Callable[[], None], min_time: float = 0.05) -> float:
    """Median over 5 samples of back-to-back calls (at least ``min_time`` each, one synchronize at the end)."""
    fn()
    synchronize()
    start = time.perf_counter()
    fn()
    synchronize()
    number = max(1, int(min_time / max(time.perf_counter() - start, 1e-6)))
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        synchronize()
        samples.append((time.perf_counter() - start) / number)
    return float(np.median(samples))


def copy_bandwidth(torch, nbytes: int = 2**30) -> float:
    """Bytes per second (read + written) of a device-to-device copy of ``nbytes``."""
    src = torch.empty(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    return 2 * nbytes / _seconds_per_call(lambda: dst.copy_(src), torch.cuda.synchronize)


class Benchmark:
    """Times ours against torch.nn.functional, case by case, on tensors shared by both (no copies)."""

    def __init__(self, torch, copy: float):
        self.torch, self.copy, self.rows = torch, copy, []

    def time(self, case: str, x, direction: str, arrays: int, ours: Callable, theirs: Callable) -> None:
        """Record one case; ``arrays`` is how many arrays of x's size the pass must read or write."""
        nbytes = arrays * x.numel() * x.element_size()
        ours_s = _seconds_per_call(ours, self.torch.cuda.synchronize)
        theirs_s = _seconds_per_call(theirs, self.torch.cuda.synchronize)
        row = {"case": case, "dtype": str(x.dtype).removeprefix("torch."), "pass": direction,
               "ours ms": ours_s * 1e3, "torch ms": theirs_s * 1e3, "ours GB/s": nbytes / ours_s / 1e9,
               "torch GB/s": nbytes / theirs_s / 1e9, "ours %copy": 100 * nbytes / ours_s / self.copy,
               "torch %copy": 100 * nbytes / theirs_s / self.copy, "x torch": theirs_s / ours_s}
        self.rows.append(row)
        print_table([row], list(row))

    def leaves(self, *tensors):
        """Copies of ``tensors`` that require grad, for PyTorch's backward (numba refuses such tensors)."""
        return [t.detach().clone().requires_grad_() for t in tensors]

    def rows_norms(self, rows: int, cols: int, dtype) -> None:
        torch, F = self.torch, self.torch.nn.functional
        x = torch.randn(rows, cols, device="cuda", dtype=dtype)
        dy = torch.randn_like(x)
        w, b = torch.randn(cols, device="cuda") * 0.5 + 1, torch.randn(cols, device="cuda")
        xn, dyn, wn, bn = (cuda.as_cuda_array(t) for t in (x, dy, w, b))
        w_t, b_t = w.to(dtype), b.to(dtype)  # PyTorch's parameters have x's dtype
        xt, wt, bt = self.leaves(x, w_t, b_t)
        case = f"layer_norm {rows}x{cols}"
        _, mean, rstd = gpu.layer_norm_forward(xn, wn, bn, EPS)
        self.time(case, x, "forward", 2, lambda: gpu.layer_norm_forward(xn, wn, bn, EPS),
                  lambda: F.layer_norm(x, (cols,), w_t, b_t, EPS))
        yt = F.layer_norm(xt, (cols,), wt, bt, EPS)
        self.time(case, x, "backward", 3, lambda: gpu.layer_norm_backward(dyn, xn, mean, rstd, wn),
                  lambda: torch.autograd.grad(yt, (xt, wt, bt), dy, retain_graph=True))
        self.time(case, x, "forward+backward", 5,
                  lambda: gpu.layer_norm_backward(dyn, xn, *gpu.layer_norm_forward(xn, wn, bn, EPS)[1:], wn),
                  lambda: torch.autograd.grad(F.layer_norm(xt, (cols,), wt, bt, EPS), (xt, wt, bt), dy))
        case = f"rms_norm {rows}x{cols}"
        _, rstd = gpu.rms_norm_forward(xn, wn, EPS)
        self.time(case, x, "forward", 2, lambda: gpu.rms_norm_forward(xn, wn, EPS),
                  lambda: F.rms_norm(x, (cols,), w_t, EPS))
        yt = F.rms_norm(xt, (cols,), wt, EPS)
        self.time(case, x, "backward", 3, lambda: gpu.rms_norm_backward(dyn, xn, rstd, wn),
                  lambda: torch.autograd.grad(yt, (xt, wt), dy, retain_graph=True))
        self.time(case, x, "forward+backward", 5,
                  lambda: gpu.rms_norm_backward(dyn, xn, gpu.rms_norm_forward(xn, wn, EPS)[1], wn),
                  lambda: torch.autograd.grad(F.rms_norm(xt, (cols,), wt, EPS), (xt, wt), dy))

    def batch_norm(self, shape: tuple) -> None:
        """Training step: ours = statistics + forward (x read twice, y written); rstd is precomputed."""
        torch, F = self.torch, self.torch.nn.functional
        x = torch.randn(*shape, device="cuda")
        dy = torch.randn_like(x)
        w, b = torch.randn(shape[1], device="cuda"), torch.randn(shape[1], device="cuda")
        xn, dyn, wn, bn = (cuda.as_cuda_array(t) for t in (x, dy, w, b))
        mean, var = gpu.batch_norm_stats(xn)
        rstd = cuda.as_cuda_array(1 / torch.sqrt(torch.as_tensor(var, device="cuda") + EPS))

        def ours_forward():
            batch_mean, _ = gpu.batch_norm_stats(xn)
            return gpu.batch_norm_forward(xn, batch_mean, rstd, wn, bn)

        case = f"batch_norm {shape}"
        self.time(case, x, "forward", 3, ours_forward,
                  lambda: F.batch_norm(x, None, None, w, b, training=True, eps=EPS))
        xt, wt, bt = self.leaves(x, w, b)
        yt = F.batch_norm(xt, None, None, wt, bt, training=True, eps=EPS)
        self.time(case, x, "backward", 3, lambda: gpu.batch_norm_backward(dyn, xn, mean, rstd, wn, True),
                  lambda: torch.autograd.grad(yt, (xt, wt, bt), dy, retain_graph=True))

        def ours_forward_backward():
            batch_mean, _ = gpu.batch_norm_stats(xn)
            gpu.batch_norm_forward(xn, batch_mean, rstd, wn, bn)
            return gpu.batch_norm_backward(dyn, xn, batch_mean, rstd, wn, True)

        self.time(case, x, "forward+backward", 6, ours_forward_backward,
                  lambda: torch.autograd.grad(F.batch_norm(xt, None, None, wt, bt, training=True, eps=EPS),
                                              (xt, wt, bt), dy))

    def group_norm(self, batch: int, channels: int, spatial: int, groups: int) -> None:
        torch, F = self.torch, self.torch.nn.functional
        x = torch.randn(batch, channels, spatial, device="cuda")
        dy = torch.randn_like(x)
        w, b = torch.randn(channels, device="cuda"), torch.randn(channels, device="cuda")
        xn, dyn, wn, bn = (cuda.as_cuda_array(t) for t in (x, dy, w, b))
        _, mean, rstd = gpu.group_norm_forward(xn, groups, wn, bn, EPS)
        case = f"group_norm {(batch, channels, spatial)} G={groups}"
        self.time(case, x, "forward", 2, lambda: gpu.group_norm_forward(xn, groups, wn, bn, EPS),
                  lambda: F.group_norm(x, groups, w, b, EPS))
        xt, wt, bt = self.leaves(x, w, b)
        yt = F.group_norm(xt, groups, wt, bt, EPS)
        self.time(case, x, "backward", 3, lambda: gpu.group_norm_backward(dyn, xn, mean, rstd, groups, wn),
                  lambda: torch.autograd.grad(yt, (xt, wt, bt), dy, retain_graph=True))
        self.time(case, x, "forward+backward", 5,
                  lambda: gpu.group_norm_backward(dyn, xn, *gpu.group_norm_forward(xn, groups, wn, bn, EPS)[1:],
                                                  groups, wn),
                  lambda: torch.autograd.grad(F.group_norm(xt, groups, wt, bt, EPS), (xt, wt, bt), dy))

    def run(self, row_shapes, image_shapes, dtypes) -> list:
        """Time every case: LN and RMS on ``row_shapes`` in each of ``dtypes`` (torch dtypes); BN and
        GN (32 groups) on the NCHW ``image_shapes``, float32."""
        for rows, cols in row_shapes:
            for dtype in dtypes:
                self.rows_norms(rows, cols, dtype)
        for batch, channels, height, width in image_shapes:
            self.batch_norm((batch, channels, height * width))
            self.group_norm(batch, channels, height * width, 32)
        return self.rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/out/gpu_check.json")
    parser.add_argument("--quick", action="store_true", help="fewer shapes, float32 only")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes, no benchmark (for the CUDA simulator)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    dtypes = [np.float32, np.float16]
    start = time.perf_counter()
    results: list = []
    check_rows(results, rng, SMOKE["rows"] if args.smoke else ROW_SHAPES, dtypes)
    check_batch_norm(results, rng, SMOKE["bn"] if args.smoke else BN_SHAPES, dtypes)
    check_group_norm(results, rng, SMOKE["gn"] if args.smoke else GN_SHAPES, dtypes)
    payload: dict = {"launch": check_launch_paths(results, rng, timing=not args.smoke)}
    if not args.smoke:  # the simulator's device arrays are numpy arrays: nothing is cached there
        payload["allocator"] = check_allocator(results, rng)
    payload.update(checks=results, check_seconds=time.perf_counter() - start)
    if not args.smoke:
        import torch
        payload["device"] = torch.cuda.get_device_name()
        payload["copy GB/s"] = copy = copy_bandwidth(torch)
        print(f"copy bandwidth {copy / 1e9:.0f} GB/s", flush=True)
        dtypes = [torch.float32] if args.quick else [torch.float32, torch.float16]
        payload["benchmarks"] = Benchmark(torch, copy).run(BENCH_ROW_SHAPES[:2] if args.quick else BENCH_ROW_SHAPES,
                                                           BENCH_IMAGE_SHAPES, dtypes)
    payload["seconds"] = time.perf_counter() - start
    write_json(args.out, payload)
    failed = [r["case"] + " " + r["dtype"] for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)}/{len(results)} checks passed in {payload['seconds']:.0f} s; wrote {args.out}")
    if failed:
        print("FAILED:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
