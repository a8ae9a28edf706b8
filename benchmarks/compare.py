"""The learning curves of one or several benchmark CSVs in one figure, drawn from their curves CSVs (so a committed
result can be redrawn after its run folders are gone): one CSV is drawn seed by seed with its mean and min-max
band, several one colour per CSV (named by its label), each as its mean and band.

Usage:
    python -m benchmarks.compare benchmarks/results/ppo_breakout_atari-fp32.csv \
        benchmarks/results/ppo_breakout_atari-bf16.csv --plot benchmarks/results/ppo_breakout_atari.png
    python -m benchmarks.compare benchmarks/results/ppo_mario_cnn-{simple,right}.csv --tag charts/x_pos \
        --eval-tag eval/mean_x_pos --plot benchmarks/results/ppo_mario_cnn.png
"""

import sys
from dataclasses import dataclass
from pathlib import Path

import tyro
from tyro.conf import Positional

from benchmarks.core.plots import Curves, plot_curves
from benchmarks.core.records import curves_path, load_points, read_rows
from benchmarks.core.runs import RunFailed


@dataclass
class Args(Curves):
    csvs: Positional[tuple[Path, ...]]
    """benchmark CSVs (benchmarks/benchmark.py's), each with its <name>-curves.csv beside it"""
    plot: Path
    """the PNG to write"""


def main(args: Args) -> int:
    if not args.csvs:
        print("compare: give at least one CSV", file=sys.stderr)
        return 2
    groups = {}
    for path in args.csvs:
        try:
            rows = read_rows(path)
            points = load_points(curves_path(path))
        except (FileNotFoundError, ValueError) as error:
            print(f"compare: {error}", file=sys.stderr)
            return 2
        groups[rows[0].get("label") or path.stem] = (rows, points)
    try:
        plot_curves(groups, args.plot, args)
    except RunFailed as error:
        print(f"compare: {error}", file=sys.stderr)
        return 1
    print(f"Learning curves of {', '.join(groups)} drawn in {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main(tyro.cli(Args, description=__doc__)))
