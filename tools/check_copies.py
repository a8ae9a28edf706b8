"""Check that the scripts' copies of shared code still match the originals in ``common/``.

Every ``ppo_*.py`` script in this library is one self-contained file: instead of importing a wrapper from
``common/wrappers.py`` it carries a copy of it, directly below a marker comment::

    # Copied from common.wrappers.MaxAndSkip
    class MaxAndSkip(gym.Wrapper):
        ...

This module compares every such copy with its original, as Hugging Face transformers'
``utils/check_copies.py`` does for its model files, and can rewrite the copies that have drifted.

Marker syntax
-------------
::

    # Copied from <module>.<Name> [with Old->New[, Old->New ...]]

- ``<module>`` is a dotted module path, resolved relative to the repository root: ``common.wrappers`` is
  ``common/wrappers.py``. ``<Name>`` is a top-level class or function of that module.
- ``with Old->New, ...`` renames: each pair is applied in order, as a plain text replacement
  (``str.replace``), to the original's text before it is compared with the copy. ppo_mario_cnn.py's
  ``# Copied from common.checkpoints.load_checkpoint with "optimizer"->"optimizers"`` is one.
- The copy is the top-level class or function whose first line (its first decorator, if it has any) is the
  next non-blank line after the marker.
- Trailing whitespace on a line is ignored; every other character must match.
- Every comment line that starts with ``Copied from`` is a marker, so a mistyped marker is reported rather
  than silently skipped (say "adapted from" in ordinary comments). Text inside strings and docstrings is
  never a marker.

Definitions are located with the ``ast`` module (``ClassDef``, ``FunctionDef`` and ``AsyncFunctionDef``
nodes), never with regular expressions over code; a definition's text runs from its first decorator line
to its last line (``end_lineno``).

Usage, from the repository root::

    python -m tools.check_copies                 # check every ppo_*.py; exit status 1 on any problem
    python -m tools.check_copies --fix           # rewrite drifted copies from their originals
    python -m tools.check_copies ppo_atari.py    # check only the given files
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import sys
import textwrap
import tokenize
from dataclasses import dataclass
from pathlib import Path

MARKER = "Copied from"
DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
FIX_HINT = "run python -m tools.check_copies --fix"
# The repository this file belongs to: tools/check_copies.py -> the folder above common/.
DEFAULT_ROOT = Path(__file__).resolve().parent.parent
# A drift report shows at most this many diff lines; the full picture is one --fix (and git diff) away.
MAX_DIFF_LINES = 40


@dataclass
class Problem:
    """One line of the report: ``path:line: message``, optionally followed by a diff."""

    path: str  # relative to the repository root, with forward slashes
    line: int  # 1-based line of the marker
    message: str
    diff: str = ""  # unified diff, expected original -> actual copy ("" when not a drift)
    fixed: bool = False  # True for "rewrote copy of ..." entries that --fix has already repaired

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class Report:
    """What one run of the checker found."""

    problems: list[Problem]
    n_files: int  # scripts checked
    n_copies: int  # markers found in them


@dataclass
class _Copy:
    """A marker whose copy has drifted, with everything --fix needs to rewrite it."""

    marker_line: int
    target: str  # the dotted name after "Copied from"
    start: int  # first line of the copy (1-based, inclusive)
    end: int  # last line of the copy (1-based, inclusive)
    expected: list[str]  # what lines start..end should read, without line endings


# ------------------------------------------------------------------------------------------------------
# Reading source files
# ------------------------------------------------------------------------------------------------------


def _read_lines(path: Path) -> list[str]:
    """The file's lines, each with its "\\n": index i is ast's line i + 1."""
    with open(path, encoding="utf-8") as f:
        return f.readlines()


def _first_line(node: ast.AST) -> int:
    """A definition starts at its first decorator, if it has any, else at ``def``/``class``."""
    return min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])


def _relative(root: Path, path: Path) -> str:
    """``path`` as the report prints it: relative to the root when inside it."""
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)


# ------------------------------------------------------------------------------------------------------
# Markers
# ------------------------------------------------------------------------------------------------------


def _marker_comments(source: str) -> list[tuple[int, str]]:
    """(line, text after "Copied from") for every comment line that is a marker.

    Comments come from the tokenizer rather than from a text search, so an example marker inside a
    docstring (as in this module's) is not mistaken for a real one. A comment that follows code on the
    same line is not a marker either.
    """
    markers = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT or token.line[: token.start[1]].strip():
            continue
        text = token.string.lstrip("#").strip()
        if text == MARKER or text.startswith(MARKER + " "):
            markers.append((token.start[0], text[len(MARKER) :]))
    return markers


def _definitions(tree: ast.Module) -> dict[int, ast.AST]:
    """The top-level classes and functions of a module, by the line each starts on."""
    return {_first_line(node): node for node in tree.body if isinstance(node, DEFINITIONS)}


def _copy_below(lines: list[str], definitions: dict[int, ast.AST], marker_line: int) -> tuple[int, ast.AST | None]:
    """The copy a marker names: the top-level definition starting on the next non-blank line below it (None if
    that line starts none), and that line."""
    start = marker_line + 1
    while start <= len(lines) and not lines[start - 1].strip():
        start += 1
    return start, definitions.get(start)


@dataclass(frozen=True)
class CopiedBlock:
    """A copy in a script: lines first..last (1-based, inclusive), from its marker comment to the end of the
    definition below it."""

    first: int
    last: int
    target: str  # the dotted original, e.g. common.ppo.compute_gae

    @property
    def module(self) -> str:
        """The file that holds the original, e.g. common/ppo.py."""
        return "/".join(self.target.split(".")[:-1]) + ".py"

    @property
    def name(self) -> str:
        return self.target.split(".")[-1]


def copied_blocks(source: str) -> list[CopiedBlock]:
    """Every copied block of a script's source, in order: the one parser of the markers, which tools.diff_matrix
    and the site (render/) read too. A marker that is malformed, or not directly above a top-level definition, makes
    no block (``check`` reports those)."""
    lines = io.StringIO(source).readlines()
    definitions = _definitions(ast.parse(source))
    blocks = []
    for marker_line, text in _marker_comments(source):
        _, copy = _copy_below(lines, definitions, marker_line)
        try:
            target, _ = parse_marker(text)
        except ValueError:
            continue
        if copy is not None:
            blocks.append(CopiedBlock(marker_line, copy.end_lineno, target))
    return blocks


def parse_marker(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Split the text after "Copied from" into the dotted target and its (Old, New) renames.

    ``" common.wrappers.SkipFrame with SkipFrame->MaxAndSkip, skip->frame_skip"`` gives
    ``("common.wrappers.SkipFrame", [("SkipFrame", "MaxAndSkip"), ("skip", "frame_skip")])``.
    Raises ValueError, with the reason, when the text does not follow the marker syntax.
    """
    words = text.split(maxsplit=2)  # target, "with", the renames
    if not words:
        raise ValueError("no name after 'Copied from'")
    target = words[0]
    parts = target.split(".")
    if len(parts) < 2 or not all(part.isidentifier() for part in parts):
        raise ValueError(f"{target!r} is not a dotted module.Name path")
    if len(words) == 1:
        return target, []
    if words[1] != "with":
        raise ValueError(f"expected 'with Old->New' after {target}, found {words[1]!r}")
    if len(words) == 2:
        raise ValueError("'with' must be followed by at least one Old->New rename")

    renames = []
    for pair in words[2].split(","):
        old, arrow, new = pair.strip().partition("->")
        if not (arrow and old and new) or "->" in new or any(char.isspace() for char in old + new):
            raise ValueError(f"rename {pair.strip()!r} is not of the form Old->New")
        renames.append((old, new))
    return target, renames


# ------------------------------------------------------------------------------------------------------
# Originals
# ------------------------------------------------------------------------------------------------------


def _find_original(root: Path, target: str, modules: dict[Path, tuple[list[str], ast.Module]]):
    """(module file, its lines, the definition node) for a dotted target; LookupError says why not.

    ``modules`` caches each parsed module, since many copies share one original file.
    """
    *module, name = target.split(".")
    path = root.joinpath(*module).with_suffix(".py")
    if not path.is_file():
        raise LookupError(f"no module file {_relative(root, path)}")
    if path not in modules:
        lines = _read_lines(path)
        try:
            modules[path] = (lines, ast.parse("".join(lines), filename=str(path)))
        except SyntaxError as error:
            raise LookupError(f"{_relative(root, path)} does not parse: {error.msg}") from None
    lines, tree = modules[path]
    # The last definition of the name, as when Python runs the module.
    nodes = [node for node in tree.body if isinstance(node, DEFINITIONS) and node.name == name]
    if not nodes:
        raise LookupError(f"{_relative(root, path)} has no top-level class or function {name}")
    return path, lines, nodes[-1]


def _expected_copy(original: list[str], renames: list[tuple[str, str]]) -> list[str]:
    """The original's lines as the copy should read them: renamed, trailing whitespace removed."""
    text = "".join(original)
    for old, new in renames:  # in order, so a later pair sees the result of an earlier one
        text = text.replace(old, new)
    return [line.rstrip() for line in io.StringIO(text).readlines()]


# ------------------------------------------------------------------------------------------------------
# Checking and fixing one script
# ------------------------------------------------------------------------------------------------------


def _check_script(root: Path, path: Path, modules: dict) -> tuple[int, list[Problem], list[_Copy]]:
    """(number of markers, problems, drifted copies) for one script."""
    name = _relative(root, path)
    lines = _read_lines(path)
    source = "".join(lines)
    try:
        tree = ast.parse(source, filename=name)
    except SyntaxError as error:
        return 0, [Problem(name, error.lineno or 1, f"cannot parse: {error.msg}")], []

    definitions = _definitions(tree)

    markers = _marker_comments(source)
    problems, drifted = [], []
    for marker_line, text in markers:
        try:
            target, renames = parse_marker(text)
        except ValueError as error:
            problems.append(Problem(name, marker_line, f"malformed marker: {error}"))
            continue

        start, copy = _copy_below(lines, definitions, marker_line)
        if copy is None:
            message = "marker is not directly above a top-level class or function definition"
            problems.append(Problem(name, marker_line, message))
            continue

        try:
            module_path, module_lines, original = _find_original(root, target, modules)
        except LookupError as error:
            problems.append(Problem(name, marker_line, f"original {target} not found ({error})"))
            continue

        original_start = _first_line(original)
        original_lines = module_lines[original_start - 1 : original.end_lineno]
        expected = _expected_copy(original_lines, renames)
        actual = [line.rstrip() for line in lines[start - 1 : copy.end_lineno]]
        if actual == expected:
            continue

        origin = f"{_relative(root, module_path)}:{original_start}"
        labels = {"fromfile": f"{origin} (expected)", "tofile": f"{name}:{start} (copy)"}
        diff = list(difflib.unified_diff(expected, actual, **labels, lineterm="", n=1))
        if len(diff) > MAX_DIFF_LINES:
            diff = diff[:MAX_DIFF_LINES] + [f"... ({len(diff) - MAX_DIFF_LINES} more diff lines)"]
        message = f"copy of {target} has drifted from {origin} ({FIX_HINT})"
        problems.append(Problem(name, marker_line, message, diff="\n".join(diff)))
        drifted.append(_Copy(marker_line, target, start, copy.end_lineno, expected))
    return len(markers), problems, drifted


def _rewrite(path: Path, copies: list[_Copy]) -> None:
    """Replace each drifted copy in ``path`` with its expected text. Copies are rewritten bottom-up, so a
    rewrite that changes the number of lines never moves a copy still waiting above it; the lines outside
    the copies are written back untouched."""
    lines = _read_lines(path)
    for copy in sorted(copies, key=lambda c: c.start, reverse=True):
        lines[copy.start - 1 : copy.end] = [line + "\n" for line in copy.expected]
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(lines))


