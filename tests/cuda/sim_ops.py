"""Every differentiable op of ``tinynorm.ops`` and ``tinynorm.nn.functional``, forward and backward on
``device='cuda'`` (Numba's CUDA simulator), against the same computation on the CPU.

Each case runs one function on CPU tensors and on CUDA copies of them, then compares the outputs and
the input gradients for a random upstream gradient (float32, ~1e-5 relative to the largest value).
Shapes are small: the simulator runs one Python thread per CUDA thread. Dropout draws different
numbers on each device, so it is checked by its statistics and the consistency of mask and gradient.

Run by ``test_cuda_simulator.py`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (or directly:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_ops.py``).
"""
import sys
from pathlib import Path
from typing import Any, Callable

import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # for common.replace_kernel_launches

import tinynorm
import tinynorm.nn.functional as F
from tinynorm import nn
from tinynorm.backends.cuda import CudaArray

RTOL = 1e-5


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return rng(seed).standard_normal(shape).astype(np.float32)


def positive(*shape: int, seed: int = 0) -> np.ndarray:
    return rng(seed).uniform(0.5, 2.0, shape).astype(np.float32)


def assert_close(actual: tinynorm.Tensor, expected: tinynorm.Tensor, what: str, rtol: float = RTOL) -> None:
    """Equal shapes and dtypes, values within ``rtol`` of the largest expected magnitude."""
    assert actual.device == "cuda" and isinstance(actual.array, CudaArray), f"{what} is not on the device"
    got, want = actual.numpy(), expected.numpy()
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    scale = float(np.abs(want).max()) if want.size and np.isfinite(want).all() else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=what)


def check(fn: Callable[..., tinynorm.Tensor], *inputs: Any, grad: bool = True, rtol: float = RTOL) -> None:
    """``fn`` on the CPU and on CUDA copies of ``inputs`` (numpy arrays; floating ones require grad):
    same outputs, and the same input gradients for a random upstream gradient."""
    def make(device: str) -> list:
        return [tinynorm.tensor(a, device=device, requires_grad=grad and a.dtype.kind == "f")
                if isinstance(a, np.ndarray) else a for a in inputs]

    cpu, cuda = make("cpu"), make("cuda")
    expected, actual = fn(*cpu), fn(*cuda)
    assert_close(actual, expected, "output", rtol)
    if not grad:
        return
    upstream = rng(99).standard_normal(expected.shape).astype(expected.dtype)
    expected.backward(tinynorm.tensor(upstream))
    actual.backward(tinynorm.tensor(upstream, device="cuda"))
    for i, (c, g) in enumerate(zip(cpu, cuda)):
        if isinstance(c, tinynorm.Tensor) and c.requires_grad:
            assert_close(g.grad, c.grad, f"gradient of input {i}", rtol)


# ------------------------------------------------------------------------------- arithmetic
ARITHMETIC = {
    "add": (lambda a, b: a + b, randn(3, 4), randn(3, 4, seed=1)),
    "add_broadcast": (lambda a, b: a + b, randn(2, 3, 4), randn(3, 1, seed=1)),
    "sub_broadcast": (lambda a, b: a - b, randn(4), randn(2, 3, 1, seed=1)),
    "mul_broadcast": (lambda a, b: a * b, randn(2, 1, 4), randn(3, 4, seed=1)),
    "div_broadcast": (lambda a, b: a / b, randn(2, 3, 4), positive(1, 4, seed=1)),
    "pow_tensor": (lambda a, b: a**b, positive(3, 4), randn(3, 4, seed=1)),
    "scalars": (lambda a: (2.0 - a) * 3 / 4 + 1.5, randn(3, 4)),
    "reflected": (lambda a: 2.0 / a + 2.0**a - 1 + (-a), positive(3, 4)),
    "pow_scalar": (lambda a: a**3 + a**0.5, positive(3, 4)),
    "neg": (lambda a: -a, randn(5)),
    "zero_dim": (lambda a, b: a * b + b, randn(3, 4), np.float32(1.5) * np.ones((), np.float32)),
}


@pytest.mark.parametrize("name", sorted(ARITHMETIC))
def test_arithmetic(name):
    fn, *inputs = ARITHMETIC[name]
    check(fn, *inputs)


