"""tinynorm.utils.data: datasets, samplers, default_collate and DataLoader, against torch.utils.data.

Without shuffling, batches and their collation equal PyTorch's. Shuffled orders cannot equal PyTorch's
(its generator is not numpy's PCG64), so their semantics are tested: each sample once per epoch,
reproducible with a seed, new each epoch.
"""
import gc
import os
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import tinynorm as tn
from tinynorm import distributed
from tinynorm.utils import data
from tinynorm.utils.data import (
    BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler,
    SequentialSampler, Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler, default_collate,
    default_convert, get_worker_info, random_split,
)

Point = namedtuple("Point", ["x", "label"])


def plain(value):
    """A batch from either library as plain Python/numpy values, keeping container types and dtypes."""
    if isinstance(value, tn.Tensor):
        return ("tensor", str(value.dtype), value.numpy().tolist())
    if type(value).__module__.startswith("torch") and hasattr(value, "numpy"):
        return ("tensor", str(value.dtype).replace("torch.", ""), value.numpy().tolist())
    if isinstance(value, dict):
        return (type(value).__name__, {key: plain(item) for key, item in value.items()})
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__, [plain(item) for item in value])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(item) for item in value])
    return value


def samples():
    """Map-style samples of every structure default_collate handles (the same objects feed both libraries)."""
    rng = np.random.default_rng(0)
    return {
        "tuples": [(rng.standard_normal(3).astype(np.float32), i, float(i) / 2) for i in range(7)],
        "dicts": [{"image": rng.standard_normal((2, 2)), "name": f"s{i}", "meta": {"id": np.int32(i), "ok": i % 2 == 0}}
                  for i in range(5)],
        "namedtuples": [Point(np.arange(2, dtype=np.int16) + i, np.float32(i)) for i in range(4)],
        "lists": [[i, [i + 0.5, np.float64(i)]] for i in range(6)],
        "ordered": [OrderedDict([("b", i), ("a", np.bool_(i > 1))]) for i in range(3)],
        "strings": [f"word{i}" for i in range(5)],
        "bytes": [bytes([i]) for i in range(3)],
    }


# ------------------------------------------------------------------------ collation
@pytest.mark.parametrize("kind", sorted(samples()))
@pytest.mark.parametrize("batch_size, drop_last", [(1, False), (2, False), (3, True), (None, False)])
def test_unshuffled_batches_equal_pytorchs(kind, batch_size, drop_last):
    torch = pytest.importorskip("torch")
    dataset = samples()[kind]
    ours = [plain(batch) for batch in DataLoader(dataset, batch_size=batch_size, drop_last=drop_last)]
    theirs = [plain(batch) for batch in torch.utils.data.DataLoader(dataset, batch_size=batch_size,
                                                                     drop_last=drop_last)]
    assert ours == theirs
    assert len(DataLoader(dataset, batch_size=batch_size, drop_last=drop_last)) == len(ours)


def test_tensor_datasets_batch_as_pytorchs():
    torch = pytest.importorskip("torch")
    x, y = np.arange(30, dtype=np.float32).reshape(10, 3), np.arange(10)
    ours = DataLoader(TensorDataset(tn.tensor(x), tn.tensor(y)), batch_size=4)
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=4)
    assert [plain(batch) for batch in ours] == [plain(batch) for batch in theirs]
    dataset = TensorDataset(tn.tensor(x), tn.tensor(y))
    assert len(dataset) == 10 and plain(dataset[2]) == plain(torch.utils.data.TensorDataset(
        torch.tensor(x), torch.tensor(y))[2])


@pytest.mark.parametrize("batch", [
    [1.5, 2.0], [1, 2, 3], [True, False], [np.float32(1), np.float32(2)], [np.int8(3), np.int8(4)],
    [np.bool_(True), np.bool_(False)], [np.zeros((2, 3), np.float16), np.ones((2, 3), np.float16)],
    ["a", "b"], [(1, 2.0), (3, 4.0)], [{"a": 1, "b": [np.ones(2), np.zeros(2)]}] * 2,
])
def test_default_collate_equals_pytorchs(batch):
    torch = pytest.importorskip("torch")
    assert plain(default_collate(batch)) == plain(torch.utils.data.default_collate(batch))


@pytest.mark.parametrize("sample", [np.ones(3), np.float64(2.5), (np.int32(1), "s", [np.zeros(2)]),
                                    {"k": np.arange(2)}, Point(np.ones(1), 3), np.array(["text"])])
def test_default_convert_equals_pytorchs(sample):
    torch = pytest.importorskip("torch")
    assert plain(default_convert(sample)) == plain(torch.utils.data.default_convert(sample))


