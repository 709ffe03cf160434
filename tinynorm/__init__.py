"""tinynorm: a small deep-learning framework whose heart is normalization.

A tensor type with reverse-mode autograd, PyTorch-style modules and optimizers, and normalization
layers (BatchNorm, LayerNorm, RMSNorm, GroupNorm, InstanceNorm) on fused Numba kernels.
"""
from . import _malloc, _openblas, _openmp

# Before any kernel runs: tinynorm's OpenMP spin default and Numba's OpenMP layer on its own runtime, so
# that tinynorm's speed does not depend on what the process imported before it (see _openmp.py); a short
# spin for OpenBLAS's idle threads (_openblas.py); and freed memory kept for reuse, so that large
# temporaries do not page-fault on every step (_malloc.py).
_openblas.configure()  # first: loading Numba loads numpy
_openmp.configure()
_malloc.configure()

from .tensor import Tensor, as_tensor, tensor  # noqa: E402, I001  (Tensor first: everything builds on it)
from . import tensor_methods  # noqa: E402  (the ops build on Tensor; this attaches them to it as its methods)

tensor_methods.install(Tensor)
from . import autograd, cuda, data, distributed, models, nn, ops, optim
from .autograd import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from .creation import (
    arange, empty, empty_like, eye, from_numpy, full, full_like, linspace, logspace, ones, ones_like, rand, rand_like,
    randn, randn_like, zeros, zeros_like,
)
from .cuda import from_cuda_array
from .dtypes import DType as dtype  # the class of tinynorm.float32 and the others, as torch.dtype
from .dtypes import (  # noqa: A004  (int, float and bool are dtypes here, as in PyTorch)
    bool, bool_, can_cast, double, float, float16, float32, float64, get_default_dtype, half, int, int8, int16, int32,
    int64, long, promote_types, result_type, set_default_dtype, short, uint8,
)
from .ops import (  # noqa: A004  (PyTorch's names: abs, all, any, max, min, round, sum)
    abs, absolute, acos, acosh, add, addcdiv, addcmul, addmm, all, allclose, amax, amin, aminmax, any, arccos,
    arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, argmax, argmin, argsort, argwhere, asin, asinh, atan, atan2,
    atanh, atleast_1d, atleast_2d, baddbmm, bincount, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, bmm,
    broadcast_to, bucketize, cat, cdist, ceil, chunk, clamp, clamp_max, clamp_min, clip, concat, concatenate, cos,
    cosh, count_nonzero, cross, cummax, cummin, cumprod, cumsum, deg2rad, diag, diagonal, diff, div, divide, dot,
    einsum, eq, equal, erf, erfinv, exp, exp2, expm1, fix, flatten, flip, fliplr, flipud, float_power, floor,
    floor_divide, fmod, frac, gather, ge, greater, greater_equal, gt, hstack, hypot, index_add, index_copy,
    index_fill, index_select, isclose, isfinite, isinf, isnan, isneginf, isposinf, kron, le, lerp, less, less_equal,
    log, log1p, log2, log_softmax, logaddexp, logical_and, logical_not, logical_or, logical_xor, logsumexp, lt,
    masked_fill, masked_select, matmul, max, maximum, mean, median, meshgrid, min, minimum, mm, moveaxis, movedim,
    mul, multiply, mv, nan_to_num, nanmean, nansum, narrow, ne, neg, negative, nonzero, norm, not_equal, outer,
    permute, pow, prod, quantile, rad2deg, reciprocal, relu, remainder, repeat_interleave, reshape, roll, rot90,
    round, row_stack, rsqrt, scatter, scatter_add, searchsorted, sgn, sigmoid, sign, sin, sinh, softmax, sort,
    split, sqrt, square, squeeze, stack, std, std_mean, sub, subtract, sum, swapaxes, t, take_along_dim, tan, tanh,
    tensordot, tile, topk, trace, transpose, tril, tril_indices, triu, triu_indices, true_divide, trunc, unbind,
    unflatten, unique, unsqueeze, var, var_mean, vstack, where, xlogy,
)
from .devices import device, get_default_device, set_default_device
from . import accelerator, linalg
from .threads import get_float32_matmul_precision, get_num_threads, set_float32_matmul_precision, set_num_threads
from .type_info import finfo, iinfo
from .printing import get_printoptions, printoptions, set_printoptions
from .size import Size
from .tensor import is_floating_point, is_tensor, numel
clone, detach = Tensor.clone, Tensor.detach  # torch.clone(x), torch.detach(x): the methods as functions
from .io import load, save
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .sampling import bernoulli, multinomial, normal, randint, randint_like, randperm
from . import utils  # noqa: E402  (tinynorm.utils.data builds on all of the above)
from . import outputs

outputs.install(globals())  # out= for the functions that take it in PyTorch (tinynorm.add(a, b, out=c))

__version__ = "0.1.0"
