"""The runs the debugging guide shows (course/when-ppo-does-not-learn.md): healthy runs and broken ones, each a short
run of CartPole, LunarLander or Pendulum, seed 1, recorded so that the guide's figures and the diagnose command's
tests read real runs once the run folders are gone.

A broken run is a study's setting (an ablation's flag or patch, benchmarks/ablations.py), a learning rate ten times
the default, or a silent bug of the exercises planted in the lesson (exercises/bugs.py). For each run, `--record`
trains it, writes its diagnostics and curves with `benchmarks.benchmark --from-logs` as the healthy records are
written (benchmarks/results/debugging/<name>.csv, -curves.csv, -diagnostics.csv), every update's diagnostics and
every episode's return (<name>-series.csv), and a row of runs.csv: its command, the flags its checkpoint holds and
its wall time.

`--record-series LESSON --seeds ...` trains healthy seeds of a lesson at its defaults and records every update's
diagnostics (<lesson>-healthy-series.csv, and its command and wall time in series-runs.csv): course.diagnose reads a
run that stopped early against these seeds cut at the same step.

Usage:
    python -m benchmarks.debugging --record                 # every run (26 minutes here, sharing 2 cores)
    python -m benchmarks.debugging --record cartpole-lr-x10 # one
    python -m benchmarks.debugging --record-series ppo_cartpole.py --seeds 6 7 8 9 10 11 12 13 14 15
    python -m benchmarks.debugging                          # list them
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.core import launch
from benchmarks.core.records import read_csv, write_csv
from benchmarks.core.runs import find_runs, newest, read_scalars
from benchmarks.core.stats import DIAGNOSTIC_TAGS

RECORD = launch.ROOT / "benchmarks" / "results" / "debugging"
TAGS = DIAGNOSTIC_TAGS
RETURN = "charts/episodic_return"


@dataclass(frozen=True)
class Recorded:
    name: str
    lesson: str
    flags: tuple[str, ...] = ()
    what: str = ""  # what it changes, in words ("" for a healthy run)
    patches: tuple[str, ...] = ()  # benchmarks.patches' edits (a study's setting that no flag makes)
    bug: int | None = None  # a silent bug of exercises/bugs.py, planted
    study: tuple[str, str] | None = None  # (study, setting) of benchmarks/results/ablations/effects.csv

    def command(self) -> str:
        if self.bug:
            return f"python -m exercises bug {self.bug}"
        patch = "".join(f" --patch {p}" for p in self.patches)
        head = f"python -m benchmarks.patches{patch} {self.lesson}" if patch else f"python {self.lesson}"
        return " ".join([head, *self.flags, "--seed", "1"])


LUNAR = ("--total-timesteps", "500000")  # the exercises' LunarLander recipe: its bugs run there
RUNS = [
    Recorded("healthy-cartpole", "ppo_cartpole.py"),
    Recorded("healthy-lunarlander-500k", "ppo_lunarlander_vec.py", LUNAR),
    Recorded("healthy-pendulum", "ppo_pendulum_continuous.py"),
    Recorded("healthy-pendulum-clip-vloss", "ppo_pendulum_continuous.py", ("--objective", "clip", "--clip-vloss")),
    Recorded("cartpole-lr-x10", "ppo_cartpole.py", ("--learning-rate", "0.04"), "a learning rate ten times the default"),
    Recorded("cartpole-lr-x10-constant", "ppo_cartpole.py", ("--learning-rate", "0.04", "--no-anneal-lr"),
             "a learning rate ten times the default, held constant (not annealed)"),
    Recorded("cartpole-unclipped", "ppo_cartpole.py", (), "the clip off: eq. 6's unclipped objective",
             ("unclipped-objective",), study=("cartpole", "unclipped-objective")),
    Recorded("cartpole-lambda-0", "ppo_cartpole.py", ("--gae-lambda", "0"), "GAE's lambda 0: one-step TD advantages",
             study=("cartpole", "gae-lambda-0")),
    Recorded("cartpole-gamma-0.5", "ppo_cartpole.py", ("--gamma", "0.5"),
             "a discount gamma of 0.5: the agent looks about 1 / (1 - gamma) = 2 steps ahead"),
    Recorded("lunarlander-lr-x10", "ppo_lunarlander_vec.py", (*LUNAR, "--learning-rate", "0.01"),
             "a learning rate ten times the default"),
    Recorded("lunarlander-ent-x10", "ppo_lunarlander_vec.py", (*LUNAR, "--ent-coef", "0.1"),
             "an entropy coefficient c2 ten times the default"),
    Recorded("lunarlander-no-grad-clip", "ppo_lunarlander_vec.py", LUNAR, "global gradient clipping off",
             ("no-grad-clip",), study=("lunarlander", "no-grad-clip")),
    Recorded("pendulum-unclipped", "ppo_pendulum_continuous.py", ("--objective", "none"),
             "neither clip nor KL penalty: eq. 6's unclipped objective", study=("pendulum", "objective-none")),
    Recorded("pendulum-no-norm-reward", "ppo_pendulum_continuous.py", ("--no-norm-reward",), "reward scaling off",
             study=("pendulum", "no-norm-reward")),
    *[Recorded(f"bug-{n}", "", (), "", bug=n) for n in range(1, 8)],
]
BY_NAME = {run.name: run for run in RUNS}


def lesson_of(run: Recorded) -> str:
    if run.bug:
        from exercises import bugs

        return bugs.BUGS[run.bug - 1].recipe.lesson
    return run.lesson


def train(run: Recorded, workdir: Path) -> Path:
    """Train `run` (seed 1) in `workdir`; its run folder."""
    if run.bug:
        from exercises import bugs

        here = Path.cwd()
        os.chdir(workdir)
        try:
            return workdir / bugs.train(run.bug)
        finally:
            os.chdir(here)
    exp_name = f"debug-{run.name}"
    argv = [*run.flags, "--seed", "1", "--exp-name", exp_name]
    (workdir / "runs").mkdir(exist_ok=True)
    done = launch.run(launch.lesson_command(run.lesson, argv, patches=run.patches), cwd=workdir,
                      log=workdir / "runs" / f"{exp_name}.log")
    if done.returncode != 0:
        raise RuntimeError(f"{run.name}: {run.command()} stopped with exit code {done.returncode}")
    return newest(find_runs(workdir / "runs", exp_name=exp_name, seed=1))


def series_rows(run_dir: Path) -> list[list]:
    """[tag, env step, value] for every update's diagnostics and every episode's return."""
    scalars = read_scalars(run_dir)[0]
    return [[tag, event.step, f"{event.value:.6g}"] for tag in (*TAGS, RETURN) for event in scalars.get(tag, [])]


def record(names: list[str], workdir: Path) -> None:
    import torch

    RECORD.mkdir(parents=True, exist_ok=True)
    index = RECORD / "runs.csv"
    rows = [row for row in read_csv(index) if row["name"] not in names]
    for name in names:
        run = BY_NAME[name]
        start = time.time()
        run_dir = train(run, workdir)
        seconds = time.time() - start
        lesson = lesson_of(run)
        done = launch.run(launch.python_command(
            "-m", "benchmarks.benchmark", "--script", lesson, "--label", name, "--workdir", str(workdir),
            "--from-logs", str(run_dir.relative_to(workdir)), "--csv", str(RECORD / f"{name}.csv")), cwd=launch.ROOT)
        if done.returncode != 0:
            raise RuntimeError(f"{name}: benchmarks.benchmark --from-logs failed: {launch.last_line(done.stderr)}")
        with open(RECORD / f"{name}-series.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["tag", "env_steps", "value"])
            writer.writerows(series_rows(run_dir))
        args = torch.load(run_dir / "checkpoint.pt", map_location="cpu", weights_only=True)["args"]
        rows.append({"name": name, "lesson": lesson, "command": run.command(), "args": json.dumps(args, sort_keys=True),
                     "wall_seconds": f"{seconds:.0f}"})
        print(f"{name}: {seconds:.0f} s, {run_dir}", flush=True)
    rows.sort(key=lambda row: [r.name for r in RUNS].index(row["name"]))
    with open(index, "w", newline="") as f:
        writer = csv.DictWriter(f, ["name", "lesson", "command", "args", "wall_seconds"])
        writer.writeheader()
        writer.writerows(rows)


def series_file(lesson: str) -> Path:
    """The per-update diagnostics of a lesson's healthy seeds at its defaults (--record-series)."""
    return RECORD / f"{Path(lesson).stem}-healthy-series.csv"


