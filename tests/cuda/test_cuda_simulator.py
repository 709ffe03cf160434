"""Runs the CUDA tests (every ``tests/cuda/sim_*.py``) in Numba's CUDA simulator.

The simulator must be switched on before Numba is imported, and this pytest process has imported it
already, so each file runs in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``. A file's test fails when
any of its tests fails, or when none ran or some were skipped: the simulator tests never disappear
silently. Run one file directly with ``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_ops.py``.

The simulator runs kernels in Python on one core, and the files take from a second to half a minute. So
all selected files start in a pool of one worker per core as soon as the tests are collected, the
slowest first (the API tests on CUDA, ``sim_api_ops.py`` and ``sim_nn_api.py``, and the trainings take
20-30 s each on a 2-core machine, the rest a few seconds), while this process runs the other tests;
these tests run last (``tests/conftest.py`` moves them) and each waits for its own file.
"""
import importlib.util
import os
import re
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SLOWEST = ["sim_api_ops.py", "sim_nn_api.py", "sim_training.py", "sim_host_tools.py", "sim_bench_training.py",
           "sim_ops.py", "sim_rnn.py", "sim_matmul.py", "sim_tensor_semantics.py", "sim_random_optim.py"]
# The slowest first, so that the pool ends on short files.
SIMULATOR_FILES = sorted((path.name for path in HERE.glob("sim_*.py")),
                         key=lambda name: (SLOWEST.index(name) if name in SLOWEST else len(SLOWEST), name))
TIMEOUT_S = 1800


class SimulatorPool:
    """The simulator files of this session, each run in its own subprocess, a worker per core."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1))
        self._runs: dict[str, Future] = {}
        self._processes: list[subprocess.Popen] = []
        self._closed = False

    def start(self, names: list[str]) -> None:
        for name in sorted(set(names) - set(self._runs), key=SIMULATOR_FILES.index):
            self._runs[name] = self._executor.submit(self._run, name)

    def result(self, name: str) -> tuple[int, str, str]:
        self.start([name])
        return self._runs[name].result()

    def _run(self, name: str) -> tuple[int, str, str]:
        if self._closed:
            return -1, "", "the session ended before this file ran"
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", str(HERE / name), "-q", "-p", "no:cacheprovider"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._processes.append(process)
        try:
            stdout, stderr = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            stderr += f"\nkilled after {TIMEOUT_S} s"
        return process.returncode, stdout, stderr

    def close(self) -> None:
        """Stop what has not finished (a session stopped early must not wait for the simulator)."""
        self._closed = True
        for process in self._processes:
            if process.poll() is None:
                process.kill()
        self._executor.shutdown(wait=True, cancel_futures=True)


POOL = SimulatorPool()


@pytest.fixture(scope="module")
def simulator_runs():
    if importlib.util.find_spec("numba_cuda") is None:
        pytest.fail("the CUDA kernels need numba-cuda: install the cuda extra (pip install -e '.[cuda]')")
    return POOL


@pytest.mark.parametrize("name", SIMULATOR_FILES)
def test_in_the_simulator(name: str, simulator_runs: SimulatorPool) -> None:
    returncode, stdout, stderr = simulator_runs.result(name)
    report = stdout[-6000:] + stderr[-2000:]
    assert returncode == 0, report
    summary = stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and not re.search(r"skipped|deselected|xfail", summary), report


def test_import_tinynorm_does_not_import_numba_cuda():
    """Importing numba.cuda is slow and may look for a driver: only tinynorm.kernels.cuda may do it."""
    code = ("import sys, tinynorm; "
            "print([m for m in sys.modules if m.startswith(('numba.cuda', 'numba_cuda.numba.cuda'))])")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout
