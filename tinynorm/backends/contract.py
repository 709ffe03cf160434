"""What a backend provides: every name an op may call as ``ctx.xp.<name>`` (or ``tensor._backend.<name>``).

An op never imports numpy or CUDA code; it asks for the backend of its inputs' device
(:func:`tinynorm.backends.get_backend`, which ``Function.apply`` stores as ``ctx.xp``) and calls the
functions declared here. :class:`Backend` is that declaration: one Protocol per family, each stub with
its signature and what it computes. ``ctx.xp`` is annotated with it, so an editor's "go to definition"
on ``ctx.xp.layer_norm_forward`` lands on its stub here.

Where each name is implemented:

- CPU, :mod:`tinynorm.backends.cpu`: numpy's own function of that name (re-exported unchanged), a
  function defined there, or a Numba kernel imported there from ``tinynorm/kernels/cpu/<family>.py``
  (its import line names the file).
- CUDA, ``tinynorm/backends/cuda/<family>.py``: the family classes below are named after these modules
  (``Normalization`` is ``backends/cuda/normalization.py``), whose ``__all__`` lists exactly the family's
  names; the fused ones call kernels in ``tinynorm/kernels/cuda/``.

Arrays are numpy ``ndarray`` on the CPU and :class:`~tinynorm.backends.cuda.array.CudaArray` on CUDA,
which has the part of numpy's array interface the ops use (``shape``, ``dtype``, ``astype``, indexing,
arithmetic operators). Numpy's names keep numpy's semantics (broadcasting, NEP 50 dtype rules);
functions that reduce return arrays, never numpy scalars.

Adding a device: write a module (or package) giving every name below, register it in
``tinynorm.backends._MODULES``, and run ``tests/test_backend_contract.py`` against it: it checks that
the backend has exactly these names and accepts every call written against these signatures.
``tests/cuda/test_backend_contract_cuda.py`` does so for CUDA.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

Array = Any  # the backend's array type: numpy.ndarray, CudaArray
Dims = tuple[int, ...]
Axis = int | tuple[int, ...] | None


class Creation(Protocol):
    """New arrays, copies, and moving data between host (numpy) and device. CUDA: ``backends/cuda/creation.py``."""

    def zeros(self, shape: Any, dtype: Any = np.float64) -> Array:
        """A new array of ``shape`` filled with 0."""

    def ones(self, shape: Any, dtype: Any = np.float64) -> Array:
        """A new array of ``shape`` filled with 1."""

    def empty(self, shape: Any, dtype: Any = np.float64) -> Array:
        """A new array of ``shape`` with unspecified values."""

    def full(self, shape: Any, fill_value: Any, dtype: Any = None) -> Array:
        """A new array of ``shape`` filled with ``fill_value`` (its dtype when ``dtype`` is None)."""

    def zeros_like(self, a: Array, dtype: Any = None) -> Array:
        """Zeros of ``a``'s shape and (unless given) dtype."""

    def ones_like(self, a: Array, dtype: Any = None) -> Array:
        """Ones of ``a``'s shape and (unless given) dtype."""

    def arange(self, start: Any, /, stop: Any = None, step: Any = 1, dtype: Any = None) -> Array:
        """``start, start + step, ...`` below ``stop`` (numpy's ``arange``; one argument is the stop)."""

    def asarray(self, data: Any, dtype: Any = None) -> Array:
        """``data`` (an array of this backend, or host data) as an array of this backend, cast to ``dtype``."""

    def as_array(self, value: Any) -> Array:
        """An op's result as an array of this backend (numpy's full reductions return scalars)."""

    def copy(self, a: Array) -> Array:
        """A new array with ``a``'s values, sharing no memory with it."""

    def from_numpy(self, a: Any) -> Array:
        """The host array ``a`` as an array of this backend (the CPU backend returns it as it is)."""

    def to_numpy(self, a: Array) -> np.ndarray:
        """``a`` as a host numpy array (a copy on a device; ``a`` itself on the CPU)."""

    def finfo(self, dtype: Any) -> Any:
        """numpy's ``finfo``: eps, tiny, max of a float dtype."""


