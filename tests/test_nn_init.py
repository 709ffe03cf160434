"""nn.init against PyTorch: calculate_gain's table, the deterministic fills (eye_, dirac_, constant_)
exactly, the random ones by their distributions (bounds, moments, orthogonality), reproducibility with a
seeded ``tinynorm.Generator``, and PyTorch's errors.

Every test takes a ``device``; ``tests/cuda/sim_nn_api.py`` runs them on ``'cuda'`` in the simulator.
"""
import math
import statistics

import numpy as np
import pytest

import tinynorm as tn
from nn_compare import torch

init = tn.nn.init


NONLINEARITIES = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                  "sigmoid", "tanh", "relu", "leaky_relu", "selu"]


@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
def test_calculate_gain_matches_torch(nonlinearity):
    assert init.calculate_gain(nonlinearity) == torch.nn.init.calculate_gain(nonlinearity)
    assert init.calculate_gain(nonlinearity, 0.2) == torch.nn.init.calculate_gain(nonlinearity, 0.2)


def test_calculate_gain_errors_match_torch():
    for args in (("softmax",), ("leaky_relu", "x"), ("leaky_relu", True)):
        with pytest.raises(ValueError) as theirs:
            torch.nn.init.calculate_gain(*args)
        with pytest.raises(ValueError) as ours:
            init.calculate_gain(*args)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("shape, fill", [((3, 5), "eye_"), ((5, 3), "eye_"), ((4, 2, 3), "dirac_"),
                                         ((6, 3, 3, 3), "dirac_"), ((4, 4, 1, 3, 3), "dirac_")])
def test_deterministic_fills_match_torch(shape, fill, device):
    ours = tn.empty(*shape, device=device)
    theirs = torch.empty(shape)
    assert getattr(init, fill)(ours) is ours
    getattr(torch.nn.init, fill)(theirs)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    if fill == "dirac_" and shape[0] % 2 == 0:
        init.dirac_(ours, groups=2)
        torch.nn.init.dirac_(theirs, groups=2)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_init_errors_match_torch(device):
    cases = [("eye_", (3,), {}), ("dirac_", (3, 3), {}), ("dirac_", (3, 2, 2), {"groups": 2}),
             ("orthogonal_", (3,), {}), ("sparse_", (3, 2, 2), {"sparsity": 0.5}), ("xavier_uniform_", (3,), {}),
             ("kaiming_normal_", (3, 2), {"mode": "fan_avg"}), ("kaiming_uniform_", (3, 2), {"nonlinearity": "x"})]
    for name, shape, kwargs in cases:
        with pytest.raises(ValueError) as theirs:
            getattr(torch.nn.init, name)(torch.empty(shape), **kwargs)
        with pytest.raises(ValueError) as ours:
            getattr(init, name)(tn.empty(*shape, device=device), **kwargs)
        assert str(ours.value) == str(theirs.value)


UNIFORM_BOUNDS = {
    "uniform_": (lambda t, g: init.uniform_(t, -0.3, 0.7, g), (-0.3, 0.7)),
    "xavier_uniform_": (lambda t, g: init.xavier_uniform_(t, 2.0, g), 2 * math.sqrt(6 / (400 + 200))),
    "kaiming_uniform_": (lambda t, g: init.kaiming_uniform_(t, a=math.sqrt(5), generator=g),
                         math.sqrt(6 / ((1 + 5) * 400))),
    "kaiming_uniform_ relu fan_out": (lambda t, g: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu",
                                                                         generator=g), math.sqrt(6 / 200)),
}


@pytest.mark.parametrize("name", UNIFORM_BOUNDS)
def test_uniform_inits_fill_their_range(name, device):
    fill, bound = UNIFORM_BOUNDS[name]
    low, high = bound if isinstance(bound, tuple) else (-bound, bound)
    values = fill(tn.empty(200, 400, device=device), tn.Generator(device).manual_seed(0)).numpy()
    assert low <= values.min() < low + 0.01 * (high - low) and high - 0.01 * (high - low) < values.max() < high
    assert abs(values.mean() - (low + high) / 2) < 0.01 * (high - low)


