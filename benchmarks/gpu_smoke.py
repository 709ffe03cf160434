"""Every CUDA kernel family against the CPU on small shapes, forward and backward: the first check of a GPU.

Run: ``python3 benchmarks/gpu_smoke.py [--out benchmarks/out/smoke.json]`` (tinynorm from this checkout;
under a minute on a GPU, a few minutes in Numba's CUDA simulator). Each case builds the same small
computation from the same random numbers on ``'cpu'`` and on ``'cuda'`` through tinynorm's public API
(elementwise ops with broadcasting, reductions, batched matmul, indexing with repeated indices and
masks, embedding, cross-entropy, conv and pooling, softmax, dropout, SGD and Adam steps, every norm
forward and backward with running statistics, float16 LayerNorm), backpropagates a random upstream
gradient, and compares every output and gradient. A case that raises is recorded and the next one
runs; the JSON is rewritten after every case, so a run that dies keeps what it had. The exit status
is 1 when any case fails. Run it with ``CUDA_LAUNCH_BLOCKING=1`` on a GPU so an error names its launch.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tinynorm from this checkout

import tinynorm  # noqa: E402
import tinynorm.nn.functional as F  # noqa: E402
from tinynorm import nn  # noqa: E402

TOLERANCE = {np.dtype(np.float32): 2e-4, np.dtype(np.float16): 4e-3, np.dtype(np.float64): 1e-10}


class Inputs:
    """The same random leaves on each device: ``leaf(shape)`` requires grad, ``data(...)`` does not."""

    def __init__(self, device: str) -> None:
        self.device, self.rng, self.leaves = device, np.random.default_rng(0), []

    def data(self, shape: tuple, dtype: type = np.float32, low: int | None = None, high: int | None = None):
        values = (self.rng.integers(low, high, shape) if low is not None
                  else self.rng.standard_normal(shape).astype(dtype))
        return tinynorm.tensor(values, device=self.device)

    def leaf(self, shape: tuple, dtype: type = np.float32):
        tensor = tinynorm.tensor(self.rng.standard_normal(shape).astype(dtype), device=self.device,
                                 requires_grad=True)
        self.leaves.append(tensor)
        return tensor

    def results(self, *outputs) -> list[np.ndarray]:
        """The outputs, then (after a backward of a random upstream gradient per output) every leaf's gradient."""
        total = None
        for output in outputs:
            if output.requires_grad:
                upstream = tinynorm.tensor(self.rng.standard_normal(output.shape).astype(np.float32),
                                           device=self.device, dtype=output.dtype)
                term = (output * upstream).sum()
                total = term if total is None else total + term
        if total is not None:
            total.backward()
        return [o.detach().numpy() for o in outputs] + [leaf.grad.numpy() for leaf in self.leaves]


def elementwise(s: Inputs) -> list:
    a, b = s.leaf((3, 1, 4)), s.leaf((2, 4))
    c = (a + b * 2).exp() / (1 + (a - b).abs())
    return s.results(c, tinynorm.where(c > 1, c, -c), tinynorm.maximum(a, b), F.gelu(a * b), (a ** 2).T)


def reductions(s: Inputs) -> list:
    a = s.leaf((4, 5, 6))
    return s.results(a.sum(dim=(0, 2)), a.mean(dim=1, keepdim=True), a.amax(dim=2), a.argmax(dim=1), a.sum())


def matmul(s: Inputs) -> list:
    a, b, c = s.leaf((2, 3, 4)), s.leaf((4, 5)), s.leaf((2, 5, 3))
    return s.results(a @ b, (a @ b) @ c, F.linear(a, s.leaf((6, 4)), s.leaf((6,))))


def indexing(s: Inputs) -> list:
    a = s.leaf((5, 4))
    index = tinynorm.tensor([0, 3, 3, 1], device=s.device)
    columns = tinynorm.tensor([1, 0, 2, 1], device=s.device)
    return s.results(a[index], a[:, 1:3], a[a > 0.5], a[index, columns])


def embedding(s: Inputs) -> list:
    weight = s.leaf((10, 6))
    ids = s.data((3, 5), low=0, high=10)
    return s.results(F.embedding(ids, weight))


def cross_entropy(s: Inputs) -> list:
    logits = s.leaf((6, 5))
    target = tinynorm.tensor([0, 4, -100, 2, 2, 1], device=s.device)
    return s.results(F.cross_entropy(logits, target, ignore_index=-100, label_smoothing=0.1),
                     F.cross_entropy(logits, tinynorm.tensor([1, 1, 0, 3, 4, 2], device=s.device), reduction="sum"))


def conv_and_pooling(s: Inputs) -> list:
    x, weight, bias = s.leaf((2, 3, 7, 6)), s.leaf((4, 3, 3, 3)), s.leaf((4,))
    y = F.conv2d(x, weight, bias, stride=1, padding=1)
    return s.results(y, F.max_pool2d(y, 2), F.avg_pool2d(y, 2, stride=1), F.conv2d(x, weight, None, stride=2))


