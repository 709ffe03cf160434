"""Every CUDA norm kernel compiles to PTX for an H100/H200 (cc 9.0) with its float32 and float16 signatures,
and the PTX does only float32 arithmetic.

This needs NVVM (``pip install -e ".[cuda]"``), not a GPU: the tests fail, rather than skip, without it,
so a CI that forgot the extra is noticed. A float64 instruction in a float32 kernel is a real and easy
bug (a Python float literal or a float64 scalar argument promotes the arithmetic around it), costing
up to 64x throughput on consumer GPUs: every ``.f64`` instruction is reported.

The second half checks the low-overhead launch (tinynorm/backends/cuda/runtime/launch.py) against
Numba's own argument handling, for signatures of every kernel family; that also runs without a GPU.
"""
import ctypes
import re
from types import SimpleNamespace

import numba
import numpy as np
import pytest

if numba.config.ENABLE_CUDASIM:  # the simulator has no compiler; its tests are tests/cuda/sim_*.py
    pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator", allow_module_level=True)

from ptx_support import types
from ptx_support import (
    BOOL,
    CC,
    F16,
    F32,
    F64,
    F64_TYPE,
    I64,
    NONE,
    P1,
    P2,
    P3,
    assert_fits_in_registers,
    tuple_type,
)
from ptx_support import array_type as _array

U8, I32, U64 = types.uint8, types.int32, types.uint64


def _row_norm_cases(dtype):
    from tinynorm.kernels.cuda import _row_norm
    x = _array(dtype, 2)
    cases = []
    for per_lane in (1, 2, 4, 8, 16, 32):
        cases += [
            (f"LN narrow forward per_lane={per_lane}", _row_norm.narrow_forward(per_lane),
             (x, P1, P1, F32, x, P1, P1)),
            (f"RMS narrow forward per_lane={per_lane}", _row_norm.narrow_forward(per_lane),
             (x, P1, NONE, F32, x, NONE, P1)),
            (f"LN narrow backward per_lane={per_lane}", _row_norm.narrow_backward(per_lane),
             (x, x, P1, P1, P1, x, P3)),
            (f"RMS narrow backward per_lane={per_lane}", _row_norm.narrow_backward(per_lane),
             (x, x, NONE, P1, P1, x, P3)),
        ]
    cases += [
        ("LN wide forward", _row_norm.wide_forward, (x, P1, P1, F32, x, P1, P1, I64)),
        ("RMS wide forward, no weight", _row_norm.wide_forward, (x, NONE, NONE, F32, x, NONE, P1, I64)),
        ("LN wide backward", _row_norm.wide_backward, (x, x, P1, P1, P1, x, P3, I64)),
        ("RMS wide backward", _row_norm.wide_backward, (x, x, NONE, P1, P1, x, P3, I64)),
    ]
    return cases


def _batch_group_cases(dtype):
    from tinynorm.kernels.cuda import batch_norm, group_norm
    x1, x3 = _array(dtype, 1), _array(dtype, 3)
    return [
        ("BN stats", batch_norm._stats_kernel, (x3, P3)),
        ("BN backward reduce", batch_norm._reduce_kernel, (x3, x3, P1, P3)),
        ("BN forward", batch_norm._forward_kernel, (x1, P1, P1, P1, P1, x1, I64, I64)),
        ("BN forward, no affine", batch_norm._forward_kernel, (x1, P1, P1, NONE, NONE, x1, I64, I64)),
        ("BN backward elemt", batch_norm._elemt_kernel, (x1, x1, P1, P1, P1, P1, P1, F32, x1, I64, I64)),
        ("BN running update", batch_norm._update_running_kernel, (x1, x1, P1, P1, F32, F32, F32)),
        ("GN forward", group_norm._forward_kernel, (x3, I64, P1, P1, F32, x3, P2, P2, I64)),
        ("GN backward", group_norm._backward_kernel, (x3, x3, P2, P2, I64, P1, x3, P3)),
    ]


def _float32_only_cases():
    from tinynorm.kernels.cuda import _reduce, batch_norm
    return [
        ("sum of partials", _reduce.sum_partials_kernel, (P3, P2)),
        ("BN merge statistics", batch_norm._merge_stats_kernel, (P3, P1, P1)),
        ("BN merge backward sums", batch_norm._merge_reduce_kernel, (P3, P1, P1, P1)),
        ("BN rstd", batch_norm._rstd_kernel, (P1, F32, P1)),
    ]


