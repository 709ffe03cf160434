"""Matrix products: ``matmul`` (numpy's rules, incl. batched and 1-D operands) and the fused ``linear``.

For C = A @ B: dA = dC @ B^T and dB = A^T @ dC, with ^T swapping the last two dims. Batch dims
that were broadcast are summed back by the engine.
"""
from __future__ import annotations

from typing import Any

from ..autograd.function import Context, Function
from ..tensor import Tensor


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
        grad_x = xp.matmul(grad, weight) if need_x else None
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
    _same_dtype("matmul", a, b, ("the first operand", "the second"), "convert one, e.g. b.to(a.dtype)")
    return MatMul.apply(a, b)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    _same_dtype("linear", x, weight, ("the input", "the weight"),
                "convert the input (x.float(), x.double()) or the layer (layer.to(x.dtype))")
    return Linear.apply(x, weight, bias)
