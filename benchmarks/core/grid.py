"""A grid of runs: each cell one lesson trained on one task with one setting and one seed, `--jobs` at a time,
each on one thread. A study names its cells (benchmarks/mujoco_grid.py's Table 1 is one); the grid runs the
cells that are not done, resumes the ones that were stopped, and can itself be stopped (Ctrl-C, or `kill -INT`
on a grid started in the background): every running cell saves its checkpoint, and the same command goes on.

A cell's state comes from its run folder's checkpoint and the checkpoint's own args: "done" when it holds every
update of the study's --total-timesteps (the update's size, num_envs x num_steps, read from those args), "partial"
when it holds fewer, "new" when the cell has no readable checkpoint. A cell whose row a results CSV already holds
is done too (a fresh checkout has no run folders).
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.core import launch, runs


@dataclass(frozen=True, order=True)
class Cell:
    """One run of a study: a lesson (its file name), the env it trains on, a setting's name, a seed."""

    script: str
    task: str
    setting: str
    seed: int


@dataclass
class Study:
    """What a grid runs: each cell's script on its task with `flags` and its setting's flags (`settings`), for
    `total_timesteps` env steps, named `--exp-name <name>-<setting>` and run in `runs_dir` (its runs/ folder
    receives the runs and runs/<name>-logs/ their console output). A setting named in `patches` runs its lesson
    through benchmarks/patches.py with those patches (fresh and resumed alike)."""

    name: str
    settings: dict[str, list[str]]
    flags: list[str] = field(default_factory=list)
    total_timesteps: int = 1_000_000
    runs_dir: Path = launch.ROOT
    patches: dict[str, list[str]] = field(default_factory=dict)

    def exp_name(self, cell: Cell) -> str:
        return f"{self.name}-{cell.setting}"

    def command(self, cell: Cell) -> list[str]:
        """The command that trains the cell from scratch."""
        return launch.lesson_command(cell.script, [
            "--env-id", cell.task, "--seed", str(cell.seed), "--exp-name", self.exp_name(cell),
            "--total-timesteps", str(self.total_timesteps), *self.flags, *self.settings[cell.setting]],
            patches=tuple(self.patches.get(cell.setting, ())))

    def folders(self, cell: Cell) -> set[Path]:
        return runs.find_runs(self.runs_dir / "runs", cell.task, self.exp_name(cell), cell.seed)

    def state(self, cell: Cell) -> tuple[str, Path | None]:
        """("done" | "partial" | "new", the run folder): of several folders for one cell, the one furthest along
        counts."""
        found = runs.furthest(self.folders(cell))
        if found is None:
            return "new", None
        folder, ckpt = found
        batch = ckpt["args"].get("num_envs", 1) * ckpt["args"]["num_steps"]
        last_step = self.total_timesteps // batch * batch
        return ("done" if ckpt["global_step"] >= last_step else "partial"), folder

    def next_command(self, cell: Cell, recorded: set[Cell]) -> tuple[str, list[str]]:
        """The cell's state and the command that takes it on: a fresh run, a --resume, or none when done."""
        state, folder = self.state(cell)
        if state == "new" and cell in recorded:
            return "done", []  # its run folder is gone (a fresh checkout), its results are recorded
        if state == "partial":
            return state, launch.lesson_command(cell.script, ["--resume", str(folder / "checkpoint.pt"),
                                                              "--total-timesteps", str(self.total_timesteps)],
                                                patches=tuple(self.patches.get(cell.setting, ())))
        return state, [] if state == "done" else self.command(cell)


def cells(script: str, tasks: list[str], settings: list[str], seeds: list[int]) -> list[Cell]:
    """Every (task, setting, seed) of one script, seed by seed: a grid stopped part-way has all tasks and
    settings at its first seeds."""
    return [Cell(script, task, setting, seed) for seed in seeds for task in tasks for setting in settings]


def shell_line(command: list[str], runs_dir: Path) -> str:
    """A command as one line for a shell started in `runs_dir`: `python` for this interpreter, the lesson and
    the checkpoints by their paths relative to that folder where they lie under it."""
    def short(word: str) -> str:
        if word == sys.executable:
            return "python"
        path = Path(word)
        if path.is_absolute() and path.is_relative_to(runs_dir.resolve()):
            return str(path.relative_to(runs_dir.resolve()))
        return word
    return shlex.join(short(word) for word in command)


def run(study: Study, todo: list[Cell], jobs: int, recorded: set[Cell] = frozenset(), dry_run: bool = False) -> None:
    """Run the cells of `todo` that are not done, `jobs` at a time, one thread each. With `dry_run` run nothing:
    print one shell line per cell that is not done, its command followed by a comment with its state (`# done`
    alone for the others), to be run from the study's runs folder (the root), e.g. by GNU parallel or as a
    Slurm array's tasks (one thread each: OMP_NUM_THREADS=1). Ctrl-C lets every running cell save, then
    exits 130."""
    queue = []
    for cell in todo:
        state, command = study.next_command(cell, recorded)
        if dry_run:
            name = f"{cell.task} {cell.setting} seed {cell.seed}"
            print(f"{shell_line(command, study.runs_dir)}  # {state} {name}" if command else f"# done {name}")
        elif command:
            queue.append((cell, command))
    if dry_run or not queue:
        return
    logs = study.runs_dir / "runs" / f"{study.name}-logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = launch.environment(OMP_NUM_THREADS="1")  # one thread per run: the --jobs runs share the cores
    # A grid started in the background (`nohup ... &`) inherits SIGINT ignored, and so would its runs: then
    # `kill -INT` stopped nothing. Python's own Ctrl-C handler, set here, makes it a KeyboardInterrupt, and the
    # runs start with SIGINT at its default (exec resets a caught signal), so theirs saves their checkpoints.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    running: list[tuple[Cell, object, float]] = []
    print(f"{len(queue)} runs to go, {jobs} at a time (logs: {logs})")
    try:
        while queue or running:
            while queue and len(running) < jobs:
                cell, command = queue.pop(0)
                log = logs / f"{cell.task}-{cell.setting}-{cell.seed}.log"
                running.append((cell, launch.process(command, study.runs_dir, log=log, env=env), time.time()))
                print(f"started  {cell.task} {cell.setting} seed {cell.seed}")
            time.sleep(2)
            for item in [item for item in running if item[1].poll() is not None]:
                running.remove(item)
                cell, child, start = item
                status = "done" if child.returncode == 0 else f"FAILED (exit {child.returncode})"
                print(f"{status:8s} {cell.task} {cell.setting} seed {cell.seed} in {time.time() - start:.0f} s")
    except KeyboardInterrupt:  # the runs got the Ctrl-C too: each saves its checkpoint and exits
        print("Ctrl-C: waiting for the running runs to save their checkpoints")
        for _, child, _ in running:
            if child.poll() is None:
                child.send_signal(signal.SIGINT)
        for _, child, _ in running:
            child.wait()
        raise SystemExit(130)


def relative(path: Path) -> str:
    """A run folder as the records name it: relative to the repository's root."""
    return os.path.relpath(path, launch.ROOT)
