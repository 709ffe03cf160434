"""Forward values against numpy, and forward values and gradients against PyTorch on the same inputs.

Each PyTorch comparison backpropagates the same random upstream gradient through both libraries.
"""
import numpy as np
import pytest

import tinynorm
import tinynorm.nn.functional as F
from tinynorm.nn.embedding import embedding


def run_tinynorm(fn, arrays, upstream_seed=0):
    inputs = [tinynorm.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*inputs)
    upstream = np.random.default_rng(upstream_seed).standard_normal(out.shape).astype(out.dtype)
    out.backward(tinynorm.tensor(upstream))
    return out.numpy(), [x.grad.numpy() for x in inputs]


def run_torch(fn, arrays, upstream_seed=0):
    torch = pytest.importorskip("torch")
    inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*inputs)
    upstream = np.random.default_rng(upstream_seed).standard_normal(tuple(out.shape)).astype(np.float64)
    out.backward(torch.tensor(upstream, dtype=out.dtype))
    return out.detach().numpy(), [x.grad.numpy() for x in inputs]


def assert_matches_torch(tn_fn, torch_fn, *arrays, rtol=1e-10, atol=1e-12):
    """Same values and same gradients (float64 inputs, so only rounding differs)."""
    out, grads = run_tinynorm(tn_fn, arrays)
    expected_out, expected_grads = run_torch(torch_fn, arrays)
    np.testing.assert_allclose(out, expected_out, rtol=rtol, atol=atol)
    for grad, expected in zip(grads, expected_grads):
        np.testing.assert_allclose(grad, expected, rtol=rtol, atol=atol)


@pytest.fixture
def x(rng):
    return rng.standard_normal((4, 5))


# ---------------------------------------------------------------- forward against numpy
@pytest.mark.parametrize("name, reference", [
    ("exp", np.exp), ("tanh", np.tanh), ("abs", np.abs), ("relu", lambda a: np.maximum(a, 0)),
    ("sigmoid", lambda a: 1 / (1 + np.exp(-a))),
])
def test_unary_forward_equals_numpy(name, reference, x):
    np.testing.assert_allclose(getattr(tinynorm, name)(tinynorm.tensor(x)).numpy(), reference(x), rtol=1e-12)


def test_positive_unary_forward_equals_numpy(x):
    positive = np.abs(x) + 0.1
    t = tinynorm.tensor(positive)
    np.testing.assert_allclose(t.log().numpy(), np.log(positive), rtol=1e-12)
    np.testing.assert_allclose(t.sqrt().numpy(), np.sqrt(positive), rtol=1e-12)
    np.testing.assert_allclose(t.rsqrt().numpy(), 1 / np.sqrt(positive), rtol=1e-12)


def test_reductions_forward_equal_numpy(x):
    t = tinynorm.tensor(x)
    np.testing.assert_allclose(t.sum(1).numpy(), x.sum(1))
    np.testing.assert_allclose(t.mean((0, 1), keepdim=True).numpy(), x.mean(keepdims=True))
    np.testing.assert_allclose(t.var(0).numpy(), x.var(0, ddof=1))
    np.testing.assert_allclose(t.std(1, correction=0).numpy(), x.std(1))
    np.testing.assert_allclose(t.amax(0).numpy(), x.max(0))
    values, indices = t.min(1)
    np.testing.assert_allclose(values.numpy(), x.min(1))
    np.testing.assert_array_equal(indices.numpy(), x.argmin(1))


def test_var_is_accurate_when_the_mean_dwarfs_the_spread(rng):
    data = (1e4 + rng.standard_normal((8, 1000))).astype(np.float32)
    expected = data.astype(np.float64).var(1, ddof=1)
    np.testing.assert_allclose(tinynorm.tensor(data).var(1).numpy(), expected, rtol=1e-3)


def test_softmax_and_matmul_forward_equal_numpy(x, rng):
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(tinynorm.softmax(tinynorm.tensor(x), 1).numpy(), e / e.sum(1, keepdims=True))
    np.testing.assert_allclose(tinynorm.softmax(tinynorm.tensor(1000 * x), 1).numpy().sum(1), 1.0)  # no overflow
    b = rng.standard_normal((3, 5, 2))
    np.testing.assert_allclose((tinynorm.tensor(x) @ tinynorm.tensor(b)).numpy(), x @ b)


