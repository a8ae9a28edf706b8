"""The site's neighbour-diff pages and the terminal diff (render/diffs.py, render/terminal.py): each page's hunks
are difflib's opcodes on the two files, prose-only changes are told apart and the switch hides them, copied blocks
fold to a line each, README's items link to their hunks, and every link and anchor on the pages resolves."""

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from course.lessons import NEIGHBOURS, SCRIPTS
from conftest import ROOT
from render.diffs import (build_diff_pages, diff_files, item_pieces, opcodes, page_name, pair_pages, readme_pairs,
                          render_pair, unnamed_pieces)
from render.diff import format_diff, main

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
STATIC = ROOT / "render" / "static"

# Two small lessons: B changes a comment, a help text and a trailing comment of A (prose only), a line of code
# (code), and adds a copied block.
A = '''"""A small lesson."""

import os
from dataclasses import dataclass


@dataclass
class Args:
    seed: int = 1
    """the seed of the run"""
    name: str = "a"


def main():
    # say hello
    greeting = "hello"
    print(greeting)  # to the console
    y = 0
    x = 1
    return x + y


if __name__ == "__main__":
    main()
'''
B = A.replace("# say hello", "# say hello to the reader").replace('"""the seed of the run"""',
                                                                      '"""the seed: runs with one seed repeat"""') \
    .replace("# to the console", "# to stdout").replace("x = 1", "x = 2") \
    .replace("\n\nif __name__",
             '\n\n# Copied from common.helpers.helper\ndef helper():\n    return "copied"\n\n\nif __name__')


class Page(HTMLParser):
    """What the tests read back from a page: the hunk pieces (their data attributes and the changed lines' links),
    every href, every id, and README's items with their links."""

    def __init__(self, text: str):
        super().__init__()
        self.stack: list[tuple[str, dict]] = []
        self.pieces: list[dict] = []
        self.hrefs: list[str] = []
        self.ids: list[str] = []
        self.items: list[list[str]] = []  # README's items: the hrefs of their to-hunk links
        self.order: list[str] = []  # 'switch' and 'diff' as they open, children of <main>
        self.folds: list[dict] = []
        self.feed(text)

    def inside(self, tag: str, cls: str) -> dict | None:
        for t, attrs in reversed(self.stack):
            if t == tag and cls in (attrs.get("class") or "").split():
                return attrs
        return None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "a" and "href" in attrs:
            self.hrefs.append(attrs["href"])
            row = self.stack[-1] if self.stack and self.stack[-1][0] == "span" else None
            piece = self.inside("section", "hunk")
            if piece is not None and row is not None and "ln" in classes:
                kind = set((row[1].get("class") or "").split())
                if kind & {"rd", "ri"}:
                    piece["_lines"].append(attrs["href"])
            if "to-hunk" in classes and self.inside("section", "readme") is not None:
                self.items[-1].append(attrs["href"])
        if tag == "li" and self.inside("section", "readme") is not None:
            self.items.append([])
        if tag == "section" and "hunk" in classes:
            attrs["_lines"] = []
            attrs["_fold"] = self.inside("details", "copied")
            self.pieces.append(attrs)
        if tag == "details" and "copied" in classes:
            attrs["_summary"] = ""
            self.folds.append(attrs)
        if self.stack and self.stack[-1][0] == "main":
            if tag == "input" and attrs.get("id") == "hide-prose":
                self.order.append("switch")
            if tag == "div" and "diff" in classes:
                self.order.append("diff")
        if tag not in VOID:
            self.stack.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        assert self.stack and self.stack[-1][0] == tag, f"</{tag}> closes <{self.stack[-1][0] if self.stack else ''}>"
        self.stack.pop()

    def handle_data(self, data):
        if len(self.stack) > 1 and self.stack[-1][0] == "summary" and self.stack[-2][0] == "details" \
                and "copied" in (self.stack[-2][1].get("class") or "").split():
            self.stack[-2][1]["_summary"] += data

    def hunks(self) -> list[tuple]:
        """(op, i1, i2, j1, j2) of each hunk, from its pieces' data attributes, in the page's order."""
        seen = {}
        for piece in self.pieces:
            (i1, i2), (j1, j2) = (map(int, piece[k].split("-")) for k in ("data-a", "data-b"))
            opcode = (piece["data-op"], i1, i2, j1, j2)
            assert seen.setdefault(piece["data-hunk"], opcode) == opcode, "a hunk's pieces disagree"
        return list(seen.values())


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    written = build_diff_pages(out, ROOT)
    assert sorted(written) == sorted(out / "diffs" / page_name(a, b) for a, b in NEIGHBOURS)
    return out