# ------------------------------------------------------------------------------- elementwise
ELEMENTWISE = {
    "exp": (tinynorm.exp, randn(3, 4)),
    "log": (tinynorm.log, positive(3, 4)),
    "sqrt": (tinynorm.sqrt, positive(3, 4)),
    "rsqrt": (tinynorm.rsqrt, positive(3, 4)),
    "abs": (tinynorm.abs, randn(3, 4)),
    "tanh": (tinynorm.tanh, randn(3, 4)),
    "sigmoid": (tinynorm.sigmoid, 4 * randn(3, 4)),
    "relu": (tinynorm.relu, randn(3, 4)),
    "gelu": (F.gelu, randn(3, 4)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), randn(3, 4)),
    "clamp": (lambda x: tinynorm.clamp(x, -0.5, 0.7), randn(3, 4)),
    "clamp_min": (lambda x: x.clamp(min=0.1), randn(3, 4)),
    "clamp_max": (lambda x: x.clamp(max=0.1), randn(3, 4)),
    "maximum": (tinynorm.maximum, randn(3, 4), randn(4, seed=1)),
    "minimum": (tinynorm.minimum, randn(3, 4), randn(3, 1, seed=1)),
    "maximum_ties": (tinynorm.maximum, np.float32([1, 2, 3]), np.float32([1, 0, 3])),
    "maximum_scalar": (lambda x: tinynorm.maximum(x, 0.25), randn(3, 4)),
    "where": (lambda a, b: tinynorm.where(a > b, a, b), randn(3, 4), randn(3, 4, seed=1)),
    "where_broadcast": (lambda a, b: tinynorm.where(a > 0, a, b), randn(3, 4), randn(4, seed=1)),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise(name):
    fn, *inputs = ELEMENTWISE[name]
    check(fn, *inputs)


@pytest.mark.parametrize("name", ["less", "less_equal", "greater", "greater_equal", "equal", "not_equal"])
def test_comparisons(name):
    a, b = np.float32([[1, 2, 3], [4, 5, 6]]), np.float32([3, 2, 1])
    symbol = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=", "equal": "==",
              "not_equal": "!="}[name]
    fn = eval(f"lambda a, b: (a {symbol} b, a {symbol} 2.0, 2.0 {symbol} a)")  # noqa: S307  (test table)
    for actual, expected in zip(fn(tinynorm.tensor(a, device="cuda"), tinynorm.tensor(b, device="cuda")),
                                fn(tinynorm.tensor(a), tinynorm.tensor(b))):
        assert actual.device == "cuda" and actual.dtype == np.bool_
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())


# -------------------------------------------------------------------------------- reductions
REDUCTIONS = {
    "sum_all": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(1),
    "sum_dims_keepdim": lambda x: x.sum((0, 2), keepdim=True),
    "mean_all": lambda x: x.mean(),
    "mean_dim": lambda x: x.mean(-1),
    "var": lambda x: x.var(1),
    "var_biased_all": lambda x: x.var(correction=0),
    "std": lambda x: x.std((0, 2), keepdim=True),
    "amax": lambda x: x.amax(1),
    "amin_all": lambda x: x.amin(),
    "max_dim_values": lambda x: x.max(2).values,
    "min_dim_values": lambda x: x.min(0, keepdim=True).values,
    "max_all": lambda x: x.max(),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(name):
    check(REDUCTIONS[name], randn(2, 3, 4))


def test_extremes_share_the_gradient_between_ties():
    check(lambda x: x.amax(1), np.float32([[1, 3, 3], [2, 2, 2]]))


@pytest.mark.parametrize("fn", [lambda x: x.argmax(), lambda x: x.argmin(1), lambda x: x.argmax(2, keepdim=True),
                                lambda x: x.max(1).indices, lambda x: x.min(2).indices])
def test_index_reductions(fn):
    check(lambda x: fn(x), randn(2, 3, 4), grad=False)
    assert fn(tinynorm.tensor(randn(2, 3, 4), device="cuda")).dtype == np.int64


# ------------------------------------------------------------------------------------- shape
SHAPE = {
    "reshape": lambda x: x.reshape(4, 6),
    "view_minus_one": lambda x: x.view(-1, 2),
    "flatten": lambda x: x.flatten(1),
    "permute": lambda x: x.permute(2, 0, 1) * 1.0,
    "transpose_reshape": lambda x: x.transpose(0, 2).reshape(-1),
    "T": lambda x: x[0].T,
    "unsqueeze_squeeze": lambda x: x.unsqueeze(1).squeeze(1).unsqueeze(-1),
    "expand": lambda x: x[:, :1].expand(3, 2, 3, 4),
    "cat": lambda x: tinynorm.cat([x, x[:, :2] * 2.0], dim=1),
    "stack": lambda x: tinynorm.stack([x, x * 3.0], dim=-1),
    "clone": lambda x: x.clone(),
    "cast": lambda x: x.double().float(),
    "cast_half": lambda x: x.half().float(),
    "contiguous_after_permute": lambda x: x.permute(1, 0, 2).contiguous().reshape(3, 8),
}


@pytest.mark.parametrize("name", sorted(SHAPE))
def test_shape_ops(name):
    check(SHAPE[name], randn(2, 3, 4))


def test_to_device_inside_a_graph():
    x = tinynorm.tensor(randn(3, 4), requires_grad=True)
    upstream = randn(3, 4)
    (x.cuda() * 2.0).cpu().backward(tinynorm.tensor(upstream))
    assert x.grad.device == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * upstream, rtol=1e-6)


