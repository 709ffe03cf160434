"""Running the tutorial scripts with each library and comparing what they print.

``scripts/NAME.py`` is a plain PyTorch script as a user writes it. tinynorm runs the same file with only its
imports swapped (``import torch`` made ``import tinynorm as torch``, ``torch.x`` imports made ``tinynorm.x``:
:func:`swap_imports`), as a user would swap them. Each library runs its scripts one after another in one subprocess (``runner.py``), so a script that changes
a global setting (print options, default device) restores it before it ends; the two processes run side by
side, one thread each. A script passes with tinynorm when it runs to the end (its own asserts included) and, where PyTorch
is installed, prints what the original prints: the same text, and numbers equal within float32 tolerance. A
script may declare its own tolerance or requirements in its first line, e.g. ``# compat: rtol=1e-3 atol=1e-4
requires=sklearn``.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
SCRIPTS = HERE / "scripts"
NAMES = sorted(path.stem for path in SCRIPTS.glob("*.py"))
LIBRARIES = ("torch", "tinynorm")
DEFAULTS = {"rtol": 1e-4, "atol": 1e-5}
# One thread per process: the two libraries run at once on a small machine, and neither's thread pool
# competes with the other's.
SINGLE_THREADED = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
# Printed text that is allowed to differ, each mapped to one form before lines are compared: tinynorm's
# dtypes are numpy's and print as `float32` (docs/differences.md), its shapes print as `tinynorm.Size([2, 3])`.
PRINTED_NAMES = [
    (re.compile(r"\b(?:torch|tinynorm)\.Size\("), "Size("),
    (re.compile(r"\b(?:torch|tinynorm)\.(bool|u?int(?:8|16|32|64)|float(?:16|32|64)|complex(?:64|128))\b"), r"\1"),
]
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
    """The modules a script's header requires that are not installed."""
    return [module for module in header(name)["requires"].split(",")
            if module and importlib.util.find_spec(module) is None]


def run_scripts(names: list[str], libraries: tuple[str, ...] = LIBRARIES) -> dict[str, dict[str, dict]]:
    """What each script printed and raised with each library: ``{library: {name: result}}``.

    A result has ``stdout``, ``stderr``, ``error`` (a traceback, or None) and ``cpu_s``. A runner that
    dies reports the scripts it did not finish as errors.
    """
    with tempfile.TemporaryDirectory() as workdir:
        environment = dict(os.environ, **SINGLE_THREADED)
        started = {}
        for library in libraries:
            results_file = os.path.join(workdir, f"{library}.jsonl")
            command = [sys.executable, str(HERE / "runner.py"), library, results_file,
                       *(str(SCRIPTS / f"{name}.py") for name in names)]
            started[library] = (results_file, subprocess.Popen(command, env=environment, stdout=subprocess.PIPE,
                                                               stderr=subprocess.PIPE, text=True))
        return {library: collect(names, library, *started[library]) for library in libraries}


def collect(names: list[str], library: str, results_file: str, process: subprocess.Popen) -> dict[str, dict]:
    _, stderr = process.communicate(timeout=1200)
    by_name = {}
    if os.path.exists(results_file):
        with open(results_file, encoding="utf-8") as lines:
            for result in map(json.loads, lines):
                by_name[result["script"].removesuffix(".py")] = result
    for name in names:
        by_name.setdefault(name, {"stdout": "", "stderr": "", "cpu_s": 0.0,
                                  "error": f"the {library} process ended (exit status {process.returncode}) before "
                                           f"this script finished:\n{stderr[-3000:]}"})
    return by_name


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


def last_error_line(result: dict) -> str:
    """The exception line of a failed script's traceback ('' when it ran to the end): the last line that is
    not indented, so that a message's indented continuation lines are left out."""
    if result["error"] is None:
        return ""
    return [line for line in result["error"].strip().splitlines() if line and not line[0].isspace()][-1]


def differences(name: str, theirs: dict, ours: dict) -> list[str]:
    """Why the tinynorm run of a script does not match the PyTorch original ([] when it does)."""
    if theirs["error"] is not None:
        return ["the PyTorch original fails: " + last_error_line(theirs)]
    if ours["error"] is not None:
        return ["the tinynorm run fails: " + last_error_line(ours)]
    settings = header(name)
    return compare_outputs(theirs["stdout"], ours["stdout"], settings["rtol"], settings["atol"])
