"""Every operation of tinynorm/kernels/cuda/math.py (trigonometric and hyperbolic functions and their
inverses, exp/log variants, rounding, NaN/inf tests, remainders, floor division, bitwise logic) compiles
to PTX for cc 9.0 inside the strided map kernel, and the float32 variants do no float64
arithmetic. Needs NVVM (the cuda extra), not a GPU.
"""
import numba
import pytest

if numba.config.ENABLE_CUDASIM:  # the simulator has no compiler; its tests are tests/cuda/sim_*.py
    pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator", allow_module_level=True)

from ptx_support import BOOL, F32, F64_TYPE, I64
from test_ptx_elementwise import COSF_REDUCTION, _float64_lines, _map_case

from tinynorm.kernels.cuda import math as kmath

UNARY = ["sin", "tan", "log1p", "expm1", "log2", "arctan", "sinh", "cosh", "arcsinh"]
FACTORY_UNARY = ["exp2", "trunc", "floor", "ceil", "rint", "arcsin", "arccos", "arccosh", "arctanh"]
FACTORY_TESTS = ["isinf", "isfinite"]
BINARY = ["arctan2", "hypot"]
FACTORY_BINARY = ["fmod", "remainder", "floor_divide"]
INTEGER_BINARY = ["integer_floor_divide", "integer_remainder", "integer_fmod", "bitwise_and", "bitwise_or",
                  "bitwise_xor"]


def _float_cases(dtype):
    array = (dtype, False)
    functions = kmath.float_functions(dtype)
    specs = [(name, dtype, [array], getattr(kmath, name)) for name in UNARY]
    specs += [(name, dtype, [array], functions[name]) for name in FACTORY_UNARY]
    specs += [(name, BOOL, [array], functions[name]) for name in FACTORY_TESTS]
    specs += [("isnan", BOOL, [array], kmath.isnan)]
    specs += [(name, dtype, [array, array], getattr(kmath, name)) for name in BINARY]
    specs += [(name, dtype, [array, (dtype, True)], functions[name]) for name in FACTORY_BINARY]
    return [_map_case(*spec) for spec in specs]  # the strided map (test_ptx_elementwise.py covers the flat one)


def _integer_cases():
    array = (I64, False)
    specs = [(name, I64, [array, array], getattr(kmath, name)) for name in INTEGER_BINARY]
    specs += [("invert", I64, [array], kmath.invert), ("not_equal_bool", BOOL, [(BOOL, False)] * 2,
                                                        kmath.not_equal_bool)]
    return [_map_case(*spec) for spec in specs]


def test_float32_math_compiles_without_float64(compile_ptx):
    """sinf and tanf reduce huge arguments as cosf does (one float64 multiply, allowed for ``cos`` in
    test_ptx_elementwise.py): allowed for them, and nothing else."""
    problems = []
    for name, kernel, signature in _float_cases(F32):
        ptx = compile_ptx(kernel, signature)
        assert ".entry" in ptx, name
        found = _float64_lines(name, ptx)
        if name.startswith(("sin(", "tan(")):
            found = [line for line in found if not line.startswith(COSF_REDUCTION)]
        if found:
            problems.append(f"{name}: {len(found)} float64 instructions, e.g. {found[0]!r}")
    assert not problems, "\n".join(problems)


def test_float64_and_integer_math_compiles(compile_ptx):
    for name, kernel, signature in _float_cases(F64_TYPE) + _integer_cases():
        assert ".entry" in compile_ptx(kernel, signature), name
