"""Every random-number and fused optimizer kernel compiles to PTX for cc 9.0, and the float32 and float16
variants do no float64 arithmetic (a Python float or float64 scalar argument would promote it).

Needs NVVM (the cuda extra), not a GPU; the results are checked by ``sim_random_optim.py`` in the
simulator. Run without ``NUMBA_ENABLE_CUDASIM``.
"""
import numba
import pytest

if numba.config.ENABLE_CUDASIM:  # the simulator has no compiler; its tests are tests/cuda/sim_*.py
    pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator", allow_module_level=True)

from ptx_support import types
from ptx_support import BOOL, F16, F32, F64, F64_TYPE, NONE, array_type, assert_fits_in_registers

U64 = types.uint64


def _random_cases():
    from tinynorm.kernels.cuda import random
    return [
        ("uniform float32", random._uniform_words_kernel, (array_type(F32, 1), U64, U64, U64, F32), True),
        ("uniform float16", random._uniform_words_kernel, (array_type(F16, 1), U64, U64, U64, F32), True),
        ("uniform float64", random._uniform_float64_kernel, (array_type(F64_TYPE, 1), U64, U64), False),
    ]


def _optim_cases():
    """Every compile-time variant: with or without the momentum buffer / amsgrad maximum, and no weight
    decay, Adam's L2 penalty or AdamW's decoupled decay; each state a tuple of the most tensors per launch."""
    from tinynorm.kernels.cuda import optim
    cases = []
    for dtype in (F32, F16, F64_TYPE):
        array = types.UniTuple(array_type(dtype, 1), optim.TENSORS_PER_LAUNCH)
        for state in (array, NONE):
            for weight_decay in (dtype, NONE):
                cases.append((f"SGD buffer={state} weight_decay={weight_decay} [{dtype}]", optim._sgd_kernel,
                              (array, array, state, dtype, weight_decay, dtype, dtype, BOOL, BOOL, BOOL),
                              dtype != F64_TYPE))
            for weight_decay, decay_factor in ((NONE, NONE), (dtype, NONE), (NONE, dtype)):
                cases.append((f"Adam max={state} l2={weight_decay} decoupled={decay_factor} [{dtype}]",
                              optim._adam_kernel,
                              (array, array, array, array, state) + (dtype,) * 7 + (weight_decay, decay_factor, BOOL),
                              dtype != F64_TYPE))
    return cases


def test_every_kernel_compiles_and_float32_kernels_stay_float32(compile_ptx):
    """One test over all 33 variants, reporting every offender at once."""
    problems = []
    for name, kernel, signature, single_precision in _random_cases() + _optim_cases():
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx, name
        if single_precision and F64.search(ptx):
            problems.append(f"{name}: {F64.findall(ptx)[:3]}")
    assert not problems, "float64 instructions in float32/float16 kernels:\n" + "\n".join(problems)



def test_optimizer_kernels_index_their_tuples_without_local_memory(compile_ptx, tmp_path):
    """The kernels pick tensor ``k`` of each tuple with a runtime index. ptxas must find no stack frame
    and no spills for the largest variants (Adam with amsgrad and SGD with momentum, 12 tensors each):
    a tuple copied to local memory would cost a trip through it for every tensor."""
    from tinynorm.kernels.cuda import optim
    arrays = types.UniTuple(array_type(F32, 1), optim.TENSORS_PER_LAUNCH)
    for name, kernel, signature in [
        ("Adam amsgrad", optim._adam_kernel, (arrays,) * 5 + (F32,) * 7 + (F32, NONE, BOOL)),
        ("SGD momentum", optim._sgd_kernel, (arrays,) * 3 + (F32, NONE, F32, F32, BOOL, BOOL, BOOL)),
    ]:
        assert_fits_in_registers(compile_ptx(kernel, signature), tmp_path, 64, name)
