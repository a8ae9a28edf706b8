"""Each lesson as a Jupyter notebook, written from its file: `python -m tools.notebooks` writes notebooks/<lesson>.ipynb
for the five lessons, `--check` fails (exit 1) where a committed notebook is not what it would write now, `--out DIR`
writes them elsewhere. The file stays the one source: the notebook is generated, never edited by hand.

What a notebook holds, in the file's order:
- the module docstring as Markdown: its headings bold, "The loop", "Usage" and "Deliberately left out" as text blocks
  (their columns line up), "Try this" as a list of experiments, the references as a list;
- each section banner (`# --- The agent: ... ---`) as a heading, and the plumbing's fence as the heading "The
  plumbing" with the fence's text;
- a comment that stands alone between blank lines at the top level as Markdown;
- the code, unchanged: a cell for each top-level def or class above the fence (with the comment lines directly above
  it: a `# Copied from` marker stays on its copy), the statements between them grouped; the plumbing in one cell,
  its source folded in JupyterLab (the fence says a first read skips it); the script's last line, `if __name__ ==
  "__main__": main()`, in a cell of its own. Put together, the code cells are every line of code of the file, in
  order (tests/test_notebooks.py checks it).

And four cells of the notebook's own, tagged "notebook-only" (the tests leave them out when they put the file back
together): a note that says where the notebook comes from; `__file__ = "<script>"` before the plumbing, which names
run folders, checkpoints and messages after the script (a notebook has no `__file__`); a cell that gives `__name__`
another value before the script's last line, which would otherwise run main() on the kernel's own command line;
and, last, the cell that trains (tagged "train" too): it parses `flags`, the script's command line as a list, with
tyro into the lesson's Args, runs what main() runs before a fresh training (its statements less those of --resume
and --play, read from main() itself), then train(args, None). main() cannot run as it is: its one_line_help reads
the classes' source with inspect.getsource, which a notebook's cells do not have (OSError).

Why nbformat and not jupytext: jupytext's percent format splits cells at `# %%` markers, which the lessons do not
have (they would have to carry them, for the notebook alone); its light format splits at blank lines and turns
every comment block into Markdown, inside train() as well, and would leave the docstring a code cell. The cells
wanted here (at the section banners and the defs, the docstring as Markdown, the cells that run the lesson) are
what this module writes, with nbformat's own writer, so the JSON is the same on every run: cell ids are the
lesson's name and the cell's number, and no outputs are kept.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import nbformat

from course.lessons import SCRIPTS, try_this

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "notebooks"
BANNER = re.compile(r"^# --- (.+?) -{3,}$")  # a section banner, at the top level
FENCE = re.compile(r"^# ={20,}$")  # the plumbing fence: its text between two of these
NOTEBOOK_ONLY = "notebook-only"  # the tag of the cells that are not the file's
TRAIN = "train"  # the tag of the cell that trains
# The flags each notebook trains with, as its last cell gives them to tyro: the budgets of README's "Start here"
# (the MLP lessons' defaults). The pixel lessons step their envs one after another (sync, not their default async):
# an async worker starts by running the script's file again (multiprocessing reads __main__'s __file__), and
# beside a notebook there is none (tried: FileNotFoundError in every worker).
FLAGS = {
    "ppo_cartpole.py": [],
    "ppo_lunarlander_vec.py": [],
    "ppo_pendulum_continuous.py": [],
    "ppo_breakout_atari.py": ["--total-timesteps", "500000", "--no-cuda", "--vectorization-mode", "sync"],
    "ppo_mario_cnn.py": ["--total-timesteps", "122880", "--no-cuda", "--vectorization-mode", "sync"],
    "ppo_lstm_memory.py": [],
    "ppo_action_masking.py": [],
    "ppo_rlhf_tiny.py": [],
    "grpo_rlhf_tiny.py": [],
}
# Docstring parts laid out in columns or as pseudocode: shown as text blocks, as the file shows them.
TEXT_BLOCKS = ("The loop", "Usage", "Deliberately left out")


@dataclass
class Cell:
    kind: str  # "markdown" or "code"
    source: str
    tags: tuple[str, ...] = ()
    hidden: bool = False  # the source folded (JupyterLab's "source_hidden")


# --- The docstring as Markdown ---------------------------------------------------------------------------------


def _escape(text: str) -> str:
    """Prose as Markdown shows it literally, but for its `code` spans: `<run>` is no HTML tag, `*` and `~` no
    emphasis or strike-through, `__name__` not bold, a leading `3.` no numbered list."""
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):
        part = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        part = re.sub(r"([*~\\])", r"\\\1", part).replace("__", r"\_\_")
        parts[i] = re.sub(r"^(\s*\d+)\. ", r"\1\\. ", part)
    return "".join(parts)


def _text_block(lines: list[str]) -> list[str]:
    return ["```text", *lines, "```"]


def _try_this(lines: list[str]) -> list[str]:
    """course.lessons' layout of "Try this" as a list: the command, then its question, answer and measurement."""
    header, experiments = try_this("\n".join(lines))
    out = [f"**{_escape(header)}**", ""]
    for e in experiments:
        out.append(f"- `{e.command}`")
        for label, text in (("Predict", e.predict), ("Answer", e.answer), ("Measured", e.measured),
                            ("Symptom", e.symptom)):
            if text:
                text = f"[{text}](../{text})" if label == "Symptom" else _escape(text)
                out.append(f"    - *{label}:* {text}")
    return out


