"""``benchmarks/run_gpu_suite.py``, which runs every GPU check and benchmark in one call, works without a GPU.

Its runner keeps going past a failing or hanging step, stops at its deadline, streams every step's
output to run.log as it comes and rewrites run.json after every step (a killed run keeps what it had),
reruns the smoke check on Numba's dispatcher when it fails, and stops before any step when the steps'
Python cannot run tinynorm's CUDA backend. Its steps name scripts and options that exist, fit the
budget, and write at most 8 files; every script in ``benchmarks/`` runs from a plain checkout with an
interpreter that has no tinynorm installed. The GPU steps themselves are the scripts' own business
(their simulator runs are tested in ``tests/cuda``).
"""
import json
import os
import pickle
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import run_gpu_suite  # noqa: E402
from run_gpu_suite import Step, run_suite  # noqa: E402


def python_step(name: str, code: str, limit_s: float = 30, gpu_only: bool = False) -> Step:
    return Step(name, ["-c", code], limit_s, simulator_args=None if gpu_only else ["-c", code])


def test_runner_records_failures_and_timeouts_and_goes_on(tmp_path):
    steps = [
        python_step("fails", "import sys; print('broken'); sys.exit(3)"),
        python_step("hangs", "import time; print('started', flush=True); time.sleep(60)", limit_s=1),
        python_step("works", "print('hello from the last step')"),
    ]
    outcomes = run_suite(steps, tmp_path, budget_s=60, simulator=False)
    assert [(o.name, o.status, o.returncode) for o in outcomes[:1]] == [("fails", "failed", 3)]
    assert outcomes[1].status == "timed out" and outcomes[1].seconds < 10
    assert outcomes[2].status == "ok" and outcomes[2].returncode == 0
    log = (tmp_path / "run.log").read_text()
    assert "broken" in log and "started" in log and "hello from the last step" in log
    preflight = json.loads(re.search(r"^preflight: (\{.*\})$", log, re.MULTILINE).group(1))
    assert {"numpy", "numba", "torch", "scikit-learn"} <= set(preflight)  # optional packages reported too
    record = json.loads((tmp_path / "run.json").read_text())
    assert [step["status"] for step in record["steps"]] == ["failed", "timed out", "ok"]
    assert record["environment"] is None  # no step printed one


def test_budget_skips_the_steps_it_has_no_time_for(tmp_path):
    steps = [python_step("first", "print(1)"), python_step("second", "print(2)")]
    outcomes = run_suite(steps, tmp_path, budget_s=run_gpu_suite.MIN_STEP_SECONDS - 1, simulator=False)
    assert [o.status for o in outcomes] == ["skipped", "skipped"]


def test_simulator_runs_only_the_steps_with_a_simulator_variant(tmp_path):
    steps = [python_step("gpu", "import sys; sys.exit(1)", gpu_only=True),
             python_step("both", "import os; print('sim=' + os.environ['NUMBA_ENABLE_CUDASIM'])")]
    outcomes = run_suite(steps, tmp_path, budget_s=60, simulator=True)
    assert [o.status for o in outcomes] == ["gpu only", "ok"]
    assert "sim=1" in (tmp_path / "run.log").read_text()


def test_out_folder_is_substituted_and_step_environment_applied(tmp_path):
    step = Step("writes", ["-c", "import os, sys; open(sys.argv[1], 'w').write(os.environ['FLAG'])",
                           "{out}/written.txt"], 30, env={"FLAG": "on"})
    (outcome,) = run_suite([step], tmp_path, budget_s=60, simulator=False)
    assert outcome.status == "ok" and (tmp_path / "written.txt").read_text() == "on"


def test_steps_name_existing_scripts_and_options():
    """A renamed script or option would otherwise surface only on a GPU, costing its time there."""
    for step in run_gpu_suite.STEPS:
        for args in filter(None, [step.args, step.simulator_args]):
            if args[0] == "-c":
                continue
            options = [arg for arg in args[1:] if arg.startswith("--")]
            if args[0] == "-m":  # a module of the package (its parser is partly shared): ask its --help
                usage = subprocess.run([sys.executable, "-m", args[1], "--help"], cwd=ROOT, capture_output=True,
                                       text=True, timeout=120, check=True).stdout
                for option in options:
                    assert re.search(rf"{option}\b", usage), f"{step.name}: {args[1]} has no {option}"
                continue
            source = Path(args[0]).read_text()
            for option in options:
                assert re.search(rf"add_argument\(\s*\"{option}\"", source), f"{step.name}: {args[0]} has no {option}"


def test_at_most_eight_files_come_back_and_the_limits_fit_the_budget():
    """A GPU machine may return at most 8 files; a step limit past the budget would never be reached."""
    outputs = {arg for step in run_gpu_suite.STEPS for arg in step.args if arg.startswith("{out}/")}
    retried = {arg.replace(".json", "_dispatcher.json") for step in run_gpu_suite.STEPS if step.retry_on_dispatcher
               for arg in step.args if arg.startswith("{out}/")}
    written = {Path(arg).name for arg in outputs | retried} | {"run.json", "run.log"}
    assert written == set(run_gpu_suite.RESULT_FILES) and len(written) <= 8
    assert sum(step.limit_s for step in run_gpu_suite.STEPS) <= 540


