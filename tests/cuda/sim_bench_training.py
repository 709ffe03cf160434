"""``benchmarks/bench_training_cuda.py --smoke`` runs in Numba's CUDA simulator: 2 training steps of
SmallCNN and of TinyTransformerLM at tiny sizes on ``device='cuda'``, no PyTorch, finite losses, a JSON
record. Without ``--smoke`` the script refuses the simulator (its step times would mean nothing).

Proves the GPU benchmark's code paths (device data, training, evaluation, the report) before a GPU
run spends its time on it. About 80 s of CPU: every simulated kernel launch runs its threads in
Python. Run by ``test_cuda_simulator.py`` in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``.
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_training_cuda.py"


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env=dict(os.environ),
                          capture_output=True, text=True, timeout=600, check=False)


def test_smoke_run_trains_both_models(tmp_path):
    out = tmp_path / "bench_training_cuda.json"
    result = run_script("--smoke", "--out", str(out))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["mode"] == "smoke" and record["simulator"] is True
    for model, metric in (("cnn", "test_accuracy"), ("lm", "final_loss")):
        ours = record["results"][model]["tinynorm"]
        assert "torch" not in record["results"][model]  # smoke runs never import PyTorch
        assert len(ours["losses"]) == 2 and all(math.isfinite(loss) for loss in ours["losses"]), model
        assert math.isfinite(ours[metric]) and ours["median_step_ms"] > 0, model
    assert [row["model"] for row in record["rows"]] == ["SmallCNN digits", "TinyTransformerLM text"]
    assert "SmallCNN digits" in result.stdout and "wrote" in result.stdout


def test_simulator_without_smoke_is_refused(tmp_path):
    out = tmp_path / "never.json"
    result = run_script("--quick", "--out", str(out))
    assert result.returncode == 1
    assert "only --smoke runs in the simulator" in result.stderr
    assert not out.exists()
