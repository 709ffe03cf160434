"""tinynorm.distributed and SyncBatchNorm.

Multi-process behaviour is checked by the scripts in tests/mpi_scripts/, started here under mpiexec:
each compares its ranks' results with single-process training on the whole batch and prints a success
line. They are never skipped: CI installs the ``mpi`` extra (mpi4py + mpich), and a missing mpiexec is
a failure. In-process tests use a world of one (mpi4py's COMM_WORLD without mpiexec) and a fake
two-rank communicator that stands for a second rank holding the same data.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tinynorm
from tinynorm import distributed, nn
from tinynorm.nn.sync_batch_norm import SyncBatchNorm

SCRIPTS = Path(__file__).parent / "mpi_scripts"
MPI_TIMEOUT_S = 90  # a deadlock (e.g. a rank skipping a collective) fails here instead of hanging CI


def mpiexec() -> str:
    """mpiexec next to this Python (the mpich wheel puts it in the venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.fail('mpiexec not found next to sys.executable or on PATH: pip install "tinynorm[mpi]"')
    return found


def run_mpi_checks(shards: list[int]) -> str:
    """Run tests/mpi_scripts/run_checks.py on ``len(shards)`` processes; return rank 0's output."""
    command = [mpiexec(), "-n", str(len(shards)), sys.executable, "-m", "mpi4py", str(SCRIPTS / "run_checks.py"),
               ",".join(map(str, shards))]
    env = dict(os.environ, NUMBA_NUM_THREADS="1")  # several ranks share few cores
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=MPI_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"MPI checks with shards {shards}: no result after {MPI_TIMEOUT_S} s (deadlock?)")
    assert done.returncode == 0, f"MPI checks with shards {shards} failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.mpi
@pytest.mark.parametrize("shards", [[4, 4], [5, 2, 3], [4, 0, 3]], ids=["equal", "unequal", "empty-rank"])
def test_sync_batch_norm_and_ddp_across_processes_equal_single_process_training(shards):
    """SyncBatchNorm outputs, gradients and running statistics, and DDP training steps, on 2 ranks
    with equal shards, 3 ranks with unequal shards and 3 ranks of which one has an empty shard, equal
    single-process BatchNorm and training on the whole batch; plain BatchNorm under DDP does not."""
    assert f"MPI_CHECKS_OK world={len(shards)} shards={shards}" in run_mpi_checks(shards)


# ------------------------------------------------------------------------------ a world of one
def test_world_of_one_without_mpiexec():
    assert distributed.get_world_size() == 1
    assert distributed.get_rank() == 0
    assert distributed.is_initialized()


def _pair(batch_norm_class, seed=0, **kwargs):
    """A BatchNorm and a SyncBatchNorm with the same random affine parameters."""
    rng = np.random.default_rng(seed)
    plain, sync = batch_norm_class(4, **kwargs), SyncBatchNorm(4, **kwargs)
    if plain.affine:
        weight = rng.normal(size=4).astype(np.float32) + 1
        for layer in (plain, sync):
            layer.weight.array[...], layer.bias.array[...] = weight, np.linspace(-1, 1, 4, dtype=np.float32)
    return plain, sync


def _run(layer, x, dy):
    xt = tinynorm.tensor(x, requires_grad=True)
    y = layer(xt)
    y.backward(tinynorm.tensor(dy))
    grads = [p.grad.numpy() for p in layer.parameters()]
    return [y.numpy(), xt.grad.numpy(), *grads, *(b.numpy() for b in layer.buffers())]


@pytest.mark.parametrize("batch_norm_class, shape", [(nn.BatchNorm1d, (6, 4)), (nn.BatchNorm1d, (5, 4, 3)),
                                                     (nn.BatchNorm2d, (3, 4, 2, 3))])
@pytest.mark.parametrize("kwargs, mode", [({}, "train"), ({"momentum": None}, "train"), ({}, "eval"),
                                          ({}, "frozen"), ({"track_running_stats": False}, "train"),
                                          ({"affine": False}, "train")])
def test_sync_batch_norm_in_a_world_of_one_is_exactly_batch_norm(batch_norm_class, shape, kwargs, mode):
    plain, sync = _pair(batch_norm_class, **kwargs)
    rng = np.random.default_rng(1)
    for step in range(2):  # the second step sees running statistics the first one updated
        x = rng.normal(5.0, 3.0, shape).astype(np.float32)
        dy = rng.normal(size=shape).astype(np.float32)
        for layer in (plain, sync):
            layer.train(mode != "eval")
            if mode == "frozen":
                layer.freeze()
        for want, got in zip(_run(plain, x, dy), _run(sync, x, dy), strict=True):
            np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------- a fake second rank
class MirrorComm:
    """A communicator of two ranks where the other rank holds exactly this rank's data."""

    def __init__(self):
        self.messages = []

    def Get_size(self):
        return 2

    def Get_rank(self):
        return 0

    def Allgather(self, send, receive):
        self.messages.append(("Allgather", send.size))
        receive[...] = send

    def Allreduce(self, send, receive, op=None):
        self.messages.append(("Allreduce", receive.size))
        receive *= 2

    def Bcast(self, buffer, root=0):
        self.messages.append(("Bcast", buffer.size))


