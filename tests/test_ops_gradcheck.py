"""Every differentiable op against float64 finite differences (``tinynorm.autograd.gradcheck``).

gradcheck contracts the outputs with a random upstream gradient, so an op whose backward is wrong
only in a mean-centred direction still fails. Random inputs keep away from kinks (abs/relu at 0,
clamp at its ends, ties in max/min) where the derivative is undefined.
"""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tinynorm
import tinynorm.nn.functional as F
from tinynorm.autograd import gradcheck
from tinynorm.nn.embedding import embedding

from helpers import broadcast_pairs, leaf, seeds, shapes

SETTINGS = settings(max_examples=12, deadline=None)


def away_from_zero(rng, shape, low=0.2):
    """Values with |x| in [low, 2): no kink of abs/relu/sign is within a finite-difference step."""
    return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(low, 2.0, size=shape)


def distinct(rng, shape):
    """Values at least 0.1 apart (no ties for max/min/amax), in random order."""
    size = int(np.prod(shape))
    return (rng.permutation(size) * 0.1 + rng.uniform(0, 0.02, size)).reshape(shape) - 0.05 * size


# ------------------------------------------------------------------------------ arithmetic
@SETTINGS
@given(pair=broadcast_pairs, seed=seeds)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_arithmetic_with_broadcasting(op, pair, seed):
    rng = np.random.default_rng(seed)
    a_shape, b_shape = pair.input_shapes
    a = leaf(rng.standard_normal(a_shape))
    b = leaf(away_from_zero(rng, b_shape, 0.5))  # a divisor away from 0
    fn = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y,
          "mul": lambda x, y: x * y, "div": lambda x, y: x / y}[op]
    assert gradcheck(fn, (a, b))


@SETTINGS
@given(pair=broadcast_pairs, seed=seeds)
def test_pow_tensor_base_and_exponent(pair, seed):
    rng = np.random.default_rng(seed)
    base = leaf(rng.uniform(0.5, 2.0, pair.input_shapes[0]))
    exponent = leaf(rng.uniform(-1.5, 1.5, pair.input_shapes[1]))
    assert gradcheck(lambda x, y: x**y, (base, exponent))


@pytest.mark.parametrize("fn", [lambda x: x**2, lambda x: x**0.5, lambda x: 2.0**x, lambda x: -x,
                                lambda x: 3.0 - x, lambda x: 1.0 / x, lambda x: x * 2.5 + 1.0])
def test_arithmetic_with_python_numbers(fn, rng):
    assert gradcheck(fn, leaf(rng.uniform(0.5, 2.0, (3, 4))))


# ------------------------------------------------------------------------------- matmul
@pytest.mark.parametrize("a_shape, b_shape", [
    ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 3), (3, 4)),
    ((2, 2, 3), (3, 4)), ((2, 1, 2, 3), (3, 3, 2)), ((3,), (2, 3, 4)), ((2, 2, 3), (3,)),
])
def test_matmul_1d_2d_and_batched_broadcasting(a_shape, b_shape, rng):
    a, b = leaf(rng.standard_normal(a_shape)), leaf(rng.standard_normal(b_shape))
    assert gradcheck(tinynorm.matmul, (a, b))


@pytest.mark.parametrize("x_shape, bias", [((4, 3), True), ((2, 3, 3), True), ((3,), True), ((4, 3), False)])
def test_linear(x_shape, bias, rng):
    x, w = leaf(rng.standard_normal(x_shape)), leaf(rng.standard_normal((2, 3)))
    inputs = (x, w, leaf(rng.standard_normal(2))) if bias else (x, w)
    assert gradcheck(F.linear, inputs)


