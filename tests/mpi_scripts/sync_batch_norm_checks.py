"""SyncBatchNorm over W ranks == BatchNorm on the concatenated batch (run by run_checks.py).

For (N, C) float32 and (N, C, H, W) float64 inputs: outputs, input gradients for a random upstream
gradient, weight/bias gradients after DDP's average, running statistics over two steps and the
eval-mode output must match both a float64 numpy reference and tinynorm's single-process BatchNorm.
Also checks that plain BatchNorm on the shards normalizes with per-rank statistics instead.
"""
import numpy as np

import _harness as h
import tinynorm
from tinynorm import distributed
from tinynorm.nn import BatchNorm1d, BatchNorm2d
from tinynorm.nn.sync_batch_norm import SyncBatchNorm

EPS, MOMENTUM = 1e-5, 0.3


def numpy_batch_norm(x, dy, weight, bias):
    """Float64 reference: y, dx, dweight, dbias, batch mean and unbiased variance per channel."""
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    count = x.size // x.shape[1]
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    xhat = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + EPS)
    y = xhat * weight.reshape(shape) + bias.reshape(shape)
    dxhat = dy * weight.reshape(shape)
    dx = (dxhat - dxhat.mean(axis=axes).reshape(shape)
          - xhat * (dxhat * xhat).mean(axis=axes).reshape(shape)) / np.sqrt(var.reshape(shape) + EPS)
    return y, dx, (dy * xhat).sum(axis=axes), dy.sum(axis=axes), mean, var * count / (count - 1)


def run_case(sizes, channels, spatial, dtype, rtol, atol):
    name = f"{len(spatial) + 2}D {np.dtype(dtype).name}"
    rng = np.random.default_rng(7)  # the same global data on every rank
    shape = (sum(sizes), channels) + spatial
    batches = [rng.normal(3.0, 2.0, shape).astype(dtype) for _ in range(2)]
    dy = rng.normal(size=shape).astype(dtype)
    weight, bias = rng.normal(size=channels).astype(dtype), rng.normal(size=channels).astype(dtype)
    local = h.local_slice(sizes)

    sync = SyncBatchNorm(channels, eps=EPS, momentum=MOMENTUM, dtype=dtype)
    sync.weight.array[...], sync.bias.array[...] = weight, bias
    x = tinynorm.tensor(batches[0][local], requires_grad=True)
    y = sync(x)
    y.backward(tinynorm.tensor(dy[local]))
    distributed.allreduce_gradients(sync)  # DDP's average: (sum over ranks of local sums) / W
    stats_after_one = sync.running_mean.numpy().copy(), sync.running_var.numpy().copy()
    with tinynorm.no_grad():
        sync(tinynorm.tensor(batches[1][local]))
    sync.eval()  # no collective in eval mode; an empty shard skips it (plain BatchNorm rejects empty input)
    y_eval = sync(tinynorm.tensor(batches[0][local])) if sizes[h.rank] else y

    ys, dxs, y_evals = h.gather_rows(y.numpy()), h.gather_rows(x.grad.numpy()), h.gather_rows(y_eval.numpy())
    states = h.comm.gather({k: v.numpy().copy() for k, v in sync.state_dict().items()}, root=0)
    grads = h.comm.gather((sync.weight.grad.numpy(), sync.bias.grad.numpy()), root=0)
    if h.rank != 0:
        return

    want_y, want_dx, want_dw, want_db, batch_mean, batch_var = numpy_batch_norm(batches[0], dy, weight, bias)
    h.check(f"{name} output vs numpy", ys, want_y, rtol, atol)
    h.check(f"{name} input grad vs numpy", dxs, want_dx, rtol, atol)
    for r, (dw, db) in enumerate(grads):  # after the average every rank holds 1/W of the full gradient
        h.check(f"{name} weight grad x W (rank {r})", dw * h.world, want_dw, rtol, atol)
        h.check(f"{name} bias grad x W (rank {r})", db * h.world, want_db, rtol, atol)
    h.check(f"{name} running_mean after 1 step", stats_after_one[0], MOMENTUM * batch_mean, rtol, atol)
    h.check(f"{name} running_var after 1 step", stats_after_one[1], 1 - MOMENTUM + MOMENTUM * batch_var, rtol, atol)

    reference = (BatchNorm1d if not spatial else BatchNorm2d)(channels, eps=EPS, momentum=MOMENTUM, dtype=dtype)
    reference.weight.array[...], reference.bias.array[...] = weight, bias
    x_full = tinynorm.tensor(batches[0], requires_grad=True)
    y_full = reference(x_full)
    y_full.backward(tinynorm.tensor(dy))
    with tinynorm.no_grad():
        reference(tinynorm.tensor(batches[1]))
    reference.eval()
    h.check(f"{name} output vs BatchNorm", ys, y_full.numpy(), rtol, atol)
    h.check(f"{name} input grad vs BatchNorm", dxs, x_full.grad.numpy(), rtol, atol)
    h.check(f"{name} eval output vs BatchNorm", y_evals, reference(tinynorm.tensor(batches[0])).numpy(), rtol, atol)
    for r, state in enumerate(states):
        for key, value in reference.state_dict().items():
            h.check(f"{name} {key} after 2 steps (rank {r})", state[key], value.numpy(), rtol, atol)


def check_plain_batch_norm_is_per_rank(sizes):
    """Plain BatchNorm on a shard normalizes with the shard's own statistics, not the global ones."""
    rng = np.random.default_rng(8)
    x = (rng.normal(size=(sum(sizes), 5)) * np.arange(1, sum(sizes) + 1)[:, None]).astype(np.float32)
    shard = x[h.local_slice(sizes)]
    y = BatchNorm1d(5)(tinynorm.tensor(shard)).numpy() if len(shard) > 1 else np.empty((0, 5), np.float32)
    ys = h.gather_rows(y)
    if h.rank != 0:
        return
    per_rank = [x[sum(sizes[:r]):sum(sizes[:r + 1])] for r in range(h.world) if sizes[r] > 1]
    want = np.concatenate([(s - s.mean(0)) / np.sqrt(s.var(0) + EPS) for s in per_rank])
    h.check("plain BatchNorm output == per-shard statistics", ys, want, 1e-4, 1e-5)
    global_y = ((x - x.mean(0)) / np.sqrt(x.var(0) + EPS))[[i for i in range(len(x)) if sizes[_owner(sizes, i)] > 1]]
    h.expect("plain BatchNorm output differs from the global-statistics output", np.abs(ys - global_y).max() > 0.1)


def _owner(sizes, index):
    return int(np.searchsorted(np.cumsum(sizes), index, side="right"))


def run(sizes):
    run_case(sizes, 6, (), np.float32, 1e-4, 2e-5)
    run_case(sizes, 3, (3, 2), np.float64, 1e-10, 1e-12)
    check_plain_batch_norm_is_per_rank(sizes)
