"""The CUDA backend's array core, run in Numba's CUDA simulator against numpy: CudaArray operators,
views and indexing, elementwise functions, creation and shape functions.

Run by test_cuda_simulator.py in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (or directly:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_array.py``). numpy is the reference for
values *and* dtypes (NEP 50 promotion). Arrays stay small: the simulator runs one Python thread per
CUDA thread. The simulator evaluates ``math.exp`` & co. in Python floats, so those compare with a
tolerance; arithmetic on float32 values is exact against numpy.
"""
import math

import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

from tinynorm.backends import get_backend
from tinynorm.backends.cuda import CudaArray
from tinynorm.kernels.cuda.strided import collapse_dims

xp = get_backend("cuda")
rng = np.random.default_rng(0)
TOLERANCE = {np.float16: 1e-3, np.float32: 2e-6, np.float64: 1e-12}


def dev(a):
    return xp.from_numpy(np.asarray(a))


def host(a):
    assert isinstance(a, CudaArray), type(a)
    return xp.to_numpy(a)


def check(result, expected, exact=False):
    """``result`` (a CudaArray) has ``expected``'s dtype, shape and values."""
    expected = np.asarray(expected)
    got = host(result)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if exact or expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected)
    else:
        rtol = TOLERANCE[expected.dtype.type]
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol, equal_nan=True)


def sample(shape, dtype):
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(1, 5, shape).astype(dtype)
    return (rng.standard_normal(shape) + 0.1).astype(dtype)


# ----------------------------------------------------------------------------------- transfers
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.bool_])
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (3,), (2, 3)])
def test_host_round_trip(dtype, shape):
    a = sample(shape, dtype)
    check(dev(a), a, exact=True)


def test_to_numpy_of_views_and_asarray():
    a = sample((3, 4), np.float32)
    d = dev(a)
    check(d.T, a.T, exact=True)
    check(d[::-1, 1::2], a[::-1, 1::2], exact=True)
    check(xp.broadcast_to(d[:1], (2, 3, 4)), np.broadcast_to(a[:1], (2, 3, 4)), exact=True)
    assert xp.asarray(d) is d and xp.as_array(d) is d
    check(xp.asarray(d, dtype=np.float64), a.astype(np.float64), exact=True)
    check(xp.asarray([[1, 2], [3, 4]]), np.asarray([[1, 2], [3, 4]]))
    check(xp.as_array(2.5), np.asarray(2.5))
    with pytest.raises(TypeError, match="dtype"):
        xp.from_numpy(np.array(["a"]))


# ------------------------------------------------------------------------------------- operators
DTYPES = [np.float32, np.float64, np.int64, np.bool_]
ARITHMETIC = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
              "/": lambda a, b: a / b, "**": lambda a, b: a ** b}
COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
           ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _allowed(symbol, dtypes):
    """Leave out what numpy refuses or makes ill-defined: bool minus bool, powers of bools."""
    bools = sum(np.dtype(d) == np.bool_ for d in dtypes)
    if symbol == "-" and bools == 2:
        return False
    return not (symbol == "**" and bools)


# x / False and negative ** fractional give inf and NaN, with numpy's warnings, on both sides.
@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@pytest.mark.parametrize("symbol", list(ARITHMETIC) + list(COMPARE))
def test_binary_operators_match_numpy_dtypes_and_values(symbol):
    op = {**ARITHMETIC, **COMPARE}[symbol]
    for left in DTYPES:
        for right in DTYPES:
            if not _allowed(symbol, (left, right)):
                continue
            a, b = sample((2, 3), left), sample((3,), right)
            check(op(dev(a), dev(b)), op(a, b))


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@pytest.mark.parametrize("symbol", list(ARITHMETIC) + ["<", "=="])
def test_scalars_on_either_side_are_weak(symbol):
    op = {**ARITHMETIC, **COMPARE}[symbol]
    for dtype in (np.float32, np.int64, np.float16):
        a = sample((2, 3), dtype)
        for scalar in (2, 2.5, np.float64(0.5), np.float32(3.0), True):
            if symbol == "**" and dtype == np.int64 and not isinstance(scalar, (int, bool)):
                continue
            check(op(dev(a), scalar), op(a, scalar))
            check(op(scalar, dev(a)), op(scalar, a))


