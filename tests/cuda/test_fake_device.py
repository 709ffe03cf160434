"""tinynorm's CUDA host code without a GPU, on the fake device of ``tests/cuda/fake_device.py``.

The fake device gives the caching allocator blocks at made-up addresses and launches through
tinynorm's driver-level path onto a stand-in for ``cuLaunchKernel`` that records the launches; every
Python line of a norm call, an elementwise op and a whole training step of both models then runs on
the same storages and launch plans as on a GPU. The simulator cannot show this: its storages are host
arrays and its launches go through Numba's dispatcher. So this catches host code that would fail on a
GPU (an argument no plan takes, a method only the simulator's arrays have), and it checks the tool that
reports the host time per call (``benchmarks/bench_host_overhead.py --fake-device``).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

if numba.config.ENABLE_CUDASIM:
    pytest.skip("the fake device needs numba-cuda's real classes, not the simulator", allow_module_level=True)
pytest.importorskip("numba.cuda")

from fake_device import fake_device  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_norm_calls_and_training_steps_run_on_the_fake_device(tmp_path):
    out = tmp_path / "host.json"
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_host_overhead.py"), "--fake-device",
                             "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                            check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["mode"].startswith("fake device")
    rows = {row["call"]: row for row in record["rows"]}
    assert [rows[name]["driver"] for name in list(rows)[:5]] == [1, 1, 1, 4, 1]
    for model in ("SmallCNN", "TinyTransformerLM"):
        step = rows[f"training step {model}"]
        assert step["driver"] > 50 and step["host us"] > 0, step  # a whole step ran (92 and 247 launches)
    # Every launch takes the driver-level path: no argument of a training step falls back to Numba's
    # dispatcher (a broadcast or non-contiguous array would), and no plan was refused.
    assert all(row["dispatcher"] == 0 for row in rows.values()), rows
    assert record["refusals"] == {}


def test_the_fake_device_restores_what_it_replaced():
    """Leaving the ``with`` block puts back every function and table it replaced (no patch outlives it)."""
    import tinynorm
    from tinynorm.backends.cuda.runtime import launch, memory
    from tinynorm.kernels.cuda import _shared

    names = [(memory, "block_cache"), (memory, "copy_to_device"), (memory, "copy_to_host"),
             (launch, "driver_function"), (launch, "_driver"), (launch, "dispatch"), (launch, "_plans"),
             (launch, "_fast"), (tinynorm.cuda, "_unavailable_reason"), (_shared, "sm_count")]
    before = [getattr(owner, name) for owner, name in names]
    with fake_device() as launches:
        x = tinynorm.ones(3, 4, device="cuda")
        (x + x).sum()
        assert [path for path, _ in launches] == ["driver"] * 3  # fill, add, sum
        assert memory.block_cache().driver_allocations > 0
    assert [getattr(owner, name) for owner, name in names] == before
    assert _shared.sm_count.cache_info().currsize == 0


def test_a_launch_no_plan_takes_is_recorded_with_its_reason():
    """A strided array argument has no plan: the launch goes to the dispatcher, and the refusal says why."""
    from tinynorm.backends.cuda.array import CudaArray
    from tinynorm.backends.cuda.runtime import launch
    from tinynorm.kernels.cuda import strided

    with fake_device() as launches:
        a = CudaArray.empty((4, 6), np.float32)
        launch.refusals.clear()
        strided.fill(a[:, ::2], 1.0)  # fill expects a flat C-contiguous array: a view with stride 2 is not
        assert launches[-1][0] == "dispatcher"
        (reason,) = launch.refusals.values()
        assert "not a C-contiguous array" in reason
    launch.refusals.clear()
