"""The lessons' site (render/): the lesson pages hold every line of their script once and in order, the cited
equations typeset beside the lines that cite them, the copied blocks folded with exactly their lines; every link
and anchor of every page resolves; each lesson page shows its learning curves (the committed PNGs) right after its
"What you should see"; the same files build the same site. The diff pages: tests/test_site_diffs.py; in a real
browser: tests/test_site_browser.py."""

import ast
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from course.lessons import LESSONS, SCRIPTS
from render import equations
from render.lesson import SHOULD_SEE, png_size
from render.source import read_lesson
from tests.conftest import ROOT
from tests.site_pages import Node, parse, words


def lesson_tree(site: Path, script: str):
    return parse(site / "lessons" / f"{script[:-3]}.html")


def line_ids(tree) -> list[int]:
    return [int(i[1:]) for i in tree.ids() if re.fullmatch(r"L\d+", i)]


def page_words(node) -> bool:
    """What a note's text leaves out when it is held to its lines' words: the equations' boxes, the hyperparameters'
    table (read from the fields), the page's own words (class "added": the opening box's links, a fold's summary), and
    of an inline formula KaTeX's HTML and MathML (its TeX annotation, the source's words, stays)."""
    return (node.tag == "figure" or bool({"hyper-table", "added", "katex-html"} & set(node.classes()))
            or (node.tag.startswith("m") and node.tag not in ("math", "mark")))


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_line_once_and_in_order(site, script):
    lines = (ROOT / script).read_text().splitlines()
    tree = lesson_tree(site, script)
    assert line_ids(tree) == list(range(1, len(lines) + 1))
    lesson = read_lesson(ROOT / script)
    # A code line's text is the line itself (its number aside); a note's text keeps every word of its lines.
    for node in tree.find_all("span", cls="line"):
        n = int(node.attrs["id"][1:])
        assert n not in lesson.prose
        assert node.text(skip=lambda child: "ln" in child.classes()) == lines[n - 1], f"line {n}"
    for row in tree.find_all("section", cls="row"):
        first, last = (int(x) for x in row.attrs["data-lines"].split("-"))
        prose = [n for n in range(first, last + 1) if n in lesson.prose]
        note = row.find_all("div", cls="note")[0]
        rendered = note.text(skip=page_words)
        source = " ".join(lines[n - 1].strip().lstrip("#").replace('"""', "") for n in prose)
        assert words(rendered) == words(source), f"{script} lines {first}-{last}"


def should_see(script: str) -> tuple[str, str]:
    """The module docstring's "What you should see" text (its indented lines) and the line after it (the next
    part's first, unindented)."""
    lines = ast.get_docstring(ast.parse((ROOT / script).read_text())).splitlines()
    start = lines.index(SHOULD_SEE) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].strip() and not lines[i][0].isspace())
    return " ".join(lines[start:end]), lines[end]


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.name)
def test_each_lesson_shows_its_learning_curves_right_after_what_you_should_see(site, lesson):
    """course.lessons' figures, in order, each the committed PNG byte for byte (copied into the site), with its
    alt text and caption, in the module docstring's note between "What you should see" and the next part."""
    assert lesson.figures, f"{lesson.script} has no figure for its {SHOULD_SEE!r}"
    page = site / "lessons" / f"{lesson.module}.html"
    curves = parse(page).find_all("figure", cls="curve")
    assert [curve.attrs["data-figure"] for curve in curves] == [figure.path for figure in lesson.figures]
    for curve, figure in zip(curves, lesson.figures):
        (image,) = curve.find_all("img")
        assert figure.alt and image.attrs["alt"] == figure.alt
        file = (page.parent / unquote(image.attrs["src"])).resolve()
        assert file.is_relative_to(site.resolve()) and file.is_file(), image.attrs["src"]
        assert file.read_bytes() == (ROOT / figure.path).read_bytes()
        assert (int(image.attrs["width"]), int(image.attrs["height"])) == png_size(ROOT / figure.path)
        assert [a.attrs["href"] for a in curve.find_all("a")] == [image.attrs["src"]]  # the full size, a click away
        (caption,) = curve.find_all("figcaption")
        assert figure.caption and figure.caption in caption.text()
    note = curves[0].parent
    assert note.tag == "div" and "note" in note.classes() and all(curve.parent is note for curve in curves)
    assert note.parent.attrs["data-lines"].startswith("1-")  # the module docstring's row
    elements = [child for child in note.children if isinstance(child, Node)]
    at = next(i for i, element in enumerate(elements) if element is curves[0])
    assert all(a is b for a, b in zip(elements[at:at + len(curves)], curves, strict=True))  # one after another
    heading = next(i for i, element in enumerate(elements) if element.text().strip() == SHOULD_SEE)
    text, following = should_see(lesson.script)
    assert words("".join(element.text() for element in elements[heading + 1:at])) == words(text)
    after = elements[at + len(curves)].text(skip=lambda node: "added" in node.classes())  # the page's own words out
    assert words(after).startswith(words(following))


