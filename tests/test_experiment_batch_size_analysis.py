"""Tests for the batch-size experiment's analysis of BatchNorm's statistics: the measured noise of the
batch mean against its n_eff prediction, the rise in error per kind of statistics and its split into
train/eval discrepancy and training noise, the checks that judge them, and the rebuild from records."""
import json
import math

import numpy as np
import pytest

import tinynorm as tn
from tinynorm.experiments import batch_size as exp
from tinynorm.experiments import batch_size_analysis as analysis

pytest.importorskip("matplotlib")


def noise_bound(batches, reference):
    """EQUALITY_SE standard errors of one measured/predicted variance ratio (see first_layer_noise)."""
    return analysis.EQUALITY_SE * math.sqrt(2 / (batches - 1) + 2 / (reference - 1))


def test_batch_mean_variance_matches_its_prediction_for_independent_samples():
    # 60 samples, batches of 30 drawn without replacement: the finite-population factor (N-B)/(N-1)
    # halves the variance of the batch mean; without it the ratio would be 2.
    rng = np.random.default_rng(0)
    tn.manual_seed(0)
    model = tn.nn.Sequential(tn.nn.Linear(5, 4), tn.nn.BatchNorm1d(4))
    X = rng.normal(1.0, 2.0, size=(60, 5)).astype(np.float32)
    (layer,) = exp.statistics_noise(model, X, batch_size=30, batches=400)
    assert layer["n_eff"] == pytest.approx(30.0)
    assert abs(layer["mean_variance_ratio"] - 1.0) < noise_bound(400, 60)
    # correlated positions: a conv's batch mean over 4x4 maps of one value per sample varies as 1/B, not 1/(16 B)
    conv = tn.nn.Sequential(tn.nn.Conv2d(1, 3, 1), tn.nn.BatchNorm2d(3))
    constant = np.broadcast_to(rng.normal(size=(1000, 1, 1, 1)), (1000, 1, 4, 4)).astype(np.float32)
    (layer,) = exp.statistics_noise(conv, constant, batch_size=8, batches=400)
    assert layer["n_eff"] == pytest.approx(8.0, rel=1e-4)
    assert abs(layer["mean_variance_ratio"] - 1.0) < noise_bound(400, 1000)


def test_a_batchnorm_after_a_batchnorm_sees_calmer_batch_means():
    # The second BatchNorm's input comes out of a BatchNorm that standardized the batch: its batch
    # mean varies far less than independent samples' would.
    tn.manual_seed(0)
    model = tn.nn.Sequential(tn.nn.Linear(5, 32), tn.nn.BatchNorm1d(32), tn.nn.ReLU(), tn.nn.Linear(32, 16),
                             tn.nn.BatchNorm1d(16))
    X = np.random.default_rng(1).normal(size=(2000, 5)).astype(np.float32)
    first, second = exp.statistics_noise(model, X, batch_size=4, batches=200)
    assert abs(first["mean_variance_ratio"] - 1.0) < noise_bound(200, 1024)
    assert second["mean_variance_ratio"] < 0.5


def bn_runs(kind, batch, n_eff, running, recomputed, batch_errors, ratio=1.0):
    """One synthetic BatchNorm record per seed, as train_and_evaluate writes them."""
    layer = {"values": batch, "n_eff": n_eff, "mean_spread": n_eff ** -0.5, "std_spread": (2 * n_eff) ** -0.5,
             "mean_variance_ratio": ratio}
    return [{"model": kind, "norm": "batchnorm", "batch_size": batch, "statistics": [layer, dict(layer)],
             "errors_by_statistics": {"running": r, "recomputed": c, "batch": b, "momentum": {"0.1": r}}}
            for r, c, b in zip(running, recomputed, batch_errors)]


def synthetic_analysis(ratio=1.0):
    runs = (bn_runs("mlp", 2, 2.0, [30, 34, 32], [28, 30, 29], [50, 52, 51], ratio)
            + bn_runs("mlp", 8, 8.0, [3.0, 3.4, 2.6], [3.0, 3.0, 3.0], [4.0, 4.4, 3.6], ratio)
            + bn_runs("mlp", 32, 32.0, [2.0, 2.4, 2.2], [2.1, 2.3, 2.2], [3.0, 3.0, 3.3], ratio)
            + bn_runs("cnn", 2, 10.0, [9.0, 10.0, 11.0], [9.0, 9.0, 9.0], [4.0, 5.0, 3.0], ratio)
            + bn_runs("cnn", 32, 80.0, [2.0, 2.0, 2.0], [2.0, 2.0, 2.0], [2.5, 2.5, 2.5], ratio))
    return exp.batch_norm_analysis(runs)


