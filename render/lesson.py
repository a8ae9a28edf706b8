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

import ast
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
from render.equations import EQUATIONS, cited, link_citations, objectives, typeset_objectives
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
    headings = {n for n, _ in lesson.sections}  # (the fence's lines and the copies' markers are never in
    # first..last: lesson_page and body_html put them in their summaries)
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


def _docstring_html(text: str) -> str:
    """A docstring rendered (_docstring_parts' Markdown)."""
    return render_markdown("\n".join(line for _, lines in _docstring_parts(text) for line in lines))


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


# ---------------------------------------------------------------------------------------------------------
# The page around the rows: what the module docstring's note and the equations need of it
# ---------------------------------------------------------------------------------------------------------
TEACHES = "What this lesson teaches"
# The part of the module docstring that a lesson's learning curves illustrate: they are placed right after it.
SHOULD_SEE = "What you should see"


@dataclass
class Page:
    """What a lesson's rows need of the page they are on."""

    typeset: dict[str, str]  # KaTeX's HTML: EQUATIONS' keys, and "inline:<name>" for the objectives (L^{<name>})
    homes: dict[str, int] = field(default_factory=dict)  # equation key -> the line beside which it is typeset
    intro_keys: list[str] = field(default_factory=list)  # the equations typeset in the opening box instead
    curves: str = ""  # the learning curves' figures, right after "What you should see"
    intro_items: str = ""  # the opening box's items after what the lesson teaches (render.course.intro_items)
    measured: str = ""  # at the top of "Try this": the box on reading "Measured" (render.measured), or a link to it
    targets: dict[str, int] = field(default_factory=dict)  # "train", "Agent.get_value": the line of each def

    @property
    def linked(self) -> set[str]:
        """The equations a citation links to: every one the page typesets."""
        return set(self.homes)


def teaches_lines(lesson: Lesson) -> range:
    """The lines of the module docstring's "What this lesson teaches": its heading and its indented lines."""
    heading = lesson.lines.index(TEACHES) + 1
    end = next((n for n in range(heading + 1, len(lesson.lines) + 1) if not lesson.lines[n - 1].strip()),
               len(lesson.lines) + 1)
    return range(heading, end)


def equation_homes(lesson: Lesson) -> tuple[dict[str, int], list[str]]:
    """Where each equation the page cites is typeset, once: beside the first line of prose that cites it (a
    docstring's or a comment's). The module docstring's "What this lesson teaches" counts, its equations going into
    the opening box (the second value: their keys); its other parts do not (its References cite every equation: the
    links go down to the code that uses each). An equation no prose cites: beside the first line that cites it at all
    (a help text, a trailing comment). Every other citation links to the box."""
    teaches = teaches_lines(lesson)
    module = range(1, lesson.docstrings[1][1] + 1) if 1 in lesson.docstrings else range(0)
    homes: dict[str, int] = {}
    for n, line in enumerate(lesson.lines, start=1):
        if n in lesson.prose and (n in teaches or n not in module):
            for key in cited(line):
                homes.setdefault(key, n)
    for n, line in enumerate(lesson.lines, start=1):
        for key in cited(line):
            homes.setdefault(key, n)
    return homes, [key for key in EQUATIONS if homes.get(key) in teaches]


def def_lines(lesson: Lesson) -> dict[str, int]:
    """{"train": its def's line, "Agent": its class's, "Agent.get_action_and_value": the method's, ...}."""
    out = {}
    for node in ast.parse("\n".join(lesson.lines)).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node.lineno
        if isinstance(node, ast.ClassDef):
            out.update({f"{node.name}.{f.name}": f.lineno for f in node.body if isinstance(f, ast.FunctionDef)})
    return out


# ---------------------------------------------------------------------------------------------------------
# Prose
# ---------------------------------------------------------------------------------------------------------
def _link(html: str, page: "Page | None") -> str:
    return link_citations(html, page.linked) if page is not None else html


def intro_box(lines: list[str], page: Page) -> str:
    """The opening box: what the lesson teaches (the docstring's part, its objectives typeset, the equations it cites
    beside it), then the page's items (what to read first, where the loop starts)."""
    teaches = render_markdown("\n".join(lines[3:])).strip()  # (after "", its bold heading, "")
    if teaches.startswith("<p>") and teaches.endswith("</p>") and teaches.count("<p>") == 1:
        teaches = teaches[3:-4]
    inline = {key.split(":", 1)[1]: html for key, html in page.typeset.items() if key.startswith("inline:")}
    teaches = typeset_objectives(_link(teaches, page), inline)
    return (f'<section class="intro" id="intro"><ul><li><strong>{TEACHES}:</strong> {teaches}'
            f"{equations_html(page.intro_keys, page.typeset)}</li>{page.intro_items}</ul></section>")


