"""The normalization kernels on an NVIDIA GPU against ``torch.nn.functional`` on the same GPU
(``python -m tinynorm.benchmarks.norms --device cuda``).

LN and RMS (float32 and float16) on 4096x1024, 16384x4096, 32768x8192 and 65536x512, BN and GN (32 groups)
on (32, 64, 56, 56) and (256, 256, 14, 14), forward, backward and forward+backward, on tensors both
libraries share. Each case is timed as back-to-back calls: device milliseconds per call from CUDA
events around the calls, host microseconds per call until the last call is issued (the Python a call
costs), GB/s of the minimum traffic over the device time and its fraction of the device-to-device copy
bandwidth measured in the same run. It needs an NVIDIA GPU, numba-cuda and a CUDA build of PyTorch,
and stops with a clear message otherwise; the rows are printed and the JSON rewritten as they come.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from .common import print_table, write_json
from .norms import EPS

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
        raise SystemExit("--device cuda needs an NVIDIA GPU and its driver (numba.cuda sees none"
                         f"{', only the simulator' if config.ENABLE_CUDASIM else ''}); time the CPU kernels "
                         "without --device")
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("--device cuda compares with PyTorch on the same GPU: install a CUDA build "
                         f"of PyTorch (this one, {torch.__version__}, sees no GPU)")
    copy = gpu_copy_bandwidth(torch)
    print(f"{torch.cuda.get_device_name()}: copy {copy / 1e9:.0f} GB/s")
    GpuTable(torch, copy, out).run(GPU_ROW_SHAPES[:2] if quick else GPU_ROW_SHAPES, GPU_IMAGE_SHAPES,
                                   [torch.float32] if quick else [torch.float32, torch.float16])
    print(f"wrote {out}")