def test_float32_with_python_floats_computes_in_float32():
    a = sample((4,), np.float32)
    check(dev(a) * 2.5 + 0.1, a * 2.5 + 0.1, exact=True)
    check(dev(a) / 3, a / 3, exact=True)


def test_broadcasting_and_strided_operands():
    a = sample((4, 3), np.float32)
    b = sample((3, 1), np.float64)
    check(dev(a).T + dev(b), a.T + b)
    check(dev(a)[::-2, ::2] * dev(a)[1::2, :2], a[::-2, ::2] * a[1::2, :2])
    check(dev(np.float32(2.0)) - dev(a), np.float32(2.0) - a)  # 0-d array
    check(dev(np.zeros((0, 3), np.float32)) + dev(a[0]), np.zeros((0, 3), np.float32) + a[0])
    with pytest.raises(ValueError):
        dev(a) + dev(sample((4,), np.float32))


def test_flat_kernel_serves_c_order_views_only(monkeypatch):
    """map_strided launches the flat kernel only when every view is its storage in C order; views that
    are offset, transposed, broadcast or a part of ``out``'s storage take the strided kernel, and both
    give numpy's values (a wrong choice would read or write the wrong elements)."""
    from numba import types

    from tinynorm.kernels.cuda import elementwise as kernels

    array, padding = (False, types.float32), (True, types.boolean)
    flat = kernels.flat_map_kernel(kernels.add, 2, (array, array, padding))
    launched = []
    real_launch = kernels.launch
    monkeypatch.setattr(kernels, "launch", lambda kernel, *args: launched.append(kernel) or real_launch(kernel, *args))
    a, b = sample((4, 6), np.float32), sample((4, 6), np.float32)
    x, y = dev(a), dev(b)
    out = dev(np.zeros((6, 6), np.float32))
    expected_out = np.zeros((6, 6), np.float32)
    expected_out[:4] = a + b
    cases = [
        (lambda: x + y, a + b, True),
        (lambda: x[1:] + y[1:], a[1:] + b[1:], False),  # offset
        (lambda: x.T + y.T, a.T + b.T, False),  # transposed
        (lambda: x + y[0], a + b[0], False),  # broadcast
        (lambda: (xp.add(x, y, out=out[:4]), out)[1], expected_out, False),  # out is part of its storage
    ]
    for compute, expected, takes_flat in cases:
        launched.clear()
        check(compute(), expected)
        assert (launched == [flat]) == takes_flat, launched
    launched.clear()
    x += y  # in place, both whole: flat
    check(x, a + b)
    assert launched == [flat]


def test_unary_operators_and_bool_logic():
    a = sample((2, 3), np.float32)
    m, n = a > 0, a < 0.5
    check(-dev(a), -a)
    check(abs(dev(a)), abs(a))
    check(dev(m) & dev(n), m & n)
    check(dev(m) | dev(n), m | n)
    check(~dev(m), ~m)
    check(True & dev(m), True & m)
    with pytest.raises(TypeError, match="bool"):
        ~dev(a)
    with pytest.raises(TypeError, match="bool"):
        -dev(m)


def test_host_arrays_and_other_objects_are_refused():
    a = sample((3,), np.float32)
    d = dev(a)
    with pytest.raises(TypeError, match="device"):
        d + a
    with pytest.raises(TypeError, match="device"):
        a + d
    with pytest.raises(TypeError):
        d + "x"
    with pytest.raises(TypeError, match="implicitly"):
        np.asarray(d)
    check(d + np.asarray(2.0), a + np.asarray(2.0))  # a 0-d numpy array is a scalar


# -------------------------------------------------------------------------------------- in place
def test_in_place_operators_write_through_views():
    a, b = sample((3, 4), np.float32), sample((4,), np.float32)
    d = dev(a)
    view = d[:, 1:]
    view += dev(b[1:])
    view *= 2
    d[1] -= 1.5
    d[::2] /= dev(b)
    expected = a.copy()
    expected[:, 1:] += b[1:]
    expected[:, 1:] *= 2
    expected[1] -= 1.5
    expected[::2] /= b
    check(d, expected)


def test_in_place_with_overlap_reads_the_old_values():
    a = sample((6,), np.float64)
    d = dev(a)
    d[1:] += d[:-1]
    a[1:] += a[:-1].copy()
    check(d, a)
    m = sample((3, 3), np.float32)
    dm = dev(m)
    dm += dm.T
    check(dm, m + m.T)


