"""Print which tutorial scripts pass on the current tree, and the entries of status.py to change.

    python -m tests.compat.report [NAME ...]

Runs the PyTorch originals and the scripts with their imports swapped (all scripts, or those named) as the tests do, then
prints one line per script: the CPU seconds it took with each library, and ``pass``, ``expected failure``
(as status.py says), ``PASSES NOW`` (its entry must go) or ``FAILS`` (no entry, or another failure than
its entry names), with the reason. Exits with status 1 when status.py needs a change.
"""
import importlib.util
import sys

from .harness import NAMES, differences, last_error_line, missing_requirements, run_scripts
from .status import EXPECTED_FAILURES, shows_expected_failure


def status_of(name: str, results: dict[str, dict[str, dict]]) -> tuple[str, str]:
    """A script's status word and its reason, from what each library printed."""
    ours = results["tinynorm"][name]
    problems = (differences(name, results["torch"][name], ours) if "torch" in results
                else [f"the tinynorm run fails: {last_error_line(ours)}"] if ours["error"] else [])
    entry = EXPECTED_FAILURES.get(name)
    if entry is not None and shows_expected_failure(entry, last_error_line(ours), problems):
        return "expected failure", entry.reason
    if problems:
        expected = f" (status.py expects: {entry.reason})" if entry is not None else ""
        return "FAILS", problems[0].replace("\n", " ") + expected
    if entry is not None:
        return "PASSES NOW", f"remove its entry from status.py ({entry.reason})"
    return "pass", "" if "torch" in results else "ran to the end; not compared (PyTorch is not installed)"


def main(names: list[str]) -> int:
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        print(f"no such script: {', '.join(unknown)}; the scripts are: {', '.join(NAMES)}", file=sys.stderr)
        return 2
    selected = [name for name in names or NAMES if not missing_requirements(name)]
    for name in sorted(set(names or NAMES) - set(selected)):
        print(f"{name:28} skipped  needs {', '.join(missing_requirements(name))}")
    libraries = ("torch", "tinynorm") if importlib.util.find_spec("torch") else ("tinynorm",)
    results = run_scripts(selected, libraries)
    counts: dict[str, int] = {}
    suggestions = []
    for name in selected:
        word, reason = status_of(name, results)
        counts[word] = counts.get(word, 0) + 1
        seconds = " ".join(f"{results[library][name]['cpu_s']:5.1f}" for library in libraries)
        print(f"{name:28} {seconds} s  {word:17} {reason}")
        if word == "FAILS" and results["tinynorm"][name]["error"]:
            error = last_error_line(results["tinynorm"][name]).partition(": ")[2]
            suggestions.append(f"    {name!r}: Fails('REASON', {error!r}),")
    totals = ", ".join(f"{library} {sum(r['cpu_s'] for r in results[library].values()):.1f} s"
                        for library in libraries)
    print(f"\n{len(selected)} scripts: " + ", ".join(f"{n} {word}" for word, n in sorted(counts.items()))
          + f"; CPU time {totals}")
    if suggestions:
        print("\nEntries for status.py, if these failures are expected (a missing name as the reason):")
        print("\n".join(suggestions))
    return 1 if counts.get("FAILS") or counts.get("PASSES NOW") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
