"""The fused cross-entropy kernels (CPU) against a float64 numpy reference written here from the
definition (log-softmax, then the target distribution), finite differences, PyTorch, and the index
counting the losses' target check uses."""
import numpy as np
import pytest

from tinynorm.backends import cpu
from tinynorm.kernels.cpu.cross_entropy import cross_entropy_backward, cross_entropy_forward

IGNORE = -100
TOLERANCE = {np.float32: 3e-6, np.float64: 1e-13}


def reference_losses(x, target, smoothing):
    """-sum_c q_c log p_c with q = (1 - s) onehot(y) + s / C, in float64; 0 for ignored rows."""
    x = x.astype(np.float64)
    shifted = x - x.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows, classes = x.shape
    kept = target != IGNORE
    q = np.full((rows, classes), smoothing / classes)
    q[np.arange(rows)[kept], target[kept]] += 1 - smoothing
    return np.where(kept, -(q * logp).sum(axis=1), 0.0)


def case(dtype, rows=6, classes=9, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, classes)) * 2 + 30).astype(dtype)  # a large mean: shifted sums matter
    target = rng.integers(0, classes, rows)
    target[1] = IGNORE
    return x, target, rng


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
def test_forward_matches_float64_reference(dtype, smoothing):
    x, target, _ = case(dtype)
    losses, lse = cross_entropy_forward(x, target, IGNORE, smoothing)
    assert losses.dtype == dtype and lse.dtype == dtype
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(losses, reference_losses(x, target, smoothing), rtol=tol, atol=tol)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(lse, np.log(np.exp(x64 - 30).sum(axis=1)) + 30, rtol=tol)
    assert losses[1] == 0


@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("per_row", [True, False])
def test_backward_matches_finite_differences(smoothing, per_row):
    """float64, with a random upstream gradient per row (or one for all) and a grad_scale."""
    x, target, rng = case(np.float64, rows=4, classes=5, seed=1)
    grad = rng.standard_normal(4) if per_row else np.array(rng.standard_normal())
    scale = 0.7
    _, lse = cross_entropy_forward(x, target, IGNORE, smoothing)
    analytic = cross_entropy_backward(grad, x, lse, target, IGNORE, smoothing, scale)

    def objective(values):
        return float((reference_losses(values, target, smoothing) * grad * scale).sum())

    numeric = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = 1e-6
        numeric[index] = (objective(x + step) - objective(x - step)) / 2e-6
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)
    assert not analytic[1].any()  # the ignored row


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_matches_torch(smoothing):
    torch = pytest.importorskip("torch")
    x, target, rng = case(np.float32, rows=8, classes=11, seed=2)
    grad = rng.standard_normal(8).astype(np.float32)
    losses, lse = cross_entropy_forward(x, target, IGNORE, smoothing)
    dx = cross_entropy_backward(grad, x, lse, target, IGNORE, smoothing)
    xt = torch.tensor(x, requires_grad=True)
    lt = torch.nn.functional.cross_entropy(xt, torch.tensor(target), reduction="none", label_smoothing=smoothing)
    lt.backward(torch.tensor(grad))
    np.testing.assert_allclose(losses, lt.detach().numpy(), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=2e-6, atol=2e-7)


def test_minus_infinity_logits_without_smoothing_stay_finite():
    """A masked (-inf) class that is not the target costs nothing; the 0 * sum(z) of the smoothing term
    must not turn it into NaN."""
    x = np.array([[0.0, -np.inf, 1.0], [2.0, 0.5, -np.inf]], np.float32)
    target = np.array([2, 0])
    losses, lse = cross_entropy_forward(x, target, IGNORE, 0.0)
    np.testing.assert_allclose(losses, reference_losses(np.where(np.isinf(x), -1e30, x), target, 0.0), rtol=1e-6)
    dx = cross_entropy_backward(np.ones(2, np.float32), x, lse, target)
    assert np.isfinite(dx).all() and dx[0, 1] == 0 and dx[1, 2] == 0


def test_scaled_loss_gradient_arrives_as_a_numpy_scalar():
    """``(loss * 0.5).backward()`` on the CPU hands the backward a numpy scalar (0-d arithmetic returns
    one): it counts as one upstream value for every row."""
    x, target, _ = case(np.float64)
    _, lse = cross_entropy_forward(x, target)
    scalar = cross_entropy_backward(np.float64(0.5), x, lse, target)
    np.testing.assert_array_equal(scalar, cross_entropy_backward(np.array(0.5), x, lse, target))


@pytest.mark.parametrize("call, message", [
    (lambda x, t: cross_entropy_forward(x.astype(np.float16), t), "logits must have dtype float32 or float64"),
    (lambda x, t: cross_entropy_forward(x[0], t), r"logits must be 2-D \(rows, classes\)"),
    (lambda x, t: cross_entropy_forward(x[:, :0], t), "at least one class"),
    (lambda x, t: cross_entropy_forward(x, t.astype(np.float32)), "target must hold integer class indices"),
    (lambda x, t: cross_entropy_forward(x, t[:3]), r"target must have shape \(6,\)"),
    (lambda x, t: cross_entropy_forward(x, t, label_smoothing=1.5), r"label_smoothing must be in \[0, 1\]"),
    (lambda x, t: cross_entropy_forward(x, t, label_smoothing="0.1"), r"label_smoothing must be a number, got '0.1'"),
    (lambda x, t: cross_entropy_forward(list(x), t), "logits must be a numpy.ndarray, got list"),
    (lambda x, t: cross_entropy_backward(np.ones(6, np.float32), x, np.ones(5, np.float32), t),
     r"lse must have shape \(6,\)"),
    (lambda x, t: cross_entropy_backward(np.ones(4, np.float32), x, np.ones(6, np.float32), t),
     r"grad must have shape \(6,\) or a single value"),
    (lambda x, t: cross_entropy_backward(np.ones(6), x, np.ones(6, np.float32), t), "dtype float32"),
])
def test_bad_arguments_raise_clear_errors(call, message):
    x, target, _ = case(np.float32)
    with pytest.raises((TypeError, ValueError), match=message):
        call(x, target)


@pytest.mark.parametrize("bad", [-3, -1, 9])
def test_targets_out_of_range_raise_index_error_not_wrap(bad):
    """Called directly, the kernels refuse a class index outside [0, C) (numpy would wrap -3 to the
    third class from the end), both ways; ignore_index itself is fine, even when negative."""
    x, target, _ = case(np.float32)
    _, lse = cross_entropy_forward(x, target, IGNORE)
    target[2] = bad
    with pytest.raises(IndexError, match=rf"target {bad} is out of bounds: class indices must be in \[0, 9\)"):
        cross_entropy_forward(x, target, IGNORE)
    with pytest.raises(IndexError, match=rf"target {bad} is out of bounds"):
        cross_entropy_backward(np.ones(6, np.float32), x, lse, target, IGNORE)
    target[1] = 0  # case() made it IGNORE
    assert cross_entropy_forward(x, target, ignore_index=bad)[0][2] == 0


@pytest.mark.parametrize("ignore_index", [None, -100, 2])
def test_count_indices_matches_a_loop(ignore_index):
    indices = np.array([[0, 3, -1, 2], [-100, 7, 2, 4]])
    outside = ignored = 0
    for value in indices.ravel():
        if value == ignore_index:
            ignored += 1
        elif not 0 <= value < 4:
            outside += 1
    assert cpu.count_indices(indices, 4, ignore_index) == (outside, ignored)
