"""The run reader's false alarms: fresh healthy runs, none of them in any recipe's record, judged by
`python -m course.diagnose` as a learner's would be (issue 65, item 3). A run of a lesson at its defaults is healthy
by construction, so every symptom the command names for it is a false alarm; so is one for a run that only stopped
early (a short --total-timesteps), whose diagnostics must be read over the steps it ran.

    python -m benchmarks.false_alarms --train --groups cartpole pendulum --seeds 101 102 ... --workdir /tmp/fresh
    python -m benchmarks.false_alarms --judge --workdir /tmp/fresh    # judge every trained run, write the record
    python -m benchmarks.false_alarms --list                          # the groups

--train runs each group's command for each seed, one at a time, in WORKDIR (its runs/ folder; wrap the call in
`flock /tmp/ppo-train.lock` where other training may run), and adds the command and its wall time to
benchmarks/results/debugging/false-alarms-runs.csv. --judge reads every such run found in WORKDIR and writes its
row of benchmarks/results/debugging/false-alarms.csv (the symptoms the command named, none for a healthy verdict,
the diagnostics outside their limits and the report's first lines), keeping the rows of recorded runs whose folders
are gone. This is a benchmark, not a CI test:
the runs take minutes each (LunarLander about 2.3, the others under 1 on 2 cores).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.core import launch
from benchmarks.core.records import read_csv, write_csv
from benchmarks.core.runs import find_runs, newest

RECORD = launch.ROOT / "benchmarks" / "results" / "debugging"
RUNS = RECORD / "false-alarms-runs.csv"
JUDGED = RECORD / "false-alarms.csv"
EXP = "fresh"


@dataclass(frozen=True)
class Group:
    lesson: str
    env_id: str
    flags: tuple[str, ...] = ()
    note: str = ""


GROUPS = {
    "cartpole": Group("ppo_cartpole.py", "CartPole-v1", note="the defaults"),
    "lunarlander": Group("ppo_lunarlander_vec.py", "LunarLander-v3", note="the defaults (1M steps)"),
    "pendulum": Group("ppo_pendulum_continuous.py", "Pendulum-v1", note="the defaults"),
    "cartpole-15k": Group("ppo_cartpole.py", "CartPole-v1", ("--total-timesteps", "15000"),
                          "stopped early: issue 65's example"),
    "lunarlander-300k": Group("ppo_lunarlander_vec.py", "LunarLander-v3", ("--total-timesteps", "300000"),
                              "stopped early: issue 65's example"),
    "pendulum-100k": Group("ppo_pendulum_continuous.py", "Pendulum-v1", ("--total-timesteps", "100000"),
                           "stopped early, a third of the way"),
    "masking": Group("ppo_action_masking.py", "TicTacToe-v0", note="the defaults"),
}


def exp_name(group: str) -> str:
    return f"{EXP}-{group}"


def train(groups: list[str], seeds: list[int], workdir: Path) -> None:
    (workdir / "runs").mkdir(parents=True, exist_ok=True)
    for name in groups:
        group = GROUPS[name]
        for seed in seeds:
            argv = [*group.flags, "--seed", str(seed), "--exp-name", exp_name(name)]
            start = time.time()
            done = launch.run(launch.lesson_command(group.lesson, argv), cwd=workdir,
                              log=workdir / "runs" / f"{exp_name(name)}-{seed}.log")
            seconds = time.time() - start
            if done.returncode != 0:
                raise RuntimeError(f"{group.lesson} {shlex.join(argv)} stopped with exit code {done.returncode}")
            rows = [r for r in read_csv(RUNS) if not (r["group"] == name and int(r["seed"]) == seed)]
            rows.append({"group": name, "seed": seed, "command": shlex.join(["python", group.lesson, *argv]),
                         "wall_seconds": f"{seconds:.0f}", "finished": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                       time.gmtime())})
            rows.sort(key=lambda r: (list(GROUPS).index(r["group"]), int(r["seed"])))
            write_csv(RUNS, rows, ["group", "seed", "command", "wall_seconds", "finished"])
            print(f"{name} seed {seed}: {seconds:.0f} s", flush=True)


def judge(workdir: Path) -> list[dict]:
    """Every trained run of RUNS found in `workdir`, judged as course.diagnose judges it."""
    import warnings

    from course import diagnose

    out = []
    for row in read_csv(RUNS):
        group = GROUPS[row["group"]]
        found = find_runs(workdir / "runs", env_id=group.env_id, exp_name=exp_name(row["group"]), seed=row["seed"])
        if not found:
            continue
        folder = newest(found)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = diagnose.read_run(folder)
            lines, findings, verdict = diagnose.report(run)
        assessed = diagnose.assess(run.lesson, run.args, run.series, run.returns)
        symptoms = assessed.symptoms()
        out.append({"group": row["group"], "seed": row["seed"], "lesson": group.lesson,
                    "total_timesteps": run.args.get("total_timesteps"),
                    "steps": run.series["losses/approx_kl"][-1][0],
                    "final_return": f"{verdict.final:.1f}" if verdict else "",
                    "symptoms": " ".join(symptoms),
                    "outside": "; ".join(f"{f.tag} {f.part} {f.direction} ({f.median:.4g} vs {f.limits[0]:.4g}..{f.limits[1]:.4g})" for f in findings),
                    "report": " | ".join(lines[1:3])})
    return out


def merged(recorded: list[dict], judged: list[dict]) -> list[dict]:
    """The record's rows with those judged now in place of theirs (a run judged again replaces its row; a recorded
    run whose folder is gone keeps its row), in GROUPS' order, then by seed."""
    now = {(row["group"], str(row["seed"])) for row in judged}
    rows = [row for row in recorded if (row["group"], str(row["seed"])) not in now] + judged
    return sorted(rows, key=lambda row: (list(GROUPS).index(row["group"]), int(row["seed"])))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.false_alarms", description=__doc__.splitlines()[0])
    parser.add_argument("--train", action="store_true", help="train --groups x --seeds in --workdir")
    parser.add_argument("--judge", action="store_true", help="judge the trained runs and write the record")
    parser.add_argument("--list", action="store_true", help="the groups")
    parser.add_argument("--groups", nargs="+", choices=list(GROUPS), default=[])
    parser.add_argument("--seeds", nargs="+", type=int, default=[])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fresh"))
    args = parser.parse_args(argv)
    if args.list or not (args.train or args.judge):
        for name, group in GROUPS.items():
            print(f"{name:18} {group.lesson} {shlex.join(group.flags)}  ({group.note})")
        return 0
    if args.train:
        if not args.groups or not args.seeds:
            print("python -m benchmarks.false_alarms: error: --train needs --groups and --seeds", file=sys.stderr)
            return 2
        train(args.groups, args.seeds, args.workdir.resolve())
    if args.judge:
        rows = judge(args.workdir.resolve())
        if not rows:
            print(f"python -m benchmarks.false_alarms: error: no trained run in {args.workdir}", file=sys.stderr)
            return 2
        for r in rows:
            print(f"{r['group']:18} seed {r['seed']:>4}: {r['symptoms'] or 'healthy'}"
                  + (f"  ({r['outside']})" if r["outside"] else ""))
        every = merged(read_csv(JUDGED) if JUDGED.exists() else [], rows)
        write_csv(JUDGED, every, list(rows[0]))
        print(f"{sum(1 for r in rows if r['symptoms'])} of {len(rows)} runs judged now flagged; in the record, "
              f"{sum(1 for r in every if r['symptoms'])} of {len(every)}; written: {JUDGED.relative_to(launch.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
