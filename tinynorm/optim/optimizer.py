"""``Optimizer``: the base class of SGD and Adam; parameter groups, ``zero_grad`` and state dicts.

An optimizer holds ``param_groups``, a list of dicts that each hold a list of parameters (``'params'``)
and the options used to update them (``'lr'``, ``'momentum'``...), and ``state``, a dict from each
parameter to its per-parameter buffers (momentum, Adam's moving averages, the step count).
Subclasses define ``_update``: the rule for a group's parameters, given their gradients. Everything
else is here, with PyTorch's names and semantics.

Updates change ``p.array`` in place, so modules that hold the parameter see the new values; they never
write into ``p.grad.array``, which may share memory with arrays the autograd engine handed out.
"""
from __future__ import annotations

import copy
import numbers
from itertools import chain
from typing import Any, Callable, Iterable

from ..autograd import enable_grad, no_grad
from ..tensor import Tensor

ParamGroup = dict[str, Any]


class Optimizer:
    """Base class of optimizers. ``params`` is an iterable of tensors, or of dicts (parameter groups)
    such as ``{'params': model.head.parameters(), 'lr': 1e-2}`` whose options override ``defaults``."""

    def __init__(self, params: Iterable[Tensor] | Iterable[ParamGroup], defaults: dict[str, Any]) -> None:
        if isinstance(params, (Tensor, set, frozenset)):
            raise TypeError(
                f"params must be an ordered iterable of tensors or of dicts, got a {type(params).__name__}; "
                "pass [tensor] or model.parameters()"
            )
        self.defaults = dict(defaults)
        self.param_groups: list[ParamGroup] = []
        self.state: dict[Tensor, dict[str, Any]] = {}
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__} got an empty parameter list (an exhausted generator, such as "
                             "model.parameters() used twice?)")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: ParamGroup) -> None:
        """Add a group of parameters (a dict with ``'params'``); missing options take the defaults.

        Useful to train layers that were frozen so far, e.g. when fine-tuning.
        """
        if not isinstance(param_group, dict) or "params" not in param_group:
            raise TypeError(f"a parameter group must be a dict with a 'params' entry, got {param_group!r}")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, (set, frozenset)):
            raise TypeError("a parameter group's params must be an ordered sequence, not a set (its order changes "
                            "from run to run, which would scramble state dicts)")
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        if not group["params"]:
            raise ValueError(f"parameter group {len(self.param_groups)} of {type(self).__name__} is empty")
        for index, param in enumerate(group["params"]):
            _check_parameter(param, f"parameter {index} of group {len(self.param_groups)}")
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        self._check_options(group)
        known = {id(p) for g in self.param_groups for p in g["params"]}
        ids = [id(p) for p in group["params"]]
        if len(set(ids)) != len(ids) or known.intersection(ids):
            raise ValueError("some parameters appear more than once in the optimizer's parameter groups")
        self.param_groups.append(group)

    def _check_options(self, group: ParamGroup) -> None:
        """Raise ``ValueError`` for an invalid option of ``group`` (subclasses check their own)."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of all parameters: set ``.grad`` to None (the default) or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    # A fresh zero array, not zero_(): the old array may be shared with other gradients.
                    p.grad.array = p._backend.zeros_like(p.grad.array)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient. ``closure`` (re-evaluates the model and
        returns the loss) is called first if given; its loss is returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if params:
                    states = [self.state.setdefault(p, {}) for p in params]
                    self._update(params, [p.grad.array for p in params], states, group)
                    for p in params:
                        p._bump_version()  # an in-place write: graphs that saved the old values now refuse them
        return loss

    def _update(self, params: list[Tensor], grads: list[Any], states: list[dict[str, Any]],
                group: ParamGroup) -> None:
        """Update each ``param.array`` in place from its gradient array (never modified) and its state.
        All of a group's parameters come at once: the CUDA backend updates many per kernel launch."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------- state dict
    def state_dict(self) -> dict[str, Any]:
        """``{'state': {index: {name: value}}, 'param_groups': [{...options, 'params': [index]}]}``.

        Parameters are numbered in the order of the groups, as PyTorch does, so the dict can be
        loaded into a new optimizer built the same way over other parameter objects. As in PyTorch,
        the state tensors are shared with the optimizer, not copied: save or clone them before
        stepping again if you need a snapshot.
        """
        index_of: dict[int, int] = {}
        param_groups = []
        for group in self.param_groups:
            packed = {name: value for name, value in group.items() if name != "params"}
            packed["params"] = [index_of.setdefault(id(p), len(index_of)) for p in group["params"]]
            param_groups.append(packed)
        state = {index_of[id(p)]: dict(buffers) for p, buffers in self.state.items()}
        return {"state": state, "param_groups": param_groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore options and state from :meth:`state_dict` (copies; the dict is left untouched).

        The optimizer must have the same number of groups, each with the same number of parameters.
        State tensors are moved to their parameter's device and floating ones cast to its dtype.
        """
        if not isinstance(state_dict, dict) or set(state_dict) != {"state", "param_groups"}:
            keys = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise ValueError(f"load_state_dict: expected a dict with keys 'param_groups' and 'state', got {keys}")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"load_state_dict: the state dict has {len(saved_groups)} parameter groups, "
                f"this optimizer has {len(self.param_groups)}"
            )
        for index, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"load_state_dict: parameter group {index} has {len(saved['params'])} parameters in the "
                    f"state dict but {len(group['params'])} in this optimizer"
                )
        param_of = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                            chain.from_iterable(g["params"] for g in self.param_groups)))
        new_state: dict[Tensor, dict[str, Any]] = {}
        for index, buffers in state_dict["state"].items():
            if index not in param_of:
                raise ValueError(f"load_state_dict: state of parameter {index!r}, which no parameter group lists")
            param = param_of[index]
            new_state[param] = {name: _restore(value, param, f"state[{index!r}][{name!r}]")
                                for name, value in buffers.items()}
        new_groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            restored = copy.deepcopy({name: value for name, value in saved.items() if name != "params"})
            restored["params"] = group["params"]
            self._check_options(restored)
            new_groups.append(restored)
        self.state = new_state
        self.param_groups = new_groups

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            lines += [f"    {name}: {value}" for name, value in group.items() if name != "params"]
        return "\n".join(lines) + "\n)"


def _check_parameter(param: Any, where: str) -> None:
    if not isinstance(param, Tensor):
        raise TypeError(f"optimizers can only optimize Tensors, but {where} is a {type(param).__name__}")
    if not param.is_leaf:
        raise ValueError(f"{where} is not a leaf tensor (it was computed by {param.grad_fn.name()}): "
                         "optimizers can only update leaves such as parameters")


def _restore(value: Any, param: Tensor, where: str) -> Any:
    """A copy of a saved state value, moved to ``param``'s device (and dtype, if floating)."""
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    if value.shape != param.shape:
        raise ValueError(f"load_state_dict: {where} has shape {value.shape}, but its parameter has shape {param.shape}")
    dtype = param.dtype if value.dtype.kind == "f" else value.dtype
    return value.detach().to(dtype=dtype, device=param.device).clone()


def batches(params: list[Tensor], grads: list[Any], states: list[dict[str, Any]],
            key: Callable[[Tensor, dict[str, Any]], Any]) -> list[tuple[list, list, list]]:
    """``(params, grads, states)`` lists of the parameters with equal ``key(param, state)``, in order of
    first appearance: what one backend call can update together (one device and dtype, the same step)."""
    grouped: dict[Any, list[tuple]] = {}
    for param, grad, state in zip(params, grads, states):
        grouped.setdefault(key(param, state), []).append((param, grad, state))
    return [tuple(map(list, zip(*members))) for members in grouped.values()]


def check_non_negative(group: ParamGroup, *names: str) -> None:
    """Raise ``ValueError`` unless each named option of ``group`` is a real number >= 0."""
    for name in names:
        value = group[name]
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
            raise ValueError(f"invalid {name}: {value!r} (expected a number >= 0)")
