"""Benchmark the normalization kernels against PyTorch, plain numpy and the copy bandwidth.

Run: ``python benchmarks/bench_norms.py [--quick] [--plot] [--out benchmarks/out/bench_norms.json]``.

``--device cuda`` times the CUDA kernels against ``torch.nn.functional`` on the same GPU instead: LN and
RMS (float32 and float16) on 4096x1024, 16384x4096, 32768x8192 and 65536x512, BN and GN (32 groups)
on (32, 64, 56, 56) and (256, 256, 14, 14), forward, backward and forward+backward, on tensors both
libraries share. Each case is timed as back-to-back calls: device milliseconds per call from CUDA
events around the calls, host microseconds per call until the last call is issued (the Python a call
costs), GB/s of the minimum traffic over the device time and its fraction of the device-to-device copy
bandwidth measured in the same run. It needs an NVIDIA GPU, numba-cuda and a CUDA build of PyTorch,
and stops with a clear message otherwise; the rows are printed and the JSON rewritten as they come.

Every case is float32. "fwd" times the allocating call (as a user or PyTorch makes it); "fwd out="
writes into a reused buffer and shows the kernel without the page faults of a fresh output. GB/s
counts the minimum traffic: the input read and the output written once (forward, 2 arrays), plus
``x``, ``dy`` read and ``dx`` written for the backward (5 arrays in all); ``%copy`` divides that by the
parallel copy bandwidth measured in the same run. ``x torch`` and ``x numpy`` are speed-ups
(their time / ours): above 1 means tinynorm is faster. The contenders of one case are timed in turns,
so load from other processes hits them alike.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

from common import alternating_medians, copy_bandwidth, print_table, write_json  # noqa: E402  (before torch)

import numba  # noqa: E402
import numpy as np  # noqa: E402

from tinynorm.kernels.cpu.batch_norm import (  # noqa: E402
    batch_norm_backward, batch_norm_forward, batch_norm_rstd, batch_norm_stats,
)
from tinynorm.kernels.cpu.group_norm import group_norm_backward, group_norm_forward  # noqa: E402
from tinynorm.kernels.cpu.layer_norm import layer_norm_backward, layer_norm_forward  # noqa: E402
from tinynorm.kernels.cpu.rms_norm import rms_norm_backward, rms_norm_forward  # noqa: E402

EPS = 1e-5
ROW_SHAPES = [(4096, 1024), (8192, 4096), (65536, 64), (256, 64)]
IMAGE_SHAPES = [(64, 64, 16, 16), (8, 32, 32, 32)]
QUICK_ROW_SHAPES = [(4096, 1024), (256, 64)]
QUICK_IMAGE_SHAPES = [(8, 32, 32, 32)]


def group_count(channels: int) -> int:
    """GroupNorm's usual 32 groups, or 4 channels per group when there are fewer than 64 channels."""
    return 32 if channels >= 64 else channels // 4


@dataclass
class Case:
    """One benchmarked operation: the same computation written three ways."""
    op: str
    x: np.ndarray
    forward: Callable[[np.ndarray | None], object]  # takes ``out`` (None: allocate)
    forward_backward: Callable[[], object]
    torch_forward: Callable[[], object] | None
    torch_forward_backward: Callable[[], object] | None
    numpy_forward: Callable[[], object]
    numpy_forward_backward: Callable[[], object]


# ------------------------------------------------------------ plain numpy, for comparison
def numpy_normalize(x, axes, center=True):
    """(xhat, rstd) over ``axes``: the textbook numpy version, one temporary per operation."""
    xc = x - x.mean(axis=axes, keepdims=True) if center else x
    rstd = 1 / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + np.float32(EPS))
    return xc * rstd, rstd


def numpy_normalize_grad(g, xhat, rstd, axes, center=True):
    """Input gradient through ``numpy_normalize`` given ``g = dL/dxhat``."""
    dx = g - xhat * (g * xhat).mean(axis=axes, keepdims=True)
    if center:
        dx -= g.mean(axis=axes, keepdims=True)
    return dx * rstd


# ------------------------------------------------------------ the cases
def _torch_pair(torch, forward, *arrays):
    """(forward without autograd, forward + backward through autograd with a fixed random dy)."""
    tensors = [torch.from_numpy(a).requires_grad_() for a in arrays]
    dy = torch.randn(arrays[0].shape)

    def run_forward():
        with torch.no_grad():
            return forward(*tensors)

    return run_forward, lambda: torch.autograd.grad(forward(*tensors), tensors, dy)


