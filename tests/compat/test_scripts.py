"""Tutorial-style PyTorch scripts run unchanged on tinynorm, with only their import lines swapped.

``scripts/NAME.py`` is a plain PyTorch script as a user writes it; ``scripts/NAME_tinynorm.py`` is the same
file with ``import torch`` made ``import tinynorm as torch`` (and ``torch.x`` imports made
``tinynorm.x``). Each library runs its scripts in one subprocess (``runner.py``). A copy passes when it
runs to the end (its own asserts included) and, where PyTorch is installed, prints what the original
prints: the same text, and numbers equal within float32 tolerance. A script may declare its own
tolerance or requirements in its first line, e.g. ``# compat: rtol=1e-3 atol=1e-4 requires=sklearn``.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"
NAMES = sorted(path.stem for path in SCRIPTS.glob("*.py") if not path.stem.endswith("_tinynorm"))
DEFAULTS = {"rtol": 1e-4, "atol": 1e-5}
# Printed text that is allowed to differ, each mapped to one form before lines are compared: tinynorm's
# dtypes are numpy's and print as `float32` (docs/differences.md), its shapes print as `tinynorm.Size([2, 3])`.
PRINTED_NAMES = [
    (re.compile(r"\b(?:torch|tinynorm)\.Size\("), "Size("),
    (re.compile(r"\b(?:torch|tinynorm)\.(bool|u?int(?:8|16|32|64)|float(?:16|32|64)|complex(?:64|128))\b"), r"\1"),
]
# Scripts that rely on a deliberate difference listed in docs/differences.md: their copies are expected to
# fail (strictly: one that passes fails the test, so the entry goes when the difference does).
DOCUMENTED_DIFFERENCES = {
    "gradient_penalty": "no higher-order gradients: autograd.grad(create_graph=True) is refused (docs/differences.md)",
}
NUMBER = re.compile(r"[-+]?(?:nan|inf)\b|[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def swap_imports(line: str) -> str:
    """The tinynorm form of one line of a PyTorch script: only import lines change."""
    if line.rstrip() == "import torch":
        return "import tinynorm as torch\n" if line.endswith("\n") else "import tinynorm as torch"
    return re.sub(r"^(import|from) torch\b", r"\1 tinynorm", line)


def header(name: str) -> dict:
    """The ``# compat:`` settings of a script's first line, with the default tolerances."""
    first = (SCRIPTS / f"{name}.py").read_text(encoding="utf-8").splitlines()[0]
    settings = dict(DEFAULTS, requires="")
    if first.startswith("# compat:"):
        for item in first[len("# compat:"):].split():
            key, value = item.split("=")
            settings[key] = value if key == "requires" else float(value)
    return settings


def missing_requirements(name: str) -> list[str]:
    return [module for module in header(name)["requires"].split(",")
            if module and importlib.util.find_spec(module) is None]


_results: dict[str, dict[str, dict]] = {}


def results(library: str, session: pytest.Session) -> dict[str, dict]:
    """What each selected script printed with ``library`` ("torch" or "tinynorm"), run once per session."""
    if library not in _results:
        selected = sorted({item.callspec.params["name"] for item in session.items
                           if item.module.__name__ == __name__ and hasattr(item, "callspec")
                           and "name" in item.callspec.params})
        runnable = [name for name in selected if not missing_requirements(name)]
        suffix = "" if library == "torch" else "_tinynorm"
        paths = [str(SCRIPTS / f"{name}{suffix}.py") for name in runnable]
        with tempfile.TemporaryDirectory() as workdir:
            results_file = os.path.join(workdir, "results.jsonl")
            process = subprocess.run([sys.executable, str(HERE / "runner.py"), results_file, *paths],
                                     capture_output=True, text=True, timeout=1200)
            with open(results_file, encoding="utf-8") as lines:
                by_name = {json.loads(line)["script"].removesuffix(".py").removesuffix(suffix): json.loads(line)
                           for line in lines}
        for name in runnable:  # a process that died reports the script it died in, and those after it
            by_name.setdefault(name, {"error": f"the runner process ended (exit status {process.returncode}) "
                                               f"before this script finished:\n{process.stderr[-3000:]}"})
        _results[library] = by_name
    return _results[library]


