"""The compact run records: rounding to significant digits and thinning curves."""
import math

import numpy as np
import pytest

from tinynorm.experiments.records import rounded, thinned


def test_rounded_keeps_significant_digits_through_nested_containers():
    value = {"a": [0.000123456789, 123456.789, (2.0, np.float32(1.23456789))], "b": "text", "c": 7, "d": True,
             "e": np.array([1.0 / 3, 2.0 / 3])}
    assert rounded(value, 3) == {"a": [0.000123, 123000.0, [2.0, 1.23]], "b": "text", "c": 7, "d": True,
                                 "e": [0.333, 0.667]}
    assert math.isinf(rounded(float("inf"))) and math.isnan(rounded(float("nan")))


def test_thinned_spreads_evenly_and_keeps_both_ends():
    assert thinned(list(range(10)), 4) == [0, 3, 6, 9]
    assert thinned(list(range(1000)), 128)[:2] == [0, 8] and thinned(list(range(1000)), 128)[-1] == 999
    assert len(thinned(list(range(1000)), 128)) == 128
    assert thinned([5, 6], 10) == [5, 6]
    with pytest.raises(ValueError, match="count must be at least 2, got 1"):
        thinned([1, 2, 3], 1)
