"""The CPU matmul shares large products out among Numba's threads (OpenBLAS's GEMM at one thread on each
part): numpy's values to rounding for strided, transposed, broadcast and float64 operands, the same
bits on every call, BLAS's thread count restored, and numpy's path and errors for everything else."""
from __future__ import annotations

import numba
import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from tinynorm.kernels.cpu import blas_pool  # noqa: E402
from tinynorm.kernels.cpu import matmul as cpu_matmul  # noqa: E402

if cpu_matmul._openblas() is None:
    pytest.skip("numpy's BLAS is not OpenBLAS with 64-bit integers on its own threads", allow_module_level=True)


@pytest.fixture(params=[2, 3])
def threads(request: pytest.FixtureRequest) -> int:
    """Numba's thread count for the test (the pool may be smaller than 3: then it is the whole pool)."""
    previous = numba.get_num_threads()
    count = min(request.param, numba.config.NUMBA_NUM_THREADS)
    if count < 2:
        pytest.skip("Numba's pool has one thread")
    numba.set_num_threads(count)
    yield count
    numba.set_num_threads(previous)


def attention_operands(rng: np.random.Generator, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """q and k^T as attention makes them: strided views of one fused (B, T, 3, H, D) projection."""
    qkv = rng.standard_normal((3, 128, 3, 2, 32)).astype(dtype).transpose(2, 0, 3, 1, 4)
    return qkv[0], qkv[1].swapaxes(-1, -2)


def split_cases(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Products large enough to be shared out, in every layout BLAS takes."""
    x32, w32 = rng.standard_normal((1024, 64), np.float32), rng.standard_normal((192, 64), np.float32)
    return [attention_operands(rng, np.float32), attention_operands(rng, np.float64),
            (x32, w32.T),  # Linear's x @ W^T
            (np.asfortranarray(rng.standard_normal((256, 1024))).T.T, rng.standard_normal((1024, 64))),
            (rng.standard_normal((1024, 256), np.float32).T, rng.standard_normal((1024, 64), np.float32)),  # dW
            (rng.standard_normal((3, 1, 80, 64)), rng.standard_normal((5, 64, 64))),  # broadcast batch
            (rng.standard_normal((1, 7, 40, 50), dtype=np.float32), rng.standard_normal((50, 600), dtype=np.float32)),
            (rng.standard_normal((2, 300, 70)), rng.standard_normal((70, 50)).T.copy().T),
            (rng.standard_normal((600, 80), np.float32)[::2], rng.standard_normal((80, 700), np.float32))]


def test_large_products_are_shared_out_and_equal_numpys(threads: int) -> None:
    blas = blas_pool.blas()
    before = blas.get_num_threads()
    for a, b in split_cases(np.random.default_rng(0)):
        result = cpu_matmul._split(a, b)
        assert result is not None, (a.shape, b.shape)
        expected = np.matmul(a, b)
        assert result.shape == expected.shape and result.dtype == expected.dtype and result.flags.c_contiguous
        bound = np.abs(a).max() * np.abs(b).max() * a.shape[-1] * np.finfo(a.dtype).eps
        np.testing.assert_allclose(result, expected, rtol=0, atol=bound)
        np.testing.assert_array_equal(cpu_matmul._split(a, b), result)  # the same bits every call
        assert blas.get_num_threads() == before


def test_each_part_is_the_product_of_its_own_rows(threads: int) -> None:
    # A product whose rows differ in scale: a part that read another part's rows or wrote to them
    # would show at once against the product of each band alone.
    rng = np.random.default_rng(1)
    a = rng.standard_normal((997, 300)) * np.arange(1, 998)[:, None]
    b = rng.standard_normal((300, 333))
    result = cpu_matmul.matmul(a, b)
    for band in np.array_split(np.arange(997), 7):
        np.testing.assert_allclose(result[band], a[band] @ b, rtol=1e-12, atol=1e-9 * band[-1])


def test_small_products_and_other_operands_take_numpys_path(threads: int) -> None:
    rng = np.random.default_rng(2)
    cases = [(rng.standard_normal((4, 64, 64)), rng.standard_normal((4, 64, 16))),  # below the part size
             (rng.standard_normal((2, 3, 4)), rng.standard_normal((4,))),  # 1-D operand
             (np.ones((0, 512)), np.ones((512, 512))), (np.ones((512, 0)), np.ones((0, 512))),  # empty
             (np.ones((512, 512), np.int64), np.ones((512, 512), np.int64)),
             (np.ones((512, 512), np.float32), np.ones((512, 512), np.float64)),  # mixed: numpy promotes
             (np.ones((512, 512), np.float16), np.ones((512, 512), np.float16)),
             (rng.standard_normal((512, 1024))[:, ::2], rng.standard_normal((512, 512)))]  # no BLAS layout
    for a, b in cases:
        assert cpu_matmul._split(a, b) is None, (a.shape, b.shape, a.dtype)
        expected = np.matmul(a, b)
        result = cpu_matmul.matmul(a, b)
        assert result.dtype == expected.dtype
        np.testing.assert_array_equal(result, expected)


def test_misaligned_operands_take_numpys_path(threads: int) -> None:
    buffer = np.zeros(512 * 512 * 4 + 1, np.uint8)
    a = np.frombuffer(buffer.data, np.float32, 512 * 512, offset=1).reshape(512, 512)  # numpy allows it
    a.flags.writeable = False
    assert not a.flags.aligned
    assert cpu_matmul._split(a, np.ones((512, 512), np.float32)) is None


def test_products_from_several_python_threads(threads: int) -> None:
    # Each product sets OpenBLAS's process-wide thread count to 1 and back: interleaved, two of them
    # could leave it at 1. They take turns, and every result is right.
    from concurrent.futures import ThreadPoolExecutor

    blas = blas_pool.blas()
    before = blas.get_num_threads()
    rng = np.random.default_rng(4)
    pairs = [(rng.standard_normal((700, 300)), rng.standard_normal((300, 500))) for _ in range(8)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda pair: cpu_matmul.matmul(*pair), pairs * 4))
    for (a, b), result in zip(pairs * 4, results):
        np.testing.assert_allclose(result, a @ b, rtol=1e-12, atol=1e-11)
    assert blas.get_num_threads() == before


def test_one_thread_takes_numpys_path() -> None:
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        a, b = attention_operands(np.random.default_rng(3), np.float32)
        assert cpu_matmul._split(a, b) is None
    finally:
        numba.set_num_threads(previous)


def test_mismatched_shapes_keep_numpys_error() -> None:
    with pytest.raises(ValueError):
        cpu_matmul.matmul(np.ones((4, 64, 32), np.float32), np.ones((4, 33, 64), np.float32))
    with pytest.raises(ValueError):
        cpu_matmul.matmul(np.ones((4, 64, 32), np.float32), np.ones((3, 32, 64), np.float32))
