"""Tests for the batch-size experiment (Wu & He 2018): the phenomenon, the two BatchNorm mistakes, and
the bookkeeping (learning-rate scaling, samples seen, error tables, copies of models)."""
import json

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")

import tinynorm as tn
from tinynorm.experiments import batch_size as exp
from tinynorm.experiments.common import run_jobs


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("batch_size")
    return out_dir, exp.run(out_dir, quick=True, progress=False)


def errors_of(results, norm):
    return results["errors"]["digits-mlp"][norm]


def test_writes_json_png_and_markdown(quick_run):
    out_dir, results = quick_run
    saved = json.loads((out_dir / "batch_size.json").read_text())
    assert saved["summary"] == results["summary"]
    assert saved["checks"] == results["checks"]
    assert len(saved["runs"]) == len(results["runs"]) == 2 * 2 * len(exp.QUICK.seeds)
    assert "numba" in saved["environment"]
    for name in ("batch_size.png", "batch_size_statistics.png"):
        png = (out_dir / name).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert results["figures"] == [str(out_dir / "batch_size.png"), str(out_dir / "batch_size_statistics.png")]
    markdown = (out_dir / "batch_size.md").read_text()
    assert markdown.count("- PASS: ") + markdown.count("- FAIL: ") == len(results["checks"])
    assert markdown.count("- full run only: see docs/experiments.md: ") == len(results["full_run_only"])
    assert "34.7" in markdown  # the published numbers sit next to ours
    assert (saved["settings"]["training_processes"], saved["settings"]["threads_per_process"]) == (1, 1)
    assert "the trainings in 1 process(es) of 1 thread each" in markdown
    assert all(isinstance(line, str) and line for line in results["summary"])


def test_batchnorm_breaks_at_batch_2_in_every_seed(quick_run):
    _, results = quick_run
    bn = errors_of(results, "batchnorm")
    assert bn["2"]["mean"] >= 2 * bn["32"]["mean"]
    assert bn["2"]["mean"] >= bn["32"]["mean"] + 5  # points
    for small, large in zip(bn["2"]["per_seed"], bn["32"]["per_seed"]):
        assert small > large + 3


def test_layernorm_does_not_care_about_the_batch_size(quick_run):
    _, results = quick_run
    ln = errors_of(results, "layernorm")
    assert abs(ln["2"]["mean"] - ln["32"]["mean"]) <= 2.0
    assert ln["32"]["mean"] <= 6.0  # and it trains well: the flat line is not a flat failure
    assert errors_of(results, "batchnorm")["2"]["mean"] >= ln["2"]["mean"] + 5


def test_train_mode_evaluation_depends_on_the_batch(quick_run):
    _, results = quick_run
    mistake = results["mistakes"]["train_mode"]
    assert mistake["train_mode_error_batch_2"] >= mistake["eval_mode_error"] + 10
    assert mistake["images_with_varying_prediction"]["train"] >= mistake["probes"] // 2
    assert mistake["images_with_varying_prediction"]["eval"] == 0  # the fix: model.eval()
    example = mistake["example"]
    assert len(example["predictions"]) >= 2 and sum(example["predictions"].values()) == mistake["companions"]


def test_stale_statistics_hurt_and_recomputing_them_restores_accuracy(quick_run):
    _, results = quick_run
    mistakes = results["mistakes"]
    stale = mistakes["stale_statistics"]
    assert (mistakes["model"], mistakes["norm"], mistakes["batch_size"]) == ("digits-cnn", "batchnorm", 32)
    # every number refers to the same trained model (the copies carry its weights and statistics)
    assert stale["trained_error"] == mistakes["test_error"] == mistakes["train_mode"]["eval_mode_error"]
    assert stale["trained_error"] <= 5.0  # a well-trained model to start from
    assert stale["stale_error"] >= 3 * stale["trained_error"] + 10
    assert abs(stale["recomputed_error"] - stale["trained_error"]) <= 1.0


def test_every_batch_size_sees_the_same_samples_at_a_linearly_scaled_lr(quick_run):
    _, results = quick_run
    n_train = len(exp.load_data()[0])
    for run in results["runs"]:
        batch = run["batch_size"]
        assert run["samples_seen"] == exp.QUICK.epochs["digits"] * (n_train - n_train % batch)
        assert run["lr"] == pytest.approx(exp.QUICK.base_lr * batch / 32)
    assert all(check["passed"] for check in results["checks"]), results["checks"]


