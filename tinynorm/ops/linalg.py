"""Matrix products: ``matmul`` (numpy's rules, incl. batched and 1-D operands), the fused ``linear``, the
named products of PyTorch (``mm``, ``bmm``, ``mv``, ``dot``, ``outer``, ``addmm``, ``baddbmm``), and
vector norms (``norm``, ``cdist``).

For C = A @ B: dA = dC @ B^T and dB = A^T @ dC, with ^T swapping the last two dims. Batch dims
that were broadcast are summed back by the engine.
"""
from __future__ import annotations

import math
from typing import Any

from .. import dtypes
from .._checks import check_tensor
from ..autograd.function import Context, Function
from ..tensor import Tensor
from . import arithmetic, shape
from .dims import normalize_dims


def _matmul_error(a: Any, b: Any) -> ValueError:
    return ValueError(
        f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} are not aligned: the last dim of the "
        f"first ({a.shape[-1]}) must equal the {'only' if b.ndim == 1 else 'second-to-last'} dim of "
        f"the second ({b.shape[0] if b.ndim == 1 else b.shape[-2]})"
    )


class MatMul(Function):
    backward_name = "MmBackward0"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError("matmul: both operands must have at least one dimension; use * for scalars")
        ctx.save_for_backward(a, b)
        try:
            return ctx.xp.matmul(a, b)
        except ValueError:
            raise _matmul_error(a, b) from None

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        a, b = ctx.saved_tensors
        xp = ctx.xp
        # matmul treats a 1-D ``a`` as a row (1, k) and a 1-D ``b`` as a column (k, 1), then drops
        # that dim from the result: restore it in the gradient, work in 2-D, and drop it again.
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        if b.ndim == 1:
            grad = grad[..., None]
        if a.ndim == 1:
            grad = xp.expand_dims(grad, -2)
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad_b = None
        if need_a:
            grad_a = xp.matmul(grad, xp.swapaxes(b2, -1, -2))
            grad_a = grad_a[..., 0, :] if a.ndim == 1 else grad_a
        if need_b:
            grad_b = xp.matmul(xp.swapaxes(a2, -1, -2), grad)
            grad_b = grad_b[..., 0] if b.ndim == 1 else grad_b
        return grad_a, grad_b


class Linear(Function):
    """y = x @ W^T + b for x of shape (..., in_features), W (out, in), b (out,): one fused op."""

    backward_name = "AddmmBackward0"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any) -> Any:
        if x.shape[-1] != weight.shape[1]:
            raise ValueError(
                f"linear: input has {x.shape[-1]} features (shape {tuple(x.shape)}) but the weight "
                f"{tuple(weight.shape)} expects {weight.shape[1]}"
            )
        ctx.save_for_backward(x, weight)
        return ctx.xp.linear(x, weight, bias)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        x, weight = ctx.saved_tensors
        xp = ctx.xp
        need_x, need_w, need_b = ctx.needs_input_grad
        grad2d = grad.reshape(-1, grad.shape[-1])
        grad_x = xp.matmul(grad2d, weight).reshape(x.shape) if need_x else None  # one GEMM over all rows
        grad_w = xp.matmul(grad2d.T, x.reshape(-1, x.shape[-1])) if need_w else None
        grad_b = xp.sum(grad2d, axis=0) if need_b else None
        return grad_x, grad_w, grad_b


def _same_dtype(op: str, first: Any, second: Any, names: tuple[str, str], fix: str) -> None:
    """Matrix products do not promote, as in PyTorch: mixed dtypes are an error saying how to convert."""
    dtype_a, dtype_b = getattr(first, "dtype", None), getattr(second, "dtype", None)
    if dtype_a is not None and dtype_b is not None and dtype_a != dtype_b:
        raise RuntimeError(f"{op}: {names[0]} has dtype {dtype_a} but {names[1]} has dtype {dtype_b}; they must "
                           f"be the same: {fix}")


