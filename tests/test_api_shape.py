"""Shape functions against PyTorch: split, chunk, unbind, hstack, vstack, concat, tile, repeat,
repeat_interleave, broadcast_to, meshgrid, t, mT, view_as, reshape_as, expand_as, unflatten, narrow,
movedim, flip, roll (functions and methods; values, shapes, gradients, errors), and float64
finite-difference checks of flip, roll and repeat.
"""
import numpy as np
import pytest
from api_compare import check

import tinynorm as tn
from tinynorm.autograd import gradcheck

X = [[1.5, -2.5, 3.25], [0.5, 2.0, -1.75]]
CUBE = [[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]],
        [[-1.0, -2.0, -3.0, -4.0], [0.5, 0.25, 0.125, 2.0], [1.5, 2.5, 3.5, 4.5]]]


@pytest.fixture(params=["cpu"])
def device(request):
    return request.param


def test_split_chunk_unbind_narrow_as_functions(device):
    check(lambda lib, make: lib.split(make(CUBE, requires_grad=True), 2, 2), device)
    check(lambda lib, make: lib.split(make(CUBE, requires_grad=True), [1, 2], dim=1), device)
    check(lambda lib, make: lib.chunk(make(CUBE, requires_grad=True), 3, -1), device)
    check(lambda lib, make: lib.unbind(make(CUBE, requires_grad=True), 1), device)
    check(lambda lib, make: lib.narrow(make(CUBE, requires_grad=True), 2, 1, 2), device)
    check(lambda lib, make: make(CUBE).split([3, 1], -1), device)


def test_stacking(device):
    check(lambda lib, make: lib.hstack([make(X, requires_grad=True), make(X, requires_grad=True)]), device)
    check(lambda lib, make: lib.hstack([make([1.0, 2.0]), make([3.0])]), device)
    check(lambda lib, make: lib.hstack([make(1.0), make(2.0)]), device)
    check(lambda lib, make: lib.vstack([make([1.0, 2.0, 3.0], requires_grad=True), make(X, requires_grad=True)]),
          device)
    check(lambda lib, make: lib.vstack((make(CUBE), make(CUBE))), device)
    check(lambda lib, make: lib.concat([make(X), make(X)], dim=1), device)
    check(lambda lib, make: lib.concatenate((make(X, requires_grad=True), make(X)), 0), device)
    check(lambda lib, make: lib.vstack([make(X), make([1.0, 2.0])]), device)


def test_cat_promotes_and_skips_empty_vectors(device):
    check(lambda lib, make: lib.cat([make(X, requires_grad=True), make([[1, 2, 3]])]), device)
    check(lambda lib, make: lib.cat([make([True]), make([2], dtype="uint8"), make([3], dtype="int8")]), device)
    check(lambda lib, make: lib.cat([make([]), make(X, requires_grad=True)], 1), device)
    check(lambda lib, make: lib.cat((make([], dtype="int64"), make([1, 2]), make([], dtype="int64"))), device)
    check(lambda lib, make: lib.cat([make([]), make([])]), device)

    def accumulate(lib, make):  # the idiom of collecting predictions batch by batch
        collected = make([])
        for batch in (make([1, 2]), make([3])):
            collected = lib.cat([collected, batch])
        return collected

    check(accumulate, device)


def test_cat_refuses_what_pytorch_refuses(device):
    check(lambda lib, make: lib.cat([]), device)
    check(lambda lib, make: lib.cat([make(1.0), make(2.0)]), device)
    check(lambda lib, make: lib.cat([make(X), make([1.0, 2.0, 3.0])]), device)
    check(lambda lib, make: lib.cat([make(X), make([[1.0, 2.0]])]), device)
    check(lambda lib, make: lib.cat([make(X)], dim=2), device)
    check(lambda lib, make: lib.cat([make(X), X]), device)


def test_repeat_and_tile(device):
    check(lambda lib, make: make(X, requires_grad=True).repeat(2, 3), device)
    check(lambda lib, make: make(X, requires_grad=True).repeat((2, 1, 2)), device)
    check(lambda lib, make: make([1, 2, 3]).repeat(2), device)
    check(lambda lib, make: make(X, requires_grad=True).repeat(1, 0), device)
    check(lambda lib, make: lib.tile(make(X, requires_grad=True), (2,)), device)
    check(lambda lib, make: make(X, requires_grad=True).tile(2, 1, 1), device)
    check(lambda lib, make: make(X).repeat(2), device)
    check(lambda lib, make: make(X).repeat(-1, 1), device)


def test_repeat_interleave(device):
    check(lambda lib, make: lib.repeat_interleave(make(X, requires_grad=True), 2), device)
    check(lambda lib, make: make(X, requires_grad=True).repeat_interleave(3, dim=1), device)
    check(lambda lib, make: lib.repeat_interleave(make(X, requires_grad=True), make([1, 2]), dim=0), device)
    check(lambda lib, make: lib.repeat_interleave(make(X, requires_grad=True), make([2, 0, 1]), dim=-1), device)
    check(lambda lib, make: lib.repeat_interleave(make(X), make([2]), dim=0), device)
    check(lambda lib, make: lib.repeat_interleave(make([2, 1, 3])), device)
    check(lambda lib, make: lib.repeat_interleave(make(X), make([1, 2, 3]), 0), device)
    check(lambda lib, make: lib.repeat_interleave(make(X), -1), device)


