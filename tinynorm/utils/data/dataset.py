"""Datasets as ``torch.utils.data`` defines them: a map-style ``Dataset`` is indexed (``dataset[i]``) and
usually has a length; an ``IterableDataset`` is iterated. ``TensorDataset``, ``Subset``,
``ConcatDataset``, ``ChainDataset`` and ``random_split`` build datasets from others."""
from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ...random import Generator
from ...sampling import randperm
from ...tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "random_split"]


class Dataset:
    """A map from keys (usually ``0 .. len - 1``) to samples: subclasses define ``__getitem__`` and,
    for the default samplers, ``__len__``. ``a + b`` concatenates two datasets."""

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__ (a subclass of Dataset)")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__``. ``a + b`` chains two streams.

    With ``DataLoader(num_workers=n)`` every worker iterates its own copy of the dataset, so each
    sample comes ``n`` times unless ``__iter__`` uses :func:`get_worker_info` to take its share.
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__ (a subclass of IterableDataset)")

    def __add__(self, other: Dataset) -> "ChainDataset":  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples ``(t[i] for t in tensors)``: the i-th row of each tensor, which share their first dimension."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset: expected at least one tensor")
        for i, tensor in enumerate(tensors):
            if not isinstance(tensor, Tensor):
                raise TypeError(f"TensorDataset: tensors[{i}] must be a Tensor, got {type(tensor).__name__}")
            if tensor.ndim == 0 or tensor.shape[0] != tensors[0].shape[0]:
                raise ValueError("TensorDataset: size mismatch between tensors: their first dimensions are "
                                 f"{[tuple(t.shape)[:1] for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list[int]) -> list[Any]:
        """A batch at once, through the dataset's own ``__getitems__`` when it has one (DataLoader uses it)."""
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other: index ``i`` runs through the first, then the next."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset; use ChainDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(dataset) for dataset in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise ValueError(f"ConcatDataset: absolute value of index should not exceed dataset length, got "
                                 f"{index} for length {len(self)}")
            index += len(self)
        if index >= len(self):
            raise IndexError(f"ConcatDataset: index {index} is out of range for length {len(self)}")
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after the other."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got {type(dataset).__name__}")
            yield from dataset

    def __len__(self) -> int:
        return sum(len(dataset) for dataset in self.datasets)  # type: ignore[arg-type]


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: Generator | None = None) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets of the given ``lengths``.

    ``lengths`` are sizes summing to ``len(dataset)``, or fractions summing to 1: each split then gets
    ``floor(len * fraction)`` samples, and the remainder is dealt one by one from the first split on,
    as in PyTorch. The permutation comes from ``generator`` (the global generator by default).
    """
    lengths = list(lengths)
    total = len(dataset)  # type: ignore[arg-type]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and 1: {fraction}")
            sizes.append(int(math.floor(total * fraction)))
        for i in range(total - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = sizes
    if any(isinstance(n, float) for n in lengths) or any(n < 0 for n in lengths):
        raise ValueError(f"random_split: lengths must be non-negative ints or fractions summing to 1, got {lengths}")
    if sum(lengths) != total:
        raise ValueError(f"random_split: sum of input lengths ({sum(lengths)}) does not equal the length of the "
                         f"input dataset ({total})")
    order = randperm(total, generator=generator).tolist()
    return [Subset(dataset, order[end - n:end]) for end, n in zip(itertools.accumulate(lengths), lengths)]
