"""The normalization kernels against PyTorch, plain numpy and the copy bandwidth (CPU, float32).

Run: ``tinynorm bench norms [--quick] [--plot] [--threads N --clock cpu] [--order ...] [--out PATH]``;
``python -m tinynorm.benchmarks.norms --device cuda`` times the CUDA kernels instead (``norms_cuda.py``).

"fwd" times the allocating call (as a user or PyTorch makes it); "fwd out=" writes into a reused
buffer and shows the kernel without the page faults of a fresh output. GB/s counts the minimum
traffic: the input read and the output written once (forward, 2 arrays), plus ``x``, ``dy`` read and
``dx`` written for the backward (5 arrays in all); ``%copy`` divides that by the parallel copy
bandwidth measured in the same run. ``x torch`` and ``x numpy`` are speed-ups (their time / ours):
above 1 means tinynorm is faster. The contenders of one case are timed in turns, so load from other
processes hits them alike. Without PyTorch the torch columns stay empty.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numba
import numpy as np

from ..kernels.cpu.batch_norm import batch_norm_backward, batch_norm_training_forward
from ..kernels.cpu.group_norm import group_norm_backward, group_norm_forward
from ..kernels.cpu.layer_norm import layer_norm_backward, layer_norm_forward
from ..kernels.cpu.rms_norm import rms_norm_backward, rms_norm_forward
from . import common

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
    """Training mode: batch statistics, the running ones updated, then normalize (as PyTorch's call with
    running buffers); the backward includes the statistics' gradient."""
    x, dy = rng.standard_normal(shape, np.float32), rng.standard_normal(shape, np.float32)
    channels = shape[1]
    w, b = rng.standard_normal(channels, np.float32), rng.standard_normal(channels, np.float32)
    x3, dy3 = x.reshape(shape[0], channels, -1), dy.reshape(shape[0], channels, -1)
    param = (channels, 1)
    running_mean, running_var = np.zeros(channels, np.float32), np.ones(channels, np.float32)

    def forward(out):
        return batch_norm_training_forward(x3, w, b, EPS, running_mean, running_var, out=out)

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
def measure(case: Case, copy_bytes_per_s: float, repeat: int, min_time: float,
            clock: Callable[[], float] = common.CLOCKS["wall"]) -> dict:
    out = np.empty_like(case.x)
    contenders = {
        "fwd": lambda: case.forward(None), "fwd out=": lambda: case.forward(out), "f+b": case.forward_backward,
        "numpy fwd": case.numpy_forward, "numpy f+b": case.numpy_forward_backward,
        "torch fwd": case.torch_forward, "torch f+b": case.torch_forward_backward,
    }
    contenders = {name: fn for name, fn in contenders.items() if fn is not None}
    seconds = dict(zip(contenders, common.alternating_medians(list(contenders.values()), repeat, min_time, clock)))
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = common.make_parser("norms", __doc__, repeat=7)
    parser.add_argument("--plot", action="store_true", help="also write a PNG next to the JSON")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="which kernels to time (cuda: against PyTorch on the same GPU)")
    args, child = common.parse(parser, argv, "tinynorm.benchmarks.norms")
    if child is not None:
        return child
    if args.device == "cuda":
        from .norms_cuda import run_cuda

        run_cuda(args.quick, args.out)
        return 0
    torch = common.import_torch()
    repeat, min_time = (min(args.repeat, 3), 0.01) if args.quick else (args.repeat, 0.05)
    with common.ThreadSettings(args.threads) as settings:
        copy_bytes_per_s = common.copy_bandwidth()
        print(f"parallel copy: {copy_bytes_per_s / 1e9:.1f} GB/s with {numba.get_num_threads()} Numba threads")
        rows = [measure(case, copy_bytes_per_s, repeat, min_time, common.CLOCKS[args.clock])
                for case in build_cases(args.quick, torch)]
        threading = settings.threading_info()
    payload = {"benchmark": "norms", "copy_GB_per_s": copy_bytes_per_s / 1e9, "dtype": "float32"}
    common.report(args, rows, list(rows[0]), threading, payload, repeat, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