def record_series(lesson: str, seeds: list[int], workdir: Path, command: str) -> None:
    """Train `lesson` at its defaults for each seed and record every update's diagnostics: series_file(lesson)
    (seed, tag, env step, value), and each seed's command and wall time in series-runs.csv."""
    exp_name = "healthy-series"
    (workdir / "runs").mkdir(parents=True, exist_ok=True)
    path, index = series_file(lesson), RECORD / "series-runs.csv"
    rows = [row for row in read_csv(path, {"seed": int}) if row["seed"] not in seeds] if path.exists() else []
    runs = [row for row in read_csv(index) if not (row["lesson"] == lesson and int(row["seed"]) in seeds)] \
        if index.exists() else []
    for seed in seeds:
        start = time.time()
        done = launch.run(launch.lesson_command(lesson, ["--seed", str(seed), "--exp-name", exp_name]), cwd=workdir,
                          log=workdir / "runs" / f"{exp_name}-{seed}.log")
        if done.returncode != 0:
            raise RuntimeError(f"{lesson} --seed {seed} stopped with exit code {done.returncode}")
        seconds = time.time() - start
        run_dir = newest(find_runs(workdir / "runs", exp_name=exp_name, seed=seed))
        rows += [{"seed": seed, "tag": tag, "env_steps": step, "value": value}
                 for tag, step, value in series_rows(run_dir) if tag in TAGS]
        runs.append({"lesson": lesson, "seed": seed, "command": f"python {lesson} --seed {seed}",
                     "wall_seconds": f"{seconds:.0f}"})
        print(f"{lesson} seed {seed}: {seconds:.0f} s, {run_dir}", flush=True)
    rows.sort(key=lambda row: (int(row["seed"]), TAGS.index(row["tag"]), int(row["env_steps"])))
    write_csv(path, rows, ["seed", "tag", "env_steps", "value"])
    runs.sort(key=lambda row: (row["lesson"], int(row["seed"])))
    write_csv(index, runs, ["lesson", "seed", "command", "wall_seconds"])
    print(f"Command: {command}")


