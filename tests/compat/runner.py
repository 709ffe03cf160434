"""Run tutorial scripts one after another in this process and write what each printed as JSON lines.

    python runner.py LIBRARY RESULTS_FILE SCRIPT.py [SCRIPT.py ...]

LIBRARY is ``torch`` (the scripts as written) or ``tinynorm`` (their imports swapped by
``harness.swap_imports``). Each script runs as ``python SCRIPT.py`` would run it (``__name__ == "__main__"``, its own globals), in a
fresh empty working directory (scripts save checkpoints there). One process per library pays the import
and kernel-loading cost once, not once per script. The runner imports neither PyTorch nor tinynorm
itself: each library is first imported by the first script, as in a user's process. A result line is
written and flushed as soon as a script ends, so a process that dies still reports the scripts before.
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import time
import traceback

from harness import swap_imports


def run_script(path: str, library: str) -> dict:
    """Run one script with ``library``; return its stdout, stderr, the error it raised (if any) and the
    seconds it took."""
    with open(path, encoding="utf-8") as file:
        lines = file.readlines()
    source = "".join(lines if library == "torch" else map(swap_imports, lines))
    stdout, stderr = io.StringIO(), io.StringIO()
    error = None
    started = time.process_time()
    with tempfile.TemporaryDirectory() as workdir:
        previous = os.getcwd()
        os.chdir(workdir)
        sys.argv = [path]
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                exec(compile(source, path, "exec"), {"__name__": "__main__", "__file__": path})
        except BaseException as exc:  # noqa: BLE001  (a script's SystemExit or error is its result)
            if not (isinstance(exc, SystemExit) and exc.code in (None, 0)):
                error = "".join(traceback.format_exception(exc))
        finally:
            os.chdir(previous)
    return {"script": os.path.basename(path), "stdout": stdout.getvalue(), "stderr": stderr.getvalue(),
            "error": error, "cpu_s": round(time.process_time() - started, 3)}


def main(library: str, results_file: str, scripts: list[str]) -> None:
    with open(results_file, "a", encoding="utf-8") as out:
        for path in scripts:
            out.write(json.dumps(run_script(os.path.abspath(path), library)) + "\n")
            out.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
