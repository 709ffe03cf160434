"""Every CUDA norm kernel compiles to PTX for an H100/H200 (cc 9.0) with its float32 and float16 signatures,
and the PTX does only float32 arithmetic.

This needs NVVM (``pip install -e ".[cuda]"``), not a GPU: the tests fail, rather than skip, without it,
so a CI that forgot the extra is noticed. A float64 instruction in a float32 kernel is a real and easy
bug (a Python float literal or a float64 scalar argument promotes the arithmetic around it), costing
up to 64x throughput on consumer GPUs: every ``.f64`` instruction is reported.
"""
import re
import subprocess
from pathlib import Path

import numba
import pytest

if numba.config.ENABLE_CUDASIM:  # the simulator has no compiler; its tests are tests/cuda/sim_*.py
    pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator", allow_module_level=True)

from ptx_support import F16, F32, F64, I64, NONE, P1, P2, P3
from ptx_support import array_type as _array


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
        ("GN forward", group_norm._forward_kernel, (x3, I64, P1, P1, F32, x3, P2, P2, I64)),
        ("GN backward", group_norm._backward_kernel, (x3, x3, P2, P2, I64, P1, x3, P3)),
    ]


def _float32_only_cases():
    from tinynorm.kernels.cuda import _reduce, batch_norm
    return [
        ("sum of partials", _reduce.sum_partials_kernel, (P3, P2)),
        ("BN merge statistics", batch_norm._merge_stats_kernel, (P3, P1, P1)),
        ("BN merge backward sums", batch_norm._merge_reduce_kernel, (P3, P1, P1, P1)),
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


def _ptxas() -> Path:
    """The ptxas of the nvidia-cuda-nvcc package that numba-cuda's cu12 extra installs."""
    import nvidia.cuda_nvcc
    return Path(next(iter(nvidia.cuda_nvcc.__path__))) / "bin" / "ptxas"


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
            source = tmp_path / "kernel.ptx"
            source.write_text(ptx)
            report = subprocess.run([str(_ptxas()), "-arch=sm_90", "-v", str(source), "-o", str(tmp_path / "k.cubin")],
                                    capture_output=True, text=True, check=True).stderr
            where = f"{kind} per_lane={per_lane}: {report}"
            assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", report), where
            assert re.search(r"\b0 bytes stack frame", report), where
            assert int(re.search(r"Used (\d+) registers", report).group(1)) <= max_registers, where


def test_f64_pattern_catches_float64_arithmetic(compile_ptx):
    """The check above can fail: a kernel with a Python float literal compiles to float64 arithmetic."""
    from numba import cuda

    @cuda.jit
    def promotes(x):
        x[0] = x[0] * 0.5 + 1.0  # Python floats: the multiply-add runs in float64

    ptx = compile_ptx(promotes, (P1,))
    assert any("f64" in line for line in F64.findall(ptx))
