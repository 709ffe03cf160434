"""The fused cross-entropy kernels (CPU) against a float64 numpy reference written here from the
definition (log-softmax, then the target distribution), finite differences, PyTorch, and the index
counting the losses' target check uses."""
import numba
import numpy as np
import pytest

from tinynorm.backends import cpu
from tinynorm.kernels.cpu import cross_entropy as cross_entropy_module
from tinynorm.kernels.cpu.cross_entropy import (
    cross_entropy_backward,
    cross_entropy_backward_numpy,
    cross_entropy_forward,
    cross_entropy_forward_numpy,
)

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


def special_case(rng, dtype):
    """Logits of a random size and scale, some with NaN, +-inf or a row of -inf only; targets with
    ignored rows."""
    rows, classes = int(rng.integers(1, 40)), int(rng.integers(1, 70))
    x = (rng.standard_normal((rows, classes)) * rng.choice([1, 5, 50]) + rng.choice([0, 30, -1e3])).astype(dtype)
    if rng.random() < 0.3:
        x[rng.integers(0, rows), rng.integers(0, classes)] = rng.choice([np.nan, np.inf, -np.inf])
    if rng.random() < 0.2:
        x[0] = -np.inf
    target = rng.integers(0, classes, rows)
    target[rng.random(rows) < 0.2] = IGNORE
    return x, target


def assert_close_to_numpys(ours, theirs, ulps, magnitude=0.0):
    """The same NaNs and infinities, finite values within ``ulps`` of max(|value|, 1) plus the
    ``magnitude`` of the terms summed into them (a sum that cancels rounds to its terms' scale)."""
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_array_equal(ours[~finite & ~np.isnan(theirs)], theirs[~finite & ~np.isnan(theirs)])
    scale = (np.maximum(np.abs(theirs), 1) + magnitude)[finite] * np.finfo(theirs.dtype).eps
    assert (np.abs(ours[finite] - theirs[finite]) <= ulps * scale).all()


def smoothing_terms(x, smoothing):
    """s / C * sum |x - max(x)| per row, over the finite entries: the scale of the smoothing term's sum."""
    with np.errstate(invalid="ignore"):
        shifted = np.abs(np.where(np.isfinite(x), x, 0) - np.nanmax(np.where(np.isfinite(x), x, np.nan), axis=1,
                                                                      keepdims=True))
    return smoothing / x.shape[1] * np.nan_to_num(shifted).sum(axis=1)


@pytest.fixture
def compiled_only(monkeypatch):
    """The public functions may not fall back to the numpy forms (the tests call those by their
    imported names)."""
    def refuse(*args):
        raise AssertionError("took the numpy form")

    monkeypatch.setattr(cross_entropy_module, "cross_entropy_forward_numpy", refuse)
    monkeypatch.setattr(cross_entropy_module, "cross_entropy_backward_numpy", refuse)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's form warns on the NaN rows
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_rows_give_the_numpy_forms_values(dtype, compiled_only):
    """The compiled rows against the numpy forms they follow, special values included; they differ
    only in the rounding of the exponentials' sum (numpy sums pairwise) and of exp itself."""
    rng = np.random.default_rng(7)
    for _ in range(150):
        x, target = special_case(rng, dtype)
        smoothing = float(rng.choice([0.0, 0.1, 1.0]))
        losses, lse = cross_entropy_forward(x, target, IGNORE, smoothing)
        expected_losses, expected_lse = cross_entropy_forward_numpy(x, target, IGNORE, smoothing)
        assert_close_to_numpys(losses, expected_losses, 4, smoothing_terms(x, smoothing))
        assert_close_to_numpys(lse, expected_lse, 2)
        grad = rng.standard_normal(x.shape[0]).astype(dtype) if rng.random() < 0.5 else np.array(0.5, dtype)
        dx = cross_entropy_backward(grad, x, lse, target, IGNORE, smoothing, 0.25)
        expected_dx = cross_entropy_backward_numpy(grad, x, lse, target, IGNORE, smoothing, 0.25)
        assert_close_to_numpys(dx, expected_dx, 4)


