"""Module hooks, as PyTorch's: functions called around a module's ``forward`` and in its backward.

- ``register_forward_pre_hook(hook)``: ``hook(module, args)`` before ``forward``; a returned value
  replaces the positional arguments (a tuple, or one value).
- ``register_forward_hook(hook)``: ``hook(module, args, output)`` after it; a returned value replaces
  the output.
- ``register_full_backward_pre_hook(hook)``: ``hook(module, grad_output)`` when the gradients of the
  outputs are known; a returned tuple replaces them.
- ``register_full_backward_hook(hook)``: ``hook(module, grad_input, grad_output)`` when the gradients
  of the tensor inputs are known; a returned tuple replaces ``grad_input``.

Backward hooks work by passing the module's tensor inputs and outputs through identity ops whose
backward calls the hooks: the gradient an input's identity receives is the gradient through this
module only, whatever else uses the input.
"""
from __future__ import annotations

from typing import Any, Callable

from ..autograd.function import Context, Function
from ..autograd.hooks import RemovableHandle
from ..tensor import Tensor


def add_hook(registry: dict, hook: Callable, prepend: bool = False, **flags: Any) -> RemovableHandle:
    """Put ``hook`` (with its ``flags``) into a module's ``registry``, first or last; a handle removes it."""
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    key = object()
    registry[key] = (hook, flags)
    if prepend:
        entries = [(key, registry.pop(key))] + list(registry.items())
        registry.clear()
        registry.update(entries)
    return RemovableHandle(registry, key)


def call_with_hooks(module: Any, args: tuple, kwargs: dict) -> Any:
    """``module.forward(*args, **kwargs)`` with the module's hooks around it."""
    for hook, flags in list(module._forward_pre_hooks.values()):
        if flags.get("with_kwargs"):
            result = hook(module, args, kwargs)
            if result is not None:
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    backward = _BackwardHooks(module) if module._backward_hooks or module._backward_pre_hooks else None
    if backward is not None:
        args = backward.wrap_inputs(args)
    try:
        output = module.forward(*args, **kwargs)
    except Exception:
        for hook, flags in list(module._forward_hooks.values()):
            if flags.get("always_call"):
                hook(module, args, kwargs, None) if flags.get("with_kwargs") else hook(module, args, None)
        raise
    for hook, flags in list(module._forward_hooks.values()):
        result = hook(module, args, kwargs, output) if flags.get("with_kwargs") else hook(module, args, output)
        if result is not None:
            output = result
    return output if backward is None else backward.wrap_outputs(output)


class _BackwardHooks:
    """One forward call's bookkeeping: the gradients of its outputs, and then of its inputs."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.inputs: list[int] = []  # positions of the tensor inputs that require grad
        self.n_args = self.n_outputs = self.n_wrapped = 0
        self.grad_inputs: dict[int, Any] = {}
        self.grad_outputs: dict[int, Any] = {}

    def wrap_inputs(self, args: tuple) -> tuple:
        wrapped = list(args)
        for position, arg in enumerate(args):
            if isinstance(arg, Tensor) and arg.requires_grad:
                wrapped[position] = _HookIdentity.apply(arg, self.input_gradient, len(self.inputs))
                self.inputs.append(position)
        self.n_args = len(args)
        return tuple(wrapped)

    def wrap_outputs(self, output: Any) -> Any:
        outputs = output if isinstance(output, tuple) else (output,)
        wrapped = []
        for index, value in enumerate(outputs):
            if isinstance(value, Tensor) and value.requires_grad:
                value = _HookIdentity.apply(value, self.output_gradient, index)
                self.n_wrapped += 1
            wrapped.append(value)
        self.n_outputs = len(outputs)
        return tuple(wrapped) if isinstance(output, tuple) else wrapped[0]

    def output_gradient(self, index: int, grad: Tensor) -> Tensor:
        """Called with each output's gradient; once all have come, runs the pre-hooks (and, for a module
        whose inputs need no gradient, the hooks: there will be no input gradients to wait for)."""
        self.grad_outputs[index] = grad
        if len(self.grad_outputs) < self.n_wrapped:
            return grad
        grad_output = tuple(self.grad_outputs.get(i) for i in range(self.n_outputs))
        for hook, _ in list(self.module._backward_pre_hooks.values()):
            result = hook(self.module, grad_output)
            if result is not None:
                grad_output = tuple(result)
        self.grad_outputs = dict(enumerate(grad_output))
        if not self.inputs:
            self._call_hooks((None,) * max(self.n_args, 1))
        return self.grad_outputs[index]

    def input_gradient(self, index: int, grad: Tensor) -> Tensor:
        """Called with each tensor input's gradient; runs the hooks once all of them have come."""
        self.grad_inputs[index] = grad
        if len(self.grad_inputs) < len(self.inputs):
            return grad
        grad_input = [None] * self.n_args
        for i, position in enumerate(self.inputs):
            grad_input[position] = self.grad_inputs[i]
        replaced = self._call_hooks(tuple(grad_input))
        if replaced is None:
            return grad
        if len(self.inputs) > 1:
            raise RuntimeError(f"{type(self.module).__name__}: a full backward hook replaced grad_input of a module "
                               "with several tensor inputs; tinynorm supports that only for one tensor input")
        return replaced[self.inputs[0]]

    def _call_hooks(self, grad_input: tuple) -> tuple | None:
        grad_output = tuple(self.grad_outputs.get(i) for i in range(self.n_outputs))
        replaced = None
        for hook, _ in list(self.module._backward_hooks.values()):
            result = hook(self.module, grad_input if replaced is None else replaced, grad_output)
            if result is not None:
                replaced = tuple(result)
        return replaced


class _HookIdentity(Function):
    """``x`` unchanged (a view of it); its backward hands the gradient to ``callback(index, grad)``,
    which may replace it."""

    backward_name = "BackwardHookFunctionBackward"
    makes_view = True

    @staticmethod
    def view(xp: Any, x: Any, callback: Callable, index: int) -> Any:
        return x

    @staticmethod
    def forward(ctx: Context, x: Any, callback: Callable, index: int) -> Any:
        ctx.callback, ctx.index = callback, index
        return x

    @staticmethod
    def backward(ctx: Context, grad: Any) -> tuple:
        result = ctx.callback(ctx.index, Tensor._from_array(grad, ctx.device))
        return (grad if result is None else result.array), None, None