def docstring_markdown(doc: str) -> str:
    """The module docstring's plain-text layout as Markdown: its first line the title; an unindented line followed
    by indented ones a heading (bold) over its part; an unindented line after a blank one a paragraph."""
    lines = doc.splitlines()
    parts: list[tuple[str, list[str]]] = []  # (heading, the part's lines, 4-space indent removed)
    i = 1
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        # A heading may run over two unindented lines ("Try this (...": up to its closing parenthesis).
        end = i
        if line.startswith("Try this ("):
            while not lines[end].rstrip().endswith(")"):
                end += 1
        following = lines[end + 1] if end + 1 < len(lines) else ""
        if following.startswith("    "):
            body_end = end + 1
            while body_end < len(lines) and lines[body_end].strip():
                body_end += 1
            parts.append((" ".join(lines[i:end + 1]), lines[i:end + 1],
                          [text[4:] if text.startswith("    ") else text for text in lines[end + 1:body_end]]))
            i = body_end
        else:  # an unindented paragraph
            body_end = i
            while body_end < len(lines) and lines[body_end].strip():
                body_end += 1
            parts.append(("", [], lines[i:body_end]))
            i = body_end
    out = [f"# {_escape(lines[0].strip())}"]
    for heading, heading_lines, body in parts:
        out.append("")
        if heading.startswith("Try this ("):
            out += _try_this(heading_lines + ["    " + text for text in body])
        elif not heading:
            out += [_escape(text) for text in body]
        elif heading.startswith(TEXT_BLOCKS):
            out += [f"**{_escape(heading)}**", "", *_text_block(body)]
        elif heading == "References":
            out += [f"**{heading}**", "", *[f"- {_escape(text.strip())}" for text in body]]
        else:
            out += [f"**{_escape(heading)}**", "", *[_escape(text) for text in body]]
    return "\n".join(out)


# --- The cells of a lesson -----------------------------------------------------------------------------------


def _comment_markdown(lines: list[str]) -> str:
    return "\n".join(_escape(re.sub(r"^# ?", "", line)) for line in lines)


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("__name__ == '__main__'", '__name__ == "__main__"')


def fresh_run(main: ast.FunctionDef) -> list[str]:
    """What main() runs before train() on a fresh training: its statements (inside its `with` and `try` blocks too)
    but tyro's parse, which the notebook does with its own flags, and those of --resume and --play."""
    out: list[str] = []

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.With, ast.Try)):
                walk(node.body)
            elif isinstance(node, ast.If):
                test = ast.unparse(node.test)
                if test == "not args.play":  # (the checks of a training, not of --play)
                    walk(node.body)
                elif not re.search(r"\b(resume|play|ckpt)\b", test):
                    raise ValueError(f"main(): no rule for `if {test}:` (tools/notebooks.py, fresh_run)")
            else:
                text = ast.unparse(node)
                if not re.search(r"\b(tyro\.cli|ckpt)\b", text):
                    out.append(text)

    walk(main.body)
    return out


def run_cell(script: str, main: ast.FunctionDef, source: str) -> str:
    flags = FLAGS[script]
    budget = f"`python {script}" + "".join(" " + flag for flag in flags) + "`"
    note = (f"Train, here: `flags` is the script's command line as a list; these train as {budget} does. "
            f"`python {script} --help` lists every flag; to try one of the docstring's experiments, put its flags "
            f"here and run this cell again. The run folder lands in runs/ beside this notebook.")
    if "vectorization_mode" in source:
        note += (" --vectorization-mode async cannot run here: its workers start by running the script's file "
                 "(`__file__`), and there is none beside the notebook.")
    return "\n".join([
        *textwrap.wrap(note, 116, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False),
        "__name__ = \"__main__\"  # (the notebook's own name back: see the cell above the script's last line)",
        f"flags = {flags!r}",
        "args = tyro.cli(Args, args=flags)",
        *fresh_run(main),
        "train(args, None)",
    ])