# --------------------------------------------------------------------------- elementwise
@SETTINGS
@given(shape=shapes, seed=seeds)
@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "gelu", "gelu_tanh", "abs", "relu"])
def test_unary_on_any_real_input(name, shape, seed):
    rng = np.random.default_rng(seed)
    fn = {"exp": tinynorm.exp, "tanh": tinynorm.tanh, "sigmoid": tinynorm.sigmoid, "gelu": F.gelu,
          "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "abs": tinynorm.abs, "relu": tinynorm.relu}[name]
    assert gradcheck(fn, leaf(away_from_zero(rng, shape)))


@SETTINGS
@given(shape=shapes, seed=seeds)
@pytest.mark.parametrize("name", ["log", "sqrt", "rsqrt"])
def test_unary_on_positive_input(name, shape, seed):
    rng = np.random.default_rng(seed)
    fn = {"log": tinynorm.log, "sqrt": tinynorm.sqrt, "rsqrt": tinynorm.rsqrt}[name]
    assert gradcheck(fn, leaf(rng.uniform(0.3, 3.0, shape)))


@pytest.mark.parametrize("low, high", [(-0.5, 0.5), (None, 0.3), (-0.3, None)])
def test_clamp(low, high, rng):
    x = rng.uniform(-1, 1, (5, 6))
    for bound in (low, high):
        if bound is not None:  # keep every value a finite-difference step away from the bounds
            x[np.abs(x - bound) < 1e-3] += 1e-2
    assert gradcheck(lambda t: t.clamp(low, high), leaf(x))


@SETTINGS
@given(pair=broadcast_pairs, seed=seeds)
@pytest.mark.parametrize("op", [tinynorm.maximum, tinynorm.minimum])
def test_maximum_minimum(op, pair, seed):
    rng = np.random.default_rng(seed)
    a = leaf(rng.standard_normal(pair.input_shapes[0]))
    b = leaf(rng.standard_normal(pair.input_shapes[1]) + 0.05)  # ties have probability 0
    assert gradcheck(op, (a, b))


@SETTINGS
@given(pair=broadcast_pairs, seed=seeds)
def test_where(pair, seed):
    rng = np.random.default_rng(seed)
    a_shape, b_shape = pair.input_shapes
    condition = tinynorm.tensor(rng.random(pair.result_shape) > 0.5)
    a, b = leaf(rng.standard_normal(a_shape)), leaf(rng.standard_normal(b_shape))
    assert gradcheck(lambda x, y: tinynorm.where(condition, x, y), (a, b))


# ---------------------------------------------------------------------------- reductions
dims_and_keepdim = st.tuples(st.sampled_from([None, 0, -1, (0, -1)]), st.booleans())


@SETTINGS
@given(shape=shapes, dk=dims_and_keepdim, seed=seeds)
@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "var0", "amax", "amin"])
def test_reductions(name, shape, dk, seed):
    dim, keepdim = dk
    rng = np.random.default_rng(seed)
    x = leaf(distinct(rng, shape))
    reduced = range(len(shape)) if dim is None else [d % len(shape) for d in np.atleast_1d(dim)]
    assume(len(set(reduced)) == len(reduced))  # a dim named twice is an error (tested elsewhere)
    # the unbiased variance of one value is undefined (nan), as in PyTorch
    assume(name not in ("var", "std") or np.prod([shape[d] for d in reduced]) >= 2)
    fn = {"sum": lambda t: t.sum(dim, keepdim), "mean": lambda t: t.mean(dim, keepdim),
          "var": lambda t: t.var(dim, keepdim), "std": lambda t: t.std(dim, keepdim),
          "var0": lambda t: t.var(dim, keepdim, correction=0),
          "amax": lambda t: t.amax(dim, keepdim), "amin": lambda t: t.amin(dim, keepdim)}[name]
    assert gradcheck(fn, x)


@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, True), (-1, False)])
@pytest.mark.parametrize("largest", [True, False])
def test_max_min_with_dim_values(dim, keepdim, largest, rng):
    x = leaf(distinct(rng, (3, 4)))
    pick = (lambda t: t.max(dim, keepdim).values) if largest else (lambda t: t.min(dim, keepdim).values)
    assert gradcheck(pick, x)
    assert gradcheck(lambda t: t.max() if largest else t.min(), x)


# --------------------------------------------------------------------------------- shape
@pytest.mark.parametrize("fn", [
    lambda t: t.reshape(4, 3), lambda t: t.view(-1), lambda t: t.flatten(), lambda t: t.T,
    lambda t: t.transpose(0, 1), lambda t: t.permute(1, 0), lambda t: t.unsqueeze(1),
    lambda t: t.unsqueeze(-1).squeeze(-1), lambda t: t.reshape(1, 3, 1, 4).squeeze(),
    lambda t: t.unsqueeze(0).expand(2, 3, 4), lambda t: t[:, :1].expand(-1, 5), lambda t: t.clone(),
])
def test_shape_ops_2d(fn, rng):
    assert gradcheck(fn, leaf(rng.standard_normal((3, 4))))


def test_shape_ops_3d(rng):
    x = leaf(rng.standard_normal((2, 3, 4)))
    assert gradcheck(lambda t: t.permute(2, 0, 1), x)
    assert gradcheck(lambda t: t.flatten(1), x)
    assert gradcheck(lambda t: t.transpose(0, 2).reshape(4, 6), x)