def test_in_place_casting_rules():
    d = dev(np.arange(3))
    with pytest.raises(TypeError, match="cast"):
        d += 1.5
    f = dev(np.ones(3, np.float32))
    f -= dev(np.ones(3, np.float64))  # float64 result cast back, as numpy's same_kind
    check(f, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="broadcast"):
        f += dev(np.ones((2, 3), np.float32))


# ------------------------------------------------------------------------------ elementwise functions
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "abs", "sign", "cos", "square"])
def test_unary_functions(name):
    for dtype in (np.float32, np.float64, np.int64):
        a = abs(sample((2, 3), dtype)) if name in ("log", "sqrt") else sample((2, 3), dtype)
        check(getattr(xp, name)(dev(a)), getattr(np, name)(a))
    x = dev(np.array([-2.0, -0.0, 0.0, 3.0, np.nan], np.float32))
    if name in ("sign", "abs", "square", "tanh"):
        check(getattr(xp, name)(x), getattr(np, name)(host(x)))


def test_erf_matches_math_erf():
    a = sample((7,), np.float32)
    check(xp.erf(dev(a)), np.array([math.erf(v) for v in a], np.float32))
    check(xp.erf(dev(a.astype(np.float64))), np.array([math.erf(v) for v in a.astype(np.float64)]))


def test_maximum_minimum_propagate_nan_and_write_out():
    a = np.array([1.0, np.nan, 3.0, -1.0], np.float32)
    b = np.array([2.0, 0.0, np.nan, -2.0], np.float32)
    check(xp.maximum(dev(a), dev(b)), np.maximum(a, b))
    check(xp.minimum(dev(a), dev(b)), np.minimum(a, b))
    check(xp.maximum(dev(a), 0), np.maximum(a, 0))
    out = dev(a)
    assert xp.maximum(out, dev(b), out=out) is out
    check(out, np.maximum(a, b))


def test_comparison_functions_and_where():
    a, b = sample((2, 3), np.float32), sample((3,), np.float32)
    for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        check(getattr(xp, name)(dev(a), dev(b)), getattr(np, name)(a, b))
        check(getattr(xp, name)(dev(a), 0.1), getattr(np, name)(a, 0.1))
    cond = a > 0
    check(xp.where(dev(cond), dev(a), dev(b)), np.where(cond, a, b))
    check(xp.where(dev(cond), dev(a), 0), np.where(cond, a, 0))
    check(xp.where(dev(cond[0]), 1, dev(np.arange(6).reshape(2, 3))), np.where(cond[0], 1, np.arange(6).reshape(2, 3)))
    check(xp.where(dev(a), dev(a), dev(b.astype(np.float64))), np.where(a, a, b.astype(np.float64)))


def test_clip_with_open_ends_and_nan():
    a = np.array([-2.0, 0.5, 3.0, np.nan], np.float32)
    check(xp.clip(dev(a), 0, 1), np.clip(a, 0, 1))
    check(xp.clip(dev(a), None, 1), np.clip(a, None, 1))
    check(xp.clip(dev(a), -1.0, None), np.clip(a, -1.0, None))
    i = np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max])
    check(xp.clip(dev(i), None, 5), np.clip(i, None, 5))
    check(xp.clip(dev(i), -3, None), np.clip(i, -3, None))


def test_float16_computes_in_float32_and_rounds_once():
    a, b = sample((2, 3), np.float16), sample((2, 3), np.float16)
    check(dev(a) * dev(b) + dev(a), a * b + a, exact=True)
    check(xp.exp(dev(a)), np.exp(a))


# --------------------------------------------------------------------------------- astype, copy
def test_astype_and_copy():
    a = sample((2, 3), np.float32) * 3
    d = dev(a)
    for dtype in (np.float64, np.float16, np.int64, np.bool_):
        check(d.T.astype(dtype), a.T.astype(dtype))
    assert d.astype(np.float32, copy=False) is d
    c = d.T.copy()
    assert c.is_contiguous() and c.storage is not d.storage
    check(c, a.T, exact=True)
    check(xp.copy(d), a, exact=True)


def test_scalars_out_of_size_one_arrays():
    d = dev(np.array([[2.5]], np.float32))
    assert d.item() == 2.5 and float(d) == 2.5 and int(d) == 2 and bool(d)
    assert int(dev(np.arange(5))[3]) == 3
    with pytest.raises(ValueError, match="size 1"):
        dev(np.ones(2)).item()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(dev(np.ones(2)))
    assert "CudaArray(" in repr(d) and "float32" in repr(d)
    assert len(dev(np.ones((4, 2)))) == 4


