"""How far Mario gets and where he dies: the record of a ppo_mario_cnn.py run, read from its TensorBoard events.

ppo_mario_cnn.py logs, for every training episode that ends, the x position Mario reached (`charts/x_pos`) and
whether he reached the flag (`charts/flag_get`), both at the env step the episode ended; for every evaluation, the
mean x position (`eval/mean_x_pos`) and the share of its episodes at the flag (`eval/flag_rate`). From those this
prints, for one run folder (a run resumed across sessions keeps one folder, with an events file per session):

- the processes that trained it (a session each, a --resume between them): the env steps each went from and to,
  its wall time and SPS;
- by blocks of --block env steps: how many training episodes ended, their mean x position and the share that
  reached the flag;
- every evaluation: its step, mean x position and flag rate;
- where Mario dies: a histogram of the x position at which the training episodes that did not reach the flag
  ended (a death: an enemy, a pit, or the clock running out), in bins of --bin pixels, over the last --last
  episodes, or all of them with --last 0. World 1-1's flag is at x 3,161.

What a process logged past the step the next one resumed from (the rollout a Ctrl-C gave up) is left out
(benchmarks/core/runs.py's read_processes says how); --up-to-step reads the run as it stood at a step (a run
resumed into a longer one). --csv writes the episodes (step, x_pos, flag), the evaluations and the processes to
three CSVs, so that the record can be printed and drawn again (--from-csv) once the run folder is gone; --plot
draws a PNG: the x position (the mean of the last --window episodes) and the flag rate (the share of them)
against env steps, the evaluations marked, and the histogram.

Usage:
    python -m benchmarks.mario_record runs/SuperMarioBros-1-1-v0__long__1__1796200000
    python -m benchmarks.mario_record RUN --block 100000 --bin 100 --last 2000 \
        --csv benchmarks/results/ppo_mario_cnn-long --plot benchmarks/results/ppo_mario_cnn-long.png
    python -m benchmarks.mario_record --from-csv benchmarks/results/ppo_mario_cnn-long
"""

from __future__ import annotations

import collections
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import tyro

from benchmarks.core import plots
from benchmarks.core.records import read_csv, write_csv
from benchmarks.core.runs import read_scalars, stretches
from benchmarks.core.stats import rolling_mean

FLAG_X = 3161  # World 1-1's flag, in x pixels (where the episodes at the flag end)


@dataclass
class Args:
    run: tyro.conf.Positional[Optional[Path]] = None
    """a run folder of ppo_mario_cnn.py (runs/<level>__<exp-name>__<seed>__<time>/)"""
    from_csv: Optional[Path] = None
    """instead of a run folder: the CSVs a --csv of an earlier call wrote (the prefix given there)"""
    up_to_step: Optional[int] = None
    """read the run only up to this env step (a run resumed into a longer one, recorded as it stood there)"""
    block: int = 100_000
    """env steps per row of the block table"""
    bin: int = 100
    """width of a bin of the death histogram, in x pixels"""
    last: int = 0
    """the death histogram counts the last this many training episodes (0: all of them)"""
    window: int = 100
    """training episodes in the plot's rolling mean x position and flag rate"""
    csv: Optional[Path] = None
    """write <prefix>-episodes.csv and <prefix>-evaluations.csv with this prefix"""
    plot: Optional[Path] = None
    """write the curves and the histogram to this PNG (needs matplotlib)"""


@dataclass(frozen=True)
class Episode:
    step: int  # the env step at which it ended (global_step, all envs and ranks together)
    x_pos: int  # how far Mario got
    flag: bool  # whether he reached the flag


@dataclass(frozen=True)
class Evaluation:
    step: int
    mean_x_pos: float
    flag_rate: float


