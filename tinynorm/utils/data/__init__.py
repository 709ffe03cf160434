"""Datasets, samplers and ``DataLoader``, with ``torch.utils.data``'s names and semantics.

    from tinynorm.utils.data import DataLoader, TensorDataset, random_split

    train, test = random_split(TensorDataset(x, y), [0.8, 0.2], generator=tinynorm.Generator().manual_seed(0))
    for inputs, targets in DataLoader(train, batch_size=32, shuffle=True):
        ...

(The bundled data sets and feature scaling are in :mod:`tinynorm.data`.)
"""
from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler,
)
from .worker import WorkerInfo, get_worker_info

__all__ = [
    "DataLoader", "Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset",
    "random_split", "default_collate", "default_convert", "Sampler", "SequentialSampler", "RandomSampler",
    "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "WorkerInfo",
    "get_worker_info",
]