# ------------------------------------------------------------------------------- views, indexing
INDICES = [1, -1, (1, 2), slice(None, None, -1), (slice(1, None), slice(None, None, 2)),
           (Ellipsis, 0), (None, 0, Ellipsis, None), (slice(-2, None), None, -1), (), Ellipsis,
           (slice(5, 1), 0), np.int64(2), (0, slice(None), slice(-1, 0, -2))]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_basic_indexing_makes_views(index):
    a = sample((3, 4, 5), np.float32)
    d = dev(a)
    view = d[index]
    assert view.storage is d.storage
    check(view, a[index], exact=True)


def test_basic_index_errors():
    d = dev(np.ones((2, 3)))
    with pytest.raises(IndexError, match="out of bounds"):
        d[2]
    with pytest.raises(IndexError, match="out of bounds"):
        d[0, -4]
    with pytest.raises(IndexError, match="too many"):
        d[0, 0, 0]
    with pytest.raises(IndexError, match="ellipsis"):
        d[..., ...]


@pytest.mark.parametrize("index", [0, (slice(None), 1), (slice(None, None, -1), slice(1, None)), Ellipsis,
                                   (None, 1)], ids=repr)
def test_setitem_with_basic_indices(index):
    a = sample((3, 4), np.float32)
    for value in (2.5, sample((4,), np.float64)[-a[index].shape[-1]:] if a[index].ndim else 1):
        expected, d = a.copy(), dev(a)
        expected[index] = value
        d[index] = value
        check(d, expected)
        d2 = dev(a)
        d2[index] = dev(np.asarray(value))
        check(d2, expected)


def test_setitem_overlapping_and_casting():
    a = np.arange(6)
    d = dev(a)
    d[1:] = d[:-1]
    a[1:] = a[:-1].copy()
    check(d, a)
    f = dev(np.zeros(3, np.int64))
    f[...] = dev(np.array([1.7, -2.2, 3.9]))  # assignment casts whatever the kinds, as numpy
    check(f, np.array([1, -2, 3]))


def test_transpose_reshape():
    a = sample((2, 3, 4), np.float32)
    d = dev(a)
    check(d.T, a.T, exact=True)
    check(d.transpose(1, 0, 2), a.transpose(1, 0, 2), exact=True)
    check(d.transpose((2, 0, 1)), a.transpose((2, 0, 1)), exact=True)
    check(d.transpose(-1, 0, 1), a.transpose(-1, 0, 1), exact=True)
    reshaped = d.reshape(6, -1)
    assert reshaped.storage is d.storage  # contiguous: a view
    check(reshaped, a.reshape(6, -1), exact=True)
    check(d.T.reshape(-1), a.T.reshape(-1), exact=True)  # not contiguous: a copy
    check(d.reshape((4, 6)), a.reshape((4, 6)), exact=True)
    check(dev(np.float32(3)).reshape(1, 1), np.float32(3).reshape(1, 1), exact=True)
    check(dev(np.zeros((0, 3))).reshape(-1, 3), np.zeros((0, 3)), exact=True)
    for bad in [(5, -1), (7,), (-1, -1), (-2, 12)]:
        with pytest.raises(ValueError, match="reshape"):
            d.reshape(bad)
    with pytest.raises(ValueError, match="axes"):
        d.transpose(1, 0)


# ------------------------------------------------------------------------------- shape functions
def test_shape_functions():
    a = sample((2, 3, 4), np.float32)
    d = dev(a)
    check(xp.reshape(d, (4, 6)), np.reshape(a, (4, 6)), exact=True)
    check(xp.transpose(d, (2, 0, 1)), np.transpose(a, (2, 0, 1)), exact=True)
    check(xp.swapaxes(d, -1, -2), np.swapaxes(a, -1, -2), exact=True)
    check(xp.moveaxis(d, 0, -1), np.moveaxis(a, 0, -1), exact=True)
    check(xp.moveaxis(d, (0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0)), exact=True)
    check(xp.expand_dims(d, 1), np.expand_dims(a, 1), exact=True)
    check(xp.expand_dims(d, (0, -1)), np.expand_dims(a, (0, -1)), exact=True)
    check(xp.broadcast_to(d[:, :1], (5, 2, 3, 4)), np.broadcast_to(a[:, :1], (5, 2, 3, 4)), exact=True)
    with pytest.raises(ValueError, match="broadcast"):
        xp.broadcast_to(d, (2, 3, 5))
    with pytest.raises(ValueError, match="broadcast"):
        xp.broadcast_to(d, (3, 4))
    with pytest.raises(np.exceptions.AxisError):
        xp.swapaxes(d, 0, 3)


