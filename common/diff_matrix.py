"""How far apart the lessons are: changed-line counts between every pair of scripts.

Each script is meant to be read as a diff against its neighbour (``diff ppo_cartpole.py ppo_lunarlander_vec.py``
shows what vectorized envs and a split actor-critic change), so a diff should hold the variant and nothing
else. This command prints the matrix of changed lines between every pair of ``ppo_*.py`` scripts, counting the
lines inside ``# Copied from`` blocks (checked copies of ``common/``, identical wherever they appear) apart
from the lines outside them, which are what a reader has to read.

A changed line is a line the diff removes from the first script or adds to the second, as ``diff a b | grep -c
'^[<>]'`` counts them (difflib's diff, within a few lines of GNU diff's), comparing lines without trailing
whitespace; a removed line counts as copied when it lies in a copied block of the first script, an added line
when it lies in one of the second.

Usage::

    python -m common.diff_matrix            # the matrix and the neighbouring pairs against their bounds
    python -m common.diff_matrix --check    # exit 1 when a neighbouring pair is over its bound

``NEIGHBOURS`` below holds the neighbouring pairs (the diffs the README walks through) with their bounds. The
aim for each is ``AIM`` changed lines outside copied blocks (CleanRL's ppo.py -> ppo_atari.py is 59). Where a
pair is still above the aim, its bound is its count when it was last measured: a ratchet that may only come
down as the scripts converge (tests/test_diff_matrix.py fails when a pair grows past its bound).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass
from pathlib import Path

from common.check_copies import copied_spans

ROOT = Path(__file__).resolve().parent.parent
AIM = 100
# (from, to): bound on the changed lines outside copied blocks (measured 2026-11-30; all still above AIM).
NEIGHBOURS = {
    ("ppo_cartpole.py", "ppo_lunarlander_vec.py"): 338,
    ("ppo_lunarlander_vec.py", "ppo_pendulum_continuous.py"): 342,
    ("ppo_cartpole.py", "ppo_breakout_atari.py"): 569,
    ("ppo_breakout_atari.py", "ppo_mario_cnn.py"): 513,
}


@dataclass
class Count:
    outside: int  # changed lines outside copied blocks
    inside: int  # changed lines inside copied blocks

    def __str__(self) -> str:
        return f"{self.outside} ({self.inside})"


def _in_spans(line: int, spans: list[tuple[int, int]]) -> bool:
    return any(first <= line <= last for first, last in spans)


def count_changes(a: Path, b: Path) -> Count:
    """The lines `diff a b` removes and adds, split by whether they sit in a copied block."""
    a_lines = [line.rstrip() for line in a.read_text().splitlines()]
    b_lines = [line.rstrip() for line in b.read_text().splitlines()]
    a_spans, b_spans = copied_spans(a), copied_spans(b)
    count = Count(0, 0)
    matcher = difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for line in range(i1 + 1, i2 + 1):  # removed from a (1-based line numbers)
            if _in_spans(line, a_spans):
                count.inside += 1
            else:
                count.outside += 1
        for line in range(j1 + 1, j2 + 1):  # added in b
            if _in_spans(line, b_spans):
                count.inside += 1
            else:
                count.outside += 1
    return count


def matrix(root: Path) -> tuple[list[str], dict[tuple[str, str], Count]]:
    scripts = sorted(path.name for path in root.glob("ppo_*.py"))
    counts = {(a, b): count_changes(root / a, root / b) for a in scripts for b in scripts if a < b}
    return scripts, counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m common.diff_matrix", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a neighbouring pair is over its bound")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: %(default)s)")
    args = parser.parse_args(argv)

    scripts, counts = matrix(args.root)
    names = [script[len("ppo_"):-len(".py")] for script in scripts]
    print("Changed lines between scripts: outside copied blocks (inside them)\n")
    print("| | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for a, name in zip(scripts, names):
        cells = ["-" if a == b else str(counts[tuple(sorted((a, b)))]) for b in scripts]
        print(f"| {name} | " + " | ".join(cells) + " |")

    print(f"\nNeighbouring pairs (aim: {AIM} changed lines outside copied blocks):\n")
    over = []
    for (a, b), bound in NEIGHBOURS.items():
        if not ((args.root / a).is_file() and (args.root / b).is_file()):
            continue
        count = counts[tuple(sorted((a, b)))]
        status = "within the aim" if count.outside <= AIM else f"{count.outside - AIM} over the aim"
        if count.outside > bound:
            status += f", OVER ITS BOUND {bound}"
            over.append((a, b))
        print(f"  {a} -> {b}: {count.outside} outside, {count.inside} inside copied blocks ({status})")
    if args.check and over:
        print(f"\n{len(over)} neighbouring pair(s) grew past their bound", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