# ------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------


def check(root: Path, fix: bool = False, files: list[Path] | None = None) -> Report:
    """Check (and with ``fix``, rewrite) the copies in ``files``: by default every lesson in ``root`` (ppo_*.py,
    grpo_*.py).

    Relative ``files`` are taken relative to ``root``. With ``fix``, each rewritten copy is reported as a
    Problem with ``fixed=True``; the other problems are those still present after the rewrite.
    """
    root = Path(root).resolve()
    scripts = sorted([*root.glob("ppo_*.py"), *root.glob("grpo_*.py")]) if files is None else [root / f for f in files]
    modules: dict[Path, tuple[list[str], ast.Module]] = {}  # parsed originals, shared by all scripts
    problems: list[Problem] = []
    n_copies = 0
    for script in scripts:
        n_markers, script_problems, drifted = _check_script(root, script, modules)
        if fix and drifted:
            _rewrite(script, drifted)
            for copy in drifted:
                message = f"rewrote copy of {copy.target}"
                problems.append(Problem(_relative(root, script), copy.marker_line, message, fixed=True))
            _, script_problems, _ = _check_script(root, script, modules)  # what the rewrite could not fix
        problems += script_problems
        n_copies += n_markers
    return Report(problems, len(scripts), n_copies)


def find_problems(root: Path, fix: bool = False, files: list[Path] | None = None) -> list[Problem]:
    """The problems that ``check`` finds (with ``fix``, including the ``fixed=True`` rewrites)."""
    return check(root, fix, files).problems


