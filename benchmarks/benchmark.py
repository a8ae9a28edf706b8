"""Benchmark one training script of this library over several seeds.

Runs `python <script> --seed S --exp-name NAME [script args]` once per seed, one after the other, then reads
each run's TensorBoard scalars and reports per seed: the env steps and wall-clock seconds until the rolling
mean episodic return first reached a threshold, the final return, and the steps per second. Prints a markdown
table, a summary line and the command that reproduces it, and writes the rows to a CSV.

Contract with the training scripts (every script of the library follows it, so nothing here is env-specific):
- run as `python <script> --seed S --exp-name NAME ...` from a working directory, it writes TensorBoard event
  files to `runs/{env_id}__{exp_name}__{seed}__{int(time.time())}/` under that directory;
- it logs `charts/episodic_return` once per finished episode and `charts/SPS` once per update, each with
  `global_step` (env steps so far) as the step;
- it saves `checkpoint.pt` in its run folder, and `python <script> --play CKPT --episodes N` runs the greedy
  policy for N episodes and prints a line `mean return over N episodes: MEAN +/- STD` (used by --play-episodes).

--play-episodes N scores each seed's final policy the way its lesson's target is stated (greedy actions, N
fresh episodes) rather than by the training episodes, which are played with a sampled, exploring policy.
--plot writes the learning curve: the rolling mean return against env steps for every seed, their mean and
min-max band, and (when the script logs it) the evaluation return `eval/mean_return`. --tag and --eval-tag
draw other per-episode and per-evaluation scalars instead (Mario: `charts/x_pos`, `eval/flag_rate`).
--label names a configuration (a row's `label`, the CSV's default name); --compare draws several benchmark
CSVs (say, one per objective) into one --plot, one colour per CSV, each as its mean and min-max band.

Three CSVs per benchmark: <name>.csv, one row per seed (the measures above), <name>-curves.csv, the learning
curves themselves: one row per finished training episode (--tag) and per evaluation (--eval-tag), with the
script, env, seed, env steps, wall seconds from launch and the value, and <name>-diagnostics.csv, the spread of
the update's diagnostics (--diagnostic-tags: approx_kl, clipfrac, explained_variance, entropy, value_loss) per
seed: count, min, 5th percentile, median, 95th percentile and max, over the whole run and over its second half.
The plots are drawn from the curves CSV, so a committed result can be redrawn (--compare) after its run
folders are gone; --diagnostics prints the diagnostics CSV's ranges over the seeds, the same way.

Timing: seconds are counted from just before the process is launched, so Python start-up, imports and env
construction count: that is what a user waits for. "Training seconds" count from the run's first TensorBoard
event (the script opening its SummaryWriter) instead: the training loop's own clock. With --from-logs there
is no launch time, so seconds count from the first event of the run's event files (when the script opened
its SummaryWriter) and the run ends at its last logged scalar; the table and the CSV's `timed_from` column
say which clock was used.

Usage:
    python benchmarks/benchmark.py --script ppo_cartpole.py --seeds 1 2 3 4 5 --threshold 475 \
        -- --total-timesteps 100000
    python benchmarks/benchmark.py --script ppo_cartpole.py --threshold 475 --from-logs 'runs/*__bench__*'
    python benchmarks/benchmark.py --script ppo_lunarlander_vec.py --seeds 1 2 3 --threshold 200 \
        --play-episodes 100 --play-threshold 250 --plot benchmarks/results/ppo_lunarlander_vec.png
    python benchmarks/benchmark.py --script ppo_pendulum_continuous.py --label kl -- --objective kl
    python benchmarks/benchmark.py --script ppo_pendulum_continuous.py --threshold -200 \
        --compare benchmarks/results/ppo_pendulum_continuous-clip.csv \
        benchmarks/results/ppo_pendulum_continuous-kl.csv --plot benchmarks/results/ppo_pendulum_continuous.png
    python benchmarks/benchmark.py --script - --summary benchmarks/results/ppo_cartpole.csv \
        benchmarks/results/ppo_lunarlander_vec.csv      # README's results table, one row per CSV
    python benchmarks/benchmark.py --script - --summary benchmarks/results/ppo_cartpole.csv \
        --at-steps 10000 25000 50000         # and the curve at these env steps (rolling mean, wall seconds)
    python benchmarks/benchmark.py --script - --diagnostics benchmarks/results/diagnostics/ppo_cartpole-diagnostics.csv
"""

import contextlib
import csv
import glob
import re
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import tyro
from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator, ScalarEvent
from tyro.conf import Positional

REPO_ROOT = Path(__file__).resolve().parent.parent
SPS_TAG = "charts/SPS"
# Logged once per update by every script: how far the update moved pi (approx_kl, clipfrac), how well V fits
# the returns (explained_variance, value_loss) and how random pi still is (entropy).
DIAGNOSTIC_TAGS = ("losses/approx_kl", "losses/clipfrac", "losses/explained_variance", "losses/entropy",
                   "losses/value_loss")


