"""Comparisons and selection against PyTorch: eq/ne/lt/le/gt/ge, isclose/allclose/equal, where (both
forms), nonzero, masked_fill, gather, scatter, scatter_add, index_select, take_along_dim (values,
dtypes, gradients, in-place forms, errors), and float64 checks of scatter_add's gradient.
"""
import numpy as np
import pytest
from api_compare import check

import tinynorm as tn
from tinynorm.autograd import gradcheck

X = [[1.5, -2.5, 3.25], [0.5, 2.0, -1.75]]
Y = [[1.5, 0.5, 3.25], [-0.5, 2.5, -1.75]]
INDEX = [[2, 0], [1, 1]]
SOURCE = [[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]]
SMALL_SOURCE = [[10.0, 20.0], [40.0, 50.0]]  # the index's shape: PyTorch's backward needs it when src requires grad


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
                                  "less_equal", "not_equal"])
def test_comparisons(name, device):
    check(lambda lib, make: getattr(lib, name)(make(X), make(Y)), device)
    check(lambda lib, make: getattr(make(X), name)(1.5), device)
    check(lambda lib, make: getattr(lib, name)(make([[3, -7], [2, 0]]), 2.5), device)
    check(lambda lib, make: getattr(lib, name)(make(X), make([0.5, 2.0, -1.75])), device)

    def in_place(lib, make):
        x = make(X)
        return getattr(x, name + "_")(make(Y)), x.dtype

    check(in_place, device)


def test_comparison_operators_with_numbers_on_either_side(device):
    check(lambda lib, make: (make(X) < 1, 1 < make(X), make(X) == 2.0, 2.0 != make(X), make(X) >= make(Y)), device)


def test_isclose_allclose_equal(device):
    a = [1.0, float("nan"), float("inf"), -float("inf"), 1e-9, 100.0]
    b = [1.0 + 1e-7, float("nan"), float("inf"), float("inf"), 0.0, 100.001]
    check(lambda lib, make: lib.isclose(make(a), make(b)), device)
    check(lambda lib, make: lib.isclose(make(a), make(b), equal_nan=True), device)
    check(lambda lib, make: make(a).isclose(make(b), rtol=1e-4, atol=1e-3), device)
    check(lambda lib, make: lib.isclose(make([1, 5, 9]), make([2, 5, 7]), atol=1), device)
    check(lambda lib, make: lib.isclose(make([1, 5]), make([1, 6]), rtol=0, atol=0), device)
    check(lambda lib, make: (lib.allclose(make(X), make(X) + 1e-7), lib.allclose(make(X), make(Y)),
                             make(a).allclose(make(a), equal_nan=True)), device)
    check(lambda lib, make: (lib.equal(make(X), make(X)), lib.equal(make(X), make(Y)), lib.equal(make(X), make(X)[:1]),
                             make([1, 2]).equal(make([1.0, 2.0]))), device)
    check(lambda lib, make: lib.allclose(make(X), make(X)[:1]), device)


def test_isclose_refuses_mixed_dtypes_and_negative_tolerances(device):
    check(lambda lib, make: lib.isclose(make(X), make(X, dtype="float64")), device)
    check(lambda lib, make: lib.allclose(make(X), make(X), rtol=-1.0), device)


def test_where(device):
    check(lambda lib, make: lib.where(make(X) > 0, make(X, requires_grad=True), make(Y, requires_grad=True)), device)
    check(lambda lib, make: make(X, requires_grad=True).where(make(X) > 0, make(Y, requires_grad=True)), device)
    check(lambda lib, make: lib.where(make(X) > 0, make(X, requires_grad=True), 0.0), device)
    check(lambda lib, make: (lib.where(make(X) > 0, 1.0, 0.0), lib.where(make(X) > 0, 1, 0),
                             lib.where(make(X) > 0, 2, 0.5), lib.where(make(X) > 0, make([[1, 2, 3]]), 2.5)), device)
    check(lambda lib, make: lib.where(make(X) > 0), device)
    check(lambda lib, make: lib.where(make([[0, 3], [2, 0]])), device)


