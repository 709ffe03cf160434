"""The normalization LAYERS against the float64 numpy references and against PyTorch's modules.

Each layer's forward and backward (with a random upstream gradient and random affine parameters, so
that a wrong weight or bias gradient cannot hide) is compared with :mod:`tinynorm.kernels.reference`
(the formulas in plain numpy, themselves checked against finite differences in
``tests/kernels/test_norm_kernels.py``) and with ``torch.nn`` where it is installed. Then: gradcheck,
running statistics, state dicts, numerics, dtypes, reset and repr. Bad input and its error messages
are swept in ``tests/robustness/test_norm_robustness.py``; the kernels are tested in
``tests/kernels/test_norm_kernels.py``; BatchNorm's freeze/recompute utilities in
``tests/test_batch_norm_utils.py``.
"""
import math
import re
import zlib

import numpy as np
import pytest

import tinynorm
from tinynorm import nn
from tinynorm.autograd import gradcheck
from tinynorm.kernels import reference as R

DTYPES = [np.float32, np.float64]
BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
FUNCTION_OF = {**{kind: "batch_norm" for kind in BATCH_NORMS}, nn.InstanceNorm1d: "instance_norm",
               nn.InstanceNorm2d: "instance_norm", nn.LayerNorm: "layer_norm", nn.RMSNorm: "rms_norm",
               nn.GroupNorm: "group_norm"}


def tolerance(dtype):
    return {"rtol": 2e-4, "atol": 2e-5} if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-10}


# ------------------------------------------------------------------------------- float64 reference
def channel_shape(x):
    """(1, C, 1, ...): how a per-channel parameter broadcasts against (N, C, *)."""
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def reference(layer, x, dy):
    """The float64 reference (y, grads) of any tinynorm normalization layer in its current mode: the
    functions of :mod:`tinynorm.kernels.reference` on the kernels' layouts, (rows, cols) or (N, C, S)."""
    params = {name: p.numpy() for name, p in layer.named_parameters()}
    weight, bias = params.get("weight"), params.get("bias")
    flat_w, flat_b = (None if p is None else p.reshape(-1) for p in (weight, bias))
    if isinstance(layer, (nn.InstanceNorm1d, nn.InstanceNorm2d)) and x.ndim == layer._spatial_dims + 1:
        y, grads = reference(layer, x[None], dy[None])  # unbatched
        return y[0], {**grads, "x": grads["x"][0]}
    if isinstance(layer, (nn.LayerNorm, nn.RMSNorm)):
        x2, dy2 = x.reshape(-1, math.prod(layer.normalized_shape)), dy.reshape(-1, math.prod(layer.normalized_shape))
        if isinstance(layer, nn.LayerNorm):
            y, mean, rstd = R.layer_norm_forward(x2, flat_w, flat_b, layer.eps)
            dx, dweight, dbias = R.layer_norm_backward(dy2, x2, mean, rstd, flat_w)
        else:
            eps = np.finfo(x.dtype).eps if layer.eps is None else layer.eps
            y, rstd = R.rms_norm_forward(x2, flat_w, eps)
            (dx, dweight), dbias = R.rms_norm_backward(dy2, x2, rstd, flat_w), None
    else:
        x3, dy3 = x.reshape(x.shape[0], x.shape[1], -1), dy.reshape(x.shape[0], x.shape[1], -1)
        batch_stats = layer.training or not getattr(layer, "track_running_stats", False)
        if isinstance(layer, nn.GroupNorm) or (batch_stats and isinstance(layer, (nn.InstanceNorm1d, nn.InstanceNorm2d))):
            groups = layer.num_groups if isinstance(layer, nn.GroupNorm) else x.shape[1]
            y, mean, rstd = R.group_norm_forward(x3, groups, flat_w, flat_b, layer.eps)
            dx, dweight, dbias = R.group_norm_backward(dy3, x3, mean, rstd, groups, flat_w)
        else:  # BatchNorm on batch statistics, or any of them on running statistics
            mean, var = (R.batch_norm_stats(x3) if batch_stats
                         else (layer.running_mean.numpy(), layer.running_var.numpy().astype(np.float64)))
            rstd = 1 / np.sqrt(var + layer.eps)
            y = R.batch_norm_forward(x3, mean, rstd, flat_w, flat_b)
            dx, dweight, dbias = R.batch_norm_backward(dy3, x3, mean, rstd, flat_w, batch_stats)
    grads = {"x": dx.reshape(x.shape)}
    if weight is not None:
        grads["weight"] = dweight.reshape(weight.shape)
    if bias is not None:
        grads["bias"] = dbias.reshape(bias.shape)
    return y.reshape(x.shape), grads


