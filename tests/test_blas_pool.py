"""blas_pool.run_split: parts run on their own threads (the first on the calling thread) with BLAS at
one thread, results in order, and BLAS's thread count is restored afterwards, also when a part fails."""
from __future__ import annotations

import threading

import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from tinynorm.kernels.cpu import blas_pool  # noqa: E402


@pytest.mark.parametrize("parts", [1, 2, 3])
def test_parts_run_side_by_side_with_one_blas_thread_and_return_in_order(parts: int) -> None:
    together = threading.Barrier(parts, timeout=10)  # broken unless all parts run at the same time

    def observe(value: int) -> tuple[int, str, int]:
        together.wait()
        return value, threading.current_thread().name, blas_pool.blas().get_num_threads()

    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        results = blas_pool.run_split([lambda i=i: observe(i) for i in range(parts)])
        assert blas_pool.blas().get_num_threads() == 2
    assert [value for value, _, _ in results] == list(range(parts))
    assert all(blas_threads == 1 for _, _, blas_threads in results)
    names = [name for _, name, _ in results]
    assert names[0] == threading.current_thread().name  # the first part runs on the calling thread
    assert len(set(names[1:])) == parts - 1 and all(name.startswith("tinynorm-blas") for name in names[1:])


@pytest.mark.parametrize("failing_first", [True, False], ids=["on the calling thread", "on the pool"])
def test_a_failing_part_raises_after_all_parts_finished_and_blas_is_restored(failing_first: bool) -> None:
    finished = []

    def slow() -> None:
        threading.Event().wait(0.05)
        finished.append(True)

    def fail() -> None:
        raise ValueError("part failed")

    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        with pytest.raises(ValueError, match="part failed"):
            blas_pool.run_split([fail, slow] if failing_first else [slow, fail])
        assert finished == [True]
        assert blas_pool.blas().get_num_threads() == 2


def test_a_forked_child_splits_with_a_pool_of_its_own() -> None:
    multiprocessing = pytest.importorskip("multiprocessing")
    together = threading.Barrier(2, timeout=10)

    def meet(value: int) -> int:
        together.wait()
        return value

    with threadpoolctl.threadpool_limits(2, user_api="blas"):  # now the parent's pool has started its thread
        assert blas_pool.run_split([lambda: meet(1), lambda: meet(2)]) == [1, 2]
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:  # the child inherits the pool object, not its threads
        assert pool.apply_async(_split_in_child).get(timeout=30) == [1, 2]


def _split_in_child() -> list[int]:
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        return blas_pool.run_split([lambda: 1, lambda: 2])
