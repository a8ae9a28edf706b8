"""README's implementation-details map is honest: every file and line it links exists and holds the identifier
shown beside the link, every detail has a cell for every script, and the table is the one the scripts give today
(tools/details_map.py --check)."""

import re

import pytest

from tools import details_map
from course.lessons import GYM_SCRIPTS as SCRIPTS  # (the map is of the Gymnasium lessons: tools.details_map)
from conftest import ROOT

LINK = re.compile(r"^\[(\d+)\]\((ppo_\w+\.py)#L(\d+)\) `(.+)`$")


def readme_rows() -> list[list[str]]:
    """The cells of README's details table, row by row (header and separator left out), read without
    tools.details_map: only the markers are shared."""
    readme = (ROOT / "README.md").read_text()
    begin = readme.index("<!-- details-map:begin -->")
    end = readme.index("<!-- details-map:end -->")
    lines = [line for line in readme[begin:end].splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in lines[2:]]


def test_every_link_points_at_a_line_holding_its_identifier():
    rows = readme_rows()
    # the 13 core details, the 9 Atari ones, the 9 continuous ones, then early stopping, adaptive KL, truncation, and
    # the two of issue 67's lessons: the recurrent policy and invalid-action masking
    groups = [row[0] for row in rows]
    assert groups.count("core") == 13 and groups.count("Atari") == 9 and groups.count("continuous") == 9
    assert [row[1] for row in rows if row[0] == "more"] == [
        "early stopping on a KL target", "adaptive KL penalty (paper eq. 8)", "truncation bootstrapping",
        "recurrent policy: LSTM state kept at the rollout's start, wiped at episode starts",
        "invalid-action masking (logits -inf, entropy over valid actions)"]
    links = 0
    for row in rows:
        assert len(row) == 2 + len(SCRIPTS) + 1, row  # the last: the ablation studies' column
        for script, cell in zip(SCRIPTS, row[2:-1]):
            assert cell, f"{row[1]}: empty cell for {script}"
            match = LINK.match(cell)
            if not match:  # a reason the script leaves the detail out: prose, no link
                assert "](" not in cell and "#L" not in cell, cell
                continue
            text_line, file, link_line, identifier = match.groups()
            assert file == script, f"{row[1]}: the {script} column links {file}"
            assert text_line == link_line
            lines = (ROOT / file).read_text().splitlines()
            assert 1 <= int(link_line) <= len(lines), cell
            assert identifier in lines[int(link_line) - 1], f"{file}:{link_line} does not contain {identifier!r}"
            links += 1
    assert links >= 60  # most details are in most scripts


def test_readme_table_is_current(capsys):
    assert details_map.main(["--check"]) == 0, capsys.readouterr().err


def test_stale_table_and_missing_needle_fail_with_one_line(tmp_path, monkeypatch, capsys):
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text().replace("#L", "#L1", 1))
    monkeypatch.setattr(details_map, "README", readme)
    assert details_map.main(["--check"]) == 1
    assert "out of date: run python -m tools.details_map --write" in capsys.readouterr().err
    assert details_map.main(["--write"]) == 0
    assert details_map.main(["--check"]) == 0

    group, detail, entries = details_map.DETAILS[0]
    broken = (group, detail, {**entries, details_map.LL: "def no_such_function"})
    monkeypatch.setattr(details_map, "DETAILS", [broken, *details_map.DETAILS[1:]])
    assert details_map.main([]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ppo_lunarlander_vec.py: no line contains 'def no_such_function' "
                   "(update tools/details_map.py's DETAILS)"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_locate_finds_the_first_line(script):
    lines = (ROOT / script).read_text().splitlines()
    line = details_map.locate(script, "def compute_gae")
    assert lines[line - 1].startswith("def compute_gae") and "def compute_gae" not in "\n".join(lines[:line - 1])


def code_lines(source: str) -> list[str]:
    """The lines of `source` with comments and docstrings (any string standing alone as a statement) blanked
    out: what is left is code, string literals inside it included."""
    import ast
    import io
    import tokenize

    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for row in range(node.lineno, node.end_lineno + 1):
                lines[row - 1] = ""
    return lines


def test_every_link_points_at_code_not_at_a_comment_or_docstring():
    """The first line holding the needle is the one linked: a comment or docstring that mentions it earlier
    than the code would take the link. Each linked line of the table the scripts give today (README's, once
    current: test_readme_table_is_current) must hold its identifier in code."""
    code = {script: code_lines((ROOT / script).read_text()) for script in SCRIPTS}
    lines = [line for line in details_map.table().splitlines()[2:]]
    linked = 0
    for row in [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in lines]:
        for cell in row[2:]:
            match = LINK.match(cell)
            if match:
                _, file, line, identifier = match.groups()
                assert identifier in code[file][int(line) - 1], \
                    f"{row[1]}: {file}#L{line} holds {identifier!r} only in a comment or docstring"
                linked += 1
    assert linked >= 60


def test_code_lines_blanks_comments_and_docstrings():
    source = 'def f():\n    """eps=1e-5 here is prose"""\n    x = "eps=1e-5"  # eps=1e-5\n    # eps=1e-5\n'
    assert [("eps=1e-5" in line) for line in code_lines(source)] == [False, False, True, False]
