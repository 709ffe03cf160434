"""Data-parallel training on tiny per-process batches: plain BatchNorm versus SyncBatchNorm.

Run:  mpiexec -n 2 python examples/ddp_syncbn.py [--batch-per-rank 2] [--epochs 2]

Each process trains the same MLP on its own shard of the digits, two samples per step. With plain
BatchNorm every process normalizes with the statistics of its own two samples: noisy in training
(with two samples each feature becomes exactly +-1 after centring and scaling) and a poor estimate of
the running statistics used at test time. SyncBatchNorm normalizes with the statistics of the global
batch (all processes' samples), as one process training on the whole batch would.
"""
import argparse
import time

import numpy as np

import tinynorm
from tinynorm import distributed as dist
from tinynorm.data import load_digits
from tinynorm.models import SmallMLP
from tinynorm.nn.functional import cross_entropy
from tinynorm.nn.sync_batch_norm import SyncBatchNorm
from tinynorm.optim import SGD

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--batch-per-rank", type=int, default=2, help="samples per process and step")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--lr", type=float, default=0.02)
args = parser.parse_args()

dist.init()
rank, world = dist.get_rank(), dist.get_world_size()
X_train, y_train, X_test, y_test = load_digits()


def train_and_test(sync: bool) -> float:
    tinynorm.manual_seed(0)
    model = SmallMLP(norm="batchnorm")
    if sync:
        model = SyncBatchNorm.convert_sync_batchnorm(model)
    ddp = dist.DistributedDataParallel(model)  # every rank starts from rank 0's weights
    optimizer = SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    # drop_last: equal shards, hence the same number of steps on every rank; each rank's loss is the
    # mean over its samples, so the averaged gradient is that of the mean over the global batch.
    sampler = dist.DistributedSampler(len(X_train), seed=0, drop_last=True)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        shard = sampler.indices()
        ddp.train()
        for start in range(0, len(shard) - args.batch_per_rank + 1, args.batch_per_rank):
            batch = shard[start:start + args.batch_per_rank]
            loss = cross_entropy(ddp(tinynorm.tensor(X_train[batch])), tinynorm.tensor(y_train[batch]))
            optimizer.zero_grad()
            loss.backward()
            ddp.allreduce_gradients()
            optimizer.step()
    ddp.eval()
    with tinynorm.no_grad():  # every rank holds the same model: rank 0 alone could evaluate
        predictions = ddp(tinynorm.tensor(X_test)).numpy().argmax(axis=1)
    return float(np.mean(predictions == y_test))


batch = args.batch_per_rank
if rank == 0:
    print(f"{world} processes x {batch} samples per step (global batch {world * batch}), {args.epochs} epochs")
for sync, label in ((False, f"BatchNorm (per-process statistics of {batch} samples)"),
                    (True, f"SyncBatchNorm (statistics of all {world * batch} samples)")):
    start = time.perf_counter()
    accuracy = train_and_test(sync)
    if rank == 0:
        print(f"  {label}: test accuracy {accuracy:.3f} ({time.perf_counter() - start:.1f} s)")
