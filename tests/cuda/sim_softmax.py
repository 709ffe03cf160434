"""softmax / log_softmax and the fused cross-entropy (built on the same block reductions) on the CUDA
backend, run in Numba's CUDA simulator, against float64 numpy references and the CPU backend.

Run by test_cuda_simulator.py in a subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (or directly:
``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_softmax.py``). Shapes stay small: the
simulator runs one Python thread per CUDA thread.
"""
import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

from tinynorm.backends import cpu
from tinynorm.backends.cuda import indexing as cuda_indexing
from tinynorm.backends.cuda import losses as cuda_losses
from tinynorm.backends.cuda import softmax as backend
from tinynorm.backends.cuda.array import CudaArray
from tinynorm.kernels.cuda import softmax as kernels

TOLERANCE = {np.float32: 2e-6, np.float64: 1e-13}
SHAPES = [(5, 7), (2, 2, 40), (1, 300), (4,), ()]


def device(array):
    return CudaArray.from_host(np.array(array, order="C"))


def host(a: CudaArray):
    return a.to_numpy()


def reference_log_softmax(x):
    x = x.astype(np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def assert_close(actual: CudaArray, expected, dtype):
    assert actual.dtype == dtype and actual.shape == expected.shape
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(host(actual), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_matches_float64_reference(shape, dtype):
    x = (np.random.default_rng(0).standard_normal(shape) * 3).astype(dtype)
    expected = reference_log_softmax(x)
    assert_close(backend.log_softmax_forward(device(x)), expected, dtype)
    assert_close(backend.softmax_forward(device(x)), np.exp(expected), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_backward_matches_float64_reference(shape, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    logp = reference_log_softmax(x)
    s, g = np.exp(logp), grad.astype(np.float64)
    out = backend.softmax_forward(device(x))
    assert_close(backend.softmax_backward(device(grad), out), s * (g - (g * s).sum(-1, keepdims=True)), dtype)
    log_out = backend.log_softmax_forward(device(x))
    assert_close(backend.log_softmax_backward(device(grad), log_out), g - s * g.sum(-1, keepdims=True), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 5, 5), (3, 7), (4, 2)])  # square, more keys, more queries
def test_scaled_causal_softmax_matches_the_cpu_backend(shape, dtype):
    """Attention's scale and causal mask: the CPU backend's kernels are checked against float64
    references (tests/kernels/test_softmax_kernels.py)."""
    rng = np.random.default_rng(3)
    x, grad = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    out = backend.softmax_forward(device(x), 0.3, causal=True)
    expected = cpu.softmax_forward(x, 0.3, causal=True)
    assert_close(out, expected, dtype)
    assert_close(backend.softmax_backward(device(grad), out, 0.3, causal=True),
                 cpu.softmax_backward(grad, expected, 0.3, causal=True), dtype)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_matches_the_cpu_backend(name):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 33)).astype(np.float32)
    grad = rng.standard_normal((6, 33)).astype(np.float32)
    cpu_forward, cpu_backward = getattr(cpu, f"{name}_forward"), getattr(cpu, f"{name}_backward")
    gpu_forward, gpu_backward = getattr(backend, f"{name}_forward"), getattr(backend, f"{name}_backward")
    cpu_out, gpu_out = cpu_forward(x), gpu_forward(device(x))
    np.testing.assert_allclose(host(gpu_out), cpu_out, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(host(gpu_backward(device(grad), gpu_out)), cpu_backward(grad, cpu_out),
                               rtol=2e-6, atol=2e-6)


def test_non_contiguous_input():
    """A transposed view: softmax runs over its last axis, whatever the storage order."""
    x = np.random.default_rng(3).standard_normal((9, 4)).astype(np.float32)
    stored = device(x)
    view = CudaArray(stored.storage, (4, 9), strides=(1, 4))
    assert not view.is_contiguous()
    assert_close(backend.log_softmax_forward(view), reference_log_softmax(x.T), np.float32)


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # -inf - -inf, in the simulator
def test_large_logits_and_masked_entries():
    """Shifting by the row max keeps 1000s finite; -inf entries give 0; an all -inf row gives NaN."""
    x = np.array([[1000.0, 999.0, -np.inf, 998.0], [-np.inf] * 4], dtype=np.float32)
    probs = host(backend.softmax_forward(device(x)))
    expected = np.exp(reference_log_softmax(x[:1]))[0]
    np.testing.assert_allclose(probs[0], expected, rtol=2e-6, atol=1e-7)
    assert probs[0, 2] == 0 and np.isnan(probs[1]).all()
    log_probs = host(backend.log_softmax_forward(device(x)))
    assert log_probs[0, 2] == -np.inf and np.isfinite(log_probs[0, [0, 1, 3]]).all()


def test_empty_arrays():
    for shape in [(0, 5), (3, 0)]:
        x = device(np.zeros(shape, np.float32))
        assert backend.softmax_forward(x).shape == shape
        assert backend.log_softmax_backward(x, backend.log_softmax_forward(x)).shape == shape


def test_repeated_calls_are_bit_identical():
    x = device(np.random.default_rng(4).standard_normal((3, 500)).astype(np.float32))
    first, second = host(backend.softmax_forward(x)), host(backend.softmax_forward(x))
    assert first.tobytes() == second.tobytes()


def test_threads_per_block():
    assert [kernels.threads_for(n) for n in (1, 32, 33, 200, 256, 10_000)] == [32, 32, 64, 256, 256, 256]


def test_bad_arguments():
    x = device(np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError, match="x must be a CudaArray, got ndarray"):
        backend.softmax_forward(np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError, match="x must have dtype float32 or float64, got int64"):
        backend.softmax_forward(device(np.zeros((2, 3), np.int64)))
    with pytest.raises(ValueError, match=r"grad must be a CudaArray of out's shape \(2, 3\)"):
        backend.softmax_backward(device(np.zeros((3, 2), np.float32)), x)
    with pytest.raises(ValueError, match="grad must be a CudaArray .* float32, got .* float64"):
        backend.log_softmax_backward(device(np.zeros((2, 3))), x)
    with pytest.raises(ValueError, match=r"out must be an array of shape \(2, 3\) and dtype float32, got \(3, 2\)"):
        kernels.softmax_forward(x, out=CudaArray.empty((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"x must be 2-D \(rows, cols\), got shape \(6,\)"):
        kernels.softmax_forward(CudaArray.empty(6, np.float32))


# ------------------------------------------------------------------------------- cross-entropy
def cross_entropy_case(dtype, classes, seed=5):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((5, classes)) * 2 + 20).astype(dtype)
    target = rng.integers(0, classes, 5)
    target[2] = -100
    return x, target, rng


@pytest.mark.parametrize("dtype, classes", [(np.float32, 7), (np.float64, 7),
                                            (np.float32, 300)])  # 300: more classes than threads per block
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_matches_the_cpu_kernels(dtype, classes, smoothing):
    x, target, rng = cross_entropy_case(dtype, classes)
    losses, lse = cuda_losses.cross_entropy_forward(device(x), device(target), -100, smoothing)
    cpu_losses, cpu_lse = cpu.cross_entropy_forward(x, target, -100, smoothing)
    tol = TOLERANCE[dtype] * 10
    np.testing.assert_allclose(host(losses), cpu_losses, rtol=tol, atol=tol)
    np.testing.assert_allclose(host(lse), cpu_lse, rtol=tol, atol=tol)
    for grad in (rng.standard_normal(5).astype(dtype), np.array(rng.standard_normal(), dtype)):
        dx = cuda_losses.cross_entropy_backward(device(grad), device(x), lse, device(target), -100, smoothing, 0.25)
        expected = cpu.cross_entropy_backward(grad, x, cpu_lse, target, -100, smoothing, 0.25)
        assert dx.dtype == dtype
        np.testing.assert_allclose(host(dx), expected, rtol=tol, atol=tol)


def test_cross_entropy_treats_out_of_range_targets_as_ignored():
    """ops.losses rejects them first; the kernels alone must still never read outside a row."""
    x, target, _ = cross_entropy_case(np.float32, 4)
    target[[0, 3]] = [4, -7]
    losses, lse = cuda_losses.cross_entropy_forward(device(x), device(target))
    dx = host(cuda_losses.cross_entropy_backward(device(np.ones(5, np.float32)), device(x), lse, device(target)))
    assert (host(losses)[[0, 2, 3]] == 0).all() and not dx[[0, 2, 3]].any()
    assert host(losses)[[1, 4]].all() and dx[[1, 4]].any()


def test_cross_entropy_is_bit_identical_from_run_to_run():
    x, target, _ = cross_entropy_case(np.float32, 70)
    runs = [cuda_losses.cross_entropy_forward(device(x), device(target), -100, 0.1) for _ in range(2)]
    assert all(host(a).tobytes() == host(b).tobytes() for a, b in zip(*runs))


def test_cross_entropy_bad_arguments():
    x, target, _ = cross_entropy_case(np.float32, 4)
    with pytest.raises(TypeError, match="logits must be a CudaArray, got ndarray"):
        cuda_losses.cross_entropy_forward(x, device(target))
    with pytest.raises(ValueError, match=r"target must have shape \(5,\)"):
        cuda_losses.cross_entropy_forward(device(x), device(target[:2]))
    with pytest.raises(ValueError, match=r"grad must have shape \(5,\) or a single value"):
        _, lse = cuda_losses.cross_entropy_forward(device(x), device(target))
        cuda_losses.cross_entropy_backward(device(np.ones(2, np.float32)), device(x), lse, device(target))


@pytest.mark.parametrize("ignore_index", [None, -100, 3])
def test_count_indices_matches_the_cpu_backend(ignore_index):
    indices = np.random.default_rng(6).integers(-110, 12, 700)  # more entries than threads in the block
    indices[::9] = -100
    expected = cpu.count_indices(indices, 10, ignore_index)
    assert expected[0] and (expected[1] or ignore_index is None)
    assert cuda_indexing.count_indices(device(indices), 10, ignore_index) == expected
    assert cuda_indexing.count_indices(device(indices[:0]), 10, ignore_index) == (0, 0)


def test_count_indices_takes_integer_cuda_arrays_only():
    with pytest.raises(TypeError, match="count_indices: indices must be a CudaArray, got ndarray"):
        cuda_indexing.count_indices(np.zeros(3, np.int64), 10)
    with pytest.raises(TypeError, match="indices must be a CudaArray of integers, got float32"):
        cuda_indexing.count_indices(device(np.zeros(3, np.float32)), 10)
