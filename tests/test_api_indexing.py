"""Selecting and writing by index against PyTorch: masked_select, argwhere, index_add, index_copy,
index_fill (and their in-place forms), diagonal, trace, tril_indices/triu_indices, searchsorted and
bucketize: values, dtypes, gradients with a random upstream gradient, errors, and float64 finite
differences.

Each test takes a ``device``; ``tests/cuda/sim_api_ops.py`` runs them on 'cuda' in the simulator.
"""
import numpy as np
import pytest
from api_compare import check

import tinynorm as tn
from tinynorm.autograd import gradcheck

X = [[1.5, -2.5, 3.25, 0.75], [0.5, 2.0, -1.75, 4.5], [9.0, -3.0, 0.25, 1.0]]
SOURCE = [[0.5, 1.0, -2.0, 3.0], [4.0, -0.25, 1.5, 2.5]]
INTS = [[3, -7, 0, 2], [2, 5, -4, 5], [1, 1, 8, -2]]


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


def test_masked_select_and_argwhere(device):
    check(lambda lib, make: (lib.masked_select(make(X, requires_grad=True), make(X) > 1),
                             make(X, requires_grad=True).masked_select(make([True, False, True, False])),
                             lib.masked_select(make(2.0), make([[True], [False]])), lib.argwhere(make(INTS)),
                             make([0.0, 1.5, 0.0]).argwhere(), lib.argwhere(make(3))), device)
    check(lambda lib, make: lib.masked_select(make(X), make(INTS)), device)  # the mask must be bool


@pytest.mark.parametrize("dim", [0, -2])
def test_index_add(dim, device):
    check(lambda lib, make: lib.index_add(make(X, requires_grad=True), dim, make([2, 0]),
                                          make(SOURCE, requires_grad=True)), device)
    check(lambda lib, make: make(X, requires_grad=True).index_add(dim, make([1, 1]), make(SOURCE, requires_grad=True),
                                                                  alpha=-0.5), device)
    check(lambda lib, make: make(INTS).index_add(1, make([3, 0, 3]), make([[1, 2, 3]] * 3), alpha=2), device)

    def in_place(lib, make):
        h = make(X, requires_grad=True) * 1.0
        return h.index_add_(dim, make([2, 0]), make(SOURCE, requires_grad=True)), h._version

    check(in_place, device)


def test_index_copy_and_fill(device):
    check(lambda lib, make: (lib.index_copy(make(X, requires_grad=True), 0, make([2, 0]),
                                            make(SOURCE, requires_grad=True)),
                             make(X, requires_grad=True).index_fill(1, make([3, 0]), -1.5),
                             lib.index_fill(make(INTS), 0, make([1]), 9),
                             make(X, requires_grad=True).index_fill(0, make(2), make(7.0, requires_grad=True))), device)

    def in_place(lib, make):
        h, g = make(X, requires_grad=True) * 1.0, make(X) * 1.0
        return h.index_copy_(1, make([1, 2]), make([[1.0, 2.0]] * 3)), g.index_fill_(1, make([0]), 0.5), h._version

    check(in_place, device)


@pytest.mark.parametrize("case", [
    lambda lib, make: lib.index_add(make(X), 0, make([0, 1]), make([[1.0, 2.0]])),  # wrong source shape
    lambda lib, make: lib.index_add(make(X), 0, make([0.0, 1.0]), make(SOURCE)),  # float index
    lambda lib, make: lib.index_add(make(X), 2, make([0, 1]), make(SOURCE)),  # dim out of range
    lambda lib, make: lib.index_copy(make(X), 0, make([0, 1]), make(X)),
    lambda lib, make: lib.index_fill(make(X), 0, make([0]), make([1.0, 2.0])),  # value not 0-d
])
def test_index_writes_refuse_what_pytorch_refuses(case, device):
    check(case, device)


def test_diagonal_and_trace(device):
    cube = np.arange(24.0).reshape(2, 3, 4).tolist()
    check(lambda lib, make: (lib.diagonal(make(X, requires_grad=True)), make(X, requires_grad=True).diagonal(1),
                             lib.diagonal(make(cube, requires_grad=True), -1, 0, 2),
                             make(cube, requires_grad=True).diagonal(offset=2, dim1=-1, dim2=1),
                             lib.diagonal(make(X), 7), lib.trace(make(X, requires_grad=True)), make(INTS).trace()),
          device)
    check(lambda lib, make: lib.diagonal(make(X), 0, 1, 1), device)
    check(lambda lib, make: lib.trace(make(cube)), device)


def test_triangle_indices(device):
    check(lambda lib, make: (lib.tril_indices(3, 4), lib.tril_indices(4, 3, 1), lib.triu_indices(3, 3, -1),
                             lib.triu_indices(2, 5, 2, dtype=lib.int32), lib.tril_indices(0, 3)), device)
    pairs = tn.triu_indices(4, 4, 1, device=device)
    assert pairs.device == tn.device(device)
    scores = tn.tensor(np.arange(16.0).reshape(4, 4), device=device)
    assert scores[pairs[0], pairs[1]].tolist() == [1.0, 2.0, 3.0, 6.0, 7.0, 11.0]


def test_searchsorted_and_bucketize(device):
    boundaries = [1.0, 3.0, 3.0, 5.0, 7.0]
    values = [[3.0, 6.0, 0.0], [9.0, 1.0, 5.0]]
    check(lambda lib, make: (lib.searchsorted(make(boundaries), make(values)),
                             lib.searchsorted(make(boundaries), make(values), right=True),
                             lib.searchsorted(make(boundaries), make(values), side="right", out_int32=True),
                             lib.searchsorted(make([[1, 3, 5], [2, 4, 6]]), make([[3, 6], [4, 1]])),
                             lib.searchsorted(make(boundaries), 4.0),
                             lib.searchsorted(make([5.0, 1.0, 3.0]), make([2.0, 4.0]), sorter=make([1, 2, 0])),
                             lib.bucketize(make(values), make(boundaries)),
                             lib.bucketize(make([1, 5, 9]), make([1, 3, 5, 7]), right=True),
                             lib.bucketize(make(values), make(boundaries), out_int32=True)), device)
    for bad in (lambda lib, make: lib.searchsorted(make([[1, 3]]), make([2])),
                lambda lib, make: lib.searchsorted(make([1, 3]), make([2]), side="middle"),
                lambda lib, make: lib.searchsorted(make([1, 3]), make([2]), right=True, side="left"),
                lambda lib, make: lib.bucketize(make([2]), make([[1, 3]]))):
        check(bad, device)


# ------------------------------------------------------------------------------ finite differences
def _leaf(values):
    return tn.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_index_writes_pass_gradcheck():
    index = tn.tensor([2, 0])
    assert gradcheck(lambda x, s: tn.index_add(x, 0, tn.tensor([1, 1]), s, alpha=0.5), (_leaf(X), _leaf(SOURCE)))
    assert gradcheck(lambda x, s: tn.index_copy(x, 0, index, s), (_leaf(X), _leaf(SOURCE)))
    assert gradcheck(lambda x, v: tn.index_fill(x, 1, index, v), (_leaf(X), _leaf(2.0)))


def test_selections_pass_gradcheck():
    x = _leaf(X)
    assert gradcheck(lambda t: tn.masked_select(t, tn.tensor(X) > 1), x)
    assert gradcheck(lambda t: tn.diagonal(t.reshape(3, 2, 2), 0, 0, 2), x)
    assert gradcheck(lambda t: tn.trace(t), x)
