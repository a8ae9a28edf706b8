"""Benchmark one training script of this library over several seeds.

Runs `python <script> --seed S --exp-name NAME [script args]` once per seed, one after the other (or, with
--from-logs, reads run folders that exist), and reports per seed from its TensorBoard scalars: the env steps and
wall-clock seconds until the rolling mean episodic return first reached --threshold, the final return, the steps
per second and, with --play-episodes, the greedy return of its final policy (the way the lessons' targets are
stated; the training episodes play a sampled, exploring policy). Prints a markdown table, a summary line and the
command that reproduces it, and writes the record's three CSVs (benchmarks/core/records.py): one row per seed, the
learning curves (each --tag and --eval-tag value) and the spread of the update's diagnostics (--diagnostic-tags).
benchmarks.summary, .compare and .diagnostics make the reports from them once the run folders are gone.

Contract with the training scripts (every script of the library follows it, so nothing here is env-specific):
- run as `python <script> --seed S --exp-name NAME ...` from a working directory, it writes TensorBoard event
  files to `runs/{env_id}__{exp_name}__{seed}__{int(time.time())}/` under that directory;
- it logs `charts/episodic_return` once per finished episode and `charts/SPS` once per update, each with
  `global_step` (env steps so far) as the step;
- it saves `checkpoint.pt` in its run folder, and `python <script> --play CKPT --episodes N` runs the greedy
  policy for N episodes and prints a line `mean return over N episodes: MEAN +/- STD` (used by --play-episodes).

Timing: seconds count from just before the process is launched, so Python start-up, imports and env construction
count: that is what a user waits for. "Training seconds" count from the run's first TensorBoard event (the script
opening its SummaryWriter): the training loop's own clock. With --from-logs there is no launch time: seconds count
from the first event and the run ends at its last logged scalar; the CSV's `timed_from` says which clock was used.

Usage:
    python -m benchmarks.benchmark --script ppo_cartpole.py --seeds 1 2 3 4 5 --threshold 475 \
        -- --total-timesteps 100000
    python -m benchmarks.benchmark --script ppo_cartpole.py --threshold 475 --from-logs 'runs/*__bench__*'
    python -m benchmarks.benchmark --script ppo_lunarlander_vec.py --seeds 1 2 3 --threshold 200 \
        --play-episodes 100 --play-threshold 250 --plot benchmarks/results/ppo_lunarlander_vec.png
    python -m benchmarks.benchmark --script ppo_pendulum_continuous.py --label kl -- --objective kl
"""

import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import tyro
from tyro.conf import Positional

from benchmarks.core import launch, runs
from benchmarks.core.plots import Curves, plot_curves
from benchmarks.core.records import PLAY_LINE, curves_path, diagnostics_path, markdown_table, run_records, write_csv
from benchmarks.core.runs import SPS_TAG, RunFailed
from benchmarks.core.stats import DIAGNOSTIC_TAGS, rolling_first_crossing


@dataclass
class Args(Curves):
    script: str
    """the training script to benchmark, e.g. ppo_cartpole.py (with --from-logs it only names the CSV and its rows)"""
    seeds: tuple[int, ...] = (1, 2, 3)
    """seeds to run, one process per seed, one after the other (ignored with --from-logs: read from folder names)"""
    exp_name: str = "bench"
    """passed to the script as --exp-name; the runs land in runs/*__{exp_name}__{seed}__*"""
    workdir: Path = launch.ROOT
    """directory the script runs in; its runs/ folder receives the TensorBoard logs and each seed's console output"""
    csv: Path | None = None
    """where to write the rows; None means benchmarks/results/<script stem>.csv (<script stem>-<label>.csv)"""
    label: str = ""
    """a name for this configuration, e.g. the objective passed in the script arguments: the rows' `label`,
    the default CSV name and the plot's title carry it"""
    diagnostic_tags: tuple[str, ...] = DIAGNOSTIC_TAGS
    """TensorBoard scalars logged once per update whose spread per seed goes to <name>-diagnostics.csv"""
    from_logs: tuple[str, ...] = ()
    """skip running: analyse the existing run folders matching these glob patterns (relative to --workdir)"""
    up_to_step: int | None = None
    """with --from-logs: read each run only up to this env step (a run resumed into a longer one, as the Mario
    sweep's run (a) was into the 2M-step run, is recorded again as it stood there)"""
    play_episodes: int = 0
    """after each run, play its checkpoint's greedy policy for this many episodes and report the mean return
    (0: do not play)"""
    plot: Path | None = None
    """write a learning-curve PNG here (needs matplotlib): return vs env steps, every seed, mean and band"""
    script_args: Positional[tuple[str, ...]] = ()
    """arguments passed on to the script, after a `--`, e.g. `-- --total-timesteps 100000`"""