def _cases():
    yield from _float32_only_cases()
    for dtype in (F32, F16):
        for name, kernel, signature in _row_norm_cases(dtype) + _batch_group_cases(dtype):
            yield f"{name} [{dtype}]", kernel, signature


def test_every_kernel_compiles_to_float32_only_ptx(compile_ptx):
    """One test over all kernels (~100 compilations), reporting every offender at once."""
    problems = []
    for name, kernel, signature in _cases():
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx, name
        f64 = F64.findall(ptx)
        if f64:
            problems.append(f"{name}: {len(f64)} float64 instructions, e.g. {f64[0].strip()!r}")
    assert not problems, "\n".join(problems)


def test_narrow_rows_stay_in_registers(compile_ptx, tmp_path):
    """The GPU build reduces with shfl.sync.bfly (the simulator's stand-in is not compiled), and the
    size-specialized narrow kernels keep their row in registers: ptxas (assembling for sm_90, as the
    driver would) reports no spills and no stack frame, and few enough registers for several blocks
    per SM (measured: forward 26-96, backward 27-166; 231 before ``lane_index`` replaced ``% 32``)."""
    from tinynorm.kernels.cuda import _row_norm
    x = _array(F32, 2)
    for per_lane in (1, 2, 4, 8, 16, 32):
        for kind, kernel, signature, max_registers in [
                ("forward", _row_norm.narrow_forward(per_lane), (x, P1, P1, F32, x, P1, P1), 128),
                ("backward", _row_norm.narrow_backward(per_lane), (x, x, P1, P1, P1, x, P3), 192)]:
            ptx = compile_ptx(kernel, signature)
            assert "shfl.sync.bfly.b32" in ptx
            assert_fits_in_registers(ptx, tmp_path, max_registers, f"{kind} per_lane={per_lane}")


WIDE_MAX_REGISTERS = 64  # 1024 threads per block x 64 registers = an SM's 65536
WIDE_MAX_SPILL_BYTES = 32


def test_wide_kernels_fit_1024_threads_per_block(compile_ptx, tmp_path):
    """The wide-row kernels launch with up to 1024 threads per block, which the GPU allows only at 64
    registers per thread or fewer (else CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES): uncapped, ptxas gives them
    51-66 registers (RMS backward without weight, float16: 66). They are compiled with
    ``max_registers=64`` (the linker's register cap), and ptxas must fit them under that cap with at most
    ``WIDE_MAX_SPILL_BYTES`` of spills (LN backward: 16 bytes in float32, 20 in float16, in L1): a kernel
    that grows fails here, not on a GPU."""
    from tinynorm.kernels.cuda import _row_norm
    for dtype in (F32, F16):
        x = _array(dtype, 2)
        for name, kernel, signature in [
                ("LN wide forward", _row_norm.wide_forward, (x, P1, P1, F32, x, P1, P1, I64)),
                ("RMS wide forward", _row_norm.wide_forward, (x, P1, NONE, F32, x, NONE, P1, I64)),
                ("LN wide backward", _row_norm.wide_backward, (x, x, P1, P1, P1, x, P3, I64)),
                ("RMS wide backward", _row_norm.wide_backward, (x, x, NONE, P1, P1, x, P3, I64)),
                ("LN wide backward, no weight", _row_norm.wide_backward, (x, x, P1, P1, NONE, x, P3, I64)),
                ("RMS wide backward, no weight", _row_norm.wide_backward, (x, x, NONE, P1, NONE, x, P3, I64))]:
            assert kernel.targetoptions["max_registers"] == WIDE_MAX_REGISTERS, name
            assert_fits_in_registers(compile_ptx(kernel, signature), tmp_path, WIDE_MAX_REGISTERS,
                                     f"{name} [{dtype}]", capped=True, max_spill_bytes=WIDE_MAX_SPILL_BYTES)


def test_f64_pattern_catches_float64_arithmetic(compile_ptx):
    """The check above can fail: a kernel with a Python float literal compiles to float64 arithmetic."""
    from numba import cuda

    @cuda.jit
    def promotes(x):
        x[0] = x[0] * 0.5 + 1.0  # Python floats: the multiply-add runs in float64

    ptx = compile_ptx(promotes, (P1,))
    assert any("f64" in line for line in F64.findall(ptx))


