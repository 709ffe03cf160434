"""Which tutorial scripts are expected to fail on tinynorm, and why: the one table to edit.

Each entry names a script, the reason it fails (the missing name, or the deliberate difference in
docs/differences.md) and how: a piece of the exception line it raises (``Fails``), or the first printed
line that differs from PyTorch's (``Differs``). The test of such a script is a strict expected failure
only while it fails in that way; a script that now passes, or fails in another way, fails its test, so
its entry must then be removed or updated. ``python -m tests.compat.report`` prints the
status of every script on the current tree, with the entries to change.
"""

from typing import NamedTuple


class Fails(NamedTuple):
    """The tinynorm run raises an exception whose line contains ``error``."""
    reason: str
    error: str


class Differs(NamedTuple):
    """The tinynorm run runs to the end, but its printed ``line`` (1-based) is the first that differs."""
    reason: str
    line: int


EXPECTED_FAILURES: dict[str, Fails | Differs] = {
    "autograd_basics": Differs("binary_cross_entropy_with_logits is composed: its grad_fn is MeanBackward0 "
                               "(docs/differences.md)", 2),
    "gradient_penalty": Fails("no higher-order gradients (create_graph=True, docs/differences.md)",
                              "create_graph=True (higher-order gradients) is not supported"),
}


def shows_expected_failure(entry: Fails | Differs, error_line: str, problems: list[str]) -> bool:
    """Whether a tinynorm run fails as ``entry`` says, from its exception line ('' when it ran to the end)
    and its differences from PyTorch's output (if compared)."""
    if isinstance(entry, Fails):
        return entry.error in error_line if error_line else False
    differing_lines = [problem for problem in problems if problem.startswith("line ")]
    return not error_line and bool(differing_lines) and differing_lines[0].startswith(f"line {entry.line}:")
