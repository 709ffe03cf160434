"""``einsum``: products and sums of tensors described by subscripts (``'bij,bjk->bik'``), as PyTorch's.

The equation is carried out with ops that are already differentiable, so its gradient comes for free:

1. A subscript repeated within one operand (``'ii->i'``) takes that operand's diagonal (indexing).
2. A subscript that appears in one operand only and not in the output is summed out at once.
3. The operands are then contracted left to right, two at a time, as one batched matrix product: the
   subscripts both share and still need become the batch dims, the ones both share and no longer
   need are contracted (the inner dim), and each side's own subscripts are the rows and columns.
4. What is left is summed over the subscripts the output lacks and permuted into the output's order.

Subscripts are letters; ``...`` stands for the dims no letter names (broadcast from the right), and
without ``->`` the output is ``...`` then the letters seen once, in alphabetical order. Dims of size 1
broadcast against the same subscript's larger size.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..tensor import Tensor, tensor
from .linalg import matmul
from .reductions import sum as sum_
from .shape import expand, getitem, permute, reshape

Labels = list[int]  # a letter's code point, or -k for the k-th ellipsis dim counted from the right


def _error(message: str) -> RuntimeError:
    return RuntimeError(f"einsum(): {message}")


def _parse_term(term: str, offset: int) -> tuple[list[int], bool]:
    """A term's letters (code points) and whether it has an ellipsis; ``offset`` locates errors."""
    letters, ellipsis, i = [], False, 0
    while i < len(term):
        if term.startswith("...", i):
            if ellipsis:
                raise _error("found more than one ellipsis (\"...\") in one subscript")
            letters.append(None)
            ellipsis, i = True, i + 3
            continue
        if not term[i].isascii() or not term[i].isalpha():
            raise _error(f"invalid subscript given at index {offset + i} in the equation string, subscripts must be "
                         f"in [a-zA-Z]")
        letters.append(ord(term[i]))
        i += 1
    return letters, ellipsis


def _expand_ellipsis(letters: list, ndim: int, position: int, has_ellipsis: bool) -> Labels:
    """The labels of an operand with ``ndim`` dims: its letters, the ellipsis as -k labels."""
    named = len(letters) - has_ellipsis
    if (not has_ellipsis and named != ndim) or named > ndim:
        raise _error(f"the number of subscripts in the equation ({named}) does not match the number of dimensions "
                     f"({ndim}) for operand {position}" + ("" if has_ellipsis else " and no ellipsis was given"))
    labels: Labels = []
    for letter in letters:
        labels += list(range(-(ndim - named), 0)) if letter is None else [letter]
    return labels


def _parse(equation: str, operands: Sequence[Tensor]) -> tuple[list[Labels], Labels]:
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise _error(f"{'more' if len(operands) > len(terms) else 'fewer'} operands were provided than specified in "
                     f"the equation")
    labels, offset, ellipsis_dims = [], 0, 0
    for position, (term, operand) in enumerate(zip(terms, operands)):
        letters, has_ellipsis = _parse_term(term, offset)
        labels.append(_expand_ellipsis(letters, operand.ndim, position, has_ellipsis))
        ellipsis_dims = max(ellipsis_dims, sum(1 for label in labels[-1] if label < 0))
        offset += len(term) + 1
    if arrow:
        letters, has_ellipsis = _parse_term(output, len(inputs) + 2)
        out = _expand_ellipsis(letters, len(letters) - has_ellipsis + (ellipsis_dims if has_ellipsis else 0), -1,
                               has_ellipsis)
        seen = {label for term_labels in labels for label in term_labels}
        for label in out:
            if out.count(label) > 1:
                raise _error(f"output subscript {chr(label)} appears more than once in the output")
            if label not in seen and label > 0:
                raise _error(f"output subscript {chr(label)} does not appear in the equation for any input operand")
    else:
        counts: dict[int, int] = {}
        for term_labels in labels:
            for label in term_labels:
                counts[label] = counts.get(label, 0) + 1
        out = list(range(-ellipsis_dims, 0)) + sorted(label for label, n in counts.items() if n == 1 and label > 0)
    return labels, out