# ------------------------------------------------------------ running tinynorm and torch layers
def randomize_parameters(layer, rng):
    """Non-trivial affine parameters (weight far from 1, bias far from 0)."""
    for name, param in layer.named_parameters():
        values = 1.0 + 0.5 * rng.standard_normal(param.shape) if name == "weight" else rng.standard_normal(param.shape)
        param.array[...] = values


def run_tinynorm(layer, x, dy):
    xt = tinynorm.tensor(x, requires_grad=True)
    y = layer(xt)
    y.backward(tinynorm.tensor(dy))
    grads = {"x": xt.grad.numpy()}
    grads.update({name: p.grad.numpy() for name, p in layer.named_parameters()})
    return y.numpy(), grads


def torch_module(torch, layer):
    """A fresh ``torch.nn`` module configured as ``layer`` (same dtype), with torch's own initial state."""
    kind = type(layer).__name__
    dtype = getattr(torch, np.dtype(layer_dtype(layer)).name)
    if isinstance(layer, (nn.LayerNorm, nn.RMSNorm)):
        extra = {"bias": layer.bias is not None} if kind == "LayerNorm" else {}
        return getattr(torch.nn, kind)(layer.normalized_shape, eps=layer.eps,
                                       elementwise_affine=layer.elementwise_affine, dtype=dtype, **extra)
    if isinstance(layer, nn.GroupNorm):
        return torch.nn.GroupNorm(layer.num_groups, layer.num_channels, eps=layer.eps, affine=layer.affine, dtype=dtype)
    return getattr(torch.nn, kind)(layer.num_features, eps=layer.eps, momentum=layer.momentum, affine=layer.affine,
                                   track_running_stats=layer.track_running_stats, dtype=dtype)


def torch_twin(torch, layer):
    """The ``torch.nn`` module with the same configuration, parameters, buffers and mode as ``layer``."""
    twin = torch_module(torch, layer)
    twin.load_state_dict({key: torch.from_numpy(value.numpy().copy()) for key, value in layer.state_dict().items()})
    return twin.train(layer.training)


def layer_dtype(layer):
    tensors = list(layer.parameters()) + [b for b in layer.buffers() if b.dtype.kind == "f"]
    return tensors[0].dtype if tensors else np.float32


def run_torch(torch, twin, x, dy):
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    y = twin(xt)
    y.backward(torch.from_numpy(dy.copy()))
    grads = {"x": xt.grad.numpy()}
    grads.update({name: p.grad.numpy() for name, p in twin.named_parameters()})
    return y.detach().numpy(), grads


def assert_results_close(got, expected, dtype, what):
    (y, grads), (y_ref, grads_ref) = got, expected
    np.testing.assert_allclose(y, y_ref, **tolerance(dtype), err_msg=f"{what}: output")
    assert sorted(grads) == sorted(grads_ref), what
    for name in grads_ref:
        np.testing.assert_allclose(grads[name], grads_ref[name], **tolerance(dtype), err_msg=f"{what}: grad of {name}")


def check_layer(layer, shape, dtype, seed, torch=None):
    """Forward + backward of ``layer`` equal the float64 reference (and torch's module when given)."""
    rng = np.random.default_rng(seed)
    randomize_parameters(layer, rng)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    twin = torch_twin(torch, layer) if torch is not None else None
    expected = reference(layer, x, dy)
    got = run_tinynorm(layer, x, dy)
    assert got[0].dtype == dtype and all(g.dtype == dtype for g in got[1].values())
    assert_results_close(got, expected, dtype, f"{layer!r} vs float64 reference")
    if twin is not None:
        assert_results_close(got, run_torch(torch, twin, x, dy), dtype, f"{layer!r} vs torch")


