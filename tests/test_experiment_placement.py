"""Tests for the Pre-LN vs Post-LN experiment: the gradient-norm tools, and the phenomenon in quick mode."""
import json
import math

import numba
import numpy as np
import pytest

pytest.importorskip("matplotlib")

import tinynorm as tn
from tinynorm import nn
from tinynorm.data import CharTokenizer, load_text_corpus
from tinynorm.experiments import common
from tinynorm.experiments import placement as exp
from tinynorm.models import ResidualMLP, TinyTransformerLM


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("placement")
    results = exp.run(out_dir, quick=True, progress=False)
    return out_dir, results, json.loads((out_dir / "placement.json").read_text())


def tiny_lm(placement, dtype=None):
    tn.manual_seed(3)
    model = TinyTransformerLM(vocab=11, d_model=8, n_heads=2, n_layers=3, block_size=6, placement=placement)
    return model.to(dtype=dtype) if dtype is not None else model


def lm_batch(batch=3, length=6, vocab=11):
    rng = np.random.default_rng(0)
    return rng.integers(0, vocab, (batch, length)), rng.integers(0, vocab, (batch, length))


# ------------------------------------------------------------------------------------------ the tools


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_layer_gradient_norms_match_a_direct_computation(placement):
    model = tiny_lm(placement)
    x, y = lm_batch()
    norms = exp.layer_gradient_norms(model, x, y)
    assert norms["ffn_w2"].shape == norms["block"].shape == (3,)

    logits = model(tn.tensor(x))
    tn.nn.functional.cross_entropy(logits.reshape(-1, 11), tn.tensor(y).reshape(-1)).backward()
    for i, block in enumerate(model.blocks):
        w2 = block[1].sublayer[2].weight.grad.numpy().astype(np.float64)  # Residual(MLP) -> MLPBlock[2]
        assert norms["ffn_w2"][i] == pytest.approx(np.sqrt(np.sum(w2**2)), rel=1e-5)
        matrices = [p.grad.numpy().astype(np.float64) for p in block.parameters() if p.ndim == 2]
        assert len(matrices) == 4  # qkv, proj, and the MLP's two Linears
        assert norms["block"][i] == pytest.approx(np.sqrt(sum(np.sum(g**2) for g in matrices)), rel=1e-5)


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_w2_gradient_norm_is_the_directional_derivative_along_the_gradient(placement):
    # Independent of autograd: moving W2 of layer i by h along its unit gradient u changes the loss
    # by h * ||grad||, so a central difference recovers each layer's norm, in layer order.
    model = tiny_lm(placement, dtype=tn.float64)
    x, y = lm_batch()
    norms = exp.layer_gradient_norms(model, x, y)["ffn_w2"]
    model.zero_grad()
    exp.loss_of(model, x, y).backward()
    h = 1e-5
    for i, weight in enumerate(exp.feedforward_weights(model)):
        direction = weight.grad.numpy() / np.linalg.norm(weight.grad.numpy())
        original = weight.array.copy()
        losses = []
        for sign in (1, -1):
            weight.array = original + sign * h * direction
            with tn.no_grad():
                losses.append(exp.loss_of(model, x, y).item())
        weight.array = original
        assert (losses[0] - losses[1]) / (2 * h) == pytest.approx(norms[i], rel=1e-6)


def test_per_example_norms_average_single_example_gradients():
    model = tiny_lm("pre")
    x, y = lm_batch(batch=3)
    averaged = exp.per_example_gradient_norms(model, x, y)
    singles = [exp.layer_gradient_norms(model, x[i:i + 1], y[i:i + 1]) for i in range(3)]
    for key in ("ffn_w2", "block"):
        # float32 gradients: numpy's sums round differently with the arrays' memory alignment, run to run
        np.testing.assert_allclose(averaged[key], np.mean([s[key] for s in singles], axis=0), rtol=1e-5)
    # the norm of the batch-mean gradient is at most the mean of the per-example norms (triangle inequality)
    assert np.all(exp.layer_gradient_norms(model, x, y)["ffn_w2"] <= averaged["ffn_w2"] * (1 + 1e-6))


def test_gradient_norms_work_for_the_residual_mlp_and_leave_no_gradients_behind():
    tn.manual_seed(0)
    model = ResidualMLP(in_features=5, d=6, depth=4, num_classes=3, placement="post")
    x = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)
    norms = exp.layer_gradient_norms(model, x, np.arange(7) % 3)
    assert norms["ffn_w2"].shape == (4,) and np.all(norms["ffn_w2"] > 0)
    assert all(p.grad is None for p in model.parameters())


def test_feedforward_weights_rejects_blocks_without_one_mlp():
    model = nn.Module()
    model.blocks = nn.ModuleList([nn.Linear(2, 2)])
    with pytest.raises(ValueError, match="block 0 holds 0 MLPBlocks"):
        exp.feedforward_weights(model)


