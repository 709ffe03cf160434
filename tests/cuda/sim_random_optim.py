"""The CUDA random-number and fused optimizer kernels, run in Numba's CUDA simulator.

Random numbers (Philox4x32-10): the generator against the known-answer vectors of Random123, then the
draws' range, exactness, statistics, reproducibility and independence of the launch shape. Optimizer
steps: each fused kernel against the CPU backend's numpy update, step by step, for the option
combinations of SGD and Adam/AdamW, in float32 and float64.

Run by ``test_cuda_simulator.py`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (or directly:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_random_optim.py``).
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

from numba import cuda

import tinynorm
from tinynorm.backends import cpu
from tinynorm.backends.cuda import optim as cuda_optim
from tinynorm.backends.cuda.array import CudaArray
from tinynorm.backends.cuda.random import random_uniform
from tinynorm.kernels.cuda import random as philox
from tinynorm.kernels.cuda.optim import adam_update as kernel_adam_update
from tinynorm.random import default_generator, manual_seed


def on_device(array):
    return CudaArray.wrap(cuda.to_device(np.ascontiguousarray(array)))


def host(array):
    return array.as_numba().copy_to_host()


def draw(size, dtype, key=(12345, 678)):
    out = cuda.device_array(size, dtype)
    philox.uniform_(out, *key)
    return out.copy_to_host()


# --- Philox4x32-10 -----------------------------------------------------------------------------------


@cuda.jit
def _philox_kernel(counter, key, out):
    words = philox.philox4x32(counter[0], counter[1], counter[2], counter[3], key[0], key[1])
    for k in range(4):
        out[k] = words[k]


# (counter, key, expected words): the known-answer vectors of Random123's kat_vectors for philox4x32_10.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter, key, expected", KNOWN_ANSWERS)
def test_philox_matches_the_known_answers(counter, key, expected):
    out = cuda.device_array(4, np.uint64)
    _philox_kernel[1, 1](cuda.to_device(np.array(counter, np.uint64)), cuda.to_device(np.array(key, np.uint64)), out)
    assert [int(word) for word in out.copy_to_host()] == list(expected)


# --- uniform draws -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, bits", [(np.float16, 11), (np.float32, 24), (np.float64, 53)])
def test_values_are_exact_multiples_in_zero_one(dtype, bits):
    values = draw(1001, dtype)  # not a multiple of 4: the last counter fills only part of its group
    assert values.dtype == dtype
    assert values.min() >= 0 and values.max() < 1
    scaled = values.astype(np.float64) * 2.0**bits
    np.testing.assert_array_equal(scaled, np.floor(scaled))
    possible = 2.0**bits  # 1001 draws from them leave about this many distinct values:
    assert len(np.unique(values)) > 0.9 * possible * -np.expm1(1001 * np.log1p(-1 / possible))


@pytest.mark.parametrize("dtype, size", [(np.float32, 2**15), (np.float64, 2**14)])
def test_moments_and_histogram_fit_the_uniform_distribution(dtype, size):
    """Mean 1/2 and variance 1/12 within 5 standard errors; 16-bin chi-square below its 1e-4 quantile."""
    values = draw(size, dtype).astype(np.float64)
    assert abs(values.mean() - 0.5) < 5 * np.sqrt(1 / 12 / size)
    assert abs(values.var() - 1 / 12) < 5 * np.sqrt((1 / 80 - 1 / 144) / size)
    counts = np.bincount((values * 16).astype(int), minlength=16)
    expected = size / 16
    assert ((counts - expected) ** 2 / expected).sum() < 44.3  # chi-square, 15 degrees of freedom


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_neighbouring_values_are_uncorrelated(dtype):
    """Lag 1 pairs words of one counter; lag 4 (float32) or 2 (float64) pairs neighbouring counters."""
    values = draw(2**13, dtype).astype(np.float64)
    for lag in (1, 2, 4):
        r = np.corrcoef(values[:-lag], values[lag:])[0, 1]
        assert abs(r) < 5 / np.sqrt(values.size), (lag, r)


def test_values_do_not_depend_on_the_launch_shape():
    """A draw is a function of (key, index) only: any grid gives the same values, and a longer draw
    starts with the shorter one."""
    expected = draw(777, np.float32)
    for blocks, threads in ((1, 32), (3, 64), (50, 7)):
        out = cuda.device_array(777, np.float32)
        philox._uniform_words_kernel[blocks, threads](out, np.uint64(12345), np.uint64(678), np.uint64(8),
                                                      np.float32(2.0**-24))
        np.testing.assert_array_equal(out.copy_to_host(), expected)
    np.testing.assert_array_equal(draw(1500, np.float32)[:777], expected)
    np.testing.assert_array_equal(draw(1500, np.float64)[:300], draw(300, np.float64))


def test_keys_change_every_value():
    base = draw(512, np.float32)
    for key in ((12346, 678), (12345, 679)):
        assert np.mean(draw(512, np.float32, key) == base) < 0.01


def test_uniform_checks_its_arguments():
    with pytest.raises(TypeError, match="float16, float32 or float64, got int32"):
        philox.uniform_(cuda.device_array(4, np.int32), 1, 2)
    with pytest.raises(ValueError, match=r"flat \(1-D\).*\(2, 2\)"):
        philox.uniform_(cuda.device_array((2, 2), np.float32), 1, 2)
    with pytest.raises(ValueError, match="key1 must be a 32-bit unsigned int, got 4294967296"):
        philox.uniform_(cuda.device_array(4, np.float32), 1, 2**32)
    philox.uniform_(cuda.device_array(0, np.float32), 1, 2)  # nothing to launch


# --- the backend's random_uniform --------------------------------------------------------------------


def test_random_uniform_follows_the_generator():
    """Seeded like the CPU backend (tinynorm.manual_seed), but successive calls give new numbers."""
    manual_seed(3)
    first = random_uniform(default_generator(), (5, 7), np.float32)
    second = random_uniform(default_generator(), (5, 7), np.float32)
    manual_seed(3)
    again = random_uniform(default_generator(), (5, 7), np.float32)
    assert isinstance(first, CudaArray) and first.shape == (5, 7) and first.dtype == np.float32
    np.testing.assert_array_equal(host(again), host(first))
    assert not np.array_equal(host(second), host(first))
    assert random_uniform(np.random.default_rng(0), (2, 0), np.float64).shape == (2, 0)
    with pytest.raises(TypeError, match="dtype must be float16, float32 or float64, got int64"):
        random_uniform(np.random.default_rng(0), (3,), np.int64)


# --- fused optimizer steps against the CPU backend ---------------------------------------------------

SHAPE = (7, 37)  # 259 elements: two blocks of 256 threads, the second mostly idle
STEPS = 4
TOLERANCE = {np.float32: 2e-6, np.float64: 1e-14}  # the CPU's numpy math, to a few rounding errors

SGD_DEFAULTS = dict(lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False)
SGD_CASES = [
    {},
    dict(momentum=0.9),
    dict(momentum=0.9, dampening=0.3, weight_decay=0.1),
    dict(momentum=0.8, nesterov=True, weight_decay=0.01, maximize=True),
    dict(weight_decay=0.05, maximize=True),
]
ADAM_DEFAULTS = dict(lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, decoupled_weight_decay=False,
                     maximize=False)
ADAM_CASES = [
    ({}, False),
    (dict(beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.1), False),
    (dict(weight_decay=0.05, maximize=True), True),
    (dict(weight_decay=0.1, decoupled_weight_decay=True), False),
    (dict(weight_decay=0.1, decoupled_weight_decay=True, maximize=True), True),
]


def problem(rng, dtype, shapes=(SHAPE, (5,))):
    """Initial values of parameters of ``shapes`` (updated together) and, per step, a random gradient for each."""
    initial = [rng.standard_normal(shape).astype(dtype) for shape in shapes]
    return initial, [[rng.standard_normal(shape).astype(dtype) for shape in shapes] for _ in range(STEPS)]


def assert_same_state(device_lists, cpu_lists, dtype, step):
    for name, (device_arrays, cpu_arrays) in enumerate(zip(device_lists, cpu_lists)):
        for actual, expected in zip(device_arrays, cpu_arrays):
            got = host(actual)
            assert got.dtype == dtype
            np.testing.assert_allclose(got, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype],
                                       err_msg=f"state list {name} after step {step}")


def copies(arrays, on_gpu=False):
    return [on_device(a) if on_gpu else a.copy() for a in arrays]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("options", SGD_CASES, ids=str)
def test_sgd_step_matches_the_cpu_backend(rng, dtype, options):
    options = {**SGD_DEFAULTS, **options}
    initial, grads = problem(rng, dtype)
    zeros = [np.zeros_like(a) for a in initial]
    cpu_state = [copies(initial)] + ([copies(zeros)] if options["momentum"] else [])
    device_state = [copies(arrays, on_gpu=True) for arrays in cpu_state]
    for step, grad in enumerate(grads, start=1):
        cpu.sgd_update(cpu_state[0], grad, *(cpu_state[1:] or [None]), **options, first_step=step == 1)
        cuda_optim.sgd_update(device_state[0], copies(grad, on_gpu=True), *(device_state[1:] or [None]), **options,
                              first_step=step == 1)
        assert_same_state(device_state, cpu_state, dtype, step)
    assert not np.allclose(cpu_state[0][0], initial[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("options, amsgrad", ADAM_CASES, ids=str)
def test_adam_step_matches_the_cpu_backend(rng, dtype, options, amsgrad):
    options = {**ADAM_DEFAULTS, **options}
    initial, grads = problem(rng, dtype)
    zeros = [np.zeros_like(a) for a in initial]
    cpu_state = [copies(initial)] + [copies(zeros) for _ in range(3 if amsgrad else 2)]
    device_state = [copies(arrays, on_gpu=True) for arrays in cpu_state]
    for step, grad in enumerate(grads, start=1):
        grad = [g * 10.0**(step % 3 - 1) for g in grad]  # gradients shrinking and growing: the amsgrad maximum matters
        cpu.adam_update(cpu_state[0], grad, *cpu_state[1:3], cpu_state[3] if amsgrad else None, step=step,
                        **options)
        cuda_optim.adam_update(device_state[0], copies(grad, on_gpu=True), *device_state[1:3],
                               device_state[3] if amsgrad else None, step=step, **options)
        assert_same_state(device_state, cpu_state, dtype, step)
    assert not np.allclose(cpu_state[0][0], initial[0])


def test_many_parameters_take_one_launch_per_twelve(rng, monkeypatch):
    """14 parameters of sizes 1 to 14: two launches (12 and 2 tensors), each tensor updated as alone."""
    from tinynorm.kernels.cuda import optim as kernels

    initial, grads = problem(rng, np.float32, shapes=[(n,) for n in range(1, 15)])
    launched = []
    original = kernels.launch
    monkeypatch.setattr(kernels, "launch", lambda kernel, grid, block, args: (launched.append(args[0]),
                                                                              original(kernel, grid, block, args)))
    cpu_params, device_params = copies(initial), copies(initial, on_gpu=True)
    cpu.sgd_update(cpu_params, grads[0], None, **SGD_DEFAULTS, first_step=True)
    cuda_optim.sgd_update(device_params, copies(grads[0], on_gpu=True), None, **SGD_DEFAULTS, first_step=True)
    assert [len(params) for params in launched] == [kernels.TENSORS_PER_LAUNCH, 14 - kernels.TENSORS_PER_LAUNCH]
    assert_same_state([device_params], [cpu_params], np.float32, 1)


@pytest.mark.parametrize("make", [
    lambda params: tinynorm.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda params: tinynorm.optim.Adam(params, lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True),
    lambda params: tinynorm.optim.AdamW(params, lr=0.01),
], ids=["SGD", "Adam", "AdamW"])
def test_optimizers_follow_the_same_trajectory_on_both_devices(rng, make):
    """The optimizer classes are device-agnostic: the same code calls either backend's update."""
    initial, grads = problem(rng, np.float32)
    params = {device: [tinynorm.tensor(a, requires_grad=True, device=device) for a in initial]
              for device in ("cpu", "cuda")}
    optimizers = {device: make(device_params) for device, device_params in params.items()}
    for step, step_grads in enumerate(grads, start=1):
        for device, device_params in params.items():
            for param, grad in zip(device_params, step_grads):
                param.grad = tinynorm.tensor(grad, device=device)
            device_params[1].grad = None if step == 2 else device_params[1].grad  # a step without a gradient
            optimizers[device].step()
        for cuda_param, cpu_param in zip(params["cuda"], params["cpu"]):
            np.testing.assert_allclose(cuda_param.numpy(), cpu_param.numpy(), rtol=TOLERANCE[np.float32],
                                       atol=TOLERANCE[np.float32], err_msg=f"step {step}")