def test_rise_per_kind_of_statistics_and_its_split():
    table = analysis.degradation(synthetic_analysis(), reference=32)
    mlp = table["mlp"]["2"]
    for mode, small, large in (("running", [30, 34, 32], [2.0, 2.4, 2.2]), ("batch", [50, 52, 51], [3.0, 3.0, 3.3])):
        assert mlp["rise"][mode]["mean"] == pytest.approx(np.mean(small) - np.mean(large))
        sems = [np.std(v, ddof=1) / np.sqrt(3) for v in (small, large)]
        assert mlp["rise"][mode]["se"] == pytest.approx(math.hypot(*sems))
    gaps = np.subtract([30, 34, 32], [50, 52, 51])  # running minus batch, same weights
    assert mlp["recovered"]["mean"] == pytest.approx(gaps.mean())
    assert mlp["recovered"]["se"] == pytest.approx(gaps.std(ddof=1) / np.sqrt(3))
    # batch statistics err more: the discrepancy costs nothing, the whole rise is training noise
    assert mlp["discrepancy"] == 0.0 and mlp["training_noise"] == pytest.approx(mlp["rise"]["running"]["mean"])
    assert mlp["degraded"] and not table["mlp"]["8"]["degraded"] and not table["mlp"]["32"]["degraded"]
    # the CNN's batch statistics recover 6 points of a 8-point rise: 6 are discrepancy, 2 training noise
    cnn = table["cnn"]["2"]
    assert cnn["rise"]["running"]["mean"] == pytest.approx(8.0) and cnn["recovered"]["mean"] == pytest.approx(6.0)
    assert cnn["discrepancy"] == pytest.approx(6.0) and cnn["training_noise"] == pytest.approx(2.0)
    assert analysis.breaking_point(table, 32)["largest_degraded_n_eff"] == 10.0


def checks_by_id(cells, small=2):
    return {c["id"]: c for c in analysis.checks(cells, 32, small, noise_batches=64, reference_samples=1024)}


def test_checks_state_the_claims_and_can_fail():
    found = checks_by_id(synthetic_analysis())
    assert found["mlp.noise_follows_n_eff"]["passed"] and found["cnn.noise_follows_n_eff"]["passed"]
    # degraded cells at n_eff 2 and 10, the intact one at 8: no single threshold separates them
    assert not found["batchnorm.n_eff_decides"]["passed"]
    assert "at most 10.0" in found["batchnorm.n_eff_decides"]["claim"]
    assert found["mlp.breakdown_is_training_noise"]["passed"]
    assert not found["cnn.breakdown_is_training_noise"]["passed"]  # 6 of 8 points are discrepancy
    # a measured variance 40% above the prediction, from 9 estimates of 64 batches, is a FAIL
    assert not checks_by_id(synthetic_analysis(ratio=1.4))["mlp.noise_follows_n_eff"]["passed"]
    # without the CNN, the degraded cell (n_eff 2) sits below the intact one (n_eff 8)
    mlp_only = {"mlp": synthetic_analysis()["mlp"]}
    assert checks_by_id(mlp_only)["batchnorm.n_eff_decides"]["passed"]
    # the split is judged only where BatchNorm degrades at the smallest batch
    assert "mlp.breakdown_is_training_noise" not in checks_by_id(mlp_only, small=8)


def test_rebuilds_tables_checks_and_figure_from_records(tmp_path, capsys):
    runs = (bn_runs("mlp", 2, 2.0, [30, 34], [28, 30], [50, 52]) + bn_runs("mlp", 8, 8.0, [3, 3], [3, 3], [4, 4])
            + bn_runs("mlp", 32, 32.0, [2, 2.5], [2, 2.5], [3, 3]))
    records = tmp_path / "jobs.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in runs))
    figure = tmp_path / "statistics.png"
    assert analysis.main([str(records), "--figure", str(figure)]) == 0
    printed = capsys.readouterr().out
    assert "| mlp | 2 | 2 | 2.0 | 0.71 |" in printed
    assert "- PASS batchnorm.n_eff_decides:" in printed and "- PASS mlp.breakdown_is_training_noise:" in printed
    assert figure.read_bytes().startswith(b"\x89PNG")


def test_full_mode_judges_the_analysis_across_models(tmp_path, monkeypatch):
    # The full protocol's code path on a tiny version of it: two models, batches 4 and 32, one epoch.
    pytest.importorskip("sklearn")
    tiny = exp.Settings(models={"digits-mlp": ("batchnorm", "layernorm"), "digits-cnn": ("batchnorm",)},
                        batch_sizes=(4, 32), seeds=(0,), epochs={"digits": 1, "mnist1d": 1}, base_lr=0.1, width=8)
    monkeypatch.setattr(exp, "FULL", tiny)
    results = exp.run(tmp_path, quick=False, progress=False)
    ids = {c["id"] for c in results["checks"]}
    assert {"digits-mlp.noise_follows_n_eff", "digits-cnn.noise_follows_n_eff"} <= ids
    assert not results["full_run_only"]
    cells = results["analysis"]
    assert cells["digits-cnn"]["4"]["min_n_eff"] > 4 == cells["digits-mlp"]["4"]["min_n_eff"]  # 4x4 maps pool more
    markdown = (tmp_path / "batch_size.md").read_text()
    assert "## When BatchNorm breaks" in markdown and "| digits-cnn | 4 | 1 |" in markdown
