"""Shared test helpers: the repository root on sys.path (so `import ppo_cartpole` works), running a script
from its command line in a scratch folder, and reading the TensorBoard scalars a run wrote."""

import subprocess
import sys
from pathlib import Path

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
