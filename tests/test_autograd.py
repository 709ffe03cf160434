"""The backward engine: graph traversal, accumulation, memory release, grad modes, hooks, errors,
graph printing and gradcheck's own ability to catch a wrong backward."""
import gc
import re
import sys
import weakref

import numpy as np
import pytest

import tinynorm
import tinynorm.nn.functional as F
from tinynorm.autograd import Function, GradcheckError, format_graph, gradcheck, to_dot

from helpers import leaf


# ---------------------------------------------------------------------------- traversal
def test_a_chain_deeper_than_the_recursion_limit_backpropagates():
    depth = sys.getrecursionlimit() + 1000
    x = tinynorm.tensor([0.5, -1.0], dtype="float64", requires_grad=True)
    y = x
    for _ in range(depth):
        y = y * 1.001
    y.backward(tinynorm.tensor([1.0, 2.0], dtype="float64"))
    np.testing.assert_allclose(x.grad.numpy(), np.array([1.0, 2.0]) * 1.001**depth, rtol=1e-9)


def test_gradients_accumulate_across_backward_calls():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    (3 * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy() + 3)


def test_a_tensor_used_twice_gets_the_sum_of_both_paths():
    x = leaf([1.0, -2.0])
    h = x.exp()
    out = h * h + h  # h reaches the output along three edges
    out.backward(tinynorm.tensor([1.0, 1.0], dtype="float64"))
    e = np.exp(x.numpy())
    np.testing.assert_allclose(x.grad.numpy(), (2 * e + 1) * e)


def test_diamond_graph_visits_each_node_once_after_all_paths_arrive():
    x = leaf([2.0])
    a = x * 3
    b = a + a.exp()  # a feeds b twice: once directly, once through exp
    c = b * a  # and c once more
    c.backward()
    a_value = 6.0
    expected = 3 * ((1 + np.exp(a_value)) * a_value + (a_value + np.exp(a_value)))
    np.testing.assert_allclose(x.grad.numpy(), [expected])


@pytest.mark.parametrize("a_shape, b_shape", [((2, 3, 4), (3, 1)), ((4,), (2, 3, 4)), ((1, 3), (2, 1)), ((), (2, 2))])
def test_broadcast_inputs_get_gradients_of_their_own_shape(a_shape, b_shape, rng):
    a, b = leaf(rng.standard_normal(a_shape)), leaf(rng.standard_normal(b_shape))
    upstream = rng.standard_normal(np.broadcast_shapes(a_shape, b_shape))
    (a * b).backward(tinynorm.tensor(upstream))
    assert a.grad.shape == a_shape and b.grad.shape == b_shape
    full_a = np.broadcast_to(a.numpy(), upstream.shape)
    grad_b = upstream * full_a
    grad_b = grad_b.sum(axis=tuple(range(grad_b.ndim - len(b_shape)))) if grad_b.ndim > len(b_shape) else grad_b
    grad_b = grad_b.sum(axis=tuple(i for i, n in enumerate(b_shape) if n == 1), keepdims=True)
    np.testing.assert_allclose(b.grad.numpy(), grad_b)


def test_inputs_that_do_not_require_grad_get_none():
    a, b = leaf([1.0, 2.0]), tinynorm.tensor([3.0, 4.0], dtype="float64")
    (a * b).sum().backward()
    assert b.grad is None
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 4.0])


def test_detach_cuts_the_graph():
    x = leaf([1.0, 2.0])
    y = (x * 2).detach() * x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])  # d/dx of (const 2x) * x is the constant


# ------------------------------------------------------------------- memory and retain_graph
def test_second_backward_without_retain_graph_raises_a_clear_error():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_saved_arrays_are_freed_after_backward():
    x = leaf(np.ones(1000))
    loss = (x * 2).exp().sum()
    exp_node = loss.grad_fn.next_nodes[0]
    saved = weakref.ref(exp_node.saved_tensors[0])  # exp's output, only held by its node
    loss.backward()
    gc.collect()
    assert saved() is None
    with pytest.raises(RuntimeError, match="freed"):
        exp_node.saved_tensors  # noqa: B018


def test_saved_arrays_stay_with_retain_graph():
    x = leaf(np.ones(10))
    loss = (x * 2).exp().sum()
    exp_node = loss.grad_fn.next_nodes[0]
    saved = weakref.ref(exp_node.saved_tensors[0])
    loss.backward(retain_graph=True)
    gc.collect()
    assert saved() is not None