def test_gradient_views_and_other_dtypes_are_read_correctly(rng):
    """A transposed float64 gradient for a float32 parameter: read through its strides and converted."""
    param = rng.standard_normal(SHAPE).astype(np.float32)
    grad = rng.standard_normal(SHAPE[::-1])
    expected = param.copy()
    cpu.sgd_update([expected], [grad.T.astype(np.float32)], None, **SGD_DEFAULTS, first_step=True)
    device_param, device_grad = on_device(param), on_device(grad)
    transposed = CudaArray(device_grad.storage, SHAPE, device_grad.strides[::-1])
    cuda_optim.sgd_update([device_param], [transposed], None, **SGD_DEFAULTS, first_step=True)
    np.testing.assert_array_equal(host(device_param), expected)
    np.testing.assert_array_equal(host(transposed), grad.T)  # the gradient is never written


def test_updates_check_their_arguments():
    param = on_device(np.zeros(SHAPE, np.float32))
    grad = on_device(np.ones(SHAPE, np.float32))
    adam = dict(ADAM_DEFAULTS, step=1)
    with pytest.raises(ValueError, match=r"params\[0\] must be C-contiguous.*strides \(1, 7\)"):
        cuda_optim.sgd_update([CudaArray(param.storage, SHAPE, (1, 7))], [grad], None, **SGD_DEFAULTS,
                              first_step=True)
    with pytest.raises(ValueError, match=r"grad must have the parameter's shape \(7, 37\), got \(37, 7\)"):
        cuda_optim.sgd_update([param], [on_device(np.ones(SHAPE[::-1], np.float32))], None, **SGD_DEFAULTS,
                              first_step=True)
    with pytest.raises(ValueError, match=r"grads must have one array per parameter \(2\), got 1"):
        cuda_optim.sgd_update([param, param], [grad], None, **SGD_DEFAULTS, first_step=True)
    with pytest.raises(TypeError, match=r"exp_avg_sqs\[0\] must have its parameter's dtype float32, got float64"):
        cuda_optim.adam_update([param], [grad], [on_device(np.zeros(SHAPE, np.float32))],
                               [on_device(np.zeros(SHAPE))], None, **adam)
    with pytest.raises(TypeError, match=r"exp_avgs\[0\] must be a CudaArray, got ndarray"):
        cuda_optim.adam_update([param], [grad], [np.zeros(SHAPE, np.float32)], [np.zeros(SHAPE, np.float32)], None,
                               **adam)
    with pytest.raises(ValueError, match="step must be an int >= 1 .* got 0"):
        cuda_optim.adam_update([param], [grad], [param], [param], None, **dict(adam, step=0))
    with pytest.raises(TypeError, match="params must have dtype float16, float32 or float64, got int64"):
        kernel_adam_update(*([cuda.device_array(3, np.int64)] for _ in range(4)), None, **adam)
    with pytest.raises(ValueError, match=r"params\[1\] must be a flat \(1-D\) device array of dtype float32"):
        kernel_adam_update(*([cuda.device_array(3, np.float32), cuda.device_array(3, np.float64)]
                             for _ in range(4)), None, **adam)
    with pytest.raises(ValueError, match="params must be a non-empty sequence"):
        kernel_adam_update([], [], [], [], None, **adam)
    empty = [cuda.device_array(0, np.float32)]
    kernel_adam_update(empty, empty, empty, empty, empty, **adam)  # nothing to launch