NORMAL_STDS = {
    "normal_": (lambda t, g: init.normal_(t, 0.5, 2.0, g), 0.5, 2.0),
    "xavier_normal_": (lambda t, g: init.xavier_normal_(t, 1.0, g), 0.0, math.sqrt(2 / 600)),
    "kaiming_normal_": (lambda t, g: init.kaiming_normal_(t, nonlinearity="relu", generator=g), 0.0, math.sqrt(2 / 400)),
    "kaiming_normal_ fan_out": (lambda t, g: init.kaiming_normal_(t, mode="fan_out", generator=g), 0.0,
                                math.sqrt(2 / 1.0001 / 200)),
}


@pytest.mark.parametrize("name", NORMAL_STDS)
def test_normal_inits_have_their_moments(name, device):
    fill, mean, std = NORMAL_STDS[name]
    values = fill(tn.empty(200, 400, device=device), tn.Generator(device).manual_seed(1)).numpy()
    assert abs(values.mean() - mean) < 0.01 * std + 1e-12 and abs(values.std() / std - 1) < 0.01


def test_trunc_normal_is_a_truncated_normal(device):
    values = init.trunc_normal_(tn.empty(100, 200, device=device), mean=1.0, std=2.0, a=0.0, b=3.0,
                                generator=tn.Generator(device).manual_seed(2)).numpy().astype(np.float64)
    assert 0.0 <= values.min() and values.max() <= 3.0
    # Mean and standard deviation of N(1, 2^2) truncated to [0, 3] (alpha = -0.5, beta = 1).
    normal = statistics.NormalDist()
    alpha, beta = -0.5, 1.0
    z = normal.cdf(beta) - normal.cdf(alpha)
    shift = (normal.pdf(alpha) - normal.pdf(beta)) / z
    expected_mean = 1.0 + 2.0 * shift
    expected_var = 4.0 * (1 + (alpha * normal.pdf(alpha) - beta * normal.pdf(beta)) / z - shift**2)
    assert abs(values.mean() - expected_mean) < 0.02 and abs(values.var() / expected_var - 1) < 0.03
    with pytest.warns(UserWarning, match="mean is more than 2 std"):  # a far tail still works
        far = init.trunc_normal_(tn.empty(1000, device=device), a=5.0, b=6.0).numpy()
    assert 5.0 <= far.min() and far.max() <= 6.0 and far.mean() < 5.3


@pytest.mark.parametrize("shape", [(4, 9), (9, 4), (6, 2, 3, 3)])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape, device):
    ours = init.orthogonal_(tn.empty(*shape, dtype=tn.float64, device=device), gain=2.0,
                            generator=tn.Generator(device).manual_seed(3))
    flat = ours.numpy().reshape(shape[0], -1)
    gram = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(gram, 4.0 * np.eye(len(gram)), atol=1e-12)


def test_sparse_zeroes_a_fraction_of_every_column(device):
    values = init.sparse_(tn.empty(10, 50, device=device), 0.3, std=0.5,
                          generator=tn.Generator(device).manual_seed(4)).numpy()
    assert ((values == 0).sum(axis=0) == 3).all()
    assert abs(values[values != 0].std() - 0.5) < 0.05


@pytest.mark.parametrize("name", ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_",
                                  "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_"])
def test_random_inits_draw_from_the_given_generator(name, device):
    fill = getattr(init, name)
    extra = {"sparse_": (0.5,)}.get(name, ())
    draws = [fill(tn.empty(5, 4, device=device), *extra, generator=tn.Generator(device).manual_seed(7)).numpy()
             for _ in range(2)]
    np.testing.assert_array_equal(draws[0], draws[1])
    tn.manual_seed(7)
    unseeded = fill(tn.empty(5, 4, device=device), *extra).numpy()
    other = fill(tn.empty(5, 4, device=device), *extra, generator=tn.Generator(device).manual_seed(8)).numpy()
    assert not np.array_equal(draws[0], other) and not np.array_equal(unseeded, other)


def test_inits_fill_parameters_in_place_without_recording(device):
    layer = tn.nn.Linear(4, 3).to(device)
    weight = layer.weight
    version = weight._version
    assert init.orthogonal_(weight) is weight and weight._version > version
    assert weight.requires_grad and weight.grad_fn is None
    with pytest.warns(UserWarning, match="zero-element"):
        assert init.kaiming_uniform_(tn.empty(0, 3, device=device)).shape == (0, 3)
