"""Pooling against PyTorch: max/average/adaptive pooling over 1, 2 and 3 dims with every option
(stride, padding, dilation, ceil_mode, count_include_pad, divisor_override, return_indices, unbatched
input), values, indices and gradients under a random upstream gradient; PyTorch's errors; reprs.

Every test takes a ``device``; ``tests/cuda/sim_nn_api.py`` runs them on ``'cuda'`` in the simulator.
"""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import same, same_error, torch


RNG = np.random.default_rng(0)
X1 = RNG.standard_normal((2, 3, 9))
X2 = RNG.standard_normal((2, 2, 7, 6))
X3 = RNG.standard_normal((1, 2, 5, 4, 5))


def F(lib):
    return lib.nn.functional


MAX_2D = [
    dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(3, 2), stride=(2, 1)),
    dict(kernel_size=3, stride=2, ceil_mode=True), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=2, dilation=2), dict(kernel_size=3, stride=1, padding=1, dilation=2),
    dict(kernel_size=2, stride=[]),
]


@pytest.mark.parametrize("kwargs", MAX_2D, ids=str)
def test_max_pool2d_matches_torch(kwargs, device):
    same(lambda lib, x: F(lib).max_pool2d(x, **kwargs), X2, device=device)
    same(lambda lib, x: F(lib).max_pool2d(x, return_indices=True, **kwargs), X2, device=device)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=4, stride=3, ceil_mode=True), dict(kernel_size=3, dilation=3),
                                    dict(kernel_size=2, stride=1, padding=1, dilation=2, ceil_mode=True)], ids=str)
def test_max_pool1d_and_3d_match_torch(kwargs, device):
    same(lambda lib, x: F(lib).max_pool1d(x, return_indices=True, **kwargs), X1, device=device)
    same(lambda lib, x: F(lib).max_pool1d(x, **kwargs), X1[0], device=device)  # unbatched
    if kwargs["kernel_size"] <= 3 and kwargs.get("dilation", 1) == 1:
        same(lambda lib, x: F(lib).max_pool3d(x, return_indices=True, **kwargs), X3, device=device)


def test_max_pool_sends_the_gradient_to_the_first_maximum_as_torch(device):
    ties = np.array([[[[1.0, 1.0, 0.0], [1.0, 0.5, 0.5], [-np.inf, 0.0, 0.0]]]])
    for kwargs in (dict(kernel_size=2, stride=1), dict(kernel_size=2, stride=1, ceil_mode=True, padding=1),
                   dict(kernel_size=2, stride=1, dilation=2)):
        same(lambda lib, x: F(lib).max_pool2d(x, return_indices=True, **kwargs), ties, device=device)
    all_negative_infinity = np.full((1, 1, 3, 3), -np.inf)
    same(lambda lib, x: F(lib).max_pool2d(x, 2, padding=1, return_indices=True), all_negative_infinity,
         device=device)


AVG_2D = [
    dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=2, padding=1,
                                                                         count_include_pad=False),
    dict(kernel_size=3, stride=2, ceil_mode=True), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), divisor_override=5),
]


@pytest.mark.parametrize("kwargs", AVG_2D, ids=str)
def test_avg_pool2d_matches_torch(kwargs, device):
    same(lambda lib, x: F(lib).avg_pool2d(x, **kwargs), X2, device=device)
    same(lambda lib, x: F(lib).avg_pool2d(x, **kwargs), X2[0], device=device)  # unbatched


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                         count_include_pad=False), dict(kernel_size=4, stride=3, ceil_mode=True)],
                         ids=str)
def test_avg_pool1d_and_3d_match_torch(kwargs, device):
    same(lambda lib, x: F(lib).avg_pool1d(x, **kwargs), X1, device=device)
    if kwargs["kernel_size"] <= 3:
        same(lambda lib, x: F(lib).avg_pool3d(x, **kwargs), X3, device=device)


@pytest.mark.parametrize("size", [1, 2, 3, (4, 3), (2, None), (7, 6), (5, 1)], ids=str)
def test_adaptive_pool2d_of_any_output_size_matches_torch(size, device):
    same(lambda lib, x: F(lib).adaptive_avg_pool2d(x, size), X2, device=device)
    same(lambda lib, x: F(lib).adaptive_max_pool2d(x, size, return_indices=True), X2, device=device)
    same(lambda lib, x: F(lib).adaptive_max_pool2d(x, size), X2[0], device=device)


@pytest.mark.parametrize("size", [1, 4, 5, 9], ids=str)
def test_adaptive_pool1d_and_3d_match_torch(size, device):
    same(lambda lib, x: F(lib).adaptive_avg_pool1d(x, size), X1, device=device)
    same(lambda lib, x: F(lib).adaptive_max_pool1d(x, size, return_indices=True), X1, device=device)
    if size <= 5:
        same(lambda lib, x: F(lib).adaptive_avg_pool3d(x, (size, 2, 3)), X3, device=device)
        same(lambda lib, x: F(lib).adaptive_max_pool3d(x, size), X3, device=device)


