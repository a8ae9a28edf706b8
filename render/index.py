"""The index page (the reading path, the results with their curves, the implementation-details map linking into
the lesson pages) and the benchmark record's page, both from the files that hold them: the scripts' docstrings,
README.md's results (between its `<!-- results:begin -->` and `<!-- results:end -->`), tools.details_map's table
and benchmarks/README.md. Links between repository files become links between pages: a script's `ppo_x.py#L12`
goes to `lessons/ppo_x.html#L12`, `benchmarks/README.md#a` to `benchmarks.html#a`; any other file of the
repository is copied under raw/ and linked there."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import unquote

from course.lessons import SCRIPTS
from exercises import EXERCISES
from render.html import esc, page
from render.lesson import markdown_without_html
from render.source import one_line_and_usage, read_lesson
from tools import details_map
from tools.diff_matrix import marked

_LINK = re.compile(r"(!?\[[^\]]*\])\(([^)\s]+)\)")
_COMMENT_LINE = re.compile(r"^<!--.*-->[ \t]*\n", re.M)  # a marker line, <!-- table1:begin -->: GitHub hides it


def heading_ids(html: str) -> str:
    """Give each h1-h6 of rendered Markdown its GitHub anchor: lower case, punctuation dropped but for - and _,
    spaces to - (a repeated heading gets -1, -2, ... as there)."""
    seen: dict[str, int] = {}

    def named(match: re.Match) -> str:
        level, inner = match.group(1), match.group(2)
        base = re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", re.sub(r"<[^>]+>", "", inner).strip().lower()))
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchor = base if count == 0 else f"{base}-{count}"
        return f'<h{level} id="{esc(anchor)}">{inner}</h{level}>'

    return re.sub(r"<h([1-6])>(.*?)</h\1>", named, html)


class Links:
    """Rewrites a Markdown file's links into the site, copying the repository files they name under raw/."""

    def __init__(self, root: Path, out: Path):
        self.root, self.out = root, out

    def href(self, target: str, base: Path) -> str:
        """The site's href, from the site's root, for `target` as written in a Markdown file in folder `base`."""
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return target
        path, _, fragment = target.partition("#")
        file = (base / unquote(path)).resolve()
        relative = file.relative_to(self.root).as_posix()
        hash_part = f"#{fragment}" if fragment else ""
        pages = {"README.md": "index.html", "benchmarks/README.md": "benchmarks.html",
                 "course/when-ppo-does-not-learn.md": "debugging.html"}
        if relative in SCRIPTS or relative in pages:
            return pages.get(relative, f"lessons/{relative[:-3]}.html") + hash_part
        copy = self.out / "raw" / relative
        if file.is_dir():  # a listing page, its files copied beside it
            files = [f for f in sorted(file.iterdir()) if f.is_file()]
            copy.mkdir(parents=True, exist_ok=True)
            for f in files:
                shutil.copyfile(f, copy / f.name)
            items = "".join(f'<li><a href="{esc(f.name)}">{esc(f.name)}</a></li>' for f in files)
            listing = page(relative, f"<h1>{esc(relative)}/</h1><ul>{items}</ul>", depth=relative.count("/") + 2)
            (copy / "index.html").write_text(listing)
            return f"raw/{relative}/index.html"
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, copy)
        return f"raw/{relative}{hash_part}"

    def markdown(self, text: str, base: Path) -> str:
        """`text` (Markdown from a file in `base`) with its links rewritten."""
        return _LINK.sub(lambda m: f"{m.group(1)}({self.href(m.group(2), base)})", text)


def render_table_markdown(text: str) -> str:
    """Markdown with tables (README's results, the details map, benchmarks/README.md), its comment lines made blank
    lines (the converter takes no raw HTML, so they would show as text; and a table right after a paragraph, with
    only a marker line between them, would read as the paragraph's text)."""
    return markdown_without_html(["tables", "fenced_code"]).convert(_COMMENT_LINE.sub("\n", text))


def index_page(root: Path, out: Path, diff_pages: list[tuple[str, str, str]]) -> str:
    """`diff_pages`: (from script, to script, href) of every neighbour pair's page."""
    links = Links(root, out)
    path = []
    for script in SCRIPTS:
        one_line, usage = one_line_and_usage(read_lesson(root / script))
        diffs = " ".join(f'<a href="{esc(href)}">diff against {esc(a)}</a>' for a, b, href in diff_pages if b == script)
        after = [name for name, exercise in EXERCISES.items() if exercise.lesson == script]
        practice = (f" Then the exercises {', '.join(f'<code>{n}</code>' for n in after)}: "
                    f"<code>python -m exercises check {after[0]}</code>" if after else "")
        path.append(f'<li><a href="lessons/{script[:-3]}.html"><code>{script}</code></a>: '
                    f"{esc(one_line)} <code>{esc(usage)}</code> {diffs}{practice}</li>")
    pairs = "".join(f'<li><a href="{esc(href)}"><code>{esc(a)}</code> -&gt; <code>{esc(b)}</code></a></li>'
                    for a, b, href in diff_pages)
    results = marked((root / "README.md").read_text(), "results")
    if results is None:
        raise RuntimeError("README.md has no <!-- results:begin --> ... <!-- results:end --> around its results")
    results = links.markdown(results, root)
    details = links.markdown(details_map.table(root), root)
    body = (
        "<h1>Learn, run and compare PPO</h1>"
        '<p class="start">New to PPO? Start with <a href="lesson-0.html">Lesson 0: PPO on one page</a>, the ideas '
        "every lesson's code uses, then follow the reading path.</p>"
        "<p>Five lessons, one file each, read top to bottom and diffed against their neighbours. Each lesson page "
        "puts the script's notes beside its code, with the equations the notes cite typeset; each diff page shows "
        "what a variant changes.</p>"
        f'<h2 id="reading-path">The reading path</h2><ol class="path" start="0">'
        '<li><a href="lesson-0.html">Lesson 0: PPO on one page</a>: the ideas every lesson\'s code uses (the policy '
        "gradient, the advantage, the ratio, the clip, GAE), with figures drawn from the lessons' code, "
        f'and the loop\'s pseudocode linked to its lines in ppo_cartpole.py</li>{"".join(path)}'
        '<li><a href="debugging.html">When PPO does not learn</a>: a guide by symptom, each beside a healthy run, '
        'with the causes this library measured; <code>python -m course.diagnose runs/&lt;run&gt;</code> reads a '
        "run and says which symptom it shows</li></ol>"
        f'<h2 id="comparing-the-variants-diff-two-lessons">Comparing the variants: diff two lessons</h2>'
        f'<ul class="pairs">{pairs}</ul><p>In a terminal: <code>python -m render.diff cartpole lunarlander '
        "--hide-prose</code> (copied blocks folded to a line each, prose-only changes hidden).</p>"
        f'<h2 id="results-at-a-glance">Results at a glance</h2><div class="md">{render_table_markdown(results)}</div>'
        f'<h2 id="the-implementation-details-map">The implementation-details map</h2><div class="md wide-table">'
        f"{render_table_markdown(details)}</div>"
        '<p>The full record, with the commands behind every figure: <a href="benchmarks.html">benchmarks</a>.</p>'
    )
    return page("Index", body, depth=0)


def benchmarks_page(root: Path, out: Path) -> str:
    links = Links(root, out)
    text = links.markdown((root / "benchmarks" / "README.md").read_text(), root / "benchmarks")
    return page("Benchmarks", f'<div class="md">{heading_ids(render_table_markdown(text))}</div>', depth=0)