# ------------------------------------------------------------------------- layer/shape matrix
def layer_configs(rng):
    """(name, make(dtype, affine, eps) -> layer, input shape, eps values); random sizes from ``rng``."""
    def batch():
        return int(rng.integers(1, 4))

    def side():
        return int(rng.integers(2, 6))

    eps_values, rms_eps_values = (1e-5, 1e-2), (None, 1e-6, 1e-2)
    return [
        ("bn1d-NC", lambda d, a, e: nn.BatchNorm1d(3, e, affine=a, dtype=d), (side(), 3), eps_values),
        ("bn1d-NCL", lambda d, a, e: nn.BatchNorm1d(4, e, affine=a, dtype=d), (batch(), 4, side()), eps_values),
        ("bn2d", lambda d, a, e: nn.BatchNorm2d(3, e, affine=a, dtype=d), (batch(), 3, side(), side()), eps_values),
        ("bn3d", lambda d, a, e: nn.BatchNorm3d(2, e, affine=a, dtype=d), (batch(), 2, side(), 2, side()), eps_values),
        ("in1d", lambda d, a, e: nn.InstanceNorm1d(3, e, affine=a, dtype=d), (batch(), 3, side()), eps_values),
        ("in1d-unbatched", lambda d, a, e: nn.InstanceNorm1d(3, e, affine=a, dtype=d), (3, side()), eps_values),
        ("in2d", lambda d, a, e: nn.InstanceNorm2d(2, e, affine=a, dtype=d), (batch(), 2, side(), side()), eps_values),
        ("in2d-unbatched", lambda d, a, e: nn.InstanceNorm2d(2, e, affine=a, dtype=d), (2, side(), side()), eps_values),
        ("ln-int", lambda d, a, e: nn.LayerNorm(5, e, a, dtype=d), (batch(), side(), 5), eps_values),
        ("ln-tuple", lambda d, a, e: nn.LayerNorm((3, 4), e, a, dtype=d), (batch(), 3, 4), eps_values),
        ("ln-no-bias", lambda d, a, e: nn.LayerNorm(7, e, a, bias=False, dtype=d), (batch(), 7), eps_values),
        ("rms-int", lambda d, a, e: nn.RMSNorm(6, e, a, dtype=d), (batch(), side(), 6), rms_eps_values),
        ("rms-tuple", lambda d, a, e: nn.RMSNorm((2, 3), e, a, dtype=d), (batch(), 2, 3), rms_eps_values),
        ("gn-1-groups-1d", lambda d, a, e: nn.GroupNorm(1, 4, e, a, dtype=d), (batch(), 4, side()), eps_values),
        ("gn-2-groups-2d", lambda d, a, e: nn.GroupNorm(2, 4, e, a, dtype=d), (batch(), 4, side(), side()), eps_values),
        ("gn-3-groups-3d", lambda d, a, e: nn.GroupNorm(3, 6, e, a, dtype=d), (batch(), 6, 2, side(), 2), eps_values),
        ("gn-6-groups-1d", lambda d, a, e: nn.GroupNorm(6, 6, e, a, dtype=d), (batch(), 6, side()), eps_values),
        ("gn-2-groups-0d", lambda d, a, e: nn.GroupNorm(2, 4, e, a, dtype=d), (batch(), 4), eps_values),
    ]


CASES = [(f"{name}-affine={affine}-eps={eps}", make, shape, affine, eps)
         for name, make, shape, eps_values in layer_configs(np.random.default_rng(7))
         for affine in (True, False) for eps in eps_values]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_layer_matches_reference_and_torch(case, dtype):
    torch = pytest.importorskip("torch")
    name, make, shape, affine, eps = case
    check_layer(make(dtype, affine, eps), shape, dtype, seed=zlib.crc32(name.encode()), torch=torch)


@pytest.mark.parametrize("case", CASES[::4], ids=[c[0] for c in CASES[::4]])
def test_layer_matches_reference_without_torch(case):
    """The numpy reference alone: what still runs where torch is not installed."""
    name, make, shape, affine, eps = case
    check_layer(make(np.float32, affine, eps), shape, np.float32, seed=zlib.crc32(name.encode()))


