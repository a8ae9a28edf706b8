"""The record's files: one CSV writer and one reader, the formats a benchmark writes beside its rows, and the
markdown table every report prints.

A benchmark of a lesson writes three CSVs (benchmarks/benchmark.py): <name>.csv, one row per seed;
<name>-curves.csv, its learning curves (one row per training episode and per evaluation); <name>-diagnostics.csv,
the spread of the update's diagnostics per seed. Every report is made again from these once the run folders are
gone, so they are written here only, atomically (a stopped writer leaves the old file, never half of one).
"""

from __future__ import annotations

import csv
import os
import platform
import re
from pathlib import Path

from benchmarks.core.stats import diagnostic_spreads

# The line a lesson's `--play` ends with (common/evaluation.py): its episodes, and their mean return and std.
PLAY_LINE = re.compile(r"^mean return over (\d+) episodes: (-?[\d.]+) \+/- ([\d.]+)", re.MULTILINE)


DECIMALS = 3  # write_csv's floats="decimals"


def processor() -> str:
    """This machine's CPU as /proc/cpuinfo names it, and whether it has AMX: a record of floating-point results names
    the processor that computed them (bit-exact on that processor only)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "not recorded"
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "")
    flags = next((line for line in info.splitlines() if line.startswith("flags")), "")
    return f"{model or 'unknown CPU'}, {'with' if 'amx_tile' in flags.split() else 'no'} AMX"


def versions() -> str:
    """What exact floating-point results depend on besides the code and the processor: the Python, torch, NumPy
    and gymnasium versions and the processor architecture."""
    import gymnasium
    import numpy
    import torch

    python = ".".join(platform.python_version_tuple()[:2])
    return (f"python {python}, torch {torch.__version__}, numpy {numpy.__version__}, "
            f"gymnasium {gymnasium.__version__}, {platform.machine()}")


def write_csv(path: Path, rows: list[dict], fields: list[str] | None = None, floats: str | None = None) -> None:
    """The rows to a CSV, atomically (written beside it, then renamed over it); `fields` the columns in order
    (None: the first row's keys). `floats`: None writes floats as they are, "decimals" to 3 decimals (plenty for
    seconds, returns and SPS), "significant" to 4 significant digits (a KL of 0.0012 keeps one). None becomes an
    empty cell."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields or list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({key: _rounded(value, floats) for key, value in row.items()})
    os.replace(tmp, path)


def _rounded(value, floats: str | None):
    if not isinstance(value, float) or floats is None:
        return value
    return float(f"{value:.4g}") if floats == "significant" else round(value, DECIMALS)


def read_csv(path: Path, numbers: dict[str, type] | None = None, what: str | None = None) -> list[dict]:
    """A CSV's rows as dicts, the columns named in `numbers` converted (e.g. {"seed": int, "value": float}). A
    missing file has no rows, or where `what` names it, raises FileNotFoundError("no <what> at <path>")."""
    path = Path(path)
    if not path.is_file():
        if what:
            raise FileNotFoundError(f"no {what} at {path}")
        return []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        for key, kind in (numbers or {}).items():
            row[key] = kind(row[key])
    return rows


def read_rows(path: Path) -> list[dict]:
    """A benchmark CSV's rows, refusing a missing or empty file with one line (FileNotFoundError, ValueError)."""
    rows = read_csv(path, what="CSV")
    if not rows:
        raise ValueError(f"{path} holds no rows")
    return rows


def append_csv(path: Path, rows: list[dict], floats: str | None = None) -> None:
    """The rows added at the end of the CSV at `path` (written whole, atomically, by write_csv; made if missing)."""
    path = Path(path)
    write_csv(path, (read_csv(path) if path.exists() else []) + rows, floats=floats)


def run_records(names: dict, scalars: dict, start_time: float, curves: tuple[tuple[str, str], ...],
                diagnostic_tags: tuple[str, ...], wall_digits: int | None = None) -> tuple[list[dict], list[dict]]:
    """One run's rows of <name>-curves.csv and <name>-diagnostics.csv, from its scalars (tag -> events): a point for
    every event of each (kind, tag) in `curves`, with its env steps and its wall seconds from `start_time` (rounded
    to `wall_digits` decimals where given), and the spread of every `diagnostic_tags` scalar it logged; each row
    opens with `names` (script, label, env_id, seed)."""
    def seconds(event) -> float:
        elapsed = event.wall_time - start_time
        return elapsed if wall_digits is None else round(elapsed, wall_digits)

    points = [{**names, "kind": kind, "tag": tag, "env_steps": event.step, "wall_seconds": seconds(event),
               "value": event.value} for kind, tag in curves for event in scalars.get(tag, [])]
    return points, [{**names, **spread} for spread in diagnostic_spreads(scalars, diagnostic_tags)]


def curves_path(csv_path: Path) -> Path:
    """Where the curve points of the runs in a results CSV live: beside it, as <stem>-curves.csv."""
    return Path(csv_path).with_name(f"{Path(csv_path).stem}-curves.csv")


def diagnostics_path(csv_path: Path) -> Path:
    """Where the diagnostics of the runs in a results CSV live: beside it, as <stem>-diagnostics.csv."""
    return Path(csv_path).with_name(f"{Path(csv_path).stem}-diagnostics.csv")


def load_points(path: Path) -> list[dict]:
    """A curves CSV back as rows with numbers."""
    return read_csv(path, {"env_steps": int, "wall_seconds": float, "value": float}, "curves CSV")


def load_diagnostics(path: Path) -> list[dict]:
    """A diagnostics CSV back as rows with numbers."""
    return read_csv(path, {"count": int, **{key: float for key in ("min", "p5", "median", "p95", "max")}},
                    "diagnostics CSV")


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """The lines of a markdown table: the header, its rule, a line per row of cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(cells) + " |" for cells in rows])


def name_of(row: dict) -> str:
    """How a row of a benchmark CSV names its configuration: `script` (label)."""
    return row["script"] + (f" ({row['label']})" if row.get("label") else "")
