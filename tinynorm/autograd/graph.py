"""See the graph behind a tensor: a text dump (``format_graph``) and Graphviz DOT (``to_dot``)."""
from __future__ import annotations

from ..tensor import Tensor
from .function import AccumulateGrad, Context, Node, _node_of


def _label(node: Node) -> str:
    if isinstance(node, AccumulateGrad):
        leaf = node.variable
        if leaf is None:
            return "AccumulateGrad (leaf freed)"
        return f"AccumulateGrad (leaf {tuple(leaf.shape)} {leaf.dtype.name})"
    if isinstance(node, Context):
        freed = ", freed" if node.released else ""
        return f"{node.name()} -> {tuple(node.output_shape)}{freed}"
    return node.name()


def format_graph(tensor: Tensor) -> str:
    """An indented tree of the nodes that ``tensor.backward()`` would visit.

    A node reached a second time (its output was used twice) is printed once and referenced after.
    """
    if not tensor.requires_grad:
        return "(no graph: the tensor does not require grad)"
    root = _node_of(tensor)
    numbers: dict[Node, int] = {}
    lines: list[str] = []
    stack = [(root, "", "")]
    while stack:
        node, prefix, child_prefix = stack.pop()
        if node in numbers:
            lines.append(f"{prefix}[{numbers[node]}] (see above)")
            continue
        numbers[node] = len(numbers)
        lines.append(f"{prefix}[{numbers[node]}] {_label(node)}")
        children = [c for c in node.next_nodes if c is not None]
        for i, child in reversed(list(enumerate(children))):
            last = i == len(children) - 1
            stack.append((child, child_prefix + ("└─ " if last else "├─ "), child_prefix + ("   " if last else "│  ")))
    return "\n".join(lines)


def to_dot(tensor: Tensor) -> str:
    """The graph in Graphviz DOT: ``dot -Tpng graph.dot -o graph.png`` draws it, output at the top."""
    if not tensor.requires_grad:
        raise ValueError("to_dot: the tensor does not require grad, so it has no graph")
    root = _node_of(tensor)
    ids: dict[Node, str] = {root: "n0"}
    lines = ["digraph autograd {", "  rankdir=BT;", "  node [shape=box, fontname=monospace];"]
    stack = [root]
    edges = []
    while stack:
        node = stack.pop()
        shape = ", style=filled, fillcolor=lightblue" if isinstance(node, AccumulateGrad) else ""
        lines.append(f'  {ids[node]} [label="{_label(node)}"{shape}];')
        for child in node.next_nodes:
            if child is None:
                continue
            if child not in ids:
                ids[child] = f"n{len(ids)}"
                stack.append(child)
            edges.append(f"  {ids[child]} -> {ids[node]};")
    return "\n".join(lines + edges + ["}"])