def test_a_used_leaf_is_freed_without_waiting_for_the_garbage_collector():
    gc.disable()  # only reference counting: a cycle leaf -> AccumulateGrad -> leaf would keep it
    try:
        x = leaf(np.ones(1000))
        values = weakref.ref(x.numpy())
        (x * 2).sum().backward()
        del x
        assert values() is None
    finally:
        gc.enable()


# ------------------------------------------------------------------------------ grad modes
def test_no_grad_as_context_manager_records_nothing():
    x = leaf([1.0])
    with tinynorm.no_grad():
        assert not tinynorm.is_grad_enabled()
        y = x * 2
    assert tinynorm.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad


def test_no_grad_as_decorator_and_enable_grad_inside():
    x = leaf([1.0])

    @tinynorm.no_grad()
    def evaluate():
        inside = x * 2
        with tinynorm.enable_grad():
            recorded = x * 3
        return inside, recorded

    inside, recorded = evaluate()
    assert inside.grad_fn is None
    assert recorded.grad_fn is not None
    assert tinynorm.is_grad_enabled()


def test_set_grad_enabled_restores_the_previous_mode_even_on_error():
    with pytest.raises(ZeroDivisionError):
        with tinynorm.set_grad_enabled(False):
            1 / 0
    assert tinynorm.is_grad_enabled()


# ----------------------------------------------------------------------------------- hooks
def test_leaf_hook_inspects_and_replaces_the_gradient():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    double = x.register_hook(lambda g: g * 2)
    (x * 3).sum().backward()
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])
    double.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert len(seen) == 2


def test_non_leaf_hook_changes_what_flows_upstream():
    x = leaf([1.0, 2.0])
    h = x * 3
    h.register_hook(lambda g: tinynorm.zeros_like(g))
    (h * h + x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])  # only the direct path survives


def test_retain_grad_keeps_a_non_leaf_gradient():
    x = leaf([1.0, 2.0])
    h = x * 3
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), 2 * h.numpy())
    assert (x * 2).grad is None  # non-leaves keep no gradient otherwise


def test_hook_on_a_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tinynorm.tensor([1.0]).register_hook(print)


# ---------------------------------------------------------------------------------- errors
def test_backward_of_a_non_scalar_without_gradient_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"scalar outputs.*\(2,\)"):
        (x * 2).backward()


def test_backward_with_a_gradient_of_the_wrong_shape_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"\(3,\).*\(2,\)"):
        (x * 2).backward(tinynorm.ones(3, dtype="float64"))


def test_backward_of_a_tensor_outside_the_graph_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        constant = tinynorm.tensor([1.0]).sum()
        constant.backward()


def test_requires_grad_on_an_int_tensor_raises():
    with pytest.raises(RuntimeError, match="int64"):
        tinynorm.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        tinynorm.arange(3).requires_grad_()


def test_mismatched_shapes_raise_value_errors_naming_both():
    a, b = tinynorm.ones(2, 3), tinynorm.ones(4, 3)
    for op in (lambda: a + b, lambda: a * b, lambda: a - b, lambda: a / b, lambda: a**b):
        with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 3\)"):
            op()
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(2, 3\)"):
        a @ a
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(5, 4\)"):
        tinynorm.nn.functional.linear(a, tinynorm.ones(5, 4))


# ---------------------------------------------------------------------------------- dtypes
def test_mixed_dtypes_promote_like_pytorch():
    f32 = tinynorm.ones(2)
    f64 = tinynorm.ones(2, dtype="float64")
    assert (f32 * 1.5).dtype == np.float32
    assert (2.0 - f32).dtype == np.float32
    assert (f32 + f64).dtype == np.float64
    assert (tinynorm.arange(2) + f32).dtype == np.float32  # numpy: float64