def test_each_figure_is_one_of_the_record_with_its_command():
    """A lesson's figure is a committed result that benchmarks/README.md shows (beside the command that made it)."""
    record = (ROOT / "benchmarks" / "README.md").read_text()
    for lesson in LESSONS:
        for figure in lesson.figures:
            assert figure.path.startswith("benchmarks/results/") and figure.path.endswith(".png")
            assert (ROOT / figure.path).is_file()
            assert f"](results/{figure.path.removeprefix('benchmarks/results/')})" in record, figure.path
            assert f"--plot {figure.path}" in record, figure.path


def ancestor(node, tag):
    while node is not None and node.tag != tag:
        node = node.parent
    return node


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_cited_equation_is_typeset_beside_its_line(site, script):
    """Each equation the lesson cites is typeset once on its page: beside the first line of prose that cites it (the
    module docstring's References aside, which cite them all), or in the opening box when "What this lesson teaches"
    cites it; every line that cites it has, in its row, that box or a link to it."""
    lesson = read_lesson(ROOT / script)
    lines = lesson.lines
    tree = lesson_tree(site, script)
    by_id = {node.attrs["id"]: node for node in tree.walk() if "id" in node.attrs}
    boxes = [box.attrs["data-eq"] for box in tree.find_all("figure", cls="eq")]
    assert len(boxes) == len(set(boxes)), f"{script}: an equation typeset twice: {sorted(boxes)}"
    for box in tree.find_all("figure", cls="eq"):
        assert box.find_all(cls="katex"), "a box without KaTeX's HTML"
        assert box.find_all("figcaption")[0].text() == equations.EQUATIONS[box.attrs["data-eq"]].label
    references = lines.index("References") + 1
    module_end = lesson.docstrings[1][1]
    checked, first_prose = 0, {}
    for n, line in enumerate(lines, start=1):
        keys = equations.cited(line)
        if not keys:
            continue
        row = ancestor(by_id[f"L{n}"], "section")
        boxed = {box.attrs["data-eq"] for box in row.find_all("figure", cls="eq")}
        linked = {a.attrs["href"][len("#eq-"):] for a in row.find_all("a", cls="eq-link")}
        assert set(keys) <= boxed | linked, f"{script}:{n} cites {keys}; its row typesets {sorted(boxed)}, links {sorted(linked)}"
        assert set(keys) <= set(boxes)
        if n in lesson.prose and not references <= n <= module_end:
            for key in keys:
                first_prose.setdefault(key, row)
        checked += 1
    # every lesson cites the paper's equations in a good many places; GRPO, which keeps only the clip (eq. 7) of
    # PPO's objective, in fewer
    assert checked >= (4 if script == "grpo_rlhf_tiny.py" else 8)
    for key, row in first_prose.items():
        assert by_id[f"eq-{key}"] in row.find_all("figure", cls="eq"), f"{script}: eq. {key} is not beside its first prose"
    for link in tree.find_all("a", cls="eq-link"):
        assert link.attrs["href"][1:] in by_id


def test_equation_citations_are_read_as_written():
    assert equations.cited("the paper's L^{CLIP+VF+S}, eq. 9") == ["9"]
    assert equations.cited("arXiv:1707.06347 (eqs. 7-9, 11, 12,") == ["7", "8", "9", "11", "12"]
    assert equations.cited("(eqs. 7, 11, 12)") == ["7", "11", "12"]
    assert equations.cited("Generalized Advantage Estimation over a rollout") == ["GAE"]
    assert equations.cited("equal to 7 or a sequence. 9") == []