# ------------------------------------------------------------------------------------------------
# The runtime's launch is written against numba-cuda's internals: with another compiler selected
# (TINYNORM_CUDA_COMPILER, docs/cuda.md's probe of numba-cuda-mlir) only the PTX tests above apply.
numba_cuda_only = pytest.mark.skipif(__import__("tinynorm.backends.cuda.runtime.compiler", fromlist=["NAME"]).NAME
                                     != "numba-cuda", reason="the launch path is written for numba-cuda")

# The low-overhead launch (tinynorm/backends/cuda/runtime/launch.py) must hand the driver exactly the
# parameters Numba's dispatcher hands it. Without a GPU, the dispatcher's own code can still run up
# to the driver call: a compiled ``_Kernel`` flattens arguments with ``_prepare_args``, and cuda.core's
# ``ParamHolder`` builds the ``void **kernelParams`` block that numba-cuda passes to the driver.

# The kernel's own parameter list (a called ``.func``, e.g. a float16 helper, declares parameters too).
PTX_ENTRY = re.compile(r"\.entry\s+\w+\s*\((.*?)\)", re.DOTALL)
PTX_PARAM = re.compile(r"\.param\s+\.(\w+)(?:\s+\.align\s+\d+)?\s+\w+(?:\[(\d+)\])?")
PTX_SIZES = {"u64": 8, "s64": 8, "b64": 8, "f64": 8, "u32": 4, "s32": 4, "b32": 4, "f32": 4,
             "u16": 2, "s16": 2, "b16": 2, "f16": 2, "u8": 1, "s8": 1, "b8": 1}


def _launch_cases():
    """One signature of every norm kernel: arrays, float32 and int64 scalars, None arguments."""
    from tinynorm.kernels.cuda import _reduce, _row_norm, batch_norm, group_norm
    x, h = _array(F32, 2), _array(F16, 2)
    return [
        ("LN narrow forward", _row_norm.narrow_forward(2), (x, P1, P1, F32, x, P1, P1)),
        ("LN narrow forward float16", _row_norm.narrow_forward(2), (h, P1, P1, F32, h, P1, P1)),
        ("RMS narrow forward", _row_norm.narrow_forward(2), (x, NONE, NONE, F32, x, NONE, P1)),
        ("RMS narrow backward", _row_norm.narrow_backward(2), (x, x, NONE, P1, P1, x, P3)),
        ("LN wide forward", _row_norm.wide_forward, (x, P1, P1, F32, x, P1, P1, I64)),
        ("LN wide backward", _row_norm.wide_backward, (x, x, P1, P1, NONE, x, P3, I64)),
        ("sum of partials", _reduce.sum_partials_kernel, (P3, P2)),
        *[(f"BN/GN {name}", kernel, signature) for name, kernel, signature in _batch_group_cases(F32)],
        ("BN merge statistics", batch_norm._merge_stats_kernel, (P3, P1, P1)),
        ("GN forward, no affine", group_norm._forward_kernel, (_array(F32, 3), I64, NONE, NONE, F32,
                                                               _array(F32, 3), P2, P2, I64)),
        *_family_launch_cases(),
    ]


