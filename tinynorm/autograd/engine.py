"""The backward engine: walk the graph from the outputs back to the leaves, in topological order.

1. Collect every node reachable from the outputs' ``grad_fn`` and order them so that a node comes
   before all the nodes it feeds (a reversed depth-first post-order, computed with an explicit stack so
   a graph of any depth works without Python recursion).
2. Give each output its starting gradient (1 for a scalar) and visit the nodes in that order: run the
   node's hooks, call its op's ``backward``, and add each input gradient into the pending gradient of
   the input's node. A gradient of a broadcast input is summed back to the input's shape here, once, so
   no op has to. By the time a node is visited, every path into it has delivered its share.
3. ``AccumulateGrad`` nodes add the result into their leaf's ``.grad``; ``autograd.grad`` instead
   collects the gradients of the tensors it was asked about and leaves every ``.grad`` alone.
4. Unless ``retain_graph=True``, each node releases its saved arrays right after use.
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

from ..tensor import Tensor, on_device
from .function import FREED_MESSAGE, AccumulateGrad, Node, _node_of


def topological_order(roots: Node | Sequence[Node]) -> list[Node]:
    """All nodes reachable from ``roots``, each before the nodes it sends gradients to."""
    roots = [roots] if isinstance(roots, Node) else list(roots)
    order: list[Node] = []
    visited = set(roots)
    for root in roots:
        stack = [(root, iter(root.next_nodes))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child is not None and child not in visited:
                    visited.add(child)
                    stack.append((child, iter(child.next_nodes)))
                    break
            else:
                stack.pop()
                order.append(node)
    order.reverse()
    return order


def run_hooks(hooks: list, grad: Any, device: str) -> Any:
    """Call each tensor hook on the gradient; a hook may return a replacement gradient."""
    for hook in hooks:
        result = hook(Tensor._from_array(grad, device))
        if result is not None:
            grad = result.array if isinstance(result, Tensor) else result
    return grad


def backward(tensor: Tensor, gradient: Any = None, retain_graph: bool = False,
             inputs: Sequence[Tensor] | None = None) -> None:
    """Accumulate d(tensor)/d(leaf), weighted by ``gradient``, into every leaf's ``.grad`` (into the
    ``.grad`` of ``inputs`` only, leaves or not, when they are given)."""
    if inputs is None:
        run_backward([tensor], [gradient], retain_graph)
        return
    inputs = _as_inputs(inputs, "backward")
    grads = run_backward([tensor], [gradient], retain_graph, inputs)
    for tensor_, grad in zip(inputs, grads):
        if grad is not None:
            _accumulate_into(tensor_, grad)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple[Tensor | None, ...]:
    """The gradients of ``outputs`` with respect to each of ``inputs``, returned rather than added into
    ``.grad`` (which no tensor's changes): ``torch.autograd.grad``.

    ``grad_outputs`` holds the upstream gradient of each output (None: 1 for a one-element output). An
    input the outputs do not depend on is an error unless ``allow_unused=True`` (then its gradient is
    None, or zeros with ``materialize_grads=True``). tinynorm records no graph of backward itself, so
    ``create_graph=True`` (higher-order gradients) and ``is_grads_batched=True`` raise. ``only_inputs`` is
    accepted and ignored, as PyTorch ignores it (deprecated, with a warning when False).
    """
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.", stacklevel=2)
    if create_graph:
        raise RuntimeError("autograd.grad: create_graph=True (higher-order gradients) is not supported: "
                           "tinynorm's backward works on arrays and is never recorded (docs/differences.md)")
    if is_grads_batched:
        raise RuntimeError("autograd.grad: is_grads_batched=True is not supported")
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = _as_inputs(inputs, "grad")
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"autograd.grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    grads = run_backward(outputs, grad_outputs, bool(retain_graph), inputs)
    results = []
    for index, (tensor, result) in enumerate(zip(inputs, grads)):
        if result is None:
            if not (allow_unused or materialize_grads):
                raise RuntimeError(
                    f"autograd.grad: input {index} (shape {tuple(tensor.shape)}) appears to not have been used "
                    "in the graph. Set allow_unused=True if this is the desired behavior."
                )
            results.append(tensor._backend.zeros_like(tensor.array) if materialize_grads else None)
        else:
            results.append(result)
    return tuple(None if r is None else Tensor._from_array(r, t.device) for r, t in zip(results, inputs))


def run_backward(tensors: Sequence[Tensor], gradients: Sequence[Any], retain_graph: bool,
                 inputs: Sequence[Tensor] | None = None) -> list[Any] | None:
    """Backpropagate from ``tensors`` (each with its upstream gradient). Without ``inputs``, gradients go
    into the leaves' ``.grad``; with them, nothing is accumulated and the gradient arriving at each
    input's node is returned (None for an input that was not reached)."""
    pending: dict[Node, Any] = {}
    for tensor, gradient in zip(tensors, gradients):
        if not tensor.requires_grad:
            raise RuntimeError(
                "backward(): this tensor does not require grad and has no grad_fn. Did you create the "
                "inputs with requires_grad=True, or compute it under no_grad()?"
            )
        node, start = _node_of(tensor), _initial_gradient(tensor, gradient)
        pending[node] = pending[node] + start if node in pending else start
    wanted = None if inputs is None else {_node_of(t): None for t in inputs if t.requires_grad}
    for node in topological_order(list(pending)):
        grad = pending.pop(node, None)
        if grad is None:
            continue
        if node.hooks:
            grad = run_hooks(node.hooks, grad, _device_of(node, tensors[0].device))
        if wanted is not None and node in wanted:
            wanted[node] = grad
        if type(node) is AccumulateGrad:
            if wanted is None:
                node.accumulate(grad)
            continue
        if node.released:
            raise RuntimeError(FREED_MESSAGE)
        input_grads = node.function.backward(node, grad)
        if type(input_grads) is not tuple:
            input_grads = (input_grads,)
        for next_node, meta, input_grad in zip(node.next_nodes, node.input_meta, input_grads):
            if next_node is None or input_grad is None:
                continue
            shape, dtype = meta
            if input_grad.shape != shape:
                input_grad = node.xp.unbroadcast(input_grad, shape)
            if input_grad.dtype != dtype:
                input_grad = input_grad.astype(dtype)
            if next_node in pending:
                pending[next_node] = pending[next_node] + input_grad
            else:
                pending[next_node] = input_grad
        if not retain_graph:
            node.release()
    if wanted is None:
        return None
    return [wanted.get(_node_of(t)) if t.requires_grad else None for t in inputs]


def _as_inputs(inputs: Any, op: str) -> list[Tensor]:
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not inputs:
        raise ValueError(f"{op}: inputs must be a non-empty sequence of tensors")
    for index, tensor in enumerate(inputs):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{op}: inputs[{index}] must be a Tensor, got {type(tensor).__name__}")
    return inputs


def _accumulate_into(tensor: Tensor, grad: Any) -> None:
    """Add ``grad`` into ``tensor.grad`` (``backward(inputs=...)`` does this for non-leaves too)."""
    if type(_node_of(tensor)) is AccumulateGrad:
        _node_of(tensor).accumulate(grad)
    elif tensor.retains_grad:
        return  # its retain_grad hook has stored the gradient already
    elif tensor.grad is None:
        tensor.grad = Tensor._from_array(grad, tensor.device)
    else:
        tensor.grad.array = tensor.grad.array + grad


def _device_of(node: Node, default: str) -> str:
    """The device of the gradient ``node`` receives: its op's output device, or its leaf's device."""
    if type(node) is AccumulateGrad:
        leaf = node.variable
        return default if leaf is None else leaf.device
    return node.device


def _initial_gradient(tensor: Tensor, gradient: Any) -> Any:
    xp = tensor._backend
    if gradient is None:
        if tensor.array.size != 1:
            raise RuntimeError(
                f"backward(): grad can be implicitly created only for scalar outputs, but this tensor "
                f"has shape {tuple(tensor.shape)}; pass gradient= (a tensor of that shape), or reduce "
                f"it first, e.g. loss.mean().backward()"
            )
        return xp.ones_like(tensor.array)
    if isinstance(gradient, Tensor):
        on_device(gradient, tensor.device, "backward()", "gradient is", "the tensor is")
    data = gradient.array if isinstance(gradient, Tensor) else xp.asarray(gradient, dtype=tensor.dtype)
    if data.shape != tensor.array.shape:
        raise RuntimeError(
            f"backward(): gradient has shape {tuple(data.shape)} but the tensor has shape "
            f"{tuple(tensor.shape)}; they must match"
        )
    return data