_LOOP_LINE = re.compile(r"^(\s*)(.*?)(?:\s{2,}((?:\w+\.)?\w+)\(\))?\s*$")  # "    run pi_old ...    collect_rollout()"


def loop_html(lines: list[str], page: Page) -> str:
    """The pseudocode of "The loop": each step a line, its indentation kept (a wrapped step hangs under its first
    word), and the function that does it at the right, a link to its line; on a narrow screen the function goes
    under its step."""
    heading, body = lines[:3], [line for line in lines[3:] if line != "```"]
    out = []
    for line in body:
        indent, step, name = _LOOP_LINE.match(line).groups()
        where = page.targets.get(name or "")
        fn = (f'<a class="fn" href="#L{where}"><code>{esc(name)}()</code></a>' if where else
              f'<code class="fn">{esc(name)}()</code>' if name else '<span class="fn"></span>')  # (a cell each line)
        out.append(f'<span class="loop-line"><span class="step" style="padding-left: {len(indent) + 2}ch">'
                   f"{esc(step)}</span> {fn}\n</span>")
    return render_markdown("\n".join(heading)) + f'<div class="loop">{"".join(out)}</div>'


def try_this_html(lines: list[str], page: Page) -> str:
    """"Try this", folded: experiments to run once the code is read, not words between the reader and the update.
    At its top, the page's box on reading "Measured" (or the link to it)."""
    html = _link(render_markdown("\n".join(lines)), page)
    header_end = html.index("</p>") + len("</p>")
    count = sum(1 for line in lines if line.startswith("- `"))
    summary = f'<span class="added">Try this: {count} experiments, once you have read the code</span>'
    return (f'<details class="try-this" id="try-this"><summary>{summary}</summary>{html[:header_end]}'
            f"{page.measured}{html[header_end:]}</details>")


def module_docstring_html(text: str, page: Page) -> str:
    """The module docstring: "What this lesson teaches" as the page's opening box, the loop's pseudocode linked to
    its functions, the learning curves after "What you should see", "Try this" folded; the other parts as they are
    (rendered in pieces split at parts, which begin at block boundaries)."""
    html, piece = [], []

    def flush():
        if piece:
            html.append(_link(render_markdown("\n".join(piece)), page))
            piece.clear()

    for title, lines in _docstring_parts(text):
        if title == TEACHES:
            flush()
            html.append(intro_box(lines, page))
        elif title.startswith("The loop"):
            flush()
            html.append(loop_html(lines, page))
        elif title.startswith("Try this ("):
            flush()
            html.append(try_this_html(lines, page))
        elif title == "Usage":  # the commands that run it: README's first screen has the first; folded here
            flush()
            count = sum(1 for line in lines if line.startswith("    ") and line.strip())
            html.append(f'<details class="usage"><summary><span class="added">Usage: {count} commands</span></summary>'
                        f"{_link(render_markdown(chr(10).join(lines)), page)}</details>")
        elif title == "References":  # sources, not steps of the lesson: folded, their keys in sight
            flush()
            keys = re.findall(r"^- (\[\w+\])", "\n".join(lines), flags=re.M)
            html.append(f'<details class="references"><summary><span class="added">References: {esc(", ".join(keys))}'
                        f"</span></summary>{_link(render_markdown(chr(10).join(lines)), page)}</details>")
        else:
            piece += lines
            if title == SHOULD_SEE and page.curves:
                flush()
                html.append(page.curves)
    flush()
    return "".join(html)