def layer_norm_case(shape, rng, torch):
    x, dy = rng.standard_normal(shape, np.float32), rng.standard_normal(shape, np.float32)
    w, b = rng.standard_normal(shape[1], np.float32), rng.standard_normal(shape[1], np.float32)

    def forward_backward():
        y, mean, rstd = layer_norm_forward(x, w, b, EPS)
        return layer_norm_backward(dy, x, mean, rstd, w)

    def numpy_forward_backward():
        xhat, rstd = numpy_normalize(x, 1)
        return numpy_normalize_grad(dy * w, xhat, rstd, 1), (dy * xhat).sum(0), dy.sum(0), xhat * w + b

    torch_pair = _torch_pair(torch, lambda tx, tw, tb: torch.nn.functional.layer_norm(tx, shape[1:], tw, tb, EPS),
                             x, w, b) if torch else (None, None)
    return Case("LayerNorm", x, lambda out: layer_norm_forward(x, w, b, EPS, out=out), forward_backward, *torch_pair,
                lambda: numpy_normalize(x, 1)[0] * w + b, numpy_forward_backward)


def rms_norm_case(shape, rng, torch):
    x, dy = rng.standard_normal(shape, np.float32), rng.standard_normal(shape, np.float32)
    w = rng.standard_normal(shape[1], np.float32)

    def forward_backward():
        y, rstd = rms_norm_forward(x, w, EPS)
        return rms_norm_backward(dy, x, rstd, w)

    def numpy_forward_backward():
        xhat, rstd = numpy_normalize(x, 1, center=False)
        return numpy_normalize_grad(dy * w, xhat, rstd, 1, center=False), (dy * xhat).sum(0), xhat * w

    torch_pair = _torch_pair(torch, lambda tx, tw: torch.nn.functional.rms_norm(tx, shape[1:], tw, EPS),
                             x, w) if torch else (None, None)
    return Case("RMSNorm", x, lambda out: rms_norm_forward(x, w, EPS, out=out), forward_backward, *torch_pair,
                lambda: numpy_normalize(x, 1, center=False)[0] * w, numpy_forward_backward)


def batch_norm_case(shape, rng, torch):
    """Training mode: batch statistics, then normalize; the backward includes the statistics' gradient."""
    x, dy = rng.standard_normal(shape, np.float32), rng.standard_normal(shape, np.float32)
    channels = shape[1]
    w, b = rng.standard_normal(channels, np.float32), rng.standard_normal(channels, np.float32)
    x3, dy3 = x.reshape(shape[0], channels, -1), dy.reshape(shape[0], channels, -1)
    param = (channels, 1)

    def forward(out):
        mean, var = batch_norm_stats(x3)
        rstd = batch_norm_rstd(var, EPS).astype(x3.dtype)  # var is float64 (see batch_norm_stats); rstd as x
        return batch_norm_forward(x3, mean, rstd, w, b, out=out), mean, rstd

    def forward_backward():
        y, mean, rstd = forward(None)
        return batch_norm_backward(dy3, x3, mean, rstd, w, True)

    def numpy_forward_backward():
        xhat, rstd = numpy_normalize(x3, (0, 2))
        dx = numpy_normalize_grad(dy3 * w.reshape(param), xhat, rstd, (0, 2))
        return dx, (dy3 * xhat).sum((0, 2)), dy3.sum((0, 2)), xhat * w.reshape(param) + b.reshape(param)

    def torch_forward(tx, tw, tb):
        running = torch.zeros(channels), torch.ones(channels)
        return torch.nn.functional.batch_norm(tx, *running, tw, tb, training=True, eps=EPS)

    torch_pair = _torch_pair(torch, torch_forward, x, w, b) if torch else (None, None)
    op = "BatchNorm1d" if len(shape) == 2 else "BatchNorm2d"
    return Case(op, x, lambda out: forward(None if out is None else out.reshape(x3.shape)), forward_backward,
                *torch_pair, lambda: numpy_normalize(x3, (0, 2))[0] * w.reshape(param) + b.reshape(param),
                numpy_forward_backward)