def test_concatenate_and_stack():
    a, b = sample((2, 3), np.float32), sample((2, 1), np.float64)
    check(xp.concatenate([dev(a), dev(b)], axis=1), np.concatenate([a, b], axis=1))
    check(xp.concatenate([dev(a).T, dev(a)[:, ::-1].T], axis=0), np.concatenate([a.T, a[:, ::-1].T], axis=0))
    check(xp.concatenate([dev(a), dev(a)], axis=-1), np.concatenate([a, a], axis=-1))
    check(xp.stack([dev(a), dev(a) * 2], axis=1), np.stack([a, a * 2], axis=1))
    check(xp.stack([dev(a[0]), dev(a[1])], axis=-1), np.stack([a[0], a[1]], axis=-1))
    with pytest.raises(ValueError, match="axis"):
        xp.concatenate([dev(a), dev(b)], axis=0)
    with pytest.raises(ValueError, match="zero-dimensional"):
        xp.concatenate([dev(np.float32(1))])
    with pytest.raises(ValueError, match="same shape"):
        xp.stack([dev(a), dev(b)])


# --------------------------------------------------------------------------------------- creation
def test_creation_functions():
    check(xp.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32))
    check(xp.zeros(4), np.zeros(4))
    check(xp.ones((2,), dtype=np.int64), np.ones((2,), dtype=np.int64))
    check(xp.full((2, 2), 2.5, dtype=np.float32), np.full((2, 2), 2.5, dtype=np.float32))
    check(xp.full((3,), 7), np.full((3,), 7))
    check(xp.full((), True), np.full((), True))
    d = dev(sample((2, 3), np.float32))
    check(xp.zeros_like(d), np.zeros((2, 3), np.float32))
    check(xp.ones_like(d, dtype=np.float64), np.ones((2, 3)))
    assert xp.empty((2, 3)).shape == (2, 3) and xp.empty((0, 2)).size == 0
    check(xp.arange(5), np.arange(5))
    check(xp.arange(2, 11, 3), np.arange(2, 11, 3))
    check(xp.arange(5, 0, -2), np.arange(5, 0, -2))
    check(xp.arange(0.5, 2.0, 0.25), np.arange(0.5, 2.0, 0.25))
    check(xp.arange(4, dtype=np.float32), np.arange(4, dtype=np.float32))
    check(xp.arange(0), np.arange(0))
    assert xp.finfo(np.float32).eps == np.finfo(np.float32).eps
    with pytest.raises(ValueError, match="negative"):
        xp.zeros((2, -1))
    with pytest.raises(ValueError, match="step"):
        xp.arange(0, 3, 0)


# ------------------------------------------------------------------------------------- interfaces
def test_cuda_array_interface():
    from tinynorm.backends.cuda.runtime import memory

    assert not hasattr(dev(np.ones(3, np.float32)), "__cuda_array_interface__")  # simulator: host memory
    a = CudaArray(memory.foreign(4096, 12, np.dtype(np.float32), None), (3, 4))  # a storage with an address
    interface = a.__cuda_array_interface__
    assert interface["version"] == 3 and interface["shape"] == (3, 4) and interface["typestr"] == "<f4"
    assert interface["data"] == (4096, False) and interface["strides"] is None and interface["stream"] is None
    view = a.T[1:]
    interface = view.__cuda_array_interface__
    assert interface["shape"] == (3, 3) and interface["strides"] == (4, 16) and interface["data"][0] == 4096 + 4


def test_collapse_dims():
    assert collapse_dims((2, 3, 4), [(12, 4, 1), (0, 0, 1)]) == ((6, 4), [(4, 1), (0, 1)])
    assert collapse_dims((2, 3, 4), [(12, 4, 1), (12, 4, 1)]) == ((24,), [(1,), (1,)])
    assert collapse_dims((1, 1), [(5, 7)]) == ((1,), [(0,)])
    assert collapse_dims((3, 1, 2), [(1, 9, 3)]) == ((3, 2), [(1, 3)])