def softmax(s: Inputs) -> list:
    a = s.leaf((3, 7))
    return s.results(F.softmax(a, dim=-1), F.log_softmax(a, dim=-1), F.softmax(a.T, dim=-1))


def dropout(s: Inputs) -> list:
    """Different generators on the two devices: compare what both must agree on (the scaling, the kept
    values, the fraction kept within 5 standard deviations), not the masks."""
    tinynorm.manual_seed(0)
    a = s.data((4000,)) + 3
    y = F.dropout(a, 0.25, training=True).numpy()
    kept = y != 0
    fraction_ok = np.float32(abs(kept.mean() - 0.75) < 5 * np.sqrt(0.75 * 0.25 / y.size))
    return [fraction_ok, np.float32(np.abs(y[kept] * 0.75 - a.numpy()[kept]).max() < 1e-5)]


def optimizers(s: Inputs) -> list:
    results = []
    for make in (lambda p: tinynorm.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2),
                 lambda p: tinynorm.optim.Adam(p, lr=1e-2, weight_decay=1e-2, amsgrad=True),
                 lambda p: tinynorm.optim.AdamW(p, lr=1e-2)):
        params = [s.leaf((5, 3)), s.leaf((3,))]
        optimizer = make(params)
        for _ in range(2):
            optimizer.zero_grad()
            ((params[0] @ params[1]) ** 2).sum().backward()
            optimizer.step()
        results += [p.detach().numpy() for p in params]
    return results


def norms(s: Inputs) -> list:
    x, x4 = s.leaf((6, 40)), s.leaf((4, 8, 3, 5))
    weight, bias, channel_weight = s.leaf((40,)), s.leaf((40,)), s.leaf((8,))
    batch_norm = nn.BatchNorm2d(8).to(s.device)
    group_norm = nn.GroupNorm(4, 8).to(s.device)
    outputs = [F.layer_norm(x, (40,), weight, bias), F.rms_norm(x, (40,), weight), batch_norm(x4),
               group_norm(x4), F.group_norm(x4, 8, channel_weight, None), F.layer_norm(x, (40,))]
    results = s.results(*outputs)
    batch_norm.eval()
    with tinynorm.no_grad():
        results.append(batch_norm(x4.detach()).numpy())
    return results + [batch_norm.running_mean.numpy(), batch_norm.running_var.numpy()]


def half_norms(s: Inputs) -> list:
    x = s.leaf((5, 1100), np.float16)  # wide rows: the block-per-row kernels
    weight = s.leaf((1100,))
    return s.results(F.layer_norm(x, (1100,), weight, None), F.rms_norm(x, (1100,), None))


CASES: dict[str, Callable[[Inputs], list]] = {
    "elementwise with broadcasting": elementwise, "reductions": reductions, "matmul, batched": matmul,
    "indexing (gather, scatter, mask)": indexing, "embedding": embedding, "cross-entropy": cross_entropy,
    "conv2d and pooling": conv_and_pooling, "softmax": softmax, "dropout": dropout,
    "SGD and Adam steps": optimizers, "norms, forward and backward": norms, "float16 norms (wide rows)": half_norms,
}


def compare(name: str, case: Callable[[Inputs], list]) -> dict:
    """Run ``case`` on both devices and compare every result, relative to the largest reference value."""
    start = time.perf_counter()
    expected, actual = case(Inputs("cpu")), case(Inputs("cuda"))
    tinynorm.cuda.synchronize()
    errors = []
    for want, got in zip(expected, actual):
        want, got = np.asarray(want), np.asarray(got)
        if want.shape != got.shape or want.dtype != got.dtype:
            errors.append(float("inf"))
            continue
        scale = max(1.0, float(np.abs(want.astype(np.float64)).max(initial=0)))
        errors.append(float(np.abs(got.astype(np.float64) - want).max(initial=0)) / scale)
    tolerance = max(TOLERANCE.get(np.asarray(want).dtype, 2e-4) for want in expected)
    ok = len(expected) == len(actual) and max(errors, default=0) <= tolerance
    return {"case": name, "ok": ok, "max_error": max(errors, default=0), "tolerance": tolerance,
            "results": len(errors), "seconds": time.perf_counter() - start}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/out/smoke.json")
    args = parser.parse_args()
    tinynorm.cuda.require()
    from tinynorm.backends.cuda.runtime import launch

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for name, case in CASES.items():
        try:
            row = compare(name, case)
        except Exception as error:  # noqa: BLE001  (recorded; the next case still runs)
            row = {"case": name, "ok": False, "error": f"{type(error).__name__}: {error}",
                   "traceback": traceback.format_exc()[-2000:]}
        rows.append(row)
        print(f"{'ok  ' if row['ok'] else 'FAIL'} {name}: {row.get('max_error', row.get('error'))}", flush=True)
        out.write_text(json.dumps({"fast_launch": launch.fast_launch_enabled(), "launches": dict(launch.counts),
                                   "refusals": dict(launch.refusals), "cases": rows}, indent=2, default=str))
    failed = [row["case"] for row in rows if not row["ok"]]
    print(f"{len(rows) - len(failed)}/{len(rows)} cases agree with the CPU; wrote {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
