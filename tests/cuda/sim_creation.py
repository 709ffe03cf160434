"""Creation, random sampling and checkpoint loading with ``device='cuda'`` in Numba's CUDA simulator:
every function puts its result on the GPU with the CPU's values (random ones drawn on the host from
the same generator), and ``load(map_location=...)`` puts a checkpoint's tensors there.

Run by ``test_cuda_simulator.py`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (or directly:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_creation.py``).
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

import tinynorm
from tinynorm.backends.cuda import CudaArray

DETERMINISTIC = {
    "linspace": lambda device: tinynorm.linspace(-1, 2, 7, device=device),
    "logspace": lambda device: tinynorm.logspace(0, 2, 3, base=2, dtype=tinynorm.float64, device=device),
    "eye": lambda device: tinynorm.eye(3, 2, dtype=tinynorm.int64, device=device),
    "full_like": lambda device: tinynorm.full_like(tinynorm.zeros(2, device=device), 3.5),
}
SEEDED = {
    "randint": lambda device, g: tinynorm.randint(2, 9, (3, 4), device=device, generator=g),
    "randperm": lambda device, g: tinynorm.randperm(6, device=device, generator=g),
    "normal": lambda device, g: tinynorm.normal(1.0, 2.0, (5,), device=device, generator=g),
    "normal(tensor)": lambda device, g: tinynorm.normal(tinynorm.zeros(2, 3, device=device), 1.0, generator=g),
    "bernoulli": lambda device, g: tinynorm.bernoulli(tinynorm.full((4,), 0.5, device=device), generator=g),
    "multinomial": lambda device, g: tinynorm.multinomial(tinynorm.ones(2, 5, device=device), 3, generator=g),
    "rand_like": lambda device, g: tinynorm.rand_like(tinynorm.zeros(3, device=device), generator=g),
    "randint_like": lambda device, g: tinynorm.randint_like(tinynorm.zeros(3, device=device), 5, generator=g),
}


@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_deterministic_creation_on_cuda_equals_the_cpu(name):
    on_gpu, on_cpu = DETERMINISTIC[name]("cuda"), DETERMINISTIC[name]("cpu")
    assert on_gpu.device == "cuda" and isinstance(on_gpu.array, CudaArray)
    assert on_gpu.dtype == on_cpu.dtype
    np.testing.assert_array_equal(on_gpu.numpy(), on_cpu.numpy())


@pytest.mark.parametrize("name", sorted(SEEDED))
def test_random_sampling_on_cuda_draws_what_the_cpu_draws(name):
    on_gpu = SEEDED[name]("cuda", tinynorm.Generator("cuda").manual_seed(4))
    on_cpu = SEEDED[name]("cpu", tinynorm.Generator().manual_seed(4))
    assert on_gpu.device == "cuda" and isinstance(on_gpu.array, CudaArray)
    assert on_gpu.dtype == on_cpu.dtype and on_gpu.shape == on_cpu.shape
    np.testing.assert_array_equal(on_gpu.numpy(), on_cpu.numpy())


def test_a_cpu_generator_is_refused_for_cuda_tensors_as_in_pytorch():
    with pytest.raises(RuntimeError, match="expected a 'cuda' device type for generator but found 'cpu'"):
        tinynorm.randn(3, device="cuda", generator=tinynorm.Generator())
    tinynorm.manual_seed(0)
    assert tinynorm.randint(3, (2,), device="cuda").device == "cuda"  # the global generator serves both


def test_normal_of_cuda_parameters_records_a_zero_gradient_on_the_gpu():
    mean = tinynorm.zeros(3, device="cuda", requires_grad=True)
    sample = tinynorm.normal(mean, 1.0)
    assert sample.device == "cuda" and sample.requires_grad
    sample.backward(tinynorm.ones(3, device="cuda"))
    assert mean.grad.device == "cuda" and (mean.grad.numpy() == 0).all()


def test_out_and_from_numpy_on_cuda():
    out = tinynorm.empty(4, device="cuda")
    assert tinynorm.linspace(0, 3, 4, out=out) is out and out.numpy().tolist() == [0, 1, 2, 3]
    assert tinynorm.as_tensor(np.ones(2), device="cuda").device == "cuda"  # a copy: from_numpy is CPU only


def test_checkpoints_load_onto_the_device_that_map_location_names(tmp_path):
    path = tmp_path / "m.npz"
    tinynorm.save({"w": tinynorm.arange(4.0, device="cuda"), "n": 3}, path)  # values only: saved from the host
    assert tinynorm.load(path)["w"].device == "cpu"
    for map_location in ("cuda", "cuda:0", {"cpu": "cuda"}, lambda tensor, location: tensor.to("cuda")):
        loaded = tinynorm.load(path, map_location=map_location)
        assert loaded["w"].device == "cuda" and loaded["w"].numpy().tolist() == [0, 1, 2, 3] and loaded["n"] == 3
