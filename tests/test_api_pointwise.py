"""Elementwise math against PyTorch: the functions and methods of ops/pointwise.py, division.py and
bitwise.py (values, dtypes, gradients with a random upstream gradient, in-place forms, operators,
errors), and float64 finite-difference checks of the new differentiable ops.

Each test takes a ``device``; ``tests/cuda/sim_api_ops.py`` runs them on 'cuda' in the simulator.
"""
import numpy as np
import pytest
from api_compare import check

import tinynorm as tn
from tinynorm.autograd import gradcheck

X = [[1.5, -2.5, 3.25], [0.5, 2.0, -1.75]]
POSITIVE = [[0.5, 1.5, 3.0], [0.25, 2.0, 4.5]]
INTS = [[3, -7, 0], [2, 5, -4]]
HALVES = [0.5, 1.5, 2.5, -0.5, -2.5, 1.2345, -0.4, 7.0]
SPECIAL = [float("nan"), float("inf"), -float("inf"), 1.5, -0.0]


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


UNARY = ["sin", "cos", "tan", "log1p", "expm1", "log2", "exp2", "erf", "reciprocal", "rsqrt", "square", "sign",
         "floor", "ceil", "trunc", "fix", "round", "frac", "abs", "neg", "exp", "log", "sqrt", "sigmoid", "tanh"]
NEEDS_POSITIVE = {"log1p", "log2", "rsqrt", "log", "sqrt"}


def _inputs(name):
    return POSITIVE if name in NEEDS_POSITIVE else X


@pytest.mark.parametrize("name", UNARY)
def test_unary_function_and_method(name, device):
    values = _inputs(name)
    check(lambda lib, make: getattr(lib, name)(make(values, requires_grad=True)), device)
    check(lambda lib, make: getattr(make(values, dtype="float64", requires_grad=True), name)(), device)


@pytest.mark.parametrize("name", [n for n in UNARY if n not in ("frac", "neg", "sigmoid", "tanh")])
def test_unary_of_integers_has_pytorchs_dtype(name, device):
    values = [[1, 2, 4], [3, 5, 8]] if name in NEEDS_POSITIVE else INTS
    check(lambda lib, make: getattr(lib, name)(make(values)), device)


@pytest.mark.parametrize("name", ["sin", "cos", "tan", "log1p", "expm1", "log2", "exp2", "erf", "reciprocal",
                                  "square", "sign", "floor", "ceil", "trunc", "fix", "round", "frac"])
def test_unary_in_place_is_recorded(name, device):
    def case(lib, make):
        leaf = make(_inputs(name), requires_grad=True)
        h = leaf * 1.0
        assert getattr(h, name + "_")() is h
        return h, h._version

    check(case, device)


def test_round_halves_to_even_and_decimals(device):
    check(lambda lib, make: lib.round(make(HALVES)), device)
    check(lambda lib, make: lib.round(make(HALVES, requires_grad=True), decimals=1), device)
    check(lambda lib, make: make([1234.5678, -25.0, 15.0], dtype="float64").round(decimals=-1), device)
    check(lambda lib, make: lib.round(make(INTS), decimals=2), device)


def test_sign_and_rounding_keep_bools_and_special_values(device):
    check(lambda lib, make: lib.sign(make([True, False])), device)
    for name in ("floor", "ceil", "trunc", "round", "sign", "frac"):
        check(lambda lib, make: getattr(lib, name)(make(SPECIAL)), device)
    check(lambda lib, make: lib.floor(make([1e20, -3e9, 2.0 ** 23 + 0.5], dtype="float64")), device)


def test_nan_and_inf_tests(device):
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf"):
        check(lambda lib, make: getattr(lib, name)(make(SPECIAL)), device)
        check(lambda lib, make: getattr(make(INTS), name)(), device)


def test_nan_to_num(device):
    check(lambda lib, make: lib.nan_to_num(make(SPECIAL, requires_grad=True)), device)
    check(lambda lib, make: make(SPECIAL, dtype="float64").nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0), device)
    check(lambda lib, make: lib.nan_to_num(make(INTS)), device)
    check(lambda lib, make: lib.nan_to_num(make(SPECIAL, dtype="float16")), device)

    def in_place(lib, make):
        h = make(SPECIAL, requires_grad=True) * 2.0
        return h.nan_to_num_(posinf=7.0)

    check(in_place, device)


@pytest.mark.parametrize("name", ["remainder", "fmod"])
def test_remainders(name, device):
    other = [[2.0, -1.5, 1.25], [-0.75, 3.0, 0.5]]
    check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), make(other, requires_grad=True)), device)
    check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), 1.5), device)
    check(lambda lib, make: getattr(make(X), name)(-2), device)
    check(lambda lib, make: getattr(lib, name)(make(INTS), 3), device)
    check(lambda lib, make: getattr(lib, name)(make(INTS), make([2, -3, 4])), device)
    check(lambda lib, make: getattr(lib, name)(make(INTS, dtype="int32"), -2), device)


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_rounding_modes(mode, device):
    other = [[2.0, -1.5, 1.25], [-0.75, 3.0, 0.5]]
    check(lambda lib, make: lib.div(make(X, requires_grad=True), make(other, requires_grad=True), rounding_mode=mode),
          device)
    check(lambda lib, make: lib.div(make(INTS), 3, rounding_mode=mode), device)
    check(lambda lib, make: make(INTS).div(make([-2, 4, 3]), rounding_mode=mode), device)

    def in_place(lib, make):
        h = make(X, dtype="float64")
        return h.div_(2.0, rounding_mode=mode)

    check(in_place, device)


