"""``nn.utils.rnn.pad_sequence``/``unpad_sequence`` against PyTorch: values and gradients of every
sequence under a random upstream gradient, both layouts and padding sides, round trips and errors."""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import same, same_error, torch

RNG = np.random.default_rng(0)
SEQUENCES = [RNG.standard_normal((3, 2, 2)), RNG.standard_normal((1, 2, 2)), RNG.standard_normal((4, 2, 2))]


@pytest.mark.parametrize("options", [{}, {"batch_first": True}, {"padding_value": -1.5, "padding_side": "left"},
                                     {"batch_first": True, "padding_side": "left"}])
def test_pad_sequence_matches_torch(options, device):
    same(lambda lib, *s: lib.nn.utils.rnn.pad_sequence(list(s), **options), *SEQUENCES, device=device)


def test_unpad_sequence_inverts_pad_sequence_as_torch(device):
    for batch_first in (False, True):
        def round_trip(lib, *s):
            padded = lib.nn.utils.rnn.pad_sequence(list(s), batch_first=batch_first)
            return lib.cat(lib.nn.utils.rnn.unpad_sequence(padded, lib.tensor([3, 1, 4]), batch_first=batch_first))

        same(round_trip, *SEQUENCES, device=device)


def test_pad_sequence_errors_match_torch():
    same_error(lambda lib: lib.nn.utils.rnn.pad_sequence([]))
    same_error(lambda lib, a, b: lib.nn.utils.rnn.pad_sequence([a, b]), np.ones((2, 3)), np.ones((2, 4)))
    same_error(lambda lib, a: lib.nn.utils.rnn.pad_sequence([a], padding_side="middle"), np.ones((2, 3)))
    with pytest.raises(TypeError, match=r"argument 'sequences\[1\]' must be Tensor, not list"):
        tn.nn.utils.rnn.pad_sequence([tn.ones(2), [1.0]])