@pytest.mark.parametrize("track", [True, False])
@pytest.mark.parametrize("kind", ["BatchNorm1d", "BatchNorm2d", "InstanceNorm1d"])
def test_eval_mode_matches_reference_and_torch(kind, track):
    """Eval mode: running statistics (made non-trivial by training steps), or batch statistics when
    the layer does not track them."""
    torch = pytest.importorskip("torch")
    shape = {"BatchNorm1d": (5, 3, 4), "BatchNorm2d": (4, 3, 3, 2), "InstanceNorm1d": (2, 3, 5)}[kind]
    layer = getattr(nn, kind)(3, affine=True, track_running_stats=track, dtype=np.float64)
    rng = np.random.default_rng(11)
    for _ in range(3):
        layer(tinynorm.tensor(rng.standard_normal(shape) * 3 + 1))
    layer.eval()
    check_layer(layer, shape, np.float64, seed=12, torch=torch)


@pytest.mark.parametrize("factory, shape, perm", [
    (lambda: nn.LayerNorm(4), (4, 3, 5), (2, 1, 0)), (lambda: nn.RMSNorm(4), (4, 3, 5), (2, 1, 0)),
    (lambda: nn.BatchNorm2d(3), (4, 3, 5, 2), (0, 1, 3, 2)), (lambda: nn.GroupNorm(3, 3), (4, 3, 5, 2), (0, 1, 3, 2)),
    (lambda: nn.InstanceNorm1d(3, affine=True), (5, 3, 4), (2, 1, 0)),
], ids=["ln", "rms", "bn2d", "gn", "in1d"])
def test_non_contiguous_input_and_upstream_gradient(factory, shape, perm):
    """A permuted (strided) input and a permuted upstream gradient; ``perm`` is its own inverse."""
    layer = factory()
    rng = np.random.default_rng(6)
    randomize_parameters(layer, rng)
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32).transpose(perm)
    xt = tinynorm.tensor(x, requires_grad=True)
    y = layer(xt.permute(*perm))
    y.backward(tinynorm.tensor(dy.transpose(perm)).permute(*perm))
    y_ref, grads_ref = reference(layer, x.transpose(perm), dy)
    np.testing.assert_allclose(y.numpy(), y_ref, **tolerance(np.float32))
    np.testing.assert_allclose(xt.grad.numpy(), grads_ref["x"].transpose(perm), **tolerance(np.float32))
    for name, param in layer.named_parameters():
        np.testing.assert_allclose(param.grad.numpy(), grads_ref[name], **tolerance(np.float32), err_msg=name)


# ---------------------------------------------------------------------------------- gradcheck
GRADCHECK_CASES = [  # (name, float64 layer, input shape, eval mode)
    ("bn1d", lambda: nn.BatchNorm1d(3, dtype=np.float64), (4, 3, 2), False),
    ("bn1d-eval", lambda: nn.BatchNorm1d(3, dtype=np.float64), (4, 3, 2), True),
    ("bn2d", lambda: nn.BatchNorm2d(2, dtype=np.float64), (2, 2, 2, 3), False),
    ("bn2d-eval", lambda: nn.BatchNorm2d(2, dtype=np.float64), (2, 2, 2, 3), True),
    ("bn3d", lambda: nn.BatchNorm3d(2, dtype=np.float64), (2, 2, 2, 1, 2), False),
    ("in1d", lambda: nn.InstanceNorm1d(2, affine=True, dtype=np.float64), (2, 2, 5), False),
    ("in1d-tracked-eval", lambda: nn.InstanceNorm1d(2, affine=True, track_running_stats=True, dtype=np.float64),
     (2, 2, 5), True),
    ("in2d", lambda: nn.InstanceNorm2d(2, affine=True, dtype=np.float64), (2, 2, 2, 3), False),
    ("ln", lambda: nn.LayerNorm((2, 3), dtype=np.float64), (3, 2, 3), False),
    ("ln-no-bias", lambda: nn.LayerNorm(4, bias=False, dtype=np.float64), (3, 4), False),
    ("rms", lambda: nn.RMSNorm(4, dtype=np.float64), (3, 4), False),
    ("rms-eps", lambda: nn.RMSNorm(4, eps=0.1, dtype=np.float64), (3, 4), False),
    ("gn", lambda: nn.GroupNorm(2, 4, dtype=np.float64), (2, 4, 3), False),
]


@pytest.mark.parametrize("case", GRADCHECK_CASES, ids=[c[0] for c in GRADCHECK_CASES])
def test_gradcheck(case):
    """x, weight and bias in float64; eval-mode cases first take training steps to move the statistics."""
    _, factory, shape, eval_mode = case
    layer = factory()
    rng = np.random.default_rng(5)
    randomize_parameters(layer, rng)
    if eval_mode:
        for _ in range(2):
            layer(tinynorm.tensor(rng.standard_normal(shape) * 2 + 1))
        layer.eval()
    x = tinynorm.tensor(rng.standard_normal(shape) * 2 + 0.5, requires_grad=True)
    assert gradcheck(lambda x, *_: layer(x), (x, *layer.parameters()))