# ---------------------------------------------------------- forward and gradients vs torch
ELEMENTWISE = {
    "exp": (tinynorm.exp, "exp"), "tanh": (tinynorm.tanh, "tanh"), "sigmoid": (tinynorm.sigmoid, "sigmoid"),
    "relu": (tinynorm.relu, "relu"), "abs": (tinynorm.abs, "abs"),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_match_torch(name, x):
    torch = pytest.importorskip("torch")
    tn_fn, torch_name = ELEMENTWISE[name]
    assert_matches_torch(tn_fn, getattr(torch, torch_name), x)


def test_positive_elementwise_match_torch(x):
    positive = np.abs(x) + 0.1
    assert_matches_torch(lambda t: t.log() + t.sqrt() * t.rsqrt() ** 3, lambda t: t.log() + t.sqrt() * t.rsqrt() ** 3,
                         positive)
    assert_matches_torch(lambda t: t ** 1.7 + 2.0 ** t, lambda t: t ** 1.7 + 2.0 ** t, positive)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch(approximate, x):
    torch = pytest.importorskip("torch")
    assert_matches_torch(lambda t: F.gelu(3 * t, approximate=approximate),
                         lambda t: torch.nn.functional.gelu(3 * t, approximate=approximate), x, rtol=1e-9)


def test_broadcast_arithmetic_matches_torch(rng):
    torch = pytest.importorskip("torch")
    a, b, c = rng.standard_normal((2, 1, 3)), rng.uniform(0.5, 2, (4, 1)), rng.standard_normal(3)
    expr = lambda p, q, r: (p * q - r) / q + p ** 2  # noqa: E731
    assert_matches_torch(expr, expr, a, b, c)
    assert_matches_torch(tinynorm.maximum, torch.maximum, a, c)
    assert_matches_torch(tinynorm.minimum, torch.minimum, a, c)
    assert_matches_torch(lambda t: t.clamp(-0.3, 0.4), lambda t: t.clamp(-0.3, 0.4), a)


@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("dim", [None, 0, (0, 2)])
def test_var_std_correction_match_torch(correction, dim, rng):
    data = rng.standard_normal((3, 2, 4))
    assert_matches_torch(lambda t: t.var(dim, correction=correction), lambda t: t.var(dim, correction=correction), data)
    assert_matches_torch(lambda t: t.std(dim, keepdim=True, correction=correction),
                         lambda t: t.std(dim, keepdim=True, correction=correction), data)


def test_reductions_match_torch(rng):
    data = rng.permutation(24).reshape(2, 3, 4) * 0.1  # no ties
    for fn in (lambda t: t.sum((0, 2)), lambda t: t.mean(1, keepdim=True), lambda t: t.amax(-1),
               lambda t: t.amin((0, 1)), lambda t: t.max(1).values, lambda t: t.min(0, keepdim=True).values):
        assert_matches_torch(fn, fn, data)


def test_max_with_ties_shares_the_gradient_evenly():
    """Deliberate choice (PyTorch's amax does the same): tied maxima split the gradient."""
    x = tinynorm.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], requires_grad=True)
    x.amax(1).backward(tinynorm.tensor([1.0, 4.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5], [2, 0, 2]])


def test_matmul_and_linear_match_torch(rng):
    torch = pytest.importorskip("torch")
    cases = [((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 1, 2, 3), (4, 3, 2)), ((5, 2, 3), (3, 2))]
    for a_shape, b_shape in cases:
        assert_matches_torch(tinynorm.matmul, torch.matmul, rng.standard_normal(a_shape), rng.standard_normal(b_shape))
    x, w, b = rng.standard_normal((2, 4, 3)), rng.standard_normal((5, 3)), rng.standard_normal(5)
    assert_matches_torch(F.linear, torch.nn.functional.linear, x, w, b)


