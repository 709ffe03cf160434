"""Every reduction kernel (tinynorm/kernels/cuda/reductions.py) compiles to PTX for cc 9.0 with the
signatures the backend launches, and only float64 reductions compute in float64.

Needs NVVM (the cuda extra), not a GPU; run without ``NUMBA_ENABLE_CUDASIM``.
"""
import numba
import numpy as np
import pytest

if numba.config.ENABLE_CUDASIM:  # the simulator has no compiler; its tests are tests/cuda/sim_*.py
    pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator", allow_module_level=True)

from ptx_support import BOOL, F16, F32, F64, F64_TYPE, I64, NONE, array_type

from tinynorm.kernels.cuda import reductions

THREADS = reductions.BLOCK_THREADS
# dtype -> (accumulator, result dtype) of its sum
SUM_TYPES = {F16: (F32, F16), F32: (F32, F32), F64_TYPE: (F64_TYPE, F64_TYPE), I64: (I64, I64), BOOL: (I64, I64)}


def _sum_cases(dtype, accumulator, result, mean=True):
    """Row and column sums, means (a divisor) and the passes over partials (accumulator in) of
    ``dtype`` into ``result``."""
    acc = np.dtype(str(accumulator))
    x, out, partials = array_type(dtype, 2), array_type(result, 1), array_type(accumulator, 2)
    block, thread = reductions._sum_block_kernel(acc, THREADS), reductions._sum_thread_kernel(acc)
    column, out2 = reductions._column_sum_kernel(acc), array_type(result, 2)
    cases = [("sum, thread per row", thread, (x, NONE, out)),
             ("sum, block per segment", block, (x, NONE, I64, I64, out)),
             ("partial sums", block, (x, NONE, I64, I64, array_type(accumulator, 1))),
             ("sum of partials", thread, (partials, NONE, out)),
             ("column sums", column, (x, NONE, I64, out2)),
             ("partial column sums", column, (x, NONE, I64, partials)),
             ("column sums of partials", column, (partials, NONE, I64, out2))]
    if mean:
        cases += [("mean, thread per row", thread, (x, accumulator, out)),
                  ("mean, block per segment", block, (x, accumulator, I64, I64, out)),
                  ("column means", column, (x, accumulator, I64, out2))]
    return cases


def _extreme_cases(dtype):
    """amax/argmax and amin/argmin kernels, first pass and the pass over partials (with indices)."""
    compared = reductions.comparison_dtype(np.dtype(str(dtype)))
    x, values, index, indices = array_type(dtype, 2), array_type(dtype, 1), array_type(I64, 1), array_type(I64, 2)
    cases = []
    for largest in (True, False):
        thread = reductions._extreme_thread_kernel(largest, compared)
        block = reductions._extreme_block_kernel(largest, compared, THREADS)
        name = "max" if largest else "min"
        cases += [(f"a{name}, thread per row", thread, (x, NONE, values, NONE)),
                  (f"arg{name}, thread per row", thread, (x, NONE, NONE, index)),
                  (f"arg{name} of partials", thread, (x, indices, NONE, index)),
                  (f"a{name}, block per segment", block, (x, NONE, I64, I64, values, NONE)),
                  (f"arg{name} partials", block, (x, NONE, I64, I64, values, index)),
                  (f"arg{name}, block over partials", block, (x, indices, I64, I64, NONE, index))]
    return cases


@pytest.mark.parametrize("dtype", [F32, F16, I64, BOOL, F64_TYPE], ids=str)
def test_reduction_kernels_compile_without_needless_float64(compile_ptx, dtype):
    problems = []
    is_float = dtype in (F16, F32, F64_TYPE)  # integer means are float64 sums: the test below
    for name, kernel, signature in _sum_cases(dtype, *SUM_TYPES[dtype], mean=is_float) + _extreme_cases(dtype):
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx, name
        f64 = F64.findall(ptx)
        if dtype != F64_TYPE and f64:
            problems.append(f"{name}: {len(f64)} float64 instructions, e.g. {f64[0].strip()!r}")
        if dtype == F64_TYPE and not f64:
            problems.append(f"{name}: a float64 reduction without float64 instructions")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("dtype", [I64, BOOL], ids=str)
def test_integer_means_compile_to_float64_sums(compile_ptx, dtype):
    """numpy's mean of integers converts each value to float64 and adds in float64."""
    for name, kernel, signature in _sum_cases(dtype, F64_TYPE, F64_TYPE):
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx and F64.search(ptx), name