@dataclass
class Args:
    script: str
    """the training script to benchmark, e.g. ppo_cartpole.py (with --from-logs it only names the CSV and its rows)"""
    seeds: tuple[int, ...] = (1, 2, 3)
    """seeds to run, one process per seed, one after the other (ignored with --from-logs: read from folder names)"""
    threshold: float | None = None
    """rolling mean episodic return that counts as solved, e.g. 475 for CartPole-v1; None: report only return and SPS"""
    window: int = 20
    """number of most recent episodes averaged into the rolling mean and into the final return (usually 10-100)"""
    tag: str = "charts/episodic_return"
    """TensorBoard scalar with one value per finished episode (e.g. charts/x_pos for Mario: how far it got)"""
    eval_tag: str = "eval/mean_return"
    """TensorBoard scalar of the evaluations during training, drawn beside the training curve when the script
    logs it (e.g. eval/flag_rate for Mario)"""
    exp_name: str = "bench"
    """passed to the script as --exp-name; the runs land in runs/*__{exp_name}__{seed}__*"""
    workdir: Path = REPO_ROOT
    """directory the script runs in; its runs/ folder receives the TensorBoard logs and each seed's console output"""
    csv: Path | None = None
    """where to write the rows; None means benchmarks/results/<script stem>.csv (<script stem>-<label>.csv)"""
    label: str = ""
    """a name for this configuration, e.g. the objective passed in the script arguments: the rows' `label`,
    the default CSV name and the plot's title carry it"""
    compare: tuple[Path, ...] = ()
    """skip running: draw the runs listed in these benchmark CSVs (from their curves CSVs, or their run folders
    where those are missing) into one --plot, one colour per CSV (named by its label), to compare configurations"""
    describe: str | None = None
    """with --from-logs: instead of the learning-curve analysis, describe this TensorBoard scalar in each run
    folder (count, min, median, max; e.g. losses/stop_iter for Mario's KL early stop)"""
    band: tuple[float, float] | None = None
    """with --describe: also the share of the values within [LO, HI] (e.g. the adaptive-KL band
    d_targ / 1.5 .. 1.5 d_targ of losses/kl)"""
    summary: tuple[Path, ...] = ()
    """skip running: print one results-table row per benchmark CSV (README's results table): env steps, seeds,
    final return and the final policy's --play return as mean +/- std over the seeds, wall seconds and SPS"""
    at_steps: tuple[int, ...] = ()
    """with --summary: also each CSV's learning curve at these env steps, from its curves CSV: the rolling mean
    of --window training episodes (mean, min and max over the seeds) and the wall seconds from launch"""
    diagnostic_tags: tuple[str, ...] = DIAGNOSTIC_TAGS
    """TensorBoard scalars logged once per update whose spread per seed goes to <name>-diagnostics.csv"""
    diagnostics: tuple[Path, ...] = ()
    """skip running: print the ranges of the diagnostics recorded in these <name>-diagnostics.csv files, one row
    per tag and part of the run (the whole run, its second half), over the seeds"""
    from_logs: tuple[str, ...] = ()
    """skip running: analyse the existing run folders matching these glob patterns (relative to --workdir)"""
    up_to_step: int | None = None
    """with --from-logs: read each run only up to this env step (a run resumed into a longer one, as the Mario
    sweep's run (a) was into the 2M-step run, is recorded again as it stood there)"""
    play_episodes: int = 0
    """after each run, play its checkpoint's greedy policy for this many episodes and report the mean return
    (0: do not play)"""
    play_threshold: float | None = None
    """mean greedy return over --play-episodes that counts as reaching the target, e.g. 250 for LunarLander"""
    plot: Path | None = None
    """write a learning-curve PNG here (needs matplotlib): return vs env steps, every seed, mean and band"""
    script_args: Positional[tuple[str, ...]] = ()
    """arguments passed on to the script, after a `--`, e.g. `-- --total-timesteps 100000`"""


@dataclass
class Measures:
    """What one run achieved; times in seconds from `start_time` (see summarize)."""

    steps_to_threshold: int | None
    seconds_to_threshold: float | None
    final_return: float | None
    episodes: int
    total_steps: int
    wall_seconds: float
    sps: float
    logged_sps: float | None
    # seconds from the script's first TensorBoard event (its SummaryWriter opening, i.e. the start of training)
    # to the crossing: the training clock, without interpreter start-up and imports (~3 s of `import torch` here)
    train_seconds_to_threshold: float | None = None


class RunFailed(Exception):
    """A seed whose script failed or left nothing to analyse; the message says why in one line."""


# ---------------------------------------------------------------------------------------------------------------
# Analysis: pure functions of the logged scalars
# ---------------------------------------------------------------------------------------------------------------
def rolling_first_crossing(
    steps: list[int], wall_times: list[float], returns: list[float], window: int, threshold: float
) -> tuple[int, float] | None:
    """(global_step, wall_time) of the first episode at which the mean of the last `window` returns is
    >= threshold, or None if that never happens (including when there are fewer than `window` episodes).
    The three lists are parallel: one entry per finished episode, in logging order."""
    means = rolling_mean(returns, window)
    for i in range(window - 1, len(returns)):  # from the first full window on
        if means[i] >= threshold:
            return steps[i], wall_times[i]
    return None


def rolling_mean(values: list[float], window: int) -> list[float]:
    """At each episode i, the mean of the `window` most recent values (episodes i-window+1 .. i), or of all of
    them while fewer than `window` have come."""
    return [sum(values[max(0, i - window + 1) : i + 1]) / min(i + 1, window) for i in range(len(values))]


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
        # size_guidance 0 keeps every scalar; by default the accumulator keeps a random sample of 10,000 per tag
        accumulator = EventAccumulator(str(path), size_guidance={SCALARS: 0})
        accumulator.Reload()
        scalars = {tag: accumulator.Scalars(tag) for tag in accumulator.Tags()["scalars"]}
        if any(scalars.values()):
            processes.append({"scalars": scalars, "resumed_from": 0, "first_time": accumulator.FirstEventTimestamp()})
    if not any("charts/SPS" in process["scalars"] for process in processes):
        return processes
    for i, process in enumerate(processes[1:], 1):
        first_step = min(event.step for events in process["scalars"].values() for event in events)
        updates = [event.step for earlier in processes[:i] for event in earlier["scalars"].get("charts/SPS", [])]
        process["resumed_from"] = max((step for step in updates if step < first_step), default=0)
        for earlier in processes[:i]:
            earlier["scalars"] = {tag: [event for event in events if event.step <= process["resumed_from"]]
                                  for tag, events in earlier["scalars"].items()}
    return processes