def _family_launch_cases():
    """Signatures of the other kernel families, as their host wrappers launch them: shape and strides
    tuples, float16/float64/int64/uint64/uint8/bool scalars, None, arrays of float16/32/64, int32,
    int64, uint64, uint8 and bool with 1 to 4 dims, a 0-d array, and tuples of arrays (the optimizers)."""
    from numba import cuda

    from tinynorm.kernels.cuda import (
        conv,
        indexing,
        matmul,
        optim,
        pool,
        random,
        reductions,
        softmax,
        strided,
    )
    from tinynorm.kernels.cuda import elementwise as ew

    @cuda.jit
    def store_scalar(out, value):  # no tinynorm kernel takes a 0-d array; Numba passes it as 5 parameters
        out[()] = value

    t1, t2, t3 = (tuple_type(n) for n in (1, 2, 3))
    f16, f64, i64, u8, mask = _array(F16, 1), _array(F64_TYPE, 1), _array(I64, 1), _array(U8, 1), _array(BOOL, 1)
    a4, index4, geometry = _array(F32, 4), _array(I64, 4), (I64,) * 6
    f32 = np.dtype(np.float32)
    return [
        ("map add(array, scalar)", ew.map_kernel(ew.add, 2, ((False, F32), (True, F32), (True, BOOL))),
         (P1, I64, t2, t2, I64, P1, I64, t2, F32, I64, t2, BOOL, I64, t2)),
        ("map where(mask, float16, float64 scalar)",
         ew.map_kernel(ew.where, 3, ((False, BOOL), (False, F32), (True, F32))),
         (P1, I64, t3, t3, I64, mask, I64, t3, f16, I64, t3, F64_TYPE, I64, t3)),
        ("map astype uint8 -> float32", ew.map_kernel(ew.identity, 1, ((False, F32), (True, BOOL), (True, BOOL))),
         (P1, I64, t1, t1, I64, u8, I64, t1, BOOL, I64, t1, BOOL, I64, t1)),
        ("arange float64", ew.arange_kernel(F64_TYPE), (f64, F64_TYPE, F64_TYPE)),
        ("copy_strided float16 -> float32", strided._copy_kernel, (P1, f16, I64, t3, t3)),
        ("row sums, mean", reductions._sum_thread_kernel(np.dtype(np.float64)), (_array(F64_TYPE, 2), F64_TYPE, f64)),
        ("row sums of bools", reductions._sum_block_kernel(np.dtype(np.int64), 256),
         (_array(BOOL, 2), NONE, I64, I64, i64)),
        ("argmax partials", reductions._extreme_block_kernel(True, f32, 256), (P2, NONE, I64, I64, NONE, i64)),
        ("min of uint64 rows", reductions._extreme_thread_kernel(False, np.dtype(np.uint64)),
         (_array(U64, 2), _array(I64, 2), _array(U64, 1), NONE)),
        ("softmax forward", softmax.forward_kernel(f32), (P2, P2, BOOL, F32, I64)),
        ("log_softmax backward float64", softmax.backward_kernel(np.dtype(np.float64)),
         (*(_array(F64_TYPE, 2),) * 3, BOOL, F64_TYPE, I64)),
        ("gemm float16", matmul.gemm_kernel(f32), (f16, t3, f16, t3, t1, I64, NONE, _array(F16, 3))),
        ("gemm float32 + bias", matmul.gemm_kernel(f32), (P1, t3, P1, t3, t1, I64, P1, P3)),
        ("gemm int32", matmul.gemm_kernel(np.dtype(np.int64)),
         (_array(I32, 1), t3, _array(I32, 1), t3, t1, I64, NONE, _array(I32, 3))),
        ("im2col", conv._im2col_kernel, (a4, P3, *geometry, I64)),
        ("col2im float64", conv._col2im_kernel, (_array(F64_TYPE, 3), _array(F64_TYPE, 4), *geometry, I64, F64_TYPE)),
        ("channel sums", conv._channel_sums_kernel(F32), (P3, P1)),
        ("max pool", pool._max_pool_kernel, (a4, a4, index4, *geometry, F32)),
        ("max pool backward", pool._max_pool_backward_kernel, (a4, index4, a4, F32, i64)),
        ("index positions", indexing._positions_kernel, (_array(I64, 2), t2, t2, i64, i64, _array(I32, 1), BOOL, BOOL)),
        ("scatter", indexing._scatter_kernel, (P1, I64, t2, t2, i64, i64, i64, I64, P1, I64, t3, t3, BOOL)),
        ("nonzero", indexing._nonzero_kernel, (mask, i64, t3, _array(I64, 2))),
        ("exclusive scan", indexing._exclusive_scan_kernel, (i64,)),
        ("fill uint8", strided._fill_kernel, (u8, U8)),
        ("SGD float16, no momentum", optim._sgd_kernel,
         (types.UniTuple(f16, 3),) * 2 + (NONE, F16, NONE, F16, F16, BOOL, BOOL, BOOL)),
        ("AdamW float64, amsgrad", optim._adam_kernel,
         (types.UniTuple(f64, 2),) * 5 + (F64_TYPE,) * 7 + (NONE, F64_TYPE, BOOL)),
        ("uniform float32", random._uniform_words_kernel, (P1, U64, U64, U64, F32)),
        ("uniform float64", random._uniform_float64_kernel, (f64, U64, U64)),
        ("0-d array", store_scalar, (_array(F32, 0), F32)),
    ]