def group_norm_case(shape, rng, torch, groups):
    x, dy = rng.standard_normal(shape, np.float32), rng.standard_normal(shape, np.float32)
    batch, channels = shape[:2]
    w, b = rng.standard_normal(channels, np.float32), rng.standard_normal(channels, np.float32)
    x3, dy3 = x.reshape(batch, channels, -1), dy.reshape(batch, channels, -1)
    param = (channels, 1)

    def forward_backward():
        y, mean, rstd = group_norm_forward(x3, groups, w, b, EPS)
        return group_norm_backward(dy3, x3, mean, rstd, groups, w)

    def numpy_forward(with_backward=False):
        xhat, rstd = numpy_normalize(x3.reshape(batch, groups, -1), 2)
        y = xhat.reshape(x3.shape) * w.reshape(param) + b.reshape(param)
        if not with_backward:
            return y
        g = (dy3 * w.reshape(param)).reshape(xhat.shape)
        xhat3 = xhat.reshape(x3.shape)
        return y, numpy_normalize_grad(g, xhat, rstd, 2), (dy3 * xhat3).sum((0, 2)), dy3.sum((0, 2))

    if groups == channels:
        op, torch_op = "InstanceNorm", lambda tx, tw, tb: torch.nn.functional.instance_norm(tx, weight=tw, bias=tb,
                                                                                            eps=EPS)
    else:
        op, torch_op = "GroupNorm", lambda tx, tw, tb: torch.nn.functional.group_norm(tx, groups, tw, tb, EPS)
    torch_pair = _torch_pair(torch, torch_op, x, w, b) if torch else (None, None)
    return Case(op, x, lambda out: group_norm_forward(x3, groups, w, b, EPS,
                                                       out=None if out is None else out.reshape(x3.shape)),
                forward_backward, *torch_pair, numpy_forward, lambda: numpy_forward(with_backward=True))


def build_cases(quick: bool, torch) -> list[Case]:
    rng = np.random.default_rng(0)
    rows, images = (QUICK_ROW_SHAPES, QUICK_IMAGE_SHAPES) if quick else (ROW_SHAPES, IMAGE_SHAPES)
    cases = []
    for shape in rows:
        cases += [layer_norm_case(shape, rng, torch), rms_norm_case(shape, rng, torch),
                  batch_norm_case(shape, rng, torch)]
    for shape in images:
        cases += [batch_norm_case(shape, rng, torch), group_norm_case(shape, rng, torch, group_count(shape[1])),
                  group_norm_case(shape, rng, torch, shape[1])]
    return cases


# ------------------------------------------------------------ measuring
def measure(case: Case, copy_bytes_per_s: float, repeat: int, min_time: float) -> dict:
    out = np.empty_like(case.x)
    contenders = {
        "fwd": lambda: case.forward(None), "fwd out=": lambda: case.forward(out), "f+b": case.forward_backward,
        "numpy fwd": case.numpy_forward, "numpy f+b": case.numpy_forward_backward,
        "torch fwd": case.torch_forward, "torch f+b": case.torch_forward_backward,
    }
    contenders = {name: fn for name, fn in contenders.items() if fn is not None}
    seconds = dict(zip(contenders, alternating_medians(list(contenders.values()), repeat, min_time)))
    fwd_bytes, fwd_bwd_bytes = 2 * case.x.nbytes, 5 * case.x.nbytes

    def speedup(theirs: str, ours: str) -> float | None:
        return seconds[theirs] / seconds[ours] if theirs in seconds else None

    return {
        "op": case.op, "shape": "x".join(map(str, case.x.shape)),
        "fwd ms": seconds["fwd"] * 1e3, "fwd out= ms": seconds["fwd out="] * 1e3,
        "fwd GB/s": fwd_bytes / seconds["fwd out="] / 1e9,
        "fwd %copy": 100 * fwd_bytes / seconds["fwd out="] / copy_bytes_per_s,
        "fwd x torch": speedup("torch fwd", "fwd"), "fwd x numpy": speedup("numpy fwd", "fwd"),
        "f+b ms": seconds["f+b"] * 1e3,
        "f+b GB/s": fwd_bwd_bytes / seconds["f+b"] / 1e9,
        "f+b %copy": 100 * fwd_bwd_bytes / seconds["f+b"] / copy_bytes_per_s,
        "f+b x torch": speedup("torch f+b", "f+b"), "f+b x numpy": speedup("numpy f+b", "f+b"),
    }