def test_gradients_take_the_dtype_of_their_leaf():
    a = tinynorm.ones(3, requires_grad=True)
    b = tinynorm.ones(3, dtype="float64", requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    c = tinynorm.ones(3, requires_grad=True)
    c.double().sum().backward()
    assert c.grad.dtype == np.float32


FLOAT32_OPS = {
    "add": lambda t: t + 1.5, "rsub": lambda t: 2.0 - t, "mul": lambda t: t * t, "rdiv": lambda t: 1.0 / t,
    "pow": lambda t: t**2.5, "rpow": lambda t: 2.0**t, "neg": lambda t: -t, "exp": tinynorm.exp, "log": tinynorm.log,
    "sqrt": tinynorm.sqrt, "rsqrt": tinynorm.rsqrt, "abs": tinynorm.abs, "tanh": tinynorm.tanh,
    "sigmoid": tinynorm.sigmoid, "relu": tinynorm.relu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, "tanh"),
    "clamp": lambda t: t.clamp(0.2, 0.8), "maximum": lambda t: tinynorm.maximum(t, t * 0.5),
    "where": lambda t: tinynorm.where(t > 0.5, t, 0.0), "sum": lambda t: t.sum(1), "mean": lambda t: t.mean(0),
    "var": lambda t: t.var(1), "std": lambda t: t.std(), "max": lambda t: t.max(1).values,
    "index": lambda t: t[[0, 0, 1]], "cat": lambda t: tinynorm.cat([t, t]), "softmax": lambda t: tinynorm.softmax(t, 1),
    "log_softmax": lambda t: tinynorm.log_softmax(t, 1), "matmul": lambda t: t @ t.T,
    "linear": lambda t: F.linear(t, t, t[:, 0]), "dropout": lambda t: F.dropout(t, 0.3),
    "cross_entropy": lambda t: F.cross_entropy(t, tinynorm.tensor([0, 1, 2]), label_smoothing=0.1),
    "nll_loss": lambda t: F.nll_loss(t, tinynorm.tensor([0, 1, 2])), "mse_loss": lambda t: F.mse_loss(t, t * 2),
}


@pytest.mark.parametrize("name", sorted(FLOAT32_OPS))
def test_float32_stays_float32_in_forward_and_backward(name, rng):
    """No op silently computes in float64 (which would be slower and hidden by the leaf's final cast)."""
    x = tinynorm.tensor(rng.uniform(0.1, 1, (3, 4)).astype(np.float32), requires_grad=True)
    h = x * 1.0
    arriving = []
    h.register_hook(lambda g: arriving.append(g.dtype))
    out = FLOAT32_OPS[name](h)
    out.backward(tinynorm.ones(*out.shape))
    assert out.dtype == np.float32 and arriving == [np.float32]


# ---------------------------------------------------------------------------- inspection
def test_format_graph_and_to_dot_name_the_ops():
    x = tinynorm.ones(2, 3, requires_grad=True)
    y = (x.exp() * 2).sum()
    text = format_graph(y)
    for name in ("SumBackward", "MulBackward", "ExpBackward", "AccumulateGrad (leaf (2, 3) float32)"):
        assert name in text
    dot = to_dot(y)
    assert dot.startswith("digraph") and "ExpBackward" in dot and dot.count("->") >= 3
    assert "SumBackward" in repr(y)


def test_format_graph_marks_a_shared_node_once():
    x = tinynorm.ones(2, requires_grad=True)
    h = x.exp()
    text = format_graph(h * h)
    assert text.count("ExpBackward") == 1 and "(see above)" in text


# ------------------------------------------------------------------------- custom Function
class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad


class WrongCube(Cube):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * x * grad  # deliberately wrong


class CentreWithZeroGradient(Function):
    """x - mean(x) with a backward that returns 0: right only for the upstream gradient 1."""

    @staticmethod
    def forward(ctx, x):
        return x - x.mean()

    @staticmethod
    def backward(ctx, grad):
        return grad * 0


def test_a_custom_function_records_itself_and_passes_gradcheck():
    x = leaf([0.5, -1.0, 2.0])
    y = Cube.apply(x)
    assert y.grad_fn.name() == "CubeBackward"
    assert gradcheck(Cube.apply, x)


def test_gradcheck_catches_a_wrong_backward_and_reports_where():
    x = leaf([0.5, -1.0, 2.0])
    with pytest.raises(GradcheckError, match=r"input 0 .*index \(0,\)") as error:
        gradcheck(WrongCube.apply, x)
    analytic, numeric = map(float, re.search(r"analytic (\S+), numeric (\S+)", str(error.value)).groups())
    np.testing.assert_allclose(analytic / numeric, 2 / 3, rtol=1e-6)  # 2x^2 v against the true 3x^2 v
    assert gradcheck(WrongCube.apply, x, raise_exception=False) is False


def test_random_upstream_catches_what_out_sum_misses():
    x = leaf([0.5, -1.0, 2.0])
    y = CentreWithZeroGradient.apply(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 0, atol=1e-12)  # the correct gradient of sum() is 0 too
    with pytest.raises(GradcheckError):
        gradcheck(CentreWithZeroGradient.apply, x)


def test_gradcheck_refuses_float32_inputs():
    with pytest.raises(TypeError, match="float64"):
        gradcheck(tinynorm.exp, tinynorm.ones(2, requires_grad=True))
