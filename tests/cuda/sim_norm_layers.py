"""The normalization layers on ``device='cuda'``, run in Numba's CUDA simulator, against the same layers on the CPU.

Every layer (BatchNorm1d/2d, LayerNorm, RMSNorm, GroupNorm, InstanceNorm, SyncBatchNorm) trains for two
steps and then evaluates: outputs, input and parameter gradients (random upstream gradients), running
statistics and ``num_batches_tracked`` must match the CPU. float32 runs against the CPU layer in
float32; float16 input to a float32 layer (mixed precision, on both devices) runs against a float64 CPU
layer fed the same float16 values, with a float16 tolerance. The large-mean case (mean 1e4, std 1)
runs against float64. Run with ``NUMBA_ENABLE_CUDASIM=1`` (tests/cuda/test_cuda_simulator.py does).
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

import tinynorm as tn
from tinynorm import nn
from tinynorm.kernels.cuda import launch

HALF_EPS = float(np.finfo(np.float16).eps)

# (name, layer factory, input shape); the factories take keyword options (dtype, eps) for references.
LAYERS = [
    ("BatchNorm1d (N, C)", lambda **o: nn.BatchNorm1d(4, **o), (6, 4)),
    ("BatchNorm1d (N, C, L)", lambda **o: nn.BatchNorm1d(3, **o), (3, 3, 5)),
    ("BatchNorm2d", lambda **o: nn.BatchNorm2d(3, **o), (2, 3, 4, 5)),
    ("BatchNorm2d momentum=None", lambda **o: nn.BatchNorm2d(3, momentum=None, **o), (2, 3, 3, 3)),
    ("BatchNorm2d no affine, no running stats",
     lambda **o: nn.BatchNorm2d(3, affine=False, track_running_stats=False, **o), (2, 3, 3, 3)),
    ("LayerNorm", lambda **o: nn.LayerNorm((5, 6), **o), (3, 5, 6)),
    ("RMSNorm", lambda eps=None, **o: nn.RMSNorm(8, eps=eps, **o), (4, 8)),
    ("GroupNorm", lambda **o: nn.GroupNorm(2, 4, **o), (2, 4, 3, 3)),
    ("InstanceNorm1d affine, running stats",
     lambda **o: nn.InstanceNorm1d(3, affine=True, track_running_stats=True, **o), (2, 3, 6)),
    ("InstanceNorm2d", lambda **o: nn.InstanceNorm2d(3, **o), (2, 3, 4, 4)),
]
IDS = [name for name, _, _ in LAYERS]


def _randomize(layer, rng):
    """Random affine parameters and running statistics, so that every term of the math shows."""
    for name in ("weight", "bias", "running_mean", "running_var"):
        tensor = getattr(layer, name, None)
        if tensor is not None:
            low = 0.5 if name in ("weight", "running_var") else -1.0
            with tn.no_grad():
                tensor.copy_(tn.tensor(rng.uniform(low, low + 1.0, tensor.shape).astype(np.float32)))
    return layer


def _make(factory, device, dtype=tn.float32, **options):
    layer = _randomize(factory(**options), np.random.default_rng(1))
    return layer.to(dtype).to(device)


def _steps(layer, device, inputs, grads, dtype):
    """Two training steps and one evaluation step; everything observable, as float64 numpy arrays."""
    seen = {}
    for step, mode in enumerate(("train", "train", "eval")):
        layer.train(mode == "train")
        x = tn.tensor(inputs[step].astype(dtype), device=device, requires_grad=True)
        y = layer(x)
        y.backward(tn.tensor(grads[step].astype(y.dtype), device=device))
        seen[f"y{step}"], seen[f"dx{step}"] = y.numpy(), x.grad.numpy()
        assert y.dtype == x.dtype and x.grad.dtype == x.dtype
    for name, tensor in [*layer.named_parameters(), *layer.named_buffers()]:
        if tensor is not None:
            seen[name] = tensor.numpy()
            if tensor.grad is not None:
                seen[name + ".grad"] = tensor.grad.numpy()
    return {k: np.asarray(v, dtype=np.float64) for k, v in seen.items()}


def _data(shape, mean=0.0, seed=0):
    rng = np.random.default_rng(seed)
    return ([mean + rng.standard_normal(shape) for _ in range(3)], [rng.standard_normal(shape) for _ in range(3)])


def _assert_close(actual, expected, tolerance, what):
    assert actual.keys() == expected.keys(), what
    for key in expected:
        scale = max(1.0, np.abs(expected[key]).max(initial=0.0))
        error = np.abs(actual[key] - expected[key]).max(initial=0.0)
        assert error <= tolerance * scale, f"{what}: {key} off by {error:.3g} (scale {scale:.3g})"


@pytest.mark.parametrize("name, factory, shape", LAYERS, ids=IDS)
def test_float32_on_cuda_matches_cpu(name, factory, shape):
    inputs, grads = _data(shape)
    cuda_run = _steps(_make(factory, "cuda"), "cuda", inputs, grads, np.float32)
    cpu_run = _steps(_make(factory, "cpu"), "cpu", inputs, grads, np.float32)
    _assert_close(cuda_run, cpu_run, 3e-5, name)


# float16: every layer on the CPU (cheap), one of each kind on the simulated GPU (about 6 s each).
HALF_CASES = [pytest.param(*layer, "cpu", id=f"{layer[0]}-cpu") for layer in LAYERS] + [
    pytest.param(*LAYERS[i], "cuda", id=f"{LAYERS[i][0]}-cuda") for i in (0, 3, 5, 6, 7, 8)]


@pytest.mark.parametrize("name, factory, shape, device", HALF_CASES)
def test_float16_input_to_float32_layer(name, factory, shape, device):
    """float16 data, float32 parameters and statistics, on both devices, against float64 math on the
    same float16 values; parameters and running statistics stay float32."""
    inputs, grads = _data(shape)
    inputs = [x.astype(np.float16) for x in inputs]
    grads = [g.astype(np.float16) for g in grads]
    options = {"eps": HALF_EPS} if name == "RMSNorm" else {}  # eps=None means float16's epsilon
    layer = _make(factory, device, **options)
    half_run = _steps(layer, device, inputs, grads, np.float16)
    assert all(t.dtype == np.float32 for t in [*layer.parameters(), *layer.buffers()] if t.dtype.kind == "f")
    reference = _steps(_make(factory, "cpu", tn.float64, **options), "cpu", inputs, grads, np.float64)
    _assert_close(half_run, reference, 4e-3, f"{name} on {device}")


@pytest.mark.parametrize("name, factory, shape", [LAYERS[2], LAYERS[5], LAYERS[7]], ids=[IDS[2], IDS[5], IDS[7]])
def test_large_mean_stays_accurate(name, factory, shape):
    """Mean 1e4, std 1 in float32: a naive E[x²] - E[x]² would be off by 100%; the error allowed is
    the inherent ~eps * |mean| / std."""
    inputs, grads = _data(shape, mean=1e4)
    inputs = [x.astype(np.float32) for x in inputs]
    cuda_run = _steps(_make(factory, "cuda"), "cuda", inputs, grads, np.float32)
    reference = _steps(_make(factory, "cpu", tn.float64), "cpu", inputs, grads, np.float64)
    _assert_close(cuda_run, reference, 3e-3, name)


class TwinCommunicator:
    """Two ranks holding the same shard: ``Allgather`` repeats this rank's numbers, ``Allreduce`` doubles them."""

    def Get_size(self):
        return 2

    def Allgather(self, send, receive):
        receive[:] = send

    def Allreduce(self, send, receive, op=None):
        receive *= 2


