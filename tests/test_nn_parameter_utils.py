"""tinynorm.nn.utils' functions over parameters (clip_grad_norm_, clip_grad_value_, get_total_norm,
clip_grads_with_norm_, parameters_to_vector, vector_to_parameters) against torch.nn.utils and
against numpy, with their errors."""
import warnings

import numpy as np
import pytest

import tinynorm as tn
from tinynorm import nn
from tinynorm.nn import utils

SHAPES = [(4, 3), (5,), ()]


def gradients(seed=0, dtypes=(np.float32,) * 3, scale=1.0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * scale).astype(d) for s, d in zip(SHAPES, dtypes)]


def params_with(lib, grads):
    params = []
    for g in grads:
        p = lib.zeros(g.shape, dtype=getattr(lib, g.dtype.name), requires_grad=True)
        p.grad = lib.tensor(g.copy())
        params.append(p)
    return params


@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf"), -float("inf"), 0, 3, 0.5, -1, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    torch = pytest.importorskip("torch")
    grads = gradients()
    grads[1][2] = 0.0  # a zero, for the 0- and negative norms
    ours, theirs = params_with(tn, grads), params_with(torch, grads)
    total = utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    torch_total = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert isinstance(total, tn.Tensor) and total.shape == () and total.dtype == np.float32
    np.testing.assert_allclose(total.item(), torch_total.item(), rtol=1e-6)
    for p, q in zip(ours, theirs):
        assert p.grad.shape == tuple(q.grad.shape)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_against_numpy_in_float64():
    grads = gradients(1, dtypes=(np.float64,) * 3)
    params = params_with(tn, grads)
    total = nn.utils.clip_grad_norm_(params, 0.1)
    expected = np.sqrt(sum((g**2).sum() for g in grads))
    assert total.dtype == np.float64
    np.testing.assert_allclose(total.item(), expected, rtol=1e-14)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * (0.1 / (expected + 1e-6)), rtol=1e-14)
    np.testing.assert_allclose(nn.utils.get_total_norm([p.grad for p in params]).item(), 0.1, rtol=1e-5)


def test_mixed_dtypes_give_the_promoted_dtype_and_torchs_values():
    torch = pytest.importorskip("torch")
    grads = gradients(2, dtypes=(np.float32, np.float64, np.float32))
    ours, theirs = params_with(tn, grads), params_with(torch, grads)
    total = utils.clip_grad_norm_(ours, 1.0)
    torch_total = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert total.dtype == np.float64 and torch_total.dtype == torch.float64
    np.testing.assert_allclose(total.item(), torch_total.item(), rtol=1e-6)
    for p, q in zip(ours, theirs):
        assert p.grad.dtype == q.grad.numpy().dtype
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


def test_only_gradients_are_clipped_and_parameters_without_one_are_skipped():
    a, b = tn.ones(2, requires_grad=True), tn.ones(2, requires_grad=True)
    a.grad = tn.tensor([3.0, 4.0])
    total = utils.clip_grad_norm_([a, b], 1.0)
    assert total.item() == 5.0 and b.grad is None
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(a.numpy(), [1.0, 1.0])
    assert utils.clip_grad_norm_([b], 1.0).item() == 0.0  # no gradients at all: a norm of 0
    single = tn.ones(2, requires_grad=True)
    single.grad = tn.tensor([0.0, 2.0])
    assert utils.clip_grad_norm_(single, 1.0).item() == 2.0  # one tensor, not a list


def test_a_gradient_array_shared_by_two_parameters_is_scaled_once():
    """``a + b`` gives both leaves the same upstream gradient array: each .grad must be scaled once."""
    a, b = tn.ones(3, requires_grad=True), tn.ones(3, requires_grad=True)
    (a + b).backward(tn.tensor([3.0, 0.0, 4.0]))
    held = a.grad
    total = utils.clip_grad_norm_([a, b], 1.0)
    np.testing.assert_allclose(total.item(), np.sqrt(50), rtol=1e-6)
    for grad in (a.grad, b.grad):
        np.testing.assert_allclose(grad.numpy(), np.array([3.0, 0.0, 4.0]) / np.sqrt(50), rtol=1e-5)
    assert held is a.grad  # a reference to the gradient sees the clipped values


