"""Feeding data beyond a map-style Dataset: an IterableDataset streaming records, DataLoader with
drop_last, batch_size=None, an explicit sampler (SequentialSampler, SubsetRandomSampler with a
generator, WeightedRandomSampler) and a batch_sampler, default_collate of tuples, dicts, numbers and
arrays, ConcatDataset, and len() of loaders."""
import numpy as np
import torch
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, IterableDataset, SequentialSampler,
                              SubsetRandomSampler, TensorDataset, WeightedRandomSampler, default_collate)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield np.full(3, i, dtype=np.float32), i % 2


stream = DataLoader(Stream(7), batch_size=3)
for features, labels in stream:
    print(features.shape, features.dtype, labels)
print([len(labels) for _, labels in DataLoader(Stream(7), batch_size=3, drop_last=True)])

xs = torch.arange(20.0).reshape(10, 2)
ys = torch.arange(10)
dataset = TensorDataset(xs, ys)
loader = DataLoader(dataset, batch_size=4, drop_last=True)
print(len(loader), len(DataLoader(dataset, batch_size=4)), [y.tolist() for _, y in loader])
print([y.item() for _, y in DataLoader(dataset, batch_size=None, sampler=SequentialSampler(range(3)))])
batches = BatchSampler(SequentialSampler(dataset), batch_size=3, drop_last=False)
print([y.tolist() for _, y in DataLoader(dataset, batch_sampler=batches)])

g = torch.Generator().manual_seed(0)
subset = SubsetRandomSampler([1, 3, 5, 7], generator=g)
picked = [y.tolist() for _, y in DataLoader(dataset, batch_size=2, sampler=subset)]
print(sorted(sum(picked, [])), [len(batch) for batch in picked])
weighted = WeightedRandomSampler([0.0, 0.0, 1.0, 3.0], num_samples=400, replacement=True)
counts = np.bincount(list(weighted), minlength=4)
print(len(weighted), counts[:2].tolist(), 250 < counts[3] < 350)

samples = [(1, 0.5, np.ones(2, dtype=np.float32), {'id': 3}), (2, 1.5, np.zeros(2, dtype=np.float32), {'id': 4})]
batch = default_collate(samples)
print(batch[0], batch[0].dtype, batch[1], batch[1].dtype, batch[2], batch[3])
both = ConcatDataset([dataset, TensorDataset(xs[:3] * -1, ys[:3] + 100)])
print(len(both), both[11][1].item(), both[12][0])
