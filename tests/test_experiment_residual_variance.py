"""The residual-variance experiment: its quick run's records, and the measurement walking the stream."""
import numpy as np
import pytest

pytest.importorskip("matplotlib")

import tinynorm
from tinynorm.data import CharTokenizer, load_text_corpus
from tinynorm.experiments import residual_variance as exp

from experiment_runs import quick_run_with_raw


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("residual_variance")
    return (out_dir, *quick_run_with_raw(exp, out_dir, "residual_variance"))


def test_writes_records_figure_and_checks(quick_run):
    out_dir, results, raw, saved = quick_run
    assert (out_dir / "residual_variance.png").read_bytes().startswith(b"\x89PNG")
    assert {c["id"] for c in results["checks"]} == exp.RESOLVED_IN_QUICK
    assert len(results["checks"]) + len(results["full_run_only"]) == 6
    st = exp.QUICK
    assert len(raw["init"]) == len(exp.MODELS) * len(exp.VARIANTS) * len(st.depths) * len(st.seeds)
    for record in raw["init"]:
        units = record["depth"] * (2 if record["model"] == "transformer" else 1)
        assert all(len(record[key]) == units for key in ("stream", "branch", "sum", "cov", "out"))
        # the stream's variance is the previous connection's output
        np.testing.assert_allclose(record["stream"][1:], record["out"][:-1], rtol=1e-12)
        if record["variant"] == "post":  # LayerNorm with gain 1: exactly unit mean square (up to eps)
            np.testing.assert_allclose(record["out"], 1.0, atol=0.02)
    assert len(raw["trained"]) == len(exp.MODELS) * len(exp.VARIANTS)
    for record in raw["trained"]:
        assert len(record["losses"]) == st.train_steps and record["losses"][-1] < record["losses"][0]
    # the record keeps the deepest stack's profile (first seed) and the trained one, per model and variant
    assert set(saved["profiles"]) == {f"{m}/{v}" for m in exp.MODELS for v in exp.VARIANTS}
    deepest = next(r for r in raw["init"] if r["model"] == "mlp" and r["variant"] == "none"
                   and r["depth"] == max(st.depths))
    kept = saved["profiles"]["mlp/none"]["init"]
    np.testing.assert_allclose(kept["sum"], deepest["sum"], rtol=1e-3)
    np.testing.assert_allclose(kept["predicted"], np.add(deepest["stream"], deepest["branch"]), rtol=1e-3)


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


def test_an_empty_seed_list_is_refused_before_any_work():
    with pytest.raises(ValueError, match="residual_variance.run: seeds must name at least one seed"):
        exp.run("unused", quick=True, seeds=[])