# ------------------------------------------------------------------------- running statistics
def batch_statistics(x, per_instance):
    """The batch's per-channel mean and unbiased variance as the running averages use them (float64):
    over (N, *spatial) for BatchNorm; per (sample, channel) then averaged over samples for InstanceNorm."""
    x = x.astype(np.float64)
    if per_instance:
        flat = x.reshape(x.shape[0], x.shape[1], -1)
        return flat.mean(2).mean(0), flat.var(2, ddof=1).mean(0)
    flat = np.moveaxis(x, 1, 0).reshape(x.shape[1], -1)
    return flat.mean(1), flat.var(1, ddof=1)


RUNNING_CASES = [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (3, 3, 4, 2)),
                 ("InstanceNorm1d", (3, 3, 6)), ("InstanceNorm2d", (2, 3, 3, 3))]


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
@pytest.mark.parametrize("kind, shape", RUNNING_CASES)
def test_running_statistics_match_reference_and_torch(kind, shape, momentum):
    """Several float32 training steps: running mean/var, num_batches_tracked and then eval outputs.

    BatchNorm with ``momentum=None`` keeps the plain average of all batches' statistics. PyTorch's
    InstanceNorm never counts batches and treats ``momentum=None`` as 0 (statistics stay put).
    """
    torch = pytest.importorskip("torch")
    layer = getattr(nn, kind)(3, momentum=momentum, affine=True, track_running_stats=True)
    randomize_parameters(layer, np.random.default_rng(0))
    twin = torch_twin(torch, layer)
    is_batch_norm = isinstance(layer, BATCH_NORMS)
    expected_mean, expected_var = np.zeros(3), np.ones(3)
    rng = np.random.default_rng(1)
    for step in range(1, 5):
        x = (rng.standard_normal(shape) * rng.uniform(0.5, 3, 3)[:, None].reshape(3, *[1] * (len(shape) - 2))
             + 4).astype(np.float32)
        layer(tinynorm.tensor(x))
        twin(torch.from_numpy(x))
        mean, var = batch_statistics(x, per_instance=not is_batch_norm)
        factor = momentum if momentum is not None else (1 / step if is_batch_norm else 0.0)
        expected_mean = (1 - factor) * expected_mean + factor * mean
        expected_var = (1 - factor) * expected_var + factor * var
    for got, want, torch_value in ((layer.running_mean, expected_mean, twin.running_mean),
                                   (layer.running_var, expected_var, twin.running_var)):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got.numpy(), torch_value.numpy(), rtol=1e-5, atol=1e-6)
    assert layer.num_batches_tracked.item() == twin.num_batches_tracked.item() == (4 if is_batch_norm else 0)
    assert layer.num_batches_tracked.dtype == np.int64

    layer.eval()
    twin.eval()
    x = (rng.standard_normal(shape) + 4).astype(np.float32)
    y = layer(tinynorm.tensor(x)).numpy()
    mean = expected_mean.reshape(channel_shape(x))
    weight, bias = (p.numpy().astype(np.float64).reshape(channel_shape(x)) for p in (layer.weight, layer.bias))
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(expected_var.reshape(mean.shape) + 1e-5) * weight + bias,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y, twin(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind, shape", RUNNING_CASES)
def test_without_running_statistics_eval_uses_batch_statistics(kind, shape):
    layer = getattr(nn, kind)(3, track_running_stats=False).eval()
    assert layer.running_mean is None and layer.running_var is None and layer.num_batches_tracked is None
    x = (np.random.default_rng(2).standard_normal(shape) * 3 + 2).astype(np.float32)
    dy = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    assert_results_close(run_tinynorm(layer, x, dy), reference(layer, x, dy), np.float32, repr(layer))
    assert list(layer.state_dict()) == (["weight", "bias"] if layer.affine else [])


# --------------------------------------------------------------------------------- state dicts
STATE_LAYERS = [
    ("bn1d", lambda: nn.BatchNorm1d(3)), ("bn2d-no-affine", lambda: nn.BatchNorm2d(3, affine=False)),
    ("bn3d-untracked", lambda: nn.BatchNorm3d(3, track_running_stats=False)),
    ("in1d", lambda: nn.InstanceNorm1d(3)),
    ("in2d-tracked", lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True)),
    ("ln", lambda: nn.LayerNorm(3)), ("ln-tuple-no-bias", lambda: nn.LayerNorm((3, 2), bias=False)),
    ("ln-no-affine", lambda: nn.LayerNorm(3, elementwise_affine=False)), ("rms", lambda: nn.RMSNorm(3)),
    ("rms-no-affine", lambda: nn.RMSNorm(3, elementwise_affine=False)), ("gn", lambda: nn.GroupNorm(3, 3)),
    ("gn-no-affine", lambda: nn.GroupNorm(1, 3, affine=False)),
]


