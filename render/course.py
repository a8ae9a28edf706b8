"""Lesson 0, course/ppo-on-one-page.md, as the site's page lesson-0.html (the first of the reading path): its Markdown
with the math typeset by KaTeX at build time ($...$ inline, $$...$$ displayed), its answers folded in <details>, its
figures (course/figures/, drawn by course.figures from the lessons' code) copied beside the page, and its links to a
line of ppo_cartpole.py going to that line of the lesson's page."""

from __future__ import annotations

import re
from pathlib import Path

import markdown

from render.equations import typeset_tex
from render.html import page
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
    html = markdown.markdown(held, extensions=["tables", "md_in_html"])
    return heading_ids(html), tex


def lesson0_page(root: Path, out: Path) -> str:
    """The whole page, its links rewritten into the site (Links: figures copied under raw/)."""
    links = Links(root, out)
    html, tex = lesson0_html((root / LESSON0).read_text(), lambda text: links.markdown(text, (root / LESSON0).parent))
    typeset = typeset_tex(tex)
    for key, rendered in typeset.items():
        n = key.split(":")[1]
        if key.startswith("display:"):
            html = html.replace(f"<p>MATHPLACE{n}X</p>", f'<div class="math">{rendered}</div>')
        html = html.replace(f"MATHPLACE{n}X", rendered)
    if "MATHPLACE" in html:
        raise RuntimeError(f"{LESSON0}: a piece of math was not typeset")
    return page("Lesson 0: PPO on one page", f'<article class="lesson0 md">{html}</article>', depth=0, katex=True)
