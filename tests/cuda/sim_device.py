"""The CUDA device model in Numba's CUDA simulator: creating and moving tensors and modules, optimizer
state on the device, the errors for mixed devices and for a missing CUDA, and memory sharing through
the CUDA Array Interface.

Run by ``test_cuda_simulator.py`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (or directly:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_device.py``). The simulator's device memory is
host memory, so a numpy array published through ``__cuda_array_interface__`` stands in for a CuPy array
or a PyTorch CUDA tensor.
"""
import gc
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)


import tinynorm
import tinynorm.nn.functional as F
from tinynorm import nn
from tinynorm.backends.cuda import CudaArray

ROOT = Path(__file__).parents[2]


class FakeCudaArray:
    """A host numpy array published through the CUDA Array Interface, as CuPy publishes device memory."""

    def __init__(self, host: np.ndarray) -> None:
        self.host = host

    @property
    def __cuda_array_interface__(self) -> dict:
        strides = None if self.host.flags.c_contiguous else self.host.strides
        return {"shape": self.host.shape, "strides": strides, "typestr": self.host.dtype.str,
                "data": (self.host.ctypes.data, False), "version": 3, "stream": None}


def on_cuda(t: tinynorm.Tensor) -> bool:
    return t.device == "cuda" and isinstance(t.array, CudaArray)


# ------------------------------------------------------------------------------------ device model
def test_availability_and_synchronize():
    assert tinynorm.cuda.is_available()
    assert tinynorm.cuda.device_count() == 1
    tinynorm.cuda.synchronize()


def test_tensor_on_cuda_keeps_values_and_dtype_rules():
    t = tinynorm.tensor([[1.5, 2.0], [3.0, -4.0]], device="cuda")
    assert on_cuda(t) and t.dtype == np.float32 and t.shape == (2, 2)
    np.testing.assert_array_equal(t.numpy(), [[1.5, 2.0], [3.0, -4.0]])
    assert tinynorm.tensor([1, 2], device="cuda:0").dtype == np.int64
    assert tinynorm.tensor(np.arange(3.0), device="cuda").dtype == np.float64
    assert "device='cuda:0'" in repr(t)
    assert t[1, 0].item() == 3.0 and float(t.sum()) == 2.5


def test_tensor_of_a_tensor_copies_and_stays_on_its_device():
    x = tinynorm.tensor([1.0, 2.0], device="cuda")
    y = tinynorm.tensor(x)
    assert on_cuda(y) and y.array is not x.array
    y.fill_(0.0)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    z = tinynorm.tensor(x, dtype=tinynorm.float64, device="cpu")
    assert z.device == "cpu" and z.dtype == np.float64


@pytest.mark.parametrize("make", ["zeros", "ones", "empty"])
def test_fills_are_made_on_the_device(make):
    t = getattr(tinynorm, make)(2, 3, device="cuda")
    assert on_cuda(t) and t.shape == (2, 3) and t.dtype == np.float32
    if make != "empty":
        np.testing.assert_array_equal(t.numpy(), getattr(np, make)((2, 3)))


def test_creation_functions_match_the_cpu():
    full = tinynorm.full((2, 2), 7, device="cuda")
    assert on_cuda(full) and full.dtype == np.int64 and (full.numpy() == 7).all()
    np.testing.assert_array_equal(tinynorm.arange(1, 7, 2, device="cuda").numpy(), [1, 3, 5])
    for make in (tinynorm.randn, tinynorm.rand):
        tinynorm.manual_seed(3)
        expected = make(4, 5).numpy()
        tinynorm.manual_seed(3)
        actual = make(4, 5, device="cuda")
        assert on_cuda(actual)
        np.testing.assert_array_equal(actual.numpy(), expected)
    base = tinynorm.ones(3, device="cuda")
    for like in (tinynorm.zeros_like(base), tinynorm.ones_like(base), tinynorm.full_like(base, 2.0),
                 tinynorm.randn_like(base), tinynorm.empty_like(base)):
        assert on_cuda(like) and like.shape == (3,)
    x = tinynorm.zeros(2, device="cuda", requires_grad=True)
    assert x.requires_grad and x.is_leaf