def test_broadcast_to_and_expand_as(device):
    check(lambda lib, make: lib.broadcast_to(make(X, requires_grad=True), (2, 2, 3)), device)
    check(lambda lib, make: make([1.0, 2.0, 3.0], requires_grad=True).broadcast_to((2, 3)), device)
    check(lambda lib, make: make([[1.0], [2.0]], requires_grad=True).expand_as(make(X)), device)
    check(lambda lib, make: lib.broadcast_to(make(X), (3, 3)), device)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing, device):
    check(lambda lib, make: lib.meshgrid(make([1.0, 2.0], requires_grad=True), make([3.0, 4.0, 5.0], requires_grad=True),
                                         indexing=indexing), device)
    check(lambda lib, make: lib.meshgrid([make([1, 2]), make([3, 4, 5]), make([6])], indexing=indexing), device)
    check(lambda lib, make: lib.meshgrid(make(2.0), make([1.0, 3.0]), indexing=indexing), device)
    check(lambda lib, make: lib.meshgrid(make([1, 2]), make([1.0]), indexing=indexing), device)


def test_meshgrid_without_indexing_warns_and_uses_ij(device):
    with pytest.warns(UserWarning, match="indexing"):
        check(lambda lib, make: lib.meshgrid(make([1, 2]), make([3, 4, 5])), device)


def test_transposes_and_shape_likes(device):
    check(lambda lib, make: (lib.t(make(X, requires_grad=True)), make([1.0, 2.0]).t()), device)
    check(lambda lib, make: make(CUBE, requires_grad=True).mT, device)
    check(lambda lib, make: make([1.0, 2.0]).mT, device)
    check(lambda lib, make: lib.t(make(CUBE)), device)
    check(lambda lib, make: make(X, requires_grad=True).view_as(make([[0.0] * 2] * 3)), device)
    check(lambda lib, make: make(X, requires_grad=True).reshape_as(make([0.0] * 6)), device)
    check(lambda lib, make: make(X).view_as(make([0.0] * 5)), device)
    check(lambda lib, make: (make(CUBE, requires_grad=True).mH, make(X, requires_grad=True).H,
                             make(CUBE, requires_grad=True).adjoint()), device)
    for bad in (lambda lib, make: make([1.0]).mH, lambda lib, make: make(CUBE).H, lambda lib, make: make([1.0]).H):
        check(bad, device)
    with pytest.warns(UserWarning, match="deprecated on 0-D"):
        assert tn.tensor(2.0, device=device).H.item() == 2.0


def test_unflatten(device):
    check(lambda lib, make: make(CUBE, requires_grad=True).unflatten(2, (2, 2)), device)
    check(lambda lib, make: lib.unflatten(make(CUBE, requires_grad=True), -1, (-1, 1)), device)
    check(lambda lib, make: make(CUBE).unflatten(0, (1, 2)), device)
    check(lambda lib, make: make(CUBE).unflatten(1, (2, 2)), device)
    check(lambda lib, make: make(CUBE).unflatten(1, ()), device)


def test_movedim(device):
    check(lambda lib, make: lib.movedim(make(CUBE, requires_grad=True), 0, 2), device)
    check(lambda lib, make: lib.movedim(make(CUBE, requires_grad=True), (0, 1), (2, 0)), device)
    check(lambda lib, make: make(CUBE, requires_grad=True).movedim(-1, 0), device)
    check(lambda lib, make: lib.moveaxis(make(CUBE), [2, 0], [0, 1]), device)
    check(lambda lib, make: lib.movedim(make(CUBE), (0, 1), (0,)), device)
    check(lambda lib, make: lib.movedim(make(CUBE), (0, 0), (0, 1)), device)
    check(lambda lib, make: lib.movedim(make(CUBE), 3, 0), device)


def test_flip(device):
    check(lambda lib, make: lib.flip(make(CUBE, requires_grad=True), (0, 2)), device)
    check(lambda lib, make: make(CUBE, requires_grad=True).flip(1), device)
    check(lambda lib, make: make(CUBE, requires_grad=True).flip(-1, 0), device)
    check(lambda lib, make: (lib.fliplr(make(X)), lib.flipud(make(X))), device)
    check(lambda lib, make: lib.flip(make(X), 0), device)
    check(lambda lib, make: lib.flip(make(X), [0, 0]), device)

    def flip_makes_a_copy(lib, make):
        x = make(X)
        y = x.flip(0)
        y[0, 0] = 100.0
        return x

    check(flip_makes_a_copy, device)


def test_roll(device):
    check(lambda lib, make: lib.roll(make(CUBE, requires_grad=True), 1, 2), device)
    check(lambda lib, make: lib.roll(make(CUBE, requires_grad=True), (1, -5), (0, 1)), device)
    check(lambda lib, make: make(CUBE, requires_grad=True).roll(3), device)
    check(lambda lib, make: make(X).roll(-7, dims=1), device)
    check(lambda lib, make: lib.roll(make(X), (1, 2)), device)
    check(lambda lib, make: lib.roll(make(X), (1, 2), 0), device)


# ------------------------------------------------------------------------------ finite differences
def test_flip_roll_and_repeat_pass_gradcheck():
    x = tn.tensor(np.array(CUBE, dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda t: t.flip(0, 2), x)
    assert gradcheck(lambda t: t.roll((1, -2), (1, 2)), x)
    assert gradcheck(lambda t: t.repeat(2, 1, 1, 2), x)
    assert gradcheck(lambda t: t.repeat_interleave(tn.tensor([2, 0, 1]), dim=1), x)