def note_html(lesson: Lesson, lines: list[int], page: "Page | None" = None) -> str:
    """The rendered prose of `lines` (one docstring, or a run of comments and docstrings), every line's anchor
    at its start, each citation of an equation a link to its box; the module docstring's as module_docstring_html
    lays it out."""
    parts, i = [], 0
    while i < len(lines):
        n = lines[i]
        if n in lesson.docstrings:
            first, last = lesson.docstrings[n]
            text = "\n".join(lesson.lines[first - 1:last])
            quote = text.lstrip()[:3]
            body = text.strip()[3:-3] if quote in ('"""', "'''") else text.strip()
            html = (module_docstring_html(body, page) if first == 1 and page is not None
                    else _link(_docstring_html(body), page))
            parts.append(_anchors(list(range(first, last + 1))) + html)
            i += last - first + 1
        else:
            run = []
            while i < len(lines) and lines[i] not in lesson.docstrings:
                run.append(lines[i])
                i += 1
            parts.append(_anchors(run) + _link(render_markdown(_comment_markdown([lesson.lines[m - 1] for m in run])),
                                               page))
    return "".join(parts)


# ---------------------------------------------------------------------------------------------------------
# Code and equations
# ---------------------------------------------------------------------------------------------------------
_SYMBOL = re.compile(r"^(\w{1,8})(?: of GAE)?[,:] ")  # "gamma, the discount ...", "lambda of GAE: 0 gives ..."
_RANGE = re.compile(r"\((?:usual|paper:) ([^)]*)\)|usual ([\w.\-]+ to [\w.\-]+)")


def hyperparameter_rows(lesson: Lesson) -> list[tuple[str, str, str, str, str]]:
    """(flag, symbol, default, what it does, usual range) of each field of the lesson's Hyperparameters, read from
    its source: the symbol where the help text opens with one ("gamma, the discount ..."), the range where it gives
    one ("(usual 0.9-0.999)", "(paper: 128 to 2048)"); what it does is the rest of the help text, said once."""
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
        what = text
        if found:  # the range has its column: "(usual 0.1-0.3)", "; usual 0.8 to 0.98" taken out of the text
            what = what[:found.start()].rstrip(" ;,") + what[found.end():]
        if symbol:  # and so has the symbol: "gamma, the discount ..." -> "the discount ..."
            what = what[symbol.end():]
        out.append((f"--{node.target.id.replace('_', '-')}", symbol.group(1) if symbol else "",
                    ast.get_source_segment(source, node.value) if node.value is not None else "", what,
                    (found.group(1) or found.group(2)) if found else ""))
    return out


def hyperparameter_table(lesson: Lesson, page: "Page | None" = None) -> str:
    """The lesson's PPO hyperparameters under their class's docstring: each flag with its default in one line, and
    its symbol where the math names it otherwise ("--num-steps 256 (T)"), then the table (flag, symbol, default, what it does, usual
    range), folded: the reference a later line sends the reader to, not words before the update."""
    found = hyperparameter_rows(lesson)
    items = [f"<code>{esc(flag)} {esc(default)}</code>" + (f" ({esc(symbol)})" if symbol and symbol != flag[2:] else "")
             for flag, symbol, default, _, _ in found]
    line = " ".join(f'<span class="hp">{item}{"," if i < len(items) - 1 else ""}</span>' for i, item in enumerate(items))
    rows = "".join(f"<tr><td><code>{esc(flag)}</code></td><td>{esc(symbol)}</td><td><code>{esc(default)}</code></td>"
                   f"<td>{_link(esc(what), page)}</td><td>{esc(usual)}</td></tr>"
                   for flag, symbol, default, what, usual in found)
    return (f'<div class="hyper-table md"><p class="defaults"><strong>The defaults:</strong> {line}.</p>'
            '<details class="hyper"><summary>the table: what each one does, its usual range</summary>'
            "<table><thead><tr><th>flag</th><th>symbol</th><th>default</th>"
            f"<th>what it does</th><th>usual range (or the paper's)</th></tr></thead><tbody>{rows}</tbody>"
            "</table></details></div>")


def equations_html(keys: list[str], typeset: dict[str, str]) -> str:
    """A box of KaTeX's HTML for each equation, with its caption (the one place on the page that names it so)."""
    return "".join(f'<figure class="eq" id="eq-{esc(key)}" data-eq="{esc(key)}">{typeset[key]}'
                   f"<figcaption>{esc(EQUATIONS[key].label)}</figcaption></figure>" for key in keys)