def healthy_series(lesson: str) -> dict[int, dict[str, list[tuple[int, float]]]]:
    """The recorded healthy seeds' diagnostics at the lesson's defaults: {seed: {tag: [(env step, value)]}}; {}
    where none are recorded."""
    path = series_file(lesson)
    if not path.exists():
        return {}
    found: dict[int, dict[str, list[tuple[int, float]]]] = {}
    for row in read_csv(path, {"seed": int, "env_steps": int, "value": float}, "healthy series CSV"):
        found.setdefault(row["seed"], {}).setdefault(row["tag"], []).append((row["env_steps"], row["value"]))
    return found


def recorded_runs() -> dict[str, dict]:
    """runs.csv's rows by name, each with its args as a dict."""
    return {row["name"]: {**row, "args": json.loads(row["args"])}
            for row in read_csv(RECORD / "runs.csv", what="debugging runs' index")}


def series(name: str) -> tuple[dict[str, list[tuple[int, float]]], list[tuple[int, float]]]:
    """A recorded run's diagnostics (tag -> [(env step, value)]) and its returns [(env step, return)]."""
    rows = read_csv(RECORD / f"{name}-series.csv", {"env_steps": int, "value": float}, "series CSV")
    by_tag: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        by_tag.setdefault(row["tag"], []).append((row["env_steps"], row["value"]))
    return {tag: by_tag.get(tag, []) for tag in TAGS}, by_tag.get(RETURN, [])


