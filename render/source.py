"""A lesson file read as the site shows it: which lines are prose and which are code, where the copied blocks and
the plumbing fence are, and the parts the section banners name.

Prose is what a reader reads as text: the comments that stand on lines of their own, and the docstrings of the
module, of the classes and of the functions (an `Args` field's help text stays with its field, in the code: it is
what `--help` prints). Everything else, blank lines included, is code. A comment at the end of a code line stays
in the code too.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from tools.check_copies import CopiedBlock, copied_blocks
from course.lessons import SCRIPTS

ROOT = Path(__file__).resolve().parent.parent
BANNER = re.compile(r"^# --- (.+?) -{3,}$")  # a section banner, one line: "# --- The environment -----..."
FENCE = re.compile(r"^# ={20,}$")  # the plumbing fence: its text between two of these


@dataclass
class Lesson:
    """One script, line by line (line numbers are 1-based, as in an editor)."""

    path: Path
    lines: list[str]  # without their newlines
    prose: set[int]  # lines that are prose (see the module docstring)
    docstrings: dict[int, tuple[int, int]]  # first line -> (first, last) of each prose docstring
    copies: list[CopiedBlock]  # tools.check_copies' blocks: first, last, target, module, name
    fence: tuple[int, int] | None  # (first, last) line of the plumbing fence's banner
    sections: list[tuple[int, str]] = field(default_factory=list)  # (line of the title, title)

    @property
    def name(self) -> str:
        return self.path.name


def _docstring_nodes(tree: ast.Module):
    """The module's, classes' and functions' docstring expressions (not the Args fields' help texts)."""
    owners = [tree] + [node for node in ast.walk(tree)
                       if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    for owner in owners:
        body = owner.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            yield body[0]


def read_lesson(path: Path) -> Lesson:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    docstrings = {node.lineno: (node.lineno, node.end_lineno) for node in _docstring_nodes(tree)}
    prose = {token.start[0] for token in tokenize.generate_tokens(io.StringIO(source).readline)
             if token.type == tokenize.COMMENT and not token.line[: token.start[1]].strip()}  # comment lines
    for first, last in docstrings.values():
        prose.update(range(first, last + 1))
    fences = [n for n, line in enumerate(lines, start=1) if FENCE.match(line)] + [len(lines) + 1]
    fence = (fences[0], fences[1]) if len(fences) > 1 else None  # (an unclosed fence runs to the end)
    sections = [(n, BANNER.match(line).group(1)) for n, line in enumerate(lines, start=1) if BANNER.match(line)]
    sections += [(fence[0] + 1, "The plumbing")] if fence else []
    return Lesson(path, lines, prose, docstrings, copied_blocks(source), fence, sections)


@functools.lru_cache(maxsize=None)
def _targets(path: Path, mtime: float) -> frozenset[str]:
    """The targets of the copies in the file at `path` (cached per modification time: a build reads each once)."""
    return frozenset(block.target for block in copied_blocks(path.read_text(encoding="utf-8")))


def carriers(target: str, root: Path = ROOT) -> list[str]:
    """The scripts that carry a copy of `target` (a dotted common.<module>.<Name>)."""
    return [script for script in SCRIPTS if target in _targets(root / script, (root / script).stat().st_mtime)]


def one_line_and_usage(lesson: Lesson) -> tuple[str, str]:
    """The docstring's first line ("PPO on CartPole-v1: the smallest ...", whole) and the first command of its Usage
    block."""
    doc = ast.get_docstring(ast.parse("\n".join(lesson.lines))).splitlines()
    start = next(i for i, line in enumerate(doc) if line.strip() == "Usage")
    return doc[0], doc[start + 1].split("#")[0].strip()
