"""The optimizers written as array math (RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam) and the
gradient clipping of nn.utils on CUDA tensors, in Numba's CUDA simulator: the same steps as on the
CPU, with the state and the results on the device.

Run by ``test_cuda_simulator.py`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (or directly:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_optim.py``).
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

import tinynorm
from tinynorm import optim
from tinynorm.backends.cuda import CudaArray
from tinynorm.nn import utils

STEPS = 3
TOLERANCE = {np.float32: 2e-6, np.float64: 1e-14}
CASES = [
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.1, maximize=True)),
    ("Adadelta", dict(weight_decay=0.1)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1)),  # past step 5: the rectified branch too
]


def run(name, options, device, dtype, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    start = rng.standard_normal((2, 3)).astype(dtype)
    param = tinynorm.tensor(start, requires_grad=True, device=device)
    optimizer = getattr(optim, name)([param], **options)
    for _ in range(STEPS if name != "RAdam" else 7):
        param.grad = tinynorm.tensor(rng.standard_normal((2, 3)).astype(dtype), device=device)
        optimizer.step()
    return param, optimizer


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name, options", CASES, ids=[c[0] for c in CASES])
def test_steps_on_cuda_match_the_cpu(name, options, dtype):
    cuda_param, cuda_optimizer = run(name, options, "cuda", dtype)
    cpu_param, cpu_optimizer = run(name, options, "cpu", dtype)
    assert isinstance(cuda_param.array, CudaArray) and cuda_param.dtype == dtype
    np.testing.assert_allclose(cuda_param.numpy(), cpu_param.numpy(), rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    for key, value in cuda_optimizer.state[cuda_param].items():
        expected = cpu_optimizer.state[cpu_param][key]
        if isinstance(value, tinynorm.Tensor):
            assert isinstance(value.array, CudaArray)
            np.testing.assert_allclose(value.numpy(), expected.numpy(), rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
        else:
            assert value == expected


def test_gradient_clipping_on_cuda_matches_the_cpu():
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5,), ())]
    results = {}
    for device in ("cpu", "cuda"):
        params = [tinynorm.zeros(v.shape, requires_grad=True, device=device) for v in values]
        for p, v in zip(params, values):
            p.grad = tinynorm.tensor(v, device=device)
        norms = [utils.clip_grad_norm_(params, 0.5), utils.clip_grad_norm_(params, 10.0, norm_type="inf")]
        utils.clip_grad_value_(params, 0.05)
        assert all(n.device == device and n.shape == () for n in norms)
        assert all(p.grad.device == device and p.grad.shape == p.shape for p in params)
        results[device] = [n.item() for n in norms], [p.grad.numpy() for p in params]
    np.testing.assert_allclose(results["cuda"][0], results["cpu"][0], rtol=1e-6)
    for got, want in zip(results["cuda"][1], results["cpu"][1]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