def row_html(lesson: Lesson, row: Row, highlighted: list[str], page: Page) -> str:
    if row.kind == "heading":  # a section banner: its title as a heading, its line as an anchor
        title = dict(lesson.sections)[row.note[0]]
        return (f'<section class="heading" id="sec-{slug(title)}" data-lines="{row.note[0]}-{row.note[-1]}">'
                f"{_anchors(row.note)}<h2>{esc(title)}</h2></section>")
    notes = note_html(lesson, row.note, page)
    if row.note and lesson.lines[row.note[0] - 2].startswith("class Hyperparameters"):  # its docstring's row
        notes += hyperparameter_table(lesson, page)
    lines = row.note + row.code
    text = "\n".join(lesson.lines[n - 1] for n in row.note + row.code)  # notes, trailing comments, help texts
    here = [key for key in cited(text) if page.homes.get(key) in lines and key not in page.intro_keys]
    equations = equations_html(here, page.typeset)
    span = f"{lines[0]}-{lines[-1]}" if lines else ""
    if not row.code:
        return f'<section class="row wide" data-lines="{span}"><div class="note">{notes}{equations}</div></section>'
    # Each line a block of its own (no newline between them, which would add an empty line box); a citation in
    # a trailing comment or a help text links to its equation's box.
    code = "".join(f'<span class="line" id="L{n}"><a class="ln" href="#L{n}">{n}</a>'
                   f"{link_citations(highlighted[n - 1], page.linked)}</span>" for n in row.code)
    return (f'<section class="row" data-lines="{span}"><div class="note">{notes}{equations}</div>'
            f'<div class="src"><pre class="code hl">{code}</pre></div></section>')


# ---------------------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------------------
@dataclass
class Fold:
    """Lines first..last folded under a summary: what a first read passes over above the fence (the imports, the
    Hyperparameters' fields that its table shows)."""

    first: int
    last: int
    summary: str


def folds(lesson: Lesson) -> list[Fold]:
    """The imports and module settings between the module docstring and the first definition, and the fields of
    Hyperparameters (below its docstring and table: the table is read from them)."""
    tree = ast.parse("\n".join(lesson.lines))
    out = []
    defs = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    first = min([defs[0].lineno] + [d.lineno for d in defs[0].decorator_list])
    start = lesson.docstrings[1][1] + 1 if 1 in lesson.docstrings else 1
    if start < first:
        head = [node for node in tree.body if start <= node.lineno < first]
        modules = list(dict.fromkeys(
            name.split(".")[0] for node in head for sub in ast.walk(node)
            for name in ([a.name for a in sub.names] if isinstance(sub, ast.Import) else
                         [sub.module or ""] if isinstance(sub, ast.ImportFrom) else [])
            if name and name != "__future__"))
        names = [t.id for node in head if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)]
        what = f"imports: {', '.join(modules)}" + (f"; and {', '.join(names)}" if names else "")
        out.append(Fold(start, first - 1, f'<span class="fold-what">{esc(what)}</span>'))
    (cls,) = [node for node in defs if isinstance(node, ast.ClassDef) and node.name == "Hyperparameters"]
    doc = cls.body[0]
    if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and cls.end_lineno > doc.end_lineno:
        out.append(Fold(doc.end_lineno + 1, cls.end_lineno, '<span class="fold-what">the fields</span>'))
    return out


def copy_summary(lesson: Lesson, copy: CopiedBlock) -> str:
    """The copy's marker line, small, a link to its original's module (its title: the lessons that carry the same
    copy)."""
    others = [script for script in carriers(copy.target) if script != lesson.name]
    shared = f"the same copy in {', '.join(others)}" if others else "no other lesson carries it"
    title = f"{copy.last - copy.first} lines, checked against {copy.name} in {copy.module}; {shared}"
    return (f'{_anchors([copy.first])}<a class="copy-of" href="../raw/{esc(copy.module)}" title="{esc(title)}">'
            f"<code>{esc(lesson.lines[copy.first - 1].strip())}</code></a>")


