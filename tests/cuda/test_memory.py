"""The caching allocator (tinynorm.kernels.cuda.memory), without a GPU.

The cache is bookkeeping over blocks that a driver function hands out, so a fake driver (blocks with
made-up device pointers) checks it: reuse by size class, the counts PyTorch reports, freeing, and the
retry when the GPU is full. The lifetimes go through Numba's own pointer classes, as on a GPU: a
block must stay lent while any view of its memory is alive, and come back once none is.
"""
from __future__ import annotations

import gc
import weakref

import pytest

pytest.importorskip("numba.cuda")

from numba.cuda.cudadrv.driver import binding  # noqa: E402

from tinynorm.kernels.cuda import launch, memory  # noqa: E402

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
        self.device_pointer = binding.CUdeviceptr(address)
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


def test_a_lent_block_comes_back_only_when_no_view_of_it_is_alive():
    """Numba's device arrays hold owned pointers: a view (a slice of an array) holds its own, and the
    block must not be reused while the view can still be read."""
    cache, _ = make_cache()
    pointer = memory.lend(cache, 4000)
    address = int(pointer.device_pointer)
    view = pointer.view(1024, 2048)
    assert int(view.device_pointer) == address + 1024
    del pointer
    gc.collect()
    assert cache.allocated_bytes == 4096  # the view still uses it
    reused_while_alive = memory.lend(cache, 4000)
    assert int(reused_while_alive.device_pointer) != address
    del view
    gc.collect()
    assert cache.allocated_bytes == 4096  # only the second block is in use now
    reused = memory.lend(cache, 3900)
    assert int(reused.device_pointer) == address
    assert cache.driver_allocations == 2


def test_lent_pointers_keep_the_size_asked_for():
    cache, _ = make_cache()
    pointer = memory.lend(cache, 1000)
    assert pointer.size == 1000  # what Numba checks array accesses against, not the 1024-byte class


def test_empty_builds_a_numba_device_array_on_a_lent_block(monkeypatch):
    """``memory.empty`` as on a GPU (the driver faked): a C-contiguous Numba device array of the shape
    and dtype asked for, at the block's address, whose block comes back when the array is dropped."""
    import numpy as np

    cache, _ = make_cache()
    monkeypatch.setattr(memory, "block_cache", lambda: cache)
    monkeypatch.setattr(memory, "_context", lambda: None)
    array = memory.empty((3, 5), np.float32)
    assert array.shape == (3, 5) and array.dtype == np.float32 and array.strides == (20, 4)
    assert array.is_c_contiguous() and cache.allocated_bytes == 512
    address = array.device_ctypes_pointer.value
    del array
    gc.collect()
    assert cache.allocated_bytes == 0
    again = memory.empty(7, np.int64)
    assert again.shape == (7,) and again.device_ctypes_pointer.value == address



@pytest.mark.parametrize("shape, dtype", [((3, 5), "float32"), ((7,), "int64"), ((2, 1, 4), "float16"),
                                          ((), "float32")])
def test_contiguous_device_array_is_numbas_array_built_faster(shape, dtype):
    """``ContiguousDeviceArray`` (what ``memory.empty`` and ``memory.view`` make) has every attribute
    Numba's constructor sets, with the same values, types as the same Numba array type, and slices and
    reshapes as Numba's own array does (through the dummy array it builds when asked)."""
    import numpy as np
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    cache, _ = make_cache()
    dtype = np.dtype(dtype)
    pointer = memory.lend(cache, max(1, int(np.prod(shape))) * dtype.itemsize)
    ours = memory.ContiguousDeviceArray.make(shape, dtype, pointer)
    numbas = DeviceNDArray(shape, memory.contiguous_strides(shape, dtype.itemsize), dtype, gpu_data=pointer)
    assert isinstance(ours, DeviceNDArray)
    for name in ("shape", "strides", "dtype", "size", "ndim", "alloc_size", "gpu_data", "stream", "nbytes"):
        assert getattr(ours, name) == getattr(numbas, name), name
    assert ours._numba_type_ == numbas._numba_type_
    assert ours.is_c_contiguous() and numbas.is_c_contiguous()
    assert ours.flags == numbas.flags and ours.__cuda_array_interface__ == numbas.__cuda_array_interface__
    # What the launch path reads from ours instead of working it out: Numba's parameters and type key.
    assert ours.kernel_parameters == [value for _, value in launch.flatten(numbas._numba_type_, numbas)]
    assert ours.launch_key == launch._argument_key(numbas)
    if ours.ndim:
        pairs = [(ours.reshape(-1), numbas.reshape(-1)),
                 (ours._do_getitem(slice(None, None, 2)), numbas._do_getitem(slice(None, None, 2)))]
        if ours.ndim > 1:  # (an integer index into a 1-D array reads an element: that needs a GPU)
            pairs.append((ours._do_getitem(0), numbas._do_getitem(0)))
        for got, want in pairs:
            assert (got.shape, got.strides, got.device_ctypes_pointer.value) == \
                (want.shape, want.strides, want.device_ctypes_pointer.value)
            assert got.is_c_contiguous() == want.is_c_contiguous() or want.shape[0] == 1
            # Numba builds these through the constructor: they work out their launch data themselves.
            assert got.kernel_parameters == [value for _, value in launch.flatten(want._numba_type_, want)]
            if got.is_c_contiguous():
                assert got.launch_key == launch._argument_key(want)
            else:
                with pytest.raises(KeyError):
                    got.launch_key

