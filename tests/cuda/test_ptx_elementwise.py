"""Every elementwise CUDA kernel (tinynorm/kernels/cuda/elementwise.py, strided.py) compiles to PTX for
cc 9.0, and the float32 (and float16-storage) variants do no float64 arithmetic.

The map kernel is built per (operation, operand kinds); the cases below cover every operation with
array operands in float32 and float64, the scalar-operand variants the backend uses (``x * 2``,
``1 - x``, ``sign``, ``clip``, ``where``, fills), mixed inputs cast on load (bool mask times float32)
and float16 storage computed in float32. Needs NVVM (the cuda extra), not a GPU.
"""
import numba
import pytest

if numba.config.ENABLE_CUDASIM:  # the simulator has no compiler; its tests are tests/cuda/sim_*.py
    pytest.skip("PTX compilation needs the real numba.cuda target, not the simulator", allow_module_level=True)

from ptx_support import BOOL, F16, F32, F64, F64_TYPE, I64, array_type, tuple_type

from tinynorm.kernels.cuda import elementwise as ew
from tinynorm.kernels.cuda import strided

NDIM = 2
STRIDES = tuple_type(NDIM)
UNARY = ["identity", "negative", "absolute", "square", "exp", "log", "sqrt", "tanh", "cos", "erf"]
BINARY = ["add", "subtract", "multiply", "true_divide", "power", "maximum", "minimum"]
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


def _map_case(op_name, out_type, operands, op=None):
    """(name, kernel, signature) of the map kernel of ``op`` (default: the operation ``op_name``) for
    ``operands``: (numba type, is scalar) per position, the type being both the argument's element type
    and the compute type it is cast to."""
    kinds, arguments = [], []
    for k in range(3):
        dtype, scalar = operands[k] if k < len(operands) else (BOOL, True)
        kinds.append((scalar, dtype))
        arguments += [dtype if scalar else array_type(dtype, 1), I64, STRIDES]
    kernel = ew.map_kernel(op or getattr(ew, op_name), len(operands), tuple(kinds))
    signature = (array_type(out_type, 1), I64, STRIDES, STRIDES, I64, *arguments)
    shown = ", ".join(f"{'scalar ' if scalar else ''}{dtype}" for dtype, scalar in operands)
    return f"{op_name}({shown}) -> {out_type}", kernel, signature


def _cases(dtype):
    array, scalar = (dtype, False), (dtype, True)
    cases = [_map_case(name, dtype, [array]) for name in UNARY]
    cases += [_map_case(name, dtype, [array, array]) for name in BINARY]
    cases += [_map_case(name, dtype, [array, scalar]) for name in BINARY]
    cases += [_map_case(name, dtype, [scalar, array]) for name in ("subtract", "true_divide", "power")]
    cases += [_map_case(name, BOOL, [array, array]) for name in COMPARISONS]
    cases += [_map_case(name, BOOL, [array, scalar]) for name in COMPARISONS]
    cases += [
        _map_case("sign", dtype, [array, scalar]),
        _map_case("clip", dtype, [array, scalar, scalar]),
        _map_case("clip", dtype, [array, array, array]),
        _map_case("where", dtype, [(BOOL, False), array, array]),
        _map_case("where", dtype, [(BOOL, False), array, scalar]),
        _map_case("identity", dtype, [scalar]),  # fill
        _map_case("multiply", dtype, [array, (BOOL, False)]),  # gradient times a mask, cast on load
        ("arange", ew.arange_kernel(dtype), (array_type(dtype, 1), dtype, dtype)),
        ("copy_strided", strided._copy_kernel, (array_type(dtype, 1), array_type(dtype, 1), I64, STRIDES, STRIDES)),
    ]
    for approximate in ("none", "tanh"):  # the fused GELU, its constants typed like its operands
        forward, backward = ew.gelu_functions(dtype, approximate)
        cases += [_map_case(f"gelu[{approximate}]", dtype, [array], forward),
                  _map_case(f"gelu_backward[{approximate}]", dtype, [array, array], backward)]
    return cases


def _float16_storage_cases():
    """float16 arrays compute in float32: loads cast up, stores round down."""
    half, single = (F16, False), (F32, True)
    return [
        ("add f16 in f32", ew.map_kernel(ew.add, 2, ((False, F32), (False, F32), (True, BOOL))),
         (array_type(F16, 1), I64, STRIDES, STRIDES, I64, array_type(F16, 1), I64, STRIDES,
          array_type(F16, 1), I64, STRIDES, BOOL, I64, STRIDES)),
        _map_case("identity", F16, [half]),
        _map_case("identity", F16, [single]),
    ]


# libdevice's cosf reduces huge arguments (|x| > ~1e5, Payne-Hanek) with one float64 multiply: a
# rarely taken branch of NVIDIA's own code, allowed for ``cos`` and nothing else.
COSF_REDUCTION = ("cvt.rn.f64.s64", "mul.f64", "cvt.rn.f32.f64", ".reg .f64")


def _float64_lines(name, ptx):
    found = [line.strip() for line in F64.findall(ptx)]
    if name.startswith("cos("):
        found = [line for line in found if not line.startswith(COSF_REDUCTION)]
    return found


def _conversion_cases():
    """``astype`` and assignment: the identity map, the value cast on load to the output's type."""
    pairs = [(F32, BOOL), (I64, F16), (F64_TYPE, F16), (BOOL, F32), (F16, I64), (F32, I64), (F64_TYPE, F32)]
    return [(f"astype {source} -> {target}", ew.map_kernel(ew.identity, 1, ((False, target), (True, BOOL), (True, BOOL))),
             (array_type(target, 1), I64, STRIDES, STRIDES, I64, array_type(source, 1), I64, STRIDES,
              BOOL, I64, STRIDES, BOOL, I64, STRIDES))
            for source, target in pairs]


def _compile_all(compile_ptx, cases):
    ptx = {}
    for name, kernel, signature in cases:
        ptx[name] = compile_ptx(kernel, signature)
        assert ".entry" in ptx[name], name
    return ptx


def test_float32_kernels_compile_without_float64(compile_ptx):
    problems = []
    for name, ptx in _compile_all(compile_ptx, _cases(F32) + _float16_storage_cases()).items():
        found = _float64_lines(name, ptx)
        if found:
            problems.append(f"{name}: {len(found)} float64 instructions, e.g. {found[0]!r}")
    assert not problems, "\n".join(problems)


def test_float64_and_int64_kernels_compile(compile_ptx):
    ptx = _compile_all(compile_ptx, _cases(F64_TYPE))
    assert any(F64.search(text) for text in ptx.values())
    _compile_all(compile_ptx, [_map_case(name, I64, [(I64, False), (I64, False)])
                               for name in ("add", "multiply", "maximum")]
                 + [_map_case(name, BOOL, [(BOOL, False), (BOOL, False)]) for name in ("logical_and", "logical_or")]
                 + [_map_case("logical_not", BOOL, [(BOOL, False)]),
                    ("arange int64", ew.arange_kernel(I64), (array_type(I64, 1), I64, I64))]
                 + _conversion_cases())