def test_scaled_lr_and_steps_per_epoch():
    assert exp.scaled_lr(0.1, 32) == pytest.approx(0.1)
    assert exp.scaled_lr(0.1, 2) == pytest.approx(0.00625)
    assert exp.steps_per_epoch(1347, 2) == 673
    assert exp.steps_per_epoch(1347, 32) == 42
    assert exp.steps_per_epoch(64, 64) == 1
    for bad in (0, 65):
        with pytest.raises(ValueError, match="batch_size"):
            exp.steps_per_epoch(64, bad)


def test_error_table_matches_numpy():
    runs = [{"model": "cnn", "norm": "groupnorm", "batch_size": 2, "seed": s, "test_error": e}
            for s, e in enumerate([1.0, 2.5, 4.0])]
    cell = exp.error_table(runs)["cnn"]["groupnorm"]["2"]
    assert cell["per_seed"] == [1.0, 2.5, 4.0]
    assert cell["mean"] == pytest.approx(2.5) and cell["std"] == pytest.approx(np.std([1.0, 2.5, 4.0]))


def mechanism_cell(running, batch, momenta):
    """An analysis cell whose per-seed errors are given, as batch_norm_analysis builds it."""
    return {"errors": {"running": exp._mean_sem(running), "batch": exp._mean_sem(batch),
                       "recomputed": exp._mean_sem(running)},
            "momentum": {m: exp._mean_sem(v) for m, v in momenta.items()}}


@pytest.mark.parametrize("offsets, holds", [([1.5, 1.6, 1.4], True), ([4.0, -1.0, 1.5], False)])
def test_discrepancy_and_momentum_claims_pair_the_seeds(offsets, holds):
    # Seeds spread by 20 points: only the paired difference sees a steady 1.5-point gain.
    base = [10.0, 30.0, 50.0]
    better = [b - o for b, o in zip(base, offsets)]
    cell = mechanism_cell(base, better, {"0.1": base, "0.3": better, "0.6": base})
    found = {c["id"]: c for c in exp.mechanism_checks({}, {"m": {"2": cell, "8": cell, "32": cell}}, "2", "32")}
    gain, se = np.mean(offsets), np.std(offsets, ddof=1) / np.sqrt(len(offsets))
    assert found["m.train_eval_discrepancy"]["passed"] is holds
    assert found["m.momentum_at_8"]["passed"] is holds
    assert f"paired difference {gain:+.2f} +- {se:.2f}" in found["m.train_eval_discrepancy"]["claim"]


def test_a_gain_of_one_test_image_is_not_a_significant_momentum_effect():
    # Every seed gains exactly one digits image (0.22 points): the paired standard error is 0, but the
    # gain is below MIN_POINTS, so the rule of thumb is not confirmed.
    base = [2.0, 2.5, 3.0]
    better = [b - 100 / 450 for b in base]
    cell = mechanism_cell(base, base, {"0.1": base, "0.3": better})
    found = {c["id"]: c for c in exp.mechanism_checks({}, {"m": {"2": cell, "8": cell, "32": cell}}, "2", "32")}
    assert found["m.momentum_at_8"]["passed"] is False


def test_a_fall_in_error_is_written_with_its_minus_sign():
    cells = {"2": exp._mean_sem([1.0, 1.2, 0.8]), "4": exp._mean_sem([1.0, 1.2, 0.8]),
             "32": exp._mean_sem([1.4, 1.3, 1.5])}
    errors = {"m": {"batchnorm": cells}}
    mistakes = {"train_mode": {"train_mode_error_batch_2": 20.0, "eval_mode_error": 1.0, "probes": 40,
                               "images_with_varying_prediction": {"train": 30, "eval": 0}},
                "stale_statistics": {"trained_error": 1.0, "stale_error": 60.0, "recomputed_error": 1.0}}
    found = {c["id"]: c for c in exp.checks(errors, {}, mistakes, exp.FULL)}
    assert "(-0.40 +- " in found["m.batchnorm_degrades"]["claim"] and "+-0.40" not in found["m.batchnorm_degrades"]["claim"]
    assert "-0.40 +- " in found["m.batchnorm_gradual"]["claim"]