def read_scalars(run_dir: Path, up_to_step: int | None = None) -> tuple[dict[str, list[ScalarEvent]], float | None]:
    """All scalars in the run folder's event files, by tag (with `up_to_step`, those logged at that step or
    before), and the wall time of the first event (None if the folder holds no events). Each ScalarEvent has
    `.wall_time`, `.step` (global_step) and `.value`. A resumed run's scalars are its history's
    (read_processes): not what an earlier process logged past the step a later one went on from."""
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
        updates = [e for e in process["scalars"].get("charts/SPS", []) if up_to_step is None or e.step <= up_to_step]
        if updates:
            seconds, steps = updates[-1].wall_time - process["first_time"], updates[-1].step - process["resumed_from"]
            rows.append({"from": process["resumed_from"], "to": updates[-1].step, "seconds": seconds,
                         "sps": steps / seconds if seconds > 0 else float("nan")})
    return rows


def summarize(
    scalars: dict[str, list[ScalarEvent]],
    tag: str,
    window: int,
    threshold: float | None,
    start_time: float,
    end_time: float,
    train_start: float | None = None,
) -> Measures:
    """Measures of one run from its scalars; `start_time` and `end_time` are the wall times the run's clock
    starts and stops at (process launch and exit, or first and last event when reading old logs), and
    `train_start` the wall time of the run's first event (start of training), when known."""
    episodes = scalars.get(tag, [])
    returns = [event.value for event in episodes]
    crossing = None
    if threshold is not None:
        crossing = rolling_first_crossing(
            [event.step for event in episodes], [event.wall_time for event in episodes], returns, window, threshold
        )
    last_returns = returns[-window:]  # all of them when fewer than `window` episodes finished
    total_steps = max(event.step for events in scalars.values() for event in events)
    wall_seconds = end_time - start_time
    logged_sps = [event.value for event in scalars.get(SPS_TAG, [])]
    return Measures(
        steps_to_threshold=crossing[0] if crossing else None,
        seconds_to_threshold=crossing[1] - start_time if crossing else None,
        final_return=statistics.fmean(last_returns) if last_returns else None,
        episodes=len(returns),
        total_steps=total_steps,
        wall_seconds=wall_seconds,
        # overall throughput, start-up included; charts/SPS is the training loop's own figure
        sps=total_steps / wall_seconds if wall_seconds > 0 else 0.0,
        logged_sps=statistics.fmean(logged_sps) if logged_sps else None,
        train_seconds_to_threshold=crossing[1] - train_start if crossing and train_start is not None else None,
    )


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) of the values, interpolated linearly between the two nearest ranks
    (numpy's default): position q / 100 * (n - 1) in the sorted values."""
    ordered = sorted(values)
    position = q / 100 * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def spread(values: list[float]) -> dict:
    """count, min, 5th percentile, median, 95th percentile and max of a non-empty list of values."""
    return {"count": len(values), "min": min(values), "p5": percentile(values, 5),
            "median": percentile(values, 50), "p95": percentile(values, 95), "max": max(values)}


def curve_at(points: list[dict], tag: str, window: int, step: int) -> dict[str, tuple[float, float]]:
    """{seed: (rolling mean, wall seconds)} of each seed's curve at env step `step`: the mean of the last `window`
    training values of `tag` at the last episode that finished at or before it, and that episode's wall seconds;
    seeds (keyed as strings) with no episode finished by then are left out. `points` as in a curves CSV."""
    curves: dict[str, list[dict]] = {}
    for point in points:
        if point["kind"] == "training" and point["tag"] == tag:
            curves.setdefault(str(point["seed"]), []).append(point)
    found = {}
    for seed, episodes in curves.items():
        done = [episode for episode in episodes if episode["env_steps"] <= step]
        if done:
            last = [episode["value"] for episode in done[-window:]]
            found[seed] = (statistics.fmean(last), done[-1]["wall_seconds"])
    return found


def diagnostic_spreads(scalars: dict[str, list[ScalarEvent]], tags: tuple[str, ...]) -> list[dict]:
    """One row per tag the run logged and per part of the run: "all" its values, "second half" the later half of
    them (values[n // 2:], the middle one included when n is odd), in logging order (one value per update)."""
    rows = []
    for tag in tags:
        values = [event.value for event in scalars.get(tag, [])]
        if not values:
            continue
        for part, part_values in (("all", values), ("second half", values[len(values) // 2 :])):
            rows.append({"tag": tag, "part": part, **spread(part_values)})
    return rows


def diagnostic_ranges(rows: list[dict]) -> list[dict]:
    """The rows of a diagnostics CSV (numbers as numbers) summed up over the seeds, one row per label, tag and
    part in first-seen order: the seeds, the counts, the lowest min and 5th percentile, the median of the
    medians, the highest 95th percentile and max: [p5, p95] is the band that the middle 90% of every seed's
    values fall in."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row.get("label", ""), row["tag"], row["part"]), []).append(row)
    return [
        {"label": label, "tag": tag, "part": part, "seeds": [row["seed"] for row in group],
         "counts": [row["count"] for row in group], "min": min(row["min"] for row in group),
         "p5": min(row["p5"] for row in group), "median": statistics.median(row["median"] for row in group),
         "p95": max(row["p95"] for row in group), "max": max(row["max"] for row in group)}
        for (label, tag, part), group in groups.items()
    ]


def parse_run_name(run_dir: Path) -> tuple[str, int]:
    """env_id and seed from a run folder named {env_id}__{exp_name}__{seed}__{time}."""
    run_dir = run_dir.resolve()
    run_name = run_dir.name
    # an env_id with a slash (ALE/Pong-v5) nests the folder one level deeper: runs/ALE/Pong-v5__bench__1__...
    if run_dir.parent.name != "runs" and run_dir.parent.parent.name == "runs":
        run_name = f"{run_dir.parent.name}/{run_name}"
    fields = run_name.rsplit("__", 3)
    if len(fields) != 4 or not fields[2].isdigit():
        raise RunFailed(f"{run_dir} is not named {{env_id}}__{{exp_name}}__{{seed}}__{{time}}")
    return fields[0], int(fields[2])


# ---------------------------------------------------------------------------------------------------------------
# Running the script and finding its logs
# ---------------------------------------------------------------------------------------------------------------
def find_run_dirs(runs: Path, exp_name: str, seed: int) -> set[Path]:
    """Run folders of this exp_name and seed under runs/ (`**` also finds the nested ALE/... ones)."""
    matches = glob.glob(str(runs / "**" / f"*__{exp_name}__{seed}__*"), recursive=True)
    return {Path(p) for p in matches if Path(p).is_dir()}


def run_seed(args: Args, script: Path, seed: int, log_path: Path) -> tuple[Path, float, float]:
    """Run the script for one seed, its console output going to `log_path`; return its new run folder and the
    launch and exit wall times."""
    runs = args.workdir / "runs"
    existing = find_run_dirs(runs, args.exp_name, seed)  # earlier runs with the same name are not this one
    command = [sys.executable, str(script), "--seed", str(seed), "--exp-name", args.exp_name, *args.script_args]
    # the script's console output (tqdm bar included) goes to a log file, keeping this console one line per seed
    with open(log_path, "w") as log:
        launch = time.time()
        returncode = subprocess.run(command, cwd=args.workdir, stdout=log, stderr=subprocess.STDOUT).returncode
        exit_time = time.time()
    if returncode != 0:
        # tqdm redraws its bar with carriage returns; the last line is usually the exception
        lines = [line for line in log_path.read_text().replace("\r", "\n").splitlines() if line.strip()]
        last_line = f" ({lines[-1].strip()})" if lines else ""
        raise RunFailed(f"exited with status {returncode}{last_line}; full output in {log_path}")
    new = find_run_dirs(runs, args.exp_name, seed) - existing
    if not new:
        raise RunFailed(f"exited 0 but wrote no runs/*__{args.exp_name}__{seed}__* folder in {args.workdir}")
    # the folder name ends in int(time.time()); if several appeared, the newest is this run's
    return max(new, key=lambda p: int(p.name.rsplit("__", 1)[1])), launch, exit_time


def analyse(args: Args, run_dir: Path, start_time: float | None, end_time: float | None) -> dict:
    """One CSV row for a run folder. Without start/end times (--from-logs) the run's first and last events
    stand in for launch and exit."""
    env_id, seed = parse_run_name(run_dir)
    scalars, first_event_time = read_scalars(run_dir, args.up_to_step)
    if not scalars:
        raise RunFailed(f"no TensorBoard scalars in {run_dir}")
    timed_from = "launch"
    if start_time is None:
        timed_from = "first event"
        start_time = first_event_time
        end_time = max(event.wall_time for events in scalars.values() for event in events)
    measures = summarize(scalars, args.tag, args.window, args.threshold, start_time, end_time, first_event_time)
    return {
        "script": Path(args.script).name,
        "label": args.label,
        "env_id": env_id,
        "seed": seed,
        "threshold": args.threshold,
        "window": args.window,
        **asdict(measures),
        "timed_from": timed_from,
        "play_episodes": None,  # filled in by play_policy when --play-episodes is given
        "play_return": None,
        "play_return_std": None,
        "run_dir": str(run_dir),
    }


# The line `--play` ends with, in every script of the library.
PLAY_LINE = re.compile(r"^mean return over (\d+) episodes: (-?[\d.]+) \+/- ([\d.]+)", re.MULTILINE)


def play_policy(args: Args, script: Path, run_dir: Path) -> dict:
    """Play the greedy policy of the run's checkpoint for --play-episodes episodes: the row's play_* fields."""
    checkpoint = run_dir / "checkpoint.pt"
    if not checkpoint.is_file():
        raise RunFailed(f"no checkpoint.pt in {run_dir} to play")
    command = [sys.executable, str(script), "--play", str(checkpoint), "--episodes", str(args.play_episodes)]
    result = subprocess.run(command, cwd=args.workdir, capture_output=True, text=True)
    match = PLAY_LINE.search(result.stdout)
    if result.returncode != 0 or not match:
        lines = result.stderr.strip().splitlines() or result.stdout.strip().splitlines() or ["no output"]
        raise RunFailed(f"--play {checkpoint} exited with status {result.returncode} ({lines[-1].strip()})")
    return {"play_episodes": int(match[1]), "play_return": float(match[2]), "play_return_std": float(match[3])}


# ---------------------------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------------------------
def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def markdown_table(rows: list[dict], threshold: float | None, play_episodes: int = 0) -> str:
    header = ["seed"]
    if threshold is not None:
        header += ["reached", "steps to threshold", "seconds to threshold", "training seconds to threshold"]
    header += ["final return", "total steps", "wall s", "SPS", "logged SPS"]
    if play_episodes:
        header += [f"greedy return ({play_episodes} episodes)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [str(row["seed"])]
        if threshold is not None:
            reached = row["steps_to_threshold"] is not None
            cells += [
                "yes" if reached else "no",
                fmt(row["steps_to_threshold"], "d"),
                fmt(row["seconds_to_threshold"], ".1f"),
                fmt(row["train_seconds_to_threshold"], ".1f"),
            ]
        cells += [
            fmt(row["final_return"], ".1f"),
            str(row["total_steps"]),
            f"{row['wall_seconds']:.1f}",
            f"{row['sps']:.0f}",
            fmt(row["logged_sps"], ".0f"),
        ]
        if play_episodes:
            cells += [f"{row['play_return']:.1f} +/- {row['play_return_std']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_lines(
    rows: list[dict], n_runs: int, threshold: float | None, window: int, play_threshold: float | None = None
) -> list[str]:
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
        lines.append(
            f"{len(reached)}/{n_runs} seeds reached >= {threshold:g} within their budget; "
            f"median steps {fmt(steps, '.0f')}, median seconds {fmt(seconds, '.1f')} "
            f"(of training: {fmt(statistics.median(train) if train else None, '.1f')})"
        )
    finals = [row["final_return"] for row in rows if row["final_return"] is not None]
    final = statistics.median(finals) if finals else None
    sps = statistics.median(row["sps"] for row in rows) if rows else None
    lines.append(
        f"{len(rows)} runs analysed; median final return (mean of last {window} episodes) {fmt(final, '.1f')}, "
        f"median SPS {fmt(sps, '.0f')}"
    )
    return lines


def write_csv(path: Path, rows: list[dict], significant: bool = False) -> None:
    """The rows to a CSV, floats to 3 decimals (plenty for seconds, returns and SPS) or, with `significant`, to
    4 significant digits (a KL of 0.0012 would keep one); None becomes an empty cell."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (float(f"{v:.4g}") if significant else round(v, 3)) if isinstance(v, float) else v
                             for k, v in row.items()})


def curves_path(csv_path: Path) -> Path:
    """Where the curve points of the runs in a results CSV live: beside it, as <stem>-curves.csv."""
    return csv_path.with_name(f"{csv_path.stem}-curves.csv")


def read_points(args: Args, run_dir: Path, start_time: float | None = None, label: str | None = None) -> list[dict]:
    """The run's learning curve as rows for the curves CSV: every --tag value (one per finished training
    episode, kind "training") and every --eval-tag value (one per evaluation, kind "evaluation"), each with its
    env steps and its wall seconds from `start_time` (launch; None: the run's first event), labelled `label`
    (None: --label)."""
    if not run_dir.is_dir():
        raise RunFailed(f"the run folder {run_dir} is gone: rerun the benchmark that wrote it")
    env_id, seed = parse_run_name(run_dir)
    scalars, first_event_time = read_scalars(run_dir, args.up_to_step)
    start = first_event_time if start_time is None else start_time
    return [
        {"script": Path(args.script).name, "label": args.label if label is None else label, "env_id": env_id,
         "seed": seed, "kind": kind, "tag": tag, "env_steps": event.step, "wall_seconds": event.wall_time - start,
         "value": event.value}
        for kind, tag in (("training", args.tag), ("evaluation", args.eval_tag))
        for event in scalars.get(tag, [])
    ]


def diagnostics_path(csv_path: Path) -> Path:
    """Where the diagnostics of the runs in a results CSV live: beside it, as <stem>-diagnostics.csv."""
    return csv_path.with_name(f"{csv_path.stem}-diagnostics.csv")


def read_diagnostics(args: Args, run_dir: Path) -> list[dict]:
    """The run's diagnostics CSV rows: the spread of every --diagnostic-tags scalar it logged (diagnostic_spreads)."""
    env_id, seed = parse_run_name(run_dir)
    return [
        {"script": Path(args.script).name, "label": args.label, "env_id": env_id, "seed": seed, **row}
        for row in diagnostic_spreads(read_scalars(run_dir, args.up_to_step)[0], args.diagnostic_tags)
    ]


def load_diagnostics(path: Path) -> list[dict]:
    """A diagnostics CSV back as rows with numbers (the inverse of write_csv on read_diagnostics' rows)."""
    with open(path) as f:
        return [
            {**row, "count": int(row["count"]), **{key: float(row[key]) for key in ("min", "p5", "median", "p95", "max")}}
            for row in csv.DictReader(f)
        ]


def load_points(path: Path) -> list[dict]:
    """A curves CSV back as rows with numbers (the inverse of write_csv on read_points' rows)."""
    with open(path) as f:
        return [
            {**row, "env_steps": int(row["env_steps"]), "wall_seconds": float(row["wall_seconds"]),
             "value": float(row["value"])}
            for row in csv.DictReader(f)
        ]


def curves_from_points(args: Args, points: list[dict]) -> tuple[dict, dict]:
    """{seed: (steps, rolling mean of --tag)} and {seed: (steps, --eval-tag values)} from curve points (the
    second empty when the script does not evaluate). Seeds are keyed as strings, as a CSV gives them back."""
    curves, evals = {}, {}
    for point in points:
        seed = str(point["seed"])
        if point["kind"] == "training" and point["tag"] == args.tag:
            curves.setdefault(seed, ([], []))
            curves[seed][0].append(point["env_steps"])
            curves[seed][1].append(point["value"])
        elif point["kind"] == "evaluation" and point["tag"] == args.eval_tag:
            evals.setdefault(seed, ([], []))
            evals[seed][0].append(point["env_steps"])
            evals[seed][1].append(point["value"])
    curves = {seed: (steps, rolling_mean(values, args.window)) for seed, (steps, values) in curves.items()}
    return curves, evals


def read_curves(args: Args, rows: list[dict]) -> tuple[dict, dict]:
    """curves_from_points on the rows' run folders."""
    return curves_from_points(args, [point for row in rows for point in read_points(args, Path(row["run_dir"]))])


def draw_mean_and_band(ax, runs: dict, color: str, label: str) -> None:
    """The mean over runs and their min-max band, on the steps all of them cover."""
    import numpy as np

    start = max(steps[0] for steps, _ in runs.values())
    stop = min(steps[-1] for steps, _ in runs.values())
    if stop > start:
        grid = np.linspace(start, stop, 300)
        stacked = np.array([np.interp(grid, steps, values) for steps, values in runs.values()])
        ax.fill_between(grid, stacked.min(0), stacked.max(0), color=color, alpha=0.15)
        ax.plot(grid, stacked.mean(0), color=color, linewidth=2, label=label)


def plot_curves(args: Args, groups: dict[str, tuple[list[dict], list[dict]]]) -> None:
    """Learning curves in one PNG: the rolling mean training return against env steps and, beside it, the
    evaluation return when the script logs it. `groups` maps a configuration's label to its result rows and
    curve points: a single group is drawn seed by seed (thin) with its mean and min-max band, several groups
    (--compare) one colour each, as their mean and band."""
    import matplotlib

    matplotlib.use("Agg")  # draw to a file, no display needed
    import matplotlib.pyplot as plt

    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    training, evaluation = [], []
    for (label, (rows, points)), color in zip(groups.items(), colors * len(groups)):
        curves, evals = curves_from_points(args, points)
        if not curves:
            raise RunFailed(f"no {args.tag} values in the curves of {label or rows[0]['script']}")
        prefix = f"{label}: " if len(groups) > 1 else ""
        training.append((prefix, color, curves))
        if evals:
            evaluation.append((prefix, color, evals))
    measure = "return" if args.tag == Args.tag else args.tag
    panels = [("training episodes", f"{measure}, mean of last {args.window} episodes", args.threshold, training)]
    if evaluation:
        panels.append(("evaluation", args.eval_tag, args.play_threshold, evaluation))

    figure, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.5), squeeze=False)
    for ax, (panel, ylabel, target, panel_groups) in zip(axes[0], panels):
        for prefix, color, runs in panel_groups:
            if len(groups) == 1:
                for seed, (steps, values) in sorted(runs.items()):
                    ax.plot(steps, values, linewidth=0.7, alpha=0.6, label=f"seed {seed}")
            if len(runs) > 1 or len(groups) > 1:
                name = f"mean of {len(runs)} seeds, min-max band" if len(runs) > 1 else f"seed {next(iter(runs))}"
                draw_mean_and_band(ax, runs, color, prefix + name)
        if target is not None:
            ax.axhline(target, color="gray", linestyle="--", linewidth=1, label=f"target {target:g}")
        ax.set_xlabel("env steps")
        ax.set_ylabel(ylabel)
        ax.set_title(panel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    first_label, (first_rows, _) = next(iter(groups.items()))
    if len(groups) > 1:
        named = f": {', '.join(groups)}"
    else:
        named = f" ({first_label})" if first_label else ""
    figure.suptitle(f"{first_rows[0]['script']} on {first_rows[0]['env_id']}{named}")
    figure.tight_layout()
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.plot, dpi=100)
    plt.close(figure)


