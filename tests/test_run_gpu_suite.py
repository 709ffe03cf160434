"""``benchmarks/gpu_session.py``, the one call a session with a lent GPU makes, works without a GPU.

Its runner keeps going past a failing or hanging step, stops at its deadline and records every outcome;
its steps name scripts and options that exist; and its first step (versions and one kernel) runs in
Numba's CUDA simulator. The GPU steps themselves are the scripts' own business (their simulator runs
are tested in ``tests/cuda``).
"""
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_session  # noqa: E402
from gpu_session import Step, run_session  # noqa: E402


def python_step(name: str, code: str, limit_s: float = 30, gpu_only: bool = False) -> Step:
    return Step(name, ["-c", code], limit_s, simulator_args=None if gpu_only else ["-c", code])


def test_runner_records_failures_and_timeouts_and_goes_on(tmp_path):
    steps = [
        python_step("fails", "import sys; print('broken'); sys.exit(3)"),
        python_step("hangs", "import time; print('started', flush=True); time.sleep(60)", limit_s=1),
        python_step("works", "print('hello from the last step')"),
    ]
    outcomes = run_session(steps, tmp_path, budget_s=60, simulator=False)
    assert [(o.name, o.status, o.returncode) for o in outcomes[:1]] == [("fails", "failed", 3)]
    assert outcomes[1].status == "timed out" and outcomes[1].seconds < 10
    assert outcomes[2].status == "ok" and outcomes[2].returncode == 0
    log = (tmp_path / "session.log").read_text()
    assert "broken" in log and "started" in log and "hello from the last step" in log
    record = json.loads((tmp_path / "session.json").read_text())
    assert [step["status"] for step in record["steps"]] == ["failed", "timed out", "ok"]
    assert record["environment"] is None  # no step printed one


def test_budget_skips_the_steps_it_has_no_time_for(tmp_path):
    steps = [python_step("first", "print(1)"), python_step("second", "print(2)")]
    outcomes = run_session(steps, tmp_path, budget_s=gpu_session.MIN_STEP_SECONDS - 1, simulator=False)
    assert [o.status for o in outcomes] == ["skipped", "skipped"]


def test_simulator_runs_only_the_steps_with_a_simulator_variant(tmp_path):
    steps = [python_step("gpu", "import sys; sys.exit(1)", gpu_only=True),
             python_step("both", "import os; print('sim=' + os.environ['NUMBA_ENABLE_CUDASIM'])")]
    outcomes = run_session(steps, tmp_path, budget_s=60, simulator=True)
    assert [o.status for o in outcomes] == ["gpu only", "ok"]
    assert "sim=1" in (tmp_path / "session.log").read_text()


def test_out_folder_is_substituted_and_step_environment_applied(tmp_path):
    step = Step("writes", ["-c", "import os, sys; open(sys.argv[1], 'w').write(os.environ['FLAG'])",
                           "{out}/written.txt"], 30, env={"FLAG": "on"})
    (outcome,) = run_session([step], tmp_path, budget_s=60, simulator=False)
    assert outcome.status == "ok" and (tmp_path / "written.txt").read_text() == "on"


def test_steps_name_existing_scripts_and_options():
    """A renamed script or option would otherwise surface only in a GPU session, costing its time."""
    for step in gpu_session.STEPS:
        for args in filter(None, [step.args, step.simulator_args]):
            if args[0] == "-c":
                continue
            source = Path(args[0]).read_text()
            for option in (arg for arg in args[1:] if arg.startswith("--")):
                assert re.search(rf"add_argument\(\s*\"{option}\"", source), f"{step.name}: {args[0]} has no {option}"


def test_at_most_eight_files_come_back():
    """The device tool returns at most 8 files from $OUT: the steps' JSON files, session.json and .log."""
    outputs = {arg for step in gpu_session.STEPS for arg in step.args if arg.startswith("{out}/")}
    assert len(outputs) + 2 <= 8


@pytest.mark.timeout(120)
def test_environment_step_compiles_and_runs_a_kernel_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    result = subprocess.run([sys.executable, "-c", gpu_session.ENVIRONMENT], env=env, capture_output=True,
                            text=True, timeout=120, check=True)
    record = gpu_session.environment(result.stdout)
    assert record["simulator"] is True and record["first_kernel_ok"] is True
    assert record["numpy"] and record["numba"]


def write_wheel(folder: Path, name: str, version: str) -> None:
    """A minimal pure-Python wheel whose module ``name`` holds ``VERSION = version``."""
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": f"VERSION = {version!r}\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def test_carried_wheels_come_first_on_the_steps_path(tmp_path, monkeypatch):
    """How the GPU machine gets numpy 2.4 over its own numpy 2.5: the carried wheel must win."""
    installed = tmp_path / "installed" / "tinynorm_carried_probe"
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("VERSION = '2.5'\n")
    monkeypatch.setenv("PYTHONPATH", str(installed.parent))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    write_wheel(wheels, "tinynorm_carried_probe", "2.4")
    logged = []
    env = gpu_session.install_wheels(logged.append, wheels, tmp_path / "site")
    assert "exit status 0" in logged[0], logged
    result = subprocess.run([sys.executable, "-c", "import tinynorm_carried_probe as m; print(m.VERSION)"],
                            env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "2.4"


def test_no_wheels_no_change_of_path(tmp_path):
    env = gpu_session.install_wheels(lambda text: None, tmp_path, tmp_path / "site")
    assert env.get("PYTHONPATH") == os.environ.get("PYTHONPATH")
