"""The CPU batched matmul shares the batch out among threads: same numbers as numpy's matmul for
strided, broadcast and float64 operands, with BLAS's thread count restored after each product."""
from __future__ import annotations

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from tinynorm.kernels.cpu import blas_pool  # noqa: E402
from tinynorm.kernels.cpu import matmul as cpu_matmul  # noqa: E402


def attention_operands(rng: np.random.Generator, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """q and k^T as attention makes them: strided views of one fused (B, T, 3, H, D) projection."""
    qkv = rng.standard_normal((3, 128, 3, 2, 32)).astype(dtype).transpose(2, 0, 3, 1, 4)  # 128*128*32 each
    return qkv[0], qkv[1].swapaxes(-1, -2)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_split_products_equal_numpys(threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    splits = []
    run_split = blas_pool.run_split
    monkeypatch.setattr(blas_pool, "run_split", lambda parts: splits.append(len(parts)) or run_split(parts))
    rng = np.random.default_rng(0)
    cases = [attention_operands(rng, np.float32), attention_operands(rng, np.float64),
             (rng.standard_normal((3, 1, 80, 64)), rng.standard_normal((5, 64, 64))),  # broadcast batch
             (rng.standard_normal((4, 64, 64)), rng.standard_normal((4, 64, 16))),  # small: numpy's loop
             (rng.standard_normal((1, 7, 40, 50), dtype=np.float32), rng.standard_normal((50, 600), dtype=np.float32)),
             (rng.standard_normal((2, 3, 4)), rng.standard_normal((4,)))]  # 1-D operand: numpy's path
    with threadpoolctl.threadpool_limits(threads, user_api="blas"):
        blas = blas_pool.blas()
        before = blas.get_num_threads()
        for a, b in cases:
            expected = np.matmul(a, b)
            result = cpu_matmul.matmul(a, b)
            assert result.shape == expected.shape and result.dtype == expected.dtype
            np.testing.assert_allclose(result, expected, rtol=1e-5 if a.dtype == np.float32 else 1e-12, atol=1e-5)
            assert blas.get_num_threads() == before
        # the four large batched products were split along their first axis longer than 1 (3, 3, 3, 7)
        assert splits == ([min(before, size) for size in (3, 3, 3, 7)] if before > 1 else [])


def test_mismatched_shapes_keep_numpys_error() -> None:
    with pytest.raises(ValueError):
        cpu_matmul.matmul(np.ones((4, 64, 32), np.float32), np.ones((4, 33, 64), np.float32))
    with pytest.raises(ValueError):
        cpu_matmul.matmul(np.ones((4, 64, 32), np.float32), np.ones((3, 32, 64), np.float32))