def symptoms_of(name: str) -> list[str]:
    """The guide's sections (course.diagnose.SYMPTOMS' anchors) that course.diagnose names for a recorded run: the
    return's first, then the diagnostics', the furthest outside its limits first."""
    judged = assessment(name)
    first = judged.verdict.symptoms if judged.verdict else []
    return [*first, *sorted((a for a in judged.symptoms() if a not in first), key=lambda a: -judged.worst(a))]


def assessment(name: str):
    """A recorded run as course.diagnose judges it (a course.diagnose.Assessment)."""
    from course import diagnose

    row = recorded_runs()[name]
    return diagnose.assess(row["lesson"], row["args"], *series(name))


def study_symptoms() -> dict[tuple[str, str], list[str]]:
    """(study, setting) -> the sections its recorded run shows, for each recorded run of a study's setting."""
    return {run.study: symptoms_of(run.name) for run in RUNS if run.study}


def held_out(margin: float) -> tuple[int, list[tuple]]:
    """course.diagnose's rule on each healthy seed on record, judged against the other seeds of its recipe (leave
    one out; recipes of two seeds or more; course.diagnose.held_out): how many seeds were judged, and the false
    alarms, each (recipe, record, seed, tag, part, median, limits, side)."""
    from course import diagnose

    judged, alarms = 0, []
    for recipe in diagnose.RECIPES:
        count, found = diagnose.held_out(recipe, margin)
        judged += count
        alarms += [(recipe.describe(), *alarm) for alarm in found]
    return judged, alarms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.debugging", description=__doc__.splitlines()[0])
    parser.add_argument("--record", nargs="*", metavar="NAME", help="train and record these runs (none named: all)")
    parser.add_argument("--workdir", type=Path, default=launch.ROOT, help="where the runs' folders go (runs/)")
    parser.add_argument("--held-out", nargs="+", type=float, metavar="MARGIN",
                        help="judge each healthy seed on record against its recipe's other seeds, at each MARGIN "
                             "(course.diagnose's rule), and print the false alarms")
    parser.add_argument("--record-series", metavar="LESSON",
                        help="train LESSON at its defaults for each of --seeds and record every update's diagnostics")
    parser.add_argument("--seeds", nargs="+", type=int, default=[], help="the seeds of --record-series")
    args = parser.parse_args(argv)
    if args.record_series:
        if not args.seeds:
            print("python -m benchmarks.debugging: error: --record-series needs --seeds", file=sys.stderr)
            return 2
        record_series(args.record_series, args.seeds, args.workdir.resolve(),
                      shlex.join(["python", "-m", "benchmarks.debugging", *(argv or sys.argv[1:])]))
        return 0
    if args.held_out:
        for margin in args.held_out:
            judged, alarms = held_out(margin)
            print(f"margin {margin:g}: {len(alarms)} false alarms over {judged} held-out seeds")
            for recipe, source, seed, tag, part, median, limits, side in alarms:
                print(f"    {recipe} ({source}, seed {seed}): {tag} over {part} {median:.4g} {side} "
                      f"{limits[0]:.4g} to {limits[1]:.4g}")
        return 0
    if args.record is None:
        for run in RUNS:
            print(f"{run.name:28s} {run.command()}" + (f"   # {run.what}" if run.what else ""))
        return 0
    unknown = [name for name in args.record if name not in BY_NAME]
    if unknown:
        print(f"python -m benchmarks.debugging: error: no run named {', '.join(unknown)} "
              f"(the runs: {', '.join(BY_NAME)})", file=sys.stderr)
        return 2
    record(args.record or [run.name for run in RUNS], args.workdir.resolve())
    print("Command: " + shlex.join(["python", "-m", "benchmarks.debugging", *(argv or sys.argv[1:])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
