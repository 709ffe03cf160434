"""tinynorm's CUDA host code on numba-cuda's real device arrays, without a GPU.

``benchmarks/bench_host_overhead.py --fake-device`` gives the caching allocator blocks at made-up
addresses and launches through tinynorm's driver-level path onto a driver stand-in that records the
launches; every Python line of a norm call, an elementwise op and a whole training step of both models
then runs on the same device-array and memory-pointer classes, and the same launch plans, as on a GPU.
The simulator cannot show this: its device arrays are numpy arrays. So this catches host code that
would fail on a GPU's arrays (a method the simulator's arrays have and numba-cuda's lack, a view that
needs a CUDA context), and it checks the tool that reports the host time per call.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba.cuda")

ROOT = Path(__file__).resolve().parents[2]


def test_norm_calls_and_training_steps_run_on_numba_cuda_arrays(tmp_path):
    out = tmp_path / "host.json"
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_host_overhead.py"), "--fake-device",
                             "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                            check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["mode"].startswith("fake device")
    rows = {row["call"]: row for row in record["rows"]}
    assert [rows[name]["launches"] for name in list(rows)[:5]] == [1, 1, 1, 4, 1]
    for model in ("SmallCNN", "TinyTransformerLM"):
        step = rows[f"training step {model}"]
        assert step["launches"] > 50 and step["host us"] > 0, step  # a whole step ran (92 and 247 launches)
    # Every launch after the first of its kind takes the driver-level path: no argument of a training
    # step falls back to Numba's dispatcher (a broadcast or non-contiguous array would).
    assert all(row["via dispatcher"] == 0 for row in rows.values()), rows