def _device_array(cache, shape, dtype):
    """A Numba device array on a lent block, as ``memory.empty`` makes on a GPU."""
    import numpy as np
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    dtype = np.dtype(dtype)
    size = int(np.prod(shape))
    strides = tuple(int(s) for s in np.empty(shape, dtype).strides)
    return DeviceNDArray(shape, strides, dtype, gpu_data=memory.lend(cache, size * dtype.itemsize))


@pytest.mark.parametrize("shape, offset, view_shape", [
    ((2, 12), 12, (12,)),  # a row
    ((24,), 4, (4, 5)),  # a slice, reshaped
    ((3, 8), 0, (24,)),  # flattened
])
def test_view_is_what_numba_slicing_gives(shape, offset, view_shape):
    """``memory.view`` builds the view Numba's ``a.reshape(-1)[start:stop].reshape(shape)`` would: the
    same address, shape, strides and dtype (Numba's own indexing is called without its context check,
    which needs a GPU)."""
    import numpy as np

    cache, _ = make_cache()
    array = _device_array(cache, shape, np.float32)
    got = memory.view(array, offset, view_shape)
    size = int(np.prod(view_shape))
    expected = array.reshape(array.size)._do_getitem(slice(offset, offset + size)).reshape(view_shape)
    assert (got.shape, got.strides, got.dtype) == (expected.shape, expected.strides, expected.dtype)
    assert got.device_ctypes_pointer.value == expected.device_ctypes_pointer.value
    assert got.device_ctypes_pointer.value == array.device_ctypes_pointer.value + 4 * offset


def test_view_returns_the_array_itself_when_nothing_changes_and_checks_bounds():
    import numpy as np

    cache, _ = make_cache()
    array = _device_array(cache, (2, 3), np.float64)
    assert memory.view(array, 0, (2, 3)) is array
    with pytest.raises(ValueError, match=r"elements \[4, 8\) are outside an array of 6"):
        memory.view(array, 4, (4,))


def test_rows_keep_the_block_lent():
    import numpy as np

    cache, _ = make_cache()
    array = _device_array(cache, (2, 100), np.float32)
    first, second = memory.rows(array)
    assert second.device_ctypes_pointer.value - first.device_ctypes_pointer.value == 400
    del array, first
    gc.collect()
    assert cache.allocated_bytes == 1024  # the second row still reads the block
    del second
    gc.collect()
    assert cache.allocated_bytes == 0


@pytest.mark.parametrize("make_view, offset", [
    (lambda array: memory.view(memory.view(array, 10, (50,)), 5, (2, 5)), 15),  # a view of a view
    (lambda array: memory.view(array, 0, (4, 25)), 0),  # a reshape: shares the pointer, as Numba's does
])
def test_a_view_keeps_the_block_lent(make_view, offset):
    import numpy as np

    cache, _ = make_cache()
    array = _device_array(cache, (100,), np.float32)
    view = make_view(array)
    assert view.device_ctypes_pointer.value == array.device_ctypes_pointer.value + 4 * offset
    assert (view.gpu_data is array.gpu_data) == (view.size == array.size)
    del array
    gc.collect()
    assert cache.allocated_bytes == 512
    del view
    gc.collect()
    assert cache.allocated_bytes == 0


def test_views_of_numba_allocated_memory_use_numba_views():
    """Memory the cache did not lend (an array Numba allocated) is counted by Numba's own pointers:
    its views must go through them, or Numba could free it under a live view."""
    from numba.cuda.cudadrv.driver import AutoFreePointer, OwnedPointer

    freed = []
    block = FakeBlock(1 << 40, 4096)
    allocation = AutoFreePointer(None, block.device_pointer, 4096, finalizer=lambda: freed.append(1))
    numba_pointer = allocation.own()  # as Numba's memalloc hands out (its context keeps ``allocation``)
    view = memory._sub_pointer(numba_pointer, 512, 1024)
    assert isinstance(view, OwnedPointer) and int(view.device_pointer) == (1 << 40) + 512
    del numba_pointer
    gc.collect()
    assert freed == []  # the view still counts
    del view
    gc.collect()
    assert freed == [1]


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