def compare(args: Args) -> int:
    """--compare: the learning curves of several benchmark CSVs in one --plot."""
    if args.plot is None:
        print("--compare draws into --plot: give --plot PNG", file=sys.stderr)
        return 2
    groups = {}
    for path in args.compare:
        if not path.is_file():
            print(f"--compare: no CSV at {path}", file=sys.stderr)
            return 2
        rows = list(csv.DictReader(open(path)))
        if not rows:
            print(f"--compare: {path} holds no rows", file=sys.stderr)
            return 2
        # The curve points beside the CSV; where they are missing (a CSV from before they were written), read
        # the run folders and keep them there, so the next --compare no longer needs the folders.
        points_path = curves_path(path)
        try:
            if points_path.is_file():
                points = load_points(points_path)
            else:
                points = [point for row in rows
                          for point in read_points(args, Path(row["run_dir"]), label=row.get("label", ""))]
                write_csv(points_path, points)
                print(f"Curve points read from the run folders into {points_path}")
        except RunFailed as error:
            print(f"--compare: {error}", file=sys.stderr)
            return 1
        groups[rows[0].get("label") or path.stem] = (rows, points)
    try:
        plot_curves(args, groups)
    except RunFailed as error:
        print(f"--compare: {error}", file=sys.stderr)
        return 1
    print(f"Learning curves of {', '.join(groups)} drawn in {args.plot}")
    return 0


