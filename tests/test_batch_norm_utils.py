"""BatchNorm housekeeping: ``freeze_batch_norm``/``unfreeze_batch_norm`` and
``recompute_batch_norm_statistics``, checked against float64 numpy references."""
import numpy as np
import pytest

import tinynorm
from tinynorm import nn
from tinynorm.nn.utils import freeze_batch_norm, recompute_batch_norm_statistics, unfreeze_batch_norm

EPS = 1e-5


def batch_norm_reference(x, mean, var, weight, bias):
    """Per-channel (x - mean) / sqrt(var + eps) * weight + bias on (N, C), in float64."""
    return (x.astype(np.float64) - mean) / np.sqrt(var + EPS) * weight + bias


def trained_batch_norm(rng, steps=3):
    """A float32 BatchNorm1d(3) with non-trivial parameters and running statistics."""
    layer = nn.BatchNorm1d(3, momentum=0.5)
    layer.weight.array[...] = rng.uniform(0.5, 2, 3)
    layer.bias.array[...] = rng.standard_normal(3)
    for _ in range(steps):
        layer(tinynorm.tensor((rng.standard_normal((8, 3)) * 2 + 3).astype(np.float32)))
    return layer


def state(layer):
    return {key: value.numpy().copy() for key, value in layer.state_dict().items()}


def test_frozen_layer_in_training_mode_uses_and_keeps_running_statistics():
    rng = np.random.default_rng(0)
    layer = trained_batch_norm(rng)
    before = state(layer)
    freeze_batch_norm(layer).train()
    # a batch of one: fine, since no batch statistics are needed
    x = tinynorm.tensor((rng.standard_normal((1, 3)) + 3).astype(np.float32), requires_grad=True)
    y = layer(x)
    mean, var, weight, bias = (before[k].astype(np.float64) for k in ("running_mean", "running_var", "weight", "bias"))
    expected = batch_norm_reference(x.numpy(), mean, var, weight, bias)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-6)
    dy = rng.standard_normal((1, 3)).astype(np.float32)
    y.backward(tinynorm.tensor(dy))
    # constant statistics: the input gradient has no batch-mean terms, and the affine still learns
    np.testing.assert_allclose(x.grad.numpy(), dy * weight / np.sqrt(var + EPS), rtol=1e-5, atol=1e-6)
    assert layer.weight.grad is not None
    for key, value in state(layer).items():
        np.testing.assert_array_equal(value, before[key], err_msg=key)


def test_freeze_survives_model_train_and_unfreeze_restores_batch_statistics():
    rng = np.random.default_rng(1)
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU(), nn.Linear(3, 2), nn.BatchNorm1d(2))
    for _ in range(3):
        model(tinynorm.tensor(rng.standard_normal((6, 4)).astype(np.float32) + 1))
    x = tinynorm.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    eval_output = model.eval()(x).numpy()
    before = state(model)

    assert freeze_batch_norm(model) is model
    model.train()
    assert all(m.training for m in model.modules())
    np.testing.assert_array_equal(model(x).numpy(), eval_output)
    for key, value in state(model).items():
        np.testing.assert_array_equal(value, before[key], err_msg=key)

    assert unfreeze_batch_norm(model) is model
    train_output = model(x).numpy()
    assert not np.allclose(train_output, eval_output, atol=1e-3)
    assert model[1].num_batches_tracked.item() == before["1.num_batches_tracked"] + 1
    assert not np.allclose(model[1].running_mean.numpy(), before["1.running_mean"])


def test_freeze_needs_running_statistics():
    with pytest.raises(ValueError, match="BatchNorm2d: cannot freeze a layer without running statistics"):
        nn.BatchNorm2d(3, track_running_stats=False).freeze()


# ------------------------------------------------------------------------------ recompute
def linear_reference(layer, x):
    return x @ layer.weight.numpy().astype(np.float64).T + layer.bias.numpy()


def recompute_reference(model, batches):
    """The plain average over ``batches`` of each BatchNorm's batch mean and unbiased variance, with
    every BatchNorm normalizing by its batch statistics and Dropout off (float64 numpy forward)."""
    linear1, _, norm1, _, linear2, norm2 = model
    sums = {norm1: [0, 0], norm2: [0, 0]}
    for x in batches:
        h = linear_reference(linear1, x.astype(np.float64))
        sums[norm1][0] += h.mean(0)
        sums[norm1][1] += h.var(0, ddof=1)
        h = np.maximum(batch_norm_reference(h, h.mean(0), h.var(0), norm1.weight.numpy(), norm1.bias.numpy()), 0)
        h = linear_reference(linear2, h)
        sums[norm2][0] += h.mean(0)
        sums[norm2][1] += h.var(0, ddof=1)
    return {layer: (mean / len(batches), var / len(batches)) for layer, (mean, var) in sums.items()}


