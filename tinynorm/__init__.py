"""tinynorm: a small deep-learning framework whose heart is normalization.

A tensor type with reverse-mode autograd, PyTorch-style modules and optimizers, and normalization
layers (BatchNorm, LayerNorm, RMSNorm, GroupNorm, InstanceNorm) on fused Numba kernels.
"""
import os

# Numba's OpenMP threads and OpenBLAS's threads (numpy matmul) share the cores. An idle OpenMP thread
# spins for a while before it sleeps: libgomp's default (300,000 spins) starves BLAS on a busy machine (a
# SmallCNN step took 360 ms against 8 ms), while sleeping at once (OMP_WAIT_POLICY=passive) costs each
# parallel kernel a ~50-100 us wake-up on a quiet one (LayerNorm 64x1024: 106 us against 20 us). A short
# spin keeps both: 18 us and a 7.5 ms step quiet, ~9 ms loaded. Your own settings take precedence; they
# must be in place before Numba starts its thread pool, i.e. before the first parallel kernel runs.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "3000"

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