def mean_std(values: list[float], spec: str = ".1f") -> str:
    """'mean +/- std' over seeds (the sample std; the mean alone for one seed)."""
    if len(values) == 1:
        return format(values[0], spec)
    return f"{statistics.fmean(values):{spec}} +/- {statistics.stdev(values):{spec}}"


def summary_row(path: Path, window: int = 20) -> str:
    """The README results-table row of one benchmark CSV; a final return over other than the header's `window`
    episodes says over how many."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise RunFailed(f"{path} holds no rows")
    script = rows[0]["script"] + (f" ({rows[0]['label']})" if rows[0].get("label") else "")
    finals = [float(row["final_return"]) for row in rows if row["final_return"]]
    played = [float(row["play_return"]) for row in rows if row.get("play_return")]
    # the final "return" is of the --tag the benchmark ran with, which its curves CSV records
    tag = Args.tag
    if curves_path(path).is_file():
        with open(curves_path(path)) as f:
            tag = next((row["tag"] for row in csv.DictReader(f) if row["kind"] == "training"), tag)
    windows = sorted({int(row["window"]) for row in rows if row.get("window")})
    notes = ([] if tag == Args.tag else [tag]) + [f"last {n}" for n in windows if n != window]
    final = (mean_std(finals) + (f" ({', '.join(notes)})" if notes else "")) if finals else "-"
    cells = [
        f"`{script}`", rows[0]["env_id"], f"{statistics.fmean(int(row['total_steps']) for row in rows):,.0f}",
        " ".join(row["seed"] for row in rows), final,
        f"{mean_std(played)} ({rows[0]['play_episodes']} episodes)" if played else "-",
        f"{statistics.fmean(float(row['wall_seconds']) for row in rows):,.0f}",
        f"{statistics.fmean(float(row['sps']) for row in rows):,.0f}",
    ]
    return "| " + " | ".join(cells) + " |"


def summary(args: Args) -> int:
    """--summary: README's results table, one row per CSV."""
    print(f"| script | env | env steps | seeds | final return (last {args.window} training episodes) "
          "| final policy (--play) | wall s | SPS |")
    print("|---|---|---|---|---|---|---|---|")
    for path in args.summary:
        try:
            print(summary_row(path, args.window))
        except (RunFailed, FileNotFoundError, KeyError, ValueError) as error:
            print(f"--summary: cannot read {path}: {error}", file=sys.stderr)
            return 1
    if args.at_steps:
        print()
        print(f"| script | env steps | tag | seeds | mean of the last {args.window} training episodes, mean over the "
              "seeds (min - max) | wall s from launch, mean over the seeds |")
        print("|---|---|---|---|---|---|")
        for path in args.summary:
            try:
                with open(path) as f:
                    rows = list(csv.DictReader(f))
                points = load_points(curves_path(path))
                tag = next(point["tag"] for point in points if point["kind"] == "training")
            except (FileNotFoundError, KeyError, ValueError, StopIteration) as error:
                print(f"--at-steps: cannot read the curves of {path}: {error!r}", file=sys.stderr)
                return 1
            script = rows[0]["script"] + (f" ({rows[0]['label']})" if rows[0].get("label") else "")
            trained = {row["seed"]: int(row["total_steps"]) for row in rows}
            for step in args.at_steps:
                # a seed counts up to the steps it trained for: past them its curve has no point to give
                found = {seed: at for seed, at in curve_at(points, tag, args.window, step).items()
                         if trained.get(seed, 0) >= step}
                if not found:
                    print(f"| `{script}` | {step:,} | {tag} | - | - | - |")
                    continue
                means = [mean for mean, _ in found.values()]
                spread_text = f" ({min(means):.1f} - {max(means):.1f})" if len(means) > 1 else ""
                print(f"| `{script}` | {step:,} | {tag} | {' '.join(found)} | {statistics.fmean(means):.1f}"
                      f"{spread_text} | {statistics.fmean(seconds for _, seconds in found.values()):,.0f} |")
    return 0


