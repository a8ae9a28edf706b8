"""Check that the scripts' copies of shared code still match the originals in ``common/``.

Every ``ppo_*.py`` script in this library is one self-contained file: instead of importing a wrapper from
``common/wrappers.py`` it carries a copy of it, directly below a marker comment::

    # Copied from common.wrappers.SkipFrame
    class SkipFrame(gym.Wrapper):
        ...

This module compares every such copy with its original, as Hugging Face transformers'
``utils/check_copies.py`` does for its model files, and can rewrite the copies that have drifted.

Marker syntax
-------------
::

    # Copied from <module>.<Name>[.<member>...] [with Old->New[, Old->New ...]]

- ``<module>`` is a dotted module path, resolved relative to the repository root: ``common.wrappers`` is
  ``common/wrappers.py`` (or ``common/wrappers/__init__.py``).
- ``<Name>`` is a top-level class or function of that module; each further ``.member`` steps into a class,
  so ``common.wrappers.SkipFrame.step`` is the method ``step`` of the class ``SkipFrame``.
- ``with Old->New, ...`` renames: each pair is applied in order, as a plain text replacement
  (``str.replace``), to the original's text before it is compared with the copy. Example:
  ``# Copied from common.wrappers.SkipFrame with SkipFrame->MaxAndSkip, skip->frame_skip``.
- The copy is the class or function whose first line (its first decorator, if it has any) is the next
  non-blank line after the marker. The marker may be indented (a method copied into a class), and the copy
  may sit at another indentation than the original: the original is re-indented to the copy's first.
- Trailing whitespace on a line is ignored; every other character must match.
- Every comment line that starts with ``Copied from`` is a marker, so a mistyped marker is reported rather
  than silently skipped (say "adapted from" in ordinary comments). Text inside strings and docstrings is
  never a marker.

Definitions are located with the ``ast`` module (``ClassDef``, ``FunctionDef`` and ``AsyncFunctionDef``
nodes), never with regular expressions over code; a definition's text runs from its first decorator line
to its last line (``end_lineno``).

Usage, from the repository root::

    python -m common.check_copies                 # check every ppo_*.py; exit status 1 on any problem
    python -m common.check_copies --fix           # rewrite drifted copies from their originals
    python -m common.check_copies ppo_atari.py    # check only the given files
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
FIX_HINT = "run python -m common.check_copies --fix"
# The repository this file belongs to: common/check_copies.py -> the folder above common/.
DEFAULT_ROOT = Path(__file__).resolve().parent.parent
# A drift report shows at most this many diff lines; the full picture is one --fix (and git diff) away.
MAX_DIFF_LINES = 40
# --fix rewrites a file, then checks it again. A copy nested inside another copy needs a second pass
# (see _rewrite); the bound stops an original that contradicts itself from looping forever.
MAX_FIX_PASSES = 5


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
    """The file's lines with their line endings untranslated ("\\r\\n" stays "\\r\\n").

    newline="" splits on "\\n", "\\r\\n" and "\\r", as Python's own tokenizer does, so index i is ast's line
    i + 1 (str.splitlines would also split on form feeds and miscount). Keeping the endings lets --fix
    write every line it does not rewrite back byte for byte.
    """
    with open(path, encoding="utf-8", newline="") as f:
        return f.readlines()


def _ending(line: str) -> str:
    """The line ending of ``line``: "\\n", "\\r\\n", "\\r", or "" for a last line without one."""
    return line[len(line.rstrip("\r\n")) :]


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


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
    for token in tokenize.generate_tokens(io.StringIO(source, newline="").readline):
        if token.type != tokenize.COMMENT or token.line[: token.start[1]].strip():
            continue
        text = token.string.lstrip("#").strip()
        if text == MARKER or text.startswith(MARKER + " "):
            markers.append((token.start[0], text[len(MARKER) :]))
    return markers


def _definitions(tree: ast.Module) -> dict[int, ast.AST]:
    """Every class and function of a module, nested ones included, by the line it starts on."""
    return {_first_line(node): node for node in ast.walk(tree) if isinstance(node, DEFINITIONS)}


def _copy_below(lines: list[str], definitions: dict[int, ast.AST], marker_line: int) -> tuple[int, ast.AST | None]:
    """The copy a marker names: the definition starting on the next non-blank line below it (None if that line
    starts none), and that line."""
    start = marker_line + 1
    while start <= len(lines) and not lines[start - 1].strip():
        start += 1
    return start, definitions.get(start)


def copied_spans(path: Path) -> list[tuple[int, int]]:
    """(first, last) line numbers, 1-based and inclusive, of every copied block in ``path``: from its marker
    comment to the end of the definition below it (markers not directly above a definition are skipped;
    ``check`` reports those)."""
    lines = _read_lines(path)
    source = "".join(lines)
    definitions = _definitions(ast.parse(source))
    spans = []
    for marker_line, _ in _marker_comments(source):
        _, copy = _copy_below(lines, definitions, marker_line)
        if copy is not None:
            spans.append((marker_line, copy.end_lineno))
    return spans


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


def _module_file(root: Path, parts: list[str]) -> tuple[Path, list[str]] | None:
    """Split a dotted path into the module file it names and the definition names inside that module.

    The longest prefix that is a module wins: ["common", "wrappers", "SkipFrame", "step"] tries
    common/wrappers/SkipFrame.py, then common/wrappers.py, which exists, and returns it with
    ["SkipFrame", "step"]. At least one name must be left over for the definition.
    """
    for split in range(len(parts) - 1, 0, -1):
        base = root.joinpath(*parts[:split])
        for candidate in (base.parent / f"{base.name}.py", base / "__init__.py"):
            if candidate.is_file():
                return candidate, parts[split:]
    return None


def _find_definition(body: list[ast.stmt], names: list[str]) -> ast.AST | None:
    """Follow ``names`` down through the definitions in ``body``: ["SkipFrame", "step"] is a method."""
    node = None
    for name in names:
        matches = [child for child in body if isinstance(child, DEFINITIONS) and child.name == name]
        if not matches:
            return None
        node = matches[-1]  # a later definition replaces an earlier one, as when Python runs the module
        body = node.body
    return node


def _find_original(root: Path, target: str, modules: dict[Path, tuple[list[str], ast.Module]]):
    """(module file, its lines, the definition node) for a dotted target; LookupError says why not.

    ``modules`` caches each parsed module, since many copies share one original file.
    """
    found = _module_file(root, target.split("."))
    if found is None:
        raise LookupError("no module file for it under the repository root")
    path, names = found
    if path not in modules:
        lines = _read_lines(path)
        try:
            modules[path] = (lines, ast.parse("".join(lines), filename=str(path)))
        except SyntaxError as error:
            raise LookupError(f"{_relative(root, path)} does not parse: {error.msg}") from None
    lines, tree = modules[path]
    node = _find_definition(tree.body, names)
    if node is None:
        raise LookupError(f"{_relative(root, path)} has no class or function {'.'.join(names)}")
    return path, lines, node


def _expected_copy(original: list[str], renames: list[tuple[str, str]], indent: str) -> list[str]:
    """The original's lines as the copy should read them: renamed, re-indented, trailing space removed."""
    text = "".join(original)
    for old, new in renames:  # in order, so a later pair sees the result of an earlier one
        text = text.replace(old, new)
    lines = [line.rstrip() for line in io.StringIO(text, newline="").readlines()]
    old_indent = _indentation(lines[0])
    expected = []
    for line in lines:
        if not line:
            expected.append("")
        elif line.startswith(old_indent):
            expected.append(indent + line[len(old_indent) :])
        else:
            # Less indented than the definition's first line: only possible inside a multi-line string,
            # whose content must not change, so leave it where it is.
            expected.append(line)
    return expected


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
            message = "marker is not directly above a class or function definition"
            problems.append(Problem(name, marker_line, message))
            continue

        try:
            module_path, module_lines, original = _find_original(root, target, modules)
        except LookupError as error:
            problems.append(Problem(name, marker_line, f"original {target} not found ({error})"))
            continue

        original_start = _first_line(original)
        original_lines = module_lines[original_start - 1 : original.end_lineno]
        expected = _expected_copy(original_lines, renames, indent=_indentation(lines[start - 1]))
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


