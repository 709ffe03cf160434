"""The command line: help texts, clear errors with a non-zero exit, outputs written where asked."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tinynorm.cli import EXPERIMENTS, main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tinynorm", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args", [[], ["experiment"], ["bench"], ["demo"]])
def test_help_explains_every_command(args: list[str]) -> None:
    result = run_cli(*args, "--help")
    assert result.returncode == 0
    assert "usage: tinynorm" in result.stdout
    if args == ["experiment"]:
        for name in EXPERIMENTS:
            assert name in result.stdout
        assert "--quick" in result.stdout and "--seeds" in result.stdout
        assert "--device" not in result.stdout  # the experiments are CPU reproductions


@pytest.mark.parametrize(
    "args,message",
    [
        (["experiment", "no-such-experiment"], "invalid choice"),
        (["experiment", "placement", "--seeds", "0"], "positive integer"),
        (["experiment", "placement", "--device", "cuda"], "unrecognized arguments: --device"),
        (["bench", "nonsense"], "unknown benchmark"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_non_zero_with_a_message(args: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code != 0
    assert message in capsys.readouterr().err


def test_experiment_writes_its_outputs_where_asked(tmp_path: Path) -> None:
    out = tmp_path / "somewhere" / "else"
    result = run_cli("experiment", "standardization", "--quick", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "standardization.json").exists() and (out / "standardization.png").exists()
    assert str(out.resolve()) in result.stdout


def test_demo_table_marks_claims_left_to_the_full_run_without_judging_them() -> None:
    from tinynorm.cli import _checks_table
    from tinynorm.experiments.claims import FULL_RUN_ONLY, quick_mode_checks

    checks = [{"id": "a", "claim": "resolved", "passed": True}, {"id": "b", "claim": "too noisy", "passed": False}]
    judged, left = quick_mode_checks(checks, quick=True, resolvable=frozenset({"a"}))
    assert judged == checks[:1] and left == checks[1:]
    assert quick_mode_checks(checks, quick=False, resolvable=frozenset({"a"})) == (checks, [])
    with pytest.raises(ValueError, match="name no check"):
        quick_mode_checks(checks, quick=True, resolvable=frozenset({"c"}))
    rows = _checks_table({"demo": {"checks": judged, "full_run_only": left}})
    assert rows[2] == "| demo | resolved | PASS |"
    assert rows[3] == f"| demo | too noisy | {FULL_RUN_ONLY} |" and "FAIL" not in "\n".join(rows)


def test_audit_counts_passes_per_claim_and_reads_full_verdicts(tmp_path: Path) -> None:
    import json

    from tinynorm.experiments import audit

    assert audit.quick_seeds(0, 2) == [0, 1] and audit.quick_seeds(3, 2) == [6, 7]
    record = tmp_path / "full.json"
    record.write_text(json.dumps({"quick": False, "checks": [{"id": "a", "claim": "x", "passed": True},
                                                             {"id": "b", "claim": "y", "passed": False}]}))
    tally = {"a": {"claim": "x", "passed": 5, "runs": 5}, "b": {"claim": "y", "passed": 5, "runs": 5},
             "c": {"claim": "z", "passed": 4, "runs": 5}}
    rows = audit.table(tally, audit.full_verdicts(record))
    assert rows[2:] == ["| a | PASS | 5/5 | yes |", "| b | FAIL | 5/5 | no |", "| c | - | 4/5 | no |"]
    record.write_text(json.dumps({"quick": True, "checks": []}))
    with pytest.raises(ValueError, match="quick-mode record"):
        audit.full_verdicts(record)


def test_audit_runs_the_quick_mode_of_an_experiment() -> None:
    """The audit drives the experiment through the CLI's runner: one quick run of the cheapest one."""
    from tinynorm.experiments import audit

    tally = audit.audit("standardization", runs=1, seeds_per_run=1)
    assert tally and all(entry["runs"] == 1 and entry["passed"] in (0, 1) for entry in tally.values())
