"""In-place view methods (``unsqueeze_``, ``squeeze_``, ``t_``, ``transpose_``, ``swapaxes_``) against PyTorch:
the tensor keeps its identity and memory and takes the view's shape; versions, views of a base and autograd as
PyTorch has them."""
import numpy as np
import pytest

import tinynorm as tn

torch = pytest.importorskip("torch")

CALLS = {
    "unsqueeze_": (1,), "squeeze_": (), "t_": (), "transpose_": (0, 1), "swapaxes_": (1, 0),
}


def both(values):
    return tn.tensor(values), torch.tensor(values)


@pytest.mark.parametrize("name", CALLS)
def test_the_tensor_itself_takes_the_new_shape(name):
    values = np.arange(6.0, dtype=np.float32).reshape(2, 3) if name != "squeeze_" else np.ones((2, 1, 3), np.float32)
    ours, theirs = both(values)
    alias = ours
    returned = getattr(ours, name)(*CALLS[name])
    getattr(theirs, name)(*CALLS[name])
    assert returned is ours and alias is ours
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.tolist() == theirs.tolist()
    assert ours._version == theirs._version == 1


def test_a_view_stays_a_view_of_its_base_and_writes_reach_it():
    ours, theirs = (lib.ones(2, 3) for lib in (tn, torch))
    for base in (ours, theirs):
        row = base[0]
        row.unsqueeze_(0)
        assert row._base is base and tuple(row.shape) == (1, 3)
        row.mul_(5)
    assert ours.tolist() == theirs.tolist()


def test_a_leaf_that_requires_grad_is_refused():
    leaf = tn.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        leaf.unsqueeze_(0)


def test_gradients_flow_through_an_in_place_view_of_a_non_leaf():
    start = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    upstream = np.random.default_rng(1).standard_normal((3, 2)).astype(np.float32)
    grads = []
    for lib in (tn, torch):
        leaf = lib.tensor(start, requires_grad=True)
        moved = leaf * 2
        moved.t_()
        (moved * lib.tensor(upstream)).sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