def test_default_collate_refuses_what_it_cannot_batch():
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers, dicts or lists; found"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(ValueError, match="same shape"):
        default_collate([tn.zeros(2), tn.zeros(3)])


def test_collated_tensors_keep_the_autograd_graph():
    leaf = tn.ones(2, requires_grad=True)
    batch = default_collate([leaf * 2, leaf * 3])
    batch.backward(tn.tensor([[1.0, 1.0], [1.0, 1.0]]))
    assert leaf.grad.numpy().tolist() == [5.0, 5.0]


# ------------------------------------------------------------------------ shuffling
def epochs(loader, count=2):
    return [[index for batch in loader for index in batch.tolist()] for _ in range(count)]


def test_shuffled_epochs_visit_every_sample_once_reproducibly_and_differently():
    dataset = tn.arange(50)
    first, second = epochs(DataLoader(dataset, batch_size=8, shuffle=True, generator=tn.Generator().manual_seed(3)))
    assert sorted(first) == sorted(second) == list(range(50))
    assert first != second and first != list(range(50))
    again = epochs(DataLoader(dataset, batch_size=8, shuffle=True, generator=tn.Generator().manual_seed(3)))
    assert again == [first, second]
    other = epochs(DataLoader(dataset, batch_size=8, shuffle=True, generator=tn.Generator().manual_seed(4)))
    assert other[0] != first
    tn.manual_seed(5)  # without a generator: the global one decides
    global_epochs = epochs(DataLoader(dataset, batch_size=8, shuffle=True))
    tn.manual_seed(5)
    assert epochs(DataLoader(dataset, batch_size=8, shuffle=True)) == global_epochs


def test_drop_last_and_lengths_with_shuffling():
    loader = DataLoader(tn.arange(10), batch_size=4, shuffle=True, drop_last=True)
    batches = list(loader)
    assert len(loader) == 2 and [len(batch) for batch in batches] == [4, 4]
    assert len(set(tn.cat(batches).tolist())) == 8
    assert [len(batch) for batch in DataLoader(tn.arange(10), batch_size=4, shuffle=True)] == [4, 4, 2]


def test_samplers_and_batch_samplers_drive_the_loader():
    dataset = [10 * i for i in range(10)]
    assert [b.tolist() for b in DataLoader(dataset, batch_size=3, sampler=[9, 8, 7, 0])] == [[90, 80, 70], [0]]
    batches = DataLoader(dataset, batch_sampler=[[1, 2], [5], [0, 9, 3]])
    assert [b.tolist() for b in batches] == [[10, 20], [50], [0, 90, 30]] and len(batches) == 3
    subset = DataLoader(dataset, batch_size=None, sampler=SubsetRandomSampler([2, 4, 6]))
    assert sorted(subset) == [20, 40, 60]  # no batching: samples as they are (default_convert)
    custom = DataLoader(dataset, batch_size=2, collate_fn=lambda batch: sum(batch))
    assert list(custom) == [10, 50, 90, 130, 170]


def test_sampler_semantics_equal_pytorchs():
    torch = pytest.importorskip("torch")
    for sampler, batch_size, drop_last in ((range(10), 3, False), (range(10), 3, True), (range(9), 3, True),
                                           ([4, 2, 7], 5, False), (range(0), 2, False)):
        ours, theirs = BatchSampler(sampler, batch_size, drop_last), torch.utils.data.BatchSampler(
            sampler, batch_size, drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    assert list(SequentialSampler(range(4))) == list(torch.utils.data.SequentialSampler(range(4)))
    generator = tn.Generator().manual_seed(0)
    replaced = list(RandomSampler(range(5), replacement=True, num_samples=1000, generator=generator))
    assert len(replaced) == 1000 and set(replaced) == set(range(5))
    repeated = list(RandomSampler(range(4), num_samples=10))
    assert len(repeated) == 10 and sorted(repeated[:8]) == [0, 0, 1, 1, 2, 2, 3, 3]  # whole permutations, then part
    weighted = np.array(list(WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=tn.Generator().manual_seed(1))))
    np.testing.assert_allclose(np.bincount(weighted, minlength=3) / 4000, [0, 0.25, 0.75], atol=0.03)
    assert sorted(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False)) == [0, 1, 2]


