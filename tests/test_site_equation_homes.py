"""Where a lesson page typesets an equation that no prose cites (render.lesson.equation_homes): beside the first code
line that cites it, a trailing comment's or a help text's. Every lesson today also cites each of its equations in
prose, so tests/test_site.py never meets such a home; this builds the page of a small lesson written here."""

import pytest

from render.equations import EQUATIONS, typeset
from render.lesson import lesson_page
from render.source import read_lesson
from tests.site_pages import parse

# Eq. 12 is cited in trailing comments only (its first, on the delta line, is its home; the later one, in another
# row, links to the box), eq. 11 in a help text only, eq. 7 in a trailing comment first and in prose after it (prose
# comes first: its home is the prose).
LESSON = '''"""A lesson of a few lines: the TD error and a clipped ratio, for the site's equation boxes.

What this lesson teaches
    The one-step TD error of a transition, then a clipped probability ratio.
"""

from dataclasses import dataclass


@dataclass
class Hyperparameters:
    """The lesson's hyperparameters."""

    gamma: float = 0.99
    """gamma, the discount of future rewards"""
    gae_lambda: float = 0.95
    """lambda, the weight of the later TD errors in the advantage (eq. 11)"""


def td_error(reward, value, next_value, gamma):
    """The one-step TD error of a transition."""
    delta = reward + gamma * next_value - value  # delta_t, eq. 12
    return delta


def one_step_advantage(reward, value, next_value, gamma):
    """The advantage of GAE with lambda 0."""
    return td_error(reward, value, next_value, gamma)  # (eq. 12 again)


def clipped_ratio(ratio, epsilon):
    """The ratio held to [1 - epsilon, 1 + epsilon]."""
    low = 1 - epsilon  # eq. 7's lower bound
    # The clip of the paper's L^CLIP, eq. 7.
    return min(max(ratio, low), 1 + epsilon)
'''


def line_of(text: str) -> int:
    """The number of LESSON's one line that holds `text`."""
    (n,) = [n for n, line in enumerate(LESSON.splitlines(), start=1) if text in line]
    return n


def row_of(by_id: dict, n: int):
    """The row (its section) that holds line n's anchor."""
    node = by_id[f"L{n}"]
    while node.tag != "section":
        node = node.parent
    return node


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """LESSON as render.source reads it, and its page (render.lesson.lesson_page, as `python -m render` builds it)
    read back as a tree."""
    path = tmp_path_factory.mktemp("lesson") / "ppo_few_lines.py"
    path.write_text(LESSON, encoding="utf-8")
    lesson = read_lesson(path)
    out = path.with_suffix(".html")
    out.write_text(lesson_page(lesson, typeset(), []), encoding="utf-8")
    return lesson, parse(out)


@pytest.mark.parametrize("key, home, later", [("12", "# delta_t, eq. 12", "# (eq. 12 again)"),
                                              ("11", "(eq. 11)", None),
                                              ("7", "# The clip of the paper", "# eq. 7's lower bound")])
def test_an_equation_no_prose_cites_is_typeset_beside_its_first_code_line(built, key, home, later):
    """Eq. 12 (trailing comments only) and eq. 11 (a help text only) each typeset once, in the row of the first code
    line that cites it, that line's own span in the row's code; a later citation's row links to the box. Eq. 7,
    cited in a trailing comment before its prose, sits beside the prose, the trailing comment's row linking to it."""
    lesson, page = built
    by_id = {node.attrs["id"]: node for node in page.walk() if "id" in node.attrs}
    boxes = [box for box in page.find_all("figure", cls="eq") if box.attrs["data-eq"] == key]
    assert len(boxes) == 1, f"eq. {key} typeset {len(boxes)} times, not once"
    (box,) = boxes
    assert box.find_all(cls="katex") and box.find_all("figcaption")[0].text() == EQUATIONS[key].label
    n = line_of(home)
    row = row_of(by_id, n)
    assert box in row.find_all("figure", cls="eq"), f"eq. {key}'s box is not in the row of line {n}"
    if key == "7":
        assert n in lesson.prose, "eq. 7's home is its prose comment"
    else:  # a code line: its span in that row's code, not a note
        assert by_id[f"L{n}"] in row.find_all("span", cls="line")
    if later is not None:
        other = row_of(by_id, line_of(later))
        assert other is not row
        assert not other.find_all("figure", cls="eq")
        assert f"#eq-{key}" in {a.attrs["href"] for a in other.find_all("a", cls="eq-link")}