def test_eq_11_is_typeset_with_the_exponent_compute_gae_gives():
    """The paper prints eq. 11's last exponent as T-t+1, a typo: the site's copy has the exponent of delta_{T-1} that
    ppo_cartpole.compute_gae gives. With one delta, delta_{T-1} = 1 (a reward at the last step, V = 0), A_t is that
    coefficient alone, (gamma lambda)^(T-1-t)."""
    import numpy as np

    import ppo_cartpole

    tex = equations.EQUATIONS["11"].tex
    exponent = re.search(r"\^\{([^}]*)\}\\,\\delta_\{T-1\}", tex).group(1)
    T, gl = 6, 0.9 * 0.5
    rewards = np.zeros(T, np.float32)
    rewards[-1] = 1.0
    zeros = np.zeros(T, np.float32)
    advantages = ppo_cartpole.compute_gae(rewards, zeros, zeros, zeros, 0.0, gamma=0.9, gae_lambda=0.5)
    for t in range(T):
        assert advantages[t] == pytest.approx(gl ** eval(exponent, {"T": T, "t": t}))


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_folded_block_holds_exactly_its_copied_lines(site, script):
    lesson = read_lesson(ROOT / script)
    tree = lesson_tree(site, script)
    blocks = tree.find_all("details", cls="copy")
    assert [b.attrs["data-lines"] for b in blocks] == [f"{c.first}-{c.last}" for c in lesson.copies]
    for block, copy in zip(blocks, lesson.copies):
        assert line_ids(block) == list(range(copy.first, copy.last + 1))
        summary = block.find_all("summary")[0]
        assert line_ids(summary) == [copy.first]  # the marker line, always in sight
        assert copy.target in summary.text()  # the marker line; a link to the original, named in its title
        (link,) = summary.find_all("a", cls="copy-of")
        assert link.attrs["href"] == f"../raw/{copy.module}" and copy.name in link.attrs["title"]
        above_the_fence = copy.first < lesson.fence[0]  # PPO's own functions: open; the plumbing's: folded
        assert (block.attrs.get("open") is not None) == above_the_fence, (copy.target, copy.first)
    plumbing = tree.find_all("details", cls="plumbing")
    assert len(plumbing) == 1 and line_ids(plumbing[0])[0] == lesson.fence[0]
    assert line_ids(plumbing[0])[-1] == len(lesson.lines)


def site_pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_every_link_and_anchor_resolves(site):
    pages = site_pages(site)
    assert len(pages) >= 5 + 4 + 2
    ids = {page: set(parse(page).ids()) for page in pages}
    broken = []
    for page in pages:
        tree = parse(page)
        refs = [(n.attrs["href"]) for n in tree.walk() if n.tag in ("a", "link") and "href" in n.attrs]
        refs += [n.attrs["src"] for n in tree.walk() if "src" in n.attrs]
        for ref in refs:
            url = urlparse(ref)
            if url.scheme in ("http", "https", "mailto"):
                continue
            assert not url.scheme and not url.netloc, f"{page.name}: {ref}"
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {ref} (no such file)")
            elif url.fragment and target.suffix == ".html" and url.fragment not in ids.get(target, set()):
                broken.append(f"{page.relative_to(site)}: {ref} (no such anchor)")
    assert not broken, "\n".join(broken[:20])


