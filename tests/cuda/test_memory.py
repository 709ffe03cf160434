"""The caching allocator (tinynorm.backends.cuda.runtime.memory), without a GPU.

The cache is bookkeeping over blocks that a driver function hands out, so a fake driver (blocks at
made-up device addresses) checks it: reuse by size class, the counts PyTorch reports, freeing, and the
retry when the GPU is full. Lifetimes are Python's, as on a GPU: a block must stay lent while any
array viewing its storage is alive, and come back once none is.
"""
from __future__ import annotations

import gc
import weakref

import pytest

pytest.importorskip("numba.cuda")

import numba  # noqa: E402
import numpy as np  # noqa: E402

from tinynorm.backends.cuda.array import CudaArray  # noqa: E402
from tinynorm.backends.cuda.runtime import launch, memory  # noqa: E402

if numba.config.ENABLE_CUDASIM:
    pytest.skip("the caching allocator is not used in the simulator", allow_module_level=True)

MiB = 1 << 20


class FakeDriver:
    """Hands out blocks at increasing fake addresses; can be told to be full."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        self.blocks: list[weakref.ref] = []  # every block handed out; dead once nothing holds it
        self.flushes = 0
        self.next_address = 1 << 32

    def alive(self) -> list[bool]:
        return [ref() is not None for ref in self.blocks]

    def allocate(self, size: int) -> FakeBlock:
        in_use = sum(ref().size for ref in self.blocks if ref() is not None)
        if self.capacity is not None and in_use + size > self.capacity:
            raise memory.OutOfMemoryError(f"fake: no room for {size} bytes")
        block = FakeBlock(self.next_address, size)
        self.next_address += size
        self.blocks.append(weakref.ref(block))
        return block

    def flush(self) -> None:
        self.flushes += 1
        gc.collect()


class FakeBlock:
    """A driver block, freed (by the fake driver's reckoning) when nothing references it any more."""

    def __init__(self, address: int, size: int) -> None:
        self.address = address
        self.size = size


def make_cache(**options) -> tuple[memory.BlockCache, FakeDriver]:
    driver = FakeDriver(options.pop("capacity", None))
    return memory.BlockCache(driver.allocate, driver.flush, **options), driver


@pytest.mark.parametrize("nbytes", [1, 4, 511, 512, 513, 4096 + 3, MiB - 1, MiB, MiB + 1, 3 * MiB + 7,
                                    5 * MiB, 2**31 + 1])
def test_size_classes_fit_the_request_with_bounded_waste(nbytes):
    size = memory.size_class(nbytes)
    assert size >= nbytes
    assert size % memory.ALIGNMENT == 0
    if nbytes <= MiB:
        assert size - nbytes < memory.ALIGNMENT
    else:
        assert (size - nbytes) / nbytes < 0.25


def test_size_classes_are_few_above_one_mib():
    classes = {memory.size_class(n) for n in range(MiB + 1, 2 * MiB + 1, 4096)}
    assert sorted(classes) == [MiB * 5 // 4, MiB * 3 // 2, MiB * 7 // 4, 2 * MiB]


def test_a_given_back_block_serves_the_next_request_of_its_class():
    cache, driver = make_cache()
    block, size = cache.take(1000)
    assert size == 1024 and cache.allocated_bytes == 1024 and cache.reserved_bytes == 1024
    cache.give_back(block, size)
    assert cache.allocated_bytes == 0 and cache.reserved_bytes == 1024
    again, _ = cache.take(600)  # same class (1024)
    assert again is block
    other, other_size = cache.take(2000)  # another class: a new block
    assert other is not block and other_size == 2048
    assert cache.driver_allocations == 2
    assert cache.allocated_bytes == 3072 == cache.reserved_bytes


def test_empty_cache_frees_only_unused_blocks():
    cache, driver = make_cache()
    used, used_size = cache.take(100)
    free, free_size = cache.take(5000)
    cache.give_back(free, free_size)
    del free
    cache.release_free_blocks()
    assert driver.flushes == 1
    assert cache.reserved_bytes == used_size == cache.allocated_bytes
    assert driver.alive() == [True, False]


def test_without_caching_given_back_blocks_are_freed():
    cache, driver = make_cache(keep_free_blocks=False)
    block, size = cache.take(100)
    cache.give_back(block, size)
    del block
    gc.collect()
    assert cache.reserved_bytes == 0 and cache.allocated_bytes == 0
    assert driver.alive() == [False]
    cache.take(100)
    assert cache.driver_allocations == 2


def test_a_full_gpu_releases_the_free_blocks_and_retries():
    cache, driver = make_cache(capacity=4 * MiB)
    block, size = cache.take(3 * MiB)
    cache.give_back(block, size)
    del block
    new, new_size = cache.take(2 * MiB)  # does not fit beside the free 3 MiB block, fits after releasing it
    assert new_size == 2 * MiB and driver.flushes == 1
    assert cache.reserved_bytes == 2 * MiB == cache.allocated_bytes


def test_out_of_memory_names_the_request_and_what_tinynorm_holds():
    cache, _ = make_cache(capacity=2 * MiB)
    held = cache.take(MiB)  # noqa: F841  (an array using it)
    with pytest.raises(memory.OutOfMemoryError, match=r"cannot allocate 2097152 bytes.*use 1048576 bytes"):
        cache.take(2 * MiB)
    assert isinstance(memory.OutOfMemoryError(), RuntimeError)  # as torch.OutOfMemoryError


@pytest.fixture
def cache(monkeypatch):
    """A cache over a fake driver, installed as the process's cache."""
    cache, _ = make_cache()
    monkeypatch.setattr(memory, "block_cache", lambda: cache)
    return cache


def test_a_storage_gives_its_block_back_when_no_array_views_it(cache):
    """Every view of an array references its storage, so the block stays lent while any of them is
    alive, and comes back (to be reused) once none is."""
    array = CudaArray.empty((4, 250), np.float32)
    address = array.storage.address
    row, column, reshaped = array[1], array[:, 3], array.reshape(1000)
    assert row.storage is array.storage and cache.allocated_bytes == 4096
    del array
    gc.collect()
    reused_while_alive = CudaArray.empty(1000, np.float32)
    assert reused_while_alive.storage.address != address
    del row, column, reshaped
    gc.collect()
    assert cache.allocated_bytes == 4096  # only the second block is in use now
    again = CudaArray.empty((10, 100), np.float32)
    assert again.storage.address == address and cache.driver_allocations == 2


def test_storages_keep_the_length_asked_for(cache):
    storage = memory.allocate(250, np.dtype(np.float32))
    assert storage.length == 250 and storage.size == 250 and cache.allocated_bytes == 1024
    assert storage.kernel_parameters == [0, 0, 250, 4, storage.address, 250, 4]
    assert storage.launch_key == (np.dtype(np.float32), 1)


def test_empty_arrays_take_no_block(cache):
    array = CudaArray.empty((0, 5), np.float16)
    assert array.size == 0 and cache.driver_allocations == 0 and array.storage.address == 0


@pytest.mark.parametrize("shape, dtype", [((3, 5), "float32"), ((7,), "int64"), ((2, 1, 4), "float16"),
                                          ((), "float32")])
def test_arrays_carry_numbas_kernel_parameters(cache, shape, dtype):
    """What the launch path reads from an array (its parameters, its type key) is what Numba derives
    from the array's ``__cuda_array_interface__`` (``launch.flatten``, the reference)."""
    array = CudaArray.empty(shape, dtype)
    ty = launch.expected_type(array)
    assert array.kernel_parameters == [value for _, value in launch.flatten(ty, array)]
    assert array.launch_key == (np.dtype(dtype), len(shape))
    sub = array.reshape(-1)[1:] if array.size > 1 else array
    assert sub.kernel_parameters == [value for _, value in launch.flatten(launch.expected_type(sub), sub)]


def test_subarrays_and_rows_share_the_storage_and_check_bounds(cache):
    array = CudaArray.empty((2, 100), np.float32)
    first, second = array.rows()
    assert second.kernel_parameters[4] - first.kernel_parameters[4] == 400
    assert array.subarray(100, (10, 10)).kernel_parameters[4] == second.kernel_parameters[4]
    with pytest.raises(ValueError, match=r"elements \[150, 250\) are outside an array of 200"):
        array.subarray(150, (100,))
    del array, first
    gc.collect()
    assert cache.allocated_bytes == 1024  # the second row still reads the block
    del second
    gc.collect()
    assert cache.allocated_bytes == 0


def test_strided_views_are_refused_by_plans_not_misread(cache):
    """A view that is not C-contiguous has no launch key (its launch goes to the dispatcher), so a plan
    never passes it as if it were contiguous."""
    array = CudaArray.empty((4, 6), np.float32)
    with pytest.raises(KeyError, match="not a C-contiguous array"):
        array[:, ::2].launch_key
    with pytest.raises(KeyError):
        array.T.launch_key
    assert array[1:3].launch_key == (np.dtype(np.float32), 2)  # a block of rows is contiguous


def test_foreign_memory_keeps_its_owner_alive():
    owner = FakeBlock(1 << 40, 4096)
    storage = memory.foreign(owner.address, 1024, np.dtype(np.float32), owner)
    ref = weakref.ref(owner)
    del owner
    gc.collect()
    assert ref() is not None and storage.address == 1 << 40
    del storage
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("value, keeps", [(None, True), ("0", True), ("1", False)])
def test_the_environment_switch_turns_caching_off(monkeypatch, value, keeps):
    """TINYNORM_NO_CUDA_MEMORY_CACHING=1, like PyTorch's PYTORCH_NO_CUDA_MEMORY_CACHING=1."""
    if value is None:
        monkeypatch.delenv("TINYNORM_NO_CUDA_MEMORY_CACHING", raising=False)
    else:
        monkeypatch.setenv("TINYNORM_NO_CUDA_MEMORY_CACHING", value)
    monkeypatch.setattr(memory, "_driver_allocate", FakeDriver().allocate)
    memory.block_cache.cache_clear()
    try:
        cache = memory.block_cache()
        block, size = cache.take(100)
        cache.give_back(block, size)
        assert cache.reserved_bytes == (size if keeps else 0)
    finally:
        memory.block_cache.cache_clear()