@pytest.fixture(scope="module")
def pages(site) -> dict[tuple[str, str], Page]:
    return {(a, b): Page((site / "diffs" / page_name(a, b)).read_text(encoding="utf-8")) for a, b in NEIGHBOURS}


def lines_of(script: str) -> list[str]:
    return (ROOT / script).read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("pair", list(NEIGHBOURS), ids=lambda p: f"{p[0][4:-3]}--{p[1][4:-3]}")
def test_each_pages_hunks_are_difflibs_opcodes(pages, pair):
    a, b = pair
    page = pages[pair]
    expected = [op for op in opcodes(lines_of(a), lines_of(b)) if op[0] != "equal"]
    assert page.hunks() == expected
    # and the changed lines the pieces show are exactly the opcodes' lines, each once
    shown: dict[str, list[int]] = {}
    for piece in page.pieces:
        shown.setdefault(piece["data-hunk"], []).extend(
            (0 if href.startswith(f"../lessons/{Path(a).stem}.html") else 1, int(href.rsplit("#L", 1)[1]))
            for href in piece["_lines"])
    for number, (tag, i1, i2, j1, j2) in enumerate(expected, start=1):
        want = [(0, n) for n in range(i1 + 1, i2 + 1)] + [(1, n) for n in range(j1 + 1, j2 + 1)]
        assert sorted(shown[str(number)]) == want, f"hunk {number}"


def test_prose_only_changes_are_told_apart_and_the_switch_hides_them(tmp_path: Path):
    (tmp_path / "ppo_a.py").write_text(A)
    (tmp_path / "ppo_b.py").write_text(B)
    diff = diff_files(tmp_path / "ppo_a.py", tmp_path / "ppo_b.py")
    kinds = {}
    for hunk in diff.hunks:
        changed = "\n".join(diff.text_b[j] for j in range(hunk.j1, hunk.j2))
        kinds[changed.strip()] = hunk.kind
    assert kinds['"""the seed: runs with one seed repeat"""'] == "prose"  # an Args field's help text
    assert kinds["# say hello to the reader"] == "prose"  # a comment
    assert kinds['print(greeting)  # to stdout'] == "prose"  # a trailing comment
    assert kinds["x = 2"] == "code"
    assert list(kinds.values()).count("copied") == 1

    page = render_pair(diff)
    parsed = Page(page)
    prose = [p for p in parsed.pieces if "prose-only" in p["class"].split()]
    code = [p for p in parsed.pieces if "prose-only" not in p["class"].split()]
    assert len(prose) == 3 and len(code) == 2
    # the switch: a checkbox before the diff, both children of <main>, and the stylesheet's rule that hides them
    assert parsed.order == ["switch", "diff"]
    css = (STATIC / "diff.css").read_text()
    assert re.search(r"input\.hide-prose:checked ~ \.diff \.prose-only \{ display: none; \}", css)
    assert '<input type="checkbox" id="hide-prose" class="hide-prose" checked>' in page  # hidden by default