def test_huge_float32_gradients_have_a_finite_norm():
    """Beyond PyTorch (whose float32 norm overflows to inf and zeroes every gradient)."""
    p = tn.zeros(2, requires_grad=True)
    p.grad = tn.tensor([3e20, 4e20])
    total = utils.clip_grad_norm_([p], 1.0)
    np.testing.assert_allclose(total.item(), 5e20, rtol=1e-6)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_nonfinite_norms():
    p = tn.zeros(3, requires_grad=True)
    p.grad = tn.tensor([np.nan, 1.0, 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert np.isnan(p.grad.numpy()[0]) and p.grad.numpy()[1] == 1.0  # the failed clip changed nothing
    assert np.isnan(utils.clip_grad_norm_([p], 1.0).item())  # as PyTorch: NaN, and every gradient NaN
    assert np.isnan(p.grad.numpy()).all()


def test_clip_grad_value_matches_torch():
    torch = pytest.importorskip("torch")
    grads = gradients(3)
    ours, theirs = params_with(tn, grads), params_with(torch, grads)
    assert utils.clip_grad_value_(ours, 0.5, foreach=True) is None
    torch.nn.utils.clip_grad_value_(theirs, 0.5)
    for p, q in zip(ours, theirs):
        assert p.grad.shape == tuple(q.grad.shape)
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    assert max(np.abs(p.grad.numpy()).max() for p in ours) == np.float32(0.5)


def test_parameters_to_vector_and_back():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    values = [rng.standard_normal(s) for s in ((2, 3), (4,))]
    ours = [tn.tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    vector, torch_vector = utils.parameters_to_vector(ours), torch.nn.utils.parameters_to_vector(theirs)
    np.testing.assert_array_equal(vector.numpy(), torch_vector.detach().numpy())
    upstream = rng.standard_normal(10)
    (vector * tn.tensor(upstream)).sum().backward()  # differentiable, as in PyTorch
    (torch_vector * torch.tensor(upstream)).sum().backward()
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())

    new = tn.tensor(np.arange(10.0))
    utils.vector_to_parameters(new, ours)
    np.testing.assert_array_equal(ours[0].numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(ours[1].numpy(), [6.0, 7.0, 8.0, 9.0])
    new.array[6] = -1.0  # as in PyTorch, the parameters now share the vector's memory
    assert ours[1].numpy()[0] == -1.0


def test_errors():
    p = tn.zeros(3, requires_grad=True)
    p.grad = tn.ones(3)
    with pytest.raises(TypeError, match="max_norm must be a number"):
        utils.clip_grad_norm_([p], "x")
    with pytest.raises(ValueError, match="max_norm must be >= 0, got -1.0"):
        utils.clip_grad_norm_([p], -1.0)
    with pytest.raises(TypeError, match=r"norm_type must be a number \(or 'inf'\), got 'fro'"):
        utils.clip_grad_norm_([p], 1.0, norm_type="fro")
    with pytest.raises(TypeError, match=r"parameters\[0\] must be a Tensor, got ndarray"):
        utils.clip_grad_norm_([np.ones(3)], 1.0)
    with pytest.raises(ValueError, match="clip_value must be >= 0"):
        utils.clip_grad_value_([p], -0.1)
    with pytest.raises(TypeError, match="foreach must be None or a bool"):
        utils.clip_grad_value_([p], 0.1, foreach="yes")
    with pytest.raises(RuntimeError, match="inf norm of an empty tensor"):
        utils.get_total_norm([tn.zeros(0)], norm_type="inf")
    np.testing.assert_array_equal(p.grad.numpy(), np.ones(3))
    with pytest.warns(UserWarning, match="empty generator"):
        utils.clip_grad_norm_((q for q in []), 1.0)
    with pytest.warns(FutureWarning, match="deprecated in favor of `torch.nn.utils.clip_grad_norm_`"):
        utils.clip_grad_norm([p], 1.0)
    with pytest.raises(TypeError, match="expected a Tensor, but got: list"):
        utils.vector_to_parameters([1.0, 2.0], [tn.zeros(2)])
    with pytest.raises(ValueError, match=r"vec must be a vector of 5 elements .* got shape \(4,\)"):
        utils.vector_to_parameters(tn.zeros(4), [tn.zeros(2), tn.zeros(3)])
    with pytest.raises(ValueError, match="at least one parameter"):
        utils.parameters_to_vector([])


def test_the_batch_norm_utilities_keep_their_names():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from tinynorm.nn.utils import freeze_batch_norm, recompute_batch_norm_statistics, unfreeze_batch_norm
    assert callable(freeze_batch_norm) and callable(recompute_batch_norm_statistics) and callable(unfreeze_batch_norm)
