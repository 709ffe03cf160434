"""The residual-variance experiment: its quick run's records, and the measurement walking the stream."""
import json

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import tinynorm
from tinynorm.data import CharTokenizer, load_text_corpus
from tinynorm.experiments import residual_variance as exp


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("residual_variance")
    results = exp.run(out_dir, quick=True, progress=False)
    return out_dir, results, json.loads((out_dir / "residual_variance.json").read_text())


def test_writes_records_figure_and_checks(quick_run):
    out_dir, results, saved = quick_run
    assert (out_dir / "residual_variance.png").read_bytes().startswith(b"\x89PNG")
    assert saved["checks"] == results["checks"] and {c["id"] for c in results["checks"]} == exp.RESOLVED_IN_QUICK
    assert len(results["checks"]) + len(results["full_run_only"]) == 6
    st = exp.QUICK
    assert len(saved["init"]) == len(exp.MODELS) * len(exp.VARIANTS) * len(st.depths) * len(st.seeds)
    for record in saved["init"]:
        units = record["depth"] * (2 if record["model"] == "transformer" else 1)
        assert all(len(record[key]) == units for key in ("stream", "branch", "sum", "cov", "out"))
        # the stream's variance is the previous connection's output
        np.testing.assert_allclose(record["stream"][1:], record["out"][:-1], rtol=1e-12)
        if record["variant"] == "post":  # LayerNorm with gain 1: exactly unit mean square (up to eps)
            np.testing.assert_allclose(record["out"], 1.0, atol=0.02)
    assert len(saved["trained"]) == len(exp.MODELS) * len(exp.VARIANTS)
    for record in saved["trained"]:
        assert len(record["losses"]) == st.train_steps and record["losses"][-1] < record["losses"][0]


@pytest.mark.parametrize("model", exp.MODELS)
@pytest.mark.parametrize("variant", exp.VARIANTS)
def test_walking_the_residual_stream_reproduces_the_model(model, variant):
    """The profile's walk (stream input, then each connection's norm/branch/sum) is the model's forward."""
    ids = CharTokenizer(load_text_corpus(2000)).encode(load_text_corpus(2000))
    settings = exp.QUICK
    task = exp.Task(model, ids, int(ids.max()) + 1, settings.seq_len)
    inputs, _ = task.batch(np.random.default_rng(0), 2)
    tinynorm.manual_seed(0)
    net = exp.build(model, variant, 3, int(ids.max()) + 1, settings)
    kinds = {type(m).__name__ for m in net.modules()}
    assert ("LayerNorm" in kinds) == (variant != "none")
    profile = exp.variance_profile(net, inputs)
    with tinynorm.no_grad():
        x = exp.stream_input(net, inputs)
        for unit in exp.residual_units(net):
            x = unit(x)
        np.testing.assert_allclose(net.head(net.final_norm(x)).numpy(), net(tinynorm.tensor(inputs)).numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert profile["out"][-1] == pytest.approx(exp.mean_square(x.numpy()), rel=1e-9)
    assert profile["kind"][:2] == (["MultiheadSelfAttention", "MLPBlock"] if model == "transformer"
                                   else ["MLPBlock", "MLPBlock"])


def test_formula_error_is_the_relative_cross_term():
    profile = {"stream": [2.0], "branch": [1.0], "sum": [3.6]}  # E[xF] = 0.3
    assert exp.formula_error(profile) == [pytest.approx(0.2)]
    assert exp.linear_fit_r2([1.0, 2.0, 3.0, 4.0]) == pytest.approx(1.0)
    assert exp.spread_by_kind([1.0, 10.0, 2.0, 20.0], ["a", "b", "a", "b"]) == 2.0


def test_only_cpu_is_supported():
    with pytest.raises(ValueError, match="device='cuda'"):
        exp.run("unused", quick=True, device="cuda")