def mixed_mode_model(rng):
    """Linear -> Dropout -> BatchNorm -> ReLU -> Linear -> BatchNorm (frozen), trained a little, with a
    mix of training flags, and BatchNorm affine parameters far from (1, 0)."""
    model = nn.Sequential(nn.Linear(4, 5), nn.Dropout(0.5), nn.BatchNorm1d(5, momentum=0.3), nn.ReLU(),
                          nn.Linear(5, 3), nn.BatchNorm1d(3))
    for _ in range(2):
        model(tinynorm.tensor(rng.standard_normal((6, 4)).astype(np.float32)))
    for norm in (model[2], model[5]):
        norm.weight.array[...] = rng.uniform(0.5, 2, norm.num_features)
        norm.bias.array[...] = rng.standard_normal(norm.num_features)
    model[4].eval()
    model[5].freeze()
    return model


@pytest.mark.parametrize("batch_form", ["tensor", "pair", "forward"])
def test_recompute_gives_the_average_of_batch_statistics_and_restores_the_model(batch_form):
    rng = np.random.default_rng(2)
    model = mixed_mode_model(rng)
    arrays = [(rng.standard_normal((8, 4)) * (k + 1) + 3 * k).astype(np.float32) for k in range(3)]
    expected = recompute_reference(model, arrays)
    modes = [m.training for m in model.modules()]
    params = {name: p.numpy().copy() for name, p in model.named_parameters()}

    tensors = [tinynorm.tensor(x) for x in arrays]
    if batch_form == "tensor":
        recompute_batch_norm_statistics(model, tensors)
    elif batch_form == "pair":
        recompute_batch_norm_statistics(model, [(x, tinynorm.zeros(8)) for x in tensors])
    else:
        recompute_batch_norm_statistics(model, [{"input": x} for x in tensors], forward=lambda m, b: m(b["input"]))

    for norm, (mean, var) in expected.items():
        np.testing.assert_allclose(norm.running_mean.numpy(), mean, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(norm.running_var.numpy(), var, rtol=1e-5, atol=1e-5)
        assert norm.num_batches_tracked.item() == 3
        assert norm.running_mean.dtype == norm.running_var.dtype == np.float32
    assert [m.training for m in model.modules()] == modes
    assert (model[2].momentum, model[5].momentum) == (0.3, 0.1)
    assert (model[2].frozen, model[5].frozen) == (False, True)
    for name, param in model.named_parameters():
        np.testing.assert_array_equal(param.numpy(), params[name], err_msg=name)
    assert (model[1](tinynorm.ones(200)).numpy() == 0).any(), "Dropout must drop again after the recompute"


def test_recompute_restores_the_model_when_a_batch_fails():
    model = mixed_mode_model(np.random.default_rng(3))
    modes = [m.training for m in model.modules()]

    def batches():
        yield tinynorm.ones(4, 4)
        raise RuntimeError("data loader failed")

    with pytest.raises(RuntimeError, match="data loader failed"):
        recompute_batch_norm_statistics(model, batches())
    assert [m.training for m in model.modules()] == modes
    assert (model[2].momentum, model[5].momentum, model[5].frozen) == (0.3, 0.1, True)


def test_recompute_fixes_stale_statistics():
    """A classifier whose BatchNorm statistics were corrupted gets its eval accuracy back."""
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, 256)
    features = np.stack([50 + np.where(labels == 0, 10.0, -10.0) + 2 * rng.standard_normal(256),
                         rng.standard_normal(256)], axis=1).astype(np.float32)
    model = nn.Sequential(nn.BatchNorm1d(2), nn.Linear(2, 2))
    model[1].weight.array[...] = [[1, 0], [-1, 0]]  # class 0 when the normalized first feature is positive
    model[1].bias.array[...] = 0
    batches = [tinynorm.tensor(features[k:k + 64]) for k in range(0, 256, 64)]

    def accuracy():
        return float((model.eval()(tinynorm.tensor(features)).numpy().argmax(1) == labels).mean())

    recompute_batch_norm_statistics(model, batches)
    good_accuracy, good_state = accuracy(), state(model)
    assert good_accuracy > 0.97
    model[0].running_mean.array[...] = 0  # stale: statistics of some other data
    model[0].running_var.array[...] = 1
    assert accuracy() < 0.6
    recompute_batch_norm_statistics(model.train(), batches)
    assert accuracy() == good_accuracy
    for key, value in state(model).items():
        np.testing.assert_allclose(value, good_state[key], rtol=1e-6, err_msg=key)
