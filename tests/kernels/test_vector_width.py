"""wide_vectors() makes LLVM vectorize a kernel with 512-bit registers on an AVX-512 CPU, whatever its
tuning prefers, and leaves the kernel's results as they are."""
import llvmlite.binding as llvm
import numpy as np
import pytest
from numba import njit

from tinynorm.kernels.cpu._vector_width import wide_vectors

AVX512 = llvm.get_host_cpu_features().get("avx512f", False)


@njit(fastmath=True)
def _scaled_add(a, x, y):
    wide_vectors()
    for i in range(x.size):
        y[i] += a * x[i]


def test_wide_vectors_keeps_the_result():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(1003).astype(np.float32), rng.standard_normal(1003).astype(np.float32)
    expected = y.astype(np.float64) + 1.5 * x.astype(np.float64)  # fused or not, within a rounding
    _scaled_add(np.float32(1.5), x, y)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.skipif(not AVX512, reason="the host CPU has no AVX-512")
def test_wide_vectors_compiles_to_512_bit_registers():
    x = np.ones(64, np.float32)
    _scaled_add(np.float32(2), x, x.copy())
    assembly = _scaled_add.inspect_asm(_scaled_add.signatures[0])
    assert "zmm" in assembly
