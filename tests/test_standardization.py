"""Tests for the input-standardization experiment: the phenomenon, and the tools that measure it."""

import json

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from tinynorm.experiments import standardization as exp


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("standardization")
    return out_dir, exp.run(out_dir, quick=True, seed=0)


def test_writes_json_and_png(quick_run):
    out_dir, results = quick_run
    saved = json.loads((out_dir / "standardization.json").read_text())
    assert saved["raw"]["condition_number"] == results["raw"]["condition_number"]
    assert saved["summary"] == results["summary"]
    png = (out_dir / "standardization.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert all(isinstance(line, str) and line for line in results["summary"])


def test_standardized_descent_needs_far_fewer_steps(quick_run):
    _, results = quick_run
    raw, std = results["raw"], results["standardized"]
    assert std["steps_to_target"] is not None
    assert std["steps_to_target"] == std["steps_to_target_closed_form"]  # the loop agrees with the formula
    assert raw["steps_to_target_closed_form"] >= 10 * std["steps_to_target"]
    # quick mode caps the raw loop at 20,000 steps, and it has not got there
    assert raw["steps_to_target"] is None and raw["final_loss"] > raw["target_loss"]
    assert results["step_ratio"] >= 10


def test_standardization_shrinks_condition_number_and_allows_larger_lr(quick_run):
    _, results = quick_run
    raw, std = results["raw"], results["standardized"]
    assert raw["condition_number"] > 1000 * std["condition_number"]
    assert std["lr_max_measured"] > 1000 * raw["lr_max_measured"]
    r = results["area_rooms_correlation"]
    assert std["condition_number"] == pytest.approx((1 + r) / (1 - r), rel=1e-9)


@pytest.mark.parametrize("case", ["raw", "standardized"])
def test_measured_stability_limit_is_two_over_lambda_max(quick_run, case):
    _, results = quick_run
    measured, theory = results[case]["lr_max_measured"], results[case]["lr_max_theory"]
    assert measured == pytest.approx(theory, rel=0.01)


def test_hessian_and_gradient_match_finite_differences():
    features, price = exp.make_flats(seed=3, n=30)
    problem = exp.LeastSquares.from_data(features / [100.0, 1.0], price)
    A = np.column_stack([features / [100.0, 1.0], np.ones(30)])
    theta = np.random.default_rng(0).normal(size=3)
    np.testing.assert_allclose(problem.loss(theta), np.mean((A @ theta - price) ** 2), rtol=1e-12)
    eps = 1e-5
    numeric = [
        (problem.loss(theta + eps * e) - problem.loss(theta - eps * e)) / (2 * eps) for e in np.eye(3)
    ]
    np.testing.assert_allclose(problem.gradient(theta), numeric, rtol=1e-6)
    np.testing.assert_allclose(problem.hessian, 2 * A.T @ A / 30, rtol=1e-12)
    np.testing.assert_allclose(problem.optimum(), np.linalg.lstsq(A, price, rcond=None)[0], rtol=1e-9)


def test_closed_form_step_count_matches_the_loop_on_an_ill_conditioned_problem():
    features, price = exp.make_flats(seed=1, n=50)
    problem = exp.LeastSquares.from_data(features / [10.0, 1.0], price)  # cond ~ 6e3: ~12,000 steps
    lr = 1.0 / np.linalg.eigvalsh(problem.hessian)[-1]
    target = 1.01 * problem.loss(problem.optimum())
    _, losses = exp.gradient_descent(problem, lr, 100_000, target)
    assert losses[-1] <= target < losses[-2]
    assert len(losses) - 1 == exp.steps_closed_form(problem, lr, target)
    assert np.all(np.diff(losses) <= 0)


def test_same_seed_same_results(tmp_path):
    first = exp.run(tmp_path / "a", quick=True, seed=5)
    second = exp.run(tmp_path / "b", quick=True, seed=5)
    assert first == second
