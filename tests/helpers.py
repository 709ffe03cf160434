"""Shared test helpers: float64 leaves for gradient checks and hypothesis strategies for shapes."""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinynorm


def leaf(array, requires_grad=True):
    """A float64 tinynorm tensor (a copy of ``array``) that requires grad: a gradcheck input."""
    return tinynorm.tensor(np.array(array, dtype=np.float64), requires_grad=requires_grad)


# Small shapes keep finite differences cheap: gradcheck runs two forwards per input element.
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)
broadcast_pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)
seeds = st.integers(0, 2**32 - 1)


class RunsCodeWhenUnpickled:
    """Unpickling this creates the file ``marker``: proof of code execution, if it ever happens."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))