def test_a_change_that_mixes_prose_and_code_is_code(tmp_path: Path):
    (tmp_path / "ppo_a.py").write_text(A)
    (tmp_path / "ppo_b.py").write_text(A.replace('    # say hello\n    greeting = "hello"',
                                                 '    # greet\n    greeting = "hi"'))
    diff = diff_files(tmp_path / "ppo_a.py", tmp_path / "ppo_b.py")
    assert [h.kind for h in diff.hunks] == ["code"]
    assert '<span class="rd rp">' in render_pair(diff)  # its comment line marked as prose


def terminal_rows(text: str):
    """(mark, a line, b line) of every printed diff line; headers, folds and the summary apart."""
    rows, headers, folds = [], [], []
    for line in text.splitlines():
        if line.startswith("@@ "):
            headers.append(line)
        elif line.startswith("~ "):
            folds.append(line)
        elif line[:1] in "-+ " and len(line) > 13 and line[1] == " " and not line.startswith(("--- ", "+++ ")):
            rows.append((line[0], line[2:7].strip(), line[8:13].strip()))
    return rows, headers, folds


def test_terminal_diff_with_prose_hidden_holds_no_prose_only_hunk(tmp_path: Path, capsys):
    (tmp_path / "ppo_a.py").write_text(A)
    (tmp_path / "ppo_b.py").write_text(B)
    assert main([str(tmp_path / "ppo_a.py"), str(tmp_path / "ppo_b.py"), "--no-color"]) == 0
    shown = capsys.readouterr().out
    assert "# say hello to the reader" in shown and "the seed: runs with one seed" in shown
    assert main([str(tmp_path / "ppo_a.py"), str(tmp_path / "ppo_b.py"), "--hide-prose", "--no-color"]) == 0
    hidden = capsys.readouterr().out
    assert "say hello" not in hidden and "the seed" not in hidden and "to stdout" not in hidden
    assert "x = 2" in hidden

    for a, b in list(NEIGHBOURS)[:2]:
        diff = diff_files(ROOT / a, ROOT / b)
        _, with_prose, _ = terminal_rows(format_diff(diff))
        rows, headers, _ = terminal_rows(format_diff(diff, hide_prose=True))
        assert any(h.endswith("prose-only") for h in with_prose)
        assert headers and not any(h.endswith("prose-only") for h in headers)
        prose_lines = {("-", str(n), "") for p in diff.pieces if p.prose_only for n in p.a_lines} | \
                      {("+", "", str(n)) for p in diff.pieces if p.prose_only for n in p.b_lines}
        assert prose_lines and not prose_lines & set(rows)


def test_terminal_diff_folds_each_copied_block_to_a_line(tmp_path: Path, capsys):
    (tmp_path / "ppo_a.py").write_text(A)
    (tmp_path / "ppo_b.py").write_text(B)
    assert main([str(tmp_path / "ppo_a.py"), str(tmp_path / "ppo_b.py"), "--no-color"]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("~ ")] == [
        "~ copied block common.helpers.helper (from common/helpers.py): 3 lines added  [#5; ppo_b.py 23-25]"]
    assert '"copied"' not in out
    assert out.splitlines()[-1] == "hunks: 5 (code 1, prose-only 3, copied 1); copied blocks folded: 1"

    a, b = "ppo_lunarlander_vec.py", "ppo_breakout_atari.py"
    diff = diff_files(ROOT / a, ROOT / b)
    rows, _, folds = terminal_rows(format_diff(diff))
    assert len(folds) == len(diff.folds) >= 20  # the Atari wrappers, the torchrun blocks, ...
    assert any(re.match(r"~ copied block common\.wrappers\.NoopReset \(from common/wrappers\.py\): \d+ lines added", f)
               for f in folds)
    folded = {("-", str(n), "") for f in diff.folds for p in f.pieces for n in p.a_lines} | \
             {("+", "", str(n)) for f in diff.folds for p in f.pieces for n in p.b_lines}
    assert not folded & set(rows)
    # the page folds the same blocks: a <details> each, its summary the terminal's line
    page = Page(render_pair(diff))
    assert [" ".join(f["_summary"].split()) for f in page.folds] == \
        [f.summary for f in diff.folds]
    assert all(p["_fold"] is not None for p in page.pieces if "copied" in p["class"].split())


