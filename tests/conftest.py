"""Shared test helpers: the repository root on sys.path (so `import ppo_cartpole` works), running a script
from its command line in a scratch folder (and pressing Ctrl-C in it), checking a usage error, and reading the
TensorBoard scalars a run wrote."""

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The TensorBoard tags every script logs, named as CleanRL names them so runs compare with published ones.
CLEANRL_TAGS = {
    "charts/episodic_return", "charts/episodic_length", "charts/learning_rate", "charts/SPS",
    "losses/value_loss", "losses/policy_loss", "losses/entropy", "losses/approx_kl", "losses/old_approx_kl",
    "losses/clipfrac", "losses/explained_variance",
}
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def run_script(script: str, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python <script> <args>` as a user would, in `cwd` (its runs/ folder lands there)."""
    return subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout,
    )


def ctrl_c_after_first_update(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Start `python <script> <args>` in a session of its own, wait until its progress bar (stderr) shows a
    finished update (the training loop runs and its Ctrl-C handler is set), then press Ctrl-C the way a
    terminal does: SIGINT to the whole process group, env worker processes included."""
    process = subprocess.Popen(
        [sys.executable, str(ROOT / script), *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    progress, deadline = b"", time.time() + 120
    while b"SPS" not in progress and time.time() < deadline and process.poll() is None:
        if select.select([process.stderr], [], [], 1.0)[0]:
            progress += os.read(process.stderr.fileno(), 65536)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout.decode(), (progress + stderr).decode())


def expect_usage_error(script_module, capsys, monkeypatch, argv: list[str], *fragments: str) -> None:
    """Run the script's main() with `argv` as its command line, in this process (no 3-second torch import per
    case), and check it refused: exit code 2 and one line on stderr, `<script>: error: ...`, holding every
    fragment."""
    script = script_module.SCRIPT
    monkeypatch.setattr(sys, "argv", [script, *argv])
    with pytest.raises(SystemExit) as exit_info:
        script_module.main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"{script}: error:"), err
    for fragment in fragments:
        assert fragment in err, err


def run_dirs(cwd: Path) -> list[Path]:
    """The run folders (runs/<run-name>/) a script created under `cwd`, oldest first."""
    folders = {p.parent for p in (cwd / "runs").rglob("events.out.tfevents.*")}
    return sorted(folders, key=lambda p: p.stat().st_mtime)


def scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in a run folder's event files: {tag: [(step, value), ...]} in the order written."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