def test_div_refuses_an_unknown_rounding_mode(device):
    check(lambda lib, make: lib.div(make(X), 2, rounding_mode="round"), device)


def test_floor_division_operator(device):
    check(lambda lib, make: make(X) // 2, device)
    check(lambda lib, make: make(X) // make([[2.0, -1.5, 0.0], [-0.75, 3.0, 0.5]]), device)
    check(lambda lib, make: make(INTS) // make([2, -3, 4]), device)
    check(lambda lib, make: 7 // make([2, -2, 3]), device)
    check(lambda lib, make: lib.floor_divide(make(INTS), -2), device)
    check(lambda lib, make: (make(X, requires_grad=True) // 2).requires_grad, device)


def test_floor_division_has_no_derivative(device):
    def case(lib, make):
        (make(X, requires_grad=True) // 2).sum().backward()

    assert "floor_divide" in check(case, device)


def test_modulo_operator(device):
    check(lambda lib, make: make(X, requires_grad=True) % 2, device)
    check(lambda lib, make: make(INTS) % make([2, -3, 4]), device)
    check(lambda lib, make: 5 % make([3, -3, 2]), device)
    check(lambda lib, make: 5.5 % make([3.0, -3.0, 2.0]), device)

    def number_modulo_tensor(lib, make):
        (5.5 % make([3.0, -3.0, 2.0], requires_grad=True)).sum().backward()

    assert "remainder" in check(number_modulo_tensor, device)


def test_integer_division_by_zero_raises(device):
    for case in (lambda lib, make: make(INTS) // 0, lambda lib, make: make(INTS) % make([1, 0, 2]),
                 lambda lib, make: lib.fmod(make(INTS), 0),
                 lambda lib, make: lib.div(make(INTS), 0, rounding_mode="trunc")):
        assert check(case, device) == "ZeroDivisionError"


def test_division_of_bools_is_refused(device):
    check(lambda lib, make: lib.remainder(make([True]), make([True])), device)


def test_floor_division_and_modulo_in_place(device):
    def case(lib, make):
        a, b = make(INTS), make(X, dtype="float64")
        a //= 2
        b %= 1.5
        c = make([7, 9])
        c.remainder_(4)
        return a, b, c

    check(case, device)


def test_lerp(device):
    end = [[2.0, 0.5, -1.0], [1.5, -2.0, 4.0]]
    check(lambda lib, make: lib.lerp(make(X, requires_grad=True), make(end, requires_grad=True), 0.3), device)
    check(lambda lib, make: lib.lerp(make(X, requires_grad=True), make(end, requires_grad=True), 0.75), device)
    weight = [[0.1, 0.9, -0.5], [1.5, 0.5, 0.49]]
    check(lambda lib, make: make(X, requires_grad=True).lerp(make(end, requires_grad=True),
                                                              make(weight, requires_grad=True)), device)
    check(lambda lib, make: lib.lerp(make(X, requires_grad=True), make(end), make([0.25, 0.5, 0.75])), device)

    def in_place(lib, make):
        h = make(X, requires_grad=True) * 1.0
        return h.lerp_(make(end, requires_grad=True), 0.6)

    check(in_place, device)


def test_lerp_refuses_integers_and_mixed_dtypes(device):
    check(lambda lib, make: lib.lerp(make(INTS), make(INTS), 0.5), device)
    check(lambda lib, make: lib.lerp(make(X), make(X, dtype="float64"), 0.5), device)


def test_float_power(device):
    check(lambda lib, make: lib.float_power(make(POSITIVE, requires_grad=True), 2), device)
    check(lambda lib, make: lib.float_power(make(INTS), make([2, 3, 1])), device)
    check(lambda lib, make: lib.float_power(make(POSITIVE, requires_grad=True), make([0.5, 2.0, -1.0])), device)
    check(lambda lib, make: make(POSITIVE, dtype="float64").float_power_(0.5), device)
    check(lambda lib, make: make(POSITIVE).float_power_(2), device)


def test_frac_of_integers_is_refused(device):
    check(lambda lib, make: lib.frac(make(INTS)), device)


BOOLS_A, BOOLS_B = [True, False, True, False], [True, True, False, False]


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
                                  "logical_xor"])
def test_binary_logic(name, device):
    check(lambda lib, make: getattr(lib, name)(make(BOOLS_A), make(BOOLS_B)), device)
    check(lambda lib, make: getattr(lib, name)(make([12, -7, 0, 5]), make([10, 3, 6, -1])), device)
    check(lambda lib, make: getattr(make([12, -7, 0, 5], dtype="int32"), name)(make([10, 3, 6, -1], dtype="int32")),
          device)
    check(lambda lib, make: getattr(lib, name)(make(BOOLS_A), make([1, 2, 0, 3])), device)


def test_logic_of_floats(device):
    check(lambda lib, make: lib.logical_and(make([0.0, 1.5, -2.0]), make([1.0, 0.0, 3.0])), device)
    check(lambda lib, make: lib.logical_not(make([0.0, 1.5, -2.0])), device)
    check(lambda lib, make: make([0, 3, -1]).logical_not(), device)
    check(lambda lib, make: lib.bitwise_and(make(X), make(X)), device)
    check(lambda lib, make: ~make(X), device)


def test_bitwise_operators(device):
    check(lambda lib, make: (make(BOOLS_A) & make(BOOLS_B), make(BOOLS_A) | make(BOOLS_B),
                             make(BOOLS_A) ^ make(BOOLS_B), ~make(BOOLS_A)), device)
    check(lambda lib, make: (make([12, -7, 5]) & 6, 3 | make([12, -7, 5]), make([12, -7, 5]) ^ make([1, 1, 1]),
                             ~make([12, -7, 5]), ~make([3, 250], dtype="uint8")), device)
    check(lambda lib, make: (make([True, False]) | 2, True & make([True, False])), device)
    check(lambda lib, make: lib.bitwise_not(make([True, False])), device)


def test_operators_refuse_what_is_not_a_tensor_number_or_array(device):
    for bad in (lambda lib, make: make(X) + None, lambda lib, make: make(X) * "a", lambda lib, make: make(X) - [1, 2],
                lambda lib, make: make(INTS) & None, lambda lib, make: make(X) < None, lambda lib, make: make(X) @ None,
                lambda lib, make: make(X) @ [1.0, 2.0, 3.0], lambda lib, make: lib.matmul(make(X), np.ones(3)),
                lambda lib, make: lib.mm(make(X), [[1.0]]), lambda lib, make: lib.dot(make([1.0]), None)):
        check(bad, device)
    check(lambda lib, make: (make(X) + np.float32(2), make(INTS) * np.int64(3), make(X) == None, make(X) != "a",
                             make(INTS) == [3, -7, 0]), device)


def test_clamp_promotes_and_differentiates_tensor_bounds(device):
    low, high = [0.5, 2.0, 0.0], [[1.0], [0.25]]
    check(lambda lib, make: (make(INTS).clamp(0.5), make(INTS).clamp(max=2.5), make(INTS).clamp(-1, 2),
                             make([True, False]).clamp(0), make(INTS).clamp(make([1.5, 0.0, 2.0]))), device)
    check(lambda lib, make: make(X, requires_grad=True).clamp(min=make(low, requires_grad=True)), device)
    check(lambda lib, make: lib.clamp(make(X, requires_grad=True), make(low, requires_grad=True),
                                      make(high, requires_grad=True)), device)
    check(lambda lib, make: make(X, requires_grad=True).clamp(max=make(1.0, requires_grad=True)), device)
    check(lambda lib, make: make(X).clamp(make(X, dtype="float64")), device)
    check(lambda lib, make: lib.clamp(make(X), -1.0, make([1.0, 1.0, -3.0])), device)
    check(lambda lib, make: make(X).clamp(), device)


def test_bitwise_in_place(device):
    def case(lib, make):
        a, b = make(BOOLS_A), make([12, -7, 5])
        a &= make(BOOLS_B)
        b |= 3
        b ^= make([1, 2, 4])
        c = make(BOOLS_B)
        c.logical_not_()
        d = make([1.5, 0.0])
        d.logical_and_(make([True, True]))
        return a, b, c, d

    check(case, device)


# ------------------------------------------------------------------------------ finite differences
def _leaf(values):
    return tn.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


@pytest.mark.parametrize("name", ["sin", "cos", "tan", "log1p", "expm1", "log2", "exp2", "erf"])
def test_new_functions_pass_gradcheck(name):
    values = np.array(_inputs(name)) * 0.4
    assert gradcheck(lambda x: getattr(tn, name)(x), _leaf(values))


@pytest.mark.parametrize("name", ["remainder", "fmod"])
def test_remainders_pass_gradcheck(name):
    a = _leaf([[1.3, -2.7, 3.1], [0.55, 2.2, -1.85]])
    b = _leaf([[0.7, -1.1, 1.35], [-0.8, 0.9, 0.6]])
    assert gradcheck(lambda x, y: getattr(tn, name)(x, y), (a, b))


def test_lerp_passes_gradcheck():
    a, b, w = _leaf(X), _leaf(POSITIVE), _leaf([[0.1, 0.9, -0.3], [0.7, 0.45, 1.2]])
    assert gradcheck(lambda x, y, z: tn.lerp(x, y, z), (a, b, w))