def test_to_cuda_and_back_and_same_device_is_a_no_op():
    x = tinynorm.randn(3, 4)
    y = x.cuda()
    assert on_cuda(y) and x.to("cpu") is x and y.to("cuda:0") is y
    np.testing.assert_array_equal(y.cpu().numpy(), x.numpy())
    z = x.to("cuda", tinynorm.float64)
    assert on_cuda(z) and z.dtype == np.float64
    np.testing.assert_allclose(z.numpy(), x.numpy())


def test_gradient_flows_back_across_a_device_move():
    x = tinynorm.randn(3, 4, requires_grad=True)
    upstream = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    seen = []
    y = x.cuda() * 2.0
    y.register_hook(lambda grad: seen.append(grad.device))
    y.backward(tinynorm.tensor(upstream, device="cuda"))
    assert x.grad.device == "cpu" and seen == ["cuda"]
    np.testing.assert_allclose(x.grad.numpy(), 2 * upstream)
    z = tinynorm.randn(3, 4, device="cuda", requires_grad=True)
    (z * 3.0).backward(upstream)  # a host upstream gradient is copied to the device
    assert z.grad.device == "cuda"
    np.testing.assert_allclose(z.grad.numpy(), 3 * upstream)


def test_copy_between_devices():
    target = tinynorm.zeros(2, 2, device="cuda")
    target.copy_(tinynorm.tensor([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(target.numpy(), [[1, 2], [3, 4]])
    target.copy_(np.full((2, 2), 5.0))
    assert (target.numpy() == 5).all()
    host = tinynorm.zeros(2, 2)
    host.copy_(target)
    assert (host.numpy() == 5).all()


def test_module_to_moves_parameters_buffers_and_grads():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    model[0].weight.grad = tinynorm.ones(4, 3)
    expected = {name: t.numpy().copy() for name, t in model.state_dict().items()}
    assert model.to("cuda") is model
    for name, t in model.state_dict().items():
        assert on_cuda(t), name
        np.testing.assert_array_equal(t.numpy(), expected[name])
    assert model[1].num_batches_tracked.dtype == np.int64
    assert on_cuda(model[0].weight.grad) and model[0].weight.requires_grad
    model.to("cpu")
    assert all(t.device == "cpu" for t in model.state_dict().values())


def test_load_state_dict_copies_onto_the_modules_device():
    source, target = nn.Linear(3, 2), nn.Linear(3, 2).to("cuda")
    target.load_state_dict(source.state_dict())
    assert on_cuda(target.weight)
    np.testing.assert_array_equal(target.weight.numpy(), source.weight.numpy())


def test_init_fills_cuda_parameters_from_the_host_generator():
    layer = nn.Linear(4, 3).to("cuda")
    tinynorm.manual_seed(1)
    nn.init.kaiming_uniform_(layer.weight)
    tinynorm.manual_seed(1)
    expected = nn.init.kaiming_uniform_(tinynorm.empty(3, 4))
    assert on_cuda(layer.weight)
    np.testing.assert_array_equal(layer.weight.numpy(), expected.numpy())


@pytest.mark.parametrize("make", [lambda p: tinynorm.optim.SGD(p, lr=0.1, momentum=0.9),
                                  lambda p: tinynorm.optim.Adam(p, lr=0.1, amsgrad=True)])
def test_optimizer_state_lives_on_the_parameters_device(make):
    layer = nn.Linear(3, 2).to("cuda")
    optimizer = make(layer.parameters())
    out = layer(tinynorm.randn(4, 3, device="cuda"))
    out.backward(tinynorm.randn(*out.shape, device="cuda"))  # a random upstream gradient
    optimizer.step()
    tensors = [v for state in optimizer.state.values() for v in state.values() if isinstance(v, tinynorm.Tensor)]
    assert tensors and all(on_cuda(t) for t in tensors)
    assert on_cuda(layer.weight)


def test_optimizer_state_dict_loads_onto_the_parameters_device():
    cpu_layer, cuda_layer = nn.Linear(3, 2), nn.Linear(3, 2).to("cuda")
    cpu_optimizer = tinynorm.optim.Adam(cpu_layer.parameters())
    out = cpu_layer(tinynorm.randn(4, 3))
    out.backward(tinynorm.randn(*out.shape))  # a random upstream gradient
    cpu_optimizer.step()
    cuda_optimizer = tinynorm.optim.Adam(cuda_layer.parameters())
    cuda_optimizer.load_state_dict(cpu_optimizer.state_dict())
    state = cuda_optimizer.state[cuda_layer.weight]
    assert state["step"] == 1 and on_cuda(state["exp_avg"]) and on_cuda(state["exp_avg_sq"])
    np.testing.assert_array_equal(state["exp_avg"].numpy(), cpu_optimizer.state[cpu_layer.weight]["exp_avg"].numpy())


# ------------------------------------------------------------------------------------------ errors
def test_mixing_devices_names_both():
    a, b = tinynorm.ones(2), tinynorm.ones(2, device="cuda")
    for op in (lambda: a + b, lambda: b * a, lambda: tinynorm.matmul(a, b), lambda: a < b,
               lambda: tinynorm.where(b > 0, a, b)):
        with pytest.raises(RuntimeError, match=r"(cpu and cuda|cuda(:0)? and cpu)"):
            op()


def test_index_and_target_tensors_must_be_on_the_same_device():
    x = tinynorm.randn(3, 4, device="cuda")
    with pytest.raises(RuntimeError, match="index tensor is on cpu"):
        x[tinynorm.tensor([0, 2])]
    with pytest.raises(RuntimeError, match="target is on cpu"):
        F.cross_entropy(x, tinynorm.tensor([0, 1, 3]))
    with pytest.raises(RuntimeError, match="ids are on cpu"):
        nn.Embedding(5, 2).to("cuda")(tinynorm.tensor([1]))
    y = tinynorm.randn(2, device="cuda", requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="gradient is on cpu"):
        y.backward(tinynorm.ones(2))


def test_host_indices_and_targets_are_moved_to_the_device():
    x = tinynorm.randn(3, 4, device="cuda")
    np.testing.assert_array_equal(x[[0, 2]].numpy(), x.numpy()[[0, 2]])
    np.testing.assert_array_equal(x[np.array([2, 1]), 1:].numpy(), x.numpy()[[2, 1], 1:])
    target = tinynorm.tensor([0, 1, 3], device="cuda")
    loss = F.cross_entropy(x, target)
    assert on_cuda(loss)
    np.testing.assert_allclose(loss.item(), F.cross_entropy(x.cpu(), target.cpu()).item(), rtol=1e-6)


def test_out_of_range_indices_are_reported():
    x = tinynorm.randn(3, 4, device="cuda")
    with pytest.raises(IndexError, match=r"\[0, 3\].*\[4\]"):
        F.cross_entropy(x, tinynorm.tensor([0, 4, -100], device="cuda"))
    with pytest.raises(IndexError, match="ids must be in"):
        nn.Embedding(5, 2).to("cuda")(tinynorm.tensor([5], device="cuda"))


def test_unavailable_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(tinynorm.cuda, "_unavailable_reason", lambda: "no GPU here: install the cuda extra")
    assert not tinynorm.cuda.is_available() and tinynorm.cuda.device_count() == 0
    for make in (lambda: tinynorm.tensor([1.0], device="cuda"), lambda: tinynorm.zeros(2, device="cuda"),
                 lambda: tinynorm.ones(2).cuda(), lambda: nn.Linear(2, 2).to("cuda"), tinynorm.cuda.synchronize):
        with pytest.raises(RuntimeError, match="device 'cuda' is not available: no GPU here"):
            make()


def test_missing_numba_cuda_names_the_cuda_extra():
    """In a fresh process where numba-cuda cannot be imported (as on a machine without the extra)."""
    code = (
        "import sys\n"
        "sys.modules['numba_cuda'] = None  # what find_spec and import see when it is not installed\n"
        "import tinynorm\n"
        "assert not tinynorm.cuda.is_available()\n"
        "try:\n"
        "    tinynorm.zeros(2, device='cuda')\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "install the cuda extra" in result.stdout and "pip install" in result.stdout, result.stdout


# ------------------------------------------------------------------------------------------ interop
def test_from_cuda_array_shares_memory_both_ways():
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tinynorm.from_cuda_array(FakeCudaArray(host))
    assert on_cuda(t) and t.shape == (2, 3) and t.dtype == np.float32 and not t.requires_grad
    np.testing.assert_array_equal(t.numpy(), host)
    t.fill_(1.0)
    assert (host == 1).all()
    host[0, 0] = 9
    assert t[0, 0].item() == 9


def test_from_cuda_array_keeps_strided_layouts():
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    for view in (base.T, base[::-1, 1::2], base[:, ::-2]):
        t = tinynorm.from_cuda_array(FakeCudaArray(view))
        np.testing.assert_array_equal(t.numpy(), view)
    t = tinynorm.from_cuda_array(FakeCudaArray(base[::-1]))
    t[0].fill_(-1.0)  # the first row of the reversed view is the last row of base
    np.testing.assert_array_equal(base[2], -1.0)


def test_from_cuda_array_keeps_its_owner_alive():
    t = tinynorm.from_cuda_array(FakeCudaArray(np.full(1000, 3.0, dtype=np.float32)))
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), 3.0)


def test_tensor_copies_and_as_tensor_shares_a_cuda_array():
    host = np.ones((2, 2), dtype=np.float32)
    copied, shared = tinynorm.tensor(FakeCudaArray(host)), tinynorm.as_tensor(FakeCudaArray(host))
    assert on_cuda(copied) and on_cuda(shared)
    host[...] = 4
    assert (copied.numpy() == 1).all() and (shared.numpy() == 4).all()
    assert tinynorm.tensor(FakeCudaArray(host), dtype=tinynorm.float64).dtype == np.float64
    on_host = tinynorm.tensor(FakeCudaArray(host), device="cpu", requires_grad=True)
    assert on_host.device == "cpu" and on_host.requires_grad


def test_from_cuda_array_rejects_what_it_cannot_share():
    with pytest.raises(TypeError, match="__cuda_array_interface__.*ndarray"):
        tinynorm.from_cuda_array(np.zeros(2))
    with pytest.raises(TypeError, match="complex128"):
        tinynorm.from_cuda_array(FakeCudaArray(np.zeros(2, dtype=np.complex128)))
    record = np.zeros(4, dtype=[("a", np.float32), ("b", np.int8)])
    with pytest.raises(ValueError, match="not multiples of the item size 4"):
        tinynorm.from_cuda_array(FakeCudaArray(record["a"]))


def test_cpu_tensors_have_no_cuda_array_interface():
    assert not hasattr(tinynorm.ones(2), "__cuda_array_interface__")


def test_cuda_tensors_export_their_memory():
    """The simulator's storages have no device address (so no interface); give one the address of the
    host memory that stands for it, to check the round trip tensor -> interface -> shared tensor."""
    t = tinynorm.arange(8.0, device="cuda").reshape(2, 4)[:, 1:3]
    assert not hasattr(t, "__cuda_array_interface__")
    storage = t.array.storage
    storage.address = storage.owner.ctypes.data
    exported = t.__cuda_array_interface__
    assert tuple(exported["shape"]) == (2, 2) and np.dtype(exported["typestr"]) == np.float32
    shared = tinynorm.from_cuda_array(t)
    np.testing.assert_array_equal(shared.numpy(), [[1, 2], [5, 6]])
    shared.fill_(-1.0)
    np.testing.assert_array_equal(t.numpy(), -1.0)


def test_memory_counts_are_refused_in_the_simulator_and_empty_cache_is_harmless():
    """The simulator's device arrays are numpy arrays: nothing is cached, so there is nothing to count
    (a RuntimeError that says so, not a made-up 0) and nothing to release."""
    kept = tinynorm.ones(4, device="cuda")
    for count in (tinynorm.cuda.memory_allocated, tinynorm.cuda.memory_reserved):
        with pytest.raises(RuntimeError, match="does not count device memory in Numba's CUDA simulator"):
            count()
    tinynorm.cuda.empty_cache()
    assert kept.numpy().tolist() == [1.0] * 4