# ---------------------------------------------------------------------------------------------------------------
# Analysis: what a run folder's scalars say
# ---------------------------------------------------------------------------------------------------------------
def summarize(scalars: dict[str, list], tag: str, window: int, threshold: float | None, start_time: float,
              end_time: float, train_start: float | None = None) -> dict:
    """What one run achieved, from its scalars: its row's measures, times in seconds from `start_time`.
    `start_time` and `end_time` are the wall times the run's clock starts and stops at (process launch and exit,
    or first and last event when reading old logs); train_seconds_to_threshold counts from `train_start`, the wall
    time of the run's first event (its SummaryWriter opening, the start of training), when known: the training
    clock, without interpreter start-up and imports (~3 s of `import torch` here)."""
    episodes = scalars.get(tag, [])
    returns = [event.value for event in episodes]
    crossing = None if threshold is None else rolling_first_crossing(
        [event.step for event in episodes], [event.wall_time for event in episodes], returns, window, threshold)
    last_returns = returns[-window:]  # all of them when fewer than `window` episodes finished
    total_steps = max(event.step for events in scalars.values() for event in events)
    wall_seconds = end_time - start_time
    logged_sps = [event.value for event in scalars.get(SPS_TAG, [])]
    return {
        "steps_to_threshold": crossing[0] if crossing else None,
        "seconds_to_threshold": crossing[1] - start_time if crossing else None,
        "final_return": statistics.fmean(last_returns) if last_returns else None,
        "episodes": len(returns),
        "total_steps": total_steps,
        "wall_seconds": wall_seconds,
        # overall throughput, start-up included; charts/SPS is the training loop's own figure
        "sps": total_steps / wall_seconds if wall_seconds > 0 else 0.0,
        "logged_sps": statistics.fmean(logged_sps) if logged_sps else None,
        "train_seconds_to_threshold": crossing[1] - train_start if crossing and train_start is not None else None,
    }


def analyse(args: Args, run_dir: Path, start_time: float | None = None, end_time: float | None = None
            ) -> tuple[dict, list[dict], list[dict]]:
    """A run folder's records, its scalars read once: its CSV row; its curve points, every --tag value (one per
    finished training episode, kind "training") and every --eval-tag value (one per evaluation, kind "evaluation"),
    each with its env steps and its wall seconds from `start_time`; and its diagnostics rows, the spread of every
    --diagnostic-tags scalar it logged (diagnostic_spreads). Without start/end times (--from-logs) the run's first
    and last events stand in for launch and exit."""
    env_id, seed = runs.parse_run_name(run_dir)
    scalars, first_event_time = runs.read_scalars(run_dir, args.up_to_step)
    if not scalars:
        raise RunFailed(f"no TensorBoard scalars in {run_dir}")
    timed_from = "launch"
    if start_time is None:
        timed_from = "first event"
        start_time = first_event_time
        end_time = max(event.wall_time for events in scalars.values() for event in events)
    measures = summarize(scalars, args.tag, args.window, args.threshold, start_time, end_time, first_event_time)
    names = {"script": Path(args.script).name, "label": args.label, "env_id": env_id, "seed": seed}
    row = {**names, "threshold": args.threshold, "window": args.window, **measures, "timed_from": timed_from,
           # the play_* fields: filled in by play_policy when --play-episodes is given
           "play_episodes": None, "play_return": None, "play_return_std": None, "run_dir": str(run_dir)}
    curves = (("training", args.tag), ("evaluation", args.eval_tag))
    points, diagnostics = run_records(names, scalars, start_time, curves, args.diagnostic_tags)
    return row, points, diagnostics


# ---------------------------------------------------------------------------------------------------------------
# Running the script, playing its policy
# ---------------------------------------------------------------------------------------------------------------
def run_seed(args: Args, script: Path, seed: int, log_path: Path) -> tuple[Path, float, float]:
    """Run the script for one seed, its console output going to `log_path`; return its new run folder and the
    launch and exit wall times."""
    folder = args.workdir / "runs"
    existing = runs.find_runs(folder, exp_name=args.exp_name, seed=seed)  # earlier runs of that name are not this one
    command = launch.python_command(str(script), "--seed", str(seed), "--exp-name", args.exp_name, *args.script_args)
    launched = time.time()
    returncode = launch.run(command, args.workdir, log=log_path).returncode
    exited = time.time()
    if returncode != 0:
        raise RunFailed(f"exited with status {returncode} ({launch.last_line(log_path.read_text())}); "
                        f"full output in {log_path}")
    new = runs.find_runs(folder, exp_name=args.exp_name, seed=seed) - existing
    if not new:
        raise RunFailed(f"exited 0 but wrote no runs/*__{args.exp_name}__{seed}__* folder in {args.workdir}")
    return runs.newest(new), launched, exited


