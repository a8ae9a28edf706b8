"""Lesson 0, course/ppo-on-one-page.md, as the site's page lesson-0.html (the first of the reading path): its Markdown
with the math typeset by KaTeX at build time ($...$ inline, $$...$$ displayed), its answers folded in <details>, its
figures (course/figures/, drawn by course.figures from the lessons' code) copied beside the page, and its links to a
line of ppo_cartpole.py going to that line of the lesson's page."""

from __future__ import annotations

import re
from pathlib import Path

import markdown

from render.equations import typeset_tex
from render.html import esc, page
from render.index import Links, heading_ids

LESSON0 = Path("course") / "ppo-on-one-page.md"
PAGE = "lesson-0.html"
_MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", re.S)
_COMMENT_LINE = re.compile(r"^<!--.*-->[ \t]*\n", re.M)  # the generated blocks' markers


def lesson0_html(text: str, links=lambda text: text) -> tuple[str, dict[str, str]]:
    """The page's HTML with a placeholder for each piece of math, and {key: its LaTeX} (keys "inline:<n>" or
    "display:<n>"). The math is taken out before the links are rewritten (`links`, on the Markdown) and the Markdown
    converter runs, so that its brackets, underscores and backslashes are read as neither."""
    tex: dict[str, str] = {}

    def hold(match: re.Match) -> str:
        display = match.group(1) is not None
        key = f"{'display' if display else 'inline'}:{len(tex)}"
        tex[key] = (match.group(1) if display else match.group(2)).strip()
        return f"\n\nMATHPLACE{len(tex) - 1}X\n\n" if display else f"MATHPLACE{len(tex) - 1}X"

    held = links(_MATH.sub(hold, _COMMENT_LINE.sub("", text)))
    held = held.replace("<details>", '<details markdown="1">')
    html = markdown.markdown(held, extensions=["tables", "md_in_html", "fenced_code"])
    return heading_ids(html), tex


def with_math(html: str, tex: dict[str, str], where: object) -> str:
    """lesson0_html's placeholders replaced by KaTeX's HTML (typeset by Node.js, in one call)."""
    for key, rendered in typeset_tex(tex).items():
        n = key.split(":")[1]
        if key.startswith("display:"):
            html = html.replace(f"<p>MATHPLACE{n}X</p>", f'<div class="math">{rendered}</div>')
        html = html.replace(f"MATHPLACE{n}X", rendered)
    if "MATHPLACE" in html:
        raise RuntimeError(f"{where}: a piece of math was not typeset")
    return html


def markdown_page(root: Path, out: Path, source: Path, title: str) -> str:
    """A course page from its Markdown (`source`, relative to the root), its links rewritten into the site (Links:
    figures copied under raw/), its math typeset."""
    links = Links(root, out)
    html, tex = lesson0_html((root / source).read_text(), lambda text: links.markdown(text, (root / source).parent))
    html = with_math(html, tex, source)
    return page(title, f'<article class="lesson0 md">{html}</article>', depth=0, katex=True)


def lesson0_page(root: Path, out: Path) -> str:
    """Lesson 0's whole page."""
    return markdown_page(root, out, LESSON0, "Lesson 0: PPO on one page")


# --- the debugging guide, after the lessons ------------------------------------------------------------------------

GUIDE = Path("course") / "when-ppo-does-not-learn.md"
GUIDE_PAGE = "debugging.html"


def guide_page(root: Path, out: Path) -> str:
    """The debugging guide's page: course/when-ppo-does-not-learn.md, its figures (course/figures/debugging/)."""
    return markdown_page(root, out, GUIDE, "When PPO does not learn")


# --- around each lesson's page: what it teaches, what to read first, where its loop is; its check questions ------

CHECKS = Path("course") / "checks"  # <lesson's module>.md: three questions, each answer in a <details>


def checks_html(root: Path, module: str) -> str:
    """The lesson's check questions (course/checks/<module>.md) for the end of its page: three questions whose
    answers unfold, their math typeset."""
    path = root / CHECKS / f"{module}.md"
    html, tex = lesson0_html(path.read_text())
    html = re.sub(r"<h1[^>]*>.*?</h1>", "", with_math(html, tex, path), count=1, flags=re.S)
    source = f"{CHECKS.as_posix()}/{module}.md"
    return (f'<section class="checks md" id="check-questions"><h2>Check questions</h2>{html}'
            f'<p class="from">(<a href="../raw/{source}">{source}</a>)</p></section>')


def intro_items(lines: list[str], neighbour: str | None, diff_href: str | None) -> str:
    """The opening box's items after what the lesson teaches (render.lesson.intro_box): what to read first, and
    where its PPO loop starts (train()'s `for iteration in range(` line). Class "added": the page's words, not the
    file's."""
    loop = next(n for n, line in enumerate(lines, start=1) if line.strip().startswith("for iteration in range("))
    if neighbour is None:
        first = '<a href="../lesson-0.html">Lesson 0: PPO on one page</a>, the ideas this code uses'
    else:
        first = (f'<a href="{neighbour[:-3]}.html"><code>{neighbour}</code></a>, the lesson this one differs from, and '
                 f'<a href="{diff_href}">the diff between them</a>')
    return (f'<li class="added"><strong>Read first:</strong> {first}.</li>'
            f'<li class="added"><strong>The PPO loop:</strong> <a href="#L{loop}">line {loop}</a>, in <code>train()</code>; '
            'the <a href="#check-questions">check questions</a> at the end.</li>')