def test_loglog_slope_recovers_a_power_law():
    depths = np.array([2, 4, 8, 16])
    assert exp.loglog_slope(depths, 3.0 / np.sqrt(depths)) == pytest.approx(-0.5)
    assert exp.loglog_slope(depths, np.full(4, 2.0)) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("losses, final, gain, expected", [
    ([4.6, 4.0, float("nan")], 3.0, 0.2, "diverged"),  # a non-finite training loss
    ([4.6, 5.0, 5.2], 5.1, -1.9, "diverged"),  # final above initial (4.7)
    ([4.6, 3.3, 3.2], 3.20, 0.05, "stalled"),  # beats the unigram predictor by less than 2 standard errors
    ([4.6, 3.0, 2.8], 3.15, 0.10, "trained"),
])
def test_classify(losses, final, gain, expected):
    assert exp.classify(losses, initial=4.7, final=final, gain=gain, gain_stderr=0.03) == expected


def test_unigram_window_losses_are_the_frequencies_cross_entropy():
    ids = np.array([0, 0, 0, 1, 2, 2, 0, 1])  # frequencies 1/2, 1/4, 1/4
    targets = np.array([[0, 1], [2, 2]])
    expected = [-(np.log(0.5) + np.log(0.25)) / 2, -np.log(0.25)]
    np.testing.assert_allclose(exp.unigram_window_losses(ids, targets), expected)
    # averaged over the whole corpus as targets, it is the unigram entropy
    assert exp.unigram_window_losses(ids, ids[None, :])[0] == pytest.approx(exp.unigram_entropy_of(ids))


def test_fractions_of_pre_ln_compare_gains_with_the_pre_ln_run_of_the_same_seed():
    def run(placement, warmup, seed, gain, outcome="trained"):
        return {"depth": 6, "lr": 1e-3, "placement": placement, "warmup": warmup, "seed": seed, "gain": gain,
                "outcome": outcome}

    training = [run("pre", False, 0, 1.0), run("pre", False, 1, 0.8), run("post", False, 0, 0.2),
                run("post", False, 1, 0.6), run("post", True, 0, 0.9, "diverged")]
    exp.add_fractions_of_pre_ln(training)
    assert [r["fraction_of_pre_ln"] for r in training[:4]] == pytest.approx([1.0, 1.0, 0.2, 0.75])
    assert math.isnan(training[4]["fraction_of_pre_ln"])
    assert [exp.learns_enough(r) for r in training] == [True, True, False, True, False]


def test_gradient_norms_and_stream_measure_each_blocks_output():
    model = tiny_lm("pre")
    x, y = lm_batch()
    norms, stream = exp.gradient_norms_and_stream(model, x, y)
    np.testing.assert_allclose(norms, exp.layer_gradient_norms(model, x, y)["ffn_w2"], rtol=1e-6)
    # the residual stream by hand: embeddings, then each block in turn (gpt2 init: learned positions)
    with tn.no_grad():
        h = model.token_embedding(tn.tensor(x)) + model.position_embedding.weight[:x.shape[1]]
        expected = []
        for block in model.blocks:
            h = block(h)
            expected.append(np.sqrt(np.mean(h.numpy().astype(np.float64) ** 2)))
    np.testing.assert_allclose(stream, expected, rtol=1e-6)
    assert "forward" not in model.blocks[0].__dict__  # the hooks are gone
    # Post-LN's stream leaves every block through a fresh LayerNorm (weight 1, bias 0): RMS 1
    _, post_stream = exp.gradient_norms_and_stream(tiny_lm("post"), x, y)
    np.testing.assert_allclose(post_stream, 1.0, atol=1e-3)


def test_forward_hooks_see_every_call_and_leave_nothing_behind():
    layer = nn.Linear(3, 2)
    seen = []
    with common.forward_hooks([layer], lambda module, args, output: seen.append((module, args[0], output))):
        x = tn.ones(4, 3)
        out = layer(x)
    assert len(seen) == 1 and seen[0][0] is layer and seen[0][1] is x and seen[0][2] is out
    layer(x)
    assert len(seen) == 1 and not layer._forward_hooks


def test_evaluate_returns_mean_and_standard_error_over_windows():
    model = tiny_lm("post")
    x, y = lm_batch(batch=4)
    mean, stderr = exp.evaluate(model, x, y)
    per_window = [exp.loss_of(model, x[i:i + 1], y[i:i + 1]).item() for i in range(4)]
    assert mean == pytest.approx(np.mean(per_window), rel=1e-5)
    assert stderr == pytest.approx(np.std(per_window, ddof=1) / 2, rel=1e-4)


def test_single_threaded_restores_the_thread_count():
    before = numba.get_num_threads()
    with common.single_threaded():
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == before