class Elementwise(Protocol):
    """numpy's elementwise functions (broadcasting, NEP 50 dtypes); those with ``out=`` serve in-place ops.
    CUDA: ``backends/cuda/elementwise.py``."""

    def add(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a + b``."""

    def subtract(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a - b``."""

    def multiply(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a * b``."""

    def true_divide(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a / b`` (a float result)."""

    def power(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a ** b``."""

    def maximum(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """The larger of ``a`` and ``b`` (NaN if either is NaN)."""

    def minimum(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """The smaller of ``a`` and ``b`` (NaN if either is NaN)."""

    def equal(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a == b`` (bool)."""

    def not_equal(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a != b`` (bool)."""

    def less(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a < b`` (bool)."""

    def less_equal(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a <= b`` (bool)."""

    def greater(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a > b`` (bool)."""

    def greater_equal(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a >= b`` (bool)."""

    def logical_and(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a and b`` elementwise (bool)."""

    def logical_or(self, a: Any, b: Any, /, out: Array | None = None) -> Array:
        """``a or b`` elementwise (bool)."""

    def logical_not(self, x: Any, /, out: Array | None = None) -> Array:
        """``not x`` elementwise (bool)."""

    def negative(self, x: Any, /, out: Array | None = None) -> Array:
        """``-x``."""

    def abs(self, x: Any, /, out: Array | None = None) -> Array:
        """``|x|``."""

    def square(self, x: Any, /, out: Array | None = None) -> Array:
        """``x * x``."""

    def sqrt(self, x: Any, /, out: Array | None = None) -> Array:
        """The square root (NaN below 0)."""

    def exp(self, x: Any, /, out: Array | None = None) -> Array:
        """``e ** x``."""

    def log(self, x: Any, /, out: Array | None = None) -> Array:
        """The natural logarithm."""

    def tanh(self, x: Any, /, out: Array | None = None) -> Array:
        """The hyperbolic tangent."""

    def cos(self, x: Any, /, out: Array | None = None) -> Array:
        """The cosine (radians)."""

    def erf(self, x: Any, /) -> Array:
        """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt`` (numpy has none: a kernel on the CPU)."""

    def sign(self, x: Any, /, out: Array | None = None) -> Array:
        """-1, 0 or 1 by the sign of ``x`` (NaN stays NaN)."""

    def clip(self, a: Any, a_min: Any, a_max: Any, /, out: Array | None = None) -> Array:
        """``a`` limited to ``[a_min, a_max]``; a None bound is no bound."""

    def where(self, condition: Any, x: Any, y: Any, /) -> Array:
        """``x`` where ``condition`` holds, else ``y``, broadcast together."""

    def relu(self, x: Array) -> Array:
        """0 where ``x < 0``, else ``x`` (NaN and -0.0 pass), in one pass."""

    def relu_backward(self, grad: Array, out: Array) -> Array:
        """0 where :meth:`relu`'s output ``out <= 0``, else ``grad``, in one pass."""

    def gelu(self, x: Array, approximate: str = "none") -> Array:
        """GELU, ``x * Phi(x)``, exact (erf) or ``approximate='tanh'``, fused in one pass."""

    def gelu_backward(self, grad: Array, x: Array, approximate: str = "none") -> Array:
        """``grad * d gelu(x) / dx`` for :meth:`gelu`'s ``approximate``."""


class Math(Protocol):
    """More of numpy's elementwise functions (no ``out=``): trigonometric, hyperbolic, rounding, tests,
    division, bitwise. CUDA: ``backends/cuda/math.py``."""

    def sin(self, x: Any, /) -> Array:
        """The sine (radians)."""

    def tan(self, x: Any, /) -> Array:
        """The tangent (radians)."""

    def arcsin(self, x: Any, /) -> Array:
        """The inverse sine."""

    def arccos(self, x: Any, /) -> Array:
        """The inverse cosine."""

    def arctan(self, x: Any, /) -> Array:
        """The inverse tangent."""

    def arctan2(self, a: Any, b: Any, /) -> Array:
        """The angle of the point ``(b, a)``, in ``[-pi, pi]``."""

    def sinh(self, x: Any, /) -> Array:
        """The hyperbolic sine."""

    def cosh(self, x: Any, /) -> Array:
        """The hyperbolic cosine."""

    def arcsinh(self, x: Any, /) -> Array:
        """The inverse hyperbolic sine."""

    def arccosh(self, x: Any, /) -> Array:
        """The inverse hyperbolic cosine."""

    def arctanh(self, x: Any, /) -> Array:
        """The inverse hyperbolic tangent."""

    def hypot(self, a: Any, b: Any, /) -> Array:
        """``sqrt(a**2 + b**2)`` without overflow."""

    def log1p(self, x: Any, /) -> Array:
        """``log(1 + x)``, accurate for small ``x``."""

    def expm1(self, x: Any, /) -> Array:
        """``exp(x) - 1``, accurate for small ``x``."""

    def log2(self, x: Any, /) -> Array:
        """The base-2 logarithm."""

    def exp2(self, x: Any, /) -> Array:
        """``2 ** x``."""

    def floor(self, x: Any, /) -> Array:
        """Rounded down."""

    def ceil(self, x: Any, /) -> Array:
        """Rounded up."""

    def trunc(self, x: Any, /) -> Array:
        """Rounded toward 0."""

    def rint(self, x: Any, /) -> Array:
        """Rounded to the nearest integer, halves to even."""

    def isnan(self, x: Any, /) -> Array:
        """Whether ``x`` is NaN (bool)."""

    def isinf(self, x: Any, /) -> Array:
        """Whether ``x`` is +-inf (bool)."""

    def isfinite(self, x: Any, /) -> Array:
        """Whether ``x`` is neither NaN nor +-inf (bool)."""

    def fmod(self, a: Any, b: Any, /) -> Array:
        """The remainder of ``a / b`` with the sign of ``a`` (C's fmod)."""

    def remainder(self, a: Any, b: Any, /) -> Array:
        """The remainder of ``a / b`` with the sign of ``b`` (Python's %)."""

    def floor_divide(self, a: Any, b: Any, /) -> Array:
        """``a // b``, rounded down."""

    def bitwise_and(self, a: Any, b: Any, /) -> Array:
        """``a & b`` of integers or bools."""

    def bitwise_or(self, a: Any, b: Any, /) -> Array:
        """``a | b`` of integers or bools."""

    def bitwise_xor(self, a: Any, b: Any, /) -> Array:
        """``a ^ b`` of integers or bools."""

    def invert(self, x: Any, /) -> Array:
        """``~x`` of integers; ``not x`` of bools."""

    def logical_xor(self, a: Any, b: Any, /) -> Array:
        """``bool(a) != bool(b)`` elementwise."""


class Reductions(Protocol):
    """Reductions over ``axis`` (None: all), returning arrays (0-d for a full reduction).
    CUDA: ``backends/cuda/reductions.py``."""

    def sum(self, a: Array, axis: Axis = None, keepdims: bool = False) -> Array:
        """The sum over ``axis``."""

    def mean(self, a: Array, axis: Axis = None, keepdims: bool = False) -> Array:
        """The mean over ``axis``."""

    def amax(self, a: Array, axis: Axis = None, keepdims: bool = False) -> Array:
        """The maximum over ``axis`` (NaN if any is NaN)."""

    def amin(self, a: Array, axis: Axis = None, keepdims: bool = False) -> Array:
        """The minimum over ``axis`` (NaN if any is NaN)."""

    def argmax(self, a: Array, axis: int | None = None) -> Array:
        """The index of the first maximum along ``axis`` (of the flattened array when None)."""

    def argmin(self, a: Array, axis: int | None = None) -> Array:
        """The index of the first minimum along ``axis`` (of the flattened array when None)."""

    def unbroadcast(self, grad: Array, shape: Dims) -> Array:
        """``grad`` summed over the dims broadcasting added or stretched, back to ``shape``: the
        engine's adjoint of broadcasting."""


class Scan(Protocol):
    """Cumulative sums and products, and the product reduction built on the same kernels.
    CUDA: ``backends/cuda/scan.py``."""

    def cumsum(self, a: Array, axis: int | None = None, dtype: Any = None) -> Array:
        """The running sum along ``axis`` (of the flattened array when None)."""

    def cumprod(self, a: Array, axis: int | None = None, dtype: Any = None) -> Array:
        """The running product along ``axis`` (of the flattened array when None)."""

    def prod(self, a: Array, axis: Axis = None, keepdims: bool = False, dtype: Any = None) -> Array:
        """The product over ``axis``."""


class Shape(Protocol):
    """Shapes, views and memory layout. CUDA: ``backends/cuda/shape.py``."""

    def reshape(self, a: Array, shape: Any) -> Array:
        """``a`` in ``shape`` (a view when the strides allow, else a copy)."""

    def view(self, a: Array, shape: Any) -> Array:
        """``a`` in ``shape`` without copying; ValueError when its strides do not allow that."""

    def transpose(self, a: Array, axes: Sequence[int] | None = None) -> Array:
        """A view of ``a`` with its dims permuted (reversed when ``axes`` is None)."""

    def swapaxes(self, a: Array, axis1: int, axis2: int) -> Array:
        """A view of ``a`` with two dims exchanged."""

    def moveaxis(self, a: Array, source: Any, destination: Any) -> Array:
        """A view of ``a`` with the dims ``source`` moved to ``destination``."""

    def expand_dims(self, a: Array, axis: Any) -> Array:
        """A view of ``a`` with new dims of size 1 at ``axis``."""

    def broadcast_to(self, a: Array, shape: Any) -> Array:
        """A read-only view of ``a`` broadcast to ``shape`` (stride 0 along stretched dims)."""

    def ascontiguousarray(self, a: Array) -> Array:
        """``a`` itself if C-contiguous, else a C-contiguous copy."""

    def concatenate(self, arrays: Sequence[Array], axis: int = 0) -> Array:
        """The arrays joined along an existing dim."""

    def stack(self, arrays: Sequence[Array], axis: int = 0) -> Array:
        """The arrays (of one shape) joined along a new dim."""

    def storage_of(self, a: Any) -> Any:
        """The object that owns ``a``'s memory (``a`` itself unless it is a view); anything else is its own."""

    def shares_storage(self, a: Any, b: Any) -> bool:
        """Whether ``a`` and ``b`` are views of the same memory (what makes an op's result a view)."""

    def is_contiguous(self, a: Array) -> bool:
        """Whether ``a`` is C-contiguous."""

    def layout(self, a: Array) -> tuple[Dims, int]:
        """``a``'s strides and its offset in its storage, in elements (PyTorch's ``stride()``, ``storage_offset()``)."""

    def data_pointer(self, a: Array) -> int:
        """The address of ``a``'s first element (0 for an empty array)."""


class Indexing(Protocol):
    """Gathers and scatters by integer index. Index arrays follow numpy (negative entries count from the
    end); ``index_add`` and ``take_along_axis`` receive indices the op has already checked, so a
    backend need not check them again (on CUDA, checking makes the host wait for the GPU).
    CUDA: ``backends/cuda/indexing.py``."""

    def take(self, a: Array, indices: Any, axis: int | None = None, mode: str = "raise") -> Array:
        """Entries of ``a`` at ``indices`` along ``axis`` (flattened when None); ``mode='clip'`` clips
        instead of checking (for indices checked before)."""

    def take_along_axis(self, a: Array, indices: Array, axis: int) -> Array:
        """``out[..., i, ...] = a[..., indices[..., i, ...], ...]`` along ``axis``, indices checked by the op."""

    def index_add(self, shape: Dims, index: Any, values: Array) -> Array:
        """Zeros of ``shape`` with ``values`` added at ``index`` (repeats add up), the index checked by
        the op: the adjoint of ``x[index]``."""

    def count_indices(self, indices: Array, upper: int, ignore_index: int | None = None) -> tuple[int, int]:
        """``(outside, ignored)``: how many entries lie outside ``[0, upper)`` (and are not
        ``ignore_index``), and how many equal ``ignore_index``: an op's one check of its indices."""


class Sorting(Protocol):
    """Sorting and the selections built on it. CUDA: ``backends/cuda/sorting.py``."""

    def argsort(self, a: Array, axis: int = -1) -> Array:
        """The int64 indices that sort ``a`` along ``axis``, stably (NaN last)."""

    def unique(self, a: Array, return_inverse: bool = False, return_counts: bool = False,
               axis: int | None = None) -> Any:
        """numpy's ``unique``: the sorted distinct values (of the flattened array, or slices along ``axis``),
        with the inverse indices and counts when asked."""

    def nonzero(self, a: Array) -> tuple[Array, ...]:
        """One int64 array per dim of the positions of ``a``'s nonzero entries, in C order."""


class Linalg(Protocol):
    """Matrix products. CUDA: ``backends/cuda/linalg.py``."""

    def matmul(self, a: Array, b: Array, /) -> Array:
        """numpy's ``a @ b`` (batched over leading dims, broadcast)."""

    def linear(self, x: Array, weight: Array, bias: Array | None = None) -> Array:
        """``x @ weight.T + bias`` (PyTorch's ``F.linear``), one GEMM for all leading dims."""


class Conv(Protocol):
    """Convolution and pooling of (N, C, H, W) arrays. The CPU kernels also take ``dilation``,
    ``groups`` and ``padding_mode``, and ``padding`` as four sides; ops pass them only there.
    CUDA: ``backends/cuda/conv.py``."""

    def conv2d_forward(self, x: Array, weight: Array, bias: Array | None = None, stride: Any = 1,
                       padding: Any = 0) -> tuple[Array, Any]:
        """``(y, saved)``: the convolution and what :meth:`conv2d_backward` needs."""

    def conv2d_backward(self, dy: Array, saved: Any, x_shape: Dims, weight: Array, /, stride: Any = 1,
                        padding: Any = 0, needs_input_grad: bool = True,
                        needs_bias_grad: bool = True) -> tuple[Array | None, Array, Array | None]:
        """``(dx, dweight, dbias)`` of :meth:`conv2d_forward` (``dx`` None unless ``needs_input_grad``,
        ``dbias`` None unless ``needs_bias_grad``)."""

    def max_pool2d_forward(self, x: Array, kernel_size: Any, stride: Any = None,
                           padding: Any = 0) -> tuple[Array, Array]:
        """``(y, argmax)``: each window's maximum and its flat position in its input plane."""

    def max_pool2d_backward(self, dy: Array, argmax: Array, x_shape: Dims, checked: bool = False) -> Array:
        """``dx``: each ``dy`` element added at its window's ``argmax``; ``checked`` (the forward's own
        ``argmax``) lets the CUDA kernel skip reading back its range check."""

    def avg_pool2d_forward(self, x: Array, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Array:
        """Each window's mean (zero padding counted)."""

    def avg_pool2d_backward(self, dy: Array, x_shape: Dims, kernel_size: Any, stride: Any = None,
                            padding: Any = 0) -> Array:
        """``dx`` of :meth:`avg_pool2d_forward`."""


class Normalization(Protocol):
    """The fused normalization kernels (formulas in :mod:`tinynorm.kernels.reference`). Forward passes
    return the output and the statistics the backward pass reuses; ``out=`` writes the output in place.
    CUDA: ``backends/cuda/normalization.py``."""

    HALF_NORM_KERNELS: bool
    """Whether the norm kernels take float16 data (when False, ops convert it to float32 for them)."""

    def layer_norm_forward(self, x: Array, weight: Array | None, bias: Array | None, eps: float,
                           out: Array | None = None) -> tuple[Array, Array, Array]:
        """``(y, mean, rstd)`` of LayerNorm over the last dim of the 2-D ``x``."""

    def layer_norm_backward(self, dy: Array, x: Array, mean: Array, rstd: Array,
                            weight: Array | None) -> tuple[Array, Array | None, Array | None]:
        """``(dx, dweight, dbias)`` of :meth:`layer_norm_forward`."""

    def rms_norm_forward(self, x: Array, weight: Array | None, eps: float,
                         out: Array | None = None) -> tuple[Array, Array]:
        """``(y, rstd)`` of RMSNorm over the last dim of the 2-D ``x``."""

    def rms_norm_backward(self, dy: Array, x: Array, rstd: Array, weight: Array | None) -> tuple[Array, Array | None]:
        """``(dx, dweight)`` of :meth:`rms_norm_forward`."""

    def group_norm_forward(self, x: Array, num_groups: int, weight: Array | None, bias: Array | None, eps: float,
                           out: Array | None = None) -> tuple[Array, Array, Array]:
        """``(y, mean, rstd)`` of GroupNorm of the (N, C, ...) ``x``, statistics per (sample, group)."""

    def group_norm_backward(self, dy: Array, x: Array, mean: Array, rstd: Array, num_groups: int,
                            weight: Array | None) -> tuple[Array, Array | None, Array | None]:
        """``(dx, dweight, dbias)`` of :meth:`group_norm_forward`."""

    def batch_norm_stats(self, x: Array) -> tuple[Array, Array]:
        """``(mean, biased var)`` per channel of the (N, C, ...) ``x``, in one pass."""

    def batch_norm_rstd(self, var: Array, eps: float) -> Array:
        """``1 / sqrt(var + eps)``."""

    def batch_norm_forward(self, x: Array, mean: Array, rstd: Array, weight: Array | None, bias: Array | None,
                           out: Array | None = None) -> Array:
        """``(x - mean) * rstd * weight + bias`` per channel."""

    def batch_norm_training_forward(self, x: Array, weight: Array | None, bias: Array | None, eps: float,
                                    running_mean: Array | None = None, running_var: Array | None = None,
                                    momentum: float = 0.1) -> tuple[Array, Array, Array]:
        """``(y, mean, rstd)`` with the batch's own statistics, and the running statistics (when given, and
        the batch is not empty) moved toward them: stats, rstd, forward and update_running in one call."""

    def batch_norm_backward(self, dy: Array, x: Array, mean: Array, rstd: Array, weight: Array | None,
                            training: bool) -> tuple[Array, Array | None, Array | None]:
        """``(dx, dweight, dbias)``; ``training`` says the statistics came from the batch itself."""

    def batch_norm_backward_reduce(self, dy: Array, x: Array, mean: Array, rstd: Array) -> tuple[Array, Array]:
        """``(sum dy, sum dy * xhat)`` per channel: the reductions SyncBatchNorm all-reduces."""

    def batch_norm_backward_elemt(self, dy: Array, x: Array, mean: Array, rstd: Array, weight: Array | None,
                                  mean_dy: Array, mean_dy_xhat: Array) -> Array:
        """``dx`` from the (all-reduced) means of ``dy`` and ``dy * xhat``."""

    def batch_norm_update_running(self, running_mean: Array, running_var: Array, mean: Array, var: Array,
                                  count: int, momentum: float) -> None:
        """Move the running statistics toward the batch's, in place (the variance unbiased by ``count``)."""


class Softmax(Protocol):
    """Softmax over the last dim of a 2-D array, and its backward from the output.
    CUDA: ``backends/cuda/softmax.py``."""

    def softmax_forward(self, x: Array, scale: float = 1.0, causal: bool = False) -> Array:
        """``exp(y - max) / sum`` of ``y = scale * x``, row by row; with ``causal``, key j of query i
        (the last two dims) only for ``j <= i``, 0 elsewhere (attention's scale and mask, fused)."""

    def softmax_backward(self, grad: Array, out: Array, scale: float = 1.0, causal: bool = False) -> Array:
        """``scale * out * (grad - sum(grad * out))``, 0 where masked; ``out`` the forward's result."""

    def log_softmax_forward(self, x: Array) -> Array:
        """``x - logsumexp(x)``, row by row."""

    def log_softmax_backward(self, grad: Array, out: Array) -> Array:
        """``grad - exp(out) * sum(grad)``, ``out`` the forward's result."""


class Losses(Protocol):
    """Fused losses. CUDA: ``backends/cuda/losses.py``."""

    def cross_entropy_forward(self, logits: Array, target: Array, ignore_index: int = -100,
                              label_smoothing: float = 0.0) -> tuple[Array, Array]:
        """``(loss per row, logsumexp per row)`` of (N, C) logits and class targets, checked by the op."""

    def cross_entropy_backward(self, grad: Array, logits: Array, lse: Array, target: Array, ignore_index: int = -100,
                               label_smoothing: float = 0.0, grad_scale: float = 1.0) -> Array:
        """``dlogits``: ``grad_scale * grad * (softmax - smoothed one-hot)``, 0 on ignored rows."""


class Optim(Protocol):
    """Optimizer steps over lists of parameters, updated in place (PyTorch's rules; see the docstrings
    in :mod:`tinynorm.backends.cpu`). CUDA: ``backends/cuda/optim.py``."""

    def sgd_update(self, params: Sequence[Array], grads: Sequence[Array], momentum_buffers: Sequence[Array] | None,
                   *, lr: float, momentum: float, dampening: float, weight_decay: float, nesterov: bool,
                   maximize: bool, first_step: bool) -> None:
        """One SGD step (momentum, dampening, Nesterov, weight decay) for every parameter."""

    def adam_update(self, params: Sequence[Array], grads: Sequence[Array], exp_avgs: Sequence[Array],
                    exp_avg_sqs: Sequence[Array], max_exp_avg_sqs: Sequence[Array] | None, *, step: int, lr: float,
                    beta1: float, beta2: float, eps: float, weight_decay: float, decoupled_weight_decay: bool,
                    maximize: bool) -> None:
        """Adam step number ``step`` (AdamW with ``decoupled_weight_decay``, AMSGrad with maxima) for
        every parameter."""


class Random(Protocol):
    """Random numbers from tinynorm's generators. CUDA: ``backends/cuda/random.py``."""

    def random_uniform(self, generator: np.random.Generator, shape: Dims, dtype: Any) -> Array:
        """Uniform numbers in ``[0, 1)`` of ``shape`` and ``dtype``, drawn from the numpy ``generator``
        (in float64, so every device sees the same stream)."""


class Backend(Creation, Elementwise, Math, Reductions, Scan, Shape, Indexing, Sorting, Linalg, Conv, Normalization,
              Softmax, Losses, Optim, Random, Protocol):
    """Everything an op may call on a device's backend: on the CPU all in ``backends/cpu.py``, on CUDA in
    the module each family names."""

    name: str
    """The device name (``'cpu'``, ``'cuda'``)."""

    ndarray: type
    """The backend's array type (``isinstance(value, xp.ndarray)``)."""


FAMILIES: tuple[type, ...] = (Creation, Elementwise, Math, Reductions, Scan, Shape, Indexing, Sorting, Linalg, Conv,
                              Normalization, Softmax, Losses, Optim, Random)
"""The families, each named after the CUDA module implementing it ."""


def names(protocol: type) -> set[str]:
    """The names ``protocol`` declares itself (methods and attributes), without those it inherits."""
    members = vars(protocol)
    return {name for name in members if not name.startswith("_")} | set(members.get("__annotations__", {}))


def declared_names() -> set[str]:
    """Every name of :class:`Backend`."""
    return set().union(names(Backend), *(names(family) for family in FAMILIES))
