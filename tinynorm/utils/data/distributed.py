"""``DistributedSampler``: each rank's share of the dataset for data-parallel training."""
from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...random import Generator
from ...sampling import randperm

__all__ = ["DistributedSampler"]


class DistributedSampler:
    """Which sample indices this rank reads each epoch, as ``torch.utils.data.DistributedSampler``.

    Each epoch the indices ``0 .. len(dataset) - 1`` are shuffled with ``seed + epoch`` (the same order
    on every rank; call :meth:`set_epoch` at each epoch's start) and dealt round-robin: rank ``r``
    gets positions ``r, r + world, r + 2 * world, ...``. With ``drop_last=False`` the list is padded
    by repeating its start until it divides evenly, so every rank gets ``ceil(n / world)`` indices
    (a few samples count twice); ``drop_last=True`` drops the tail instead. ``pad=False`` (not in
    PyTorch) neither pads nor drops: every sample once, shard sizes differ by at most one; the ranks
    must then still run the same number of steps (e.g. split each global batch, see docs).

    ``dataset`` is anything with ``len()``, or the number of samples. ``num_replicas`` and ``rank``
    default to the MPI world's (:mod:`tinynorm.distributed`). The shuffle is ``randperm`` with a
    :class:`tinynorm.Generator` seeded ``seed + epoch``, so the order differs from PyTorch's for the
    same seed; without shuffling the indices are identical.
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False, pad: bool = True) -> None:
        n_samples = dataset if isinstance(dataset, (int, np.integer)) else len(dataset)
        if n_samples < 0:
            raise ValueError(f"DistributedSampler: the number of samples must be >= 0, got {n_samples}")
        if num_replicas is None or rank is None:
            from ... import distributed  # MPI, only when the world is asked for
            num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
            rank = distributed.get_rank() if rank is None else rank
        if not isinstance(num_replicas, (int, np.integer)) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be a positive int, got {num_replicas!r}")
        if not isinstance(rank, (int, np.integer)) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: invalid rank {rank!r}, rank should be in [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.n_samples, self.num_replicas, self.rank = int(n_samples), int(num_replicas), int(rank)
        self.shuffle, self.seed, self.drop_last, self.pad = shuffle, seed, drop_last, pad
        self.epoch = 0
        if not pad:
            self.total_size = self.n_samples
        elif drop_last:
            self.total_size = self.n_samples // self.num_replicas * self.num_replicas
        else:
            self.total_size = math.ceil(self.n_samples / self.num_replicas) * self.num_replicas
        self.num_samples = len(range(self.rank, self.total_size, self.num_replicas))

    def set_epoch(self, epoch: int) -> None:
        """Use a new shuffle for ``epoch`` (the same on every rank)."""
        self.epoch = epoch

    def indices(self) -> np.ndarray:
        """This rank's sample indices for the current epoch."""
        if self.shuffle:
            order = randperm(self.n_samples, generator=Generator().manual_seed(self.seed + self.epoch)).numpy()
        else:
            order = np.arange(self.n_samples)
        if self.total_size > len(order) and len(order):
            order = np.resize(order, self.total_size)  # repeats the start: PyTorch's padding
        return order[: self.total_size][self.rank::self.num_replicas]

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices().tolist())

    def __len__(self) -> int:
        return self.num_samples
