"""Run folders: naming and finding them, reading what they logged, how long they trained.

A lesson writes TensorBoard events to `runs/{env_id}__{exp_name}__{seed}__{int(time.time())}/` under the folder it
runs in, and its checkpoint.pt beside them. A run resumed with --resume keeps its folder, with one events file per
process. Everything in benchmarks/ (and the tests' helpers) finds a run, reads its scalars and times it through
this module, so that every record reads a resumed run the same way (read_processes) and times it the same way
(stretches).
"""

from __future__ import annotations

import glob
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator, ScalarEvent

SPS_TAG = "charts/SPS"  # logged once per update, at its end, by every lesson


class RunFailed(Exception):
    """A run that failed or left nothing to read; the message says why in one line."""


# ---------------------------------------------------------------------------------------------------------------
# Naming and finding
# ---------------------------------------------------------------------------------------------------------------
def parse_run_name(run_dir: Path) -> tuple[str, int]:
    """env_id and seed from a run folder named {env_id}__{exp_name}__{seed}__{time}."""
    run_dir = Path(run_dir).resolve()
    run_name = run_dir.name
    # an env_id with a slash (ALE/Pong-v5) nests the folder one level deeper: runs/ALE/Pong-v5__bench__1__...
    if run_dir.parent.name != "runs" and run_dir.parent.parent.name == "runs":
        run_name = f"{run_dir.parent.name}/{run_name}"
    fields = run_name.rsplit("__", 3)
    if len(fields) != 4 or not fields[2].isdigit():
        raise RunFailed(f"{run_dir} is not named {{env_id}}__{{exp_name}}__{{seed}}__{{time}}")
    return fields[0], int(fields[2])


def find_runs(runs: Path, env_id: str = "*", exp_name: str = "*", seed: int | str = "*") -> set[Path]:
    """The run folders under `runs` (a runs/ folder) of this env_id, exp_name and seed (each a glob pattern);
    `**` also finds the nested ALE/... ones."""
    matches = glob.glob(str(Path(runs) / "**" / f"{env_id}__{exp_name}__{seed}__*"), recursive=True)
    return {Path(p) for p in matches if Path(p).is_dir()}


def matching(patterns: tuple[str, ...] | list[str], root: Path) -> list[Path]:
    """The run folders matching these glob patterns (relative to `root`), sorted."""
    return sorted(p for p in {Path(p) for pattern in patterns for p in glob.glob(str(Path(root) / pattern))}
                  if p.is_dir())


def logged_folders(root: Path) -> list[Path]:
    """Every folder under `root` that holds an events file, oldest first (by the folder's modification time)."""
    folders = {p.parent for p in Path(root).rglob("events.out.tfevents.*")}
    return sorted(folders, key=lambda p: p.stat().st_mtime)


def newest(run_dirs: set[Path] | list[Path]) -> Path:
    """Of several folders of one name, the one created last (its name ends in int(time.time()))."""
    return max(run_dirs, key=lambda p: int(p.name.rsplit("__", 1)[1]))


def furthest(run_dirs: set[Path] | list[Path]) -> tuple[Path, dict] | None:
    """Of several folders of one cell, the one whose checkpoint.pt (read weights_only) holds the most steps, and that
    checkpoint; None where none has a readable checkpoint."""
    import torch

    best = None
    for run_dir in sorted(run_dirs):
        try:
            ckpt = torch.load(Path(run_dir) / "checkpoint.pt", map_location="cpu", weights_only=True)
        except Exception:  # none, one the run never finished writing (the lessons write atomically), not a checkpoint
            continue
        if best is None or ckpt["global_step"] > best[1]["global_step"]:
            best = (Path(run_dir), ckpt)
    return best


# ---------------------------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------------------------
def read_events(path: Path) -> tuple[dict[str, list[ScalarEvent]], float | None]:
    """Every scalar of one events file, or of a folder of them as TensorBoard shows it, by tag in the order
    written, and the wall time of the first event (None: no events). Each ScalarEvent has `.wall_time`, `.step`
    and `.value`. The one place the events are read: every reader below goes through it."""
    # size_guidance 0 keeps every scalar; by default the accumulator keeps a random sample of 10,000 per tag
    accumulator = EventAccumulator(str(path), size_guidance={SCALARS: 0})
    accumulator.Reload()
    scalars = {tag: accumulator.Scalars(tag) for tag in accumulator.Tags()["scalars"]}
    try:
        first_time = accumulator.FirstEventTimestamp()
    except ValueError:  # no events at all
        first_time = None
    return scalars, first_time