def test_clone_without_buffers_keeps_weights_and_resets_running_statistics():
    tn.manual_seed(0)
    model = exp.make_model("digits-mlp", "batchnorm")
    model.train()
    with tn.no_grad():
        model(tn.tensor(np.random.default_rng(0).normal(3.0, 2.0, size=(16, 64)).astype(np.float32)))
    full = exp.clone(model, "digits-mlp", "batchnorm", 16)
    weights_only = exp.clone(model, "digits-mlp", "batchnorm", 16, buffers=False)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(full.state_dict()[name].numpy(), value.numpy())
    for name, param in model.named_parameters():
        np.testing.assert_array_equal(weights_only.state_dict()[name].numpy(), param.numpy())
    norm = weights_only[2]
    assert not np.allclose(model[2].running_mean.numpy(), 0.0)
    np.testing.assert_array_equal(norm.running_mean.numpy(), 0.0)
    np.testing.assert_array_equal(norm.running_var.numpy(), 1.0)
    assert not full.training and not weights_only.training


def test_bad_arguments_are_rejected_before_any_training(tmp_path):
    with pytest.raises(TypeError, match="seeds"):
        exp.run(tmp_path, seeds=[])
    with pytest.raises(ValueError, match="model kind"):
        exp.make_model("resnet", "batchnorm")
    with pytest.raises(ValueError, match="dataset"):
        exp.load_data("cifar")


def test_quick_mode_judges_only_its_resolvable_claims(quick_run):
    _, results = quick_run
    assert {c["id"] for c in results["checks"]} == exp.QUICK_CLAIMS
    assert results["full_run_only"] and not exp.QUICK_CLAIMS & {c["id"] for c in results["full_run_only"]}


def test_batch_norm_analysis_of_the_quick_runs(quick_run):
    _, results = quick_run
    cells = results["analysis"]["digits-mlp"]
    assert set(cells) == {"2", "32"}
    for batch, cell in cells.items():
        assert cell["min_values"] == int(batch)  # an MLP's statistic pools one value per sample
        assert cell["min_n_eff"] == pytest.approx(int(batch))  # one value per sample and feature: n_eff = B
        assert set(cell["momentum"]) == {str(m) for m in exp.MOMENTA}
        # the running statistics of momentum 0.1 are the ones the model kept: the same test error
        assert cell["momentum"]["0.1"]["mean"] == pytest.approx(cell["errors"]["running"]["mean"])


def tiny_bn_mlp():
    tn.manual_seed(0)
    return tn.nn.Sequential(tn.nn.Linear(5, 8), tn.nn.BatchNorm1d(8), tn.nn.ReLU(), tn.nn.Linear(8, 3),
                            tn.nn.BatchNorm1d(3))


