"""How far apart the lessons are: changed-line counts between every pair of scripts.

Each script is meant to be read as a diff against its neighbour (``diff ppo_cartpole.py ppo_lunarlander_vec.py``
shows what vectorized envs and a split actor-critic change), so a diff should hold the variant and nothing
else. This command prints the matrix of changed lines between every pair of ``ppo_*.py`` scripts, counting the
lines inside ``# Copied from`` blocks (checked copies of ``common/``, identical wherever they appear) apart
from the lines outside them, which are what a reader has to read.

A changed line is a line the diff removes from the first script or adds to the second: Python's difflib diff,
comparing lines without trailing whitespace; a removed line counts as copied when it lies in a copied block of
the first script, an added line when it lies in one of the second. GNU diff pairs the lines differently and
counts a few more (``diff a b | grep -c '^[<>]'``, all lines, copied or not): the neighbouring pairs' report gives
that figure too (``gnu_diff_count``), where a ``diff`` is installed.

A third figure counts code only: the same diff outside copied blocks, taken after removing docstrings (the
module's, the classes' and functions', and the ``Args`` fields' help texts), comments and blank lines. These
lessons explain themselves in prose far more than CleanRL's scripts do, so the difference between the two
figures is the explanation a variant brings with it; the code figure is the one to set beside CleanRL's.

Usage::

    python -m tools.diff_matrix            # the matrix and the neighbouring pairs against their bounds
    python -m tools.diff_matrix --check    # exit 1 when a neighbouring pair is over its bound
    python -m tools.diff_matrix --write    # also rewrite the matrix in CONTRIBUTING.md (between its diff-matrix markers)

``course.lessons.NEIGHBOURS`` holds the neighbouring pairs (the diffs the README walks through, each script against
the one its docstring says it differs from) with their bounds on the code-only figure. The aim is ``AIMS``: 100 changed
lines of code for the MLP pairs, 150 for the pair into the pixel lessons and the one between them (CleanRL's
ppo.py -> ppo_atari.py is 56 lines of code). Each bound is the pair's count when it was last measured: a ratchet
that may only come down as the scripts converge (tests/test_diff_matrix.py fails when a pair grows past it).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import shutil
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

from tools.check_copies import copied_blocks
from course.lessons import LESSONS, NEIGHBOURS

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- diff-matrix:begin -->", "<!-- diff-matrix:end -->"
MATRIX_PAGE = "CONTRIBUTING.md"  # the maintainers' page holds the matrix; README's pair headings quote its counts
# The language lessons' aims: ppo_rlhf_tiny.py -> grpo_rlhf_tiny.py 100, as the MLP pairs; ppo_cartpole.py ->
# ppo_rlhf_tiny.py none but its bound: the task, the agent and the reward all change (a grammar, a transformer, a
# learned reward model), and the PPO that stays is the lesson's point, which its docstring's list says.
AIMS = {(lesson.neighbour, lesson.script): lesson.bound if lesson.neighbour == "ppo_cartpole.py" and lesson.language
        else 150 if lesson.pixels else 100 for lesson in LESSONS if lesson.neighbour}


@dataclass
class Count:
    outside: int  # changed lines outside copied blocks
    inside: int  # changed lines inside copied blocks
    code: int = 0  # changed lines outside copied blocks once docstrings, comments and blank lines are removed

    def __str__(self) -> str:
        return f"{self.outside} ({self.inside}) / {self.code}"


def code_lines(source: str) -> list[tuple[int, str]]:
    """(line number, text) of every line that holds code: docstrings (any string standing alone as a statement,
    which includes the help texts under the Args fields), comments and blank lines removed, and a comment at
    the end of a code line cut off."""
    prose = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            prose.update(range(node.lineno, node.end_lineno + 1))
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col]
    return [(n, line.rstrip()) for n, line in enumerate(lines, start=1) if n not in prose and line.strip()]


def _diff(a_lines: list[tuple[int, str]], b_lines: list[tuple[int, str]], a_copied: set, b_copied: set) -> Count:
    """Changed lines between two lists of (line number, text), split by whether their line numbers lie in copied
    blocks (a_copied, b_copied)."""
    count = Count(0, 0)
    matcher = difflib.SequenceMatcher(None, [t for _, t in a_lines], [t for _, t in b_lines], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed = [(n, a_copied) for n, _ in a_lines[i1:i2]] + [(n, b_copied) for n, _ in b_lines[j1:j2]]
        for line, copied in changed:  # removed from a, then added in b
            if line in copied:
                count.inside += 1
            else:
                count.outside += 1
    return count


def count_changes(a: Path, b: Path) -> Count:
    """The lines `diff a b` removes and adds, split by whether they sit in a copied block, and the code-only
    count outside copied blocks (see code_lines)."""
    a_text, b_text = a.read_text(), b.read_text()
    a_copied, b_copied = ({n for block in copied_blocks(text) for n in range(block.first, block.last + 1)}
                          for text in (a_text, b_text))
    every_a = [(n, line.rstrip()) for n, line in enumerate(a_text.splitlines(), start=1)]
    every_b = [(n, line.rstrip()) for n, line in enumerate(b_text.splitlines(), start=1)]
    count = _diff(every_a, every_b, a_copied, b_copied)
    count.code = _diff(code_lines(a_text), code_lines(b_text), a_copied, b_copied).outside
    return count


def gnu_diff_count(a: Path, b: Path) -> int | None:
    """`diff a b | grep -c '^[<>]'`: the lines GNU diff removes and adds, every line counted (None without a
    `diff` on the PATH)."""
    if shutil.which("diff") is None:
        return None
    out = subprocess.run(["diff", str(a), str(b)], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.startswith(("<", ">")))


def matrix(root: Path) -> tuple[list[str], dict[tuple[str, str], Count]]:
    scripts = sorted(path.name for glob in ("ppo_*.py", "grpo_*.py") for path in root.glob(glob))
    counts = {(a, b): count_changes(root / a, root / b) for a in scripts for b in scripts if a < b}
    return scripts, counts


def between_markers(text: str, begin: str, end: str, body: str) -> str | None:
    """`text` with what lies between the marker lines `begin` and `end` replaced by `body`, or None when a
    marker is missing. The generated tables (this matrix in CONTRIBUTING.md, tools.details_map's map in README) live
    between such."""
    if begin not in text or end not in text:
        return None
    return text[:text.index(begin) + len(begin)] + "\n" + body + "\n" + text[text.index(end):]


def marked(text: str, name: str) -> str | None:
    """What lies between the marker lines ``<!-- name:begin -->`` and ``<!-- name:end -->`` of `text`, or None when
    a marker is missing: how the site finds the parts of README.md it shows (``results``, ``pairs``)."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in text or end not in text:
        return None
    return text[text.index(begin) + len(begin):text.index(end)]


def markdown(scripts: list[str], counts: dict[tuple[str, str], Count]) -> str:
    """The matrix as a markdown table, each cell `outside (inside) / code`."""
    names = [script.removeprefix("ppo_").removesuffix(".py") for script in scripts]  # (grpo_rlhf_tiny keeps its prefix)
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for a, name in zip(scripts, names):
        cells = ["-" if a == b else str(counts[tuple(sorted((a, b)))]) for b in scripts]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.diff_matrix", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a neighbouring pair is over its bound")
    parser.add_argument("--write", action="store_true", help="rewrite the matrix in CONTRIBUTING.md")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: %(default)s)")
    args = parser.parse_args(argv)

    scripts, counts = matrix(args.root)
    table = markdown(scripts, counts)
    print("Changed lines between scripts: outside copied blocks (inside them) / code only, outside copied blocks\n")
    print(table)
    if args.write:
        updated = between_markers((args.root / MATRIX_PAGE).read_text(), BEGIN, END, table)
        if updated is None:
            print(f"{MATRIX_PAGE} has no {BEGIN} ... {END} markers to hold the matrix", file=sys.stderr)
            return 1
        (args.root / MATRIX_PAGE).write_text(updated)
        print(f"\n(written to {args.root / MATRIX_PAGE})")

    print("\nNeighbouring pairs (bounds and aims on the changed lines of code outside copied blocks):\n")
    over = []
    for (a, b), bound in NEIGHBOURS.items():
        if not ((args.root / a).is_file() and (args.root / b).is_file()):
            continue
        count, aim = counts[tuple(sorted((a, b)))], AIMS[a, b]
        status = f"within the aim of {aim}" if count.code <= aim else f"{count.code - aim} over the aim of {aim}"
        if count.code > bound:
            status += f", OVER ITS BOUND {bound}"
            over.append((a, b))
        gnu = gnu_diff_count(args.root / a, args.root / b)
        print(f"  {a} -> {b}: {count.outside} outside, {count.inside} inside copied blocks, {count.code} of code "
              f"({status}); GNU diff: {gnu if gnu is not None else 'no diff installed'}")
    if args.check and over:
        print(f"\n{len(over)} neighbouring pair(s) grew past their bound", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
