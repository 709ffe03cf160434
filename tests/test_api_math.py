"""Trigonometric, hyperbolic and other elementwise functions against PyTorch: asin, acos, atan, atan2,
sinh, cosh, asinh, acosh, atanh, hypot, deg2rad, rad2deg (and the ``arc*`` aliases), logaddexp, xlogy,
sgn, clamp_min/clamp_max, addcmul/addcdiv, erfinv: values, dtypes, gradients with a random upstream gradient,
in-place forms, errors, and float64 finite differences.

Each test takes a ``device``; ``tests/cuda/sim_api_ops.py`` runs them on 'cuda' in the simulator.
"""
import numpy as np
import pytest
from api_compare import check

import tinynorm as tn
from tinynorm.autograd import gradcheck

X = [[1.5, -2.5, 3.25], [0.5, 2.0, -1.75]]
UNIT = [[0.5, -0.25, 0.9], [-0.75, 0.1, 0.0]]  # inside (-1, 1): asin, acos, atanh
ABOVE_ONE = [[1.5, 2.25, 4.0], [1.1, 3.0, 7.5]]  # acosh
OTHER = [[2.0, -1.5, 1.25], [-0.75, 3.0, 0.5]]
INTS = [[3, -7, 0], [2, 5, -4]]
INPUTS = {"asin": UNIT, "acos": UNIT, "atanh": UNIT, "erfinv": UNIT, "acosh": ABOVE_ONE, "arcsin": UNIT, "arccos": UNIT,
          "arctanh": UNIT, "arccosh": ABOVE_ONE}


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


UNARY = ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan", "arcsinh",
         "arccosh", "arctanh", "deg2rad", "rad2deg", "sgn"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_function_method_and_in_place(name, device):
    values = INPUTS.get(name, X)
    check(lambda lib, make: getattr(lib, name)(make(values, requires_grad=True)), device)
    check(lambda lib, make: getattr(make(values, dtype="float64", requires_grad=True), name)(), device)

    def in_place(lib, make):  # PyTorch has no derivative for the in-place inverse hyperbolic functions
        h = make(values, requires_grad=name.removeprefix("arc").removeprefix("a") not in ("sinh", "cosh", "tanh")
                 or name in ("sinh", "cosh")) * 1.0
        assert getattr(h, name + "_")() is h
        return h, h._version

    check(in_place, device)


@pytest.mark.parametrize("name", ["asin", "atan", "sinh", "cosh", "asinh", "deg2rad", "rad2deg", "sgn"])
def test_unary_of_integers_has_pytorchs_dtype(name, device):
    check(lambda lib, make: getattr(lib, name)(make(INTS)), device)


def test_out_of_domain_gives_nan_and_inf(device):
    check(lambda lib, make: (lib.asin(make([2.0, -1.0])), lib.acos(make([1.5, 1.0])), lib.acosh(make([0.5, 1.0])),
                             lib.atanh(make([1.0, -1.0, 2.0])), lib.cosh(make([100.0])),
                             lib.atan(make([float("inf")]))), device)


@pytest.mark.parametrize("name", ["atan2", "arctan2", "hypot", "logaddexp"])
def test_binary_functions(name, device):
    check(lambda lib, make: getattr(lib, name)(make(X, requires_grad=True), make(OTHER, requires_grad=True)), device)
    check(lambda lib, make: getattr(make(X, requires_grad=True), name)(make([2.0, -1.0, 0.5], requires_grad=True)),
          device)
    check(lambda lib, make: getattr(lib, name)(make(X, dtype="float64", requires_grad=True),
                                               make(OTHER, requires_grad=True)), device)
    check(lambda lib, make: getattr(lib, name)(make(X), 2.0), device)  # PyTorch: other must be a tensor
    check(lambda lib, make: getattr(lib, name)(make(INTS), make(INTS)), device)  # atan2: float; others: refused

    def in_place(lib, make):
        h = make(X, requires_grad=True) * 1.0
        return getattr(h, name + "_")(make(OTHER)) if hasattr(h, name + "_") else h

    check(in_place, device)


def test_atan2_quadrants_and_logaddexp_of_infinities(device):
    check(lambda lib, make: lib.atan2(make([0.0, -0.0, 1.0, -1.0, 0.0]), make([-1.0, -1.0, 0.0, 0.0, 0.0])), device)
    inf = float("inf")
    check(lambda lib, make: lib.logaddexp(make([inf, -inf, inf, 1e30, -1e30]), make([inf, -inf, 1.0, 1e30, 2.0])),
          device)
    check(lambda lib, make: lib.logaddexp(make([-inf, 1.0], requires_grad=True), make([-inf, 50.0],
                                                                                        requires_grad=True)), device)


