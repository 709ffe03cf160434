"""DDP training with SyncBatchNorm over W ranks == single-process training on the whole batch
(run by run_checks.py).

Checks: DistributedDataParallel broadcasts rank 0's parameters and buffers; three SGD steps on a
Linear-SyncBatchNorm-ReLU-Linear model (each rank's loss is its share of the global mean, tiny buckets
so that several messages go out) leave every rank with the parameters and running statistics of
single-process training; the same training with plain BatchNorm does not (per-rank statistics);
gradient averaging of parameters that only some ranks, or no rank, gave a gradient; the sampler's
shards cover the data set.
"""
import numpy as np

import _harness as h
import tinynorm
from tinynorm import distributed, nn, optim
from tinynorm.nn.sync_batch_norm import SyncBatchNorm
from tinynorm.ops.losses import cross_entropy

FEATURES, HIDDEN, CLASSES, STEPS = 6, 8, 3, 3


def make_model(norm, seed):
    tinynorm.manual_seed(seed)
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), norm(HIDDEN, momentum=0.5), nn.ReLU(),
                          nn.Linear(HIDDEN, CLASSES))
    model[1].running_mean.array[...] = seed  # a buffer that differs per rank until broadcast
    return model


def data(sizes):
    rng = np.random.default_rng(3)  # the same global batches on every rank
    batches = []
    for _ in range(STEPS):
        x = rng.normal(1.0, 2.0, (sum(sizes), FEATURES)).astype(np.float32)
        batches.append((x, rng.integers(0, CLASSES, sum(sizes))))
    return batches


def train(model, batches, rows, share):
    """SGD steps on ``x[rows]``; the loss is ``share * sum of the per-sample losses``."""
    optimizer = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    for x, y in batches:
        optimizer.zero_grad()
        loss = cross_entropy(model(tinynorm.tensor(x[rows])), tinynorm.tensor(y[rows]), reduction="sum") * share
        loss.backward()
        if isinstance(model, distributed.DistributedDataParallel):
            model.allreduce_gradients()
        optimizer.step()


def state(model):
    module = getattr(model, "module", model)
    return {k: v.numpy().copy() for k, v in module.state_dict().items()}


def check_training(sizes, norm, must_match):
    batches, total = data(sizes), sum(sizes)
    model = distributed.DistributedDataParallel(make_model(norm, seed=h.rank), bucket_size_mb=1e-4)
    initial = h.comm.gather(state(model), root=0)
    train(model, batches, h.local_slice(sizes), share=h.world / total)
    final = h.comm.gather(state(model), root=0)
    if h.rank != 0:
        return
    name = norm.__name__
    for r in range(h.world):
        for key, value in initial[0].items():
            h.check(f"{name}: broadcast {key} (rank {r})", initial[r][key], value, 0, 0)
    reference = make_model(nn.BatchNorm1d, seed=0)
    train(reference, batches, slice(None), share=1 / total)
    for r in range(h.world):
        if must_match:
            for key, value in state(reference).items():
                h.check(f"{name}: {key} after {STEPS} steps (rank {r})", final[r][key], value, 2e-4, 2e-5)
        else:
            error = max(np.abs(final[r][k] - v).max() for k, v in state(reference).items())
            h.expect(f"{name}: DDP with per-rank statistics should differ from full-batch training (rank {r})",
                     error > 1e-3)


def check_partial_gradients():
    """A gradient only rank 0 has is averaged over all ranks; one that no rank has stays None."""
    some, none = nn.Parameter(tinynorm.zeros(3)), nn.Parameter(tinynorm.zeros(2))
    if h.rank == 0:
        some.grad = tinynorm.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    distributed.allreduce_gradients([some, none])
    results = h.comm.gather((some.grad.numpy() if some.grad is not None else None, none.grad), root=0)
    if h.rank == 0:
        for r, (some_grad, none_grad) in enumerate(results):
            h.expect(f"rank {r}: a gradient from rank 0 only must reach every rank", some_grad is not None)
            if some_grad is not None:
                h.check(f"rank {r}: partial gradient average", some_grad, np.array([1, 2, 3]) / h.world, 1e-6, 0)
            h.expect(f"rank {r}: a parameter with no gradient anywhere keeps grad None", none_grad is None)


def check_sampler(n=11):
    sampler = distributed.DistributedSampler(n, seed=5)
    sampler.set_epoch(2)
    shards = h.comm.gather(sampler.indices(), root=0)
    if h.rank == 0:
        everything = np.concatenate(shards)
        h.expect("sampler: every shard has ceil(n / world) indices", {len(s) for s in shards} == {-(-n // h.world)})
        h.expect("sampler: the shards cover every sample", set(everything.tolist()) == set(range(n)))


def run(sizes):
    check_training(sizes, SyncBatchNorm, must_match=True)
    if min(sizes) > 1:  # plain BatchNorm cannot train on a shard of 0 or 1 samples
        check_training(sizes, nn.BatchNorm1d, must_match=False)
    check_partial_gradients()
    check_sampler()