def test_backward_takes_any_lse_and_strided_logits(compiled_only):
    """An lse below a row's maximum (not the forward's: exp of a positive argument), strided logits and
    narrow integer targets give the numpy form's values too."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((12, 40))[:, ::2]
    target = rng.integers(0, 20, 12).astype(np.uint8)
    lse = x.max(axis=1) - rng.uniform(0, 3, 12)
    lse[3] = np.nan
    lse[5] -= 800  # exp overflows to inf
    x[4, 3] = np.nan  # with a finite lse
    with np.errstate(over="ignore", invalid="ignore"):
        dx = cross_entropy_backward(np.ones(12), x, lse, target, IGNORE, 0.1, 0.5)
        expected = cross_entropy_backward_numpy(np.ones(12), x, lse, target, IGNORE, 0.1, 0.5)
    assert np.isinf(expected[5]).any() and np.isnan(expected[4]).any()
    assert_close_to_numpys(dx, expected, 4)
    x[4, 3] = 0.0
    losses, lse = cross_entropy_forward(x, target.astype(np.int32), IGNORE, 0.1)
    expected_losses, expected_lse = cross_entropy_forward_numpy(x, target.astype(np.int32), IGNORE, 0.1)
    assert_close_to_numpys(losses, expected_losses, 4, smoothing_terms(x, 0.1))
    assert_close_to_numpys(lse, expected_lse, 2)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("smoothing", [0.0, 0.3, 1.0, 1e-46])
def test_minus_infinity_at_the_target_and_tiny_smoothing(smoothing, compiled_only):
    """-inf at the target costs inf; at s = 1 its weight is 0 * -inf = NaN, as in numpy; a smoothing
    whose s / C rounds to 0 in float32 still takes the smoothing term (NaN beside a -inf logit)."""
    x = np.array([[0.0, -np.inf, 1.0, 2.0], [3.0, 1.0, -np.inf, 0.5], [1.0, 2.0, 3.0, 4.0]], np.float32)
    target = np.array([1, 0, 2])
    losses, lse = cross_entropy_forward(x, target, IGNORE, smoothing)
    expected_losses, expected_lse = cross_entropy_forward_numpy(x, target, IGNORE, smoothing)
    assert_close_to_numpys(losses, expected_losses, 4)
    assert_close_to_numpys(lse, expected_lse, 2)
    dx = cross_entropy_backward(np.ones(3, np.float32), x, lse, target, IGNORE, smoothing, 1.0)
    assert_close_to_numpys(dx, cross_entropy_backward_numpy(np.ones(3, np.float32), x, lse, target, IGNORE,
                                                            smoothing, 1.0), 4)


@pytest.mark.parametrize("layout", ["rows 0", "fortran", "ignore a class", "strided lse"])
def test_compiled_rows_on_other_layouts(layout, compiled_only):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((0 if layout == "rows 0" else 7, 5)).astype(np.float32)
    x = np.asfortranarray(x) if layout == "fortran" else x
    target = rng.integers(0, 5, x.shape[0])
    ignore = 2 if layout == "ignore a class" else IGNORE
    losses, lse = cross_entropy_forward(x, target, ignore, 0.2)
    expected_losses, expected_lse = cross_entropy_forward_numpy(x, target, ignore, 0.2)
    assert_close_to_numpys(losses, expected_losses, 4)
    if layout == "strided lse":
        lse = np.repeat(lse, 2)[::2]
    grad = np.ones(x.shape[0], np.float32)
    dx = cross_entropy_backward(grad, x, lse, target, ignore, 0.2, 0.5)
    assert_close_to_numpys(dx, cross_entropy_backward_numpy(grad, x, lse, target, ignore, 0.2, 0.5), 4)


def test_scalars_reach_the_loops_in_the_logits_dtype():
    """1 - s, s / C and the gradient's scale are cast to the logits' dtype before the loops (a Python
    float would turn a float32 row's arithmetic into float64)."""
    x, target, _ = case(np.float32)
    _, lse = cross_entropy_forward(x, target, IGNORE, 0.1)
    cross_entropy_backward(np.ones(6, np.float32), x, lse, target, IGNORE, 0.1, 0.5)
    forward_scalars = {signature[4:7] for signature in cross_entropy_module._forward_rows.signatures
                       if signature[0].dtype == numba.float32}
    backward_scalars = {signature[6:9] for signature in cross_entropy_module._backward_rows.signatures
                        if signature[1].dtype == numba.float32}
    assert forward_scalars == {(numba.float32, numba.float32, numba.boolean)}
    assert backward_scalars == {(numba.float32, numba.float32, numba.float32)}


def test_subclasses_and_unrepresentable_ignore_index():
    """An ndarray subclass takes the numpy forms; an ignore_index outside the targets' dtype ignores
    nothing (and compares exactly, where a uint64 against an int64 would be compared in float64)."""
    x, target, _ = case(np.float64)
    target[1] = 0
    masked = np.ma.masked_array(x)
    np.testing.assert_allclose(cross_entropy_forward(masked, target)[0], cross_entropy_forward(x, target)[0],
                               rtol=1e-12)
    big = np.array([2**63 - 1] * 3)
    with pytest.raises(IndexError, match="out of bounds"):
        cross_entropy_forward(np.zeros((3, 3)), big, ignore_index=2**63)
    small = target.astype(np.uint8)
    np.testing.assert_allclose(cross_entropy_forward(x, small, ignore_index=-100)[0],
                               cross_entropy_forward(x, target)[0], rtol=1e-12)
    with pytest.raises(TypeError, match="ignore_index must be an int or None"):
        cross_entropy_forward(x, target, ignore_index=-100.5)
