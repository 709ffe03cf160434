"""The LSTM vs LayerNorm-LSTM experiment: its quick run's records, and the measurements it is built on."""
import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import tinynorm
from tinynorm.experiments import rnn_layernorm as exp

from experiment_runs import quick_run_with_raw


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("rnn_layernorm")
    return (out_dir, *quick_run_with_raw(exp, out_dir, "rnn_layernorm"))


def test_writes_records_figure_and_checks(quick_run):
    out_dir, results, raw, saved = quick_run
    assert (out_dir / "rnn_layernorm.png").read_bytes().startswith(b"\x89PNG")
    assert saved["full_run_only"] == results["full_run_only"]
    assert {c["id"] for c in results["checks"]} == exp.RESOLVED_IN_QUICK
    assert len(results["checks"]) + len(results["full_run_only"]) == 5
    assert "Checks" in (out_dir / "rnn_layernorm.md").read_text()
    st = exp.QUICK
    assert sorted((r["cell"], r["seed"]) for r in raw["runs"]) == [("layernorm_lstm", 0), ("lstm", 0)]
    for run in raw["runs"]:
        assert len(run["train_losses"]) == st.steps and all(math.isfinite(v) for v in run["train_losses"])
        first, last = run["validation"][0][1], run["validation"][-1][1]
        assert last < first - 0.5  # both models learn the characters' statistics and more
        for stage in ("init", "trained"):
            assert len(run[stage]["scale"]["h"]) == st.long_len and len(run[stage]["gradient"]) == st.grad_len
            assert run[stage]["gradient_relative"][-1] == 1.0
    # the record: every run's outcome; the first seed's curves, thinned to the figure's resolution
    assert [(r["cell"], r["seed"]) for r in saved["runs"]] == [(r["cell"], r["seed"]) for r in raw["runs"]]
    assert all("train_losses" not in r for r in saved["runs"])
    lstm = next(r for r in raw["runs"] if r["cell"] == "lstm")
    curve = saved["first_seed"]["lstm"]["trained"]
    assert len(curve["h"]) == len(curve["steps"]) == min(st.long_len, exp.CURVE_POINTS)
    assert curve["steps"][0] == 0 and curve["steps"][-1] == st.long_len - 1
    np.testing.assert_allclose(curve["h"], np.array(lstm["trained"]["scale"]["h"])[curve["steps"]], rtol=1e-3)


def test_gradient_at_the_last_step_is_the_heads_backward():
    """d loss_T / d h_T for the summed cross-entropy is W_head^T (softmax - one_hot) per example."""
    tinynorm.manual_seed(0)
    model = exp.CharRNN(vocab=7, embedding=4, hidden=5, cell="layernorm_lstm").double()
    rng = np.random.default_rng(0)
    inputs, targets = rng.integers(0, 7, (3, 6)), rng.integers(0, 7, (3, 6))
    norms = exp.gradient_through_time(model, inputs, targets)
    h_last = model.unroll(inputs)[-1][0]
    logits = model.head(h_last).numpy()
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(3), targets[:, -1]] -= 1
    expected = np.linalg.norm(p @ model.head.weight.numpy(), axis=1).mean()
    assert norms[-1] == pytest.approx(expected, rel=1e-10)
    assert len(norms) == 6 and all(g > 0 for g in norms)
    assert all(p.grad is None for p in model.parameters())  # the measurement leaves no gradients behind


def test_state_scales_are_the_rms_of_the_states():
    tinynorm.manual_seed(1)
    model = exp.CharRNN(vocab=5, embedding=3, hidden=4, cell="lstm")
    ids = np.random.default_rng(1).integers(0, 5, (2, 4))
    scales = exp.state_scales(model, ids)
    h, c = model.unroll(ids)[2]
    assert scales["h"][2] == pytest.approx(float(np.sqrt(np.mean(h.numpy().astype(np.float64) ** 2))))
    assert scales["c"][2] == pytest.approx(float(np.sqrt(np.mean(c.numpy().astype(np.float64) ** 2))))


def test_checks_judge_the_stated_thresholds():
    def analysis(spread, grad_ln, grad_lstm, loss_ln, loss_lstm):
        def entry(grad, loss, s):
            stage = {"spread_h": [s, s], "spread_c": [s, s], "log10_gradient_first": grad}
            return {"final_validation": loss, "init": stage, "trained": stage}
        return {"lstm": entry(grad_lstm, loss_lstm, 2.0), "layernorm_lstm": entry(grad_ln, loss_ln, spread)}

    good = exp.make_checks(analysis(1.2, [-1.0, -1.1], [-5.0, -5.2], [1.5, 1.6], [2.0, 2.1]))
    assert [c["passed"] for c in good] == [True, True, True, True, True]
    bad = exp.make_checks(analysis(1.6, [-5.0, -5.1], [-1.0, -1.2], [2.0, 2.2], [2.0, 1.8]))
    assert [c["passed"] for c in bad] == [False, True, False, False, False]
    assert [c["id"] for c in good] == ["scale", "scale_vs_lstm", "gradient_init", "gradient_trained", "convergence"]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="cell must be one of"):
        exp.CharRNN(5, 3, 4, "gru")
    with pytest.raises(ValueError, match="rnn_layernorm.run: seeds must name at least one seed"):
        exp.run("unused", quick=True, seeds=[])
