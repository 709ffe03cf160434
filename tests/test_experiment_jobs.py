"""run_jobs (tinynorm/experiments/common.py): a full run's trainings in one single-threaded process per core."""
import os

import numba
import pytest

from tinynorm.experiments.common import run_jobs


def threads_and_process(value):
    """What a job sees: its value, Numba's threads, BLAS's threads and its process."""
    from threadpoolctl import threadpool_info

    blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    return value, numba.get_num_threads(), blas, os.getpid()


def fails_on(value, bad):
    if value == bad:
        raise ValueError(f"job {value} failed")
    return value


@pytest.mark.slow
def test_workers_run_each_job_on_one_thread_and_return_results_in_job_order():
    pytest.importorskip("threadpoolctl")
    results = run_jobs(threads_and_process, [(v,) for v in range(4)], workers=2, cost=lambda job: job[0])
    assert [value for value, *_ in results] == [0, 1, 2, 3]
    assert all(numba_threads == 1 and all(n == 1 for n in blas) for _, numba_threads, blas, _ in results)
    assert os.getpid() not in {pid for *_, pid in results}


@pytest.mark.slow
def test_a_failed_job_is_raised_here():
    with pytest.raises(ValueError, match="job 1 failed"):
        run_jobs(fails_on, [(v, 1) for v in range(3)], workers=2)


def test_one_job_or_none_run_in_this_process():
    assert run_jobs(threads_and_process, [], workers=2) == []
    [(value, numba_threads, _, pid)] = run_jobs(threads_and_process, [(7,)], workers=2)
    assert (value, numba_threads, pid) == (7, 1, os.getpid())