def test_shape_ops_and_indexing_match_torch(rng):
    torch = pytest.importorskip("torch")
    data = rng.standard_normal((2, 3, 4))
    index = torch.tensor([2, 0, 2])
    fns = [
        lambda t: t.permute(2, 0, 1).reshape(4, 6)[1:3], lambda t: t.transpose(0, 1).flatten(1),
        lambda t: t[:, 1:, None].unsqueeze(0).squeeze(0).expand(3, 2, 2, 1, 4)[..., 0, :],
        lambda t: t[1, :, ::2],
    ]
    for fn in fns:
        assert_matches_torch(fn, fn, data)
    assert_matches_torch(lambda t: t[:, index.numpy()], lambda t: t[:, index], data)
    assert_matches_torch(lambda a, b: tinynorm.cat([a, b], 1), lambda a, b: torch.cat([a, b], 1), data, data[:, :1])
    assert_matches_torch(lambda a, b: tinynorm.stack([a, b], -1), lambda a, b: torch.stack([a, b], -1), data, data)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax_match_torch(dim, rng):
    torch = pytest.importorskip("torch")
    data = rng.standard_normal((3, 4, 2)) * 4
    assert_matches_torch(lambda t: tinynorm.softmax(t, dim), lambda t: torch.softmax(t, dim), data)
    assert_matches_torch(lambda t: tinynorm.log_softmax(t, dim), lambda t: torch.log_softmax(t, dim), data)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 2, 2)])
def test_cross_entropy_matches_torch(reduction, label_smoothing, shape, rng):
    torch = pytest.importorskip("torch")
    logits = rng.standard_normal(shape) * 2
    target = rng.integers(0, shape[1], (shape[0],) + shape[2:])
    target.flat[::3] = -1  # ignored positions
    kwargs = dict(reduction=reduction, label_smoothing=label_smoothing, ignore_index=-1)
    assert_matches_torch(lambda t: F.cross_entropy(t, tinynorm.tensor(target), **kwargs),
                         lambda t: torch.nn.functional.cross_entropy(t, torch.tensor(target), **kwargs), logits)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_and_mse_match_torch(reduction, rng):
    torch = pytest.importorskip("torch")
    logp, target = rng.standard_normal((5, 3, 2)), rng.integers(0, 3, (5, 2))
    assert_matches_torch(lambda t: F.nll_loss(t, tinynorm.tensor(target), ignore_index=0, reduction=reduction),
                         lambda t: torch.nn.functional.nll_loss(t, torch.tensor(target), ignore_index=0,
                                                                reduction=reduction), logp)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    assert_matches_torch(lambda p, q: F.mse_loss(p, q, reduction=reduction),
                         lambda p, q: torch.nn.functional.mse_loss(p, q, reduction=reduction), a, b)


def test_cross_entropy_float32_matches_torch(rng):
    torch = pytest.importorskip("torch")
    logits = rng.standard_normal((64, 10)).astype(np.float32) * 5
    target = rng.integers(0, 10, 64)
    out, (grad,) = run_tinynorm(lambda t: F.cross_entropy(t, tinynorm.tensor(target), label_smoothing=0.1), [logits])
    expected, (expected_grad,) = run_torch(
        lambda t: torch.nn.functional.cross_entropy(t, torch.tensor(target), label_smoothing=0.1), [logits])
    assert out.dtype == grad.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-4, atol=1e-7)


def test_embedding_matches_torch(rng):
    torch = pytest.importorskip("torch")
    ids = np.array([[1, 3, 3], [0, 1, 3]])
    assert_matches_torch(lambda w: embedding(tinynorm.tensor(ids), w),
                         lambda w: torch.nn.functional.embedding(torch.tensor(ids), w), rng.standard_normal((4, 2)))


def test_cross_entropy_rejects_bad_targets(rng):
    logits = tinynorm.tensor(rng.standard_normal((3, 4)))
    with pytest.raises(ValueError, match=r"batch_size \(3\).*batch_size \(2\)"):  # PyTorch's classes and messages
        F.cross_entropy(logits, tinynorm.tensor([0, 1]))
    with pytest.raises(IndexError, match="0, 3"):
        F.cross_entropy(logits, tinynorm.tensor([0, 1, 4]))
    with pytest.raises(RuntimeError, match="Long"):
        F.cross_entropy(logits, tinynorm.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(logits, tinynorm.tensor([0, 1, 2]), reduction="avg")