def diagnostics(args: Args) -> int:
    """--diagnostics: the ranges over the seeds of each diagnostics CSV, one row per tag and part of the run."""
    print("| script | tag | part of the run | seeds | values per seed | min | 5th pct (lowest seed) "
          "| median (of the seeds' medians) | 95th pct (highest seed) | max |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in args.diagnostics:
        try:
            rows = load_diagnostics(path)
            if not rows:
                raise RunFailed(f"{path} holds no rows")
        except (RunFailed, FileNotFoundError, KeyError, ValueError) as error:
            print(f"--diagnostics: cannot read {path}: {error}", file=sys.stderr)
            return 1
        script = rows[0]["script"]
        for summed in diagnostic_ranges(rows):
            counts = summed["counts"]
            count = str(counts[0]) if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"
            cells = [f"`{script}`" + (f" ({summed['label']})" if summed["label"] else ""), summed["tag"],
                     summed["part"], " ".join(str(seed) for seed in summed["seeds"]), count,
                     *(f"{summed[key]:.3g}" for key in ("min", "p5", "median", "p95", "max"))]
            print("| " + " | ".join(cells) + " |")
    print("Command: " + shlex.join(["python", *sys.argv]))
    return 0


def describe(args: Args) -> int:
    """--describe: one row per run folder of --from-logs with the count, min, median and max of a scalar."""
    run_dirs = sorted({Path(p) for pattern in args.from_logs for p in glob.glob(str(args.workdir / pattern))})
    run_dirs = [p for p in run_dirs if p.is_dir()]
    if not run_dirs:
        print(f"no run folders match {' '.join(args.from_logs)} under {args.workdir}", file=sys.stderr)
        return 1
    header = ["run", "values", "min", "median", "max"]
    if args.band:
        header.append(f"share within [{args.band[0]:g}, {args.band[1]:g}]")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for run_dir in run_dirs:
        values = [event.value for event in read_scalars(run_dir, args.up_to_step)[0].get(args.describe, [])]
        if not values:
            print(f"| {run_dir.name} | 0 | - | - | - |" + (" - |" if args.band else ""))
            continue
        cells = [run_dir.name, str(len(values)), f"{min(values):.4g}", f"{statistics.median(values):.4g}",
                 f"{max(values):.4g}"]
        if args.band:
            inside = sum(args.band[0] <= value <= args.band[1] for value in values)
            cells.append(f"{100 * inside / len(values):.0f}% ({inside} of {len(values)})")
        print("| " + " | ".join(cells) + " |")
    print("Command: " + shlex.join(["python", *sys.argv]))
    return 0


def main(args: Args) -> int:
    if args.window < 1:
        print("--window must be at least 1", file=sys.stderr)
        return 2
    if args.play_episodes < 0:
        print("--play-episodes must not be negative", file=sys.stderr)
        return 2
    if args.compare:
        return compare(args)
    if args.summary:
        return summary(args)
    if args.diagnostics:
        return diagnostics(args)
    if args.describe:
        if not args.from_logs:
            print("--describe reads existing runs: give --from-logs PATTERN", file=sys.stderr)
            return 2
        return describe(args)
    rows, points, diagnostic_rows, failures = [], [], [], []
    if args.from_logs:
        run_dirs = sorted({Path(p) for pattern in args.from_logs for p in glob.glob(str(args.workdir / pattern))})
        run_dirs = [p for p in run_dirs if p.is_dir()]
        if not run_dirs:
            print(f"no run folders match {' '.join(args.from_logs)} under {args.workdir}", file=sys.stderr)
            return 1
        for run_dir in run_dirs:
            try:
                row = analyse(args, run_dir, start_time=None, end_time=None)
                if args.play_episodes:
                    row.update(play_policy(args, Path(args.script).resolve(), run_dir))
                rows.append(row)
                points += read_points(args, run_dir)
                diagnostic_rows += read_diagnostics(args, run_dir)
            except RunFailed as error:
                failures.append(f"{run_dir}: {error}")
        rows.sort(key=lambda row: (row["env_id"], row["seed"], row["run_dir"]))
        diagnostic_rows.sort(key=lambda row: (row["env_id"], row["seed"]))  # stable: tags stay in order
    else:
        # absolute, because the script runs in --workdir while the path was given relative to the caller's cwd
        script = Path(args.script).resolve()
        for i, seed in enumerate(args.seeds, start=1):
            prefix = f"[{i}/{len(args.seeds)}] seed {seed}:"
            log_path = args.workdir / "runs" / f"{script.stem}__{args.exp_name}__{seed}.log"
            log_path.parent.mkdir(parents=True, exist_ok=True)
            print(f"{prefix} running {script.name}, output in {log_path}", flush=True)
            try:
                run_dir, launch, exit_time = run_seed(args, script, seed, log_path)
                row = analyse(args, run_dir, launch, exit_time)
                run_points = read_points(args, run_dir, launch)
                run_diagnostics = read_diagnostics(args, run_dir)
                if args.play_episodes:
                    print(f"{prefix} playing the greedy policy for {args.play_episodes} episodes", flush=True)
                    row.update(play_policy(args, script, run_dir))
            except RunFailed as error:
                print(f"{prefix} FAILED: {error}", flush=True)
                failures.append(f"seed {seed}: {error}")
                continue
            rows.append(row)
            points += run_points
            diagnostic_rows += run_diagnostics
            reached = ""
            if args.threshold is not None and row["steps_to_threshold"] is None:
                reached = f", did not reach {args.threshold:g}"
            elif args.threshold is not None:
                reached = f", reached {args.threshold:g} at step {row['steps_to_threshold']}"
            print(
                f"{prefix} done in {row['wall_seconds']:.1f} s, {row['total_steps']} steps, "
                f"final return {fmt(row['final_return'], '.1f')}{reached}"
                + (f", greedy return {row['play_return']:.1f}" if args.play_episodes else ""),
                flush=True,
            )

    print()
    print(markdown_table(rows, args.threshold, args.play_episodes))
    print()
    for line in summary_lines(rows, len(rows) + len(failures), args.threshold, args.window, args.play_threshold):
        print(line)
    if args.from_logs:
        print("Seconds count from each run's first logged event, not from process launch (start-up not included).")
    print("Command: " + shlex.join(["python", *sys.argv]))
    if rows:
        stem = Path(args.script).stem + (f"-{args.label}" if args.label else "")
        csv_path = args.csv or REPO_ROOT / "benchmarks" / "results" / f"{stem}.csv"
        write_csv(csv_path, rows)
        print(f"Rows written to {csv_path}")
        if points:
            write_csv(curves_path(csv_path), points)
            print(f"Curve points (env steps, wall seconds, {args.tag} / {args.eval_tag}) written to "
                  f"{curves_path(csv_path)}")
        if diagnostic_rows:
            write_csv(diagnostics_path(csv_path), diagnostic_rows, significant=True)
            print(f"Diagnostics (count, min, 5th / 50th / 95th percentile, max of {len(args.diagnostic_tags)} "
                  f"tags per seed) written to {diagnostics_path(csv_path)}")
    if rows and args.plot and points:
        try:
            plot_curves(args, {args.label: (rows, points)})
            print(f"Learning curves drawn in {args.plot}")
        except RunFailed as error:
            failures.append(f"--plot: {error}")
    if failures:
        print(f"{len(failures)} run(s) failed:", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(tyro.cli(Args)))
