"""``F.affine_grid`` and ``F.grid_sample`` against PyTorch: every mode, padding mode and corner
convention, positions inside and outside the input, input and grid gradients under a random upstream
gradient; a spatial transformer's affine_grid -> grid_sample chain; errors."""
import numpy as np
import pytest

from nn_compare import same, same_error

RNG = np.random.default_rng(0)
THETA = RNG.standard_normal((2, 2, 3)) * 0.7
IMAGE = RNG.standard_normal((2, 3, 5, 6))
GRID = RNG.uniform(-1.6, 1.6, (2, 3, 4, 2))  # beyond [-1, 1]: every padding mode matters


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_bilinear_grid_sample_matches_torch_in_input_and_grid(padding_mode, align_corners, device):
    same(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, padding_mode=padding_mode,
                                                         align_corners=align_corners), IMAGE, GRID, device=device)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_nearest_grid_sample_matches_torch(padding_mode, align_corners, device):
    same(lambda lib, x: lib.nn.functional.grid_sample(x, lib.tensor(GRID), mode="nearest", padding_mode=padding_mode,
                                                      align_corners=align_corners), IMAGE, device=device)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_and_the_spatial_transformer_chain_match_torch(align_corners, device):
    same(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 3, 4, 5), align_corners=align_corners), THETA,
         device=device)

    def transform(lib, x, t):
        grid = lib.nn.functional.affine_grid(t, (2, 3, 4, 4), align_corners=align_corners)
        return lib.nn.functional.grid_sample(x, grid, align_corners=align_corners)

    same(transform, IMAGE, THETA, device=device)


def test_grid_sample_and_affine_grid_errors_and_warning_match_torch():
    same_error(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, mode="cubic", align_corners=False), IMAGE, GRID)
    same_error(lambda lib, x, g: lib.nn.functional.grid_sample(x, g, padding_mode="wrap", align_corners=False), IMAGE,
               GRID)
    same_error(lambda lib, t: lib.nn.functional.affine_grid(t, (2, 3, 4, 5), False), THETA[:, :, :2])
    same_error(lambda lib, t: lib.nn.functional.affine_grid(t, (3, 3, 4, 5), False), THETA)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        same(lambda lib, x, g: lib.nn.functional.grid_sample(x, g), IMAGE, GRID)