# ---------------------------------------------------------------------------------- indexing
INDEXING = {
    "int": lambda x: x[1],
    "negative_int": lambda x: x[-1, 2],
    "slices": lambda x: x[:, 1:3, ::2],
    "ellipsis_none": lambda x: x[..., None, 1],
    "list": lambda x: x[[0, 1, 0]],
    "repeated_rows": lambda x: x[[1, 1, 0], 2],
    "index_tensor": lambda x: x[tinynorm.tensor([[0, 1], [1, 1]], device=x.device)],
    "two_arrays": lambda x: x[tinynorm.tensor([0, 1, 1], device=x.device), tinynorm.tensor([2, 0, 2], device=x.device)],
    "array_after_slice": lambda x: x[:, [2, 0, 2]],
    "negative_arrays": lambda x: x[[-1, 0], :, [-4, 3]],  # negative entries count from the end, gradient too
    "bool_mask": lambda x: x[x > 0],
}


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing(name):
    check(INDEXING[name], randn(2, 3, 4))


def test_embedding():
    ids = np.array([[1, 3, 3], [0, 1, 3]])
    check(lambda w, i: F.embedding(i, w), randn(4, 5), ids)


# ------------------------------------------------------------------------------------ linalg
LINALG = {
    "matmul_2d": (tinynorm.matmul, randn(3, 4), randn(4, 5, seed=1)),
    "matmul_batched_broadcast": (tinynorm.matmul, randn(2, 3, 4), randn(4, 2, seed=1)),
    "matmul_batch_both": (tinynorm.matmul, randn(2, 1, 3, 4), randn(3, 4, 2, seed=1)),
    "matmul_vector_matrix": (tinynorm.matmul, randn(4), randn(2, 4, 3, seed=1)),
    "matmul_matrix_vector": (tinynorm.matmul, randn(3, 4), randn(4, seed=1)),
    "matmul_dot": (tinynorm.matmul, randn(4), randn(4, seed=1)),
    "matmul_transposed": (lambda a, b: a.T @ b, randn(4, 3), randn(4, 2, seed=1)),
    "linear": (F.linear, randn(2, 3, 4), randn(5, 4, seed=1), randn(5, seed=2)),
    "linear_no_bias": (F.linear, randn(3, 4), randn(5, 4, seed=1)),
}


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg(name):
    fn, *inputs = LINALG[name]
    check(fn, *inputs)


# ----------------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax(fn, dim):
    check(lambda x: fn(x, dim=dim), 3 * randn(2, 3, 4))


# ------------------------------------------------------------------------------------ losses
LOSSES = {
    "cross_entropy": lambda x, t: F.cross_entropy(x, t),
    "cross_entropy_sum": lambda x, t: F.cross_entropy(x, t, reduction="sum"),
    "cross_entropy_none": lambda x, t: F.cross_entropy(x, t, reduction="none"),
    "cross_entropy_ignore": lambda x, t: F.cross_entropy(x, t, ignore_index=2),
    "cross_entropy_smoothing": lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
    "nll_loss": lambda x, t: F.nll_loss(F.log_softmax(x, 1), t),
    "nll_loss_none_ignore": lambda x, t: F.nll_loss(x, t, reduction="none", ignore_index=0),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses(name):
    targets = np.array([0, 2, 1, 2, 3])
    check(LOSSES[name], randn(5, 4), targets)


def test_cross_entropy_over_spatial_dims():
    targets = rng(1).integers(0, 3, (2, 2, 2))
    check(lambda x, t: F.cross_entropy(x, t, ignore_index=1), randn(2, 3, 2, 2), targets)


def test_cross_entropy_all_ignored_is_nan_with_zero_gradient():
    x = tinynorm.tensor(randn(3, 4), device="cuda", requires_grad=True)
    loss = F.cross_entropy(x, tinynorm.tensor([-100, -100, -100], device="cuda"))
    assert np.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_mse_loss():
    for reduction in ("mean", "sum", "none"):
        check(lambda x, y: F.mse_loss(x, y, reduction=reduction), randn(3, 4), randn(3, 4, seed=1))


# ------------------------------------------------------------------------------------ dropout
def test_dropout_statistics_and_gradient_follow_the_mask():
    p, n = 0.25, 1024
    x = tinynorm.tensor(positive(n), device="cuda", requires_grad=True)
    y = F.dropout(x, p)
    upstream = randn(n, seed=3)
    y.backward(tinynorm.tensor(upstream, device="cuda"))
    values, kept = y.numpy(), y.numpy() != 0
    assert y.device == "cuda" and abs((~kept).mean() - p) < 0.05  # 3.7 standard deviations
    np.testing.assert_allclose(values[kept], x.numpy()[kept] / (1 - p), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, upstream / (1 - p), 0), rtol=1e-6)
    assert F.dropout(x, p, training=False) is x
    assert (F.dropout(x, 1.0).numpy() == 0).all()
    assert not np.array_equal(F.dropout(x, p).numpy() != 0, kept)  # a fresh mask per call


