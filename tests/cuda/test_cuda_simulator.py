"""Runs the CUDA tests (every ``tests/cuda/sim_*.py``) in Numba's CUDA simulator.

The simulator must be switched on before Numba is imported, and this pytest process has imported it
already, so each file runs in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``. A file's test fails when
any of its tests fails, or when none ran or some were skipped: the simulator tests never disappear
silently. Run one file directly with ``NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/sim_ops.py``.

The simulator runs kernels in Python on one core, and the files take from seconds to minutes, so they
all start together when the first of these tests runs, as many at a time as there are cores, the
slowest first (measured: about 2 minutes each for the first four on the 2-core CI machine, seconds to
a minute for the rest); each test then waits for its own file.
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
SLOWEST = ["sim_norm_layers.py", "sim_bench_training.py", "sim_host_tools.py", "sim_norm_kernels.py", "sim_nn_api.py",
           "sim_ops.py", "sim_training.py"]
# The slowest first, so that the pool ends on short files.
SIMULATOR_FILES = sorted((path.name for path in HERE.glob("sim_*.py")),
                         key=lambda name: (SLOWEST.index(name) if name in SLOWEST else len(SLOWEST), name))
TIMEOUT_S = 1800


def _run(name: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(HERE / name), "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


@pytest.fixture(scope="module")
def simulator_runs(request: pytest.FixtureRequest):
    """The selected simulator files started in a pool of one worker per core: ``{name: Future}``."""
    if importlib.util.find_spec("numba_cuda") is None:
        pytest.fail("the CUDA kernels need numba-cuda: install the cuda extra (pip install -e '.[cuda]')")
    selected = [item.callspec.params["name"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_in_the_simulator"]
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        yield {name: pool.submit(_run, name) for name in selected}


@pytest.mark.parametrize("name", SIMULATOR_FILES)
def test_in_the_simulator(name: str, simulator_runs: dict[str, Future]) -> None:
    result = simulator_runs[name].result()
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    summary = result.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and not re.search(r"skipped|deselected|xfail", summary), report


def test_import_tinynorm_does_not_import_numba_cuda():
    """Importing numba.cuda is slow and may look for a driver: only tinynorm.kernels.cuda may do it."""
    code = ("import sys, tinynorm; "
            "print([m for m in sys.modules if m.startswith(('numba.cuda', 'numba_cuda.numba.cuda'))])")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout
