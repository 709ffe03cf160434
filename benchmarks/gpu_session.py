"""Everything a session with a lent GPU should run, in one device call: checks first, then benchmarks.

A session is lent the H200 for 15 minutes of device time in all, one command may run 10 minutes, and at
most 8 files come back from ``$OUT``. This script plans for that. Each step runs in its own process
under its own time limit, and all of them under one deadline (``--budget``). A step that hangs or
fails is stopped and recorded, and the next one still runs. The order is the order of value: the
environment and a first kernel (does numba-cuda work there at all?), ``gpu_check.py`` (correctness,
the launch path, the allocator, the norm table against PyTorch), the host time per call with and
without the low-overhead launch, the trainings, and last the full norm benchmark.

On the device machine, from the repository root (docs/cuda.md, "What awaits a GPU")::

    python3 benchmarks/gpu_session.py --out $OUT

Its image's numpy 2.5 breaks numba-cuda 0.30 at the first compile. Wheels carried in ``.whl/`` (a
numpy 2.4 wheel, see docs/cuda.md) are installed into a private folder first, which the steps
find first on their ``PYTHONPATH``; this script itself imports nothing but the standard library.

``$OUT`` receives ``session.json`` (each step's command, exit status, seconds and outcome, and the
environment), ``session.log`` (every step's whole output) and the steps' own JSON files: seven files.
``--simulator`` rehearses the session without a GPU: the steps that have a simulator variant run in
Numba's CUDA simulator (about 2.5 minutes on the 2-core CPU machine). CI tests the runner itself on
quick stand-in steps (``tests/test_gpu_session.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / ".whl"
PRIVATE_SITE = Path("/tmp/tinynorm-site")
MIN_STEP_SECONDS = 20  # a step with less time left than this is skipped, not started

# Prints the versions the results depend on, then compiles and runs one kernel: the first thing to
# break when the machine's numpy does not suit numba-cuda.
ENVIRONMENT = """
import json, numba, numpy
from numba import cuda
record = {"numpy": numpy.__version__, "numba": numba.__version__, "simulator": bool(numba.config.ENABLE_CUDASIM)}
try:
    import numba_cuda
    record["numba_cuda"] = numba_cuda.__version__
except ImportError:
    record["numba_cuda"] = None
try:
    import torch
    record["torch"] = torch.__version__
except ImportError:
    record["torch"] = None
device = cuda.get_current_device()
name = getattr(device, "name", "Numba's CUDA simulator")  # the simulator's device has no name
record["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
record["compute_capability"] = list(device.compute_capability)

@cuda.jit
def add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1

x = cuda.to_device(numpy.zeros(64, numpy.float32))
add_one[1, 64](x)
record["first_kernel_ok"] = bool((x.copy_to_host() == 1).all())
print("environment:", json.dumps(record))
"""


@dataclass
class Step:
    """One command of the session. ``{out}`` in its arguments becomes the output folder.

    ``simulator_args`` is the variant run with ``--simulator`` (None: the step needs a real GPU).
    """

    name: str
    args: list[str]
    limit_s: float
    simulator_args: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)


def script(name: str) -> str:
    return str(ROOT / "benchmarks" / name)


STEPS = [
    Step("environment", ["-c", ENVIRONMENT], 120, simulator_args=["-c", ENVIRONMENT]),
    Step("gpu_check", [script("gpu_check.py"), "--out", "{out}/gpu_check.json"], 270),
    Step("host_overhead", [script("bench_host_overhead.py"), "--out", "{out}/host_overhead.json"], 60,
         simulator_args=[script("bench_host_overhead.py"), "--simulator", "--out", "{out}/host_overhead.json"]),
    Step("host_overhead_dispatcher", [script("bench_host_overhead.py"), "--out",
                                      "{out}/host_overhead_dispatcher.json"], 60,
         env={"TINYNORM_FAST_LAUNCH": "0"}),
    Step("training", [script("bench_training_cuda.py"), "--quick", "--out", "{out}/bench_training_cuda.json"], 240,
         simulator_args=[script("bench_training_cuda.py"), "--smoke", "--out", "{out}/bench_training_cuda.json"]),
    Step("bench_norms", [script("bench_norms.py"), "--device", "cuda", "--out", "{out}/bench_norms.json"], 240),
]


@dataclass
class Outcome:
    name: str
    status: str  # "ok", "failed", "timed out", "skipped" (no time left) or "gpu only" (--simulator)
    returncode: int | None = None
    seconds: float = 0.0
    command: list[str] = field(default_factory=list)


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


def run_step(step: Step, args: list[str], env: dict[str, str], seconds_left: float, log) -> tuple[Outcome, str]:
    """Run one step under ``min(step.limit_s, seconds_left)``; its outcome and its output (also logged)."""
    command = [sys.executable, *args]
    limit = min(step.limit_s, seconds_left)
    log(f"== {step.name} (limit {limit:.0f} s): {' '.join(command)[:300]}\n")
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env={**env, **step.env}, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=limit)
        status = "ok" if process.returncode == 0 else "failed"
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)  # the step and anything it started
        output, _ = process.communicate()
        status = "timed out"
    seconds = time.perf_counter() - start
    log(output + f"== {step.name}: {status} (exit status {process.returncode}) after {seconds:.0f} s\n")
    return Outcome(step.name, status, process.returncode, seconds, command), output


def run_session(steps: list[Step], out: Path, budget_s: float, simulator: bool) -> list[Outcome]:
    """Run ``steps`` in order within ``budget_s`` seconds; write session.log and session.json in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.perf_counter() + budget_s
    with open(out / "session.log", "w") as log_file:
        def log(text: str) -> None:
            sys.stdout.write(text)
            sys.stdout.flush()
            log_file.write(text)
            log_file.flush()

        env = install_wheels(log)
        if simulator:
            env["NUMBA_ENABLE_CUDASIM"] = "1"
        outcomes, found = [], None
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
                outcome, output = run_step(step, args, env, seconds_left, log)
                outcomes.append(outcome)
                found = found or environment(output)
    record = {"budget_s": budget_s, "simulator": simulator, "environment": found,
              "steps": [vars(outcome) for outcome in outcomes]}
    (out / "session.json").write_text(json.dumps(record, indent=2))
    return outcomes


def environment(output: str) -> dict | None:
    """The record the environment step prints (None in any other step's output)."""
    for line in output.splitlines():
        if line.startswith("environment: "):
            return json.loads(line.removeprefix("environment: "))
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or "benchmarks/out/gpu_session")
    parser.add_argument("--budget", type=float, default=540,
                        help="seconds for all steps together (one device command may run 600)")
    parser.add_argument("--simulator", action="store_true",
                        help="rehearse without a GPU: the steps' simulator variants, in Numba's CUDA simulator")
    args = parser.parse_args(argv)
    outcomes = run_session(STEPS, Path(args.out), args.budget, args.simulator)
    print("\n".join(f"{o.name:26} {o.status:10} {o.seconds:6.0f} s" for o in outcomes))
    print(f"wrote {args.out}/session.json and session.log")
    return 0 if all(o.status in ("ok", "gpu only") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
