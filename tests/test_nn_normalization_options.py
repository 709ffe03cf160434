"""The normalization layers' ``bias=False`` (a learned scale, no shift) against PyTorch: parameters,
state_dict keys, reprs, training steps (outputs, input and weight gradients, running statistics) and
evaluation; ``SyncBatchNorm.convert_sync_batchnorm`` keeps the missing bias.

Every test takes a ``device``; ``tests/cuda/sim_nn_api.py`` runs them on ``'cuda'`` in the simulator
(in float32: the CUDA norms compute in float32).
"""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import torch

LAYERS = {
    "BatchNorm1d": (lambda nn: nn.BatchNorm1d(3, bias=False), (6, 3)),
    "BatchNorm1d cumulative": (lambda nn: nn.BatchNorm1d(3, momentum=None, bias=False), (4, 3, 5)),
    "BatchNorm2d": (lambda nn: nn.BatchNorm2d(3, bias=False), (4, 3, 2, 3)),
    "BatchNorm3d": (lambda nn: nn.BatchNorm3d(2, eps=1e-3, bias=False), (2, 2, 2, 3, 2)),
    "BatchNorm2d batch statistics": (lambda nn: nn.BatchNorm2d(3, track_running_stats=False, bias=False), (2, 3, 2, 2)),
    "InstanceNorm1d": (lambda nn: nn.InstanceNorm1d(3, affine=True, track_running_stats=True, bias=False), (2, 3, 7)),
    "InstanceNorm2d": (lambda nn: nn.InstanceNorm2d(2, affine=True, bias=False), (3, 2, 4, 3)),
    "InstanceNorm3d": (lambda nn: nn.InstanceNorm3d(2, affine=True, track_running_stats=True, bias=False),
                       (2, 2, 3, 2, 2)),
    "GroupNorm": (lambda nn: nn.GroupNorm(2, 4, bias=False), (3, 4, 5)),
}


def dtype_on(device):
    """float64 on the CPU; float32 on the CUDA device, whose norms compute in float32."""
    return np.float64 if device == "cpu" else np.float32


@pytest.mark.parametrize("name", LAYERS)
def test_layers_without_bias_match_torch(name, device):
    make, shape = LAYERS[name]
    dtype = dtype_on(device)
    rtol, atol = (1e-10, 1e-12) if dtype == np.float64 else (2e-5, 2e-6)
    rng = np.random.default_rng(0)
    theirs = make(torch.nn).double()
    ours = make(tn.nn).to(dtype)
    assert ours.bias is None and theirs.bias is None
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()] == ["weight"]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_array_equal(ours.weight.numpy(), theirs.weight.detach().numpy())  # initialized to ones
    weight = rng.uniform(0.5, 2.0, ours.weight.shape)
    ours.weight.data.copy_(tn.tensor(weight, dtype=dtype))
    theirs.weight.data.copy_(torch.tensor(weight))
    ours.to(device)

    for training in (True, True, False):  # two steps with batch statistics, then the running ones
        ours.train(training)
        theirs.train(training)
        x = rng.standard_normal(shape) * 3 + 1
        upstream = rng.standard_normal(shape)
        x_ours, x_theirs = tn.tensor(x, dtype=dtype, device=device, requires_grad=True), torch.tensor(x, requires_grad=True)
        y_ours, y_theirs = ours(x_ours), theirs(x_theirs)
        y_ours.backward(tn.tensor(upstream, dtype=dtype, device=device))
        y_theirs.backward(torch.tensor(upstream))
        np.testing.assert_allclose(y_ours.detach().numpy(), y_theirs.detach().numpy(), rtol=rtol, atol=atol)
        np.testing.assert_allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), rtol=rtol, atol=50 * atol)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=rtol, atol=50 * atol)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=rtol, atol=atol, err_msg=key)


def test_reset_parameters_without_bias_resets_the_weight_only():
    layer = tn.nn.BatchNorm2d(3, bias=False)
    layer.weight.data.fill_(4.0)
    layer.running_mean.fill_(2.0)
    layer.reset_parameters()
    assert layer.bias is None and np.all(layer.weight.numpy() == 1) and not layer.running_mean.numpy().any()
    group = tn.nn.GroupNorm(1, 2, bias=False)
    group.weight.data.fill_(3.0)
    group.reset_parameters()
    assert group.bias is None and np.all(group.weight.numpy() == 1)


def test_bias_false_without_affine_has_neither_parameter_as_torch():
    for make in (lambda nn: nn.BatchNorm1d(2, affine=False, bias=False), lambda nn: nn.GroupNorm(1, 2, affine=False, bias=False)):
        ours, theirs = make(tn.nn), make(torch.nn)
        assert ours.weight is None and ours.bias is None
        assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())


def test_convert_sync_batchnorm_keeps_a_missing_bias_as_torch():
    def build(nn):
        return nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3, bias=False), nn.BatchNorm1d(3))

    ours = tn.nn.SyncBatchNorm.convert_sync_batchnorm(build(tn.nn))
    theirs = torch.nn.SyncBatchNorm.convert_sync_batchnorm(build(torch.nn))
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours[1].bias is None and ours[2].bias is not None


def test_instance_norm3d_defaults_and_unbatched_input_match_torch(device):
    x = np.random.default_rng(1).standard_normal((2, 3, 2, 4)).astype(dtype_on(device))  # (C, D, H, W)
    ours, theirs = tn.nn.InstanceNorm3d(2), torch.nn.InstanceNorm3d(2)
    assert repr(ours) == repr(theirs)
    np.testing.assert_allclose(ours(tn.tensor(x, device=device)).numpy(), theirs(torch.tensor(x)).numpy(),
                               rtol=2e-5, atol=2e-6)
    assert isinstance(ours, tn.nn.modules.instancenorm._InstanceNorm)
    with pytest.raises(ValueError, match="expected 5D input"):
        ours(tn.ones(2, 3, device=device))