def _take_diagonals(x: Tensor, labels: Labels) -> tuple[Tensor, Labels]:
    """``x`` with each label it repeats reduced to that label's diagonal (``'ii' -> 'i'``)."""
    while len(set(labels)) != len(labels):
        label = next(label for label in labels if labels.count(label) > 1)
        first, second = [d for d, other in enumerate(labels) if other == label][:2]
        rest = [d for d in range(x.ndim) if d not in (first, second)]
        x = permute(x, tuple(rest + [first, second]))
        n = min(x.array.shape[-2:])
        positions = tensor(list(range(n)), device=x.device)
        x = getitem(x, (Ellipsis, positions, positions))
        labels = [labels[d] for d in rest] + [label]
    return x, labels


def _sum_out(x: Tensor, labels: Labels, keep: set[int]) -> tuple[Tensor, Labels]:
    """``x`` summed over its labels not in ``keep``."""
    dropped = [d for d, label in enumerate(labels) if label not in keep]
    if not dropped:
        return x, labels
    return sum_(x, tuple(dropped)), [label for label in labels if label in keep]


def _sizes(operands: list[Tensor], labels: list[Labels]) -> dict[int, int]:
    """Each label's size: the sizes of one label must agree, or be 1 (broadcast)."""
    sizes: dict[int, int] = {}
    for position, (x, term) in enumerate(zip(operands, labels)):
        for label, n in zip(term, x.array.shape):
            seen = sizes.get(label, 1)
            if n != seen and 1 not in (n, seen):
                name = chr(label) if label > 0 else "..."
                raise _error(f"subscript {name} has size {n} for operand {position} which does not broadcast with "
                             f"previously seen size {seen}")
            sizes[label] = max(seen, n)
    return sizes


def _arranged(x: Tensor, labels: Labels, groups: list[Labels], sizes: dict[int, int]) -> Tensor:
    """``x`` permuted to the labels of ``groups`` in order, broadcast to ``sizes``, each group one dim."""
    order = [labels.index(label) for group in groups for label in group]
    x = permute(x, tuple(order))
    x = expand(x, tuple(sizes[label] for group in groups for label in group))
    return reshape(x, tuple(math.prod(sizes[label] for label in group) for group in groups))


def _contract(a: Tensor, a_labels: Labels, b: Tensor, b_labels: Labels, needed: set[int],
              sizes: dict[int, int]) -> tuple[Tensor, Labels]:
    """The pair's product as one batched matmul (see the module docstring, step 3)."""
    batch = [label for label in a_labels if label in b_labels and label in needed]
    inner = [label for label in a_labels if label in b_labels and label not in needed]
    rows = [label for label in a_labels if label not in b_labels]
    columns = [label for label in b_labels if label not in a_labels]
    product = matmul(_arranged(a, a_labels, [batch, rows, inner], sizes),
                     _arranged(b, b_labels, [batch, inner, columns], sizes))
    labels = batch + rows + columns
    return reshape(product, tuple(sizes[label] for label in labels)), labels


def einsum(equation: str, *operands: Any) -> Tensor:
    """The tensor described by ``equation`` over ``operands`` (given one by one or as one list)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise _error("must provide at least one operand")
    labels, out = _parse(equation, operands)
    tensors = []
    for k, x in enumerate(operands):
        x, labels[k] = _take_diagonals(x, labels[k])
        tensors.append(x)
    sizes = _sizes(tensors, labels)
    needed_by = [set(out).union(*labels[k + 1:]) for k in range(len(labels))]
    for k in range(len(tensors)):
        others = set(out).union(*(labels[j] for j in range(len(labels)) if j != k))
        tensors[k], labels[k] = _sum_out(tensors[k], labels[k], others)
    result, result_labels = tensors[0], labels[0]
    for k in range(1, len(tensors)):
        result, result_labels = _contract(result, result_labels, tensors[k], labels[k], needed_by[k], sizes)
    result, result_labels = _sum_out(result, result_labels, set(out))
    result = expand(result, tuple(sizes[label] for label in result_labels)) if result_labels else result
    return permute(result, tuple(result_labels.index(label) for label in out)) if out else result