def test_nonzero(device):
    values = [[0, 3, 0], [2, 0, -1]]
    check(lambda lib, make: lib.nonzero(make(values)), device)
    check(lambda lib, make: lib.nonzero(make(values), as_tuple=True), device)
    check(lambda lib, make: make(X).nonzero(), device)
    check(lambda lib, make: lib.nonzero(make([False, False])), device)
    check(lambda lib, make: lib.nonzero(make(3)), device)
    check(lambda lib, make: lib.nonzero(make(3), as_tuple=True), device)
    check(lambda lib, make: lib.nonzero(make(0), as_tuple=True), device)

    def index_with_it(lib, make):
        x = make(X, requires_grad=True)
        return x[lib.nonzero(x > 0, as_tuple=True)]

    check(index_with_it, device)


def test_masked_fill(device):
    check(lambda lib, make: lib.masked_fill(make(X, requires_grad=True), make(X) > 0, 0.0), device)
    check(lambda lib, make: make(X, requires_grad=True).masked_fill(make([True, False, True]),
                                                                     make(-2.0, requires_grad=True)), device)
    check(lambda lib, make: make([[3, -7], [2, 0]]).masked_fill(make([[True, False], [False, True]]), 9), device)
    check(lambda lib, make: make(X).masked_fill(make(X) > 0, make([1.0])), device)
    check(lambda lib, make: make(X).masked_fill(make([[1, 0, 1], [0, 0, 1]]), 1.0), device)


def test_gather(device):
    check(lambda lib, make: lib.gather(make(X, requires_grad=True), 1, make(INDEX)), device)
    check(lambda lib, make: make(X, requires_grad=True).gather(0, make([[1, 0, 1]])), device)
    check(lambda lib, make: lib.gather(make(X, requires_grad=True), 1, make([[0, 0, 0, 0]])), device)
    check(lambda lib, make: lib.gather(make(X, requires_grad=True), -1, make([[2, 2], [0, 1]], dtype="int32")), device)
    check(lambda lib, make: lib.gather(make([[3, -7], [2, 0]]), 0, make([[1, 1]])), device)


def test_gather_refuses_bad_indices(device):
    for index, dtype in (([[3]], None), ([[-1]], None), ([[0]] * 3, None), ([0], None), ([[0.0]], None),
                         ([[0]], "int16")):
        check(lambda lib, make: lib.gather(make(X), 1, make(index, dtype=dtype)), device)
    check(lambda lib, make: lib.gather(make(X), 2, make(INDEX)), device)


def test_scatter(device):
    check(lambda lib, make: lib.scatter(make(X, requires_grad=True), 1, make(INDEX),
                                        make(SMALL_SOURCE, requires_grad=True)), device)
    check(lambda lib, make: lib.scatter(make(X, requires_grad=True), 1, make(INDEX), make(SOURCE)), device)
    check(lambda lib, make: make(X, requires_grad=True).scatter(0, make([[1, 0, 1]]), make(SOURCE)), device)
    check(lambda lib, make: make(X, requires_grad=True).scatter(1, make(INDEX), 7.0), device)
    check(lambda lib, make: lib.scatter(make(X, requires_grad=True), 1, make(INDEX), value=-1.0), device)
    check(lambda lib, make: lib.scatter(make([[3, -7], [2, 0]]), 0, make([[1, 0]]), make([[5, 6]])), device)


def test_scatter_refuses_bad_arguments(device):
    check(lambda lib, make: lib.scatter(make(X), 1, make(INDEX), make(SOURCE, dtype="float64")), device)
    check(lambda lib, make: lib.scatter(make(X), 1, make(INDEX), make([[1.0]])), device)
    check(lambda lib, make: lib.scatter(make(X), 1, make([[3, 0]]), make(SOURCE)), device)


