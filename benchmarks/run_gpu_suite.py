"""Run every GPU check and benchmark of tinynorm in one call, within a time budget, into JSON files and a log.

On a machine with an NVIDIA GPU, from a checkout of the repository (tinynorm need not be installed)::

    python3 benchmarks/run_gpu_suite.py --out results/gpu          # at most 9 minutes (--budget 540)

Each step runs in its own process under its own time limit, and all of them under one deadline
(``--budget``, seconds). A step that fails or hangs is stopped and recorded, and the next one runs.
Every step's output goes to ``run.log`` as it comes, each step writes its own JSON as soon as it has
results, and ``run.json`` (the steps' outcomes, the environment, the launch path used) is rewritten
after every step, so a run that is killed keeps all it had. The order fails fast and puts what is
learnt first:

1. ``preflight`` (before any step): the numpy, numba and numba-cuda the steps will import, and
   tinynorm's CUDA backend importing with them; the run stops here, with the reason, if they do not.
   It also reports PyTorch (the comparisons) and scikit-learn (the digits data of the SmallCNN training).
2. ``environment``: paths and versions (numpy, numba, numba-cuda, cuda-bindings, NVVM, the driver,
   nvJitLink, ``CUDA_HOME``, ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM``, ``nvidia-smi``'s clocks), one
   RMSNorm forward with its launch plan made, and the wide kernels' registers and threads per block.
3. ``smoke`` (``gpu_smoke.py``, under 90 s): every kernel family against the CPU on small shapes, with
   ``CUDA_LAUNCH_BLOCKING=1``. If it fails with tinynorm's driver-level launch, it runs again on Numba's
   dispatcher (``TINYNORM_FAST_LAUNCH=0``); when that passes, every later step runs on the dispatcher too
   (a mis-packed parameter block faults after ``cuLaunchKernel`` returns and poisons the process).
4. ``checks`` (``gpu_check.py``): the norms on real shapes against the CPU, determinism, both launch
   paths, the caching allocator.
5. ``host_overhead`` (``bench_host_overhead.py``): host µs per call, on both launch paths.
6. ``training`` (``bench_training_cuda.py --quick``): SmallCNN and TinyTransformerLM against PyTorch.
7. ``norms`` (``python -m tinynorm.benchmarks.norms --device cuda``): the norm kernels against PyTorch (device time from
   CUDA events, host µs, GB/s, fraction of the copy bandwidth).

Wheels in ``.whl/`` (for instance a numpy the machine lacks) are installed into a private folder first,
which the steps find first on their ``PYTHONPATH``; this script itself imports only the standard library.
``--simulator`` rehearses the run without a GPU: the steps that have a simulator variant run in Numba's
CUDA simulator (about 3 minutes on 2 cores). ``tests/test_run_gpu_suite.py`` tests the runner itself.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / ".whl"
PRIVATE_SITE = Path("/tmp/tinynorm-site")
MIN_STEP_SECONDS = 20  # a step with less time left than this is skipped, not started
DISPATCHER = {"TINYNORM_FAST_LAUNCH": "0"}

# The numpy, numba and numba-cuda the steps will import, and tinynorm's CUDA backend on them: if this
# fails, every step would die at its first compile. The optional packages are only reported.
PREFLIGHT = """
import json, sys
from importlib import metadata
sys.path.insert(0, sys.argv[1])
import numpy, numba
record = {"numpy": numpy.__version__, "numpy_path": numpy.__file__, "numba": numba.__version__}
for name, without in (("torch", "no comparison with PyTorch will run"),
                      ("scikit-learn", "the training step's SmallCNN (on scikit-learn's digits) will not run")):
    try:
        record[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        record[name] = None
        print(f"preflight: {name} is not installed: {without}")
import tinynorm.backends.cuda  # applies tinynorm's numpy compatibility shim, then imports numba.cuda
from numba import config, cuda
if not config.ENABLE_CUDASIM:
    cuda.compile_ptx(lambda x: None, "void(float32[::1])", cc=(9, 0))  # NVVM works with this numpy
print("preflight:", json.dumps(record))
"""


@dataclass
class Step:
    """One command of the run. ``{out}`` in its arguments becomes the output folder.

    ``simulator_args`` is the variant run with ``--simulator`` (None: the step needs a real GPU);
    ``retry_on_dispatcher``: when the step fails, run it once more with ``TINYNORM_FAST_LAUNCH=0`` and, if
    that passes, give that setting to every later step.
    """

    name: str
    args: list[str]
    limit_s: float
    simulator_args: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    retry_on_dispatcher: bool = False


def script(name: str) -> str:
    return str(ROOT / "benchmarks" / name)


STEPS = [
    Step("environment", [script("gpu_environment.py")], 60, simulator_args=[script("gpu_environment.py")]),
    Step("smoke", [script("gpu_smoke.py"), "--out", "{out}/smoke.json"], 90,
         simulator_args=[script("gpu_smoke.py"), "--out", "{out}/smoke.json"],
         env={"CUDA_LAUNCH_BLOCKING": "1"}, retry_on_dispatcher=True),
    Step("checks", [script("gpu_check.py"), "--out", "{out}/gpu_check.json"], 100,
         simulator_args=[script("gpu_check.py"), "--smoke", "--out", "{out}/gpu_check.json"]),
    Step("host_overhead", [script("bench_host_overhead.py"), "--both-paths", "--out", "{out}/host_overhead.json"], 60,
         simulator_args=[script("bench_host_overhead.py"), "--simulator", "--out", "{out}/host_overhead.json"]),
    Step("training", [script("bench_training_cuda.py"), "--quick", "--out", "{out}/bench_training_cuda.json"], 110,
         simulator_args=[script("bench_training_cuda.py"), "--smoke", "--out", "{out}/bench_training_cuda.json"]),
    Step("norms", ["-m", "tinynorm.benchmarks.norms", "--device", "cuda", "--out", "{out}/bench_norms.json"], 110),
]
# Everything a run writes (eight files at most: the test checks the list is complete).
RESULT_FILES = ["run.json", "run.log", "smoke.json", "smoke_dispatcher.json", "gpu_check.json", "host_overhead.json",
                "bench_training_cuda.json", "bench_norms.json"]


@dataclass
class Outcome:
    name: str
    status: str  # "ok", "failed", "timed out", "skipped" (no time left) or "gpu only" (--simulator)
    returncode: int | None = None
    seconds: float = 0.0
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


class Log:
    """``run.log`` and stdout, written as the text comes."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "w")  # noqa: SIM115  (closed by close())
        self.lock = threading.Lock()

    def __call__(self, text: str) -> None:
        with self.lock:
            sys.stdout.write(text)
            sys.stdout.flush()
            self.file.write(text)
            self.file.flush()

    def close(self) -> None:
        self.file.close()


def install_wheels(log, wheels_dir: Path = WHEELS, site: Path = PRIVATE_SITE) -> dict[str, str]:
    """Install the carried wheels (if any) into ``site``; returns the environment the steps get."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    wheels = sorted(str(path) for path in wheels_dir.glob("*.whl"))
    if not wheels:
        return env
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
               "--no-cache-dir", "--upgrade", "--target", str(site), *wheels]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    log(f"== installing {len(wheels)} carried wheel(s) into {site}: exit status {result.returncode}\n"
        + result.stdout + result.stderr)
    if result.returncode == 0:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return env


def preflight(env: dict[str, str], log) -> str | None:
    """None when the steps' numpy, numba and tinynorm's CUDA backend work together, else why not."""
    result = subprocess.run([sys.executable, "-c", PREFLIGHT, str(ROOT)], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    log("== preflight\n" + result.stdout + result.stderr[-3000:])
    if result.returncode == 0:
        return None
    lines = result.stderr.strip().splitlines() or ["no output"]
    return (f"the steps' Python environment cannot run tinynorm's CUDA backend ({lines[-1]}); check the numpy, "
            f"numba and numba-cuda it imports (run.log has the preflight's output)")


def run_step(step: Step, args: list[str], env: dict[str, str], seconds_left: float, log) -> tuple[Outcome, list[str]]:
    """Run one step under ``min(step.limit_s, seconds_left)``, its output logged line by line as it comes;
    returns its outcome and its output lines."""
    command = [sys.executable, *args]
    limit = min(step.limit_s, seconds_left)
    log(f"== {step.name} (limit {limit:.0f} s): {' '.join(command)[:300]}\n")
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env={**env, **step.env}, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: [(lines.append(line), log(line)) for line in process.stdout], daemon=True)
    reader.start()
    try:
        process.wait(timeout=limit)
        status = "ok" if process.returncode == 0 else "failed"
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)  # the step and anything it started
        process.wait()
        status = "timed out"
    reader.join(timeout=5)
    seconds = time.perf_counter() - start
    log(f"== {step.name}: {status} (exit status {process.returncode}) after {seconds:.0f} s\n")
    return Outcome(step.name, status, process.returncode, seconds, command, dict(step.env)), lines


def run_suite(steps: list[Step], out: Path, budget_s: float, simulator: bool) -> list[Outcome]:
    """Run ``steps`` in order within ``budget_s`` seconds; write run.log and, after every step, run.json."""
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.perf_counter() + budget_s
    log = Log(out / "run.log")
    record: dict = {"budget_s": budget_s, "simulator": simulator, "stopped": None, "environment": None,
                    "launch_path": "driver", "steps": []}
    outcomes: list[Outcome] = []

    def save() -> None:
        record["steps"] = [asdict(outcome) for outcome in outcomes]
        (out / "run.json").write_text(json.dumps(record, indent=2))

    try:
        env = install_wheels(log)
        if simulator:
            env["NUMBA_ENABLE_CUDASIM"] = "1"
        record["stopped"] = preflight(env, log)
        save()
        if record["stopped"]:
            log(f"== stopped: {record['stopped']}\n")
            return outcomes
        for step in steps:
            args = step.simulator_args if simulator else step.args
            seconds_left = deadline - time.perf_counter()
            if args is None:
                outcomes.append(Outcome(step.name, "gpu only"))
            elif seconds_left < MIN_STEP_SECONDS:
                log(f"== {step.name}: skipped, {seconds_left:.0f} s left of the budget\n")
                outcomes.append(Outcome(step.name, "skipped"))
            else:
                args = [arg.replace("{out}", str(out)) for arg in args]
                outcome, lines = run_step(step, args, env, seconds_left, log)
                outcomes.append(outcome)
                record["environment"] = record["environment"] or environment(lines)
                if outcome.status != "ok" and step.retry_on_dispatcher and "TINYNORM_FAST_LAUNCH" not in env:
                    retry = Step(f"{step.name}_dispatcher", [a.replace(".json", "_dispatcher.json") for a in args],
                                 step.limit_s, env={**step.env, **DISPATCHER})
                    outcome, _ = run_step(retry, retry.args, env, deadline - time.perf_counter(), log)
                    outcomes.append(outcome)
                    if outcome.status == "ok":
                        env.update(DISPATCHER)
                        record["launch_path"] = "dispatcher (the driver-level launch failed the smoke check)"
                        log("== every later step runs with TINYNORM_FAST_LAUNCH=0\n")
            save()
    finally:
        save()
        log.close()
    return outcomes


def environment(lines: list[str]) -> dict | None:
    """The record the environment step prints (None in any other step's output)."""
    for line in lines:
        if line.startswith("environment: "):
            return json.loads(line.removeprefix("environment: "))
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or "benchmarks/out/gpu")
    parser.add_argument("--budget", type=float, default=540, help="seconds for all steps together")
    parser.add_argument("--simulator", action="store_true",
                        help="rehearse without a GPU: the steps' simulator variants, in Numba's CUDA simulator")
    args = parser.parse_args(argv)
    outcomes = run_suite(STEPS, Path(args.out), args.budget, args.simulator)
    print("\n".join(f"{o.name:26} {o.status:10} {o.seconds:6.0f} s" for o in outcomes))
    print(f"wrote {args.out}/run.json and run.log")
    return 0 if outcomes and all(o.status in ("ok", "gpu only") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
