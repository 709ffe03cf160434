"""``tinynorm bench`` runs from the package: settings recorded, PyTorch imported first, losses compared."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tinynorm
from tinynorm import nn
from tinynorm.benchmarks.import_order import user_environment
from tinynorm.benchmarks.steps import forward_gflop


def test_forward_gflop_counts_each_convolution_and_linear_layer():
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, groups=1), nn.Conv2d(8, 8, (3, 1), stride=2, groups=4),
                          nn.Flatten(), nn.Linear(8 * 2 * 3, 5))
    x = tinynorm.randn(2, 3, 6, 6)
    conv1 = 2 * (2 * 8 * 6 * 6) * (3 * 3 * 3)
    conv2 = 2 * (2 * 8 * 2 * 3) * (2 * 3 * 1)  # (6 - 3) // 2 + 1 = 2 rows, (6 - 1) // 2 + 1 = 3 columns
    linear = 2 * (2 * 5) * 48
    assert model(x).shape == (2, 5)
    assert forward_gflop(model, x) * 1e9 == pytest.approx(conv1 + conv2 + linear)


def test_scale_benchmark_imports_torch_first_and_records_the_settings(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "scale.json"
    env = user_environment()  # this process imported tinynorm, which set its OpenMP spin here
    result = subprocess.run([sys.executable, "-m", "tinynorm.benchmarks.scale", "--smoke", "--out", str(out)],
                            capture_output=True, text=True, timeout=600, check=False, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads(out.read_text())
    assert "PyTorch: " in result.stdout and "imported before tinynorm" in result.stdout
    threading = record["threading"]
    assert threading["torch"]["imported_first"] and threading["tinynorm"]["openmp_layer_load"] == "deepbind"
    assert threading["torch"]["GOMP_SPINCOUNT"].startswith("libgomp default")  # not the spin tinynorm chose
    assert f"each after a {threading['settle_seconds'] * 1e3:g} ms pause and an untimed call" in result.stdout
    assert [row["model"].split()[0] for row in record["rows"]] == ["SmallCNN", "TinyTransformerLM"]
    for row in record["rows"]:
        assert row["loss_rel_diff"] <= 1e-4 and row["ratio"] > 0 and row["GFLOP"] > 0
    speedups = threading["parallel_speedup"]
    if threading["blas"]["num_threads"] > 1:  # measured before and after the rows, and printed
        assert all(value > 0 for value in speedups.values())  # a timing: on a loaded machine, anything
        assert f"BLAS threads ran a 1024x1024 product {speedups['before']:.2f}x (before the rows)" in result.stdout
    else:
        assert speedups == {"before": None, "after": None} and "cores:" not in result.stdout


def test_parallel_speedup_restores_blas_threads_and_is_none_on_one() -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from tinynorm.benchmarks.common import parallel_speedup
    from tinynorm.kernels.cpu import blas_pool

    blas = blas_pool.blas()
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        assert parallel_speedup(size=64, repeat=1) is None
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        speedup = parallel_speedup(size=256, repeat=3, number=1)
        assert blas.get_num_threads() == 2
    assert isinstance(speedup, float) and speedup > 0  # a timing: on a loaded machine, anything


@pytest.mark.slow  # 20 s of CPU
@pytest.mark.parametrize("name,ops", [("norms", {"LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "GroupNorm",
                                                 "InstanceNorm"}),
                                      ("rnn", {"LSTM", "GRU"})])
def test_norms_and_rnn_run_from_the_package_without_torch(tmp_path: Path, name: str, ops: set[str]) -> None:
    """With PyTorch not importable, the benchmark says so in one line and times tinynorm alone."""
    out = tmp_path / f"{name}.json"
    code = (f"import sys; sys.modules['torch'] = None\nfrom tinynorm.benchmarks.{name} import main\n"
            f"sys.exit(main(['--quick', '--repeat', '1', '--out', {str(out)!r}]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False,
                            cwd=tmp_path, env=user_environment())
    assert result.returncode == 0, result.stderr[-3000:]
    assert "PyTorch is not installed: tinynorm timings only" in result.stdout and "Traceback" not in result.stderr
    record = json.loads(out.read_text())
    assert record["threading"]["tinynorm"]["numba_threads"] >= 1 and "torch" not in record["threading"]
    rows = record["rows"]
    assert {(row.get("op") or row["layer"]).split()[0] for row in rows} == ops
    for row in rows:
        assert all(value is None for key, value in row.items() if "torch" in key)
        assert all(value > 0 for key, value in row.items() if key.endswith("_ms") or key.endswith(" ms"))


def test_contenders_taking_turns_each_start_after_a_pause_and_an_untimed_call(monkeypatch) -> None:
    from tinynorm.benchmarks import common

    events: list[str] = []
    monkeypatch.setattr(common.time, "sleep", lambda seconds: events.append(f"sleep {seconds}"))
    monkeypatch.setattr(common, "_sample", lambda fn, number, clock: events.append(f"sample x{number}") or 1.0)
    fns = [lambda: events.append("a"), lambda: events.append("b")]
    assert common.alternating_medians(fns, repeat=2, min_time=0.0, settle=0.5) == [1.0, 1.0]
    sizing = ["a", "a", "b", "b"]  # _calls_per_sample: a warm-up call, then the timed one
    turn = ["sleep 0.5", "a", "sample x1", "sleep 0.5", "b", "sample x1"]
    assert events == sizing + turn * 2
    events.clear()
    assert common.alternating_medians(fns[:1], repeat=2, min_time=0.0) == [1.0]
    assert events == ["a", "a", "sample x1", "sample x1"]  # alone: nothing ran before it to wait for
