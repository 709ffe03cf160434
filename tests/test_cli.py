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
        assert "--quick" in result.stdout and "--seeds" in result.stdout and "--device" in result.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (["experiment", "no-such-experiment"], "invalid choice"),
        (["experiment", "placement", "--seeds", "0"], "positive integer"),
        (["experiment", "placement", "--device", "tpu"], "invalid choice"),
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
