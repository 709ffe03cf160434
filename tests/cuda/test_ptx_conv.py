"""Every convolution and pooling kernel compiles to PTX for cc 9.0, in float32 and float64, and the
float32 variants do no float64 arithmetic (a Python float literal in a kernel would promote it).

Needs NVVM (the cuda extra), not a GPU; skipped under the simulator, which has no compiler.
"""
import numba
import pytest

if numba.config.ENABLE_CUDASIM:  # the simulator's tests are tests/cuda/sim_conv.py
    pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator", allow_module_level=True)

from ptx_support import F32, F64, F64_TYPE, I64, array_type, types


def _cases(dtype):
    """(name, kernel, signature) of every kernel of kernels/cuda/conv.py and pool.py for ``dtype``."""
    from tinynorm.kernels.cuda import conv, pool
    a1, a2, a3, a4 = (array_type(dtype, ndim) for ndim in (1, 2, 3, 4))
    index4, flag = array_type(I64, 4), array_type(I64, 1)
    geometry = (I64,) * 6  # kh, kw, sh, sw, ph, pw
    return [
        ("im2col", conv._im2col_kernel, (a4, a3, *geometry, I64)),
        ("col2im", conv._col2im_kernel, (a3, a4, *geometry, I64, dtype)),
        ("add bias", conv._add_bias_kernel, (a3, a1)),
        ("sum over batches", conv._sum_batches_kernel, (a2, a1, dtype)),
        ("channel sums", conv._channel_sums_kernel(dtype), (a3, a1)),
        ("max pool", pool._max_pool_kernel, (a4, a4, index4, *geometry, dtype)),
        ("max pool backward", pool._max_pool_backward_kernel, (a4, index4, a4, dtype, flag)),
        ("avg pool", pool._avg_pool_kernel, (a4, a4, *geometry, dtype, dtype)),
        ("avg pool backward", pool._avg_pool_backward_kernel, (a4, a4, *geometry, dtype, dtype)),
    ]


@pytest.mark.parametrize("dtype", [F32, F64_TYPE], ids=["float32", "float64"])
def test_every_kernel_compiles(compile_ptx, dtype):
    """Each kernel compiles; float32 ones without a single float64 instruction (all offenders listed)."""
    problems = []
    for name, kernel, signature in _cases(dtype):
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx, name
        f64 = F64.findall(ptx) if dtype == F32 else []
        if f64:
            problems.append(f"{name}: {len(f64)} float64 instructions, e.g. {f64[0].strip()!r}")
    assert not problems, "\n".join(problems)


def test_max_pool_backward_accepts_int32_indices(compile_ptx):
    """The backward kernel compiles for any integer ``argmax`` dtype (the wrapper accepts them all)."""
    from tinynorm.kernels.cuda import pool
    a4 = array_type(F32, 4)
    ptx = compile_ptx(pool._max_pool_backward_kernel,
                      (a4, array_type(types.int32, 4), a4, F32, array_type(I64, 1)))
    assert not F64.findall(ptx)
