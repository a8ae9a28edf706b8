"""tools/diff_matrix.py: changed lines counted by hand on small files, copied blocks (tools.check_copies') set
apart, and the repository's neighbouring pairs (course/lessons.py) within their bounds."""

import shutil
from pathlib import Path

import pytest

from tools.diff_matrix import Count, code_lines, count_changes, gnu_diff_count, main, marked, matrix
from course.lessons import NEIGHBOURS
from conftest import ROOT

A = '''import os


# Copied from common.wrappers.Thing
class Thing:
    def f(self):
        return 1


def main():
    print("a")
    return 0
'''
# B: one line changed inside the copied block, one changed and one added outside it.
B = A.replace("return 1", "return 2").replace('print("a")', 'print("b")\n    print("more")')


def test_changed_lines_by_hand(tmp_path: Path):
    a, b = tmp_path / "ppo_a.py", tmp_path / "ppo_b.py"
    a.write_text(A)
    b.write_text(B)
    # inside: "return 1" removed, "return 2" added; outside: print("a") removed, print("b") and print("more") added
    # all three outside lines are code
    assert count_changes(a, b) == Count(outside=3, inside=2, code=3)
    assert count_changes(a, a) == Count(0, 0, 0)
    scripts, counts = matrix(tmp_path)
    assert scripts == ["ppo_a.py", "ppo_b.py"] and counts == {("ppo_a.py", "ppo_b.py"): Count(3, 2, 3)}


PROSE = '''"""Module docstring,
two lines."""
import os  # a trailing comment

# a comment line


class Args:
    """class docstring"""

    lr: float = 0.1
    """help text of a field,
    over two lines"""


def f(x):
    """function docstring"""
    s = """a string assigned is code"""
    return x  # why
'''


def test_code_lines_drop_docstrings_comments_and_blank_lines():
    assert code_lines(PROSE) == [
        (3, "import os"), (8, "class Args:"), (11, "    lr: float = 0.1"), (16, "def f(x):"),
        (18, '    s = """a string assigned is code"""'), (19, "    return x"),
    ]


def test_prose_changes_count_outside_but_not_as_code(tmp_path: Path):
    a, b = tmp_path / "ppo_a.py", tmp_path / "ppo_b.py"
    a.write_text(PROSE)
    # the module docstring, a comment, a field's help and a trailing comment reworded; one code line changed
    b.write_text(PROSE.replace("two lines", "2 lines").replace("# a comment line", "# another comment")
                 .replace("over two lines", "over 2 lines").replace("return x  # why", "return x + 1  # why"))
    assert count_changes(a, b) == Count(outside=8, inside=0, code=2)


def test_neighbouring_pairs_stay_within_their_bounds(capsys):
    assert main(["--check"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    for a, b in NEIGHBOURS:
        assert f"{a} -> {b}: " in out
    _, counts = matrix(ROOT)
    for (a, b), bound in NEIGHBOURS.items():
        assert counts[tuple(sorted((a, b)))].code <= bound, (a, b)


def test_check_fails_when_a_pair_grows_past_its_bound(monkeypatch, capsys):
    monkeypatch.setitem(NEIGHBOURS, ("ppo_cartpole.py", "ppo_lunarlander_vec.py"), 10)
    assert main(["--check"]) == 1
    assert "OVER ITS BOUND 10" in capsys.readouterr().out


def test_readme_shows_todays_matrix_and_pair_counts():
    """CONTRIBUTING.md's matrix is the one the scripts give now (rewrite it with `python -m tools.diff_matrix
    --write`), and each neighbouring pair's heading in README quotes its counts."""
    import re

    from tools.diff_matrix import BEGIN, END, markdown

    readme = (ROOT / "README.md").read_text()
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    scripts, counts = matrix(ROOT)
    assert contributing[contributing.index(BEGIN) + len(BEGIN):contributing.index(END)].strip() == markdown(scripts, counts)
    for a, b in NEIGHBOURS:
        count = counts[tuple(sorted((a, b)))]
        heading = re.search(rf"\*\*`{re.escape(a)}` -> `{re.escape(b)}`\*\* \((\d+) lines, (\d+) of code[^)]*?"
                            rf"`diff`: (\d+)\)", readme)
        assert heading, f"README has no heading for {a} -> {b} (with its counts and its `diff` count)"
        assert (int(heading[1]), int(heading[2])) == (count.outside, count.code), (a, b)
        if shutil.which("diff"):  # GNU diff's own count, quoted beside the matrix's
            assert int(heading[3]) == gnu_diff_count(ROOT / a, ROOT / b), (a, b)


def test_neighbours_are_the_pairs_the_docstrings_name():
    """Each lesson after the first names the lesson it differs from ("Differs from X in:"); the matrix's
    neighbouring pairs and README's per-pair lists walk exactly those diffs."""
    import re

    named = {}
    for script in sorted(path.name for glob in ("ppo_*.py", "grpo_*.py") for path in ROOT.glob(glob)):
        match = re.search(r"^Differs from (ppo_\w+\.py) in:", (ROOT / script).read_text(), re.MULTILINE)
        if match:
            named[script] = match.group(1)
    assert {b: a for a, b in NEIGHBOURS} == named
    readme = (ROOT / "README.md").read_text()
    for a, b in NEIGHBOURS:
        assert f"**`{a}` -> `{b}`**" in readme, (a, b)


def test_gnu_diff_count_counts_the_lines_diff_removes_and_adds(tmp_path: Path):
    if not shutil.which("diff"):
        pytest.skip("no diff on the PATH")
    (tmp_path / "a.py").write_text(A)
    (tmp_path / "b.py").write_text(B)
    # "return 1" -> "return 2" (1 removed, 1 added), 'print("a")' -> two lines (1 removed, 2 added)
    assert gnu_diff_count(tmp_path / "a.py", tmp_path / "b.py") == 5


def test_marked_reads_what_lies_between_a_pair_of_markers():
    text = "intro\n<!-- part:begin -->\nbody\n<!-- part:end -->\nrest\n"
    assert marked(text, "part") == "\nbody\n"
    assert marked(text, "other") is None and marked(text.replace("<!-- part:end -->", ""), "part") is None
