"""Bad and unusual input on ``device='cuda'`` (Numba's CUDA simulator): the same error as on the CPU
(class and message), or the same values: out-of-range dims, arguments that are not tensors, zero-size
and 0-d inputs, NaN and Inf, strided views, and an optimizer step with a bad gradient.

The CPU side is swept against PyTorch in ``tests/robustness/test_api_sweep.py``; this file checks that
the device takes the same paths. Run by ``test_cuda_simulator.py`` in a subprocess with
``NUMBA_ENABLE_CUDASIM=1``.
"""
import warnings

import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

import tinynorm as tn
from tinynorm import nn, optim

OPS = {
    "sum": lambda x, d: x.sum(d), "mean": lambda x, d: x.mean(d), "var": lambda x, d: x.var(d),
    "amax": lambda x, d: x.amax(d), "argmax": lambda x, d: x.argmax(d), "softmax": lambda x, d: x.softmax(d),
    "log_softmax": lambda x, d: x.log_softmax(d), "unsqueeze": lambda x, d: x.unsqueeze(d),
    "transpose": lambda x, d: x.transpose(d, 0), "cat": lambda x, d: tn.cat([x, x], d),
}
VALUES = {
    "finite": np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32),
    "special": np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 0.0]], np.float32),
    "zero-rows": np.zeros((0, 3), np.float32),
    "scalar": np.array(2.5, np.float32),
}


def outcome(call, device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a variance without degrees of freedom warns on both devices
        try:
            return "value", call(device).numpy()
        except Exception as error:  # noqa: BLE001  (an error is an outcome to compare)
            return "error", (type(error), str(error))


def assert_same_on_both_devices(call):
    (kind, cpu), (device_kind, cuda) = outcome(call, "cpu"), outcome(call, "cuda")
    assert kind == device_kind, (cpu, cuda)
    if kind == "error":
        assert cpu == cuda
    else:
        assert cpu.shape == cuda.shape and cpu.dtype == cuda.dtype, (cpu, cuda)
        np.testing.assert_allclose(cuda, cpu, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize("op", OPS)
def test_dims_and_values_give_the_cpus_result_or_error(op, values):
    for dim in (-3, 0, 1, 2):
        assert_same_on_both_devices(lambda device: OPS[op](tn.tensor(VALUES[values], device=device), dim))


@pytest.mark.parametrize("op", ["sum", "amax", "softmax"])
def test_strided_views_give_the_cpus_result(op):
    values = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    assert_same_on_both_devices(lambda device: OPS[op](tn.tensor(values, device=device).t()[:, ::2], 1))


def test_arguments_that_are_not_tensors_fail_as_on_the_cpu():
    for call in (lambda device: tn.where(tn.ones(2, device=device), tn.ones(2, device=device), 0.0),
                 lambda device: tn.cat([tn.ones(2, device=device), np.ones(2)]),
                 lambda device: tn.matmul(tn.ones(2, 2, device=device), 2.0),
                 lambda device: tn.zeros_like(np.ones(2), device=device),
                 lambda device: tn.amax(tn.zeros(0, device=device))):
        assert_same_on_both_devices(call)


def test_a_bad_gradient_fails_the_step_and_changes_nothing():
    param = nn.Parameter(tn.ones(2, 3, device="cuda"))
    optimizer = optim.Adam([param], lr=0.1)
    param.grad = tn.ones(3, device="cuda")  # would broadcast
    with pytest.raises(RuntimeError, match=r"has shape \(2, 3\), but its gradient has shape \(3,\)"):
        optimizer.step()
    param.grad = tn.ones(2, 3)  # on the CPU
    with pytest.raises(RuntimeError, match="is on cuda(:0)?, but its gradient is on cpu"):
        optimizer.step()
    np.testing.assert_array_equal(param.numpy(), np.ones((2, 3), np.float32))
    assert not optimizer.state