def play_policy(args: Args, script: Path, run_dir: Path) -> dict:
    """Play the greedy policy of the run's checkpoint for --play-episodes episodes: the row's play_* fields."""
    checkpoint = run_dir / "checkpoint.pt"
    if not checkpoint.is_file():
        raise RunFailed(f"no checkpoint.pt in {run_dir} to play")
    command = launch.python_command(str(script), "--play", str(checkpoint), "--episodes", str(args.play_episodes))
    result = launch.run(command, args.workdir)
    match = PLAY_LINE.search(result.stdout)
    if result.returncode != 0 or not match:
        raise RunFailed(f"--play {checkpoint} exited with status {result.returncode} "
                        f"({launch.last_line(result.stderr or result.stdout)})")
    return {"play_episodes": int(match[1]), "play_return": float(match[2]), "play_return_std": float(match[3])}


def run_seeds(args: Args, record: dict) -> None:
    """Run the script once per --seeds, adding each run's rows to `record`."""
    # absolute, because the script runs in --workdir while the path was given relative to the caller's cwd
    script = Path(args.script).resolve()
    for i, seed in enumerate(args.seeds, start=1):
        prefix = f"[{i}/{len(args.seeds)}] seed {seed}:"
        log_path = args.workdir / "runs" / f"{script.stem}__{args.exp_name}__{seed}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        print(f"{prefix} running {script.name}, output in {log_path}", flush=True)
        try:
            run_dir, launched, exited = run_seed(args, script, seed, log_path)
            row, points, diagnostics = analyse(args, run_dir, launched, exited)
            if args.play_episodes:
                print(f"{prefix} playing the greedy policy for {args.play_episodes} episodes", flush=True)
                row.update(play_policy(args, script, run_dir))
        except RunFailed as error:
            print(f"{prefix} FAILED: {error}", flush=True)
            record["failures"].append(f"seed {seed}: {error}")
            continue
        record["rows"].append(row), record["points"].extend(points), record["diagnostics"].extend(diagnostics)
        print(f"{prefix} {outcome(args, row)}", flush=True)


def outcome(args: Args, row: dict) -> str:
    """The line a finished seed gets."""
    reached = ""
    if args.threshold is not None and row["steps_to_threshold"] is None:
        reached = f", did not reach {args.threshold:g}"
    elif args.threshold is not None:
        reached = f", reached {args.threshold:g} at step {row['steps_to_threshold']}"
    return (f"done in {row['wall_seconds']:.1f} s, {row['total_steps']} steps, final return "
            f"{fmt(row['final_return'], '.1f')}{reached}"
            + (f", greedy return {row['play_return']:.1f}" if args.play_episodes else ""))


def read_logs(args: Args, record: dict) -> int:
    """--from-logs: the rows of the run folders that match, added to `record`; 1 if none matches."""
    run_dirs = runs.matching(args.from_logs, args.workdir)
    if not run_dirs:
        print(f"no run folders match {' '.join(args.from_logs)} under {args.workdir}", file=sys.stderr)
        return 1
    for run_dir in run_dirs:
        try:
            row, points, diagnostics = analyse(args, run_dir)
            if args.play_episodes:
                row.update(play_policy(args, Path(args.script).resolve(), run_dir))
            record["rows"].append(row)
            record["points"] += points
            record["diagnostics"] += diagnostics
        except RunFailed as error:
            record["failures"].append(f"{run_dir}: {error}")
    record["rows"].sort(key=lambda row: (row["env_id"], row["seed"], row["run_dir"]))
    record["diagnostics"].sort(key=lambda row: (row["env_id"], row["seed"]))  # stable: tags stay in order
    return 0


# ---------------------------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------------------------
def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def seed_table(rows: list[dict], threshold: float | None, play_episodes: int = 0) -> str:
    header = ["seed"]
    if threshold is not None:
        header += ["reached", "steps to threshold", "seconds to threshold", "training seconds to threshold"]
    header += ["final return", "total steps", "wall s", "SPS", "logged SPS"]
    if play_episodes:
        header += [f"greedy return ({play_episodes} episodes)"]
    table = []
    for row in rows:
        cells = [str(row["seed"])]
        if threshold is not None:
            cells += ["yes" if row["steps_to_threshold"] is not None else "no", fmt(row["steps_to_threshold"], "d"),
                      fmt(row["seconds_to_threshold"], ".1f"), fmt(row["train_seconds_to_threshold"], ".1f")]
        cells += [fmt(row["final_return"], ".1f"), str(row["total_steps"]), f"{row['wall_seconds']:.1f}",
                  f"{row['sps']:.0f}", fmt(row["logged_sps"], ".0f")]
        if play_episodes:
            cells += [f"{row['play_return']:.1f} +/- {row['play_return_std']:.1f}"]
        table.append(cells)
    return markdown_table(header, table)


