"""``Optimizer``: the base class of the optimizers; parameter groups, ``step``, ``zero_grad`` and state dicts.

An optimizer holds ``param_groups``, a list of dicts that each hold a list of parameters (``'params'``)
and the options used to update them (``'lr'``, ``'momentum'``...), and ``state``, a dict from each
parameter to its per-parameter buffers (momentum, Adam's moving averages, the step count).
Subclasses define ``_update``, the rule for a group's parameters given their gradients, ``_check_options``
and ``_state_layout``; everything else is here, with PyTorch's names and semantics.

Updates change ``p.array`` in place, so modules that hold the parameter see the new values; they never
write into ``p.grad.array``, which may share memory with arrays the autograd engine handed out.
"""
from __future__ import annotations

import copy
from collections import defaultdict
from itertools import chain
from typing import Any, Callable, Iterable

from ..autograd import enable_grad, no_grad
from ..tensor import Tensor
from .options import ParamGroup
from .state import Layout, restore_state


class Optimizer:
    """Base class of optimizers. ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs
    (``model.named_parameters()``), or of dicts (parameter groups) such as
    ``{'params': model.head.parameters(), 'lr': 1e-2}`` whose options override ``defaults``."""

    def __init__(self, params: Iterable[Tensor] | Iterable[ParamGroup], defaults: dict[str, Any]) -> None:
        if isinstance(params, (Tensor, set, frozenset)):
            raise TypeError(
                f"params must be an ordered iterable of tensors or of dicts, got a {type(params).__name__}; "
                "pass [tensor] or model.parameters()"
            )
        if not isinstance(params, Iterable) or isinstance(params, (str, bytes, dict)):
            raise TypeError(f"params must be an iterable of tensors or of dicts (parameter groups), got "
                            f"{type(params).__name__}; pass model.parameters()")
        self.defaults = dict(defaults)
        self.param_groups: list[ParamGroup] = []
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
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
        index = len(self.param_groups)
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, (set, frozenset)):
            raise TypeError("a parameter group's params must be an ordered sequence, not a set (its order changes "
                            "from run to run, which would scramble state dicts)")
        params = [params] if isinstance(params, Tensor) else list(params)
        named = [isinstance(p, tuple) for p in params]
        if any(named):
            if not all(named) or not all(len(p) == 2 for p in params):
                raise ValueError(f"param_groups[{index}]: give every parameter as a (name, tensor) pair, or none")
            group["param_names"] = [name for name, _ in params]
            params = [param for _, param in params]
        group["params"] = params
        for position, param in enumerate(params):
            _check_parameter(param, f"parameter {position} of group {index}")
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        self._check_options(group)
        known = {id(p) for g in self.param_groups for p in g["params"]}
        ids = [id(p) for p in params]
        if len(set(ids)) != len(ids) or known.intersection(ids):
            raise ValueError("some parameters appear more than once in the optimizer's parameter groups")
        self.param_groups.append(group)

    def _check_options(self, group: ParamGroup) -> None:
        """Raise ``TypeError``/``ValueError`` for an invalid option of ``group`` (subclasses check theirs)."""

    def _state_layout(self, group: ParamGroup) -> Layout | None:
        """The per-parameter state this optimizer keeps under ``group``'s options; ``load_state_dict``
        checks saved states against it. None (an optimizer defined elsewhere) loads any state as is."""
        return None

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
        returns the loss) is called first if given; its loss is returned.

        All gradients are checked before any parameter changes, so a bad one leaves the model as it was.
        """
        loss = None
        if closure is not None and not callable(closure):
            raise TypeError(f"{type(self).__name__}.step: closure must be a function returning the loss, got "
                            f"{type(closure).__name__}")
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            work = [(group, *self._gradients(index, group)) for index, group in enumerate(self.param_groups)]
            for group, params, grads in work:
                if params:
                    self._update(params, grads, [self.state[p] for p in params], group)
                    for p in params:
                        p._bump_version()  # in-place writes: graphs that saved the old values now refuse them
        return loss

    def _gradients(self, index: int, group: ParamGroup) -> tuple[list[Tensor], list[Any]]:
        """The parameters of ``group`` that have a gradient, and their gradient arrays in their dtype."""
        params, grads = [], []
        for position, param in enumerate(group["params"]):
            grad = param.grad
            if grad is None:
                continue
            if not (isinstance(grad, Tensor) and grad.array.shape == param.array.shape and grad.device == param.device
                    and grad.array.dtype == param.array.dtype):
                where = f"{type(self).__name__}.step: param_groups[{index}]['params'][{position}]"
                grad = _checked_gradient(param, grad, where)
            params.append(param)
            grads.append(grad.array)
        return params, grads

    def _update(self, params: list[Tensor], grads: list[Any], states: list[dict[str, Any]],
                group: ParamGroup) -> None:
        """Update each ``param.array`` in place from its gradient array (never modified) and its state
        (empty on a parameter's first step). All of a group's parameters come at once: the CUDA
        backend updates many per kernel launch."""
        raise NotImplementedError(f"{type(self).__name__} defines no update rule: subclasses of Optimizer "
                                  "override step() or _update()")

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
        # A parameter with an empty state was never updated (or SGD without momentum keeps nothing).
        state = {index_of[id(p)]: dict(buffers) for p, buffers in self.state.items() if buffers}
        return {"state": state, "param_groups": param_groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore options and state from :meth:`state_dict` (copies; the dict is left untouched).

        The optimizer must have the same number of groups, each with the same number of parameters.
        Everything is checked and converted before anything changes (the options, and each state
        against what this optimizer keeps: see :mod:`tinynorm.optim.state`); on an error the
        optimizer is exactly as before. State tensors are moved to their parameter's device and
        floating ones cast to its dtype. A ``torch.optim`` state dict of the same optimizer loads too.
        """
        if not isinstance(state_dict, dict) or set(state_dict) != {"state", "param_groups"}:
            keys = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise ValueError(f"load_state_dict: expected a dict with keys 'param_groups' and 'state', got {keys}")
        saved_groups, saved_state = state_dict["param_groups"], state_dict["state"]
        if not isinstance(saved_groups, (list, tuple)) or not all(
                isinstance(g, dict) and isinstance(g.get("params"), (list, tuple)) for g in saved_groups):
            raise TypeError("load_state_dict: 'param_groups' must be a list of dicts, each with a 'params' list")
        if not isinstance(saved_state, dict):
            raise TypeError(f"load_state_dict: 'state' must be a dict, got {type(saved_state).__name__}")
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
        new_groups = [self._restore_group(index, group, saved)
                      for index, (group, saved) in enumerate(zip(self.param_groups, saved_groups))]
        param_of = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                            chain.from_iterable(g["params"] for g in self.param_groups)))
        group_of = {index: group for saved, group in zip(saved_groups, new_groups) for index in saved["params"]}
        new_state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for index, saved in saved_state.items():
            if index not in param_of:
                raise ValueError(f"load_state_dict: state of parameter {index!r}, which no parameter group lists")
            if not isinstance(saved, dict):
                raise TypeError(f"load_state_dict: state[{index!r}] must be a dict, got {type(saved).__name__}")
            param, where = param_of[index], f"state[{index!r}]"
            layout = self._state_layout(group_of[index])
            new_state[param] = (restore_state(saved, param, layout, where, type(self).__name__) if layout is not None
                                else {name: _restore_any(value, param) for name, value in saved.items()})
        self.state = new_state
        self.param_groups = new_groups

    def _restore_group(self, index: int, group: ParamGroup, saved: ParamGroup) -> ParamGroup:
        """The options of ``saved`` (copied, checked; any missing take the defaults) over ``group``'s parameters."""
        restored = copy.deepcopy({name: value for name, value in saved.items() if name != "params"})
        for name, default in self.defaults.items():
            restored.setdefault(name, default)
        restored["params"] = group["params"]
        if "param_names" in group and "param_names" not in restored:
            restored["param_names"] = group["param_names"]
        try:
            self._check_options(restored)
        except (TypeError, ValueError) as error:
            raise type(error)(f"load_state_dict: param_groups[{index}]: {error}") from error
        return restored

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            lines += [f"    {name}: {group[name]}" for name in sorted(group) if name != "params"]
        return "\n".join(lines) + "\n)"