def test_terminal_names_and_bad_input(capsys):
    assert main(["cartpole", "lunarlander", "--no-color", "--context", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("--- ppo_cartpole.py\n+++ ppo_lunarlander_vec.py\n")
    for argv in (["cartpole", "nope"], ["cartpole"], ["cartpole", "lunarlander", "--neighbours"]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("python -m render.diff: "), err


def test_every_link_and_anchor_on_the_pages_resolves(pages):
    sizes = {script: len(lines_of(script)) for script in SCRIPTS}
    for pair, page in pages.items():
        assert len(page.ids) == len(set(page.ids)), f"{pair}: an id twice"
        ids = set(page.ids)
        for href in page.hrefs:
            lesson = re.fullmatch(r"\.\./lessons/((?:gr|p)po_\w+)\.html(?:#L(\d+))?", href)
            if href.startswith("#"):
                assert href[1:] in ids, f"{pair}: {href}"
            elif lesson:
                assert f"{lesson.group(1)}.py" in sizes, href
                if lesson.group(2):
                    assert 1 <= int(lesson.group(2)) <= sizes[f"{lesson.group(1)}.py"], href
            elif href.startswith("../raw/"):
                assert href[len("../raw/"):] in SCRIPTS, href
            elif href.startswith("../assets/"):
                assert href == "../assets/style.css" or (STATIC / href[len("../assets/"):]).is_file(), href
            else:
                assert href == "../index.html" or re.match(r"https://", href), f"{pair}: {href}"


def test_readmes_items_name_every_code_hunk_and_link_to_each(pages):
    """Every code hunk (each piece of it) of a neighbour diff is named by one of README's items for the pair
    (render.diffs.item_pieces: a backticked word it defines, lies in, is the flag of or is in the code of), and each
    item links to every piece it names: a reader of the list sees the whole diff, a reader of the diff why."""
    readme = readme_pairs((ROOT / "README.md").read_text(encoding="utf-8"))
    for pair, page in pages.items():
        assert len(page.items) == len(readme[pair].items) >= 4, pair
        diff = diff_files(ROOT / pair[0], ROOT / pair[1])
        unnamed = unnamed_pieces(diff, readme[pair])
        assert not unnamed, f"{pair}: code no README item names: " + "; ".join(
            f"#{p.anchor} {' | '.join(diff.code(s)[n] for s in 'ab' for n in p.lines(s) if n in diff.code(s))[:120]}"
            for p in unnamed)
        ids = {p["id"] for p in page.pieces if "id" in p}
        for links, item in zip(page.items, readme[pair].items):
            assert [link[1:] for link in links] == [p.anchor for p in item_pieces(diff, item)] or len(links) == 1, item
            assert links and all(link[1:] in ids for link in links), item
        linked = {link[1:] for links in page.items for link in links}
        assert {p.anchor for p in diff.pieces if not p.prose_only} <= linked, pair


def test_index_entries_and_page_sizes(site):
    entries = pair_pages()
    assert [(a, b) for a, b, _ in entries] == list(NEIGHBOURS)
    assert entries[0][2] == "diffs/ppo_cartpole--ppo_lunarlander_vec.html"
    for a, b, href in entries:
        size = (site / href).stat().st_size + (STATIC / "diff.css").stat().st_size
        assert size < 1_000_000, href  # the site's bound is 1.5 MB with every asset


def test_pages_are_deterministic(site):
    a, b = next(iter(NEIGHBOURS))
    again = render_pair(diff_files(ROOT / a, ROOT / b), readme_pairs((ROOT / "README.md").read_text())[a, b])
    assert again == (site / "diffs" / page_name(a, b)).read_text(encoding="utf-8")