def _rewrite(path: Path, copies: list[_Copy]) -> list[_Copy]:
    """Replace each drifted copy in ``path`` with its expected text; return the copies rewritten.

    Copies are rewritten bottom-up, so a rewrite that changes the number of lines never moves a copy
    still waiting above it. A copy that encloses one already rewritten in this pass (a class copy around
    a method copy) has stale line numbers; it is left for the next pass, which re-reads the file.
    Lines outside the copies are written back untouched, line endings included.
    """
    lines = _read_lines(path)
    newline = next((_ending(line) for line in lines if _ending(line)), "\n")  # the file's own style
    rewritten = []
    lowest_rewritten = len(lines) + 1
    for copy in sorted(copies, key=lambda c: c.start, reverse=True):
        if copy.end >= lowest_rewritten:
            continue
        new = [line + newline for line in copy.expected]
        if not _ending(lines[copy.end - 1]):  # the copy ended the file without a final newline: keep that
            new[-1] = copy.expected[-1]
        lines[copy.start - 1 : copy.end] = new
        lowest_rewritten = copy.start
        rewritten.append(copy)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(lines))
    return rewritten


# ------------------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------------------


def check(root: Path, fix: bool = False, files: list[Path] | None = None) -> Report:
    """Check (and with ``fix``, rewrite) the copies in ``files``: by default every ppo_*.py in ``root``.

    Relative ``files`` are taken relative to ``root``. With ``fix``, each rewritten copy is reported as a
    Problem with ``fixed=True``; the other problems are those still present after the rewrite.
    """
    root = Path(root).resolve()
    scripts = sorted(root.glob("ppo_*.py")) if files is None else [root / file for file in files]
    modules: dict[Path, tuple[list[str], ast.Module]] = {}  # parsed originals, shared by all scripts
    problems: list[Problem] = []
    n_copies = 0
    for script in scripts:
        passes = 0
        while True:
            n_markers, script_problems, drifted = _check_script(root, script, modules)
            if not fix or not drifted or passes == MAX_FIX_PASSES:
                break
            for copy in _rewrite(script, drifted):
                message = f"rewrote copy of {copy.target}"
                problems.append(Problem(_relative(root, script), copy.marker_line, message, fixed=True))
            modules.pop(script.resolve(), None)  # in case this script is also some copy's original
            passes += 1
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
        prog="python -m common.check_copies",
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
