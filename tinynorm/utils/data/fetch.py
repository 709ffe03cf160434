"""Turning sampled indices into a batch: the one step the main process and the worker processes share."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .dataset import Dataset


class MapFetcher:
    """A batch from a map-style dataset: ``collate_fn([dataset[i] for i in indices])`` (through the
    dataset's ``__getitems__`` when it has one), or ``collate_fn(dataset[index])`` without batching."""

    def __init__(self, dataset: Dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        return self.collate_fn(samples)


class IterableFetcher:
    """The next batch of an iterable dataset: up to ``len(index)`` samples, ``StopIteration`` once the
    stream is exhausted (or when only a short last batch is left and ``drop_last`` is set)."""

    def __init__(self, dataset: Dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.samples: Iterator[Any] = iter(dataset)  # type: ignore[call-overload]
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.samples))
        batch = []
        for _ in index:
            try:
                batch.append(next(self.samples))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.drop_last and len(batch) < len(index)):
            raise StopIteration
        return self.collate_fn(batch)


@dataclass(frozen=True)
class FetchSetup:
    """How a loader turns indices into batches; picklable, so a worker process can be given it."""

    dataset: Dataset
    iterable: bool
    auto_collation: bool
    collate_fn: Callable
    drop_last: bool

    def fetcher(self) -> MapFetcher | IterableFetcher:
        """A new fetcher (for an iterable dataset: a new pass over it)."""
        kind = IterableFetcher if self.iterable else MapFetcher
        return kind(self.dataset, self.auto_collation, self.collate_fn, self.drop_last)
