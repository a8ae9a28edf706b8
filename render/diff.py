"""The neighbour diff in a terminal: the diff of the site's pair pages (render/diffs.py), printed unified style
with both files' line numbers, each copied block that differs folded to one line and, with --hide-prose, the
prose-only changes (comments, docstrings, help texts, blank lines) left out.

Usage, from the repository root::

    python -m render.diff ppo_cartpole.py ppo_lunarlander_vec.py    # one pair (any two scripts)
    python -m render.diff cartpole lunarlander --hide-prose          # short names; code changes only
    python -m render.diff --neighbours | less -R                     # the four pairs the README walks through

A line reads ``-   152        text`` (removed: its line in the first file), ``+         186  text`` (added: its line
in the second) or ``    153   187  text`` (unchanged, around a change). Each hunk, or part of a hunk where it runs
into a copied block, starts with ``@@ -a,n +b,m @@ #k code`` (or ``prose-only``); a folded copied block is one line,
``~ copied block common.ppo.compute_gae (from common/ppo.py): 3 lines changed``. The last line counts the hunks.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from course.lessons import NEIGHBOURS, SCRIPTS
from render.diffs import CONTEXT, Fold, PairDiff, Piece, Same, char_changes, diff_files
from render.source import ROOT

RED, GREEN, CYAN, YELLOW, DIM, RESET = "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[33m", "\x1b[2m", "\x1b[0m"
REVERSE, NO_REVERSE = "\x1b[7m", "\x1b[27m"


class BadInput(Exception):
    """A script that is not there: one line on stderr, exit status 2."""


def resolve(name: str, root: Path = ROOT) -> Path:
    """A script from its file name, its path, or a short name: ppo_cartpole.py, cartpole, lunarlander."""
    path = Path(name)
    if path.is_file():
        return path
    short = path.name.removesuffix(".py").removeprefix("ppo_")
    found = [s for s in SCRIPTS if s == f"ppo_{short}.py"] or [s for s in SCRIPTS if s[4:].startswith(short)]
    if short and len(found) == 1 and (root / found[0]).is_file():
        return root / found[0]
    if len(found) > 1:
        raise BadInput(f"{name!r} could be any of {', '.join(found)}: name one")
    raise BadInput(f"no script {name!r}: name one of {', '.join(SCRIPTS)} (or cartpole, lunarlander, ...)")


class _Printer:
    def __init__(self, diff: PairDiff, hide_prose: bool, color: bool, context: int):
        self.diff, self.hide_prose, self.color, self.context = diff, hide_prose, color, context
        self.out: list[str] = []

    def paint(self, code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if self.color and code else text

    def shown(self, item) -> bool:
        return not isinstance(item, Same) and not (self.hide_prose and item.prose_only)

    def line(self, mark: str, a: int | None, b: int | None, text: str, marks=(), prose=False) -> None:
        if self.color and marks:
            pieces, pos = [], 0
            for start, end in marks:
                pieces += [text[pos:start], REVERSE + text[start:end] + NO_REVERSE]
                pos = end
            text = "".join(pieces) + text[pos:]
        row = f"{mark} {a if a is not None else '':>5} {b if b is not None else '':>5}  {text}".rstrip()
        code = {"-": RED, "+": GREEN, " ": DIM}[mark]
        self.out.append(self.paint(DIM + code if prose else code, row))  # (prose: removed or added lines only)

    def piece(self, piece: Piece) -> None:
        d, a, b, h = self.diff, piece.a_lines, piece.b_lines, piece.hunk
        minus = f"-{a[0]},{len(a)}" if a else f"-{piece.before('a')},0"
        plus = f"+{b[0]},{len(b)}" if b else f"+{piece.before('b')},0"
        part = f" part {piece.part}/{len(h.pieces)}" if len(h.pieces) > 1 else ""
        kind = "prose-only" if piece.prose_only else "code"
        self.out.append(self.paint(CYAN, f"@@ {minus} {plus} @@ #{h.number}{part} {kind}"))
        marks_a, marks_b = {}, {}
        for row in piece.rows:
            if row.similar:
                marks_a[row.a], marks_b[row.b] = char_changes(d.text_a[row.a - 1], d.text_b[row.b - 1])
        for n in piece.a_lines:
            self.line("-", n, None, d.text_a[n - 1], marks_a.get(n, ()), n not in d.code_a)
        for n in piece.b_lines:
            self.line("+", None, n, d.text_b[n - 1], marks_b.get(n, ()), n not in d.code_b)

    def fold(self, fold: Fold) -> None:
        where = [f"{self.diff.a.name} {c.first}-{c.last}" for c in fold.blocks_a] + \
                [f"{self.diff.b.name} {c.first}-{c.last}" for c in fold.blocks_b]
        hunks = ", ".join(f"#{n}" for n in sorted({p.hunk.number for p in fold.pieces}))
        self.out.append(self.paint(YELLOW, f"~ {fold.summary}  [{hunks}; {', '.join(where)}]"))

    def same(self, same: Same, head: int, tail: int) -> None:
        for k in range(len(same)):
            if k < head or k >= len(same) - tail:
                self.line(" ", same.i1 + k + 1, same.j1 + k + 1, self.diff.text_a[same.i1 + k])

    def run(self) -> str:
        d = self.diff
        self.out += [self.paint(RED, f"--- {d.a.name}"), self.paint(GREEN, f"+++ {d.b.name}")]
        items = d.stream
        for k, item in enumerate(items):
            if isinstance(item, Same):
                before = k > 0 and isinstance(items[k - 1], Piece) and self.shown(items[k - 1])
                after = k + 1 < len(items) and isinstance(items[k + 1], Piece) and self.shown(items[k + 1])
                self.same(item, self.context if before else 0, self.context if after else 0)
            elif not self.shown(item):
                continue
            elif isinstance(item, Fold):
                self.fold(item)
            else:
                self.piece(item)
        c = d.counts()
        summary = (f"hunks: {len(d.hunks)} (code {c['code']}, prose-only {c['prose']}, copied {c['copied']}); "
                   f"copied blocks folded: {c['folds']}")
        if self.hide_prose:
            hidden = {p.hunk.number for item in items if not isinstance(item, Same) and item.prose_only
                      for p in (item.pieces if isinstance(item, Fold) else [item])}
            summary += f"; prose-only changes hidden, in {len(hidden)} hunks"
        self.out.append(self.paint(CYAN, summary))
        return "\n".join(self.out) + "\n"


def format_diff(diff: PairDiff, hide_prose: bool = False, color: bool = False, context: int = CONTEXT) -> str:
    """The diff as the terminal shows it (see the module docstring)."""
    return _Printer(diff, hide_prose, color, context).run()


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(2, f"{self.prog}: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m render.diff", description=__doc__.splitlines()[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scripts", nargs="*", help="the two scripts to diff: file names, paths or short names")
    parser.add_argument("--neighbours", action="store_true", help="the four neighbouring pairs, one after another")
    parser.add_argument("--hide-prose", action="store_true",
                        help="leave out the prose-only changes (comments, docstrings, help texts, blank lines)")
    parser.add_argument("--color", action=argparse.BooleanOptionalAction, default=None,
                        help="colour the output (default: when printing to a terminal, unless NO_COLOR is set)")
    parser.add_argument("--context", type=int, default=CONTEXT, help="unchanged lines around a change (%(default)s)")
    parser.add_argument("--root", type=Path, default=ROOT, help="where the scripts are (default: this repository)")
    args = parser.parse_args(argv)
    if args.neighbours == bool(args.scripts) or (args.scripts and len(args.scripts) != 2):
        parser.error("name two scripts, or --neighbours")
    if args.context < 0:
        parser.error("--context must be 0 or more")
    try:
        pairs = ([(args.root / a, args.root / b) for a, b in NEIGHBOURS] if args.neighbours
                 else [(resolve(args.scripts[0], args.root), resolve(args.scripts[1], args.root))])
    except BadInput as error:
        parser.error(str(error))
    color = args.color if args.color is not None else (sys.stdout.isatty() and "NO_COLOR" not in os.environ)
    try:
        for k, (a, b) in enumerate(pairs):
            if k:
                sys.stdout.write("\n")
            sys.stdout.write(format_diff(diff_files(a, b), args.hide_prose, color, args.context))
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