def run(library: str, name: str, request: pytest.FixtureRequest) -> dict:
    missing = missing_requirements(name)
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)}")
    if library == "tinynorm" and name in DOCUMENTED_DIFFERENCES:
        request.applymarker(pytest.mark.xfail(reason=DOCUMENTED_DIFFERENCES[name], strict=True))
    return results(library, request.session)[name]


def compare_outputs(expected: str, actual: str, rtol: float, atol: float) -> list[str]:
    """Line-by-line differences: text must be equal (whitespace aside), numbers within tolerance."""
    expected_lines, actual_lines = expected.splitlines(), actual.splitlines()
    problems = []
    if len(expected_lines) != len(actual_lines):
        problems.append(f"PyTorch printed {len(expected_lines)} lines, tinynorm {len(actual_lines)}")
    for number, (theirs, ours) in enumerate(zip(expected_lines, actual_lines), start=1):
        if not lines_match(theirs, ours, rtol, atol):
            problems.append(f"line {number}:\n  pytorch:  {theirs}\n  tinynorm: {ours}")
    return problems


def lines_match(theirs: str, ours: str, rtol: float, atol: float) -> bool:
    def pieces(line):
        for pattern, replacement in PRINTED_NAMES:
            line = pattern.sub(replacement, line)
        return [re.sub(r"\s", "", text) for text in NUMBER.split(line)], NUMBER.findall(line)

    (their_text, their_numbers), (our_text, our_numbers) = pieces(theirs), pieces(ours)
    return (their_text == our_text and len(their_numbers) == len(our_numbers)
            and all(numbers_match(a, b, rtol, atol) for a, b in zip(their_numbers, our_numbers)))


def numbers_match(theirs: str, ours: str, rtol: float, atol: float) -> bool:
    """Within tolerance, or within one unit of the last printed digit (rounding of nearly equal values)."""
    a, b = float(theirs), float(ours)
    if a != a or b != b:
        return a != a and b != b
    if a == b:
        return True
    return abs(a - b) <= max(atol + rtol * abs(a), last_digit_unit(theirs), last_digit_unit(ours))


def last_digit_unit(number: str) -> float:
    """The value of one unit in the last printed decimal place of a number with a point (0 for integers)."""
    mantissa, _, exponent = number.lower().partition("e")
    if "." not in mantissa:
        return 0.0
    decimals = len(mantissa.split(".")[1])
    return 10.0 ** (int(exponent or 0) - decimals)


def failure(result: dict) -> str:
    return f"{result['error']}\n--- it printed:\n{result.get('stdout', '')}{result.get('stderr', '')}"


@pytest.mark.parametrize("name", NAMES)
def test_copy_differs_only_in_imports(name):
    original = (SCRIPTS / f"{name}.py").read_text(encoding="utf-8").splitlines(keepends=True)
    copy = (SCRIPTS / f"{name}_tinynorm.py").read_text(encoding="utf-8").splitlines(keepends=True)
    assert copy == [swap_imports(line) for line in original]
    assert copy != original, "the copy imports nothing from tinynorm"


@pytest.mark.parametrize("name", NAMES)
def test_pytorch_original_runs(name, request):
    pytest.importorskip("torch")
    result = run("torch", name, request)
    assert result["error"] is None, failure(result)


@pytest.mark.parametrize("name", NAMES)
def test_tinynorm_copy_runs(name, request):
    ours = run("tinynorm", name, request)
    assert ours["error"] is None, failure(ours)


@pytest.mark.parametrize("name", NAMES)
def test_tinynorm_copy_prints_what_pytorch_prints(name, request):
    pytest.importorskip("torch")
    theirs, ours = run("torch", name, request), run("tinynorm", name, request)
    assert theirs["error"] is None, "the PyTorch original fails:\n" + failure(theirs)
    assert ours["error"] is None, "the tinynorm copy fails: " + ours["error"].strip().splitlines()[-1]
    settings = header(name)
    problems = compare_outputs(theirs["stdout"], ours["stdout"], settings["rtol"], settings["atol"])
    assert not problems, "\n".join(problems[:10])


def test_there_are_scripts_and_every_one_has_its_copy():
    copies = sorted(path.stem.removesuffix("_tinynorm") for path in SCRIPTS.glob("*_tinynorm.py"))
    assert copies == NAMES and len(NAMES) >= 30