def test_sync_batch_norm_with_a_mirrored_rank_equals_batch_norm_on_the_doubled_batch():
    """Float64 numpy reference: BatchNorm over the batch seen twice; the gradient of the sum of both
    ranks' losses reaches each copy of x once, and weight/bias get this rank's own sums."""
    rng = np.random.default_rng(2)
    x = rng.normal(1e3, 1.0, (5, 3, 4))  # |mean| >> std: the merge must not lose the variance
    dy, weight, bias = rng.normal(size=x.shape), rng.normal(size=3), rng.normal(size=3)
    comm = MirrorComm()
    layer = SyncBatchNorm(3, process_group=comm, momentum=0.5, dtype=tinynorm.float64)
    layer.weight.array[...], layer.bias.array[...] = weight, bias
    xt = tinynorm.tensor(x, requires_grad=True)
    y = layer(xt)
    y.backward(tinynorm.tensor(dy))

    both, dy_both = np.concatenate([x, x]), np.concatenate([dy, dy])
    mean, var = both.mean(axis=(0, 2), keepdims=True), both.var(axis=(0, 2), keepdims=True)
    xhat = (both - mean) / np.sqrt(var + 1e-5)
    dxhat = dy_both * weight[:, None]
    dx = (dxhat - dxhat.mean(axis=(0, 2), keepdims=True)
          - xhat * (dxhat * xhat).mean(axis=(0, 2), keepdims=True)) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(y.numpy(), (xhat * weight[:, None] + bias[:, None])[:5], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(xt.grad.numpy(), dx[:5], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(layer.weight.grad.numpy(), (dy * xhat[:5]).sum(axis=(0, 2)), rtol=1e-9)
    np.testing.assert_allclose(layer.bias.grad.numpy(), dy.sum(axis=(0, 2)), rtol=1e-12)
    count = both.size // 3
    np.testing.assert_allclose(layer.running_var.numpy(), 0.5 + 0.5 * var.ravel() * count / (count - 1), rtol=1e-9)
    np.testing.assert_allclose(layer.running_mean.numpy(), 0.5 * mean.ravel(), rtol=1e-12)
    # One small message each way: 2 C + 1 numbers forward, 2 C backward.
    assert comm.messages == [("Allgather", 7), ("Allreduce", 6)]


def test_allreduce_gradients_sends_one_message_per_bucket_and_averages():
    params = [nn.Parameter(tinynorm.randn(n)) for n in (300, 200, 600, 10)]
    params.append(nn.Parameter(tinynorm.randn(5, dtype=tinynorm.float64)))
    params.append(nn.Parameter(tinynorm.randn(7)))  # no gradient on any rank
    frozen = nn.Parameter(tinynorm.randn(4), requires_grad=False)
    grads = [np.random.default_rng(i).normal(size=p.shape).astype(p.dtype) for i, p in enumerate(params[:-1])]
    for param, grad in zip(params, grads):
        param.grad = tinynorm.tensor(grad.copy())
    comm = MirrorComm()
    distributed.allreduce_gradients(params + [frozen], comm=comm, bucket_size_mb=2000 / 2**20)  # 2000 bytes
    # float32: [300 + 200] = 2000 bytes, then [600] alone (bigger than a bucket), then [10, 7]; float64: [5].
    # Each bucket carries one "has a gradient" count per parameter.
    assert comm.messages == [("Allreduce", 502), ("Allreduce", 601), ("Allreduce", 19), ("Allreduce", 6)]
    for param, grad in zip(params, grads):
        np.testing.assert_array_equal(param.grad.numpy(), grad)  # the mirror's average is the gradient
        assert param.grad.dtype == param.dtype
    assert params[-1].grad is None and frozen.grad is None


def test_ddp_broadcasts_at_construction_and_wraps_forward():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    comm = MirrorComm()
    ddp = distributed.DistributedDataParallel(model, comm=comm)
    # parameters (4 float32 tensors) and buffers (2 float32 + the int64 batch counter): two buckets.
    assert comm.messages == [("Bcast", 12 + 4 + 4 + 4 + 4 + 4), ("Bcast", 1)]
    x = tinynorm.randn(5, 3)
    np.testing.assert_array_equal(ddp(x).numpy(), model(x).numpy())
    assert list(ddp.state_dict()) == ["module." + key for key in model.state_dict()]


def test_ddp_in_a_world_of_one_is_the_module():
    tinynorm.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    ddp = distributed.DistributedDataParallel(model)
    x = tinynorm.randn(6, 3)
    loss = (ddp(x) * tinynorm.randn(6, 4)).sum()
    loss.backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    ddp.allreduce_gradients()
    for param, grad in zip(model.parameters(), grads):
        np.testing.assert_array_equal(param.grad.numpy(), grad)
    assert not np.array_equal(model[1].running_mean.numpy(), before["1.running_mean"])  # forward did run


# ---------------------------------------------------------------------------- conversion
def test_convert_sync_batchnorm_swaps_every_batch_norm_and_keeps_its_state():
    inner = nn.BatchNorm2d(2, eps=1e-3, momentum=None)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=0.2), nn.Sequential(inner), nn.ReLU())
    model[1](model[0](tinynorm.randn(8, 3)))
    inner(tinynorm.randn(4, 2, 3, 3))
    model[1].freeze()
    model.eval()
    originals = [model[1], inner]
    x = tinynorm.randn(5, 3)
    before = model[1](model[0](x)).numpy()

    converted = SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model
    for old, new in zip(originals, (model[1], model[2][0])):
        assert type(new) is SyncBatchNorm and new is not old
        for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
            assert getattr(new, name) is getattr(old, name)
        assert (new.eps, new.momentum, new.frozen, new.training) == (old.eps, old.momentum, old.frozen, False)
    assert model[2][0].momentum is None and model[1].frozen and int(model[2][0].num_batches_tracked.item()) == 1
    np.testing.assert_array_equal(model[1](model[0](x)).numpy(), before)
    root = SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(3, affine=False), process_group=MirrorComm())
    assert type(root) is SyncBatchNorm and root.weight is None and isinstance(root.process_group, MirrorComm)
    assert SyncBatchNorm.convert_sync_batchnorm(root) is root  # already synchronized