_COMPILED: dict = {}  # (kernel, signature) -> (compiled _Kernel, sizes): the launch tests share their compilations


@pytest.fixture
def compile_kernel(compile_ptx, monkeypatch):
    """``compile_kernel(kernel, signature) -> (compiled _Kernel, PTX parameter sizes)``, without a GPU."""
    from numba import cuda
    from numba.cuda import codegen, dispatcher

    from tinynorm.backends.cuda.runtime.launch import NONE_AS_NULL_POINTER
    if not cuda.is_available():  # _Kernel asks the current context for its compute capability
        device = SimpleNamespace(compute_capability=CC)
        monkeypatch.setattr(dispatcher, "get_current_device", lambda: device)
        monkeypatch.setattr(codegen.devices, "get_context", lambda devnum=None: SimpleNamespace(device=device))

    def compile_(kernel, signature):
        if (kernel, signature) not in _COMPILED:
            compiled = dispatcher._Kernel(kernel.py_func, signature, extensions=[NONE_AS_NULL_POINTER])
            parameters = PTX_ENTRY.search(compile_ptx(kernel, signature)).group(1)
            sizes = [int(n) if n else PTX_SIZES[kind] for kind, n in PTX_PARAM.findall(parameters)]
            _COMPILED[kernel, signature] = compiled, sizes
        return _COMPILED[kernel, signature]

    return compile_


def _device_array(ty, address):
    """A tinynorm array of type ``ty`` (shapes 3, 5, 7, 2, or 0-d; a 1-D one is a storage, as the strided
    kernels take them) on fake memory at ``address``."""
    from tinynorm.backends.cuda.array import CudaArray
    from tinynorm.backends.cuda.runtime import memory
    dtype = np.dtype(str(ty.dtype))
    shape = (3, 5, 7, 2)[:ty.ndim]
    storage = memory.foreign(address, int(np.prod(shape)), dtype, None)
    return storage if ty.ndim == 1 else CudaArray(storage, shape)


def _numba_twin(value):
    """A tinynorm array as the Numba DeviceNDArray on the same fake memory (tuples item by item, scalars
    as they are): what Numba's own launch takes (built without a CUDA context)."""
    if isinstance(value, tuple):
        return tuple(map(_numba_twin, value))
    if not hasattr(value, "kernel_parameters"):
        return value
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    from numba.cuda.cudadrv.driver import MemoryPointer, binding
    interface = value.__cuda_array_interface__
    dtype = np.dtype(interface["typestr"])
    shape = tuple(interface["shape"])
    strides = tuple(int(np.prod(shape[d + 1:])) * dtype.itemsize for d in range(len(shape)))
    pointer = MemoryPointer(None, binding.CUdeviceptr(interface["data"][0]), int(np.prod(shape)) * dtype.itemsize)
    return DeviceNDArray(shape, strides, dtype, gpu_data=pointer)


# A value of each scalar type, of the Python type Numba types as it (a Python int is int64, ...);
# negative and high-bit values check that no sign or bit is lost on the way.
SCALARS = {F32: np.float32(1e-5), F16: np.float16(-0.333), F64_TYPE: -2.5e-300, I64: -7, BOOL: True,
           U64: np.uint64(0xFEDC_BA98_7654_3210), U8: np.uint8(200), NONE: None}


def _value(ty):
    """An argument of the scalar or tuple type ``ty`` (a shape or strides tuple of ``n`` ints: ``(5, -2, 9)[:n]``)."""
    if isinstance(ty, types.BaseTuple):
        return (5, -2, 9)[:len(ty)]
    return SCALARS[ty]


def _argument(ty, address):
    """A device array (on fake memory at ``address``), a tuple of them, or a scalar or shape of type ``ty``."""
    if hasattr(ty, "ndim"):
        return _device_array(ty, address)
    if isinstance(ty, types.BaseTuple) and hasattr(ty[0], "ndim"):  # an optimizer's list of tensors
        return tuple(_device_array(item, address + 0x1000 * k) for k, item in enumerate(ty))
    return _value(ty)


def _arguments(signature):
    return tuple(_argument(ty, 0x7F00_0000_0000 + 0x10_0000 * i) for i, ty in enumerate(signature))


