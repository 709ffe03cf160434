"""The CUDA indexing kernels (gather, scatter, take_along_axis, index positions, the key sort, nonzero, fill)
compile to PTX for
cc 9.0 for every dtype they move (float16/32/64, int64, bool), with 1- to 3-d layouts, and only
the float64 ones contain float64 instructions. Needs NVVM (the cuda extra), not a GPU; runs without
the simulator."""
import numba
import pytest

if numba.config.ENABLE_CUDASIM:  # the simulator has no compiler; its tests are tests/cuda/sim_*.py
    pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator", allow_module_level=True)

from ptx_support import types
from ptx_support import BOOL, F16, F32, F64, F64_TYPE, I64, array_type, tuple_type

from tinynorm.kernels.cuda import indexing, strided

DTYPES = [F16, F32, F64_TYPE, I64, BOOL]
INDEX = array_type(I64, 1)
FLAG = array_type(types.int32, 1)


def _cases(dtype, ndim):
    data, shape = array_type(dtype, 1), tuple_type(ndim)
    return [
        ("gather", indexing._gather_kernel, (data, data, I64, shape, shape, INDEX, I64)),
        ("scatter", indexing._scatter_kernel,  # positions, sorted keys, order
         (data, I64, shape, shape, INDEX, INDEX, INDEX, I64, data, I64, shape, shape, BOOL)),
        ("take_along", indexing._take_along_kernel,
         (data, data, I64, shape, I64, I64, INDEX, I64, shape, shape)),
        ("fill", strided._fill_kernel, (data, dtype)),
    ]


@pytest.mark.parametrize("ndim", [1, 3])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_data_kernels_compile(compile_ptx, dtype, ndim):
    for name, kernel, signature in _cases(dtype, ndim):
        if name == "fill" and ndim != 1:
            continue
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx, name
        if dtype != F64_TYPE:
            assert not F64.findall(ptx), (name, F64.findall(ptx)[:3])


@pytest.mark.parametrize("ndim", [1, 2])
def test_nonzero_kernels_compile(compile_ptx, ndim):
    mask = array_type(BOOL, 1)
    for kernel, signature in [(indexing._count_kernel, (mask, INDEX)),
                              (indexing._nonzero_kernel, (mask, INDEX, tuple_type(ndim), array_type(I64, 2)))]:
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx and not F64.findall(ptx)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_positions_kernel_compiles(compile_ptx, count):
    signature = (array_type(I64, 2), tuple_type(count), tuple_type(count), INDEX, INDEX, FLAG, BOOL, BOOL)
    ptx = compile_ptx(indexing._positions_kernel, signature)
    assert ".entry" in ptx and not F64.findall(ptx)


def test_sort_kernels_compile(compile_ptx):
    """The radix sort of the scatter keys: integer-only kernels, with the tile digits in shared memory."""
    for kernel, signature in [(indexing._iota_kernel, (INDEX,)),
                              (indexing._digit_count_kernel, (INDEX, I64, INDEX)),
                              (indexing._exclusive_scan_kernel, (INDEX,)),
                              (indexing._radix_scatter_kernel, (INDEX, INDEX, I64, INDEX, INDEX, INDEX))]:
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx and not F64.findall(ptx), kernel.__name__
        if kernel is not indexing._iota_kernel:
            assert ".shared" in ptx and "bar.sync" in ptx, kernel.__name__


@pytest.mark.parametrize("dtype", [I64, types.int32], ids=str)
def test_index_count_kernel_compiles(compile_ptx, dtype):
    """The target/ids check: integer counts only, shared-memory atomics, no float64."""
    ptx = compile_ptx(indexing._index_count_kernel, (array_type(dtype, 1), I64, I64, BOOL, INDEX))
    assert "atom.shared.add.u64" in ptx
    assert not F64.findall(ptx), F64.findall(ptx)[:3]