def test_readme_links_into_scripts_have_twins_in_the_lesson_pages(site):
    """Every `ppo_x.py#Ln` of README (the implementation-details map) is a line anchor of lessons/ppo_x.html, and
    the index's copy of the map links there."""
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\(((?:gr|p)po_\w+\.py)#L(\d+)\)", readme)
    assert len(links) > 50
    index = parse(site / "index.html")
    hrefs = {n.attrs["href"] for n in index.find_all("a") if "href" in n.attrs}
    for script, line in links:
        assert f"L{line}" in set(lesson_tree(site, script).ids())
        assert f"lessons/{script[:-3]}.html#L{line}" in hrefs


def test_index_has_the_reading_path_results_and_map(site):
    index = parse(site / "index.html")
    path = index.find_all("ol", cls="path")[0]
    assert [a.attrs["href"] for a in path.find_all("a") if a.attrs["href"].startswith("lessons/")] == [
        f"lessons/{s[:-3]}.html" for s in SCRIPTS]
    text = index.text()
    for script in SCRIPTS:
        assert f"python {script}" in text
    images = [n.attrs["src"] for n in index.find_all("img")]
    assert any(src.endswith("ppo_cartpole.png") for src in images)
    assert "clipped surrogate objective" in text  # the map


def test_the_build_is_deterministic(site, tmp_path):
    from render.__main__ import build

    build(tmp_path / "again")
    first = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    second = {p.relative_to(tmp_path / "again"): p.read_bytes() for p in (tmp_path / "again").rglob("*")
              if p.is_file()}
    assert first.keys() == second.keys()
    assert [name for name in first if first[name] != second[name]] == []


def test_no_page_is_over_its_size(site):
    """The issue's bound: the largest page with the assets it loads is under 1.5 MB (fonts: the KaTeX fonts a
    page may load, all of them counted)."""
    assets = sum(p.stat().st_size for p in (site / "assets").rglob("*") if p.is_file())
    largest = max(site_pages(site), key=lambda p: p.stat().st_size)
    assert largest.stat().st_size + assets < 1.5e6, (largest, largest.stat().st_size, assets)


def test_nothing_on_a_page_is_fetched_from_elsewhere(site):
    for page in site_pages(site):
        text = page.read_text()
        for ref in re.findall(r'(?:src|href)="([^"]+)"', text):
            if ref.startswith(("http:", "https:")):
                assert re.search(rf'<a [^>]*href="{re.escape(ref)}"', text), f"{page.name} loads {ref}"
        assert "@import" not in text
    css = "".join(p.read_text() for p in (site / "assets").rglob("*.css"))
    assert "http" not in re.sub(r"/\*.*?\*/", "", css, flags=re.S).replace("http://www.w3.org", "")


def test_the_debugging_guide_follows_the_lessons_with_a_figure_a_section(site):
    """course/when-ppo-does-not-learn.md as debugging.html: each symptom a section (its id the one the diagnose
    command prints), its figure beside it; the reading path ends with it."""
    from course import diagnose

    tree = parse(site / "debugging.html")
    ids = set(tree.ids())
    assert set(diagnose.SYMPTOMS) <= ids
    images = [n.attrs["src"] for n in tree.find_all("img")]
    drawn = sorted(p.name for p in (ROOT / "course" / "figures" / "debugging").glob("*.svg"))
    assert sorted(src.rsplit("/", 1)[1] for src in images) == drawn and len(drawn) >= 8
    assert all((site / src).is_file() for src in images)
    path = [a.attrs["href"] for ol in parse(site / "index.html").find_all("ol", cls="path") for a in ol.find_all("a")
            if not a.attrs["href"].startswith(("lessons/ppo_", "lessons/"))]
    assert path[-1] == "debugging.html"


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_menu_lists_every_section_banner_of_the_file(site, script):
    """The page's menu of parts: each `# --- Title ---` banner of the lesson, in the file's order, then the plumbing;
    each a link to its heading, which anchors the banner's line."""
    lines = (ROOT / script).read_text().splitlines()
    banners = [(n, m.group(1)) for n, line in enumerate(lines, start=1) if (m := re.match(r"# --- (.+?) -{3,}$", line))]
    assert len(banners) >= 4
    tree = lesson_tree(site, script)
    (nav,) = tree.find_all("nav", cls="parts")
    menu = nav.find_all("ul")[0].find_all("a")
    assert [a.text() for a in menu] == [title for _, title in banners] + ["The plumbing"]
    by_id = {node.attrs["id"]: node for node in tree.walk() if "id" in node.attrs}
    for a, (n, title) in zip(menu, banners):
        heading = by_id[a.attrs["href"][1:]]
        assert heading.find_all("h2")[0].text() == title and f"L{n}" in set(heading.ids())


def test_the_first_measured_lines_come_with_a_box_on_reading_them(site):
    """Issue 65: where a learner meets the first "Measured" line (the first lesson whose Try this a study measured),
    a box says what the seeds, the interval, the family's correction and "not detected" mean, with the study's own
    figures (its runs a side, its family, the procedure's level and error rate) and that lesson's own lines as
    examples; every other lesson's Try this links to it."""
    from benchmarks import ablations
    from benchmarks.core import inference

    first = next(script for script in SCRIPTS if script in ablations.TRY_THIS)
    tree = lesson_tree(site, first)
    (box,) = [node for node in tree.walk() if node.attrs.get("id") == "reading-measured"]
    assert ancestor(box, "details").attrs.get("class") == "try-this"
    study, settings = ablations.TRY_THIS[first]
    metric = ablations.STUDIES[study].metrics[0].name
    effect = next(e for e in ablations.read_effects(ablations.RESULTS)
                  if e["study"] == study and e["setting"] == settings[0] and e["metric"] == metric)
    text = " ".join(box.text().split())
    assert f"ran each setting {effect['runs']} times and the lesson's defaults {effect['default_runs']} times" in text
    assert f"compared {effect['family']} settings" in text and f"at most {100 * inference.ALPHA:g}%" in text
    assert f"The {100 * inference.LEVEL:g}% interval" in text
    measured = [line.strip()[len("Measured: "):] for line in (ROOT / first).read_text().splitlines()
                if line.strip().startswith("Measured: ")]
    assert measured[0] in text and "not detected" in text and "is not “no effect”" in text
    for script in SCRIPTS:
        if script == first:
            continue
        links = [a.attrs["href"] for a in links_in(lesson_tree(site, script), "measured-link")]
        assert links == [f"{first[:-3]}.html#reading-measured"], script


def links_in(tree, cls: str) -> list:
    return [a for node in tree.walk() if cls in node.classes() for a in node.find_all("a")]
