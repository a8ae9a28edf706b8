"""One TensorBoard scalar described in each run folder: how many values, their min, median and max, and with
--band the share of them within a range (e.g. the adaptive-KL band d_targ / 1.5 .. 1.5 d_targ of losses/kl). A
resumed run is read as its history (benchmarks/core/runs.py).

Usage:
    python -m benchmarks.describe 'runs/SuperMarioBros-1-1-v0__*' --tag losses/stop_iter
    python -m benchmarks.describe 'runs/Pendulum-v1__bench-kl__*' --tag losses/kl --band 0.0067 0.015
"""

import shlex
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import tyro
from tyro.conf import Positional

from benchmarks.core import runs
from benchmarks.core.launch import ROOT
from benchmarks.core.records import markdown_table


@dataclass
class Args:
    patterns: Positional[tuple[str, ...]]
    """run folders: glob patterns, relative to --workdir"""
    tag: str
    """the TensorBoard scalar to describe (e.g. losses/stop_iter for Mario's KL early stop)"""
    band: tuple[float, float] | None = None
    """also the share of the values within [LO, HI]"""
    up_to_step: int | None = None
    """read each run only up to this env step"""
    workdir: Path = ROOT
    """the folder the patterns are relative to"""


def main(args: Args) -> int:
    run_dirs = runs.matching(args.patterns, args.workdir)
    if not run_dirs:
        print(f"no run folders match {' '.join(args.patterns)} under {args.workdir}", file=sys.stderr)
        return 1
    header = ["run", "values", "min", "median", "max"]
    if args.band:
        header.append(f"share within [{args.band[0]:g}, {args.band[1]:g}]")
    table = []
    for run_dir in run_dirs:
        values = [event.value for event in runs.read_scalars(run_dir, args.up_to_step)[0].get(args.tag, [])]
        if not values:
            table.append([run_dir.name, "0"] + ["-"] * (len(header) - 2))
            continue
        cells = [run_dir.name, str(len(values)), f"{min(values):.4g}", f"{statistics.median(values):.4g}",
                 f"{max(values):.4g}"]
        if args.band:
            inside = sum(args.band[0] <= value <= args.band[1] for value in values)
            cells.append(f"{100 * inside / len(values):.0f}% ({inside} of {len(values)})")
        table.append(cells)
    print(markdown_table(header, table))
    print("Command: " + shlex.join(["python", "-m", "benchmarks.describe", *sys.argv[1:]]))
    return 0


if __name__ == "__main__":
    sys.exit(main(tyro.cli(Args, description=__doc__)))
