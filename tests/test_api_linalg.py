"""Matrix products, norms, einsum and matrix parts against PyTorch: mm, bmm, mv, dot, outer, addmm,
baddbmm, norm, cdist, einsum, tril, triu, diag (values, dtypes, gradients, errors), and float64
finite-difference checks of the norms and triangles.
"""
import math

import numpy as np
import pytest
from api_compare import check

import tinynorm as tn
from tinynorm.autograd import gradcheck

A = [[1.5, -2.5, 3.25], [0.5, 2.0, -1.75]]
B = [[0.5, 1.0], [-1.5, 2.0], [3.0, -0.25]]
V3 = [0.5, -1.0, 2.0]
BATCH = [[[1.0, 2.0, -1.0], [0.5, -0.5, 1.5]], [[2.0, 0.0, 1.0], [-1.0, 1.0, 0.25]]]
SQUARE = [[1.5, -2.5, 3.25], [0.5, 2.0, -1.75], [-1.0, 0.75, 2.5]]


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


def test_named_products(device):
    check(lambda lib, make: lib.mm(make(A, requires_grad=True), make(B, requires_grad=True)), device)
    check(lambda lib, make: make(A, requires_grad=True).mv(make(V3, requires_grad=True)), device)
    check(lambda lib, make: lib.dot(make(V3, requires_grad=True), make([1.0, 0.5, -2.0], requires_grad=True)), device)
    check(lambda lib, make: lib.outer(make(V3, requires_grad=True), make([1.0, -2.0], requires_grad=True)), device)
    check(lambda lib, make: lib.bmm(make(BATCH, requires_grad=True), make(BATCH, requires_grad=True).transpose(1, 2)),
          device)
    check(lambda lib, make: lib.mm(make([[1, 2], [3, 4]]), make([[0, 1], [1, 0]])), device)
    check(lambda lib, make: lib.outer(make([1, 2]), make([0.5, 1.5])), device)


def test_named_products_refuse_bad_shapes_and_dtypes(device):
    cases = [
        lambda lib, make: lib.mm(make(A), make(A)), lambda lib, make: lib.mm(make(V3), make(B)),
        lambda lib, make: lib.mm(make(A), make(V3)), lambda lib, make: lib.mm(make(A), make(B, dtype="float64")),
        lambda lib, make: lib.bmm(make(A), make(B)), lambda lib, make: lib.bmm(make(BATCH), make(BATCH)),
        lambda lib, make: lib.bmm(make(BATCH), make(BATCH, dtype="float64").transpose(1, 2)),
        lambda lib, make: lib.mv(make(A), make([1.0, 2.0])), lambda lib, make: lib.mv(make(V3), make(A)),
        lambda lib, make: lib.mv(make(A), make(V3, dtype="float64")),
        lambda lib, make: lib.dot(make(A), make(A)), lambda lib, make: lib.dot(make(V3), make([1.0, 2.0])),
        lambda lib, make: lib.dot(make([1, 2]), make([1.0, 2.0])), lambda lib, make: lib.outer(make(A), make(V3)),
    ]
    for case in cases:
        check(case, device)


def test_addmm_and_baddbmm(device):
    check(lambda lib, make: lib.addmm(make([[1.0, 2.0], [3.0, 4.0]], requires_grad=True), make(A, requires_grad=True),
                                      make(B, requires_grad=True)), device)
    check(lambda lib, make: lib.addmm(make([0.5, -1.0], requires_grad=True), make(A, requires_grad=True), make(B),
                                      beta=0.5, alpha=2.0), device)
    check(lambda lib, make: make([float("nan")]).addmm(make(A), make(B), beta=0), device)
    check(lambda lib, make: lib.addmm(make([1.0, 2.0, 3.0]), make(A), make(B)), device)
    check(lambda lib, make: lib.baddbmm(make([[[1.0, 2.0], [3.0, 4.0]]], requires_grad=True),
                                        make(BATCH, requires_grad=True), make(BATCH).transpose(1, 2), alpha=-1.5),
          device)

    def in_place(lib, make):
        c = make([[1.0, 2.0], [3.0, 4.0]])
        c.addmm_(make(A), make(B), beta=2.0)
        d = make([[[0.0, 1.0], [1.0, 0.0]]] * 2)
        d.baddbmm_(make(BATCH), make(BATCH).transpose(1, 2))
        return c, d

    check(in_place, device)


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, 0, math.inf, -math.inf, "fro"])
def test_norm(p, device):
    check(lambda lib, make: lib.norm(make(A, requires_grad=True), p), device)
    check(lambda lib, make: make(A, requires_grad=True).norm(p, dim=1), device)
    check(lambda lib, make: lib.norm(make(A, requires_grad=True), p, 0, True), device)
    check(lambda lib, make: lib.norm(make(BATCH, requires_grad=True), p=p, dim=(1, 2)), device)


def test_norm_of_zeros_has_a_zero_gradient_and_other_cases(device):
    check(lambda lib, make: lib.norm(make([0.0, 0.0, 0.0], requires_grad=True)), device)
    check(lambda lib, make: lib.norm(make([[0.0, 0.0], [3.0, 4.0]], requires_grad=True), dim=1), device)
    check(lambda lib, make: lib.norm(make(A), dtype=lib.float64), device)
    check(lambda lib, make: lib.norm(make(2.5, requires_grad=True)), device)
    check(lambda lib, make: lib.norm(make([[1, 2]])), device)
    check(lambda lib, make: lib.norm(make(A), "abc"), device)
    check(lambda lib, make: lib.norm(make(BATCH), "fro", dim=(0, 1, 2)), device)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.0, math.inf])
