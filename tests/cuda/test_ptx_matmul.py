"""The GEMM kernel compiles to PTX for an H100/H200 (cc 9.0) for every accumulator and the operand
dtypes that use it; float16/float32 products do only float32 arithmetic, and ptxas keeps the
per-thread tile of sums in registers (no spills, no stack frame).

This needs NVVM (``pip install -e ".[cuda]"``), not a GPU. The simulator tests are sim_matmul.py.
"""

import numba
import numpy as np
import pytest

if numba.config.ENABLE_CUDASIM:  # the simulator has no compiler
    pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator", allow_module_level=True)

from ptx_support import BOOL, F16, F32, F64, F64_TYPE, I64, NONE, array_type, assert_fits_in_registers, tuple_type

# Measured on sm_90: 96 registers for float32 and float16, 124 with 3 batch dims; at most 128 lets two
# 256-thread blocks share an SM.
MAX_REGISTERS = 128


def _signature(a_dtype, b_dtype, out_dtype, batch_dims: int = 1, bias: bool = False) -> tuple:
    """``kernel(a, a_strides, b, b_strides, batch_shape, inner, bias, out)`` for flat operands."""
    strides = tuple_type(batch_dims + 2)
    return (array_type(a_dtype, 1), strides, array_type(b_dtype, 1), strides, tuple_type(batch_dims), I64,
            array_type(out_dtype, 1) if bias else NONE, array_type(out_dtype, 3))


def _kernel(accumulator):
    from tinynorm.kernels.cuda.matmul import gemm_kernel
    return gemm_kernel(np.dtype(accumulator))


# (name, accumulator, signature, float32 only)
CASES = [
    ("float32", np.float32, _signature(F32, F32, F32), True),
    ("float32, 3 batch dims", np.float32, _signature(F32, F32, F32, batch_dims=3), True),
    ("float16", np.float32, _signature(F16, F16, F16), True),
    ("float32 + bias", np.float32, _signature(F32, F32, F32, bias=True), True),
    ("float16 + bias", np.float32, _signature(F16, F16, F16, bias=True), True),
    ("float64", np.float64, _signature(F64_TYPE, F64_TYPE, F64_TYPE), False),
    ("float32 @ float64", np.float64, _signature(F32, F64_TYPE, F64_TYPE), False),
    ("int64", np.int64, _signature(I64, I64, I64), True),
    ("bool", np.int64, _signature(BOOL, BOOL, BOOL), True),
]


@pytest.mark.parametrize("name, accumulator, signature, float32_only", CASES, ids=[case[0] for case in CASES])
def test_gemm_compiles(compile_ptx, name, accumulator, signature, float32_only):
    ptx = compile_ptx(_kernel(accumulator), signature)
    assert ".entry" in ptx
    if float32_only:
        f64 = F64.findall(ptx)
        assert not f64, f"{name}: {len(f64)} float64 instructions, e.g. {f64[0].strip()!r}"


@pytest.mark.parametrize("name, signature", [("float32", _signature(F32, F32, F32)),
                                             ("float16", _signature(F16, F16, F16)),
                                             ("float32 + bias", _signature(F32, F32, F32, bias=True))])
def test_sums_stay_in_registers(compile_ptx, tmp_path, name, signature):
    """ptxas (assembling for sm_90, as the driver would) reports no spills and no stack frame."""
    assert_fits_in_registers(compile_ptx(_kernel(np.float32), signature), tmp_path, MAX_REGISTERS, name)
