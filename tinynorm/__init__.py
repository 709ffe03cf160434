"""tinynorm: a small deep-learning framework whose heart is normalization.

A tensor type with reverse-mode autograd, PyTorch-style modules and optimizers, and normalization
layers (BatchNorm, LayerNorm, RMSNorm, GroupNorm, InstanceNorm) on fused Numba kernels.
"""
from . import _openmp

# Before any kernel runs: tinynorm's OpenMP spin default and Numba's OpenMP layer on its own runtime, so
# that tinynorm's speed does not depend on what the process imported before it (see _openmp.py).
_openmp.configure()

from .tensor import Tensor, as_tensor, tensor  # noqa: E402, I001  (Tensor first: everything builds on it)
from . import autograd, cuda, data, distributed, models, nn, ops, optim
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .creation import (
    arange, empty, empty_like, eye, from_numpy, full, full_like, linspace, logspace, ones, ones_like, rand, rand_like,
    randn, randn_like, zeros, zeros_like,
)
from .cuda import from_cuda_array
from .dtypes import (  # noqa: A004  (int, float and bool are dtypes here, as in PyTorch)
    bool, bool_, can_cast, double, float, float16, float32, float64, get_default_dtype, half, int, int8, int16, int32,
    int64, long, promote_types, result_type, set_default_dtype, short, uint8,
)
from .ops import (
    abs, amax, amin, argmax, argmin, cat, clamp, exp, flatten, log, log_softmax, matmul, maximum, mean, minimum,
    permute, relu, reshape, rsqrt, sigmoid, softmax, sqrt, squeeze, stack, std, sum, tanh, transpose, unsqueeze,
    var, where,
)
from .io import load, save
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .sampling import bernoulli, multinomial, normal, randint, randint_like, randperm
from . import utils  # noqa: E402  (tinynorm.utils.data builds on all of the above)

__version__ = "0.1.0"