def test_cdist(p, device):
    x1 = [[0.0, 1.0, 2.0], [1.0, -1.0, 0.5], [2.0, 0.5, -1.0]]
    x2 = [[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]]
    check(lambda lib, make: lib.cdist(make(x1, requires_grad=True), make(x2, requires_grad=True), p=p), device)
    check(lambda lib, make: lib.cdist(make(BATCH, requires_grad=True), make(BATCH, requires_grad=True), p), device)


def test_cdist_refuses_bad_input(device):
    check(lambda lib, make: lib.cdist(make(V3), make(A)), device)
    check(lambda lib, make: lib.cdist(make(A), make(B)), device)
    check(lambda lib, make: lib.cdist(make(A), make(A), p=-1.0), device)


EINSUM = [
    ("ij,jk->ik", [A, B]), ("ij,jk", [A, B]), ("ij->ji", [A]), ("ij->", [A]), ("ij->j", [A]), ("ii->i", [SQUARE]),
    ("ii", [SQUARE]), ("i,j->ij", [V3, [1.0, 2.0]]), ("i,i->", [V3, V3]), ("bij,bjk->bik", [BATCH, None]),
    ("...ij,...jk->...ik", [BATCH, None]), ("b i j, b i j -> b", [BATCH, BATCH]), ("ij,ij->ij", [A, A]),
    ("ij,kj->ik", [A, A]), ("...j,j", [BATCH, V3]), ("ijk->kji", [BATCH]), ("i,j,k->ijk", [V3, [1.0, 2.0], [0.5]]),
    ("ij,jk,kl->il", [A, B, [[1.0, 0.5, 2.0], [0.0, -1.0, 1.0]]]), ("ij,ji->", [A, B]), ("iij->j", [[SQUARE] * 3]),
    ("bi,bi->b", [[[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]]]),
]


@pytest.mark.parametrize("equation, operands", EINSUM)
def test_einsum(equation, operands, device):
    def case(lib, make):
        tensors = [make(values, requires_grad=True) if values is not None else None for values in operands]
        if tensors[-1] is None:  # the batch's transpose
            tensors[-1] = make(BATCH, requires_grad=True).transpose(1, 2)
        return lib.einsum(equation, *tensors)

    check(case, device)


def test_einsum_takes_a_list_and_keeps_integers(device):
    check(lambda lib, make: lib.einsum("ij,jk->ik", [make(A), make(B)]), device)
    check(lambda lib, make: lib.einsum("ij,j->i", make([[1, 2], [3, 4]]), make([1, -1])), device)


def test_einsum_refuses_bad_equations(device):
    cases = [("ij,jk->ik", [A, A]), ("ij", [A, A]), ("ij,jk", [A]), ("i->i", [A]), ("ij->k", [A]), ("ij->ii", [A]),
             ("i1->i", [A]), ("ij,j->i", [A, [1.0, 2.0]])]
    for equation, operands in cases:
        check(lambda lib, make: lib.einsum(equation, *[make(values) for values in operands]), device)
    check(lambda lib, make: lib.einsum("ij,j->i", make(A), make(V3, dtype="float64")), device)


@pytest.mark.parametrize("name", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [0, 1, -1, 5, -5])
def test_triangles(name, diagonal, device):
    check(lambda lib, make: getattr(lib, name)(make(A, requires_grad=True), diagonal), device)
    check(lambda lib, make: getattr(make(BATCH, requires_grad=True), name)(diagonal=diagonal), device)


def test_triangles_of_other_dtypes_and_shapes(device):
    check(lambda lib, make: lib.tril(make([[True, True, True], [True, True, True]])), device)
    check(lambda lib, make: lib.triu(make([[1, 2], [3, 4]]), 1), device)
    check(lambda lib, make: lib.tril(make([[float("inf"), float("nan")], [1.0, 2.0]])), device)
    check(lambda lib, make: lib.tril(make(V3)), device)

    def in_place(lib, make):
        h = make(SQUARE, requires_grad=True) * 1.0
        return h.tril_(-1), make(SQUARE).triu_()

    check(in_place, device)


@pytest.mark.parametrize("diagonal", [0, 1, -1, 2, 5])
def test_diag(diagonal, device):
    check(lambda lib, make: lib.diag(make(V3, requires_grad=True), diagonal), device)
    check(lambda lib, make: lib.diag(make(A, requires_grad=True), diagonal), device)
    check(lambda lib, make: make([1, 2, 3]).diag(diagonal), device)


def test_diag_refuses_other_ranks(device):
    check(lambda lib, make: lib.diag(make(BATCH)), device)
    check(lambda lib, make: lib.diag(make(2.0)), device)


# ------------------------------------------------------------------------------ finite differences
def _leaf(values):
    return tn.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, math.inf, -math.inf])
def test_norms_pass_gradcheck(p):
    x = _leaf(A)
    assert gradcheck(lambda t: tn.norm(t, p), x)
    assert gradcheck(lambda t: tn.norm(t, p, dim=1, keepdim=True), x)
    if p >= 0:
        assert gradcheck(lambda a, b: tn.cdist(a, b, p=p), (_leaf([[0.0, 1.0, 2.0], [1.0, -1.0, 0.5]]),
                                                           _leaf([[1.0, 1.2, 1.1], [0.3, 1.4, 2.2]])))


def test_triangles_diag_and_einsum_pass_gradcheck():
    x = _leaf(SQUARE)
    assert gradcheck(lambda t: tn.tril(t, -1), x)
    assert gradcheck(lambda t: tn.triu(t), x)
    assert gradcheck(lambda t: tn.diag(t, 1), x)
    assert gradcheck(lambda t: tn.diag(t[0], -1), x)
    assert gradcheck(lambda a, b: tn.einsum("ij,jk->ik", a, b), (x, _leaf(B)))
    assert gradcheck(lambda t: tn.einsum("ii->i", t), x)