@pytest.mark.parametrize("index", [
    1, -1, (slice(None), 2), (slice(0, 2), slice(1, None)), (Ellipsis, 0), (slice(None, None, 2),),
    (None, 1), np.array([0, 2, 0, 0]), (np.array([1, 1, 2]), np.array([0, 3, 0])),
    (slice(None), np.array([3, 3, 1])), np.array([True, False, True]), np.eye(3, 4, dtype=bool),
    (np.int64(1), slice(None)), True, (True, 0),  # a numpy int is basic; a bool is advanced (adds a dim)
])
def test_indexing_basic_integer_arrays_with_repeats_and_masks(index, rng):
    assert gradcheck(lambda t: t[index], leaf(rng.standard_normal((3, 4))))


def test_basic_indices_are_numpys():
    """Both backends split indexing (and its gradient) on numpy's rule: ints, slices, None and ... are
    basic (a view, no element twice); bools, arrays and lists are advanced."""
    from tinynorm.backends import is_basic_index

    assert is_basic_index((0, slice(None), None, Ellipsis)) and is_basic_index(np.int64(2))
    assert not any(is_basic_index(i) for i in (True, np.bool_(False), np.array([0]), [0, 1], (0, np.array([1]))))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_and_stack(dim, rng):
    a, b = leaf(rng.standard_normal((2, 3))), leaf(rng.standard_normal((2, 3)))
    c = leaf(rng.standard_normal((2, 3)))
    assert gradcheck(lambda x, y, z: tinynorm.cat([x, y, z], dim), (a, b, c))
    assert gradcheck(lambda x, y: tinynorm.stack([x, y], dim), (a, b))


def test_cat_pieces_of_different_sizes(rng):
    a, b = leaf(rng.standard_normal((2, 1))), leaf(rng.standard_normal((2, 4)))
    assert gradcheck(lambda x, y: tinynorm.cat([x, y], dim=1), (a, b))


# -------------------------------------------------------------------- softmax and losses
@SETTINGS
@given(shape=shapes, seed=seeds)
@pytest.mark.parametrize("op", [tinynorm.softmax, tinynorm.log_softmax])
def test_softmax_log_softmax_any_dim(op, shape, seed):
    rng = np.random.default_rng(seed)
    dim = int(rng.integers(-len(shape), len(shape)))
    assert gradcheck(lambda t: op(t, dim), leaf(rng.standard_normal(shape) * 3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy_with_ignore_index(reduction, label_smoothing, rng):
    logits = leaf(rng.standard_normal((5, 4)))
    target = tinynorm.tensor([0, 3, -100, 1, 3])
    assert gradcheck(lambda t: F.cross_entropy(t, target, reduction=reduction, label_smoothing=label_smoothing), logits)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_spatial_inputs(reduction, rng):
    logits = leaf(rng.standard_normal((2, 3, 2, 2)))
    target = tinynorm.tensor(rng.integers(0, 3, (2, 2, 2)))
    fn = lambda t: F.cross_entropy(t, target, reduction=reduction, label_smoothing=0.1, ignore_index=1)  # noqa: E731
    assert gradcheck(fn, logits)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction, rng):
    logp = leaf(rng.standard_normal((4, 3, 2)))
    target = tinynorm.tensor(rng.integers(0, 3, (4, 2)))
    assert gradcheck(lambda t: F.nll_loss(t, target, reduction=reduction, ignore_index=2), logp)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_against_both_arguments(reduction, rng):
    a, b = leaf(rng.standard_normal((3, 4))), leaf(rng.standard_normal((3, 4)))
    assert gradcheck(lambda x, y: F.mse_loss(x, y, reduction=reduction), (a, b))


def test_dropout_with_a_fixed_seed(rng):
    x = leaf(rng.standard_normal((4, 5)))

    def fn(t):
        tinynorm.manual_seed(7)  # the same mask at every evaluation
        return F.dropout(t, p=0.4)

    assert gradcheck(fn, x)
    assert 0 < int((fn(x).numpy() == 0).sum()) < x.numel()  # the mask did drop something


def test_embedding_with_repeated_ids(rng):
    weight = leaf(rng.standard_normal((5, 3)))
    ids = tinynorm.tensor([[0, 4, 4], [2, 0, 4]])
    assert gradcheck(lambda w: embedding(ids, w), weight)

