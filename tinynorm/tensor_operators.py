"""The Tensor methods that need ``tinynorm.ops`` or ``tinynorm.autograd``: Python's operators
(``+``, ``@``, ``x[i]``, ``==``), the in-place methods (``add_``, ``copy_``, ``x[i] = v``), ``to``,
``backward`` and the hooks, the transposes (``T``, ``mT``) and ``size(dim)``.

The ops and autograd build on ``Tensor`` (they make tensors), so ``tinynorm.tensor`` cannot import
them; these methods are written here as the body of :class:`TensorOperators`, read like any class,
and :func:`tinynorm.tensor_methods.install` copies them onto ``Tensor`` when ``tinynorm`` is
imported. A copied method is an ordinary method of ``Tensor``: ``Tensor.__add__`` costs no extra call.
"""
from __future__ import annotations

import types
import warnings
from typing import Any, Callable

import numpy as np

from . import dtypes, ops
from .autograd import engine, function
from .autograd.hooks import RemovableHandle
from .backends import canonical_device
from .devices import device as _Device
from .ops import inplace
from .ops.dims import normalize_dim
from .tensor import Tensor, resolve_device


class TensorOperators:
    """Methods of :class:`tinynorm.Tensor` (``self`` is a Tensor); never instantiated."""

    @property
    def T(self) -> "Tensor":  # noqa: N802
        """The dims in reverse order (a view)."""
        return ops.permute(self, tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> "Tensor":  # noqa: N802  (PyTorch's name)
        """The last two dims swapped (a view): the matrix transpose of each matrix in a batch."""
        if self.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D "
                               f"tensor.")
        return ops.transpose(self, -2, -1)

    @property
    def mH(self) -> "Tensor":  # noqa: N802
        """The conjugate transpose of each matrix; tinynorm's tensors are real, so this is :attr:`mT`."""
        if self.ndim < 2:
            raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.ndim}-D "
                               f"tensor.")
        return ops.transpose(self, -2, -1)

    @property
    def H(self) -> "Tensor":  # noqa: N802
        """The conjugate transpose of a matrix (2-D only); of a real one, its transpose."""
        if self.ndim == 0:
            warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
            return ops.permute(self, ())
        if self.ndim != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
        return ops.transpose(self, 0, 1)

    def size(self, dim: int | None = None) -> Any:
        """The shape, or the size of dim ``dim`` (which may count from the end)."""
        if dim is None:
            return self.shape
        if self.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self.array.shape[normalize_dim(dim, self.ndim, "size")]

    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs: Any = None) -> None:
        """Add d(self)/d(leaf) into the ``.grad`` of every leaf that requires grad (of ``inputs`` only,
        when given).

        ``gradient`` is the upstream gradient (same shape as ``self``); it may be omitted for a
        one-element tensor such as a loss.
        """
        if create_graph:
            raise RuntimeError("backward(create_graph=True) is not supported: tinynorm records no graph of "
                               "backward itself, so it has no higher-order gradients (docs/differences.md)")
        engine.backward(self, gradient, bool(retain_graph), inputs)

    def register_hook(self, hook: Callable[["Tensor"], "Tensor | None"]) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it.

        Returns a handle whose ``remove()`` removes the hook.
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        node = function._node_of(self)
        if not node.hooks:
            node.hooks = []
        node.hooks.append(hook)
        return RemovableHandle(node.hooks, hook)

    def to(self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False,
           copy: bool = False) -> "Tensor":
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)`` or ``to(other)`` (its dtype and device);
        returns ``self`` when nothing changes (unless ``copy``)."""
        for arg in args:
            if isinstance(arg, Tensor):
                dtype, device = arg.dtype, arg.device
            elif isinstance(arg, (str, int)) and not isinstance(arg, bool):
                device = arg
            else:
                dtype = arg
        result = self
        if dtype is not None and dtypes.as_dtype(dtype) != self.dtype:
            result = ops.cast(result, dtypes.as_dtype(dtype))
        if device is not None and canonical_device(_Device(device)) != self.device:
            result = ops.to_device(result, resolve_device(device))
        return ops.clone(result) if copy and result is self else result

    # -------------------------------------------------------------------------------- in place
    # Each writes into this tensor's memory and returns the tensor itself; ``tinynorm.ops.inplace`` says
    # how autograd records them.
    def add_(self, other: Any, *, alpha: Any = 1) -> "Tensor":
        return inplace.arithmetic_(self, "add", other, alpha)

    def sub_(self, other: Any, *, alpha: Any = 1) -> "Tensor":
        return inplace.arithmetic_(self, "subtract", other, alpha)

    def mul_(self, other: Any) -> "Tensor":
        return inplace.arithmetic_(self, "multiply", other)

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> "Tensor":
        if rounding_mode is not None:
            return inplace.modify(self, lambda t, o: ops.div(t, o, rounding_mode=rounding_mode), other)
        return inplace.arithmetic_(self, "true_divide", other)

    divide_ = div_

    def pow_(self, exponent: Any) -> "Tensor":
        return inplace.arithmetic_(self, "power", exponent)

    def neg_(self) -> "Tensor":
        return inplace.unary_(self, "negative")

    def exp_(self) -> "Tensor":
        return inplace.unary_(self, "exp")

    def log_(self) -> "Tensor":
        return inplace.unary_(self, "log")

    def sqrt_(self) -> "Tensor":
        return inplace.unary_(self, "sqrt")

    def rsqrt_(self) -> "Tensor":
        return inplace.modify(self, ops.rsqrt)

    def abs_(self) -> "Tensor":
        return inplace.unary_(self, "abs")

    def tanh_(self) -> "Tensor":
        return inplace.unary_(self, "tanh")

    def sigmoid_(self) -> "Tensor":
        return inplace.modify(self, ops.sigmoid)

    def relu_(self) -> "Tensor":
        return inplace.modify(self, ops.relu)

    def clamp_(self, min: Any = None, max: Any = None) -> "Tensor":  # noqa: A002
        return inplace.clamp_(self, min, max)

    def clamp_min_(self, min: Any) -> "Tensor":  # noqa: A002
        return inplace.clamp_(self, min, None)

    def clamp_max_(self, max: Any) -> "Tensor":  # noqa: A002
        return inplace.clamp_(self, None, max)

    clip_ = clamp_

    def masked_fill_(self, mask: Any, value: Any) -> "Tensor":
        return inplace.masked_fill_(self, mask, value)

    def copy_(self, src: Any, non_blocking: bool = False) -> "Tensor":
        """Copy ``src`` (a tensor on any device, or host data; broadcast and cast) into this tensor."""
        return inplace.copy_(self, src)

    def fill_(self, value: Any) -> "Tensor":
        return inplace.fill_(self, value)

    def zero_(self) -> "Tensor":
        return inplace.fill_(self, 0)

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> "Tensor":
        return inplace.normal_(self, mean, std, generator)

    def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator: Any = None) -> "Tensor":
        return inplace.uniform_(self, from_, to, generator)

    def bernoulli_(self, p: float = 0.5, *, generator: Any = None) -> "Tensor":
        return inplace.bernoulli_(self, p, generator)

    def __setitem__(self, index: Any, value: Any) -> None:
        inplace.setitem(self, index, value)

    def __iadd__(self, other: Any) -> "Tensor":
        return self.add_(other)

    def __isub__(self, other: Any) -> "Tensor":
        return self.sub_(other)

    def __imul__(self, other: Any) -> "Tensor":
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> "Tensor":
        return self.div_(other)

    def __ipow__(self, exponent: Any) -> "Tensor":
        return self.pow_(exponent)

    def __imatmul__(self, other: Any) -> "Tensor":
        return inplace.modify(self, ops.matmul, other)

    def __ifloordiv__(self, other: Any) -> "Tensor":
        return inplace.modify(self, ops.floor_divide, other)

    def __imod__(self, other: Any) -> "Tensor":
        return inplace.modify(self, ops.remainder, other)

    def __iand__(self, other: Any) -> "Tensor":
        return inplace.modify(self, ops.bitwise_and, other)

    def __ior__(self, other: Any) -> "Tensor":
        return inplace.modify(self, ops.bitwise_or, other)

    def __ixor__(self, other: Any) -> "Tensor":
        return inplace.modify(self, ops.bitwise_xor, other)

    # ------------------------------------------------------------------------------ operators
    def __add__(self, other: Any) -> "Tensor":
        return ops.add(self, other)

    def __radd__(self, other: Any) -> "Tensor":
        return ops.add(other, self)

    def __sub__(self, other: Any) -> "Tensor":
        return ops.sub(self, other)

    def __rsub__(self, other: Any) -> "Tensor":
        return ops.sub(other, self)

    def __mul__(self, other: Any) -> "Tensor":
        return ops.mul(self, other)

    def __rmul__(self, other: Any) -> "Tensor":
        return ops.mul(other, self)

    def __truediv__(self, other: Any) -> "Tensor":
        return ops.true_divide(self, other)

    def __rtruediv__(self, other: Any) -> "Tensor":
        return ops.true_divide(other, self)

    def __pow__(self, exponent: Any) -> "Tensor":
        return ops.pow(self, exponent)

    def __rpow__(self, base: Any) -> "Tensor":
        return ops.pow(base, self)

    def __floordiv__(self, other: Any) -> "Tensor":
        return ops.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> "Tensor":
        return ops.floor_divide(other, self)

    def __mod__(self, other: Any) -> "Tensor":
        return ops.remainder(self, other)

    def __rmod__(self, other: Any) -> "Tensor":
        return ops.remainder(other, self)

    def __and__(self, other: Any) -> "Tensor":
        return ops.bitwise_and(self, other)

    __rand__ = __and__

    def __or__(self, other: Any) -> "Tensor":
        return ops.bitwise_or(self, other)

    __ror__ = __or__

    def __xor__(self, other: Any) -> "Tensor":
        return ops.bitwise_xor(self, other)

    __rxor__ = __xor__

    def __invert__(self) -> "Tensor":
        if self.array.dtype.kind not in "biu":
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return ops.bitwise_not(self)

    def __neg__(self) -> "Tensor":
        return ops.neg(self)

    def __pos__(self) -> "Tensor":
        return self

    def __abs__(self) -> "Tensor":
        return ops.abs(self)

    def __matmul__(self, other: Any) -> "Tensor":
        return ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> "Tensor":
        return ops.matmul(other, self)

    def __getitem__(self, index: Any) -> "Tensor":
        return ops.getitem(self, index)

    def __lt__(self, other: Any) -> "Tensor":
        return ops.lt(self, other)

    def __le__(self, other: Any) -> "Tensor":
        return ops.le(self, other)

    def __gt__(self, other: Any) -> "Tensor":
        return ops.gt(self, other)

    def __ge__(self, other: Any) -> "Tensor":
        return ops.ge(self, other)

    def __eq__(self, other: Any) -> "Tensor":  # type: ignore[override]
        if not isinstance(other, _COMPARABLE):
            return NotImplemented  # ``t == None`` is False, as in PyTorch
        return ops.eq(self, other)

    def __ne__(self, other: Any) -> "Tensor":  # type: ignore[override]
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return ops.ne(self, other)

    def __contains__(self, element: Any) -> bool:
        """``value in t``: whether any element equals ``value`` (a number or a tensor), as in PyTorch."""
        if not isinstance(element, _COMPARABLE):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}.")
        return bool(ops.eq(self, element).any())

    def __iter__(self) -> Any:
        """The slices along dim 0 (views), as ``unbind(0)``."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(ops.unbind(self, 0))


_COMPARABLE = (Tensor, int, float, np.ndarray, np.generic)  # what ``==`` compares elementwise (bool is an int)


def install(cls: type) -> None:
    """Copy the methods and properties of :class:`TensorOperators` onto ``cls``, named as its own
    (``Tensor.add_``)."""
    for name, attribute in vars(TensorOperators).items():
        if isinstance(attribute, (property, types.FunctionType)):
            function = attribute.fget if isinstance(attribute, property) else attribute
            function.__qualname__ = f"{cls.__name__}.{function.__name__}"
            setattr(cls, name, attribute)