def test_sync_batch_norm_on_cuda():
    """SyncBatchNorm over two ranks with the same shard is BatchNorm over the doubled batch: same
    output and input gradient, local parameter gradients half the doubled batch's, running
    statistics of the doubled batch."""
    pytest.importorskip("mpi4py")
    shape = (2, 3, 2, 3)
    inputs, grads = _data(shape)
    layer = _randomize(nn.SyncBatchNorm(3, process_group=TwinCommunicator()), np.random.default_rng(1)).to("cuda")
    x = tn.tensor(inputs[0].astype(np.float32), device="cuda", requires_grad=True)
    y = layer(x)
    y.backward(tn.tensor(grads[0].astype(np.float32), device="cuda"))

    reference = _randomize(nn.BatchNorm2d(3), np.random.default_rng(1))
    x2 = tn.tensor(np.concatenate([inputs[0]] * 2).astype(np.float32), requires_grad=True)
    y2 = reference(x2)
    y2.backward(tn.tensor(np.concatenate([grads[0]] * 2).astype(np.float32)))
    n = shape[0]
    _assert_close({"y": y.numpy(), "dx": x.grad.numpy(), "dw": 2 * layer.weight.grad.numpy(),
                   "db": 2 * layer.bias.grad.numpy(), "mean": layer.running_mean.numpy(),
                   "var": layer.running_var.numpy()},
                  {"y": y2.numpy()[:n], "dx": x2.grad.numpy()[:n], "dw": reference.weight.grad.numpy(),
                   "db": reference.bias.grad.numpy(), "mean": reference.running_mean.numpy(),
                   "var": reference.running_var.numpy()}, 3e-5, "SyncBatchNorm")


def test_float64_on_cuda_is_refused_clearly():
    layer = nn.LayerNorm(4, dtype=tn.float64).to("cuda")
    x = tn.tensor(np.ones((2, 4)), device="cuda")
    with pytest.raises(TypeError, match=r"x has dtype float64.*float16 or float32"):
        layer(x)


def test_float32_input_to_float16_layer_is_refused():
    layer = nn.BatchNorm1d(3).to(tn.float16).to("cuda")
    with pytest.raises(TypeError, match="only float16 input may meet a float32 layer"):
        layer(tn.tensor(np.ones((2, 3), np.float32), device="cuda"))


def test_the_simulator_launches_through_the_dispatcher():
    """The driver-level launch needs a GPU: in the simulator the switch stays off whatever is asked."""
    old = launch.set_fast_launch(True)
    assert not launch.fast_launch_enabled() and not old
