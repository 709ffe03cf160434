"""The nn API tests (``tests/test_nn_*.py``) on ``device='cuda'``, in Numba's CUDA simulator: a chosen
subset of each file's cases (the simulator runs every kernel in Python), covering each function family
once: activations and their in-place forms, losses with weights and probability targets, every pooling
path, pad modes, interpolate modes, norms, lookups, attention masks, dropouts, init, normalization
layers without bias, loss, pooling, resizing and embedding modules moved to the device, and
MultiheadAttention. The device-independent tests (reprs, containers) and finite differences
(``gradcheck`` is host-only) run on the CPU only. Run by ``test_cuda_simulator.py`` (or ``NUMBA_ENABLE_CUDASIM=1 python -m pytest <this file>``).
"""
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

if not numba.config.ENABLE_CUDASIM:
    pytest.skip("run with NUMBA_ENABLE_CUDASIM=1 (test_cuda_simulator.py does)", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import test_nn_activations as activations  # noqa: E402
import test_nn_bilinear_dropout_gumbel as more_layers  # noqa: E402
import test_nn_conv_transpose as conv_transpose  # noqa: E402
import test_nn_embedding_bag as embedding_bag  # noqa: E402
import test_nn_fold as fold  # noqa: E402
import test_nn_grid_sample as grid_sample  # noqa: E402
import test_nn_local_pooling_shuffle_rrelu as local_pooling  # noqa: E402
import test_nn_functional as functional  # noqa: E402
import test_nn_init as init  # noqa: E402
import test_nn_losses as losses  # noqa: E402
import test_nn_normalization_options as norms  # noqa: E402
import test_nn_pooling as pooling  # noqa: E402
import test_nn_transformer as transformer  # noqa: E402

DEVICE = "cuda"


@pytest.mark.parametrize("name", ["silu", "elu", "celu", "softplus beta", "mish", "hardswish", "hardsigmoid",
                                  "relu6", "logsigmoid", "threshold", "hardshrink", "softshrink"])
def test_activations(name):
    activations.test_activation_values_and_gradients_match_torch(name, DEVICE)


@pytest.mark.parametrize("name", ["leaky_relu", "silu", "relu6", "ReLU module"])
def test_inplace_activations(name):
    activations.test_inplace_activations_write_the_input_and_differentiate_as_torch(name, DEVICE)


def test_activation_tails_prelu_and_glu():
    activations.test_float32_activations_keep_precision_in_the_tails(DEVICE)
    activations.test_relu_keeps_nan_and_negative_zero_and_masks_inf_gradients_as_torch(np.float32, DEVICE)
    activations.test_prelu_matches_torch_per_channel_and_shared(DEVICE)
    activations.test_prelu_module_learns_its_slopes_as_torch(DEVICE)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_classification_losses(reduction):
    losses.test_weighted_cross_entropy_matches_torch(reduction, 0.2, DEVICE)
    losses.test_cross_entropy_with_probability_targets_matches_torch(reduction, 0.3, True, DEVICE)
    losses.test_weighted_nll_loss_matches_torch(reduction, DEVICE)


def test_loss_edge_cases():
    losses.test_all_ignored_targets_give_nan_without_a_warning(DEVICE)
    losses.test_binary_cross_entropy_at_saturated_probabilities_matches_torch(DEVICE)
    losses.test_binary_cross_entropy_with_logits_weights_match_torch(DEVICE)
    losses.test_classification_loss_errors_match_torch(DEVICE)
    losses.test_inputs_without_classes_match_torch("mean", DEVICE)
    losses.test_negative_and_large_targets_are_index_errors_naming_them(DEVICE)
    losses.test_losses_refuse_what_is_not_a_tensor_naming_the_argument("cross_entropy", [1.0], "list", DEVICE)


@pytest.mark.parametrize("name", ["cosine_embedding", "triplet p=1 swap", "gaussian_nll row variance full",
                                  "poisson_nll full", "multilabel_soft_margin"])
def test_embedding_losses(name):
    losses.test_margin_embedding_and_likelihood_losses_match_torch(name, "mean", DEVICE)


@pytest.mark.parametrize("name", ["smooth_l1", "huber", "kl_div", "bce_with_logits"])
def test_pointwise_losses(name):
    losses.test_elementwise_losses_match_torch_in_both_arguments(name, "mean", DEVICE)


@pytest.mark.parametrize("kwargs", [pooling.MAX_2D[1], pooling.MAX_2D[4], pooling.MAX_2D[5]], ids=str)
def test_max_pooling(kwargs):
    pooling.test_max_pool2d_matches_torch(kwargs, DEVICE)


@pytest.mark.parametrize("kwargs", [pooling.AVG_2D[2], pooling.AVG_2D[5], pooling.AVG_2D[6]], ids=str)
def test_average_pooling(kwargs):
    pooling.test_avg_pool2d_matches_torch(kwargs, DEVICE)


def test_pooling_ties_1d_3d_and_adaptive():
    pooling.test_max_pool_sends_the_gradient_to_the_first_maximum_as_torch(DEVICE)
    pooling.test_max_pool1d_and_3d_match_torch(dict(kernel_size=3, stride=2, padding=1), DEVICE)
    pooling.test_adaptive_pool2d_of_any_output_size_matches_torch((4, 3), DEVICE)
    pooling.test_adaptive_pool2d_of_any_output_size_matches_torch(1, DEVICE)


@pytest.mark.parametrize("index", [1, 5, 8, 11])  # constant 2-d, reflect, replicate, circular
def test_pad(index):
    functional.test_pad_matches_torch(*functional.PADS[index], DEVICE)


@pytest.mark.parametrize("index", [0, 4, 7, 11, 14])  # nearest, nearest-exact, bilinear, bicubic, area
def test_interpolate(index):
    functional.test_interpolate_2d_matches_torch(*functional.RESIZES[index], DEVICE)


def test_norms_lookups_and_dropouts():
    functional.test_normalize_matches_torch_zero_vectors_included(DEVICE)
    functional.test_cosine_similarity_and_pairwise_distance_match_torch(DEVICE)
    functional.test_one_hot_matches_torch(DEVICE)
    functional.test_embedding_options_match_torch(dict(padding_idx=0, scale_grad_by_freq=True), DEVICE)
    functional.test_embedding_max_norm_renormalizes_looked_up_rows_as_torch(DEVICE)
    functional.test_channel_dropout_zeroes_whole_channels("dropout2d", (8, 50, 3, 3), DEVICE)
    functional.test_inplace_dropout_writes_the_input(DEVICE)


@pytest.mark.parametrize("index", [1, 4, 6])  # causal, a bool mask with a blocked row, a float mask with -inf
def test_attention(index):
    functional.test_scaled_dot_product_attention_matches_torch(index, DEVICE)


def test_fused_attention_equals_the_composite_one():
    functional.test_fused_attention_equals_the_composite_one(np.float32, DEVICE)


@pytest.mark.parametrize("name", ["BatchNorm1d cumulative", "BatchNorm2d", "InstanceNorm1d", "GroupNorm"])
def test_norm_layers_without_bias(name):
    norms.test_layers_without_bias_match_torch(name, DEVICE)


def test_modules_on_the_device():
    losses.test_loss_modules_match_torch(1, DEVICE)  # CrossEntropyLoss(label_smoothing, ignore_index)
    losses.test_loss_modules_match_torch(9, DEVICE)  # BCEWithLogitsLoss
    losses.test_loss_module_weights_are_buffers_that_move_and_save(DEVICE)
    pooling.test_pooling_modules_match_torch(7, DEVICE)
    pooling.test_pooling_modules_match_torch(15, DEVICE)
    functional.test_upsample_modules_match_torch(functional.UPSAMPLES[2], DEVICE)
    functional.test_embedding_module_trains_on_the_device_as_torch(DEVICE)
    functional.test_padding_layers_match_torch(*functional.PADDING_LAYERS[7], DEVICE)  # ReflectionPad2d
    functional.test_pixel_shuffle_and_unshuffle_match_torch_and_invert_each_other(2, (2, 8, 3, 2), DEVICE)


def test_init():
    init.test_deterministic_fills_match_torch((6, 3, 3, 3), "dirac_", DEVICE)
    init.test_orthogonal_gives_orthonormal_rows_or_columns((4, 9), DEVICE)
    init.test_random_inits_draw_from_the_given_generator("kaiming_uniform_", DEVICE)
    init.test_inits_fill_parameters_in_place_without_recording(DEVICE)


def test_multihead_attention():  # both mask kinds, weights and every projection (the encoder adds only norms)
    transformer.test_multihead_attention_matches_torch("default", "both", DEVICE)


def test_bilinear_and_alpha_dropout():
    more_layers.test_bilinear_matches_torch(True, DEVICE)
    more_layers.test_alpha_dropout_structure_and_gradient(True, DEVICE)


def test_fold_and_unfold():
    fold.test_unfold_and_fold_match_torch(fold.GEOMETRIES[1], DEVICE)


def test_embedding_bag():
    embedding_bag.test_embedding_bag_with_offsets_matches_torch("mean", 0, DEVICE)
    embedding_bag.test_per_sample_weights_and_max_norm_match_torch(DEVICE)


def test_conv_transpose():  # stride, padding, output_padding and groups at once
    conv_transpose.test_conv_transpose_matches_torch(2, DEVICE)


def test_lp_pool_local_response_norm_and_rrelu():
    local_pooling.test_lp_pool_matches_torch(2, DEVICE)
    local_pooling.test_local_response_norm_matches_torch((2, 6, 5, 4), DEVICE)
    local_pooling.test_rrelu_in_training_draws_a_slope_per_negative_element(DEVICE)


def test_spatial_transformer():
    grid_sample.test_bilinear_grid_sample_matches_torch_in_input_and_grid("reflection", False, DEVICE)
    grid_sample.test_affine_grid_and_the_spatial_transformer_chain_match_torch(True, DEVICE)