def read_run(run: Path, up_to_step: Optional[int] = None) -> tuple[list[Episode], list[Evaluation]]:
    """The training episodes and the evaluations logged in a run folder (up to `up_to_step`), in step order,
    without what a resumed run's earlier processes logged past its resume (runs.read_scalars). The script
    logs x_pos and flag_get together for each episode, so the two tags pair up one to one, in their order."""
    scalars, _ = read_scalars(run, up_to_step)
    xs, flags = scalars.get("charts/x_pos", []), scalars.get("charts/flag_get", [])
    if not xs:
        raise SystemExit(f"mario_record.py: no charts/x_pos in {run}: not a run folder of ppo_mario_cnn.py")
    if [e.step for e in xs] != [e.step for e in flags]:
        raise SystemExit(f"mario_record.py: charts/x_pos and charts/flag_get of {run} do not pair up")
    episodes = [Episode(x.step, int(x.value), bool(f.value)) for x, f in zip(xs, flags)]
    evaluations = [Evaluation(x.step, x.value, f.value)
                   for x, f in zip(scalars.get("eval/mean_x_pos", []), scalars.get("eval/flag_rate", []))]
    return sorted(episodes, key=lambda e: e.step), sorted(evaluations, key=lambda e: e.step)


def block_rows(episodes: list[Episode], block: int) -> list[dict]:
    """One row per --block env steps that holds an episode: its first and last step, how many episodes ended in
    it, their mean x position and the share that reached the flag."""
    rows: dict[int, list[Episode]] = {}
    for episode in episodes:
        rows.setdefault((episode.step - 1) // block, []).append(episode)
    return [{"from": i * block, "to": (i + 1) * block, "episodes": len(group),
             "mean_x": sum(e.x_pos for e in group) / len(group), "flag_share": sum(e.flag for e in group) / len(group)}
            for i, group in sorted(rows.items())]


def deaths(episodes: list[Episode], bin_width: int, last: int = 0) -> list[tuple[int, int]]:
    """(bin start, episodes that ended without the flag with their x in [start, start + bin_width)), for every bin
    from 0 to the furthest death, over the last `last` episodes (0: all)."""
    bins = collections.Counter(e.x_pos // bin_width for e in (episodes[-last:] if last else episodes) if not e.flag)
    return [(i * bin_width, bins[i]) for i in range(max(bins) + 1)] if bins else []


def report(args: Args, episodes: list[Episode], evaluations: list[Evaluation], resumes: list[dict] = ()) -> str:
    lines = [f"{len(episodes)} training episodes, {sum(e.flag for e in episodes)} at the flag; "
             f"{len(evaluations)} evaluations", ""]
    if resumes:
        lines += ["Each process that trained the run (a --resume starts the next; wall time from its first event "
                  "to its last update):", "", "| env steps | wall min | SPS |", "|---|---|---|"]
        lines += [f"| {r['from']:,} - {r['to']:,} | {r['seconds'] / 60:.1f} | {r['sps']:.0f} |" for r in resumes]
        lines.append("")
    lines += ["| env steps | episodes | mean x position | at the flag |", "|---|---|---|---|"]
    lines += [f"| {row['from']:,} - {row['to']:,} | {row['episodes']} | {row['mean_x']:.0f} | {row['flag_share']:.1%} |"
              for row in block_rows(episodes, args.block)]
    if evaluations:
        lines += ["", "| evaluation at step | mean x position | flag rate |", "|---|---|---|"]
        lines += [f"| {e.step:,} | {e.mean_x_pos:.0f} | {e.flag_rate:.2f} |" for e in evaluations]
    histogram = deaths(episodes, args.bin, args.last)
    which = f"the last {min(args.last, len(episodes))}" if args.last else f"all {len(episodes)}"
    lines += ["", f"Where the episodes without the flag ended ({which} training episodes; x in bins of {args.bin}):",
              "", "| x position | deaths | share |", "|---|---|---|"]
    total = sum(count for _, count in histogram)
    lines += [f"| {start:,} - {start + args.bin - 1:,} | {count} | {count / total:.1%} |"
              for start, count in histogram if count]
    return "\n".join(lines)


PROCESSES = {"from": int, "to": int, "seconds": float, "sps": float}  # the columns of the CSVs, with their types
EPISODES = {"step": int, "x_pos": int, "flag": int}
EVALUATIONS = {"step": int, "mean_x_pos": float, "flag_rate": float}


def write_csvs(prefix: Path, episodes: list[Episode], evaluations: list[Evaluation], resumes: list[dict] = ()) -> None:
    if resumes:  # (a run folder that has logged an update)
        write_csv(Path(f"{prefix}-processes.csv"), list(resumes), list(PROCESSES))
    write_csv(Path(f"{prefix}-episodes.csv"), [{**asdict(e), "flag": int(e.flag)} for e in episodes], list(EPISODES))
    write_csv(Path(f"{prefix}-evaluations.csv"), [asdict(e) for e in evaluations], list(EVALUATIONS))


def read_csvs(prefix: Path) -> tuple[list[Episode], list[Evaluation], list[dict]]:
    episodes = [Episode(**{**row, "flag": row["flag"] == 1})
                for row in read_csv(Path(f"{prefix}-episodes.csv"), EPISODES, "episodes CSV")]
    evaluations = [Evaluation(**row) for row in read_csv(Path(f"{prefix}-evaluations.csv"), EVALUATIONS)]
    return episodes, evaluations, read_csv(Path(f"{prefix}-processes.csv"), PROCESSES)


def plot(args: Args, episodes: list[Episode], evaluations: list[Evaluation], title: str) -> None:
    steps = [e.step for e in episodes]
    figure, (x_ax, flag_ax, death_ax) = plots.pyplot().subplots(1, 3, figsize=(18, 4.5))
    x_ax.plot(steps, rolling_mean([e.x_pos for e in episodes], args.window),
              label=f"training, mean of last {args.window} episodes")
    flag_ax.plot(steps, rolling_mean([float(e.flag) for e in episodes], args.window),
                 label=f"training, share of last {args.window}")
    if evaluations:
        x_ax.plot([e.step for e in evaluations], [e.mean_x_pos for e in evaluations], "o-", label="evaluations")
        flag_ax.plot([e.step for e in evaluations], [e.flag_rate for e in evaluations], "o-", label="evaluations")
    x_ax.axhline(FLAG_X, color="gray", linestyle="--", linewidth=1, label=f"the flag (x {FLAG_X:,})")
    flag_ax.axhline(0.5, color="gray", linestyle="--", linewidth=1, label="10 of 20")
    for ax, ylabel in ((x_ax, "x position reached"), (flag_ax, "share of episodes at the flag")):
        ax.set_xlabel("env steps")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    histogram = deaths(episodes, args.bin, args.last)
    death_ax.bar([start for start, _ in histogram], [count for _, count in histogram], width=args.bin, align="edge")
    death_ax.set_xlabel("x position at death")
    death_ax.set_ylabel("training episodes")
    death_ax.set_title(f"where Mario dies ({f'last {args.last}' if args.last else 'all'} episodes)")
    figure.suptitle(title)
    figure.tight_layout()
    plots.save(figure, args.plot)


def main(args: Args) -> int:
    problem = ("give a run folder or --from-csv PREFIX (one of them)" if (args.run is None) == (args.from_csv is None)
               else f"no run folder at {args.run}" if args.run is not None and not args.run.is_dir()
               else "--block, --bin and --window must be positive, --last not negative"
               if min(args.block, args.bin, args.window) <= 0 or args.last < 0 else None)
    if problem:
        print(f"mario_record.py: {problem}", file=sys.stderr)
        return 2
    if args.run:
        (episodes, evaluations), resumes = read_run(args.run, args.up_to_step), stretches(args.run, args.up_to_step)
    else:
        episodes, evaluations, resumes = read_csvs(args.from_csv)
    print(report(args, episodes, evaluations, resumes))
    if args.csv:
        write_csvs(args.csv, episodes, evaluations, resumes)
    if args.plot:
        plot(args, episodes, evaluations, f"ppo_mario_cnn.py: {(args.csv or args.from_csv or args.run).name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(tyro.cli(Args, description=__doc__)))
