"""tinynorm: a small deep-learning framework whose heart is normalization.

A tensor type with reverse-mode autograd, PyTorch-style modules and optimizers, and normalization
layers (BatchNorm, LayerNorm, RMSNorm, GroupNorm, InstanceNorm) on fused Numba kernels.
"""
import os

# Numba's OpenMP threads and OpenBLAS's threads (numpy matmul) share the cores. By default an idle
# OpenMP thread spins for a while after each parallel kernel, starving BLAS: a SmallCNN training step
# measured 10-16 ms with spinning against 4 ms with sleeping threads on a quiet 2-core machine (and
# 360 ms against 8 ms on a loaded one), while a lone LayerNorm call costs ~8 us more. Sleeping is the
# default here unless you chose otherwise; it must be set before Numba starts its thread pool.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from .tensor import Tensor, as_tensor, tensor  # noqa: E402, I001  (Tensor first: everything builds on it)
from . import autograd, data, distributed, models, nn, ops, optim
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .creation import (
    arange, empty, empty_like, full, full_like, ones, ones_like, rand, rand_like, randn, randn_like, zeros, zeros_like,
)
from .dtypes import (
    bool_, double, float, float16, float32, float64, get_default_dtype, half, int32, int64, long, set_default_dtype,
)
from .ops import (
    abs, amax, amin, argmax, argmin, cat, clamp, exp, flatten, log, log_softmax, matmul, maximum, mean, minimum,
    permute, relu, reshape, rsqrt, sigmoid, softmax, sqrt, squeeze, stack, std, sum, tanh, transpose, unsqueeze,
    var, where,
)
from .io import load, save
from .random import manual_seed

__version__ = "0.1.0"
