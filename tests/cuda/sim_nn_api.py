"""The nn API tests (``tests/test_nn_*.py``) on ``device='cuda'``, in Numba's CUDA simulator:
activations, losses, pooling, pad, interpolate, attention, lookups, dropouts and init behave on the GPU
as on the CPU (and as in PyTorch). The device-independent tests (reprs, containers) run on the CPU only.
Run by ``test_cuda_simulator.py`` (or ``NUMBA_ENABLE_CUDASIM=1 python -m pytest <this file>``).
"""
import sys
from pathlib import Path

import numba
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_nn_activations import (  # noqa: E402, F401  (the same tests, collected here)
    test_activation_values_and_gradients_match_torch, test_float32_activations_keep_precision_in_the_tails,
    test_glu_and_softmax_family_match_torch, test_inplace_activations_write_the_input_and_differentiate_as_torch,
    test_new_functions_pass_gradcheck, test_prelu_matches_torch_per_channel_and_shared,
)
from test_nn_functional import (  # noqa: E402, F401
    test_channel_dropout_zeroes_whole_channels, test_cosine_similarity_and_pairwise_distance_match_torch,
    test_embedding_max_norm_renormalizes_looked_up_rows_as_torch, test_embedding_options_match_torch,
    test_inplace_dropout_writes_the_input, test_interpolate_2d_matches_torch, test_normalize_matches_torch_zero_vectors_included,
    test_one_hot_matches_torch, test_pad_matches_torch, test_scaled_dot_product_attention_matches_torch,
)
from test_nn_init import (  # noqa: E402, F401
    test_deterministic_fills_match_torch, test_orthogonal_gives_orthonormal_rows_or_columns,
    test_random_inits_draw_from_the_given_generator,
)
from test_nn_losses import (  # noqa: E402, F401
    test_all_ignored_targets_give_nan_without_a_warning, test_binary_cross_entropy_at_saturated_probabilities_matches_torch,
    test_binary_cross_entropy_with_logits_weights_match_torch, test_cross_entropy_with_probability_targets_matches_torch,
    test_elementwise_losses_match_torch_in_both_arguments, test_weighted_cross_entropy_matches_torch,
    test_weighted_nll_loss_matches_torch,
)
from test_nn_pooling import (  # noqa: E402, F401
    test_adaptive_pool2d_of_any_output_size_matches_torch, test_avg_pool2d_matches_torch,
    test_max_pool1d_and_3d_match_torch, test_max_pool2d_matches_torch,
    test_max_pool_sends_the_gradient_to_the_first_maximum_as_torch,
)


@pytest.fixture
def device():
    return "cuda"
