"""Tests for the experiments' shared statistics: a mean's standard error and a paired difference."""
import numpy as np
import pytest

from tinynorm.experiments.claims import mean_and_stderr, paired_difference


def test_mean_and_stderr_match_numpy():
    values = np.random.default_rng(0).normal(3.0, 2.0, size=7)
    mean, se = mean_and_stderr(list(values))
    assert mean == pytest.approx(values.mean()) and se == pytest.approx(values.std(ddof=1) / np.sqrt(7))
    assert mean_and_stderr([4.0]) == (4.0, 0.0)


def test_paired_difference_is_the_mean_and_stderr_of_the_differences():
    rng = np.random.default_rng(1)
    a = rng.normal(0.0, 10.0, size=5)
    b = a - rng.normal(1.0, 0.1, size=5)  # a shared spread of 10, a steady gap of about 1
    mean, se = paired_difference(list(a), list(b))
    assert mean == pytest.approx(np.mean(a - b)) and se == pytest.approx(np.std(a - b, ddof=1) / np.sqrt(5))
    assert se < 0.1 < np.hypot(a.std(ddof=1), b.std(ddof=1)) / np.sqrt(5)


def test_paired_difference_refuses_unequal_lengths():
    with pytest.raises(ValueError, match="equal lengths, got 2 and 3"):
        paired_difference([1.0, 2.0], [1.0, 2.0, 3.0])