def test_scatter_with_reduce_add(device):
    check(lambda lib, make: lib.scatter(make(X), 1, make(INDEX), make(SOURCE), reduce="add"), device)


def test_scatter_add(device):
    repeated = [[0, 0, 2], [1, 1, 1]]
    check(lambda lib, make: lib.scatter_add(make(X, requires_grad=True), 1, make(repeated),
                                            make(SOURCE, requires_grad=True)), device)
    check(lambda lib, make: make(X, requires_grad=True).scatter_add(0, make([[1, 1, 0]]),
                                                                     make([[1.0, 2.0, 3.0]], requires_grad=True)),
          device)
    check(lambda lib, make: make(X, requires_grad=True).scatter_add(0, make([[1, 1, 0]]), make(SOURCE)), device)
    check(lambda lib, make: lib.scatter_add(make([0, 0, 0, 0]), 0, make([3, 1, 3]), make([5, 6, 7])), device)


def test_scatter_in_place(device):
    def case(lib, make):
        h = make(X, requires_grad=True) * 1.0
        h.scatter_(1, make(INDEX), make(SMALL_SOURCE, requires_grad=True))
        g = make(X, requires_grad=True) * 1.0
        g.scatter_add_(1, make([[0, 0, 2], [1, 1, 1]]), make(SOURCE, requires_grad=True))
        counts = make([0, 0, 0])
        counts.scatter_add_(0, make([2, 2, 0]), make([1, 1, 1]))
        return h, g, counts

    check(case, device)


def test_index_select(device):
    check(lambda lib, make: lib.index_select(make(X, requires_grad=True), 1, make([2, 0, 2])), device)
    check(lambda lib, make: make(X, requires_grad=True).index_select(0, make([1, 1, 0], dtype="int32")), device)
    check(lambda lib, make: lib.index_select(make(X), 1, make(2)), device)
    check(lambda lib, make: lib.index_select(make(X), 0, make([], dtype="int64")), device)
    for index, dtype in (([[2]], None), ([5], None), ([-1], None), ([1.0], None)):
        check(lambda lib, make: lib.index_select(make(X), 1, make(index, dtype=dtype)), device)


def test_take_along_dim(device):
    order = [[2, 0, 1], [1, 2, 0]]
    check(lambda lib, make: lib.take_along_dim(make(X, requires_grad=True), make(order), 1), device)
    check(lambda lib, make: lib.take_along_dim(make(X, requires_grad=True), make([[0], [2]]), dim=1), device)
    check(lambda lib, make: make(X, requires_grad=True).take_along_dim(make([[0, 1, 1]]), 0), device)
    check(lambda lib, make: lib.take_along_dim(make(X, requires_grad=True), make([5, 0, 3])), device)
    check(lambda lib, make: lib.take_along_dim(make(X), make([0, 1]), 1), device)

    def with_argsort(lib, make):
        x = make(X, requires_grad=True)
        return lib.take_along_dim(x, x.argsort(dim=1), dim=1)

    check(with_argsort, device)


# ------------------------------------------------------------------------------ finite differences
def test_gather_and_scatters_pass_gradcheck():
    x = tn.tensor(np.array(X, dtype=np.float64), requires_grad=True)
    src = tn.tensor(np.array(SOURCE, dtype=np.float64) / 10, requires_grad=True)
    repeated = tn.tensor([[0, 0, 2], [1, 1, 1]])
    assert gradcheck(lambda a, b: tn.scatter_add(a, 1, repeated, b), (x, src))
    distinct = tn.tensor([[2, 0, 1], [1, 2, 0]])  # a repeated position would be written twice, one value lost
    assert gradcheck(lambda a, b: tn.scatter(a, 1, distinct, b), (x, src))
    assert gradcheck(lambda a: tn.gather(a, 1, tn.tensor([[2, 2, 0], [1, 0, 1]])), x)
