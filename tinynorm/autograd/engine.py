"""The backward engine: walk the graph from one tensor back to the leaves, in topological order.

1. Collect every node reachable from the output's ``grad_fn`` and order them so that a node comes
   before all the nodes it feeds (a reversed depth-first post-order, computed with an explicit stack so
   a graph of any depth works without Python recursion).
2. Give the output its starting gradient (1 for a scalar) and visit the nodes in that order: run the
   node's hooks, call its op's ``backward``, and add each input gradient into the pending gradient of
   the input's node. A gradient of a broadcast input is summed back to the input's shape here, once, so
   no op has to. By the time a node is visited, every path into it has delivered its share.
3. ``AccumulateGrad`` nodes add the result into their leaf's ``.grad``.
4. Unless ``retain_graph=True``, each node releases its saved arrays right after use.
"""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor, on_device
from .function import FREED_MESSAGE, AccumulateGrad, Node, _node_of


def topological_order(root: Node) -> list[Node]:
    """All nodes reachable from ``root``, each before the nodes it sends gradients to."""
    order: list[Node] = []
    visited = {root}
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


def backward(tensor: Tensor, gradient: Any = None, retain_graph: bool = False) -> None:
    """Accumulate d(tensor)/d(leaf), weighted by ``gradient``, into every leaf's ``.grad``."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "backward(): this tensor does not require grad and has no grad_fn. Did you create the "
            "inputs with requires_grad=True, or compute it under no_grad()?"
        )
    grad = _initial_gradient(tensor, gradient)
    root = _node_of(tensor)
    pending: dict[Node, Any] = {root: grad}
    for node in topological_order(root):
        grad = pending.pop(node, None)
        if grad is None:
            continue
        if node.hooks:
            grad = run_hooks(node.hooks, grad, _device_of(node, tensor.device))
        if type(node) is AccumulateGrad:
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
