"""Bilinear, the alpha dropouts, gumbel_softmax and nn.Buffer against PyTorch: Bilinear's values and
gradients with PyTorch's parameters, and finite differences; the random layers by their exact
structure (what a dropped or kept value becomes, and its gradient) and their statistics (alpha
dropout keeps zero mean and unit variance; the Gumbel-max argmax follows softmax(logits)).

Every test takes a ``device``; ``tests/cuda/sim_nn_api.py`` runs some on ``'cuda'`` in the simulator.
"""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import same, same_error, torch
from tinynorm.autograd import gradcheck

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(bias, device):
    theirs = torch.nn.Bilinear(3, 4, 5, bias=bias).double()
    ours = tn.nn.Bilinear(3, 4, 5, bias=bias, dtype=tn.float64)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: tn.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    ours.to(device)
    same(lambda lib, a, b: (ours if lib is not torch else theirs)(a, b), RNG.standard_normal((2, 6, 3)),
         RNG.standard_normal((2, 6, 4)), device=device)
    for name, parameter in theirs.named_parameters():
        np.testing.assert_allclose(getattr(ours, name).grad.numpy(), parameter.grad.numpy(), rtol=1e-10)


def test_bilinear_initialisation_gradcheck_and_errors():
    layer = tn.nn.Bilinear(4, 2, 3)
    assert np.abs(layer.weight.numpy()).max() <= 0.5 and np.abs(layer.bias.numpy()).max() <= 0.5  # 1/sqrt(4)
    w = tn.tensor(RNG.standard_normal((3, 2, 4)), requires_grad=True)
    a, b = tn.tensor(RNG.standard_normal((5, 2)), requires_grad=True), tn.tensor(RNG.standard_normal((5, 4)),
                                                                                  requires_grad=True)
    assert gradcheck(lambda x, y, v: tn.nn.functional.bilinear(x, y, v), (a, b, w))
    same_error(lambda lib, x, y, v: lib.nn.functional.bilinear(x, y, v), RNG.standard_normal((5, 2)),
               RNG.standard_normal((5, 3)), RNG.standard_normal((3, 2, 4)))


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_structure_and_gradient(feature, device):
    p, alpha = 0.3, 1.7580993408473766
    a = 1 / np.sqrt((alpha ** 2 * p + 1) * (1 - p))
    x = tn.tensor(RNG.standard_normal((200, 8, 3)), device=device, requires_grad=True)
    layer = (tn.nn.FeatureAlphaDropout if feature else tn.nn.AlphaDropout)(p)
    y = layer(x)
    kept = np.isclose(y.detach().numpy(), a * x.detach().numpy() + alpha * a * p)
    dropped = np.isclose(y.detach().numpy(), -alpha * a + alpha * a * p)
    assert (kept | dropped).all()
    if feature:  # one decision per (sample, channel)
        assert (kept.all(-1) | dropped.all(-1)).all()
    assert abs(dropped.mean() - p) < 0.05
    upstream = RNG.standard_normal(x.shape)
    y.backward(tn.tensor(upstream, device=device))
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, a * upstream, 0.0), rtol=1e-12)
    layer.eval()
    assert layer(x) is x
    assert tn.nn.functional.alpha_dropout(x) is x  # training=False by default, as in PyTorch
    assert repr(layer) == repr((torch.nn.FeatureAlphaDropout if feature else torch.nn.AlphaDropout)(p))


def test_alpha_dropout_keeps_the_self_normalized_statistics():
    tn.manual_seed(0)
    x = tn.randn(400_000, dtype=tn.float64)
    y = tn.nn.functional.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01
    same_error(lambda lib, t: lib.nn.functional.alpha_dropout(t, 1.5, True), np.ones(3))
    same_error(lambda lib, t: lib.nn.functional.feature_alpha_dropout(t, 0.5, True), np.ones(3))


def test_gumbel_softmax_samples_follow_softmax_and_hard_is_straight_through(device):
    tn.manual_seed(0)
    logits = np.log(np.array([0.1, 0.2, 0.7]))
    x = tn.tensor(np.tile(logits, (20_000, 1)), device=device, requires_grad=True)
    soft = tn.nn.functional.gumbel_softmax(x, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(1), 1.0, rtol=1e-12)
    frequencies = np.bincount(soft.detach().numpy().argmax(1), minlength=3) / 20_000
    np.testing.assert_allclose(frequencies, [0.1, 0.2, 0.7], atol=0.015)
    tn.manual_seed(1)
    hard = tn.nn.functional.gumbel_softmax(x[:50], tau=0.5, hard=True, dim=1)
    tn.manual_seed(1)
    soft = tn.nn.functional.gumbel_softmax(x[:50], tau=0.5, dim=1)
    assert set(np.unique(hard.detach().numpy())) == {0.0, 1.0}
    np.testing.assert_array_equal(hard.detach().numpy().argmax(1), soft.detach().numpy().argmax(1))
    upstream = tn.tensor(RNG.standard_normal((50, 3)), device=device)
    (g_hard,) = tn.autograd.grad(hard, x, upstream)
    (g_soft,) = tn.autograd.grad(soft, x, upstream)
    np.testing.assert_allclose(g_hard.numpy(), g_soft.numpy(), rtol=1e-12)


def test_buffer_assignment_registers_a_buffer_as_torch():
    for nn in (tn.nn, torch.nn):
        module = nn.Module()
        module.stats = nn.Buffer(nn.parameter.Parameter(nn.Linear(2, 2).weight.detach()).detach())
        module.scratch = nn.Buffer(module.stats.detach() * 0, persistent=False)
        assert list(module.state_dict()) == ["stats"]
        assert [name for name, _ in module.named_buffers()] == ["stats", "scratch"]
        assert [name for name, _ in module.named_parameters()] == []
    assert tn.nn.parameter.Parameter is tn.nn.Parameter
