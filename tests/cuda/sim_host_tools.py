"""The host-work tools run in Numba's CUDA simulator and report what they should.

``benchmarks/count_device_work.py``: a training step of TinyTransformerLM reads back 2 numbers (ids and
targets checks) and SmallCNN 1, neither copies anything to the device, and both allocate a few hundred
storages at most. ``benchmarks/bench_host_overhead.py --simulator``
times every layer of a small LayerNorm call with the launches counted. Run by ``test_cuda_simulator.py``
in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``; each script runs in its own process.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]


def run_script(name: str, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), *args], cwd=ROOT,
                            env=dict(os.environ), capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def test_count_device_work(tmp_path):
    out = tmp_path / "counts.json"
    run_script("count_device_work.py", "--tiny", "--out", str(out))
    rows = {row["model"].split()[0]: row for row in json.loads(out.read_text())["rows"]}
    assert rows["TinyTransformerLM"]["reads back"] == 2 and rows["SmallCNN"]["reads back"] == 1
    for row in rows.values():
        assert row["copies to device"] == 0, row
        assert row["launches"] > 50, row  # the counters see the step (130 and 92 launches)
        assert 50 < row["allocations"] < 300, row


def test_bench_host_overhead_in_the_simulator(tmp_path):
    out = tmp_path / "host.json"
    result = run_script("bench_host_overhead.py", "--simulator", "--out", str(out))
    record = json.loads(out.read_text())
    assert record["mode"].startswith("simulator")
    assert [row["launches"] for row in record["rows"]] == [1, 1, 1, 4, 1]
    assert all(row["host us"] > 0 for row in record["rows"])
    assert "functional layer_norm + backward" in result.stdout