@pytest.mark.parametrize("case", STATE_LAYERS, ids=[c[0] for c in STATE_LAYERS])
def test_state_dict_matches_torch(case):
    """Same keys, shapes, dtypes and initial values as PyTorch's state dict."""
    torch = pytest.importorskip("torch")
    layer = case[1]()
    theirs = torch_module(torch, layer).state_dict()
    ours = layer.state_dict()
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        assert ours[key].shape == tuple(value.shape) and ours[key].dtype == value.numpy().dtype, key
        np.testing.assert_array_equal(ours[key].numpy(), value.numpy(), err_msg=key)


def input_shape(layer):
    if isinstance(layer, (nn.LayerNorm, nn.RMSNorm)):
        return (4,) + layer.normalized_shape
    spatial = {nn.BatchNorm2d: (5, 3), nn.InstanceNorm2d: (5, 3), nn.BatchNorm3d: (5, 2, 2)}.get(type(layer), (5,))
    return (4, 3) + spatial


@pytest.mark.parametrize("case", STATE_LAYERS, ids=[c[0] for c in STATE_LAYERS])
def test_state_dict_round_trip_through_torch(case):
    """tinynorm state -> numpy -> torch module, train torch, torch state -> tinynorm: equal eval outputs."""
    torch = pytest.importorskip("torch")
    layer = case[1]()
    rng = np.random.default_rng(4)
    randomize_parameters(layer, rng)
    shape = input_shape(layer)
    for _ in range(2):
        layer(tinynorm.tensor(rng.standard_normal(shape).astype(np.float32) + 1))
    twin = torch_module(torch, layer)
    twin.load_state_dict({key: torch.from_numpy(value.numpy().copy()) for key, value in layer.state_dict().items()})
    x = rng.standard_normal(shape).astype(np.float32) + 1
    layer.eval(), twin.eval()
    np.testing.assert_allclose(layer(tinynorm.tensor(x)).numpy(), twin(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)

    twin.train()
    with torch.no_grad():
        for param in twin.parameters():
            param.mul_(1.5).add_(0.25)
    for _ in range(3):
        twin(torch.from_numpy(rng.standard_normal(shape).astype(np.float32) - 2))
    layer.load_state_dict({key: value.numpy() for key, value in twin.state_dict().items()})
    twin.eval()
    for key, value in twin.state_dict().items():
        np.testing.assert_array_equal(layer.state_dict()[key].numpy(), value.numpy(), err_msg=key)
    np.testing.assert_allclose(layer(tinynorm.tensor(x)).numpy(), twin(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------ numerics
CENTRED_LAYERS = [
    ("ln", lambda: nn.LayerNorm(16), (4, 16)),
    ("bn1d", lambda: nn.BatchNorm1d(3), (8, 3, 5)),
    ("bn2d", lambda: nn.BatchNorm2d(2), (4, 2, 3, 3)),
    ("gn", lambda: nn.GroupNorm(2, 4), (3, 4, 6)),
    ("in1d", lambda: nn.InstanceNorm1d(3, affine=True), (3, 3, 8)),
    ("in2d", lambda: nn.InstanceNorm2d(2, affine=True), (2, 2, 3, 4)),
]


@pytest.mark.parametrize("case", CENTRED_LAYERS, ids=[c[0] for c in CENTRED_LAYERS])
def test_large_offset_stays_accurate_in_float32(case):
    """Mean 1e4, std 1: a naive E[x^2] - E[x]^2 variance would be off by 100% or more."""
    _, factory, shape = case
    layer = factory()
    rng = np.random.default_rng(8)
    randomize_parameters(layer, rng)
    x = (1e4 + rng.standard_normal(shape)).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    (y, grads), (y_ref, grads_ref) = run_tinynorm(layer, x, dy), reference(layer, x, dy)
    np.testing.assert_allclose(y, y_ref, rtol=0, atol=3e-3)
    np.testing.assert_allclose(grads["x"], grads_ref["x"], rtol=0, atol=3e-3 * np.abs(grads_ref["x"]).max())


@pytest.mark.parametrize("case", CENTRED_LAYERS, ids=[c[0] for c in CENTRED_LAYERS])
def test_constant_input_gives_bias_and_finite_gradients(case):
    """Each normalized group constant (zero variance): y is exactly the bias, and nothing overflows."""
    _, factory, shape = case
    layer = factory()
    rng = np.random.default_rng(9)
    randomize_parameters(layer, rng)
    x = np.full(shape, 3.5, dtype=np.float32)
    y, grads = run_tinynorm(layer, x, rng.standard_normal(shape).astype(np.float32))
    bias = layer.bias.numpy()
    expected = np.broadcast_to(bias if isinstance(layer, nn.LayerNorm) else bias.reshape(channel_shape(x)), shape)
    np.testing.assert_allclose(y, expected, rtol=0, atol=1e-6)
    assert all(np.isfinite(g).all() for g in grads.values())


def test_rms_norm_of_zeros_is_finite():
    y, grads = run_tinynorm(nn.RMSNorm(5), np.zeros((2, 5), np.float32), np.ones((2, 5), np.float32))
    assert np.all(y == 0) and all(np.isfinite(g).all() for g in grads.values())


# -------------------------------------------------------------------------------------- dtypes
DTYPE_LAYERS = [
    ("bn1d", lambda d: nn.BatchNorm1d(3, dtype=d), (4, 3)),
    ("bn2d-untracked", lambda d: nn.BatchNorm2d(3, track_running_stats=False, dtype=d), (2, 3, 2, 2)),
    ("bn3d-no-affine", lambda d: nn.BatchNorm3d(3, affine=False, dtype=d), (2, 3, 2, 2, 1)),
    ("in1d-tracked", lambda d: nn.InstanceNorm1d(3, track_running_stats=True, dtype=d), (2, 3, 4)),
    ("in2d-affine", lambda d: nn.InstanceNorm2d(3, affine=True, dtype=d), (2, 3, 2, 2)),
    ("ln", lambda d: nn.LayerNorm(3, dtype=d), (2, 3)),
    ("ln-no-bias", lambda d: nn.LayerNorm(3, bias=False, dtype=d), (2, 3)),
    ("rms", lambda d: nn.RMSNorm(3, dtype=d), (2, 3)),
    ("gn", lambda d: nn.GroupNorm(1, 3, dtype=d), (2, 3, 2)),
]


@pytest.mark.parametrize("case", DTYPE_LAYERS, ids=[c[0] for c in DTYPE_LAYERS])
def test_float32_stays_float32_through_training(case):
    _, factory, shape = case
    layer = factory(np.float32)
    optimizer = tinynorm.optim.SGD(layer.parameters(), lr=0.1) if list(layer.parameters()) else None
    rng = np.random.default_rng(10)
    for _ in range(3):
        y = layer(tinynorm.tensor(rng.standard_normal(shape).astype(np.float32)))
        assert y.dtype == np.float32
        if optimizer is not None:
            y.backward(tinynorm.tensor(rng.standard_normal(shape).astype(np.float32)))
            assert all(p.grad.dtype == np.float32 for p in layer.parameters())
            optimizer.step()
            optimizer.zero_grad()
    for name, value in layer.state_dict().items():
        assert value.dtype == (np.int64 if name == "num_batches_tracked" else np.float32), name


@pytest.mark.parametrize("case", DTYPE_LAYERS, ids=[c[0] for c in DTYPE_LAYERS])
def test_input_dtype_must_match_the_layer(case):
    """A float64 input to a float32 layer with state is a TypeError naming the function, the tensor
    and both dtypes; a layer without parameters or statistics takes either dtype (and float64 layers
    take float64)."""
    _, factory, shape = case
    layer = factory(np.float32)
    x = tinynorm.tensor(np.ones(shape) + np.arange(shape[-1]))
    if not layer.state_dict():
        assert layer(x).dtype == np.float64
        return
    op = FUNCTION_OF[type(layer)]
    message = rf"{op}: (weight|bias|running_mean|running_var) has dtype float32 but input has dtype float64"
    with pytest.raises(TypeError, match=message):
        layer(x)
    assert factory(np.float64)(x).dtype == np.float64


# ------------------------------------------------------------------------------- reset and repr
@pytest.mark.parametrize("case", STATE_LAYERS, ids=[c[0] for c in STATE_LAYERS])
def test_reset_parameters_restores_the_initial_state(case):
    layer = case[1]()
    initial = {key: value.numpy().copy() for key, value in layer.state_dict().items()}
    rng = np.random.default_rng(13)
    randomize_parameters(layer, rng)
    for _ in range(2):
        layer(tinynorm.tensor(rng.standard_normal(input_shape(layer)).astype(np.float32) + 2))
    changed = [key for key, value in layer.state_dict().items() if not np.array_equal(value.numpy(), initial[key])]
    uncounted = {"num_batches_tracked"} if isinstance(layer, (nn.InstanceNorm1d, nn.InstanceNorm2d)) else set()
    assert set(changed) == set(initial) - uncounted
    if hasattr(layer, "reset_running_stats"):
        params = {name: p.numpy().copy() for name, p in layer.named_parameters()}
        layer.reset_running_stats()
        for key, value in layer.state_dict().items():
            np.testing.assert_array_equal(value.numpy(), params[key] if key in params else initial[key], err_msg=key)
    layer.reset_parameters()
    for key, value in layer.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), initial[key], err_msg=key)


REPR_LAYERS = STATE_LAYERS + [
    ("bn-momentum-none", lambda: nn.BatchNorm1d(4, eps=1e-3, momentum=None)),
    ("rms-eps", lambda: nn.RMSNorm((2, 3), eps=1e-6)), ("ln-eps", lambda: nn.LayerNorm(5, 1e-6)),
    ("gn-eps", lambda: nn.GroupNorm(2, 4, 0.001)),
]


@pytest.mark.parametrize("case", REPR_LAYERS, ids=[c[0] for c in REPR_LAYERS])
def test_repr_matches_torch(case):
    """PyTorch's repr, less the ``bias=`` flag that newer PyTorch shows for norms without a ``bias`` argument."""
    torch = pytest.importorskip("torch")
    layer = case[1]()
    theirs = repr(torch_module(torch, layer))
    if not isinstance(layer, nn.LayerNorm):
        theirs = re.sub(r", bias=(True|False)", "", theirs)
    assert repr(layer) == theirs


# -------------------------------------------------------------------------- functional forms
@pytest.mark.parametrize("name", ["batch_norm", "instance_norm", "layer_norm", "rms_norm", "group_norm"])
def test_functional_forms_match_torch(name):
    """``tinynorm.nn.functional`` takes torch's arguments in torch's order and updates the running
    buffers in place as torch does."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(14)
    x = rng.standard_normal((4, 6, 5)) * 2 + 1
    weight, bias, running_mean, running_var = (rng.standard_normal(6) + k for k in (1, 0, 0.5, 2))
    args = {
        "batch_norm": lambda t: (t(running_mean), t(running_var), t(weight), t(bias), True, 0.3, 1e-3),
        "instance_norm": lambda t: (t(running_mean), t(running_var), t(weight), t(bias), True, 0.3, 1e-3),
        "layer_norm": lambda t: ((6, 5), t(np.ones((6, 5)) * 2), t(np.ones((6, 5)) / 2), 1e-3),
        "rms_norm": lambda t: ((5,), t(weight[:5]), 1e-3),
        "group_norm": lambda t: (3, t(weight), t(bias), 1e-3),
    }[name]
    ours, theirs = args(tinynorm.tensor), args(lambda a: torch.tensor(a))
    y = getattr(nn.functional, name)(tinynorm.tensor(x), *ours)
    expected = getattr(torch.nn.functional, name)(torch.tensor(x), *theirs)
    np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)
    for mine, torchs in zip(ours, theirs):
        if isinstance(mine, tinynorm.Tensor):
            np.testing.assert_allclose(mine.numpy(), torchs.numpy(), rtol=1e-12, err_msg="running buffers")
