"""``F.unfold``/``F.fold`` and ``nn.Unfold``/``nn.Fold`` against PyTorch: values and gradients under a
random upstream gradient for every geometry option, batched and unbatched; fold is unfold's adjoint;
finite differences; reprs and errors."""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import same, same_error, torch
from tinynorm.autograd import gradcheck

RNG = np.random.default_rng(0)
GEOMETRIES = [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=2, padding=1),
              dict(kernel_size=3, dilation=2, padding=(2, 1), stride=(1, 2))]


def blocks(geometry, size=(6, 7)):
    """(C kh kw factor, L) of ``geometry`` on a plane of ``size``, from PyTorch."""
    shape = torch.nn.functional.unfold(torch.zeros(1, 1, *size), **geometry).shape
    return shape[1], shape[2]


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_unfold_and_fold_match_torch(geometry, device):
    same(lambda lib, x: lib.nn.functional.unfold(x, **geometry), RNG.standard_normal((2, 3, 6, 7)), device=device)
    same(lambda lib, x: lib.nn.Unfold(**geometry)(x), RNG.standard_normal((3, 6, 7)), device=device)
    per_channel, length = blocks(geometry)
    same(lambda lib, x: lib.nn.functional.fold(x, (6, 7), **geometry), RNG.standard_normal((2, 3 * per_channel,
                                                                                             length)), device=device)
    same(lambda lib, x: lib.nn.Fold((6, 7), **geometry)(x), RNG.standard_normal((3 * per_channel, length)),
         device=device)
    assert repr(tn.nn.Fold((6, 7), **geometry)) == repr(torch.nn.Fold((6, 7), **geometry))
    assert repr(tn.nn.Unfold(**geometry)) == repr(torch.nn.Unfold(**geometry))


def test_fold_is_the_adjoint_of_unfold_and_passes_gradcheck():
    geometry = GEOMETRIES[2]
    per_channel, length = blocks(geometry, (5, 6))
    x, y = RNG.standard_normal((1, 2, 5, 6)), RNG.standard_normal((1, 2 * per_channel, length))
    unfolded = tn.nn.functional.unfold(tn.tensor(x), **geometry).numpy()
    folded = tn.nn.functional.fold(tn.tensor(y), (5, 6), **geometry).numpy()
    np.testing.assert_allclose(np.sum(unfolded * y), np.sum(x * folded), rtol=1e-12)
    assert gradcheck(lambda t: tn.nn.functional.fold(t, (5, 6), **geometry), (tn.tensor(y, requires_grad=True),))
    assert gradcheck(lambda t: tn.nn.functional.unfold(t, **geometry), (tn.tensor(x, requires_grad=True),))


def test_fold_and_unfold_errors_match_torch():
    same_error(lambda lib, x: lib.nn.functional.unfold(x, 4), RNG.standard_normal((1, 1, 3, 3)))
    same_error(lambda lib, x: lib.nn.functional.unfold(x, 2), RNG.standard_normal((1, 1, 1, 3, 3)))
    same_error(lambda lib, x: lib.nn.functional.fold(x, (4, 4), 2), RNG.standard_normal((1, 5, 9)))
    message = same_error(lambda lib, x: lib.nn.functional.fold(x, (4, 4), 2), RNG.standard_normal((1, 4, 8)))
    assert "3 * 3 = 9, but got input.size(2)=8" in message
