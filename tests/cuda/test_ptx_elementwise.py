"""Every elementwise CUDA kernel (tinynorm/kernels/cuda/elementwise.py, strided.py) compiles to PTX for
cc 9.0, and the float32 (and float16-storage) variants do no float64 arithmetic.

The map kernel is built per (operation, operand kinds), strided and flat (for C-order arrays); the
cases below cover both for every operation with array operands in float32 and float64, the
scalar-operand variants the backend uses (``x * 2``, ``1 - x``, ``sign``, ``clip``, ``where``, ``relu``,
fills), mixed inputs cast on load (bool mask times float32) and float16 storage computed in float32.
Needs NVVM (the cuda extra), not a GPU.
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


def _map_case(op_name, out_type, operands, op=None, flat=False):
    """(name, kernel, signature) of the map kernel of ``op`` (default: the operation ``op_name``) for
    ``operands``: (numba type, is scalar) per position, the type being both the argument's element type
    and the compute type it is cast to. ``flat``: the flat map kernel (C-order arrays) instead."""
    kinds, arguments, values = [], [], []
    for k in range(3):
        dtype, scalar = operands[k] if k < len(operands) else (BOOL, True)
        kinds.append((scalar, dtype))
        values.append(dtype if scalar else array_type(dtype, 1))
        arguments += [values[-1], I64, STRIDES]
    factory = ew.flat_map_kernel if flat else ew.map_kernel
    kernel = factory(op or getattr(ew, op_name), len(operands), tuple(kinds))
    if flat:
        signature = (array_type(out_type, 1), *values)
    else:
        signature = (array_type(out_type, 1), I64, STRIDES, STRIDES, I64, *arguments)
    shown = ", ".join(f"{'scalar ' if scalar else ''}{dtype}" for dtype, scalar in operands)
    return f"{'flat ' if flat else ''}{op_name}({shown}) -> {out_type}", kernel, signature


def _map_cases(dtype):
    """(op_name, out_type, operands, op) of every map kernel variant the backend uses for ``dtype``."""
    array, scalar = (dtype, False), (dtype, True)
    specs = [(name, dtype, [array], None) for name in UNARY]
    specs += [(name, dtype, [array, array], None) for name in BINARY]
    specs += [(name, dtype, [array, scalar], None) for name in BINARY]
    specs += [(name, dtype, [scalar, array], None) for name in ("subtract", "true_divide", "power")]
    specs += [(name, BOOL, [array, array], None) for name in COMPARISONS]
    specs += [(name, BOOL, [array, scalar], None) for name in COMPARISONS]
    specs += [
        ("sign", dtype, [array, scalar], None),
        ("clip", dtype, [array, scalar, scalar], None),
        ("clip", dtype, [array, array, array], None),
        ("where", dtype, [(BOOL, False), array, array], None),
        ("where", dtype, [(BOOL, False), array, scalar], None),
        ("identity", dtype, [scalar], None),  # fill
        ("multiply", dtype, [array, (BOOL, False)], None),  # gradient times a mask, cast on load
        ("relu", dtype, [array, scalar], None),
        ("relu_backward", dtype, [array, array, scalar], None),
    ]
    for approximate in ("none", "tanh"):  # the fused GELU, its constants typed like its operands
        forward, backward = ew.gelu_functions(dtype, approximate)
        specs += [(f"gelu[{approximate}]", dtype, [array], forward),
                  (f"gelu_backward[{approximate}]", dtype, [array, array], backward)]
    return specs


def _cases(dtype):
    """Every map kernel variant of ``dtype``, strided and flat, and the other elementwise kernels."""
    cases = [_map_case(*spec, flat=flat) for spec in _map_cases(dtype) for flat in (False, True)]
    cases += [
        ("arange", ew.arange_kernel(dtype), (array_type(dtype, 1), dtype, dtype)),
        ("copy_strided", strided._copy_kernel, (array_type(dtype, 1), array_type(dtype, 1), I64, STRIDES, STRIDES)),
    ]
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
    if name.startswith(("cos(", "flat cos(")):
        found = [line for line in found if not line.startswith(COSF_REDUCTION)]
    return found


def _identity_kinds(target):
    """The identity map's operand kinds: one array, cast to ``target`` on load."""
    return (False, target), (True, BOOL), (True, BOOL)


def _conversion_cases():
    """``astype`` and assignment: the identity map, the value cast on load to the output's type."""
    pairs = [(F32, BOOL), (I64, F16), (F64_TYPE, F16), (BOOL, F32), (F16, I64), (F32, I64), (F64_TYPE, F32)]
    strided = [(f"astype {source} -> {target}", ew.map_kernel(ew.identity, 1, _identity_kinds(target)),
                (array_type(target, 1), I64, STRIDES, STRIDES, I64, array_type(source, 1), I64, STRIDES,
                 BOOL, I64, STRIDES, BOOL, I64, STRIDES))
               for source, target in pairs]
    flat = [(f"flat astype {source} -> {target}", ew.flat_map_kernel(ew.identity, 1, _identity_kinds(target)),
             (array_type(target, 1), array_type(source, 1), BOOL, BOOL))
            for source, target in pairs]
    return strided + flat


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