def summary_lines(rows: list[dict], n_runs: int, threshold: float | None, window: int,
                  play_threshold: float | None = None) -> list[str]:
    """The summary sentence(s) under the table; `n_runs` counts failed runs too (they did not reach it)."""
    lines = []
    played = [row for row in rows if row["play_return"] is not None]
    if played:
        returns = [row["play_return"] for row in played]
        per_seed = ", ".join(f"{r:.1f}" for r in returns)
        line = (f"greedy policy over {played[0]['play_episodes']} episodes: mean return per seed {per_seed} "
                f"(mean {statistics.fmean(returns):.1f}, min {min(returns):.1f})")
        if play_threshold is not None:
            line += f"; {sum(r >= play_threshold for r in returns)}/{n_runs} seeds >= {play_threshold:g}"
        lines.append(line)
    if threshold is not None:
        reached = [row for row in rows if row["steps_to_threshold"] is not None]
        steps = statistics.median(row["steps_to_threshold"] for row in reached) if reached else None
        seconds = statistics.median(row["seconds_to_threshold"] for row in reached) if reached else None
        train = [row["train_seconds_to_threshold"] for row in reached if row["train_seconds_to_threshold"] is not None]
        lines.append(f"{len(reached)}/{n_runs} seeds reached >= {threshold:g} within their budget; median steps "
                     f"{fmt(steps, '.0f')}, median seconds {fmt(seconds, '.1f')} "
                     f"(of training: {fmt(statistics.median(train) if train else None, '.1f')})")
    finals = [row["final_return"] for row in rows if row["final_return"] is not None]
    final = statistics.median(finals) if finals else None
    sps = statistics.median(row["sps"] for row in rows) if rows else None
    lines.append(f"{len(rows)} runs analysed; median final return (mean of last {window} episodes) "
                 f"{fmt(final, '.1f')}, median SPS {fmt(sps, '.0f')}")
    return lines


def write_record(args: Args, record: dict) -> None:
    """The three CSVs, and the --plot."""
    rows, points, diagnostics = record["rows"], record["points"], record["diagnostics"]
    stem = Path(args.script).stem + (f"-{args.label}" if args.label else "")
    csv_path = args.csv or launch.ROOT / "benchmarks" / "results" / f"{stem}.csv"
    write_csv(csv_path, rows, floats="decimals")
    print(f"Rows written to {csv_path}")
    if points:
        write_csv(curves_path(csv_path), points, floats="decimals")
        print(f"Curve points (env steps, wall seconds, {args.tag} / {args.eval_tag}) written to "
              f"{curves_path(csv_path)}")
    if diagnostics:
        write_csv(diagnostics_path(csv_path), diagnostics, floats="significant")
        print(f"Diagnostics (count, min, 5th / 50th / 95th percentile, max of {len(args.diagnostic_tags)} "
              f"tags per seed) written to {diagnostics_path(csv_path)}")
    if args.plot and points:
        try:
            plot_curves({args.label: (rows, points)}, args.plot, args)
            print(f"Learning curves drawn in {args.plot}")
        except RunFailed as error:
            record["failures"].append(f"--plot: {error}")


def main(args: Args) -> int:
    if args.play_episodes < 0:
        print("--play-episodes must not be negative", file=sys.stderr)
        return 2
    record = {"rows": [], "points": [], "diagnostics": [], "failures": []}
    if args.from_logs and read_logs(args, record):
        return 1
    if not args.from_logs:
        run_seeds(args, record)
    rows, failures = record["rows"], record["failures"]
    print("", seed_table(rows, args.threshold, args.play_episodes), "",
          *summary_lines(rows, len(rows) + len(failures), args.threshold, args.window, args.play_threshold), sep="\n")
    if args.from_logs:
        print("Seconds count from each run's first logged event, not from process launch (start-up not included).")
    print("Command: " + shlex.join(["python", "-m", "benchmarks.benchmark", *sys.argv[1:]]))
    if rows:
        write_record(args, record)
    if failures:
        print(f"{len(failures)} run(s) failed:", *(f"  {failure}" for failure in failures), sep="\n", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(tyro.cli(Args)))