def test_sync_batch_norm_rejects_bad_input_clearly():
    layer = SyncBatchNorm(3)
    with pytest.raises(ValueError, match=r"\(N, C\).*got shape \(3,\)"):
        layer(tinynorm.randn(3))
    with pytest.raises(ValueError, match=r"expected running_mean of shape \(2,\).*got \(3,\)"):
        layer(tinynorm.randn(4, 2))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        layer(tinynorm.randn(1, 3))


def test_sync_batch_norm_needs_more_than_one_value_over_all_ranks():
    layer = SyncBatchNorm(3, process_group=MirrorComm())
    layer(tinynorm.randn(1, 3))  # one sample here and one on the mirror: two in all
    with pytest.raises(ValueError, match="got 0 over 2 processes"):
        layer(tinynorm.randn(0, 3))


# ------------------------------------------------------------------------------ sampler
@pytest.mark.parametrize("n", [0, 1, 5, 10, 12])
@pytest.mark.parametrize("world", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sampler_without_shuffle_matches_pytorch(n, world, drop_last):
    torch = pytest.importorskip("torch")
    for rank in range(world):
        ours = distributed.DistributedSampler(n, world, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.DistributedSampler(range(n), world, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)


@pytest.mark.parametrize("n, world", [(10, 3), (3, 8), (12, 4)])
def test_sampler_shuffles_the_same_way_on_every_rank_and_pads_like_pytorch(n, world):
    shards = [distributed.DistributedSampler(n, world, r, seed=3).indices() for r in range(world)]
    per_rank = -(-n // world)
    assert all(len(s) == per_rank for s in shards)
    order = np.stack(shards, axis=1).ravel()  # undo the round-robin deal
    assert sorted(order[:n].tolist()) == list(range(n))  # a permutation of the samples ...
    np.testing.assert_array_equal(order[n:], np.resize(order[:n], per_rank * world)[n:])  # ... padded by its start


def test_sampler_set_epoch_reshuffles_deterministically():
    def indices(epoch, seed=0):
        sampler = distributed.DistributedSampler(50, num_replicas=2, rank=1, seed=seed)
        sampler.set_epoch(epoch)
        return list(sampler)

    assert indices(1) == indices(1)
    assert indices(1) != indices(2)
    assert indices(1) != indices(1, seed=1)


def test_sampler_without_padding_deals_every_sample_once():
    shards = [distributed.DistributedSampler(10, 4, r, pad=False).indices() for r in range(4)]
    assert [len(s) for s in shards] == [3, 3, 2, 2]
    assert sorted(np.concatenate(shards).tolist()) == list(range(10))


def test_sampler_rejects_a_bad_rank():
    with pytest.raises(ValueError, match=r"invalid rank 3, rank should be in \[0, 2\]"):
        distributed.DistributedSampler(10, num_replicas=3, rank=3)
    with pytest.raises(ValueError, match="num_replicas must be a positive int, got 0"):
        distributed.DistributedSampler(10, num_replicas=0, rank=0)


# ----------------------------------------------------------------------------- no mpi4py
def test_without_mpi4py_tinynorm_imports_and_mpi_features_say_how_to_install():
    code = """
import sys
sys.modules["mpi4py"] = None  # as if mpi4py were not installed
import tinynorm
from tinynorm import distributed
from tinynorm.nn.sync_batch_norm import SyncBatchNorm
tinynorm.nn.BatchNorm1d(3)
for attempt in (distributed.init, lambda: SyncBatchNorm(3), distributed.get_world_size):
    try:
        attempt()
    except ImportError as error:
        assert 'pip install "tinynorm[mpi]"' in str(error), error
    else:
        raise AssertionError("no ImportError")
print("CLEAR_IMPORT_ERROR")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "CLEAR_IMPORT_ERROR" in done.stdout
