"""Checks of a backend against :mod:`tinynorm.backends.contract`, shared by the CPU and CUDA tests.

A backend must offer exactly the declared names, and every call written against a declared signature
must bind to its function: the same names for arguments the ops may pass by keyword, the same
defaults, no further required argument (optional extras, such as CUDA's ``dtype=`` on ``sum``, are
allowed). numpy objects re-exported unchanged are numpy's: their names are checked, not their
signatures.
"""
from __future__ import annotations

import inspect
import types
from typing import Any

import numpy as np

from tinynorm.backends import contract

Parameter = inspect.Parameter


def public_names(module: types.ModuleType) -> set[str]:
    """The names a backend module offers: its ``__all__``, or else its public bindings other than modules,
    typing aids and the device-independent helpers of ``tinynorm.backends`` it imports."""
    if hasattr(module, "__all__"):
        return set(module.__all__)
    return {name for name, value in vars(module).items()
            if not name.startswith("_") and name != "annotations" and not isinstance(value, types.ModuleType)
            and getattr(value, "__module__", None) not in ("typing", "collections.abc", "tinynorm.backends")}


def is_numpy(value: Any) -> bool:
    return isinstance(value, np.ufunc) or (getattr(value, "__module__", None) or "").startswith("numpy")


def _declared(name: str) -> list[Parameter]:
    return list(inspect.signature(getattr(contract.Backend, name)).parameters.values())[1:]  # without self


def _call(parameters: list[Parameter]) -> tuple[list[str], dict[str, str]]:
    """A call written against ``parameters``: positional-only and required arguments by position, the
    others by keyword (as the ops pass ``axis=``, ``out=``, ``keepdims=``)."""
    args, kwargs = [], {}
    for p in parameters:
        if p.kind is Parameter.POSITIONAL_ONLY or (p.kind is Parameter.POSITIONAL_OR_KEYWORD and p.default is p.empty):
            args.append(p.name)
        else:
            kwargs[p.name] = p.name
    return args, kwargs


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b)
    except Exception:  # noqa: BLE001  (values that do not compare are different)
        return False


def signature_problems(name: str, function: Any) -> list[str]:
    """What keeps calls written against the contract's ``name`` from working on ``function``."""
    if is_numpy(function):
        return []
    declared = _declared(name)
    actual = inspect.signature(function)
    problems = []
    args, kwargs = _call(declared)
    try:
        actual.bind(*args, **kwargs)
    except TypeError as error:
        problems.append(f"{name}: the call {name}({', '.join(args + [f'{k}=' for k in kwargs])}) does not bind to "
                        f"{actual}: {error}")
    takes_varargs = any(p.kind is Parameter.VAR_POSITIONAL for p in actual.parameters.values())
    order = list(actual.parameters)
    for index, p in enumerate(declared):
        passed_by_position = p.kind is Parameter.POSITIONAL_OR_KEYWORD and p.default is p.empty
        if passed_by_position and not takes_varargs and order[index:index + 1] != [p.name]:
            problems.append(f"{name}: argument {index} is {p.name!r} in the contract, {order[index:index + 1]} here")
        other = actual.parameters.get(p.name)
        if other is not None and p.default is not p.empty and other.default is not p.empty \
                and not _same(p.default, other.default):
            problems.append(f"{name}: {p.name} defaults to {other.default!r} here, {p.default!r} in the contract")
    return problems


def contract_problems(module: types.ModuleType) -> list[str]:
    """Every way ``module`` differs from the contract: missing names, undeclared extras, signatures."""
    declared, offered = contract.declared_names(), public_names(module)
    problems = [f"missing: {name}" for name in sorted(declared - offered)]
    problems += [f"not in the contract: {name}" for name in sorted(offered - declared)]
    for name in sorted(declared & offered):
        if callable(getattr(contract.Backend, name, None)):
            problems += signature_problems(name, getattr(module, name))
    return problems
