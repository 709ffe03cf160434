"""The CUDA softmax and cross-entropy kernels compile to PTX for cc 9.0 (float32 and float64), and the
float32 kernels do no float64 arithmetic. Needs NVVM (the cuda extra), not a GPU; runs without the simulator."""
import numba
import numpy as np
import pytest

if numba.config.ENABLE_CUDASIM:  # the simulator has no compiler; its tests are tests/cuda/sim_*.py
    pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator", allow_module_level=True)

from ptx_support import BOOL, F32, F64, F64_TYPE, I64, array_type

from tinynorm.kernels.cuda import cross_entropy, softmax


@pytest.mark.parametrize("dtype, numba_type", [(np.float32, F32), (np.float64, F64_TYPE)])
def test_softmax_kernels_compile(compile_ptx, dtype, numba_type):
    rows = array_type(numba_type, 2)
    for kernel, signature in [(softmax.forward_kernel(np.dtype(dtype)), (rows, rows, BOOL, numba_type, I64)),
                              (softmax.backward_kernel(np.dtype(dtype)), (rows, rows, rows, BOOL, numba_type, I64))]:
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx
        assert "bar.sync" in ptx  # the block reductions
        if dtype == np.float32:
            assert not F64.findall(ptx), F64.findall(ptx)[:3]
        else:
            assert F64.findall(ptx)  # float64 data is computed in float64


@pytest.mark.parametrize("dtype, numba_type", [(np.float32, F32), (np.float64, F64_TYPE)])
def test_cross_entropy_kernels_compile(compile_ptx, dtype, numba_type):
    """Forward (block reductions) and backward; the smoothing constants are typed like the logits."""
    rows, row_values, target = array_type(numba_type, 2), array_type(numba_type, 1), array_type(I64, 1)
    for kernel, signature in [
        (cross_entropy.forward_kernel(np.dtype(dtype)),
         (rows, target, I64, numba_type, numba_type, row_values, row_values)),
        (cross_entropy.backward_kernel(np.dtype(dtype)),
         (row_values, rows, row_values, target, I64, numba_type, numba_type, numba_type, rows)),
    ]:
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx
        if dtype == np.float32:
            assert not F64.findall(ptx), F64.findall(ptx)[:3]
        else:
            assert F64.findall(ptx)