# ------------------------------------------------------------------------------- conv and pool
CONV = {
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b), randn(2, 3, 5, 5), randn(4, 3, 3, 3, seed=1), randn(4, seed=2)),
    "conv2d_stride_padding": (lambda x, w: F.conv2d(x, w, stride=2, padding=1), randn(1, 2, 5, 4),
                              randn(3, 2, 3, 3, seed=1)),
    "conv2d_1x1": (lambda x, w: F.conv2d(x, w), randn(2, 3, 3, 3), randn(2, 3, 1, 1, seed=1)),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), randn(2, 2, 4, 5)),
    "max_pool2d_stride_padding": (lambda x: F.max_pool2d(x, 3, stride=2, padding=1), randn(1, 2, 5, 5)),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2), randn(2, 2, 4, 4)),
    "avg_pool2d_padding": (lambda x: F.avg_pool2d(x, 3, stride=1, padding=1), randn(1, 2, 4, 3)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, 1), randn(2, 3, 3, 4)),
}


@pytest.mark.parametrize("name", sorted(CONV))
def test_conv_and_pool(name):
    fn, *inputs = CONV[name]
    check(fn, *inputs)


# ------------------------------------------------------------------------------------ layers
def check_layer(make: Callable[[], nn.Module], x: np.ndarray, train: bool = True) -> None:
    """A layer built on the CPU and a copy moved to CUDA: same outputs, input and parameter gradients,
    and buffers (running statistics) afterwards."""
    tinynorm.manual_seed(0)
    cpu_layer = make().train(train)
    cuda_layer = make().train(train)
    cuda_layer.load_state_dict(cpu_layer.state_dict())
    cuda_layer.to("cuda")
    check(lambda t: (cpu_layer if t.device == "cpu" else cuda_layer)(t), x)
    cpu_grads = {name: p.grad for name, p in cpu_layer.named_parameters()}
    for name, param in cuda_layer.named_parameters():
        assert_close(param.grad, cpu_grads[name], f"gradient of {name}")
    cpu_state = cpu_layer.state_dict()
    for name, value in cuda_layer.state_dict().items():
        if value.dtype.kind == "f":
            assert_close(value, cpu_state[name], f"state {name}")
        else:
            np.testing.assert_array_equal(value.numpy(), cpu_state[name].numpy(), err_msg=name)


