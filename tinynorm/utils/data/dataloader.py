"""``DataLoader``: batches from a dataset, as ``torch.utils.data.DataLoader`` makes them.

A sampler chooses the indices (in order, shuffled with ``generator``, or your own ``sampler`` /
``batch_sampler``), a ``BatchSampler`` groups them by ``batch_size`` (the short last batch dropped with
``drop_last``), and ``collate_fn`` (``default_collate``) turns each list of samples into a batch.
``num_workers=0`` loads in the calling process; ``num_workers > 0`` loads in that many worker
processes (:mod:`.worker`), giving the same batches in the same order.
"""
from __future__ import annotations

import math
import multiprocessing
from collections.abc import Callable, Iterator
from typing import Any

from ...random import Generator, numpy_generator
from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .fetch import FetchSetup
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .worker import MultiProcessIterator

__all__ = ["DataLoader"]

_FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable dataset: ``None`` forever (the dataset decides when it ends)."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader:
    """Iterate over batches of ``dataset``; PyTorch's arguments, defaults and checks.

    ``pin_memory`` and ``pin_memory_device`` are accepted and have no effect (tinynorm copies batches
    to the GPU with ``.to('cuda')``). With ``num_workers > 0`` the workers are processes started with
    ``multiprocessing_context`` (Python's default start method when None); batches travel to the main
    process pickled through a pipe.
    """

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Any = None, batch_sampler: Sampler | Any = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be a non-negative int, got {num_workers!r}; "
                             "use num_workers=0 to disable multiprocessing")
        if timeout < 0:
            raise ValueError(f"DataLoader: timeout option should be non-negative, got {timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("DataLoader: prefetch_factor option could only be specified in multiprocessing; "
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None")
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise ValueError(f"DataLoader: prefetch_factor must be a positive int, got {prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value!r}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn or (default_collate if batch_sampler is not None else default_convert)
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _context(multiprocessing_context) if num_workers else multiprocessing_context
        self.generator = generator
        self.prefetch_factor = (2 if prefetch_factor is None else prefetch_factor) if num_workers else None
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._iterator: Any = None
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_initialized") and name in _FIXED_AFTER_INIT:
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        """What one step of iteration consumes: a batch of indices, or one index without batching."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def _fetch_setup(self) -> FetchSetup:
        return FetchSetup(self.dataset, isinstance(self.dataset, IterableDataset), self._auto_collation,
                          self.collate_fn, self.drop_last)

    def _base_seed(self) -> int:
        """A seed for this epoch's workers, drawn from ``generator`` (the global one by default) as PyTorch does."""
        return int(numpy_generator(self.generator, "cpu", "DataLoader").integers(0, 2**63))

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return _SingleProcessIterator(self)
        if not self.persistent_workers:
            return MultiProcessIterator(self)
        if self._iterator is None:
            self._iterator = MultiProcessIterator(self)
        else:
            self._iterator.reset()
        return self._iterator

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            length = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _SingleProcessIterator:
    """Batches loaded in the calling process, one per ``next()``."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._indices = iter(loader._index_sampler)
        loader._base_seed()  # drawn as with workers, so the generator advances the same way
        self._fetcher = loader._fetch_setup().fetcher()

    def __iter__(self) -> "_SingleProcessIterator":
        return self

    def __next__(self) -> Any:
        return self._fetcher.fetch(next(self._indices))

    def __len__(self) -> int:
        return len(self._loader)


def _context(context: Any) -> Any:
    """A multiprocessing context: the default one, one named by its start method, or one given."""
    if context is None:
        return multiprocessing.get_context()
    if isinstance(context, str):
        if context not in multiprocessing.get_all_start_methods():
            raise ValueError(f"DataLoader: multiprocessing_context should specify a valid start method in "
                             f"{multiprocessing.get_all_start_methods()!r}, but got {context!r}")
        return multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError(f"DataLoader: multiprocessing_context option should be a valid context object or a string "
                        f"specifying the start method, but got {context!r}")
    return context
