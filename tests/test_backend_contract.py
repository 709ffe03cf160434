"""The backend contract (:mod:`tinynorm.backends.contract`) is what the package uses and what the CPU
backend provides: every name reached on a backend anywhere in tinynorm is declared, every declared name
is used, and the CPU backend offers exactly those names with calls that bind (see backend_contract.py;
tests/cuda/test_backend_contract_cuda.py checks the CUDA backend the same way).
"""
import ast
import inspect
import pathlib

import tinynorm
from tinynorm.backends import contract, cpu
from tinynorm.ops import inplace

from backend_contract import contract_problems, signature_problems

PACKAGE = pathlib.Path(tinynorm.__file__).parent
# Functions that call ``getattr(backend, name)`` with a name their callers pass: (function, argument number).
DISPATCHERS = {"_fill": 0, "outside_graph": 0, "_test": 1, "unary_": 1, "arithmetic_": 1, "_arg_extreme": 3}
# Where those names come from indirectly: compare(name, a, b) passes its name on to outside_graph.
FORWARDERS = {"compare": 0}


def _is_backend(node: ast.AST) -> bool:
    """Whether ``node`` is a backend in the package's code: ``xp``, ``backend``, ``ctx.xp``, ``node.xp``,
    ``t._backend``, ``ctx.target`` (ToDevice's target backend) or ``get_backend(...)``."""
    if isinstance(node, ast.Name):
        return node.id in ("xp", "backend")
    if isinstance(node, ast.Attribute):
        return node.attr in ("xp", "_backend") or (node.attr == "target" and ast.unparse(node.value) == "ctx")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "get_backend"


def _strings(node: ast.AST) -> set[str]:
    """The string constants ``node`` can evaluate to (a constant, or a conditional between constants)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _strings(node.body) | _strings(node.orelse)
    return set()


def _function_names(tree: ast.AST) -> dict[ast.AST, str]:
    """Each node of ``tree`` mapped to the name of the innermost function around it."""
    owner = {}
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                owner[node] = function.name  # inner functions come later in the walk and win
    return owner


def _used_names() -> tuple[set[str], list[str]]:
    """The backend names the package (outside backends/ and kernels/) reaches, and the places that
    reach a name unknown to this test (``getattr(xp, variable)`` outside the known dispatchers)."""
    used, unknown = set(), []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in ("backends", "kernels"):
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_backend(node.value):
                used.add(node.attr)
            elif isinstance(node, ast.Call):
                callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                position = {**DISPATCHERS, **FORWARDERS}.get(callee)
                if position is not None and len(node.args) > position:
                    used |= _strings(node.args[position])
                if callee == "getattr" and node.args and _is_backend(node.args[0]):
                    names = _strings(node.args[1])
                    used |= names
                    if not names and _function_names(tree).get(node) not in DISPATCHERS:
                        unknown.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return used, unknown


def test_every_backend_name_the_package_uses_is_declared_and_every_declared_name_is_used():
    used, unknown = _used_names()
    used |= set(inplace._OUT_OF_PLACE)  # the in-place ops' names, also passed on from tables
    assert not unknown, f"getattr on a backend with a computed name: add its function to DISPATCHERS: {unknown}"
    declared = contract.declared_names()
    assert not used - declared, f"used on a backend but not declared in the contract: {sorted(used - declared)}"
    assert not declared - used, f"declared but used nowhere (dead backend code?): {sorted(declared - used)}"


def test_the_cpu_backend_provides_exactly_the_contract():
    assert contract_problems(cpu) == []


def test_each_family_declares_its_own_names_once():
    seen = {}
    for family in contract.FAMILIES:
        for name in contract.names(family):
            assert name not in seen, f"{name} is declared in {seen[name]} and {family.__name__}"
            seen[name] = family.__name__
    assert set(seen) | contract.names(contract.Backend) == contract.declared_names()


def _takes(a, b, axis=None, *, scale=1.0):
    return a


def test_signature_check_catches_what_would_break_a_call(monkeypatch):
    """The check is not vacuous: a renamed keyword, a changed default, a missing or an extra required
    argument, and a name missing from the backend are all reported."""
    class Declared:
        def take(self, a, indices, axis=None, mode="raise"):
            """stand-in"""
    monkeypatch.setattr(contract, "Backend", Declared)

    def renamed(a, indices, dim=None, mode="raise"): ...
    def changed(a, indices, axis=0, mode="raise"): ...
    def shorter(a, indices, axis=None): ...
    def longer(a, indices, out, axis=None, mode="raise"): ...
    def swapped(indices, a, axis=None, mode="raise"): ...
    def fine(a, indices, axis=None, mode="raise", extra=False): ...
    for wrong in (renamed, changed, shorter, longer, swapped):
        assert signature_problems("take", wrong), wrong.__name__
    assert signature_problems("take", fine) == []
    assert signature_problems("take", cpu.take) == []  # numpy's own: the name is what is checked
    module = type(cpu)("fake_backend")
    assert "missing: layer_norm_forward" in contract_problems(module)


def test_context_xp_and_get_backend_are_annotated_with_the_contract():
    """An editor follows ``ctx.xp.<name>`` to its declaration through these annotations."""
    from tinynorm.autograd.function import Context
    from tinynorm.backends import get_backend
    assert inspect.signature(Context.__init__).parameters["xp"].annotation == "Backend"
    assert inspect.signature(get_backend).return_annotation == "Backend"