def matmul(a: Any, b: Any) -> Tensor:
    check_tensor("matmul", "input", a)
    check_tensor("matmul", "other", b)
    _same_dtype("matmul", a, b, ("the first operand", "the second"), "convert one, e.g. b.to(a.dtype)")
    return MatMul.apply(a, b)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    check_tensor("linear", "input", x)
    check_tensor("linear", "weight", weight)
    if weight.ndim != 2:
        raise ValueError(f"linear: weight must be 2-D (out_features, in_features), got shape {tuple(weight.shape)}")
    if bias is not None and tuple(check_tensor("linear", "bias", bias).shape) != (weight.shape[0],):
        raise ValueError(f"linear: bias must have shape (out_features,) = ({weight.shape[0]},), got "
                         f"{tuple(bias.shape)}")
    _same_dtype("linear", x, weight, ("the input", "the weight"),
                "convert the input (x.float(), x.double()) or the layer (layer.to(x.dtype))")
    return Linear.apply(x, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_o = x1^T W_o x2 + b_o for x1 (*, in1), x2 (*, in2) and W (out, in1, in2): one matrix product
    x1 (W as (in1, out in2)), then a product with x2 summed over in2."""
    out, in1, in2 = weight.shape if weight.ndim == 3 else (None, None, None)
    if out is None or input1.shape[-1] != in1 or input2.shape[-1] != in2 or input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): expected input1 (*, in1), input2 (*, in2) and weight (out, in1, in2) with "
                           f"matching sizes, got {list(input1.shape)}, {list(input2.shape)} and {list(weight.shape)}")
    _same_dtype("bilinear", input1, weight, ("the input", "the weight"),
                "convert the input (x.float(), x.double()) or the layer (layer.to(x.dtype))")
    mixed = matmul(input1, weight.permute(1, 0, 2).reshape(in1, out * in2))
    y = (mixed.reshape(*input1.shape[:-1], out, in2) * input2.unsqueeze(-2)).sum(-1)
    return y if bias is None else y + bias


# ----------------------------------------------------------------------- named matrix products
class Mv(MatMul):
    backward_name = "MvBackward0"


class Dot(MatMul):
    backward_name = "DotBackward0"


class Bmm(MatMul):
    backward_name = "BmmBackward0"


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise RuntimeError(message)


def _no_promotion(a: Tensor, b: Tensor) -> None:
    _require(a.dtype == b.dtype, f"expected m1 and m2 to have the same dtype, but got: {a.dtype} != {b.dtype}")


def mm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002  (PyTorch's argument names)
    """The matrix product of two matrices (no broadcasting, no type promotion)."""
    check_tensor("mm", "input", input)
    check_tensor("mm", "mat2", mat2)
    _require(input.ndim == 2, "self must be a matrix")
    _require(mat2.ndim == 2, "mat2 must be a matrix")
    (n, k), (k2, m) = input.array.shape, mat2.array.shape
    _require(k == k2, f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    _no_promotion(input, mat2)
    return MatMul.apply(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002
    """The batch of matrix products of two 3-D tensors ``(b, n, k) @ (b, k, m)``."""
    check_tensor("bmm", "input", input)
    check_tensor("bmm", "mat2", mat2)
    _require(input.ndim == 3, "batch1 must be a 3D tensor")
    _require(mat2.ndim == 3, "batch2 must be a 3D tensor")
    (b, _, k), shape = input.array.shape, mat2.array.shape
    _require(shape[:2] == (b, k), f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but "
                                  f"got: [{shape[0]}, {shape[1]}].")
    _require(input.dtype == mat2.dtype, f"expected scalar type {dtypes.type_name(input.dtype)} but found "
                                        f"{dtypes.type_name(mat2.dtype)}")
    return Bmm.apply(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:  # noqa: A002
    """The product of a matrix and a vector."""
    check_tensor("mv", "input", input)
    check_tensor("mv", "vec", vec)
    _require(input.ndim == 2 and vec.ndim == 1,
             f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    (n, k) = input.array.shape
    _require(vec.array.shape[0] == k, f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({vec.array.shape[0]})")
    _require(input.dtype == vec.dtype, f"addmv input tensors must have the same dtype, but got "
                                       f"{dtypes.type_name(input.dtype)} and {dtypes.type_name(vec.dtype)}")
    return Mv.apply(input, vec)


def dot(input: Tensor, tensor: Tensor) -> Tensor:  # noqa: A002
    """The inner product of two 1-D tensors of the same size and dtype."""
    check_tensor("dot", "input", input)
    check_tensor("dot", "tensor", tensor)
    _require(input.ndim == 1 and tensor.ndim == 1,
             f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    n, m = input.array.shape[0], tensor.array.shape[0]
    _require(n == m, f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number of "
                     f"elements, but got {n} and {m} elements respectively")
    _require(input.dtype == tensor.dtype, f"dot : expected both vectors to have same dtype, but found "
                                          f"{dtypes.type_name(input.dtype)} and {dtypes.type_name(tensor.dtype)}")
    return Dot.apply(input, tensor)


def outer(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002
    """The outer product ``input[i] * vec2[j]`` of two 1-D tensors (promoted, as PyTorch)."""
    check_tensor("outer", "input", input)
    check_tensor("outer", "vec2", vec2)
    for name, value in (("self", input), ("vec2", vec2)):
        _require(value.ndim == 1, f"outer: Expected 1-D argument {name}, but got {value.ndim}-D")
    return arithmetic.mul(input.reshape(-1, 1), vec2)


def _scaled_sum(input: Tensor, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    """``beta * input + alpha * product``; ``input`` is only broadcast (NaN in it ignored) when beta is 0."""
    if beta == 0:
        return product if alpha == 1 else arithmetic.mul(product, alpha)
    scaled = product if alpha == 1 else arithmetic.mul(product, alpha)
    return arithmetic.add(input if beta == 1 else arithmetic.mul(input, beta), scaled)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)``, ``input`` broadcast to the product's shape."""
    product = mm(mat1, mat2)
    shape.expand(input, product.array.shape)
    return _scaled_sum(input, product, beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * bmm(batch1, batch2)``, ``input`` broadcast to the product's shape."""
    product = bmm(batch1, batch2)
    shape.expand(input, product.array.shape)
    return _scaled_sum(input, product, beta, alpha)


# --------------------------------------------------------------------------------------- norms
class VectorNorm(Function):
    """The ``ord``-norm of ``x`` over ``dims``: (sum |x|^ord)^(1/ord), max |x| (inf), min |x| (-inf) or
    the count of nonzeros (0). Its gradient is 0 where the norm is 0, as PyTorch's."""

    backward_name = "LinalgVectorNormBackward0"
    split_ties = True  # the gradient of the max norm is shared among the elements that attain it

    @staticmethod
    def forward(ctx: Context, x: Any, ord: float, dims: tuple[int, ...], keepdim: bool) -> Any:  # noqa: A002
        xp = ctx.xp
        magnitude = xp.abs(x)
        if ord == math.inf:
            kept = xp.amax(magnitude, axis=dims, keepdims=True)
        elif ord == -math.inf:
            kept = xp.amin(magnitude, axis=dims, keepdims=True)
        elif ord == 0:
            kept = xp.sum(magnitude != 0, axis=dims, keepdims=True).astype(x.dtype)
        elif ord == 1:
            kept = xp.sum(magnitude, axis=dims, keepdims=True)
        elif ord == 2:
            kept = xp.sqrt(xp.sum(x * x, axis=dims, keepdims=True))
        else:
            kept = xp.sum(magnitude**ord, axis=dims, keepdims=True) ** (1 / ord)
        ctx.save_for_backward(x, kept)
        ctx.ord = ord
        return kept if keepdim else xp.reshape(kept, tuple(n for d, n in enumerate(kept.shape) if d not in dims))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        x, kept = ctx.saved_tensors
        xp, ord = ctx.xp, ctx.ord  # noqa: A001
        grad = xp.reshape(grad, kept.shape)
        if ord == 0:
            return xp.zeros_like(x)
        if ord in (math.inf, -math.inf):
            hits = xp.abs(x) == kept
            if not ctx.function.split_ties:
                return grad * xp.sign(x) * hits
            return grad * xp.sign(x) * hits / xp.sum(hits, axis=_reduced(kept, x), keepdims=True)
        if ord == 1:
            return grad * xp.sign(x)
        scale = xp.where(kept == 0, 0, grad / xp.where(kept == 0, 1, kept) ** (ord - 1))
        if ord == 2:
            return x * scale
        magnitude = xp.abs(x)
        power = xp.where(magnitude == 0, 0, xp.where(magnitude == 0, 1, magnitude) ** (ord - 1))
        return xp.sign(x) * power * scale


class Distance(VectorNorm):
    """The norm of the differences in ``cdist``: PyTorch gives each element attaining the max norm the
    whole gradient."""

    backward_name = "CdistBackward0"
    split_ties = False


def _reduced(kept: Any, x: Any) -> tuple[int, ...]:
    """The dims a kept-dims reduction of ``x`` reduced (those of size 1 that ``x`` had larger)."""
    return tuple(d for d, (n, m) in enumerate(zip(kept.shape, x.shape)) if n == 1 and m != 1)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,  # noqa: A002
         dtype: Any = None) -> Tensor:
    """The vector ``p``-norm of ``input`` over ``dim`` (all elements by default): any real ``p``, ``inf``,
    ``-inf``; ``'fro'`` is the 2-norm over the (at most two) dims. The nuclear norm is not supported."""
    if dtype is not None:
        input = shape.cast(input, dtypes.as_dtype(dtype))
    if input.dtype.kind != "f":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{dtypes.type_name(input.dtype)}")
    if isinstance(p, str):
        if p == "nuc":
            raise NotImplementedError("norm(p='nuc'): the nuclear norm needs a singular value decomposition, which "
                                      "tinynorm does not have")
        if p != "fro":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        if dim is not None and not isinstance(dim, int) and len(dim) > 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {len(dim)}")
        p = 2
    dims = normalize_dims(dim, input.ndim, "norm")
    dims = tuple(range(input.ndim)) if dims is None or input.ndim == 0 else dims
    return VectorNorm.apply(input, float(p), dims, keepdim)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The ``p``-norm distances between the rows of ``x1`` (..., P, M) and of ``x2`` (..., R, M): (..., P, R)."""
    for name, value in (("X1", x1), ("X2", x2)):
        _require(value.ndim >= 2, f"cdist only supports at least 2D tensors, {name} got: {value.ndim}D")
    columns1, columns2 = x1.array.shape[-1], x2.array.shape[-1]
    _require(columns1 == columns2, f"X1 and X2 must have the same number of columns. X1: {columns1} X2: {columns2}")
    _require(p >= 0, "cdist only supports non-negative p values")
    differences = arithmetic.sub(shape.unsqueeze(x1, -2), shape.unsqueeze(x2, -3))
    return Distance.apply(differences, float(p), (differences.ndim - 1,), False)