def test_output_is_streamed_and_the_summary_rewritten_as_the_run_goes(tmp_path):
    """Killed in the middle of a step, a run still has that step's output so far and the earlier steps'
    outcomes: the log is written as lines come, the summary after every step."""
    out = tmp_path / "out"
    steps = [python_step("quick", "print('done')"),
             python_step("slow", "import time; print('first line', flush=True); time.sleep(60)", limit_s=50)]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import pickle, run_gpu_suite; from pathlib import Path; "
            "run_gpu_suite.run_suite(pickle.loads(bytes.fromhex(sys.argv[2])), Path(sys.argv[3]), 60, False)")
    runner = subprocess.Popen([sys.executable, "-c", code, str(ROOT / "benchmarks"), pickle.dumps(steps).hex(),
                               str(out)], cwd=ROOT, stdout=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if (out / "run.log").exists() and "first line" in (out / "run.log").read_text():
                break
            time.sleep(0.1)
    finally:
        runner.kill()
        runner.wait()
    assert "first line" in (out / "run.log").read_text()
    record = json.loads((out / "run.json").read_text())
    assert [(step["name"], step["status"]) for step in record["steps"]] == [("quick", "ok")]


def test_a_failed_smoke_check_reruns_on_the_dispatcher_and_later_steps_keep_that(tmp_path):
    check = "import os, sys; sys.exit(0 if os.environ.get('TINYNORM_FAST_LAUNCH') == '0' else 1)"
    steps = [Step("smoke", ["-c", check, "{out}/smoke.json"], 30, retry_on_dispatcher=True),
             Step("later", ["-c", "import os; print('later sees', os.environ.get('TINYNORM_FAST_LAUNCH'))"], 30)]
    outcomes = run_suite(steps, tmp_path, budget_s=60, simulator=False)
    assert [(o.name, o.status) for o in outcomes] == [("smoke", "failed"), ("smoke_dispatcher", "ok"), ("later", "ok")]
    assert "later sees 0" in (tmp_path / "run.log").read_text()
    assert json.loads((tmp_path / "run.json").read_text())["launch_path"].startswith("dispatcher")


def test_a_python_that_cannot_run_tinynorms_cuda_backend_stops_the_run(tmp_path, monkeypatch):
    """The preflight imports the steps' numpy and numba and tinynorm's CUDA backend: a broken numpy
    (here one that fails to import) stops the run before any step, with the reason."""
    broken = tmp_path / "broken"
    (broken / "numpy").mkdir(parents=True)
    (broken / "numpy" / "__init__.py").write_text("raise ImportError('this numpy is broken')\n")
    monkeypatch.setenv("PYTHONPATH", str(broken))
    outcomes = run_suite([python_step("never", "print('ran')")], tmp_path / "out", budget_s=60, simulator=True)
    assert outcomes == []
    assert "this numpy is broken" in json.loads((tmp_path / "out" / "run.json").read_text())["stopped"]


SCRIPTS = sorted(path.name for path in (ROOT / "benchmarks").glob("*.py")
                 if path.name not in ("common.py", "torch_twins.py"))


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """This interpreter without tinynorm on its path (the editable install's finder dropped), run from
    outside the checkout: how a machine with only the dependencies runs the scripts of a plain checkout."""
    folder = tmp_path_factory.mktemp("bare")
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in getattr(f, '__module__', '').lower()]\n"
        f"sys.path[:] = [p for p in sys.path if p.rstrip('/') != {str(ROOT)!r} and p != '']\n")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "NUMBA_ENABLE_CUDASIM")}
    env["PYTHONPATH"] = str(folder)
    check = subprocess.run([sys.executable, "-c", "import tinynorm; print(tinynorm.__file__)"], cwd=folder, env=env,
                           capture_output=True, text=True, check=False)
    if check.returncode == 0:
        pytest.skip(f"tinynorm stays importable outside the checkout here ({check.stdout.strip()}): "
                    "cannot imitate a plain checkout")
    return env, folder


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_runs_from_a_plain_checkout(script, bare_python):
    """``python3 benchmarks/X.py --help`` works with nothing installed but the dependencies."""
    env, folder = bare_python
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--help"], cwd=folder, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0 and "usage" in result.stdout, result.stdout[-1000:] + result.stderr[-2000:]


@pytest.mark.timeout(300)
def test_the_environment_step_runs_from_a_plain_checkout_in_the_simulator(bare_python):
    """The environment step (paths, versions, a first RMSNorm through tinynorm) runs with tinynorm found
    only through the script's own path set-up."""
    env, folder = bare_python
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_environment.py")], cwd=folder,
                            env=dict(env, NUMBA_ENABLE_CUDASIM="1"), capture_output=True, text=True, timeout=240,
                            check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    record = run_gpu_suite.environment(result.stdout.splitlines())
    assert record["simulator"] is True and record["first tinynorm kernel (RMSNorm forward 64x256)"]["max_error"] < 1e-4


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
    env = run_gpu_suite.install_wheels(logged.append, wheels, tmp_path / "site")
    assert "exit status 0" in logged[0], logged
    result = subprocess.run([sys.executable, "-c", "import tinynorm_carried_probe as m; print(m.VERSION)"],
                            env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "2.4"


def test_no_wheels_no_change_of_path(tmp_path):
    env = run_gpu_suite.install_wheels(lambda text: None, tmp_path, tmp_path / "site")
    assert env.get("PYTHONPATH") == os.environ.get("PYTHONPATH")
