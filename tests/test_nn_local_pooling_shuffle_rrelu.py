"""LPPool1d/2d, LocalResponseNorm, ChannelShuffle and RReLU against PyTorch: values and gradients under a
random upstream gradient, reprs and errors; RReLU's random slopes by their structure."""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import same, same_error, torch

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 6, 5, 4))
POSITIVE = np.abs(X) + 0.1  # fractional p-norms of negative windows are NaN in both libraries


@pytest.mark.parametrize("p", [2, 1.5, 3])
def test_lp_pool_matches_torch(p, device):
    x = X if p == 2 else POSITIVE
    same(lambda lib, t: lib.nn.functional.lp_pool2d(t, p, 2), x, device=device)
    same(lambda lib, t: lib.nn.LPPool2d(p, (2, 3), stride=1, ceil_mode=True)(t), x, device=device)
    same(lambda lib, t: lib.nn.LPPool1d(p, 3, stride=2)(t), x[:, :, 0], device=device)


@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 6, 5, 4), (1, 7, 2, 3, 2)])
def test_local_response_norm_matches_torch(shape, device):
    same(lambda lib, t: lib.nn.LocalResponseNorm(3, alpha=0.1, beta=0.6, k=2.0)(t), RNG.standard_normal(shape),
         device=device)
    same(lambda lib, t: lib.nn.functional.local_response_norm(t, 4), RNG.standard_normal(shape), device=device)


def test_channel_shuffle_and_rrelu_in_eval_match_torch(device):
    same(lambda lib, t: lib.nn.ChannelShuffle(3)(t), X, device=device)
    same(lambda lib, t: lib.nn.functional.channel_shuffle(t, 2), X[:, :, 0], device=device)
    same(lambda lib, t: lib.nn.functional.rrelu(t), RNG.standard_normal(20), device=device)
    same(lambda lib, t: lib.nn.RReLU(0.1, 0.4).eval()(t), RNG.standard_normal(20), device=device)


def test_rrelu_in_training_draws_a_slope_per_negative_element(device):
    tn.manual_seed(0)
    x = tn.tensor(RNG.standard_normal(1000), device=device, requires_grad=True)
    y = tn.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    ratio, negative = y.detach().numpy() / x.detach().numpy(), x.detach().numpy() < 0
    assert np.all(ratio[~negative] == 1)
    assert np.all((ratio[negative] >= 0.1) & (ratio[negative] <= 0.3)) and ratio[negative].std() > 0.03
    upstream = RNG.standard_normal(1000)
    y.backward(tn.tensor(upstream, device=device))
    np.testing.assert_allclose(x.grad.numpy(), upstream * ratio, rtol=1e-12)


MODULES = [lambda nn: nn.LPPool2d(2, 3), lambda nn: nn.LPPool1d(1.5, 2, stride=1, ceil_mode=True),
           lambda nn: nn.LocalResponseNorm(5), lambda nn: nn.ChannelShuffle(2), lambda nn: nn.RReLU(),
           lambda nn: nn.RReLU(0.1, 0.3, True)]


@pytest.mark.parametrize("make", MODULES)
def test_reprs_match_torch(make):
    assert repr(make(tn.nn)) == repr(make(torch.nn))


def test_errors_match_torch():
    for call, shape in ((lambda lib, t: lib.nn.functional.channel_shuffle(t, 2), (2, 5, 3)),
                        (lambda lib, t: lib.nn.functional.channel_shuffle(t, 2), (2, 4)),
                        (lambda lib, t: lib.nn.functional.channel_shuffle(t, 0), (2, 4, 3)),
                        (lambda lib, t: lib.nn.functional.local_response_norm(t, 2), (2, 3))):
        same_error(call, RNG.standard_normal(shape))