# ------------------------------------------------------------------------------------------ the phenomenon


def test_writes_json_markdown_and_figures(quick_run):
    out_dir, results, saved = quick_run
    names = ("placement_grad_norms.png", "placement_depth.png", "placement_profile.png", "placement_training.png")
    for name in names:
        png = (out_dir / name).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert sorted(results["figures"]) == sorted(str(out_dir / n) for n in names)
    assert saved["summary"] == results["summary"] and saved["checks"] == results["checks"]
    assert all(isinstance(c["claim"], str) and isinstance(c["passed"], bool) for c in results["checks"])
    text = (out_dir / "placement.md").read_text()
    for needle in ("PASS", "8.45 BLEU", "What matched", "Did not match"):
        assert needle in text
    assert {r["depth"] for r in saved["init"]} == set(exp.QUICK.depths)
    assert all(len(r["ffn_w2_example"]) == r["depth"] for r in saved["init"])


@pytest.mark.parametrize("model", ["transformer", "mlp"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_post_over_pre_last_layer_ratio_grows_with_depth(quick_run, model, norm):
    _, _, saved = quick_run
    ratios = exp.post_pre_ratios(saved["init"], model, norm)
    # theory: ~ sqrt(L), a factor 2 from L=2 to L=8; measured ~2.5-2.7
    assert ratios[-1] > 1.5 * ratios[0]


@pytest.mark.parametrize("model", ["transformer", "mlp"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_pre_ln_last_layer_gradient_shrinks_with_depth(quick_run, model, norm):
    _, _, saved = quick_run
    depths, values = exp.last_layer(saved["init"], model, norm, "pre")
    assert values[-1] < 0.8 * values[0]  # theory: sqrt(2 / 8) = 0.5
    slope = exp.loglog_slope(depths, values)
    assert -1.0 < slope < -0.2


def test_training_runs_are_recorded_and_classified(quick_run):
    _, _, saved = quick_run
    tokenizer = CharTokenizer(load_text_corpus())
    q = exp.QUICK
    assert len(saved["training"]) == len(exp.TRAINING_ARMS) * len(q.train_depths) * len(q.train_lrs) * q.train_seed_count
    eval_x, eval_y = exp.language_task(tokenizer.encode(load_text_corpus()), tokenizer.vocab_size, q.train_d_model,
                                       q.train_heads, q.seq_len).sample(np.random.default_rng(exp.EVAL_SEED),
                                                                        exp.EVAL_WINDOWS)
    unigram = exp.unigram_window_losses(tokenizer.encode(load_text_corpus()), eval_y).mean()
    for r in saved["training"]:
        assert r["outcome"] in ("trained", "stalled", "diverged")
        assert len(r["losses"]) == q.train_steps or r["outcome"] == "diverged"
        assert r["initial_loss"] == pytest.approx(math.log(tokenizer.vocab_size), rel=0.15)  # near-uniform at init
        assert r["unigram_loss"] == pytest.approx(unigram)
        assert r["gain"] == pytest.approx(r["unigram_loss"] - r["final_loss"])


def test_profile_at_the_papers_width_is_recorded_per_init_depth_and_placement(quick_run):
    _, _, saved = quick_run
    keys = {(r["init"], r["depth"], r["placement"]) for r in saved["profile"]}
    assert keys == {(i, d, p) for i in exp.INITS for d in exp.QUICK.profile_depths for p in exp.PLACEMENTS}
    for r in saved["profile"]:
        assert len(r["ffn_w2"]) == len(r["stream_rms"]) == r["depth"]
        assert len(r["last_over_first"]) == len(r["stream_prediction"]) == len(saved["seeds"])


def test_quick_mode_judges_only_the_depth_scaling(quick_run):
    _, results, _ = quick_run
    assert {c["id"] for c in results["checks"]} == exp.QUICK_CLAIMS
    left = {c["id"] for c in results["full_run_only"]}
    assert any(i.startswith("profile.") for i in left) and any(i.startswith("training.") for i in left)


def test_loss_gap_pairs_seeds_and_falls_back_to_window_errors():
    worse = [{"final_loss": 3.0, "final_loss_stderr": 0.03}, {"final_loss": 3.2, "final_loss_stderr": 0.03}]
    better = [{"final_loss": 2.5, "final_loss_stderr": 0.04}, {"final_loss": 2.9, "final_loss_stderr": 0.04}]
    gap, error = exp.loss_gap(worse, better)
    assert gap == pytest.approx(0.4) and error == pytest.approx(np.std([0.5, 0.3], ddof=1) / np.sqrt(2))
    gap, error = exp.loss_gap(worse[:1], better[:1])
    assert gap == pytest.approx(0.5) and error == pytest.approx(0.05)