def _check_parameter(param: Any, where: str) -> None:
    if not isinstance(param, Tensor):
        raise TypeError(f"optimizers can only optimize Tensors, but {where} is a {type(param).__name__}")
    if not param.is_leaf:
        raise ValueError(f"{where} is not a leaf tensor (it was computed by {param.grad_fn.name()}): "
                         "optimizers can only update leaves such as parameters")


def _checked_gradient(param: Tensor, grad: Any, where: str) -> Tensor:
    """``grad`` in ``param``'s dtype, or the error that says what is wrong with it."""
    if not isinstance(grad, Tensor):
        raise TypeError(f"{where}.grad must be a Tensor, got {type(grad).__name__}")
    if grad.shape != param.shape:
        raise RuntimeError(f"{where} has shape {tuple(param.array.shape)}, but its gradient has shape {tuple(grad.array.shape)}")
    if grad.device != param.device:
        raise RuntimeError(f"{where} is on {param.device}, but its gradient is on {grad.device}")
    if grad.dtype.kind != "f":
        raise TypeError(f"{where}.grad must be floating, got dtype {grad.dtype}")
    return grad.detach().to(param.dtype)


def _restore_any(value: Any, param: Tensor) -> Any:
    """A copy of a saved state value of an optimizer without a layout: a tensor moves to the parameter's
    device (and dtype, if floating), anything else is copied as is."""
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
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
