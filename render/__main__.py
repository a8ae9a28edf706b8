"""Build the lessons' site: `python -m render` (into _site/, ignored by git), then open _site/index.html.

    python -m render                 # build into _site/
    python -m render --out /tmp/s    # elsewhere
    python -m render.diff cartpole lunarlander --hide-prose   # the neighbour diff in a terminal

The pages are made from the files as they are (the scripts, course/ppo-on-one-page.md, the guide
course/when-ppo-does-not-learn.md and their figures, README.md, benchmarks/README.md, common/, and the committed
figures of benchmarks/results/ they show), so there is no second copy of any lesson text to keep in step;
the same files give the same site, byte for byte. The equations are typeset here, by KaTeX under Node.js (`npm ci`
in render/katex/ runs on the first build); a page fetches nothing when it is read.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from course.lessons import LESSONS, SCRIPTS
from render import diffs
from benchmarks.ablations import TRY_THIS
from render.course import GUIDE_PAGE, PAGE as LESSON0_PAGE, checks_html, guide_page, intro_items, lesson0_page
from render.equations import typeset, vendor
from render.html import pygments_css
from render.index import benchmarks_page, index_page
from render.lesson import lesson_page, opening_objectives
from render.measured import measured_box, measured_link
from render.source import ROOT, read_lesson

STATIC = Path(__file__).resolve().parent / "static"


def build(out: Path, root: Path = ROOT) -> list[Path]:
    """Build the whole site into `out` (emptied first); returns the pages written."""
    if out.exists():
        shutil.rmtree(out)
    (out / "lessons").mkdir(parents=True)
    (out / "assets").mkdir()
    for asset in sorted(STATIC.iterdir()):
        shutil.copyfile(asset, out / "assets" / asset.name)
    with open(out / "assets" / "style.css", "a") as css:
        css.write("\n/* Pygments' default style */\n" + pygments_css() + "\n")
    vendor(out / "assets")
    (out / "raw" / "common").mkdir(parents=True)
    for script in SCRIPTS:
        shutil.copyfile(root / script, out / "raw" / script)
    for module in sorted((root / "common").glob("*.py")):
        shutil.copyfile(module, out / "raw" / "common" / module.name)
    (out / "raw" / "course" / "checks").mkdir(parents=True)
    for checks in sorted((root / "course" / "checks").glob("*.md")):  # the lessons' check questions
        shutil.copyfile(checks, out / "raw" / "course" / "checks" / checks.name)
    for figure in (figure for lesson in LESSONS for figure in lesson.figures):  # the lesson pages' curves
        (out / "raw" / figure.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / figure.path, out / "raw" / figure.path)

    (out / "raw" / "benchmarks" / "core").mkdir(parents=True)  # the statistics' procedure, which a page links to
    shutil.copyfile(root / "benchmarks" / "core" / "inference.py", out / "raw" / "benchmarks" / "core" / "inference.py")

    pages = diffs.build_diff_pages(out, root)
    pairs = diffs.pair_pages()  # (from, to, href from the site's root)
    sources = {lesson.script: read_lesson(root / lesson.script) for lesson in LESSONS}
    equations = typeset(sorted({name for source in sources.values() for name in opening_objectives(source)}))
    # The box on reading "Measured" where a learner meets the first one (the first lesson with a study's Try this),
    # a link to it in the others' Try this.
    first_measured = next(lesson.script for lesson in LESSONS if lesson.script in TRY_THIS)
    for lesson in LESSONS:
        script = lesson.script
        neighbours = [("../" + href, f"{a} -> {b}") for a, b, href in pairs if script in (a, b)]
        path = out / "lessons" / f"{script[:-3]}.html"
        source = sources[script]
        diff_href = next((f"../{href}" for a, b, href in pairs if b == script), None)
        intro = intro_items(source.lines, lesson.neighbour, diff_href)
        measured = measured_box(script) if script == first_measured else measured_link(first_measured)
        path.write_text(lesson_page(source, equations, neighbours, lesson.figures, intro,
                                    checks_html(root, lesson.module), measured))
        pages.append(path)
    (out / LESSON0_PAGE).write_text(lesson0_page(root, out))  # lesson 0, first in the reading path
    pages.append(out / LESSON0_PAGE)
    (out / GUIDE_PAGE).write_text(guide_page(root, out))  # the debugging guide, after the lessons
    pages.append(out / GUIDE_PAGE)
    (out / "index.html").write_text(index_page(root, out, pairs))
    (out / "benchmarks.html").write_text(benchmarks_page(root, out))
    pages += [out / "index.html", out / "benchmarks.html"]
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m render", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_site", help="the folder to build into (default: _site)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        pages = build(args.out)
    except RuntimeError as error:  # no Node.js, no npm, KaTeX refusing an equation
        print(f"python -m render: {error}", file=sys.stderr)
        return 2
    print(f"{len(pages)} pages in {args.out} ({time.perf_counter() - start:.1f} s): open {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
