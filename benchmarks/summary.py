"""README's results table from benchmark CSVs (benchmarks/benchmark.py's), one row per CSV: env steps, seeds, the
final return and the final policy's --play return as mean +/- std over the seeds, wall seconds and SPS; with
--at-steps, also each CSV's learning curve at those env steps, from its curves CSV: the rolling mean of --window
training episodes (mean, min and max over the seeds) and the wall seconds from launch.

Usage:
    python -m benchmarks.summary benchmarks/results/ppo_cartpole.csv benchmarks/results/ppo_lunarlander_vec.csv
    python -m benchmarks.summary benchmarks/results/ppo_cartpole.csv --at-steps 10000 25000 50000
"""

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import tyro
from tyro.conf import Positional

from benchmarks.core.plots import DEFAULT_TAG, Window
from benchmarks.core.records import curves_path, load_points, markdown_table, name_of, read_rows
from benchmarks.core.stats import curve_at, mean_std


@dataclass
class Args(Window):
    csvs: Positional[tuple[Path, ...]]
    """benchmark CSVs, one row of the table each"""
    at_steps: tuple[int, ...] = ()
    """also each CSV's learning curve at these env steps, from its curves CSV"""


def summary_row(path: Path, window: int = 20) -> list[str]:
    """The cells of one benchmark CSV's row of the results table; a final return over other than the header's
    `window` episodes says over how many."""
    rows = read_rows(path)
    finals = [float(row["final_return"]) for row in rows if row["final_return"]]
    played = [float(row["play_return"]) for row in rows if row.get("play_return")]
    # the final "return" is of the --tag the benchmark ran with, which its curves CSV records
    points = load_points(curves_path(path)) if curves_path(path).is_file() else []
    tag = next((point["tag"] for point in points if point["kind"] == "training"), DEFAULT_TAG)
    windows = sorted({int(row["window"]) for row in rows if row.get("window")})
    notes = ([] if tag == DEFAULT_TAG else [tag]) + [f"last {n}" for n in windows if n != window]
    final = (mean_std(finals) + (f" ({', '.join(notes)})" if notes else "")) if finals else "-"
    return [
        f"`{name_of(rows[0])}`", rows[0]["env_id"], f"{statistics.fmean(int(row['total_steps']) for row in rows):,.0f}",
        " ".join(row["seed"] for row in rows), final,
        f"{mean_std(played)} ({rows[0]['play_episodes']} episodes)" if played else "-",
        f"{statistics.fmean(float(row['wall_seconds']) for row in rows):,.0f}",
        f"{statistics.fmean(float(row['sps']) for row in rows):,.0f}",
    ]


def curve_rows(path: Path, steps: tuple[int, ...], window: int) -> list[list[str]]:
    """The cells of one CSV's --at-steps rows."""
    rows, points = read_rows(path), load_points(curves_path(path))
    tag = next(point["tag"] for point in points if point["kind"] == "training")
    trained = {row["seed"]: int(row["total_steps"]) for row in rows}
    lines = []
    for step in steps:
        # a seed counts up to the steps it trained for: past them its curve has no point to give
        found = {seed: at for seed, at in curve_at(points, tag, window, step).items() if trained.get(seed, 0) >= step}
        if not found:
            lines.append([f"`{name_of(rows[0])}`", f"{step:,}", tag, "-", "-", "-"])
            continue
        means = [mean for mean, _ in found.values()]
        spread_text = f" ({min(means):.1f} - {max(means):.1f})" if len(means) > 1 else ""
        lines.append([f"`{name_of(rows[0])}`", f"{step:,}", tag, " ".join(found),
                      f"{statistics.fmean(means):.1f}{spread_text}",
                      f"{statistics.fmean(seconds for _, seconds in found.values()):,.0f}"])
    return lines


def main(args: Args) -> int:
    try:
        text = markdown_table(["script", "env", "env steps", "seeds", f"final return (last {args.window} training "
                               "episodes)", "final policy (--play)", "wall s", "SPS"],
                              [summary_row(path, args.window) for path in args.csvs])
        if args.at_steps:
            text += "\n\n" + markdown_table(
                ["script", "env steps", "tag", "seeds", f"mean of the last {args.window} training episodes, mean over "
                 "the seeds (min - max)", "wall s from launch, mean over the seeds"],
                [cells for path in args.csvs for cells in curve_rows(path, args.at_steps, args.window)])
    except (FileNotFoundError, KeyError, ValueError, StopIteration) as error:
        print(f"summary: cannot read {error!r}", file=sys.stderr)
        return 1
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(tyro.cli(Args, description=__doc__)))