def read_processes(run_dir: Path) -> list[dict]:
    """The run folder's events files, one per process that logged into it, in the order they were written: for
    each, {"scalars": its scalars by tag, "resumed_from": the step it went on from (0 for the first), "first_time":
    the wall time of its first event}.

    A run resumed with --resume keeps its folder, with an events file per process. Resumed from its checkpoint's
    step G, a process logs from G on; what an earlier process logged past G is not in the run's history (the
    episodes of a rollout that a Ctrl-C gave up, or everything after the last checkpoint before a crash), and is
    left out here, as TensorBoard leaves it out (the scripts open a resumed run's writer with purge_step G + 1).
    G is read off the logs, so that runs logged before the scripts set purge_step read the same: the last step
    at which the earlier files logged charts/SPS (once an update, at its end) before the later file's first
    step; 0 where they logged none. A folder that never logs charts/SPS is read whole. A file with no scalars
    (a process that stopped before its first) is left out."""
    files = sorted(Path(run_dir).glob("events.out.tfevents.*"))  # (named by creation time: the order written)
    processes = []
    for path in files:
        scalars, first_time = read_events(path)
        if any(scalars.values()):
            processes.append({"scalars": scalars, "resumed_from": 0, "first_time": first_time})
    if not any(SPS_TAG in process["scalars"] for process in processes):
        return processes
    for i, process in enumerate(processes[1:], 1):
        first_step = min(event.step for events in process["scalars"].values() for event in events)
        updates = [event.step for earlier in processes[:i] for event in earlier["scalars"].get(SPS_TAG, [])]
        process["resumed_from"] = max((step for step in updates if step < first_step), default=0)
        for earlier in processes[:i]:
            earlier["scalars"] = {tag: [event for event in events if event.step <= process["resumed_from"]]
                                  for tag, events in earlier["scalars"].items()}
    return processes


def read_scalars(run_dir: Path, up_to_step: int | None = None) -> tuple[dict[str, list[ScalarEvent]], float | None]:
    """All scalars in the run folder's event files, by tag (with `up_to_step`, those logged at that step or
    before), and the wall time of the first event (None if the folder holds no events). A resumed run's scalars
    are its history's (read_processes): not what an earlier process logged past the step a later one went on
    from."""
    merged: dict[str, list[ScalarEvent]] = {}
    processes = read_processes(run_dir)
    for process in processes:
        for tag, events in process["scalars"].items():
            merged.setdefault(tag, []).extend(e for e in events if up_to_step is None or e.step <= up_to_step)
    first_time = min((process["first_time"] for process in processes), default=None)
    return {tag: events for tag, events in merged.items() if events}, first_time


def stretches(run_dir: Path, up_to_step: int | None = None) -> list[dict]:
    """Where a run resumed: for each process that logged into the run folder (up to `up_to_step`), the env steps
    it trained ("from", "to": its last update's step), its wall seconds from its first event to that update's
    and its steps per second over them."""
    rows = []
    for process in read_processes(run_dir):
        updates = [e for e in process["scalars"].get(SPS_TAG, []) if up_to_step is None or e.step <= up_to_step]
        if updates:
            seconds, steps = updates[-1].wall_time - process["first_time"], updates[-1].step - process["resumed_from"]
            rows.append({"from": process["resumed_from"], "to": updates[-1].step, "seconds": seconds,
                         "sps": steps / seconds if seconds > 0 else float("nan")})
    return rows


def training_seconds(run_dir: Path, up_to_step: int | None = None) -> float:
    """The run's wall time spent training: the sum of its processes' stretches (the time between a stop and
    its resume is in none of them)."""
    return sum(stretch["seconds"] for stretch in stretches(run_dir, up_to_step))