def body_html(lesson: Lesson, first: int, last: int, highlighted: list[str], page: Page,
              open_copies: bool = False, folded: tuple[Fold, ...] | list[Fold] = ()) -> str:
    """Lines first..last, copied blocks in a `details` each (open with `open_copies`: PPO's own, above the fence;
    folded below it), the `folded` blocks in a folded `details` under their summary."""
    copies = [c for c in lesson.copies if first <= c.first <= last]
    blocks = sorted([(c.first, c.last, c) for c in copies] + [(f.first, f.last, f) for f in folded
                                                               if first <= f.first <= last], key=lambda b: b[0])
    parts, n = [], first
    for start, end, block in blocks:
        if start < n:
            raise RuntimeError(f"{lesson.name}: lines {start}-{end} overlap a block before them")
        parts += [row_html(lesson, r, highlighted, page) for r in rows(lesson, n, start - 1)]
        if isinstance(block, Fold):
            inner = "".join(row_html(lesson, r, highlighted, page) for r in rows(lesson, start, end))
            parts.append(f'<details class="fold" data-lines="{start}-{end}"><summary>{block.summary}</summary>'
                         f"{inner}</details>")
        else:
            inner = "".join(row_html(lesson, r, highlighted, page) for r in rows(lesson, start + 1, end))
            opened = " open" if open_copies else ""
            parts.append(f'<details class="copy"{opened} data-target="{esc(block.target)}" '
                         f'data-lines="{start}-{end}">'
                         f"<summary>{copy_summary(lesson, block)}</summary>{inner}</details>")
        n = end + 1
    if n <= last:
        parts += [row_html(lesson, r, highlighted, page) for r in rows(lesson, n, last)]
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


def opening_objectives(lesson: Lesson) -> list[str]:
    """The objectives (L^{...}) its opening box names: typeset inline there (render.equations.typeset)."""
    return objectives(" ".join(lesson.lines[n - 1] for n in teaches_lines(lesson)))


def lesson_page(lesson: Lesson, typeset: dict[str, str], neighbours: list[tuple[str, str]],
                figures: tuple[Figure, ...] = (), intro: str = "", checks: str = "", measured: str = "") -> str:
    """The whole page. `neighbours`: (href, title) of the diff pages this lesson is in; `figures`: its learning
    curves (course.lessons), shown right after the module docstring's "What you should see"; `intro`, `checks` and
    `measured` (render.course, render.measured): the opening box's items after what the lesson teaches (what to read
    first, where its loop is), its check questions at the end, the box on reading "Measured" at the top of its Try
    this."""
    # Pygments' HTML of each line (spans closed at each line's end), index n - 1 for line n
    highlighted = highlight("\n".join(lesson.lines) + "\n", PythonLexer(), HtmlFormatter(nowrap=True)).split("\n")
    total = len(lesson.lines)
    end_of_lesson = lesson.fence[0] - 1 if lesson.fence else total
    curves = "".join(curve_html(figure, lesson.path.parent) for figure in figures)
    homes, intro_keys = equation_homes(lesson)
    page_of = Page(typeset, homes, intro_keys, curves, intro, measured, def_lines(lesson))
    body = body_html(lesson, 1, end_of_lesson, highlighted, page_of, open_copies=True,
                     folded=folds(lesson))  # PPO's own functions (GAE, the losses, the rollout), shown
    if curves and body.count(curves) != 1:
        raise RuntimeError(f'{lesson.name}: its figures need one docstring part "{SHOULD_SEE}" before its first '
                           f"copied block, found {body.count(curves)}")
    if lesson.fence:
        first, last = lesson.fence
        fence_text = " ".join(line.lstrip("# ").strip() for line in lesson.lines[first:last - 1])
        plumbing = body_html(lesson, last + 1, total, highlighted, page_of)
        body += (f'<details class="plumbing" id="sec-the-plumbing" data-lines="{first}-{total}"><summary>'
                 f'{_anchors(list(range(first, last + 1)))}<span class="fence">{esc(fence_text)}</span></summary>'
                 f"{plumbing}</details>")
    for key in homes:  # each equation typeset once on the page, where its citations link
        boxes = body.count(f'id="eq-{key}"')
        if boxes != 1:
            raise RuntimeError(f"{lesson.name}: equation {key} typeset {boxes} times on its page, not once")
    menu = "".join(f'<li><a href="#sec-{slug(title)}">{esc(title)}</a></li>' for _, title in lesson.sections)
    links = [f'<li><a href="../raw/{lesson.name}">{lesson.name} (the raw file)</a></li>']
    links += [f'<li><a href="{esc(href)}">{esc(title)}</a></li>' for href, title in neighbours]
    nav = (f'<nav class="parts" aria-label="parts of the lesson"><ul>{menu}</ul><ul class="more">{"".join(links)}</ul>'
           "</nav>")
    content = f'<h1>{esc(lesson.name)}</h1>{nav}<div class="lesson" data-script="{lesson.name}">{body}</div>{checks}'
    return page(lesson.name, content + OPEN_TARGET, depth=1, katex=True)