@pytest.mark.parametrize("make, error, message", [
    (lambda: BatchSampler(range(3), 0, False), ValueError, "batch_size should be a positive integer value"),
    (lambda: BatchSampler(range(3), True, False), ValueError, "batch_size should be a positive integer value"),
    (lambda: BatchSampler(range(3), 2, 1), ValueError, "drop_last should be a boolean value"),
    (lambda: RandomSampler(range(3), replacement=1), TypeError, "replacement should be a boolean value"),
    (lambda: RandomSampler(range(3), num_samples=0), ValueError, "num_samples should be a positive integer value"),
    (lambda: WeightedRandomSampler([[1.0]], 2), ValueError, "weights should be a 1d sequence"),
    (lambda: DataLoader(range(3), batch_size=2, shuffle=True, sampler=[0]), ValueError,
     "mutually exclusive with shuffle"),
    (lambda: DataLoader(range(3), batch_size=2, batch_sampler=[[0]]), ValueError,
     "batch_sampler option is mutually exclusive"),
    (lambda: DataLoader(range(3), batch_size=None, drop_last=True), ValueError, "disables auto-batching"),
    (lambda: DataLoader(range(3), num_workers=-1), ValueError, "num_workers option should be a non-negative int"),
    (lambda: DataLoader(range(3), prefetch_factor=2), ValueError, "prefetch_factor option could only be specified"),
    (lambda: DataLoader(range(3), persistent_workers=True), ValueError, "persistent_workers option needs"),
    (lambda: DataLoader(range(3), timeout=-1), ValueError, "timeout option should be non-negative"),
    (lambda: DataLoader(Stream(3), shuffle=True), ValueError, "IterableDataset: expected unspecified shuffle"),
    (lambda: DataLoader(Stream(3), sampler=[0]), ValueError, "IterableDataset: expected unspecified sampler"),
    (lambda: DataLoader(range(3), num_workers=1, multiprocessing_context="nope"), ValueError, "valid start method"),
    (lambda: DataLoader(range(3), shuffle=True, generator=5).__iter__().__next__(), TypeError,
     "generator must be a tinynorm.Generator"),
])
def test_bad_arguments_raise_pytorchs_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_loader_attributes_are_fixed_after_init():
    loader = DataLoader(range(4), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    loader.num_workers = 0  # not one of PyTorch's fixed attributes
    assert loader.dataset == range(4) and isinstance(loader.batch_sampler, BatchSampler)


# -------------------------------------------------------------------------- datasets
def test_random_split_sizes_equal_pytorchs_and_cover_the_dataset():
    torch = pytest.importorskip("torch")
    for lengths in ([3, 7], [0.5, 0.5], [0.3, 0.3, 0.4], [0.1] * 10, [1.0], [0.25, 0.75], [0, 10]):
        ours = random_split(range(10), lengths, generator=tn.Generator().manual_seed(0))
        theirs = torch.utils.data.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
        assert [len(part) for part in ours] == [len(part) for part in theirs]
        assert sorted(i for part in ours for i in part) == list(range(10))
    first = [list(part) for part in random_split(range(20), [0.8, 0.2], generator=tn.Generator().manual_seed(1))]
    again = [list(part) for part in random_split(range(20), [0.8, 0.2], generator=tn.Generator().manual_seed(1))]
    assert first == again and first[0] != list(range(16))
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(3), [0.9, 0.1])


@pytest.mark.parametrize("lengths, message", [
    ([3, 3], r"sum of input lengths \(6\) does not equal the length of the input dataset \(10\)"),
    ([1.5, -0.5], "fraction at index 0 is not between 0 and 1"),
    ([0.5, 0.3], "lengths must be non-negative ints or fractions summing to 1"),
    ([12, -2], "lengths must be non-negative"),
])
def test_random_split_refuses_bad_lengths(lengths, message):
    with pytest.raises(ValueError, match=message):
        random_split(range(10), lengths)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if not 0 <= index < self.n:
            raise IndexError(index)
        return index * index