def plot(rows: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{row['op']}\n{row['shape']}" for row in rows]
    positions = np.arange(len(rows))
    figure, (bandwidth, speedup) = plt.subplots(2, 1, figsize=(max(8, len(rows) * 0.7), 8), sharex=True)
    for offset, key in ((-0.2, "fwd %copy"), (0.2, "f+b %copy")):
        bandwidth.bar(positions + offset, [row[key] for row in rows], 0.4, label=key)
    bandwidth.set_ylabel("% of copy bandwidth")
    bandwidth.legend()
    for offset, key in ((-0.2, "fwd x torch"), (0.2, "f+b x torch")):
        speedup.bar(positions + offset, [row[key] or 0 for row in rows], 0.4, label=key)
    speedup.axhline(1, color="black", linewidth=0.8)
    speedup.set_ylabel("speed-up over PyTorch CPU")
    speedup.set_yscale("log")
    speedup.legend()
    speedup.set_xticks(positions, labels, rotation=90, fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


# ------------------------------------------------------------ the GPU (--device cuda)
GPU_ROW_SHAPES = [(4096, 1024), (16384, 4096), (32768, 8192), (65536, 512)]
GPU_IMAGE_SHAPES = [(32, 64, 56, 56), (256, 256, 14, 14)]


def gpu_time(torch, fn: Callable[[], object], min_time: float = 0.05, samples: int = 5) -> tuple[float, float]:
    """``(device ms, host µs)`` per call of ``fn``, medians of ``samples`` runs of back-to-back calls: CUDA
    events recorded around the calls give the device time (the GPU's time, idle gaps included when the
    host is slower), the host clock until the last call is issued the host time."""
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    number = max(1, int(min_time / max(time.perf_counter() - start, 1e-6)))
    device, host = [], []
    for _ in range(samples):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        start = time.perf_counter()
        for _ in range(number):
            fn()
        issued = time.perf_counter()
        end.record()
        end.synchronize()
        device.append(begin.elapsed_time(end) / number)
        host.append((issued - start) / number * 1e6)
    return float(np.median(device)), float(np.median(host))


def gpu_copy_bandwidth(torch, nbytes: int = 2**30) -> float:
    """Bytes per second (read + written) of a device-to-device copy of ``nbytes``, from CUDA events."""
    src = torch.empty(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    milliseconds, _ = gpu_time(torch, lambda: dst.copy_(src))
    return 2 * nbytes / (milliseconds / 1e3)


class GpuTable:
    """tinynorm's CUDA kernels against torch.nn.functional, case by case, on tensors both libraries share."""

    def __init__(self, torch, copy: float, out: str) -> None:
        self.torch, self.copy, self.out, self.rows = torch, copy, out, []

    def time(self, case: str, x, direction: str, arrays: int, ours: Callable, theirs: Callable) -> None:
        """Record one case; ``arrays`` is how many arrays of x's size the pass must read or write."""
        nbytes = arrays * x.numel() * x.element_size()
        ours_ms, ours_us = gpu_time(self.torch, ours)
        theirs_ms, theirs_us = gpu_time(self.torch, theirs)
        row = {"case": case, "dtype": str(x.dtype).removeprefix("torch."), "pass": direction,
               "ours ms": ours_ms, "ours host us": ours_us, "torch ms": theirs_ms, "torch host us": theirs_us,
               "ours GB/s": nbytes / ours_ms / 1e6, "torch GB/s": nbytes / theirs_ms / 1e6,
               "ours %copy": 100 * nbytes / (ours_ms / 1e3) / self.copy,
               "torch %copy": 100 * nbytes / (theirs_ms / 1e3) / self.copy, "x torch": theirs_ms / ours_ms}
        self.rows.append(row)
        print_table([row], list(row))
        write_json(self.out, {"device": self.torch.cuda.get_device_name(), "copy_GB_per_s": self.copy / 1e9,
                              "timing": "CUDA events (device ms); host clock until the last call is issued",
                              "rows": self.rows})

    def shared(self, *tensors):
        """tinynorm arrays on the memory of PyTorch tensors (no copy)."""
        import tinynorm
        return [tinynorm.from_cuda_array(t.detach()).array for t in tensors]

    def leaves(self, *tensors):
        """Copies of ``tensors`` that require grad, for PyTorch's backward."""
        return [t.detach().clone().requires_grad_() for t in tensors]

    def rows_norms(self, rows: int, cols: int, dtype) -> None:
        from tinynorm.kernels import cuda as gpu
        torch, F = self.torch, self.torch.nn.functional
        x = torch.randn(rows, cols, device="cuda", dtype=dtype)
        dy = torch.randn_like(x)
        w, b = torch.randn(cols, device="cuda") * 0.5 + 1, torch.randn(cols, device="cuda")
        xn, dyn, wn, bn = self.shared(x, dy, w, b)
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
        """Training: ours = statistics + rstd + forward (x read twice, y written)."""
        from tinynorm.kernels import cuda as gpu
        torch, F = self.torch, self.torch.nn.functional
        x = torch.randn(*shape, device="cuda")
        dy = torch.randn_like(x)
        w, b = torch.randn(shape[1], device="cuda"), torch.randn(shape[1], device="cuda")
        xn, dyn, wn, bn = self.shared(x, dy, w, b)

        def ours_forward():
            mean, var = gpu.batch_norm_stats(xn)
            rstd = gpu.batch_norm_rstd(var, EPS)
            return gpu.batch_norm_forward(xn, mean, rstd, wn, bn), mean, rstd

        _, mean, rstd = ours_forward()
        case = f"batch_norm {shape}"
        self.time(case, x, "forward", 3, ours_forward,
                  lambda: F.batch_norm(x, None, None, w, b, training=True, eps=EPS))
        xt, wt, bt = self.leaves(x, w, b)
        yt = F.batch_norm(xt, None, None, wt, bt, training=True, eps=EPS)
        self.time(case, x, "backward", 3, lambda: gpu.batch_norm_backward(dyn, xn, mean, rstd, wn, True),
                  lambda: torch.autograd.grad(yt, (xt, wt, bt), dy, retain_graph=True))
        self.time(case, x, "forward+backward", 6,
                  lambda: gpu.batch_norm_backward(dyn, xn, *ours_forward()[1:], wn, True),
                  lambda: torch.autograd.grad(F.batch_norm(xt, None, None, wt, bt, training=True, eps=EPS),
                                              (xt, wt, bt), dy))

    def group_norm(self, shape: tuple, groups: int) -> None:
        from tinynorm.kernels import cuda as gpu
        torch, F = self.torch, self.torch.nn.functional
        x = torch.randn(*shape, device="cuda")
        dy = torch.randn_like(x)
        channels = shape[1]
        w, b = torch.randn(channels, device="cuda"), torch.randn(channels, device="cuda")
        xn, dyn, wn, bn = self.shared(x, dy, w, b)
        _, mean, rstd = gpu.group_norm_forward(xn, groups, wn, bn, EPS)
        case = f"group_norm {shape} G={groups}"
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
        for rows, cols in row_shapes:
            for dtype in dtypes:
                self.rows_norms(rows, cols, dtype)
        for shape in image_shapes:
            flat = shape[:2] + (shape[2] * shape[3],)  # tinynorm's kernels take (N, C, S)
            self.batch_norm(flat)
            self.group_norm(flat, 32)
        return self.rows


def run_cuda(quick: bool, out: str) -> None:
    """The ``--device cuda`` table, or a clear exit without a GPU or a CUDA build of PyTorch."""
    from numba import config, cuda
    if config.ENABLE_CUDASIM or not cuda.is_available():
        raise SystemExit("bench_norms.py --device cuda needs an NVIDIA GPU and its driver (numba.cuda sees none"
                         f"{', only the simulator' if config.ENABLE_CUDASIM else ''}); time the CPU kernels "
                         "without --device")
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("bench_norms.py --device cuda compares with PyTorch on the same GPU: install a CUDA build "
                         f"of PyTorch (this one, {torch.__version__}, sees no GPU)")
    copy = gpu_copy_bandwidth(torch)
    print(f"{torch.cuda.get_device_name()}: copy {copy / 1e9:.0f} GB/s")
    GpuTable(torch, copy, out).run(GPU_ROW_SHAPES[:2] if quick else GPU_ROW_SHAPES, GPU_IMAGE_SHAPES,
                                   [torch.float32] if quick else [torch.float32, torch.float16])
    print(f"wrote {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few small shapes, fewer repeats")
    parser.add_argument("--plot", action="store_true", help="also write a PNG next to the JSON")
    parser.add_argument("--out", default="benchmarks/out/bench_norms.json", help="JSON output path")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="which kernels to time")
    args = parser.parse_args()
    if args.device == "cuda":
        run_cuda(args.quick, args.out)
        return
    try:
        import torch
        torch.set_num_threads(numba.get_num_threads())
    except ImportError:
        torch = None
    repeat, min_time = (3, 0.01) if args.quick else (7, 0.05)
    copy_bytes_per_s = copy_bandwidth()
    print(f"parallel copy: {copy_bytes_per_s / 1e9:.1f} GB/s with {numba.get_num_threads()} threads")
    rows = [measure(case, copy_bytes_per_s, repeat, min_time) for case in build_cases(args.quick, torch)]
    print_table(rows, list(rows[0]))
    write_json(args.out, {"copy_GB_per_s": copy_bytes_per_s / 1e9, "dtype": "float32", "rows": rows})
    print(f"wrote {args.out}")
    if args.plot:
        png = str(args.out).removesuffix(".json") + ".png"
        plot(rows, png)
        print(f"wrote {png}")


if __name__ == "__main__":
    main()
