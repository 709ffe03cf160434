"""Tests for the batch-size experiment (Wu & He 2018): the phenomenon, the two BatchNorm mistakes, and
the bookkeeping (learning-rate scaling, samples seen, error tables, copies of models)."""
import json

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")

import tinynorm as tn
from tinynorm.experiments import batch_size as exp


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("batch_size")
    return out_dir, exp.run(out_dir, quick=True, progress=False)


def errors_of(results, norm):
    return results["errors"]["mlp"][norm]


def test_writes_json_png_and_markdown(quick_run):
    out_dir, results = quick_run
    saved = json.loads((out_dir / "batch_size.json").read_text())
    assert saved["summary"] == results["summary"]
    assert saved["checks"] == results["checks"]
    assert len(saved["runs"]) == len(results["runs"]) == 2 * 2 * len(exp.QUICK.seeds)
    assert "numba" in saved["environment"]
    png = (out_dir / "batch_size.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert results["figures"] == [str(out_dir / "batch_size.png")]
    markdown = (out_dir / "batch_size.md").read_text()
    assert markdown.count("PASS") + markdown.count("FAIL") == len(results["checks"])
    assert "34.7" in markdown  # the published numbers sit next to ours
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
    assert (mistakes["model"], mistakes["norm"], mistakes["batch_size"]) == ("cnn", "batchnorm", 32)
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
        assert run["samples_seen"] == exp.QUICK.epochs * (n_train - n_train % batch)
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


def test_clone_without_buffers_keeps_weights_and_resets_running_statistics():
    tn.manual_seed(0)
    model = exp.make_model("mlp", "batchnorm")
    model.train()
    with tn.no_grad():
        model(tn.tensor(np.random.default_rng(0).normal(3.0, 2.0, size=(16, 64)).astype(np.float32)))
    full, weights_only = exp.clone(model, "mlp", "batchnorm", 16), exp.clone(model, "mlp", "batchnorm", 16, buffers=False)
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
    with pytest.raises(ValueError, match="device"):
        exp.run(tmp_path, device="cuda")
    with pytest.raises(TypeError, match="seeds"):
        exp.run(tmp_path, seeds=[])
    with pytest.raises(ValueError, match="model kind"):
        exp.make_model("resnet", "batchnorm")