LAYERS = {
    "batch_norm_1d": (lambda: nn.BatchNorm1d(3), randn(6, 3)),
    "batch_norm_1d_sequence": (lambda: nn.BatchNorm1d(3), randn(4, 3, 5)),
    "batch_norm_2d": (lambda: nn.BatchNorm2d(3), randn(2, 3, 3, 4)),
    "layer_norm": (lambda: nn.LayerNorm(8), randn(2, 3, 8)),
    "layer_norm_2d_shape": (lambda: nn.LayerNorm((3, 4)), randn(2, 3, 4)),
    "rms_norm": (lambda: nn.RMSNorm(8), randn(4, 8)),
    "group_norm": (lambda: nn.GroupNorm(2, 4), randn(2, 4, 3, 3)),
    "instance_norm_2d": (lambda: nn.InstanceNorm2d(3, affine=True), randn(2, 3, 4, 4)),
    "instance_norm_1d": (lambda: nn.InstanceNorm1d(3), randn(2, 3, 6)),
    "linear": (lambda: nn.Linear(4, 3), randn(2, 4)),
    "conv2d": (lambda: nn.Conv2d(2, 3, 3, padding=1), randn(2, 2, 4, 4)),
    "mlp": (lambda: nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 2)),
                      randn(3, 4)),
    "attention_causal": (lambda: nn.MultiheadSelfAttention(8, 2), randn(1, 3, 8)),
    "attention_full": (lambda: nn.MultiheadSelfAttention(4, 2, causal=False), randn(1, 3, 4)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers(name):
    make, x = LAYERS[name]
    check_layer(make, x)


def test_batch_norm_in_eval_mode_uses_running_statistics():
    check_layer(lambda: nn.BatchNorm2d(2), randn(2, 2, 3, 3), train=False)


def test_embedding_layer():
    tinynorm.manual_seed(0)
    cpu_layer = nn.Embedding(6, 3)
    cuda_layer = nn.Embedding(6, 3)
    cuda_layer.load_state_dict(cpu_layer.state_dict())
    cuda_layer.to("cuda")
    ids = np.array([[5, 0, 5], [1, 2, 3]])
    upstream = randn(2, 3, 3, seed=5)
    for layer, device in ((cpu_layer, "cpu"), (cuda_layer, "cuda")):
        layer(tinynorm.tensor(ids, device=device)).backward(tinynorm.tensor(upstream, device=device))
    assert_close(cuda_layer.weight.grad, cpu_layer.weight.grad, "embedding gradient")


# ------------------------------------------------------------------------------- launch counts
@pytest.fixture
def launches(monkeypatch) -> list:
    """The kernels launched while a test runs, in order (each launch still runs; undone afterwards)."""
    from common import replace_kernel_launches  # benchmarks/common.py: on the path, see the imports

    from tinynorm.backends.cuda.runtime import launch as launch_module

    counted, original = [], launch_module.launch

    def counting(kernel, *args, **kwargs):
        counted.append(kernel)
        return original(kernel, *args, **kwargs)

    replace_kernel_launches(counting, monkeypatch.setattr)
    return counted


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_one_launch_each_way(launches, approximate):
    """Fused on the GPU: as array arithmetic, GELU took 5 launches forward and 11 backward."""
    x = tinynorm.tensor(randn(3, 4), device="cuda", requires_grad=True)
    upstream = tinynorm.tensor(randn(3, 4, seed=1), device="cuda")
    y = F.gelu(x, approximate=approximate)
    assert len(launches) == 1
    y.backward(upstream)
    assert len(launches) == 2


def test_relu_is_one_launch_each_way(launches):
    """As array arithmetic the backward was a comparison and a product: two launches."""
    x = tinynorm.tensor(randn(3, 4), device="cuda", requires_grad=True)
    y = tinynorm.relu(x)
    assert len(launches) == 1
    y.backward(tinynorm.tensor(randn(3, 4, seed=1), device="cuda"))
    assert len(launches) == 2


def test_basic_index_gradient_is_a_fill_and_a_copy(launches):
    """The gradient of ``x[1, :2]`` (ints and slices): zeros, then one strided copy; no scatter."""
    x = tinynorm.tensor(randn(3, 4), device="cuda", requires_grad=True)
    y = x[1, :2]
    launches.clear()
    y.backward(tinynorm.tensor(randn(2, seed=1), device="cuda"))
    assert len(launches) == 2
    want = np.zeros((3, 4), np.float32)
    want[1, :2] = randn(2, seed=1)
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_batch_norm_training_forward_launches(launches):
    """Statistics (2), the batch count (1), the running statistics (1), rstd (1), the normalization (1):
    the running statistics and rstd took 10 elementwise launches as array arithmetic."""
    layer = nn.BatchNorm2d(3).to("cuda")
    layer(tinynorm.tensor(randn(2, 3, 2, 2), device="cuda"))
    assert len(launches) == 6


@pytest.mark.parametrize("reduction, forward_launches", [("mean", 4), ("sum", 4), ("none", 2)])
def test_cross_entropy_launches(launches, reduction, forward_launches):
    """Forward: the target check, the fused kernel, then the sum and one elementwise launch (the division by
    the kept rows for 'mean'; for 'sum' an elementwise op after the sum); backward: one kernel. As array
    arithmetic they took 18 and 10 launches (mean)."""
    x = tinynorm.tensor(randn(4, 6), device="cuda", requires_grad=True)
    loss = F.cross_entropy(x, tinynorm.tensor(np.array([0, 5, -100, 2]), device="cuda"), reduction=reduction)
    assert len(launches) == forward_launches
    upstream = tinynorm.tensor(randn(*loss.shape, seed=1), device="cuda")
    launches.clear()
    loss.backward(upstream)
    assert len(launches) == 1
