"""Tutorial-style PyTorch scripts run unchanged on tinynorm, with only their import lines swapped.

How scripts are run and compared: ``harness.py``. Which are expected to fail, and why: ``status.py``.
"""
import importlib.util

import pytest

from harness import NAMES, SCRIPTS, differences, last_error_line, missing_requirements, run_scripts, swap_imports
from status import EXPECTED_FAILURES, Fails, shows_expected_failure


class ExpectedFailure(Exception):
    """Raised only when a script fails exactly as its entry in status.py says (the xfail's `raises`)."""


_results: dict[str, dict[str, dict]] = {}


def results(library: str, session: pytest.Session) -> dict[str, dict]:
    """What each selected script printed with ``library``; both libraries run once per session, together."""
    if not _results:
        selected = sorted({item.callspec.params["name"] for item in session.items
                           if item.module.__name__ == __name__ and hasattr(item, "callspec")
                           and "name" in item.callspec.params})
        runnable = [name for name in selected if not missing_requirements(name)]
        libraries = ("torch", "tinynorm") if importlib.util.find_spec("torch") else ("tinynorm",)
        _results.update(run_scripts(runnable, libraries))
    return _results[library]


def run(library: str, name: str, request: pytest.FixtureRequest) -> dict:
    missing = missing_requirements(name)
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)}")
    return results(library, request.session)[name]


def expect_failure(name: str, request: pytest.FixtureRequest, comparing: bool) -> None:
    """Mark a script listed in status.py a strict expected failure, of the kind its entry names."""
    entry = EXPECTED_FAILURES.get(name)
    if entry is not None and (comparing or isinstance(entry, Fails)):
        request.applymarker(pytest.mark.xfail(reason=entry.reason, strict=True, raises=ExpectedFailure))


def check(name: str, ours: dict, problems: list[str]) -> None:
    entry = EXPECTED_FAILURES.get(name)
    if entry is not None and shows_expected_failure(entry, last_error_line(ours), problems):
        raise ExpectedFailure(entry.reason)
    assert not problems, "\n".join(problems[:10]) + (
        f"\n(status.py expects: {entry})" if entry is not None else "")


@pytest.mark.parametrize("name", NAMES)
def test_script_imports_torch(name):
    original = (SCRIPTS / f"{name}.py").read_text(encoding="utf-8").splitlines(keepends=True)
    assert [swap_imports(line) for line in original] != original, "the script imports nothing from torch"


@pytest.mark.parametrize("name", NAMES)
def test_pytorch_original_runs(name, request):
    pytest.importorskip("torch")
    result = run("torch", name, request)
    assert result["error"] is None, f"{result['error']}\n--- it printed:\n{result['stdout']}{result['stderr']}"


@pytest.mark.parametrize("name", NAMES)
def test_tinynorm_runs(name, request):
    expect_failure(name, request, comparing=False)
    ours = run("tinynorm", name, request)
    problems = [] if ours["error"] is None else [f"{ours['error']}\n--- it printed:\n{ours['stdout']}{ours['stderr']}"]
    check(name, ours, problems)


@pytest.mark.parametrize("name", NAMES)
def test_tinynorm_prints_what_pytorch_prints(name, request):
    pytest.importorskip("torch")
    expect_failure(name, request, comparing=True)
    theirs, ours = run("torch", name, request), run("tinynorm", name, request)
    check(name, ours, differences(name, theirs, ours))


def test_there_are_scripts():
    assert len(NAMES) >= 30


def test_every_expected_failure_names_a_script():
    assert set(EXPECTED_FAILURES) <= set(NAMES)
