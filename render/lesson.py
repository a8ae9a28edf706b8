"""A lesson's page: the script top to bottom, its prose in a column beside the code it explains.

Every line of the script is on the page once, in order, under an anchor named as the line is numbered in the file
(`#L151` is line 151, the twin of README's `ppo_cartpole.py#L151`):

- prose (the comments that stand on their own lines, the module's, classes' and functions' docstrings) is
  rendered as Markdown in the left column, beside the code that follows it; a line's anchor sits where its text
  starts in the rendered note;
- code is highlighted by Pygments, with the file's line numbers;
- an equation that a row cites (its notes, its trailing comments or its help texts: "eq. 7", "eqs. 7-9",
  "Generalized Advantage Estimation") is typeset beside it, from render.equations' table, once a page: a later row
  citing it links to that box;
- a checked copy (`# Copied from common.<module>.<Name>`) sits in an HTML `details` under a line that names the
  original and the other lessons carrying the same copy, open above the fence (PPO's own functions), folded below;
  the plumbing below the fence is folded under the fence;
- the lesson's learning curves (course.lessons' `figures`, committed PNGs of benchmarks/results/) are in the module
  docstring's note, right after its "What you should see", each with its caption.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path

import markdown
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from tools.check_copies import CopiedBlock
from course.lessons import Figure
from render.equations import EQUATIONS, cited
from render.html import esc, page
from render.source import Lesson, carriers

_INLINE_HEADING = re.compile(r"^-{3}\s+(.*?)\s*-*$")  # "# --- Rollout: ... -----" inside train()


@dataclass
class Row:
    """Lines first..last: `note` lines (prose) then `code` lines, both possibly empty."""

    note: list[int] = field(default_factory=list)
    code: list[int] = field(default_factory=list)
    kind: str = "row"  # "row", or "heading" (a section banner)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def rows(lesson: Lesson, first: int, last: int) -> list[Row]:
    """Lines first..last as rows: a prose block and the code that follows it (until the next prose block)."""
    headings = {n + d for n, _ in lesson.sections for d in (-1, 0, 1)}  # (the fence and the copies' markers are
    # never in first..last: lesson_page and body_html put them in their summaries)
    docstring_ends = {first_line: last_line for first_line, last_line in lesson.docstrings.values()}
    out: list[Row] = []
    n = first
    while n <= last:
        if n in headings:  # a banner: its lines in one heading row
            if not out or out[-1].kind != "heading":
                out.append(Row(kind="heading"))
            out[-1].note.append(n)
        elif n in lesson.prose:
            end = docstring_ends.get(n, n)
            if not out or out[-1].kind != "row" or out[-1].code:
                out.append(Row())
            out[-1].note.extend(range(n, end + 1))
            n = end
        else:
            if not out or out[-1].kind != "row":
                out.append(Row())
            out[-1].code.append(n)
        n += 1
    return out


# ---------------------------------------------------------------------------------------------------------
# Prose
# ---------------------------------------------------------------------------------------------------------
def _try_this_markdown(lines: list[str]) -> tuple[str, list[str]]:
    """The "Try this" part (its header, which may take two lines, and its experiments: course.lessons' layout) as
    (title, Markdown lines): each experiment's command, then its question, its answer and what was measured."""
    from course.lessons import try_this

    header, experiments = try_this("\n".join(lines))
    out = ["", f"**{header}**", ""]
    for e in experiments:
        out += [f"- `{e.command}`", f"    - *Predict:* {e.predict}", f"    - *Answer:* {e.answer}",
                f"    - *Measured:* {e.measured}"]
        if e.symptom:  # course/when-ppo-does-not-learn.md#<section>, linked to that section of the guide's page
            anchor = e.symptom.split("#", 1)[1]
            out.append(f"    - *Symptom:* [{e.symptom}](../debugging.html#{anchor})")
    return header, out + [""]


def _docstring_parts(text: str) -> list[tuple[str, list[str]]]:
    """A docstring's plain-text layout as Markdown: an unindented line followed by indented ones is a heading
    (shown bold), the indented lines its paragraphs; the lines under "Usage" are commands, those under "The loop"
    pseudocode (each a code block); "Try this" is a list of experiments (_try_this_markdown).

    In parts, (title, Markdown lines): a part starts at each heading (titled by it) and at each unindented line after
    a blank one ("Differs from: nothing, ...", titled by its text); the first part, the summary line's, is titled "".
    Joined by newlines, the parts are the docstring's Markdown."""
    lines = inspect.cleandoc(text).splitlines()
    parts: list[tuple[str, list[str]]] = [("", [])]
    in_code = False  # under "Usage" or "The loop": a code block
    skip_to = 0
    for i, line in enumerate(lines):
        if i < skip_to:
            continue
        out = parts[-1][1]
        if line.startswith("Try this ("):
            if in_code:
                out.append("```")
                in_code = False
            end = next((k for k in range(i, len(lines)) if not lines[k]), len(lines))
            parts.append(_try_this_markdown(lines[i:end]))
            skip_to = end
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if line and not line[0].isspace() and following.startswith("    "):
            if in_code:
                out.append("```")
            in_code = line.strip() == "Usage" or line.startswith("The loop")
            parts.append((line.strip(), ["", f"**{line.strip()}**", ""] + (["```"] if in_code else [])))
            continue
        if in_code and not line.strip():
            out.append("```")
            in_code = False
        if line and not line[0].isspace() and i > 0 and not lines[i - 1].strip():
            parts.append((line.strip(), []))  # a paragraph of its own, between blank lines: a block boundary
            out = parts[-1][1]
        line = line[4:] if line.startswith("    ") else line
        if re.match(r"^\[\w+\] ", line):  # a reference, "[PPO] Schulman et al. ...": one item each
            line = "- " + line
        out.append(line if in_code else _no_numbered_list(line))
    if in_code:
        parts[-1][1].append("```")
    return parts


def _docstring_html(text: str, after: dict[str, str]) -> str:
    """The docstring rendered, with `after`'s HTML (by part title: "What you should see") placed right after the
    part of that title (rendered in pieces split there: the parts begin at block boundaries)."""
    html, piece = [], []
    for title, lines in _docstring_parts(text):
        piece += lines
        if title in after:
            html += [render_markdown("\n".join(piece)), after[title]]
            piece = []
    if piece:
        html.append(render_markdown("\n".join(piece)))
    return "".join(html)


def _no_numbered_list(line: str) -> str:
    """"3. the value loss": Markdown would renumber it as an item of a list from 1; it stays the text's own."""
    return re.sub(r"^(\s*\d+)\. ", r"\1\\. ", line)


def _comment_markdown(texts: list[str]) -> str:
    lines = []
    for text in texts:
        body = re.sub(r"^# ?", "", text.strip())  # (a comment line: "#" first)
        heading = _INLINE_HEADING.match(body)
        lines.append(f"\n#### {heading.group(1)}\n" if heading else _no_numbered_list(body))
    return "\n".join(lines)


def markdown_without_html(extensions: list[str]) -> markdown.Markdown:
    """A Markdown converter that takes no raw HTML: `<run>` in runs/<run>/ is text, not a tag."""
    md = markdown.Markdown(extensions=extensions)
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    return md


_MD = markdown_without_html(["fenced_code"])


def render_markdown(text: str) -> str:
    _MD.reset()
    return _MD.convert(text)


def _anchors(lines: list[int]) -> str:
    return "".join(f'<span class="anchor" id="L{n}"></span>' for n in lines)


def note_html(lesson: Lesson, lines: list[int], after: dict[str, str] | None = None) -> str:
    """The rendered prose of `lines` (one docstring, or a run of comments and docstrings), every line's anchor
    at its start. `after`: HTML to place after a docstring's part, by the part's title (_docstring_html)."""
    after = after or {}
    parts, i = [], 0
    while i < len(lines):
        n = lines[i]
        if n in lesson.docstrings:
            first, last = lesson.docstrings[n]
            text = "\n".join(lesson.lines[first - 1:last])
            quote = text.lstrip()[:3]
            body = text.strip()[3:-3] if quote in ('"""', "'''") else text.strip()
            parts.append(_anchors(list(range(first, last + 1))) + _docstring_html(body, after))
            i += last - first + 1
        else:
            run = []
            while i < len(lines) and lines[i] not in lesson.docstrings:
                run.append(lines[i])
                i += 1
            parts.append(_anchors(run) + render_markdown(_comment_markdown([lesson.lines[m - 1] for m in run])))
    return "".join(parts)


# ---------------------------------------------------------------------------------------------------------
# Code and equations
# ---------------------------------------------------------------------------------------------------------
_SYMBOL = re.compile(r"^(\w{1,8})(?: of GAE)?[,:] ")  # "gamma, the discount ...", "lambda of GAE: 0 gives ..."
_RANGE = re.compile(r"\((?:usual|paper:) ([^)]*)\)|usual ([\w.\-]+ to [\w.\-]+)")


def hyperparameter_rows(lesson: Lesson) -> list[tuple[str, str, str, str, str]]:
    """(flag, symbol, default, what it does, usual range) of each field of the lesson's Hyperparameters, read from
    its source: the symbol where the help text opens with one ("gamma, the discount ..."), the range where it gives
    one ("(usual 0.9-0.999)", "(paper: 128 to 2048)")."""
    import ast

    source = "\n".join(lesson.lines)
    tree = ast.parse(source)
    (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Hyperparameters"]
    out = []
    for node, doc in zip(cls.body, cls.body[1:]):
        if not (isinstance(node, ast.AnnAssign) and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)):
            continue
        text = " ".join(doc.value.value.split())
        symbol = _SYMBOL.match(text)
        found = _RANGE.search(text)
        out.append((f"--{node.target.id.replace('_', '-')}", symbol.group(1) if symbol else "",
                    ast.get_source_segment(source, node.value) if node.value is not None else "", text,
                    (found.group(1) or found.group(2)) if found else ""))
    return out


def hyperparameter_table(lesson: Lesson) -> str:
    """The lesson's PPO hyperparameters as a table, for the note beside their class: flag, symbol, default, what it
    does, usual range."""
    rows = "".join(f"<tr><td><code>{esc(flag)}</code></td><td>{esc(symbol)}</td><td><code>{esc(default)}</code></td>"
                   f"<td>{esc(what)}</td><td>{esc(usual)}</td></tr>"
                   for flag, symbol, default, what, usual in hyperparameter_rows(lesson))
    return ('<div class="hyper-table md"><table><thead><tr><th>flag</th><th>symbol</th><th>default</th>'
            f"<th>what it does</th><th>usual range (or the paper's)</th></tr></thead><tbody>{rows}</tbody>"
            "</table></div>")


def equations_html(keys: list[str], typeset: dict[str, str], shown: set[str] | None) -> str:
    """A box of KaTeX's HTML for each equation cited; one already shown on the page (`shown`, which this adds to)
    gets a link to its box instead: an equation is typeset once per page."""
    out = []
    for key in keys:
        if shown is not None and key in shown:
            out.append(f'<p class="eq-ref" data-eq="{esc(key)}"><a href="#eq-{esc(key)}">'
                       f"{esc(EQUATIONS[key].label)}</a>, typeset above</p>")
            continue
        out.append(f'<figure class="eq" id="eq-{esc(key)}" data-eq="{esc(key)}">{typeset[key]}'
                   f"<figcaption>{esc(EQUATIONS[key].label)}</figcaption></figure>")
        if shown is not None:
            shown.add(key)
    return "".join(out)


def row_html(lesson: Lesson, row: Row, highlighted: list[str], typeset: dict[str, str],
             after: dict[str, str] | None = None, shown: set[str] | None = None) -> str:
    if row.kind == "heading":  # a section banner: its title as a heading, its three lines as anchors
        title = lesson.lines[row.note[1] - 1][2:].strip() if len(row.note) == 3 else ""
        return (f'<section class="heading" id="sec-{slug(title)}" data-lines="{row.note[0]}-{row.note[-1]}">'
                f"{_anchors(row.note)}<h2>{esc(title)}</h2></section>")
    notes = note_html(lesson, row.note, after)
    if row.note and lesson.lines[row.note[0] - 2].startswith("class Hyperparameters"):  # its docstring's row
        notes += hyperparameter_table(lesson)
    text = "\n".join(lesson.lines[n - 1] for n in row.note + row.code)  # notes, trailing comments, help texts
    equations = equations_html(cited(text), typeset, shown)
    lines = row.note + row.code
    span = f"{lines[0]}-{lines[-1]}" if lines else ""
    if not row.code:
        return f'<section class="row wide" data-lines="{span}"><div class="note">{notes}{equations}</div></section>'
    # Each line a block of its own (no newline between them, which would add an empty line box).
    code = "".join(f'<span class="line" id="L{n}"><a class="ln" href="#L{n}">{n}</a>{highlighted[n - 1]}</span>'
                   for n in row.code)
    return (f'<section class="row" data-lines="{span}"><div class="note">{notes}{equations}</div>'
            f'<div class="src"><pre class="code hl">{code}</pre></div></section>')


# ---------------------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------------------
def copy_summary(lesson: Lesson, copy: CopiedBlock) -> str:
    others = [script for script in carriers(copy.target) if script != lesson.name]
    lessons = ", ".join(f'<a href="{s[:-3]}.html">{s}</a>' for s in others)
    shared = f"the same copy in {lessons}" if others else "no other lesson carries it"
    return (f'{_anchors([copy.first])}<code>{esc(lesson.lines[copy.first - 1].strip())}</code> '
            f'<span class="copy-what">{copy.last - copy.first} lines below; the original is <code>{esc(copy.name)}</code> '
            f'in <a href="../raw/{esc(copy.module)}">{esc(copy.module)}</a>; {shared}</span>')


def body_html(lesson: Lesson, first: int, last: int, highlighted: list[str], typeset: dict[str, str],
              after: dict[str, str] | None = None, open_copies: bool = False, shown: set[str] | None = None) -> str:
    """Lines first..last, copied blocks in a `details` each (open with `open_copies`: PPO's own, above the fence;
    folded below it); `after`: note_html's, for the rows before the first copy (the module docstring's)."""
    parts, n = [], first
    copies = [c for c in lesson.copies if first <= c.first <= last]
    for copy in copies:
        if n < copy.first:
            parts += [row_html(lesson, r, highlighted, typeset, after, shown) for r in rows(lesson, n, copy.first - 1)]
            after = None
        inner = "".join(row_html(lesson, r, highlighted, typeset, None, shown)
                        for r in rows(lesson, copy.first + 1, copy.last))
        opened = " open" if open_copies else ""
        parts.append(f'<details class="copy"{opened} data-target="{esc(copy.target)}" '
                     f'data-lines="{copy.first}-{copy.last}">'
                     f"<summary>{copy_summary(lesson, copy)}</summary>{inner}</details>")
        n = copy.last + 1
    if n <= last:
        parts += [row_html(lesson, r, highlighted, typeset, after, shown) for r in rows(lesson, n, last)]
    return "".join(parts)


# A line's link opens the folded blocks around it (Chromium opens them for a fragment itself; this covers the
# others). No math here: the equations are typeset when the site is built.
OPEN_TARGET = """<script>
function openTarget() {
  const target = location.hash && document.getElementById(location.hash.slice(1));
  for (let node = target; node; node = node.parentElement) if (node.tagName === "DETAILS") node.open = true;
  if (target) target.scrollIntoView();
}
addEventListener("hashchange", openTarget); addEventListener("DOMContentLoaded", openTarget);
</script>"""


# The part of the module docstring that a lesson's learning curves illustrate: they are placed right after it.
SHOULD_SEE = "What you should see"


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height, from its header (the img's attributes: the page keeps its layout while it loads)."""
    head = path.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise RuntimeError(f"{path} is not a PNG")
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def curve_html(figure: Figure, root: Path) -> str:
    """One of the lesson's figures (course.lessons.Figure): the committed PNG, which the build copies to
    raw/<its path>, linked to itself at full size, with its caption."""
    src = f"../raw/{figure.path}"
    width, height = png_size(root / figure.path)
    return (f'<figure class="curve" data-figure="{esc(figure.path)}"><a href="{esc(src)}">'
            f'<img src="{esc(src)}" alt="{esc(figure.alt)}" width="{width}" height="{height}"></a>'
            f"<figcaption>{esc(figure.caption)} <code>{esc(figure.path)}</code></figcaption></figure>")


def lesson_page(lesson: Lesson, typeset: dict[str, str], neighbours: list[tuple[str, str]],
                figures: tuple[Figure, ...] = (), intro: str = "", checks: str = "") -> str:
    """The whole page. `neighbours`: (href, title) of the diff pages this lesson is in; `figures`: its learning
    curves (course.lessons), shown right after the module docstring's "What you should see"; `intro` and `checks`
    (render.course): what the lesson teaches, what to read first and where its loop is, at the top; its check
    questions, at the end."""
    # Pygments' HTML of each line (spans closed at each line's end), index n - 1 for line n
    highlighted = highlight("\n".join(lesson.lines) + "\n", PythonLexer(), HtmlFormatter(nowrap=True)).split("\n")
    total = len(lesson.lines)
    end_of_lesson = lesson.fence[0] - 1 if lesson.fence else total
    curves = "".join(curve_html(figure, lesson.path.parent) for figure in figures)
    shown: set[str] = set()  # the equations typeset so far: each once per page
    body = body_html(lesson, 1, end_of_lesson, highlighted, typeset, {SHOULD_SEE: curves} if curves else None,
                     open_copies=True, shown=shown)  # PPO's own functions (GAE, the losses, the rollout), shown
    if curves and body.count(curves) != 1:
        raise RuntimeError(f'{lesson.name}: its figures need one docstring part "{SHOULD_SEE}" before its first '
                           f"copied block, found {body.count(curves)}")
    if lesson.fence:
        first, last = lesson.fence
        fence_text = " ".join(line.lstrip("# ").strip() for line in lesson.lines[first:last - 1])
        plumbing = body_html(lesson, last + 1, total, highlighted, typeset, shown=shown)
        body += (f'<details class="plumbing" id="sec-the-plumbing" data-lines="{first}-{total}"><summary>'
                 f'{_anchors(list(range(first, last + 1)))}<span class="fence">{esc(fence_text)}</span></summary>'
                 f"{plumbing}</details>")
    menu = "".join(f'<li><a href="#sec-{slug(title)}">{esc(title)}</a></li>' for _, title in lesson.sections)
    links = [f'<li><a href="../raw/{lesson.name}">{lesson.name} (the raw file)</a></li>']
    links += [f'<li><a href="{esc(href)}">{esc(title)}</a></li>' for href, title in neighbours]
    nav = (f'<nav class="parts" aria-label="parts of the lesson"><ul>{menu}</ul><ul class="more">{"".join(links)}</ul>'
           "</nav>")
    content = (f'<h1>{esc(lesson.name)}</h1>{intro}{nav}<div class="lesson" data-script="{lesson.name}">{body}</div>'
               f"{checks}")
    return page(lesson.name, content + OPEN_TARGET, depth=1, katex=True)