def test_pooling_of_float32_matches_torch(device):
    x = X2.astype(np.float32)
    same(lambda lib, t: F(lib).max_pool2d(t, 3, 2, 1, ceil_mode=True), x, device=device, rtol=1e-6, atol=1e-6)
    same(lambda lib, t: F(lib).avg_pool2d(t, 3, 2, 1, count_include_pad=False), x, device=device, rtol=1e-6,
         atol=1e-6)
    same(lambda lib, t: F(lib).adaptive_avg_pool2d(t, (4, 5)), x, device=device, rtol=1e-6, atol=1e-6)


def test_pooling_errors_match_torch(device):
    for call in (lambda lib, x: F(lib).max_pool2d(x, 3, padding=2),
                 lambda lib, x: F(lib).avg_pool2d(x, 3, padding=2),
                 lambda lib, x: F(lib).max_pool2d(x, 8),
                 lambda lib, x: F(lib).avg_pool2d(x, 8),
                 lambda lib, x: F(lib).max_pool2d(x, (1, 2, 3)),
                 lambda lib, x: F(lib).max_pool2d(x, 2, stride=(1, 2, 3)),
                 lambda lib, x: F(lib).max_pool2d(x, 0),
                 lambda lib, x: F(lib).max_pool2d(x, 2, stride=0),
                 lambda lib, x: F(lib).max_pool2d(x, 2, dilation=0),
                 lambda lib, x: F(lib).max_pool2d(x, 2, padding=-1),
                 lambda lib, x: F(lib).max_pool2d(x[0, 0], 2),
                 lambda lib, x: F(lib).max_pool1d(x, 2),
                 lambda lib, x: F(lib).avg_pool1d(x, 2),
                 lambda lib, x: F(lib).avg_pool2d(x, 2, divisor_override=0),
                 lambda lib, x: F(lib).adaptive_avg_pool2d(x, (2, 3, 4)),
                 lambda lib, x: F(lib).adaptive_avg_pool2d(x[0, 0], 2),
                 lambda lib, x: F(lib).max_pool2d(x, 2.0),
                 lambda lib, x: F(lib).max_pool2d(x, 3, padding=2, dilation=2)):
        same_error(call, X2, device=device)


def test_empty_inputs_pool_as_torch(device):
    same(lambda lib, x: F(lib).max_pool2d(x, 2), np.zeros((0, 2, 4, 4)), device=device)
    empty = F(tn).adaptive_avg_pool2d(tn.tensor(X2, device=device), (0, 3))
    assert empty.shape == tuple(F(torch).adaptive_avg_pool2d(torch.tensor(X2), (0, 3)).shape) == (2, 2, 0, 3)


MODULES = [
    lambda nn: nn.MaxPool1d(2), lambda nn: nn.MaxPool1d(3, 2, 1, 2, True, True), lambda nn: nn.AvgPool1d(2),
    lambda nn: nn.AvgPool1d(3, 2, 1, True, False), lambda nn: nn.MaxPool2d(2),
    lambda nn: nn.MaxPool2d((2, 3), (1, 2), 1, ceil_mode=True), lambda nn: nn.AvgPool2d(2),
    lambda nn: nn.AvgPool2d(3, 2, 1, True, False, 2), lambda nn: nn.MaxPool3d(2), lambda nn: nn.AvgPool3d(2),
    lambda nn: nn.AdaptiveAvgPool1d(3), lambda nn: nn.AdaptiveAvgPool2d(1), lambda nn: nn.AdaptiveAvgPool2d((2, None)),
    lambda nn: nn.AdaptiveAvgPool3d(1), lambda nn: nn.AdaptiveMaxPool1d(3), lambda nn: nn.AdaptiveMaxPool2d(3, True),
    lambda nn: nn.AdaptiveMaxPool3d(2),
]


@pytest.mark.parametrize("make", MODULES)
def test_pooling_module_reprs_match_torch(make):
    assert repr(make(tn.nn)) == repr(make(torch.nn))


@pytest.mark.parametrize("index", [1, 3, 5, 7, 12, 15])
def test_pooling_modules_match_torch(index, device):
    make = MODULES[index]
    x = {1: X1, 3: X1}.get(index, X2)
    same(lambda lib, t: make(lib.nn)(t), x, device=device)


def test_isinstance_paths_of_pooling_layers():
    assert isinstance(tn.nn.MaxPool2d(2), tn.nn.modules.pooling._MaxPoolNd)
    assert isinstance(tn.nn.AdaptiveAvgPool2d(1), tn.nn.modules.pooling._AdaptiveAvgPoolNd)
    assert not isinstance(tn.nn.AdaptiveMaxPool2d(1), tn.nn.modules.pooling._AdaptiveAvgPoolNd)
