"""Running a lesson: its main() in this process, or `python <lesson> ...` in a process of its own.

Every tool that trains or plays a lesson goes through here: benchmark.py and the grid start processes
(`process`), ship.py, timing.py and gpu_check.py run main() in process (`run_main`), and so do the tests'
drivers (tests/scripted_runs.py, tests/fingerprint.py, tests/torchrun_driver.py), each in a
fresh process of its own started with `python_command`. The lessons are modules at the repository's root;
`python -m benchmarks.<tool>` from the root finds them, and a process started here finds them through
PYTHONPATH (`environment`), so that nothing edits sys.path.
"""

from __future__ import annotations

import fcntl
import importlib
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
TRAINING_LOCK = Path("/tmp/ppo-train.lock")  # the lock `flock /tmp/ppo-train.lock ...` takes: one training at a time


@contextmanager
def training_lock(path: Path = TRAINING_LOCK):
    """Hold the training lock (flock(2), as flock(1) takes it) while the body runs: the studies' runs wait for
    any other training on this machine, and it for them."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def import_lesson(script: str | Path):
    """The lesson `script` ("ppo_cartpole.py", "ppo_cartpole" or a path to it) as a module, as `python
    <script>` would load it but without running its main(). Its module name is its file's stem, which is what
    an async vector env's workers import to unpickle the env function."""
    name = Path(script).stem
    module = importlib.import_module(name)
    return module


def run_main(module, argv: list[str]) -> int | str:
    """module.main() with `argv` as its command line (after the script's name), in this process, as `python
    <script> argv` would run it: returns its exit code (0 when main returns, SystemExit's code otherwise).
    sys.argv and Python's own Ctrl-C handler are put back afterwards (a lesson sets one of its own)."""
    saved = sys.argv
    sys.argv = [module.SCRIPT, *argv]
    try:
        module.main()
        code = 0
    except SystemExit as exit_:
        code = 0 if exit_.code is None else exit_.code
    finally:
        sys.argv = saved
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return code


def environment(root: Path = ROOT, **variables: str) -> dict[str, str]:
    """os.environ for a process that imports the lessons and benchmarks/ of `root` (the repository, or a
    checkout of another commit of it), with `variables` set."""
    path = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
    return dict(os.environ, PYTHONPATH=path, **variables)


def python_command(*args: str, torchrun: int = 0) -> list[str]:
    """`python args`, or under torchrun on `torchrun` CPU ranks of one machine (--standalone)."""
    if torchrun:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(torchrun),
                *args]
    return [sys.executable, *args]


def lesson_command(script: str, argv: list[str], torchrun: int = 0, patches: tuple[str, ...] = ()) -> list[str]:
    """`python <root>/<script> argv`: the command a user types (by its path, so it runs from any folder); with
    `patches`, `python -m benchmarks.patches --patch <name> ... <script> argv` (run from the root)."""
    if patches:
        flags = [item for name in patches for item in ("--patch", name)]
        return python_command("-m", "benchmarks.patches", *flags, Path(script).name, *argv, torchrun=torchrun)
    return python_command(str(ROOT / Path(script).name), *argv, torchrun=torchrun)


def process(command: list[str], cwd: Path, log: Path | None = None, env: dict | None = None,
            **popen) -> subprocess.Popen:
    """Start `command` in `cwd`, its output (stdout and stderr) appended to `log` (None: captured as text)."""
    if log is None:
        return subprocess.Popen(command, cwd=cwd, env=env or environment(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **popen)
    with open(log, "a") as out:
        return subprocess.Popen(command, cwd=cwd, env=env or environment(), stdout=out, stderr=subprocess.STDOUT,
                                **popen)


def run(command: list[str], cwd: Path, timeout: float | None = None, env: dict | None = None,
        log: Path | None = None) -> subprocess.CompletedProcess:
    """Run `command` in `cwd` to its end: its output captured as text, or written to `log` (then the result's
    stdout is None)."""
    if log is not None:
        with open(log, "w") as out:
            return subprocess.run(command, cwd=cwd, env=env or environment(), stdout=out, stderr=subprocess.STDOUT,
                                  timeout=timeout)
    return subprocess.run(command, cwd=cwd, env=env or environment(), capture_output=True, text=True,
                          timeout=timeout)


def last_line(text: str) -> str:
    """The last non-empty line of a process's output (tqdm redraws its bar with carriage returns; the last line
    is usually the exception or the error)."""
    lines = [line for line in text.replace("\r", "\n").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"