def _numba_parameters(compiled, args, sizes):
    """The bytes of each kernel parameter as numba-cuda would launch them (``ParamHolder``'s block)."""
    from cuda.core._kernel_arg_handler import ParamHolder
    flat = []
    for ty, value in zip(compiled.argument_types, args):
        compiled._prepare_args(ty, _numba_twin(value), 0, [], flat)
    assert len(flat) == len(sizes)
    holder = ParamHolder(flat)
    pointers = (ctypes.c_void_p * len(sizes)).from_address(holder.ptr)
    return [ctypes.string_at(pointers[i], size) for i, size in enumerate(sizes)]


@numba_cuda_only
def test_flatten_matches_numbas_parameters(compile_kernel):
    """``flatten`` gives, for every kernel family's arguments, the parameters (count, sizes, bytes) that
    Numba's dispatcher passes and that the kernel's PTX declares; the hot-path writers agree."""
    from tinynorm.backends.cuda.runtime.launch import _writer, flatten
    for name, kernel, signature in _launch_cases():
        compiled, sizes = compile_kernel(kernel, signature)
        args = _arguments(signature)
        ours = [(size, value) for ty, arg in zip(signature, args) for size, value in flatten(ty, arg)]
        assert [size for size, _ in ours] == sizes, name
        assert [value.to_bytes(8, "little")[:size] for size, value in ours] == \
            _numba_parameters(compiled, args, sizes), name
        for ty, arg in zip(signature, args):
            assert _writer(ty)(arg) == [value for _, value in flatten(ty, arg)], name


class _RecordingDriver:
    """Stands in for cuda.bindings.driver: ``cuLaunchKernel`` copies each parameter from the
    ``kernelParams`` block as the real driver does (``sizes[i]`` bytes from pointer ``i``)."""

    CUresult = SimpleNamespace(CUDA_SUCCESS=0)
    CUstream = int

    def __init__(self, sizes):
        self.sizes, self.launches = sizes, []

    def cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        pointers = (ctypes.c_void_p * len(self.sizes)).from_address(params)
        self.launches.append(((gx, gy, gz), (bx, by, bz), shared,
                              [ctypes.string_at(pointers[i], size) for i, size in enumerate(self.sizes)]))
        return (0,)


@numba_cuda_only
def test_plan_block_matches_numbas_block(compile_kernel):
    """A plan's reused parameter block, refilled for new arguments, holds exactly the bytes numba-cuda's
    own block holds (a fake driver reads it the way ``cuLaunchKernel`` does)."""
    from tinynorm.backends.cuda.runtime import launch
    for name, kernel, signature in _launch_cases():
        compiled, sizes = compile_kernel(kernel, signature)
        first = _arguments(signature)
        plan = launch.Plan(_RecordingDriver(sizes), 0x1234, compiled.argument_types, first)
        moved = tuple(_device_array(ty, 0x7E00_0000_0000) if isinstance(ty, types.Array) else a
                      for ty, a in zip(signature, first))
        for args in (first, moved):
            plan.launch((4, 2, 1), (128, 1, 1), 256, args)
            expected = ((4, 2, 1), (128, 1, 1), 256, _numba_parameters(compiled, args, sizes))
            assert plan.driver.launches[-1] == expected, name


@numba_cuda_only
def test_a_plan_whose_sizes_differ_from_the_drivers_is_refused(monkeypatch):
    """On a GPU each plan compares its parameter sizes with the driver's ``arguments_info``; a mismatch
    is a refusal with its reason (the launch goes to the dispatcher), never a mis-packed block."""
    from tinynorm.backends.cuda.runtime import launch
    _, kernel, signature = _launch_cases()[0]
    args = _arguments(signature)
    sizes = [size for ty, a in zip(signature, args) for size, _ in launch.flatten(ty, a)]
    driver = _RecordingDriver(sizes)
    monkeypatch.setattr(launch, "_driver", lambda: driver)
    monkeypatch.setattr(launch, "driver_function", lambda kernel, argtypes: (0x1234, sizes))
    assert isinstance(launch.make_plan(kernel, args), launch.Plan)
    monkeypatch.setattr(launch, "driver_function", lambda kernel, argtypes: (0x1234, sizes[:-1]))
    with pytest.raises(launch.Refused, match="parameter sizes"):
        launch.make_plan(kernel, args)