def test_xlogy(device):
    nan = float("nan")
    check(lambda lib, make: lib.xlogy(make([0.0, 2.0, 0.0, 1.5, 0.0], requires_grad=True),
                                      make([0.0, 3.0, nan, 0.5, 2.0], requires_grad=True)), device)
    check(lambda lib, make: (lib.xlogy(make(X, requires_grad=True), 2.0), lib.xlogy(3.0, make(ABOVE_ONE)),
                             lib.xlogy(make(INTS), make([1, 2, 3])), make([0, 1]).xlogy(2)), device)

    def in_place(lib, make):
        h = make(ABOVE_ONE, requires_grad=True) * 1.0
        return h.xlogy_(make(ABOVE_ONE))

    check(in_place, device)


def test_clamp_min_and_max(device):
    check(lambda lib, make: (lib.clamp_min(make(X, requires_grad=True), 0.5), make(X, requires_grad=True).clamp_max(1),
                             lib.clamp_min(make(INTS), 1.5), make(INTS).clamp_max(2),
                             lib.clamp_max(make(X, requires_grad=True), make(OTHER, requires_grad=True))), device)


def test_addcmul_and_addcdiv(device):
    check(lambda lib, make: lib.addcmul(make(X, requires_grad=True), make(OTHER, requires_grad=True),
                                        make([1.0, -2.0, 0.5], requires_grad=True), value=0.5), device)
    check(lambda lib, make: make(X, requires_grad=True).addcdiv(make(OTHER, requires_grad=True),
                                                                make(X, requires_grad=True), value=-2), device)
    check(lambda lib, make: (lib.addcmul(make(INTS), make(INTS), make(INTS), value=2),
                             lib.addcmul(make(INTS), make(INTS), make(INTS), value=0.5),
                             lib.addcmul(make(INTS), make(X), make(INTS)),
                             lib.addcdiv(make(INTS), make(X), make(INTS))), device)
    check(lambda lib, make: lib.addcdiv(make(INTS), make(INTS), make([1, 2, 3])), device)

    def in_place(lib, make):  # the update rule of Adam-style optimizers written by hand
        param, avg, sq = make(X) * 1.0, make(OTHER), make(ABOVE_ONE)
        return param.addcdiv_(avg, sq.sqrt().add_(1e-8), value=-0.1), make(OTHER).addcmul_(make(X), make(X), value=0.01)

    check(in_place, device)


def test_erfinv(device):
    edges = [-1.0, -0.999999, -0.9, -1e-6, 0.0, 0.3, 0.99, 0.9999999, 1.0, 1.5, -2.0, float("nan")]
    check(lambda lib, make: (lib.erfinv(make(UNIT, requires_grad=True)), make(edges, dtype="float64").erfinv(),
                             lib.erfinv(make(edges)), lib.erfinv(make([0, 1, -1]))), device, rtol=2e-6)

    def in_place(lib, make):  # nn.init.trunc_normal_'s step: uniform in (2l-1, 2u-1), then erfinv_
        h = make(UNIT, requires_grad=True) * 0.5
        return h.erfinv_(), h._version

    check(in_place, device)
    uniform = np.random.default_rng(0).uniform(-1, 1, 200)
    check(lambda lib, make: lib.erfinv(make(uniform.tolist(), dtype="float64")), device, rtol=1e-10)


# ------------------------------------------------------------------------------ finite differences
def _leaf(values):
    return tn.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


@pytest.mark.parametrize("name", ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfinv"])
def test_unary_pass_gradcheck(name):
    assert gradcheck(lambda x: getattr(tn, name)(x), _leaf(INPUTS.get(name, X)))


@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "xlogy"])
def test_binary_pass_gradcheck(name):
    a, b = _leaf(X if name != "xlogy" else UNIT), _leaf(OTHER if name != "xlogy" else ABOVE_ONE)
    assert gradcheck(lambda x, y: getattr(tn, name)(x, y), (a, b))
    assert gradcheck(lambda x, y: getattr(tn, name)(x, y), (_leaf(X[0]), _leaf(ABOVE_ONE)))  # broadcast


def test_addcmul_addcdiv_pass_gradcheck():
    a, b, c = _leaf(X), _leaf(OTHER), _leaf(ABOVE_ONE)
    assert gradcheck(lambda x, y, z: tn.addcmul(x, y, z, value=0.3), (a, b, c))
    assert gradcheck(lambda x, y, z: tn.addcdiv(x, y, z, value=-1.5), (a, b, c))
