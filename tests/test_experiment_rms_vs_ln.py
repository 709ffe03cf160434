"""Tests for the RMSNorm vs LayerNorm experiment. Speed is measured, never asserted: these tests check
that the measurements are made, recorded and reported, and that the timed calls compute the right thing."""
import json
import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from tinynorm.experiments import rms_vs_ln as exp


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("rms_vs_ln")
    results = exp.run(out_dir, quick=True, progress=False)
    return out_dir, results, json.loads((out_dir / "rms_vs_ln.json").read_text())


def test_writes_json_markdown_and_figure(quick_run):
    out_dir, results, saved = quick_run
    png = (out_dir / "rms_vs_ln.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert results["figures"] == [str(out_dir / "rms_vs_ln.png")]
    assert saved["summary"] == results["summary"] and saved["checks"] == results["checks"]
    assert all(isinstance(c["claim"], str) and isinstance(c["passed"], bool) for c in results["checks"])
    text = (out_dir / "rms_vs_ln.md").read_text()
    for needle in ("7%-64%", "norms' share", "Checks", "Amdahl"):
        assert needle in text


def test_reports_kernel_and_end_to_end_ratios(quick_run):
    _, results, saved = quick_run
    assert [row["width"] for row in saved["widths"]] == list(exp.SETTINGS["quick"]["widths"])
    for row in saved["widths"]:
        assert row["rows"] * row["width"] == exp.SETTINGS["quick"]["total"]
        assert len(row["seconds"]) == 8 and all(0 < s < 10 for s in row["seconds"].values())
        for key, ratio in row["ratio"].items():
            level, kind = ("nn ", key[3:]) if key.startswith("nn ") else ("", key)
            assert ratio == pytest.approx(row["seconds"][f"{level}rmsnorm {kind}"] / row["seconds"][f"{level}layernorm {kind}"])
    assert [case["model"] for case in saved["amdahl"]] == [m[0] for m in exp.AMDAHL_MODELS["quick"]]
    for case in saved["amdahl"]:
        assert 0 < case["share"] < 1 and case["measured_se"] > 0 and case["predicted_se"] > 0
        rounds = {name: np.array(values) for name, values in case["round_seconds"].items()}
        assert all(len(values) == exp.SETTINGS["quick"]["timing_rounds"] for values in rounds.values())
        assert case["measured"] == pytest.approx(np.mean(1 - rounds["rmsnorm"] / rounds["layernorm"]))
        assert case["control"] == pytest.approx(np.mean(1 - rounds["control"] / rounds["layernorm"]))
        assert case["step_seconds"]["layernorm"] == pytest.approx(np.median(rounds["layernorm"]))
    summary = "\n".join(results["summary"])
    assert "kernel forward+backward" in summary and "TinyTransformerLM step" in summary and "Amdahl" in summary


def test_quick_mode_leaves_the_amdahl_claims_to_the_full_run(quick_run):
    _, results, saved = quick_run
    assert {c["id"] for c in results["checks"]} == exp.QUICK_CLAIMS
    assert {c["id"] for c in results["full_run_only"]} == {"amdahl", "control"}
    assert saved["full_run_only"] == results["full_run_only"]


def test_amdahl_predicts_share_times_saving_and_measures_the_mean_saving_over_rounds():
    # steps of 10 ms (LayerNorm) and 9.5 ms (RMSNorm); norms 1.0 ms and 0.5 ms per step: share 10%,
    # the norms' saving 50%, so both the prediction and the measurement are a 5% saving
    rounds = {"layernorm": np.full(4, 0.010), "rmsnorm": np.full(4, 0.0095), "control": np.full(4, 0.010)}
    norms = {"layernorm": np.full(9, 1.0e-3), "rmsnorm": np.full(9, 0.5e-3)}
    case = exp.amdahl(rounds, norms)
    assert case["share"] == pytest.approx(0.10) and case["norm_saving"] == pytest.approx(0.5)
    assert case["predicted"] == pytest.approx(0.05) and case["measured"] == pytest.approx(0.05)
    assert case["measured_se"] == pytest.approx(0.0, abs=1e-12) and case["control"] == pytest.approx(0.0)
    # the standard error is the spread of the per-round savings over rounds
    rounds["rmsnorm"] = np.array([0.0094, 0.0096, 0.0095, 0.0093])
    savings = 1 - rounds["rmsnorm"] / rounds["layernorm"]
    case = exp.amdahl(rounds, norms)
    assert case["measured"] == pytest.approx(savings.mean())
    assert case["measured_se"] == pytest.approx(savings.std(ddof=1) / 2)
    assert case["difference_se"] == pytest.approx(np.hypot(case["measured_se"], case["predicted_se"]))


def test_chi_square_bound_is_the_95_percent_quantile():
    # the 95% quantiles of chi-square with 2, 5 and 10 degrees of freedom
    for k, quantile in ((2, 5.991), (5, 11.070), (10, 18.307)):
        assert exp.chi_square_bound(k) == pytest.approx(quantile, rel=0.01)


def test_interleaved_training_of_the_same_norm_twice_computes_the_same_model():
    # the control of the timing rounds: a second LayerNorm model is the same computation as the first
    config = dict(exp.SETTINGS["quick"], d_model=16, n_layers=1, seq_len=8, batch_size=2)
    first, rms, second = exp.train_interleaved(config, ("layernorm", "rmsnorm", "layernorm"), steps=3, seed=5)
    assert first["losses"] == second["losses"] and first["losses"] != rms["losses"]
    assert all(len(run["seconds"]) == 3 and min(run["seconds"]) > 0 for run in (first, rms, second))


def test_both_models_train_from_the_same_start(quick_run):
    _, _, saved = quick_run
    steps = exp.SETTINGS["quick"]["steps"]
    ln, rms = saved["training"]["layernorm"], saved["training"]["rmsnorm"]
    for run in (ln, rms):
        assert len(run["losses"]) == steps and all(math.isfinite(v) for v in run["losses"])
        assert math.isfinite(run["final_loss"]) and run["final_loss"] < run["losses"][0]
        assert run["norm_layers"] == 2 * exp.SETTINGS["quick"]["n_layers"] + 1
    # same seed, same batches, norms at identity at init: the two first losses are close but not equal
    assert ln["losses"][0] == pytest.approx(rms["losses"][0], rel=0.05)


def test_timed_kernel_calls_compute_the_norms():
    calls = exp.kernel_calls(6, 16, np.random.default_rng(0))
    ln, _, _ = calls["layernorm forward"]()
    rms, _ = calls["rmsnorm forward"]()
    # kernel_calls draws x first from its generator: the same draw in float64 is the reference's input
    x = np.random.default_rng(0).standard_normal((6, 16), dtype=np.float32).astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    expected_ln = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + exp.EPS)
    expected_rms = x / np.sqrt((x**2).mean(axis=1, keepdims=True) + exp.EPS)
    np.testing.assert_allclose(ln, expected_ln, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rms, expected_rms, rtol=1e-5, atol=1e-5)
    assert calls["layernorm forward+backward"]() is None and calls["rmsnorm forward+backward"]() is None


def test_interleaved_medians_times_every_function():
    counter = {"a": 0, "b": 0}

    def bump(name):
        counter[name] += 1

    times = exp.interleaved_medians({"a": lambda: bump("a"), "b": lambda: bump("b")}, repeat=3, min_time=0.0)
    assert set(times) == {"a", "b"} and all(t > 0 for t in times.values())
    assert counter == {"a": 5, "b": 5}  # a warm-up call, a calibrating one, then one call per sample


def test_a_slow_first_call_does_not_set_the_calls_per_sample():
    # A first call that compiles must not make every sample a single call (a different regime of
    # allocation and caching than back-to-back calls); the calls per sample come from the second call.
    calls = []

    def compiles_first():
        if not calls:
            start = exp.clock()
            while exp.clock() - start < 0.05:
                pass
        calls.append(1)

    exp.interleaved_samples({"f": compiles_first}, repeat=1, min_time=0.02)
    assert len(calls) > 2 + 100