def _plural(count: int, noun: str, plural: str = "") -> str:
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.check_copies",
        description="Check that every '# Copied from common.X.Name' copy in the scripts matches its original.",
    )
    parser.add_argument("files", nargs="*", type=Path, help="files to check (default: every ppo_*.py in the root)")
    parser.add_argument("--fix", action="store_true", help="rewrite drifted copies from their originals")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="repository root (default: %(default)s)")
    args = parser.parse_args(argv)

    # FILES on the command line are relative to the current directory, as usual for a command.
    files = [file.resolve() for file in args.files] or None
    missing = [str(file) for file in files or [] if not file.is_file()]
    if missing:
        parser.error(f"no such file: {', '.join(missing)}")

    report = check(args.root, fix=args.fix, files=files)
    for problem in report.problems:
        print(problem)
        if problem.diff:
            print(textwrap.indent(problem.diff, "    "))

    remaining = [problem for problem in report.problems if not problem.fixed]
    if remaining:
        print(f"{_plural(len(remaining), 'problem')} in {_plural(report.n_files, 'script')}")
        return 1
    copies = _plural(report.n_copies, "copy", "copies")
    print(f"checked {_plural(report.n_files, 'script')}, {copies}: all in sync")
    return 0


if __name__ == "__main__":
    sys.exit(main())