@numba_cuda_only
def test_none_arguments_reach_the_kernel_as_null_pointers(compile_kernel):
    """numba-cuda 0.30.4's dispatcher has no case for a None argument; the extension of ``launch.jit``
    passes the 8-byte null pointer that the compiled kernel declares for it."""
    from numba.cuda import dispatcher

    from tinynorm.kernels.cuda import _row_norm
    signature = (_array(F32, 2), P1, NONE, F32, _array(F32, 2), NONE, P1)
    compiled, _ = compile_kernel(_row_norm.narrow_forward(1), signature)
    flat = []
    compiled._prepare_args(NONE, None, 0, [], flat)
    assert len(flat) == 1 and isinstance(flat[0], ctypes.c_uint64) and flat[0].value == 0
    plain = dispatcher._Kernel(_row_norm.narrow_forward(1).py_func, signature)  # without the extension
    with pytest.raises(NotImplementedError):
        plain._prepare_args(NONE, None, 0, [], [])
    assert _row_norm.narrow_forward(1).targetoptions["extensions"]


@numba_cuda_only
def test_argument_keys_promise_the_dispatchers_types():
    """For every argument kind of every kernel family (tuples, each scalar type, None, arrays of each
    dtype and rank), the key a plan is filed under promises the type the dispatcher gives the value;
    values whose type the key cannot tell are never planned."""
    from numba.cuda.dispatcher import CUDADispatcher

    from tinynorm.backends.cuda.array import CudaArray
    from tinynorm.backends.cuda.runtime import launch
    for name, _, signature in _launch_cases():
        args = _arguments(signature)
        assert tuple(CUDADispatcher.typeof_pyval(None, _numba_twin(a)) for a in args) == signature, name
        assert tuple(launch.expected_type(a) for a in args) == signature, name
        assert all(launch._argument_key(a) is not None for a in args), name
    assert launch._argument_key((3, np.int64(-1))) == (tuple, int, np.int64)
    assert launch.expected_type((3, np.int32(-1))) == types.Tuple((I64, I32))
    assert launch._writer(tuple_type(2))((3, -1)) == [3, 2**64 - 1]
    with pytest.raises(KeyError):  # a Python int this large is typed uint64 by Numba
        launch._argument_key(2**63)
    row = _device_array(_array(F32, 2), 0x7F00_0000_0000)
    with pytest.raises(KeyError):  # a broadcast row: stride 0
        launch._argument_key(CudaArray(row.storage, (3, 5), (0, 1)))


class _FakeDispatcher:
    """Records launches through ``kernel[grid, block, stream, shared](*args)``; compiles nothing."""

    def __init__(self):
        self.calls, self.overloads = [], {}

    def __getitem__(self, config):
        return lambda *args: self.calls.append((config, args))

    def typeof_pyval(self, value):
        from numba.cuda.dispatcher import CUDADispatcher
        return CUDADispatcher.typeof_pyval(self, value)


@numba_cuda_only
def test_launch_falls_back_to_the_dispatcher(monkeypatch):
    """A refused plan means the dispatcher every time, with the reason recorded; a plan that fails
    switches the fast path off, warns, and relaunches through the dispatcher."""
    from tinynorm.backends.cuda.runtime import launch
    monkeypatch.setitem(launch._fast, "enabled", True)
    monkeypatch.setattr(launch, "_plans", {})
    monkeypatch.setattr(launch, "refusals", {})

    def refuse(kernel, argtypes):
        raise launch.Refused("no driver here")

    monkeypatch.setattr(launch, "driver_function", refuse)
    kernel = _FakeDispatcher()
    for _ in range(2):
        launch.launch(kernel, 4, 32, (1, np.float32(2)))
    assert kernel.calls == [((4, 32, 0, 0), (1, np.float32(2)))] * 2
    assert launch._plans == {(kernel, int, np.float32): None}
    assert list(launch.refusals.values()) == ["no driver here"]

    class Failing:
        def launch(self, *args):
            raise RuntimeError("CUDA_ERROR_INVALID_VALUE")

    launch._plans[(kernel, int, np.float32)] = Failing()
    with pytest.warns(RuntimeWarning, match="low-overhead kernel launch failed"):
        launch.launch(kernel, (4, 2), 32, (1, np.float32(2)), shared_bytes=64)
    assert kernel.calls[-1] == (((4, 2), 32, 0, 64), (1, np.float32(2)))
    assert not launch.fast_launch_enabled()
