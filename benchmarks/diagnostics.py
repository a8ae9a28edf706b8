"""The ranges of the update's diagnostics recorded in <name>-diagnostics.csv files (benchmarks/benchmark.py writes
them), one row per tag and part of the run (the whole run, its second half), over the seeds: the lowest min and
5th percentile, the median of the seeds' medians, the highest 95th percentile and max.

Usage:
    python -m benchmarks.diagnostics benchmarks/results/diagnostics/*-diagnostics.csv
"""

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import tyro
from tyro.conf import Positional

from benchmarks.core.records import load_diagnostics, markdown_table
from benchmarks.core.stats import diagnostic_ranges


@dataclass
class Args:
    csvs: Positional[tuple[Path, ...]]
    """diagnostics CSVs"""


def rows_of(path: Path) -> list[list[str]]:
    """The table's rows (their cells) for one diagnostics CSV."""
    rows = load_diagnostics(path)
    if not rows:
        raise ValueError(f"{path} holds no rows")
    lines = []
    for summed in diagnostic_ranges(rows):
        counts = summed["counts"]
        count = str(counts[0]) if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"
        lines.append([f"`{rows[0]['script']}`" + (f" ({summed['label']})" if summed["label"] else ""), summed["tag"],
                      summed["part"], " ".join(str(seed) for seed in summed["seeds"]), count,
                      *(f"{summed[key]:.3g}" for key in ("min", "p5", "median", "p95", "max"))])
    return lines


def main(args: Args) -> int:
    table = []
    for path in args.csvs:
        try:
            table += rows_of(path)
        except (FileNotFoundError, KeyError, ValueError) as error:
            print(f"diagnostics: cannot read {path}: {error}", file=sys.stderr)
            return 1
    print(markdown_table(["script", "tag", "part of the run", "seeds", "values per seed", "min",
                          "5th pct (lowest seed)", "median (of the seeds' medians)", "95th pct (highest seed)", "max"],
                         table))
    print("Command: " + shlex.join(["python", "-m", "benchmarks.diagnostics", *sys.argv[1:]]))
    return 0


if __name__ == "__main__":
    sys.exit(main(tyro.cli(Args, description=__doc__)))
