"""The half-precision statistics experiment: its quick run (CPU and the CUDA simulator) and its pipelines."""
import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from tinynorm import dtypes
from tinynorm.experiments import half_precision as exp

from experiment_runs import quick_run_with_raw


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("half_precision")
    return (out_dir, *quick_run_with_raw(exp, out_dir, "half_precision"))


def test_writes_records_figure_and_checks(quick_run):
    out_dir, results, raw, saved = quick_run
    assert (out_dir / "half_precision.png").read_bytes().startswith(b"\x89PNG")
    assert {c["id"] for c in results["checks"]} == exp.RESOLVED_IN_QUICK
    assert len(results["checks"]) + len(results["full_run_only"]) == 4
    assert [c["case"] for c in saved["cases"]] == list(exp.CASES)
    for case in saved["cases"]:
        assert len(case["steps"]) == exp.QUICK.batches // exp.QUICK.record_every
        assert set(case["errors"]) == set(exp.PIPELINES)
    for case in raw["cases"]:
        assert case["layer_vs_float32"] <= 1e-5  # float16 data, float32 statistics: the float32 result
    overflow = raw["cases"][2]["final"]
    assert max(overflow["float64"]["var"]) > exp.FLOAT16_MAX
    assert math.isinf(max(overflow["tinynorm, float16 layer"]["var"]))
    assert all(math.isfinite(v) for v in overflow["tinynorm, float32 layer"]["var"])


def test_the_cuda_path_in_the_simulator_gives_the_cpus_statistics(quick_run):
    *_, saved = quick_run
    sim = saved["cuda_simulator"]
    assert "error" not in sim, sim
    assert all(sim[case] <= 1e-5 for case in exp.CASES)


def test_the_float64_pipeline_is_the_moving_average_of_the_unbiased_statistics():
    batches = list(exp.stream("ordinary", 3, 5, 8, 2))
    pipeline = exp.NumpyRunning(2, np.float64)
    mean, var = np.zeros(2), np.ones(2)
    for x in batches:
        pipeline.update(x)
        values = x.astype(np.float64)
        mean = 0.9 * mean + 0.1 * values.mean(axis=0)
        var = 0.9 * var + 0.1 * values.var(axis=0, ddof=1)
    np.testing.assert_allclose(pipeline.mean, mean, rtol=1e-13)
    np.testing.assert_allclose(pipeline.var, var, rtol=1e-13)


def test_float16_buffers_lose_small_updates():
    """A float16 running mean near 1000 cannot move by less than half its spacing (0.25): the update
    0.1 * (1000.5 - 1000) = 0.05 is lost every time, while float32 follows."""
    half, single = exp.NumpyRunning(1, np.float16), exp.NumpyRunning(1, np.float32)
    half.mean[...] = single.mean[...] = 1000
    for _ in range(50):
        for pipeline in (half, single):
            pipeline.update(np.array([[1000.25], [1000.75]], np.float16))
    assert half.mean[0] == 1000 and single.mean[0] == pytest.approx(1000.5 - 0.5 * 0.9**50, rel=1e-6)
    layer = exp.LayerRunning(1, dtypes.float16)
    assert layer.layer.running_mean.dtype == dtypes.float16


def test_checks_follow_the_measurements():
    def analysis(drift, half_ulp, overflow):
        entry = {"mean_max": drift, "var_max": 0.0, "mean_final": drift, "var_final": math.inf if overflow else 0.0}
        case = {name: dict(entry) for name in exp.PIPELINES[1:]}
        case.update(layer_vs_float32=1e-7, float16_half_ulp=half_ulp, largest_variance=1e5)
        for name in ("float32", "tinynorm, float32 layer"):
            case[name] = {"mean_max": 1e-7, "var_max": 1e-7, "mean_final": 1e-7, "var_final": 1e-7}
        sim = {c: 1e-8 for c in exp.CASES}
        return {c: case for c in exp.CASES} | {"cuda_simulator": sim}

    assert [c["passed"] for c in exp.make_checks(analysis(0.1, 0.01, True))] == [True, True, True, True]
    assert [c["passed"] for c in exp.make_checks(analysis(0.005, 0.01, False))] == [False, False, True, True]
    failed = analysis(0.1, 0.01, True) | {"cuda_simulator": {"error": "no numba-cuda"}}
    assert exp.make_checks(failed)[3]["passed"] is False
