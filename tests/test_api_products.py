"""Windows, turns, products and norms against PyTorch: ``unfold``, ``rot90``, ``cross``, ``tensordot``,
``kron``, ``msort``, ``split_with_sizes``, ``tinynorm.linalg``'s norms, the legacy ``Tensor.new`` and
``set_float32_matmul_precision``: values, dtypes, gradients with a random upstream gradient,
errors, and float64 finite differences.

Each test takes a ``device``; ``tests/cuda/sim_api_ops.py`` runs them on 'cuda' in the simulator.
"""
import warnings

import numpy as np
import pytest
from api_compare import check, torch

import tinynorm as tn
from tinynorm.autograd import gradcheck

X = [[1.5, -2.5, 3.25, 0.75], [0.5, 2.0, -1.75, 4.5], [9.0, -3.0, 0.25, 1.0]]
V = [[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]]
W = [[0.5, 1.5, -2.0], [-1.0, 2.0, 4.0]]
CUBE = np.arange(24.0).reshape(2, 3, 4).tolist()


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


def test_unfold(device):
    check(lambda lib, make: (make(X, requires_grad=True).unfold(1, 2, 1), make(X, requires_grad=True).unfold(0, 2, 1),
                             make(CUBE, requires_grad=True).unfold(-1, 3, 2), make(X).unfold(1, 4, 3),
                             make(X).unfold(1, 0, 1), make(3.0).unfold(0, 1, 1)), device)
    for bad in (lambda lib, make: make(X).unfold(1, 5, 1), lambda lib, make: make(X).unfold(1, 2, 0),
                lambda lib, make: make(X).unfold(2, 2, 1)):
        check(bad, device)


def test_rot90(device):
    for k in (-3, -1, 0, 1, 2, 3, 5):
        check(lambda lib, make: (lib.rot90(make(X, requires_grad=True), k), make(CUBE).rot90(k, [2, 0])), device)
    for bad in (lambda lib, make: lib.rot90(make(X), 1, [0]), lambda lib, make: lib.rot90(make([1.0]), 1),
                lambda lib, make: lib.rot90(make(X), 1, [1, 1])):
        check(bad, device)


def test_cross(device):
    check(lambda lib, make: (lib.cross(make(V, requires_grad=True), make(W, requires_grad=True), dim=1),
                             make(V, requires_grad=True).cross(make([[0.0, 1.0, 2.0]]), dim=-1),
                             lib.cross(make([[1, 0, 0]]), make([[0, 1, 0]]), dim=1)), device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn that dim=None is deprecated
        check(lambda lib, make: lib.cross(make(np.array(V).T.tolist()), make(np.array(W).T.tolist())), device)
    check(lambda lib, make: lib.cross(make(X), make(X), dim=1), device)
    check(lambda lib, make: lib.cross(make(V), make([0.0, 1.0, 2.0]), dim=-1), device)


def test_tensordot(device):
    check(lambda lib, make: (lib.tensordot(make(CUBE, requires_grad=True), make(np.full((3, 4, 2), 0.5).tolist(),
                                                                                 requires_grad=True)),
                             lib.tensordot(make(X, requires_grad=True), make(X, requires_grad=True), dims=([0], [0])),
                             lib.tensordot(make(V), make(W), dims=0),
                             lib.tensordot(make(CUBE), make(X), dims=([1, 2], [0, 1]))), device)
    for bad in (lambda lib, make: lib.tensordot(make(X), make(X), dims=([0], [1])),
                lambda lib, make: lib.tensordot(make(X), make(X), dims=-1),
                lambda lib, make: lib.tensordot(make(X), make(X), dims=([0, 1], [0]))):
        check(bad, device)


def test_kron_msort_split_with_sizes(device):
    check(lambda lib, make: (lib.kron(make(V, requires_grad=True), make([[0.0, 1.0], [1.0, 2.0]], requires_grad=True)),
                             make([1, 2]).kron(make([[1, 10], [100, 1000]])), lib.kron(make(V), make([2.0, 3.0])),
                             make(X, requires_grad=True).msort(),
                             make(X, requires_grad=True).split_with_sizes([1, 3], 1)), device)


# ------------------------------------------------------------------------------ finite differences
def _leaf(values):
    return tn.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_products_pass_gradcheck():
    assert gradcheck(lambda x: x.unfold(1, 2, 1), _leaf(X))  # overlapping windows add up
    assert gradcheck(lambda a, b: tn.cross(a, b, dim=1), (_leaf(V), _leaf(W)))
    assert gradcheck(lambda a, b: tn.tensordot(a, b, dims=([1], [1])), (_leaf(V), _leaf(W)))
    assert gradcheck(lambda a, b: tn.kron(a, b), (_leaf(V), _leaf([[0.5, -1.0]])))


MATRIX = [[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]


def test_linalg_norms(device):
    inf = float("inf")
    check(lambda lib, make: (lib.linalg.norm(make(MATRIX, requires_grad=True)), lib.linalg.norm(make(MATRIX), dim=1),
                             lib.linalg.norm(make(MATRIX)[0], ord=3), lib.linalg.norm(make(MATRIX), ord=1, dim=1),
                             lib.linalg.norm(make(MATRIX), ord=inf), lib.linalg.norm(make(CUBE), dim=(0, 2)),
                             lib.linalg.vector_norm(make(MATRIX, requires_grad=True), ord=inf, dim=0),
                             lib.linalg.vector_norm(make(CUBE), keepdim=True),
                             lib.linalg.matrix_norm(make(CUBE, requires_grad=True)),
                             lib.linalg.matrix_norm(make(MATRIX, requires_grad=True), ord=1),
                             lib.linalg.matrix_norm(make(MATRIX), ord=-1, keepdim=True),
                             lib.linalg.matrix_norm(make(CUBE), ord=-inf, dim=(0, 2)),
                             lib.linalg.cross(make(V, requires_grad=True), make(W))), device)
    for bad in (lambda lib, make: lib.linalg.vector_norm(make([1, 2])),
                lambda lib, make: lib.linalg.matrix_norm(make(V[0])),
                lambda lib, make: lib.linalg.norm(make(CUBE), ord=1),
                lambda lib, make: lib.linalg.matrix_norm(make(V), ord=3)):
        check(bad, device)
    with pytest.raises(NotImplementedError, match="singular value decomposition"):
        tn.linalg.matrix_norm(tn.tensor(MATRIX, device=device), ord=2)


def test_legacy_new(device):
    check(lambda lib, make: (make(MATRIX).new(2, 3).shape, make(MATRIX).new([1, 2]), make([1, 2]).new([1.5]),
                             make(MATRIX).new(), make(MATRIX).new(make(MATRIX).shape).shape,
                             make(MATRIX, dtype="float64").new(2).dtype), device)
    assert tn.tensor(MATRIX, device=device).new(2).device == tn.device(device)


def test_float32_matmul_precision_is_accepted():
    assert tn.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    try:
        tn.set_float32_matmul_precision("high")
        assert tn.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="has no effect"):
            tn.set_float32_matmul_precision("fast")
        assert tn.get_float32_matmul_precision() == "high"
    finally:
        tn.set_float32_matmul_precision("highest")