def lesson_cells(script: str, root: Path = ROOT) -> list[Cell]:
    source = (root / script).read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    doc = tree.body[0]
    assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), f"{script}: no module docstring"
    fences = [n for n, line in enumerate(lines, start=1) if FENCE.match(line)]
    if len(fences) != 2:
        raise ValueError(f"{script}: the plumbing fence needs two '# ====' lines, found {len(fences)}")
    main = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main")

    # The top-level statements as (first line, last line, node): first is the first decorator, or a comment line
    # directly above it (no blank line between).
    statements = []
    for node in tree.body[1:]:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        while first > 1 and lines[first - 2].startswith("#") and not BANNER.match(lines[first - 2]) \
                and not FENCE.match(lines[first - 2]):
            first -= 1
        statements.append((first, node.end_lineno, node))

    cells = [
        Cell("markdown", docstring_markdown(ast.get_docstring(tree, clean=True)), ()),
        Cell("markdown", f"*This notebook is [`{script}`](../{script}), written into cells by `python -m "
                         f"tools.notebooks`: edit the script, not the notebook. Run the cells in order: the last "
                         f"one trains.*", (NOTEBOOK_ONLY,)),
    ]
    code: list[int] = []  # the lines of the code cell being filled

    def flush(hidden: bool = False) -> None:
        if code:
            cells.append(Cell("code", "\n".join(lines[code[0] - 1:code[-1]]), hidden=hidden))
            code.clear()

    code_is_def = False  # the code cell being filled holds a def or class
    n = doc.end_lineno + 1
    for first, last, node in statements:
        # What lies between the last statement and this one: blank lines, banners, the fence, comments alone.
        gap = lines[n - 1:first - 1]
        k = 0
        while k < len(gap):
            line = gap[k]
            if BANNER.match(line):
                flush()
                cells.append(Cell("markdown", "## " + _escape(BANNER.match(line).group(1))))
                k += 1
            elif FENCE.match(line):
                flush()
                end = gap.index(line, k + 1) if line in gap[k + 1:] else k
                cells.append(Cell("markdown", "## The plumbing\n\n" + _comment_markdown(gap[k + 1:end])))
                cells.append(Cell("code", f"__file__ = {script!r}  # a notebook has none: the plumbing names run "
                                          f"folders, checkpoints and messages after the script", (NOTEBOOK_ONLY,)))
                k = end + 1
            elif line.startswith("#"):
                end = k
                while end < len(gap) and gap[end].startswith("#"):
                    end += 1
                flush()
                cells.append(Cell("markdown", _comment_markdown(gap[k:end])))
                k = end
            else:
                if line.strip():
                    raise ValueError(f"{script}:{n + k}: a line between statements that is neither blank nor a "
                                     f"comment: {line!r}")
                k += 1
        plumbing = first > fences[1]
        if _is_main_guard(node):
            flush(hidden=True)
            cells.append(Cell("code", "\n".join([
                "# In a notebook __name__ is \"__main__\" too, so the script's last line, next, would run main(),",
                "# which a notebook cannot run: its one_line_help reads the classes' source file (inspect.getsource:",
                "# OSError here), and its flags would be the kernel's own command line. Under another name that line",
                "# does nothing; the last cell trains instead, and gives __name__ back (a dataclass defined under",
                "# this name fails: sys.modules has no module of that name).",
                "__name__ = \"notebook\"",
            ]), (NOTEBOOK_ONLY,)))
            code.extend(range(first, last + 1))
            flush()
        elif plumbing:  # one cell, folded
            code.extend(range(code[-1] + 1 if code else first, last + 1))
        else:
            is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if is_def or code_is_def:  # a def or class is a cell of its own
                flush()
            code.extend(range(code[-1] + 1 if code else first, last + 1))
            code_is_def = is_def
        n = last + 1
    flush()
    if any(line.strip() for line in lines[n - 1:]):
        raise ValueError(f"{script}: lines after the script's last statement")
    cells.append(Cell("markdown", "## Train", (NOTEBOOK_ONLY,)))
    cells.append(Cell("code", run_cell(script, main, source), (NOTEBOOK_ONLY, TRAIN)))
    return cells


def notebook(script: str, root: Path = ROOT) -> nbformat.NotebookNode:
    name = script.removesuffix(".py")
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, cell in enumerate(lesson_cells(script, root)):
        new = nbformat.v4.new_markdown_cell if cell.kind == "markdown" else nbformat.v4.new_code_cell
        metadata = {}
        if cell.tags:
            metadata["tags"] = list(cell.tags)
        if cell.hidden:
            metadata["jupyter"] = {"source_hidden": True}
        nb.cells.append(new(cell.source, id=f"{name}-{i}", metadata=metadata))
    nbformat.validate(nb)
    return nb


def text(script: str, root: Path = ROOT) -> str:
    """The notebook's file, as it is written (nbformat's JSON, a newline at the end)."""
    return nbformat.writes(notebook(script, root)) + "\n"


def path_of(script: str, out: Path = OUT) -> Path:
    return out / (script.removesuffix(".py") + ".ipynb")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.notebooks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="the folder to write them to (default: notebooks/)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 where a notebook in --out is not what this would write")
    args = parser.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        print(f"{parser.prog}: error: --out {args.out} is a file, not a folder", file=sys.stderr)
        return 2
    stale = []
    for script in SCRIPTS:
        path, new = path_of(script, args.out), text(script)
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != new:
                stale.append(path)
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print("not what the lessons give now (rewrite them with `python -m tools.notebooks`): "
              + ", ".join(str(path) for path in stale), file=sys.stderr)
        return 1
    if args.check:
        print(f"checked {len(SCRIPTS)} notebooks: each is what its lesson gives")
    return 0


if __name__ == "__main__":
    sys.exit(main())