def test_recorded_batch_statistics_are_those_batchnorm_normalizes_with():
    model = tiny_bn_mlp().train()
    x = np.random.default_rng(0).normal(2.0, 3.0, size=(6, 5)).astype(np.float32)
    with exp.recorded_batch_statistics(model) as records:
        model(tn.tensor(x))
        model.eval()
        model(tn.tensor(x))  # running statistics in eval mode: nothing to record
    assert [len(layer) for layer in records] == [1, 1]
    hidden = x.astype(np.float64) @ model[0].weight.numpy().T.astype(np.float64) + model[0].bias.numpy()
    np.testing.assert_allclose(records[0][0]["mean"], hidden.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(records[0][0]["var"], hidden.var(axis=0, ddof=1), rtol=1e-4)
    assert records[0][0]["values"] == 6
    assert "forward" not in model[1].__dict__  # the layers' own forward is back


def test_running_averages_reproduce_batchnorm_running_statistics_for_every_momentum():
    # Training does not depend on the momentum: models trained with momentum m keep exactly the
    # running statistics RunningAverages computes for m from one run with the default.
    rng = np.random.default_rng(1)
    X = rng.normal(1.0, 2.0, size=(40, 5)).astype(np.float32)
    y = rng.integers(0, 3, 40)
    reference = tiny_bn_mlp()
    with exp.recorded_batch_statistics(reference) as records:
        averages = exp.RunningAverages(records, (0.1, 0.5))
        exp.train(reference, X, y, batch_size=4, lr=0.05, epochs=2, seed=0, after_step=averages.update)
    for momentum in (0.1, 0.5):
        trained = tiny_bn_mlp()
        for layer in exp.batch_norm_layers(trained):
            layer.momentum = momentum
        exp.train(trained, X, y, batch_size=4, lr=0.05, epochs=2, seed=0)
        applied = averages.apply(tiny_bn_mlp(), momentum)
        for kept, computed in zip(exp.batch_norm_layers(trained), exp.batch_norm_layers(applied)):
            np.testing.assert_allclose(computed.running_mean.numpy(), kept.running_mean.numpy(), rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(computed.running_var.numpy(), kept.running_var.numpy(), rtol=1e-4, atol=1e-6)
    with pytest.raises(RuntimeError, match="no batch statistics"):
        exp.RunningAverages([[]], (0.1,)).apply(tiny_bn_mlp(), 0.1)


def test_effective_values_count_correlated_neighbours_once():
    # Positions that all carry the same value are worth one value per sample: n_eff = B, not B x 16;
    # independent positions are worth all B x 16.
    tn.manual_seed(0)
    conv = tn.nn.Sequential(tn.nn.Conv2d(1, 3, 1), tn.nn.BatchNorm2d(3))
    rng = np.random.default_rng(2)
    constant = np.broadcast_to(rng.normal(size=(1000, 1, 1, 1)), (1000, 1, 4, 4)).astype(np.float32)
    (layer,) = exp.statistics_noise(conv, constant, batch_size=8, batches=400)
    assert layer["values"] == 8 * 16 and layer["n_eff"] == pytest.approx(8.0, rel=1e-4)
    # what the layer sees: the batch mean of 8 independent values spreads by 1/sqrt(8) of the std
    assert layer["mean_spread"] == pytest.approx(8 ** -0.5, rel=0.15)
    (layer,) = exp.statistics_noise(conv, rng.normal(size=(1000, 1, 4, 4)).astype(np.float32), batch_size=8,
                                    batches=400)
    assert layer["n_eff"] == pytest.approx(128.0, rel=0.15)
    assert layer["mean_spread"] == pytest.approx(128 ** -0.5, rel=0.15)
    first, second = exp.statistics_noise(tiny_bn_mlp(), rng.normal(size=(500, 5)).astype(np.float32), batch_size=8)
    assert first["values"] == second["values"] == 8 and first["n_eff"] == pytest.approx(8.0)


def test_statistics_noise_leaves_the_model_as_it_was():
    model = tiny_bn_mlp().eval()
    before = {name: value.numpy().copy() for name, value in model.state_dict().items()}
    exp.statistics_noise(model, np.random.default_rng(4).normal(size=(50, 5)).astype(np.float32), batch_size=4,
                         batches=5)
    assert not model.training
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[name])


@pytest.mark.slow
def test_jobs_in_worker_processes_give_the_records_of_this_process():
    """The full run trains in one process per core: each job's record must not depend on where it ran
    (the float64 statistics up to the summation order numpy picks for an array's memory alignment)."""
    data = exp.load_data("digits")
    jobs = [("digits-mlp", "batchnorm", 32, 0, exp.QUICK, data, False),
            ("digits-mlp", "layernorm", 16, 1, exp.QUICK, data, False)]
    here = run_jobs(exp.train_job, jobs, workers=1, enabled=False)
    there = run_jobs(exp.train_job, jobs, workers=2, enabled=False, cost=exp._training_steps)
    for (record, mistakes), (other, other_mistakes) in zip(here, there):
        assert mistakes is None and other_mistakes is None
        assert record.pop("seconds") > 0 and other.pop("seconds") > 0
        assert {k: v for k, v in record.items() if k != "statistics"} == {k: v for k, v in other.items() if k != "statistics"}
        for layer, other_layer in zip(record.get("statistics", []), other.get("statistics", []), strict=True):
            assert layer.keys() == other_layer.keys()
            np.testing.assert_allclose([layer[k] for k in layer], [other_layer[k] for k in layer], rtol=1e-9)
    assert [record["norm"] for record, _ in there] == ["batchnorm", "layernorm"]  # in job order
