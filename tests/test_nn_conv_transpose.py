"""ConvTranspose1d/2d and their functions against PyTorch: with PyTorch's parameters loaded, the same
outputs, input and parameter gradients under a random upstream gradient for stride, padding,
output_padding, groups, dilation, output_size and unbatched input; the same state-dict keys, reprs and
errors; finite differences; a DCGAN generator's shapes."""
import numpy as np
import pytest

import tinynorm as tn
from nn_compare import same, same_error, torch
from tinynorm.autograd import gradcheck

RNG = np.random.default_rng(0)
LAYERS = [
    (lambda nn: nn.ConvTranspose2d(4, 3, 4, 1, 0, bias=False), (2, 4, 1, 1), {}),  # DCGAN's first layer
    (lambda nn: nn.ConvTranspose2d(4, 6, 4, 2, 1), (2, 4, 3, 3), {}),
    (lambda nn: nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2),
     (2, 4, 3, 4), {}),
    (lambda nn: nn.ConvTranspose2d(2, 2, 3, dilation=2, output_padding=1), (1, 2, 3, 3), {}),
    (lambda nn: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), (3, 4, 4), {"output_size": (8, 8)}),
    (lambda nn: nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5), {}),
    (lambda nn: nn.ConvTranspose1d(4, 2, 2, groups=2, bias=False), (4, 5), {}),
]


def twins(make, device):
    torch.manual_seed(0)
    theirs, ours = make(torch.nn).double(), make(tn.nn).to(tn.float64)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({k: tn.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return {tn: ours.to(device), torch: theirs}


@pytest.mark.parametrize("index", range(len(LAYERS)))
def test_conv_transpose_matches_torch(index, device):
    make, shape, options = LAYERS[index]
    modules = twins(make, device)
    same(lambda lib, x: modules[torch if lib is torch else tn](x, **options), RNG.standard_normal(shape),
         device=device)
    ours = dict(modules[tn].named_parameters())
    for name, parameter in modules[torch].named_parameters():
        np.testing.assert_allclose(ours[name].grad.numpy(), parameter.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_conv_transpose_initialisation_follows_torch_bounds():
    layer = tn.nn.ConvTranspose2d(8, 4, 3)  # fan-in 4 * 3 * 3 = 36: weights and bias within 1/6
    assert np.abs(layer.weight.numpy()).max() <= 1 / 6 and np.abs(layer.bias.numpy()).max() <= 1 / 6
    assert layer.weight.shape == (8, 4, 3, 3)


def test_conv_transpose_passes_gradcheck():
    x = tn.tensor(RNG.standard_normal((1, 2, 3, 2)), requires_grad=True)
    w = tn.tensor(RNG.standard_normal((2, 1, 2, 3)), requires_grad=True)
    assert gradcheck(lambda a, b: tn.nn.functional.conv_transpose2d(a, b, stride=2, padding=(1, 0), groups=2,
                                                                     output_padding=1), (x, w))


def test_conv_transpose_errors_match_torch():
    same_error(lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, stride=2, output_padding=2),
               RNG.standard_normal((1, 2, 3, 3)), RNG.standard_normal((2, 2, 3, 3)))
    same_error(lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w), RNG.standard_normal((1, 3, 3, 3)),
               RNG.standard_normal((2, 2, 3, 3)))
    same_error(lambda lib, x: lib.nn.ConvTranspose2d(3, 2, 3, stride=2)(x, output_size=(20, 20)),
               RNG.standard_normal((1, 3, 4, 4)).astype(np.float32))
    same_error(lambda lib: lib.nn.ConvTranspose2d(3, 2, 3, groups=2))


def test_a_dcgan_generator_makes_images_of_the_right_shape():
    nn = tn.nn
    generator = nn.Sequential(
        nn.ConvTranspose2d(16, 32, 4, 1, 0, bias=False), nn.BatchNorm2d(32), nn.ReLU(True),
        nn.ConvTranspose2d(32, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(True),
        nn.ConvTranspose2d(16, 3, 4, 2, 1, bias=False), nn.Tanh())
    images = generator(tn.randn(5, 16, 1, 1))
    assert images.shape == (5, 3, 16, 16) and float(images.abs().max()) <= 1