class Stream(IterableDataset):
    """0 .. n - 1, each worker taking every num_workers-th value from its id on."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


def test_subset_concat_and_chain():
    subset = Subset(Squares(10), [9, 0, 3])
    assert [subset[i] for i in range(3)] == [81, 0, 9] and len(subset) == 3
    assert subset.__getitems__([0, 2]) == [81, 9]
    both = Squares(3) + Squares(2)
    assert isinstance(both, ConcatDataset) and len(both) == 5 and both.cumulative_sizes == [3, 5]
    assert [both[i] for i in range(5)] == [0, 1, 4, 0, 1] and both[-1] == 1 and both[-5] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        both[-6]
    with pytest.raises(IndexError, match="index 5 is out of range for length 5"):
        both[5]
    with pytest.raises(ValueError, match="should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="does not support IterableDataset"):
        ConcatDataset([Stream(2)])
    chained = Stream(2) + Stream(3)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5
    with pytest.raises(NotImplementedError, match="must implement __getitem__"):
        Dataset()[0]


def test_tensor_dataset_refuses_mismatched_or_non_tensors():
    with pytest.raises(ValueError, match="size mismatch between tensors"):
        TensorDataset(tn.zeros(3), tn.zeros(4))
    with pytest.raises(TypeError, match=r"tensors\[1\] must be a Tensor, got ndarray"):
        TensorDataset(tn.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="at least one tensor"):
        TensorDataset()


def test_iterable_datasets_batch_and_drop_last():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    assert len(DataLoader(Stream(7), batch_size=3)) == 3
    assert len(DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2


def test_distributed_sampler_lives_in_utils_data_and_feeds_a_loader():
    assert distributed.DistributedSampler is data.DistributedSampler
    sampler = data.DistributedSampler(Squares(10), num_replicas=3, rank=1, shuffle=False)
    assert sampler.num_samples == 4 and len(sampler) == 4
    assert [b.tolist() for b in DataLoader(Squares(10), batch_size=2, sampler=sampler)] == [[1, 16], [49, 0]]


# --------------------------------------------------------------------------- workers
class Failing(Squares):
    def __getitem__(self, index):
        if index == 5:
            raise KeyError(f"no sample {index}")
        return super().__getitem__(index)


class Dying(Squares):
    def __getitem__(self, index):
        if get_worker_info() is not None and index == 3:
            os._exit(7)
        return super().__getitem__(index)


class Seeds(Squares):
    def __getitem__(self, index):
        info = get_worker_info()
        return (info.id, info.seed, tn.randint(0, 2**62, (1,)).item(), int(np.random.randint(0, 2**31)))


def test_workers_give_the_batches_of_the_main_process():
    for loader_args in ({"batch_size": 3}, {"batch_size": 4, "drop_last": True}, {"batch_size": None}):
        expected = [plain(b) for b in DataLoader(Squares(10), **loader_args)]
        assert [plain(b) for b in DataLoader(Squares(10), num_workers=2, **loader_args)] == expected
    shuffled = [DataLoader(Squares(12), batch_size=5, shuffle=True, generator=tn.Generator().manual_seed(9),
                           num_workers=workers) for workers in (0, 3)]
    assert epochs(shuffled[0]) == epochs(shuffled[1])  # the same draws from the generator, the same order
    unordered = DataLoader(Squares(9), batch_size=2, num_workers=2, in_order=False, prefetch_factor=1)
    assert sorted(x for batch in unordered for x in batch.tolist()) == [i * i for i in range(9)]


def test_iterable_datasets_in_workers_are_shared_out_with_worker_info():
    batches = [b.tolist() for b in DataLoader(Stream(11), batch_size=3, num_workers=2)]
    assert batches == [[0, 2, 4], [1, 3, 5], [6, 8, 10], [7, 9]]  # PyTorch's interleaving: worker 0, 1, 0, 1


def test_a_worker_exception_is_raised_in_the_main_process_with_its_traceback():
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0") as error:
        list(DataLoader(Failing(8), batch_size=2, num_workers=2))
    assert "no sample 5" in str(error.value) and "\nOriginal Traceback" in str(error.value)
    iterator = iter(DataLoader(Failing(8), batch_size=2, num_workers=2))
    workers = list(iterator._workers)
    with pytest.raises(KeyError):
        list(iterator)
    del iterator, error
    gc.collect()  # the abandoned iterator stops its workers, which exit cleanly (not terminated)
    assert [worker.exitcode for worker in workers] == [0, 0]
    with pytest.raises(ZeroDivisionError, match="in worker_init_fn"):
        list(DataLoader(Squares(4), num_workers=1, worker_init_fn=lambda worker_id: 1 / 0))
    with pytest.raises(RuntimeError, match=r"DataLoader worker\(s\) \d+ \(exit code 7\) exited unexpectedly"):
        list(DataLoader(Dying(6), batch_size=1, num_workers=2))


def test_workers_are_seeded_apart_and_reproducibly():
    def draws():
        loader = DataLoader(Seeds(4), batch_size=None, num_workers=2, generator=tn.Generator().manual_seed(2))
        return list(loader)

    first = draws()
    assert [worker for worker, *_ in first] == [0, 1, 0, 1]
    assert first[0][1] + 1 == first[1][1]  # worker i's seed is base_seed + i
    assert first[0][2] != first[1][2] and first[0][3] != first[1][3]  # tinynorm's and numpy's draws differ
    assert draws() == first


def test_persistent_workers_serve_several_epochs():
    loader = DataLoader(Stream(5), batch_size=2, num_workers=2, persistent_workers=True)
    first, second = [[b.tolist() for b in loader] for _ in range(2)]
    assert first == second == [[0, 2], [1, 3], [4]]
    iterator = loader._iterator
    partial = iter(loader)
    next(partial)  # abandon an epoch halfway: the next one starts afresh with the same workers
    assert [b.tolist() for b in loader] == first and loader._iterator is iterator
    iterator.close()
