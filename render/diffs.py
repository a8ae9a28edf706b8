"""The neighbour diffs: a page per pair of ``course.lessons.NEIGHBOURS``, and the model the terminal diff
(``python -m render.diff``) prints from.

The diff is difflib's, as ``tools.diff_matrix`` takes it: ``SequenceMatcher(None, a, b, autojunk=False)`` over the
two files' lines with trailing whitespace stripped. Every non-equal opcode is a *hunk*; hunks keep the files' own
line numbers. Within a replace, the lines are aligned one to one by similarity (so a changed line stands beside
the line it came from, its changed characters marked), and what is left over on either side stands beside
nothing.

A hunk is *prose-only* when its code is the same on both sides: the code as ``tools.diff_matrix.code_lines``
has it, without docstrings, help texts, comments and blank lines and with trailing comments cut. Otherwise it is
a code change (a code change's prose lines are marked as prose).

Copied blocks (``# Copied from common...`` and the definition below the marker) are the same code wherever they
appear, so the diff folds them: the changed lines that lie inside copied blocks on every side they have (a block
on one side only, or blocks that match each other across the diff) become one line, "copied block
common.ppo.compute_gae (from common/ppo.py): 3 lines changed", which opens to the full diff. Blocks match when
difflib pairs lines of one with lines of the other, or when they have the same target. A hunk that straddles a
block's edge is split into *pieces*, one per run of rows inside or outside the same blocks; the blank lines
between two blocks go with the block above them. Every piece carries its hunk's opcode, so the hunks read back
from a page are difflib's opcodes.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from tools.check_copies import CopiedBlock
from tools.diff_matrix import code_lines, marked
from course.lessons import NEIGHBOURS
from render.html import esc, page, pygments_css
from render.source import Lesson, read_lesson

CONTEXT = 3  # unchanged lines shown around a change; longer unchanged runs fold
SIMILAR = 0.6  # two lines of a replace stand side by side, characters marked, from this difflib ratio


# ---------------------------------------------------------------------------------------------------------
# The model: hunks, their pieces, the unchanged runs between them and the copied folds
# ---------------------------------------------------------------------------------------------------------
@dataclass
class Row:
    """One row of the side-by-side view: a line of a, of b, or both (line numbers 1-based)."""

    a: int | None
    b: int | None
    similar: bool = False  # a and b are alike: their changed characters are marked
    key: int | None = None  # the copied-block group the row lies in, None outside copied blocks


@dataclass
class Piece:
    """A run of a hunk's rows that lie inside the same copied blocks (key) or outside copied blocks (key None)."""

    hunk: "Hunk"
    part: int  # 1, 2, ... within the hunk
    rows: list[Row]
    key: int | None
    prose_only: bool = False

    @property
    def anchor(self) -> str:
        return f"h{self.hunk.number}" if self.part == 1 else f"h{self.hunk.number}-{self.part}"

    def lines(self, side: str) -> list[int]:
        """The piece's lines on side "a" or "b"."""
        return [getattr(r, side) for r in self.rows if getattr(r, side) is not None]

    a_lines = property(lambda self: self.lines("a"))
    b_lines = property(lambda self: self.lines("b"))

    def before(self, side: str) -> int:
        """The last line of that side ahead of this piece (0 at the file's start): where a piece with no lines
        on that side sits."""
        start = self.hunk.i1 if side == "a" else self.hunk.j1
        return max((n for p in self.hunk.pieces[:self.part - 1] for n in p.lines(side)), default=start)


@dataclass
class Hunk:
    """One non-equal opcode of difflib: tag, and a[i1:i2] -> b[j1:j2] (0-based, half open, as difflib has it)."""

    number: int  # 1, 2, ... in the diff
    tag: str
    i1: int
    i2: int
    j1: int
    j2: int
    prose_only: bool = False
    pieces: list[Piece] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """'copied' (every piece folded in a copied block), 'prose' (prose-only) or 'code'."""
        if all(p.key is not None for p in self.pieces):
            return "copied"
        return "prose" if self.prose_only else "code"


@dataclass
class Same:
    """An unchanged run: a[i1:i2] == b[j1:j2]."""

    i1: int
    i2: int
    j1: int
    j2: int

    def __len__(self) -> int:
        return self.i2 - self.i1


@dataclass
class Fold:
    """Copied blocks that differ, folded: their pieces and the unchanged runs between them."""

    key: int
    items: list  # Piece | Same
    blocks_a: list[CopiedBlock]
    blocks_b: list[CopiedBlock]
    number: int = 0

    @property
    def pieces(self) -> list[Piece]:
        return [item for item in self.items if isinstance(item, Piece)]

    @property
    def prose_only(self) -> bool:
        return all(p.prose_only for p in self.pieces)

    @property
    def title(self) -> str:
        """Which block, copied from where: one target, or 'a -> b' where the two sides hold different blocks."""
        def joined(blocks, attribute):
            return ", ".join(dict.fromkeys(getattr(c, attribute) for c in blocks))

        a, b = joined(self.blocks_a, "target"), joined(self.blocks_b, "target")
        ma, mb = joined(self.blocks_a, "module"), joined(self.blocks_b, "module")
        if not a or not b or a == b:
            return f"copied block {a or b} (from {ma or mb})"
        return f"copied block {a} -> {b} (from {ma if ma == mb else ma + ' -> ' + mb})"

    @property
    def change(self) -> str:
        def inside(side, blocks):
            return sum(1 for p in self.pieces for n in p.lines(side) if any(c.first <= n <= c.last for c in blocks))

        removed, added = inside("a", self.blocks_a), inside("b", self.blocks_b)
        if not added:
            return f"{removed} line{'s' * (removed != 1)} removed"
        if not removed:
            return f"{added} line{'s' * (added != 1)} added"
        return f"{removed + added} lines changed (-{removed} +{added})"

    @property
    def summary(self) -> str:
        return f"{self.title}: {self.change}" + (", prose only" if self.prose_only else "")


@dataclass
class PairDiff:
    a: Lesson
    b: Lesson
    hunks: list[Hunk]
    stream: list  # Same | Piece | Fold, in the files' order
    code_a: dict[int, str]  # line -> its code (tools.diff_matrix.code_lines); lines without code are absent
    code_b: dict[int, str]
    text_a: list[str]  # the lines as compared: trailing whitespace stripped
    text_b: list[str]

    @property
    def folds(self) -> list[Fold]:
        return [item for item in self.stream if isinstance(item, Fold)]

    @property
    def pieces(self) -> list[Piece]:
        return [p for h in self.hunks for p in h.pieces]

    def text(self, side: str) -> list[str]:
        return self.text_a if side == "a" else self.text_b

    def code(self, side: str) -> dict[int, str]:
        return self.code_a if side == "a" else self.code_b

    def prose(self, side: str, n: int) -> bool:
        """Whether line n of that side is prose: it has text but no code."""
        return n not in self.code(side) and bool(self.text(side)[n - 1].strip())

    def counts(self) -> dict[str, int]:
        kinds = [h.kind for h in self.hunks]
        return {"code": kinds.count("code"), "prose": kinds.count("prose"), "copied": kinds.count("copied"),
                "folds": len(self.folds)}


def opcodes(a_lines: list[str], b_lines: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes over the two files' lines, trailing whitespace stripped (as tools.diff_matrix)."""
    return difflib.SequenceMatcher(None, [t.rstrip() for t in a_lines], [t.rstrip() for t in b_lines],
                                   autojunk=False).get_opcodes()


def _groups(a: Lesson, b: Lesson, codes) -> tuple[dict[int, int], dict[int, int], dict[int, tuple[list, list]]]:
    """Copied blocks that match across the diff, grouped (union-find): line -> group on each side, and each group's
    blocks. Two blocks match when an equal opcode pairs a non-blank line of one with a line of the other, or when
    they have the same target. The line maps leave out the groups that are not folded (see below)."""
    sides = {"a": a.copies, "b": b.copies}
    parent = {(side, k): (side, k) for side, copies in sides.items() for k in range(len(copies))}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    block = {side: {n: k for k, c in enumerate(copies) for n in range(c.first, c.last + 1)}
             for side, copies in sides.items()}
    paired = [(n, m) for tag, i1, i2, j1, j2 in codes if tag == "equal"  # the non-blank lines difflib pairs
              for n, m in zip(range(i1 + 1, i2 + 1), range(j1 + 1, j2 + 1)) if a.lines[n - 1].strip()]
    links = [(block["a"][n], block["b"][m]) for n, m in paired if n in block["a"] and m in block["b"]]
    links += [(k, m) for k, c in enumerate(a.copies) for m, d in enumerate(b.copies) if c.target == d.target]
    for k, m in links:  # union
        parent[find(("a", k))] = find(("b", m))
    number = {root: g for g, root in enumerate(sorted({find(x) for x in parent}))}
    groups: dict[int, tuple[list, list]] = {g: ([], []) for g in number.values()}
    for side, k in sorted(parent, key=lambda x: sides[x[0]][x[1]].first):
        groups[number[find((side, k))]][0 if side == "a" else 1].append(sides[side][k])
    key = {side: {n: number[find((side, k))] for n, k in block[side].items()} for side in sides}
    # A block that difflib pairs with lines outside copied blocks of its group (a lesson's own version of the
    # function: cartpole's collect_rollout against the copy in lunarlander) is read, not folded.
    local = {k for n, m in paired if key["a"].get(n) != key["b"].get(m)
             for k in (key["a"].get(n), key["b"].get(m)) if k is not None}
    key_a, key_b = ({n: k for n, k in key[side].items() if k not in local} for side in sides)
    return key_a, key_b, groups


def _ratio(x: str, y: str) -> float:
    matcher = difflib.SequenceMatcher(None, x.strip(), y.strip(), autojunk=False)
    if matcher.real_quick_ratio() < SIMILAR or matcher.quick_ratio() < SIMILAR:
        return 0.0
    return matcher.ratio()


def _align(a_nums: list[int], b_nums: list[int], text_a, text_b, key_a, key_b) -> list[Row]:
    """The rows of a replace: a monotone pairing of similar lines (the pairing of greatest total similarity; a
    line of a folded copied block pairs only with a line of the same group), then what is left between two pairs
    set side by side where both sides lie in the same group (or both outside), and one-sided otherwise."""
    n, m = len(a_nums), len(b_nums)
    sim = [[0.0] * m for _ in range(n)]
    for i, x in enumerate(a_nums):
        for j, y in enumerate(b_nums):
            # a folded block's line pairs only inside its group, and two blank lines do not make a pair
            if key_a.get(x) == key_b.get(y) and (text_a[x - 1].strip() or text_b[y - 1].strip()):
                sim[i][j] = _ratio(text_a[x - 1], text_b[y - 1])
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            paired = best[i + 1][j + 1] + sim[i][j] if sim[i][j] >= SIMILAR else 0.0
            best[i][j] = max(best[i + 1][j], best[i][j + 1], paired)
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if sim[i][j] >= SIMILAR and best[i][j] == best[i + 1][j + 1] + sim[i][j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    rows: list[Row] = []
    i = j = 0
    for pi, pj in pairs + [(n, m)]:
        rows += _gap(a_nums[i:pi], b_nums[j:pj], key_a, key_b)
        if pi < n:
            rows.append(Row(a_nums[pi], b_nums[pj], similar=True))
        i, j = pi + 1, pj + 1
    return rows


def _gap(a_nums: list[int], b_nums: list[int], key_a, key_b) -> list[Row]:
    """Lines left between two pairs: side by side where their groups agree, one-sided where they do not."""
    keys = difflib.SequenceMatcher(None, [key_a.get(x) for x in a_nums], [key_b.get(y) for y in b_nums], autojunk=False)
    rows = []
    for tag, i1, i2, j1, j2 in keys.get_opcodes():
        if tag == "equal":
            rows += [Row(x, y) for x, y in zip(a_nums[i1:i2], b_nums[j1:j2])]
        else:
            rows += [Row(x, None) for x in a_nums[i1:i2]] + [Row(None, y) for y in b_nums[j1:j2]]
    return rows


def _row_keys(rows: list[Row], text_a, text_b, key_a, key_b) -> None:
    """Each row's group: the copied-block group all its lines lie in, else None. Blank rows outside copied blocks
    next to a copied run join it (the blank lines below a block go with it, or with the block below when none is
    above)."""
    for row in rows:
        keys = {key.get(n) for key, n in ((key_a, row.a), (key_b, row.b)) if n is not None}
        row.key = keys.pop() if len(keys) == 1 else None

    def blank(row):
        return all(not t[n - 1].strip() for t, n in ((text_a, row.a), (text_b, row.b)) if n is not None)

    loose = [row.key is None and blank(row) for row in rows]  # blank rows outside copied blocks
    for k, row in enumerate(rows):
        if loose[k]:  # the keys of the rows on either side of its run of loose rows
            before = next((rows[i].key for i in range(k - 1, -1, -1) if not loose[i]), None)
            after = next((rows[i].key for i in range(k + 1, len(rows)) if not loose[i]), None)
            row.key = before if before is not None else after


def _code_equal(a_lines, b_lines, code_a, code_b) -> bool:
    return [code_a[n] for n in a_lines if n in code_a] == [code_b[n] for n in b_lines if n in code_b]


def diff_lessons(a: Lesson, b: Lesson) -> PairDiff:
    """The whole diff of two lessons: hunks (difflib's opcodes), pieces, unchanged runs and copied folds."""
    text_a, text_b = ([t.rstrip() for t in lesson.lines] for lesson in (a, b))
    code_a, code_b = (dict(code_lines("\n".join(lesson.lines) + "\n")) for lesson in (a, b))
    codes = opcodes(a.lines, b.lines)
    key_a, key_b, groups = _groups(a, b, codes)
    hunks, stream = [], []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal":
            stream.append(Same(i1, i2, j1, j2))
            continue
        hunk = Hunk(len(hunks) + 1, tag, i1, i2, j1, j2)
        a_nums, b_nums = list(range(i1 + 1, i2 + 1)), list(range(j1 + 1, j2 + 1))
        rows = _align(a_nums, b_nums, text_a, text_b, key_a, key_b)  # (one-sided rows for an insert or a delete)
        _row_keys(rows, text_a, text_b, key_a, key_b)
        hunk.prose_only = _code_equal(a_nums, b_nums, code_a, code_b)
        for row in rows:
            if not hunk.pieces or hunk.pieces[-1].key != row.key:
                hunk.pieces.append(Piece(hunk, len(hunk.pieces) + 1, [], row.key))
            hunk.pieces[-1].rows.append(row)
        for piece in hunk.pieces:
            piece.prose_only = hunk.prose_only or _code_equal(piece.a_lines, piece.b_lines, code_a, code_b)
        hunks.append(hunk)
        stream += hunk.pieces
    return PairDiff(a, b, hunks, _fold(stream, groups), code_a, code_b, text_a, text_b)


def _fold(stream: list, groups) -> list:
    """The copied pieces gathered into folds: consecutive pieces of the same group, with the unchanged runs
    between them."""
    out, number = [], 0
    for item in stream:
        if not (isinstance(item, Piece) and item.key is not None):
            out.append(item)
        elif out and isinstance(out[-1], Fold) and out[-1].key == item.key:
            out[-1].items.append(item)
        elif len(out) > 1 and isinstance(out[-1], Same) and isinstance(out[-2], Fold) and out[-2].key == item.key:
            out[-2].items += [out.pop(), item]
        else:
            number += 1
            out.append(Fold(item.key, [item], *groups[item.key], number))
    return out


def diff_files(a: Path, b: Path) -> PairDiff:
    return diff_lessons(read_lesson(a), read_lesson(b))


# ---------------------------------------------------------------------------------------------------------
# Changed characters within a line, and Pygments' highlighting line by line
# ---------------------------------------------------------------------------------------------------------
def char_changes(x: str, y: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The changed character spans of two alike lines, (start, end) on each side; changes separated by fewer than
    three unchanged characters merge, so a word that changed is marked whole rather than letter by letter."""
    spans_a, spans_b = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, x, y, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for spans, s, e in ((spans_a, i1, i2), (spans_b, j1, j2)):
            if e == s:
                continue
            if spans and s - spans[-1][1] < 3:
                spans[-1] = (spans[-1][0], e)
            else:
                spans.append((s, e))
    return spans_a, spans_b


# Pygments' short classes that its default style colours (only those get a span: smaller pages)
_STYLED = frozenset(re.findall(r"^\.hl \.(\w+) \{", pygments_css(), re.M)) - {"hll", "w"}


def highlight_lines(lines: list[str]) -> list[list[tuple[str, str]]]:
    """Each line as (short Pygments class or '', text) fragments: Python lexed as one file, so that a docstring's
    middle lines are strings too."""
    from pygments.lexers import PythonLexer
    from pygments.token import STANDARD_TYPES

    out: list[list[tuple[str, str]]] = [[]]
    for ttype, value in PythonLexer(stripnl=False, ensurenl=True).get_tokens("\n".join(lines) + "\n"):
        while ttype not in STANDARD_TYPES:
            ttype = ttype.parent
        cls = STANDARD_TYPES[ttype]
        cls = cls if cls in _STYLED else ""
        for k, part in enumerate(value.split("\n")):
            if k:
                out.append([])
            if part:
                line = out[-1]
                if line and line[-1][0] == cls:
                    line[-1] = (cls, line[-1][1] + part)
                else:
                    line.append((cls, part))
    return out[:len(lines)] + [[] for _ in range(len(lines) - len(out))]


def line_html(fragments: list[tuple[str, str]], marks: list[tuple[int, int]], tag: str) -> str:
    """A line's HTML: its highlighted fragments, the characters in `marks` wrapped in <tag> (del or ins)."""
    cuts = sorted({p for span in marks for p in span})
    out, pos = [], 0
    for cls, text in fragments:
        end = pos + len(text)
        inner, start = [], pos
        for cut in [c for c in cuts if pos < c < end] + [end]:
            chunk = esc(text[start - pos:cut - pos])
            if chunk:
                marked = any(s <= start < e for s, e in marks)
                inner.append(f"<{tag}>{chunk}</{tag}>" if marked else chunk)
            start = cut
        body = "".join(inner)
        out.append(f'<span class="{cls}">{body}</span>' if cls else body)
        pos = end
    return "".join(out).replace(f"</{tag}><{tag}>", "")


# ---------------------------------------------------------------------------------------------------------
# README's list for a pair, each item linked to the hunk it describes
# ---------------------------------------------------------------------------------------------------------
@dataclass
class ReadmePair:
    heading: str  # the paragraph's markdown, "**`a` -> `b`** (...): what the variant brings."
    items: list[str]  # each bullet's markdown, continuation lines joined


def readme_pairs(readme: str) -> dict[tuple[str, str], ReadmePair]:
    """README's list for each pair: what lies between its ``<!-- pairs:begin -->`` and ``<!-- pairs:end -->``."""
    found: dict[tuple[str, str], ReadmePair] = {}
    current = None
    for line in (marked(readme, "pairs") or "").splitlines():
        head = re.match(r"^\*\*`((?:gr|p)po_\w+\.py)` -> `((?:gr|p)po_\w+\.py)`\*\*", line)
        if head:
            current = found[head.group(1), head.group(2)] = ReadmePair(line, [])
        elif current is None:
            continue
        elif line.startswith("- "):
            current.items.append(line[2:])
        elif line.startswith("  ") and current.items:
            current.items[-1] += " " + line.strip()
        elif line.strip() and not current.items:
            current.heading += " " + line.strip()
        else:
            current = None
    return found


def _defs(source: str) -> dict[str, list[tuple[int, int]]]:
    """name -> (first, last) lines of every def and class of a file (decorators included)."""
    found: dict[str, list[tuple[int, int]]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            found.setdefault(node.name, []).append((first, node.end_lineno))
    return found


def _tokens(item: str) -> list[str]:
    """The backticked words of an item, as they may appear in code: `cnn()` -> cnn, `--objective kl` ->
    --objective."""
    tokens = [raw.strip() for raw in re.findall(r"`([^`]+)`", item)]
    tokens = [re.sub(r"\(\)$", "", token.split()[0] if token.startswith("--") else token) for token in tokens]
    return list(dict.fromkeys(token for token in tokens if token))


def _namers(diff: PairDiff):
    """The tests by which an item's backticked word names a piece of the diff, in the order item_target tries them,
    and the piece's lines, as (side, line, its text, its code):
    1. defines: a changed line defines it (`def name`, `class name`);
    2. inside: a changed line of code lies in its definition (in b, else in a);
    3. flag: a `--flag`'s field (`flag_name: ...`) is a changed line;
    4. in_code: the word is in a changed line's code;
    5. anywhere: the word is in a changed line (prose too)."""
    defs = {"a": _defs("\n".join(diff.a.lines)), "b": _defs("\n".join(diff.b.lines))}

    def lines(piece):
        return [(s, n, diff.text(s)[n - 1], diff.code(s).get(n, "")) for s in "ab" for n in piece.lines(s)]

    def word(token):
        left = r"\b" if re.match(r"\w", token) else ""
        right = r"\b" if re.search(r"\w$", token) else ""
        return re.compile(left + re.escape(token) + right)

    def defines(token, piece):
        pattern = re.compile(r"^\s*(async\s+)?(def|class)\s+" + re.escape(token) + r"\b")
        return any(pattern.match(text) for _, _, text, _ in lines(piece))

    def inside(token, piece):
        return not piece.prose_only and any(first <= n <= last and code for s, n, _, code in lines(piece)
                                            for first, last in defs[s].get(token, []))

    def flag(token, piece):
        pattern = r"^\s*" + re.escape(token[2:].replace("-", "_")) + r"\s*:"
        return token.startswith("--") and any(re.match(pattern, code) for _, _, _, code in lines(piece))

    def in_code(token, piece):
        return not piece.prose_only and any(word(token).search(code) for _, _, _, code in lines(piece))

    def anywhere(token, piece):
        return any(word(token).search(text) for _, _, text, _ in lines(piece))

    return (defines, inside, flag, in_code, anywhere), lines


def _default_number(number: str, piece: Piece, lines) -> bool:
    """Whether `number` is the changed default of a field (`name: type = number`) in the piece's b side."""
    pattern = re.compile(r"^\s*\w+\s*:[^=]*=\s*" + re.escape(number) + r"\b")
    return any(s == "b" and pattern.match(code) for s, _, _, code in lines(piece))


NUMBER = r"(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.])"


def item_target(diff: PairDiff, item: str) -> Piece | None:
    """The piece an item describes: the first piece, in the diff's order, that the first of _namers' tests finds
    for any of the item's backticked words (tests in turn, words in turn within a test); for an item whose words
    match nothing, a number of the item that is an Args field's changed default."""
    tokens = _tokens(item)
    tests, lines = _namers(diff)
    for test in tests:  # the first piece a test finds, words in turn
        found = next((piece for token in tokens for piece in diff.pieces if test(token, piece)), None)
        if found is not None:
            return found
    for number in re.findall(NUMBER, item):
        found = next((piece for piece in diff.pieces if _default_number(number, piece, lines)), None)
        if found is not None:
            return found
    return None


def item_pieces(diff: PairDiff, item: str) -> list[Piece]:
    """Every code piece (not prose-only) an item names, in the diff's order: one that a backticked word of it
    defines, lies inside, is the flag of, or is in the code of (_namers' tests 1-4), or whose changed field default
    is a number of the item."""
    tokens = _tokens(item)
    tests, lines = _namers(diff)
    numbers = re.findall(NUMBER, item)
    return [piece for piece in diff.pieces if not piece.prose_only and (
        any(test(token, piece) for test in tests[:4] for token in tokens)
        or any(_default_number(number, piece, lines) for number in numbers))]


def unnamed_pieces(diff: PairDiff, pair: ReadmePair | None) -> list[Piece]:
    """The code pieces that no item of README's list for the pair names (item_pieces): what the list leaves out."""
    named = {id(piece) for item in (pair.items if pair else []) for piece in item_pieces(diff, item)}
    return [piece for piece in diff.pieces if not piece.prose_only and id(piece) not in named]


# ---------------------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------------------
def page_name(a: str, b: str) -> str:
    return f"{Path(a).stem}--{Path(b).stem}.html"


def pair_pages() -> list[tuple[str, str, str]]:
    """(from script, to script, href from the site's root) of every neighbour pair's page."""
    return [(a, b, f"diffs/{page_name(a, b)}") for a, b in NEIGHBOURS]


PAD = '<span class="rx"> </span>'  # the side of a row that has no line


class _Html:
    """The HTML of one pair's diff; lesson links go to ../lessons/<stem>.html#L<n>."""

    def __init__(self, diff: PairDiff):
        self.diff = diff
        self.lesson = {"a": diff.a, "b": diff.b}
        self.hl = {side: highlight_lines(lesson.lines) for side, lesson in self.lesson.items()}

    def link(self, side: str, n: int, text: str | None = None, cls: str = "") -> str:
        c = f' class="{cls}"' if cls else ""
        return f'<a{c} href="../lessons/{self.lesson[side].path.stem}.html#L{n}">{text if text is not None else n}</a>'

    def line(self, side: str, n: int, cls: str, marks=()) -> str:
        prose = " rp" if cls in ("rd", "ri") and self.diff.prose(side, n) else ""
        body = line_html(self.hl[side][n - 1], list(marks), "del" if side == "a" else "ins")
        return f'<span class="{cls}{prose}">{self.link(side, n, cls="ln")}{body}</span>'

    @staticmethod
    def sbs(left: list[str], right: list[str]) -> str:
        return (f'<div class="sbs"><pre class="side hl">{"".join(left)}</pre>'
                f'<pre class="side hl">{"".join(right)}</pre></div>')

    def rows(self, rows: list[Row]) -> str:
        left, right = [], []
        for row in rows:
            marks_a, marks_b = (char_changes(self.diff.text_a[row.a - 1], self.diff.text_b[row.b - 1])
                                if row.similar else ((), ()))
            left.append(self.line("a", row.a, "rd" if row.similar or row.b is None else "rd ru", marks_a)
                        if row.a is not None else PAD)
            right.append(self.line("b", row.b, "ri" if row.similar or row.a is None else "ri ru", marks_b)
                         if row.b is not None else PAD)
        return self.sbs(left, right)

    def same_rows(self, i1: int, i2: int, j1: int, j2: int) -> str:
        return self.sbs([self.line("a", n, "rc") for n in range(i1 + 1, i2 + 1)],
                        [self.line("b", n, "rc") for n in range(j1 + 1, j2 + 1)])

    def span(self, side: str, nums: list[int], at: int) -> str:
        """A piece's lines on one side, linked; for a side that has none, the line they would follow."""
        name = self.lesson[side].name
        if nums:
            first, last = nums[0], nums[-1]
            label = f"{first}" if first == last else f"{first}-{last}"
            return f"{esc(name)} {self.link(side, first, label)}"
        total = len(self.diff.text(side))
        if at == 0:
            return f"{esc(name)}: none (before {self.link(side, 1, 'line 1')})" if total else f"{esc(name)}: none"
        return f"{esc(name)}: none (after {self.link(side, at, f'line {at}')})"

    def piece(self, piece: Piece) -> str:
        h = piece.hunk
        kind = "copied" if piece.key is not None else ("prose" if piece.prose_only else "code")
        label = {"copied": "in a copied block", "prose": "prose only", "code": "code"}[kind]
        if kind == "code" and any(self.diff.prose(side, n) for side in "ab" for n in piece.lines(side)):
            label = "code (prose lines marked)"
        part = f", part {piece.part} of {len(h.pieces)}" if len(h.pieces) > 1 else ""
        classes = "hunk " + kind + (" prose-only" if piece.prose_only else "")
        head = (f'<div class="hh"><a class="hn" href="#{piece.anchor}">#{h.number}{part}</a> '
                f'<span class="kind">{label}</span> <span class="where">'
                f'{self.span("a", piece.a_lines, piece.before("a"))} &rarr; '
                f'{self.span("b", piece.b_lines, piece.before("b"))}</span></div>')
        return (f'<section class="{classes}" id="{piece.anchor}" data-hunk="{h.number}" data-op="{h.tag}" '
                f'data-a="{h.i1}-{h.i2}" data-b="{h.j1}-{h.j2}" data-part="{piece.part}/{len(h.pieces)}">'
                f'{head}{self.rows(piece.rows)}</section>')

    def same(self, same: Same, before: bool, after: bool) -> str:
        """An unchanged run: CONTEXT lines next to each change shown, the rest folded."""
        head, tail = CONTEXT * before, CONTEXT * after
        if len(same) <= head + tail + 2:
            return f'<div class="same">{self.same_rows(same.i1, same.i2, same.j1, same.j2)}</div>'
        parts = []
        if head:
            parts.append(self.same_rows(same.i1, same.i1 + head, same.j1, same.j1 + head))
        i1, i2, j1, j2 = same.i1 + head, same.i2 - tail, same.j1 + head, same.j2 - tail
        parts.append(f'<details class="fold"><summary>{i2 - i1} unchanged lines ({esc(self.diff.a.name)} '
                     f'{i1 + 1}-{i2}, {esc(self.diff.b.name)} {j1 + 1}-{j2})</summary>'
                     f'{self.same_rows(i1, i2, j1, j2)}</details>')
        if tail:
            parts.append(self.same_rows(same.i2 - tail, same.i2, same.j2 - tail, same.j2))
        return f'<div class="same">{"".join(parts)}</div>'

    def fold(self, fold: Fold) -> str:
        where = [f"{esc(lesson.name)} {self.link(side, c.first, f'{c.first}-{c.last}')}: {esc(c.target)}"
                 for side, lesson, blocks in (("a", self.diff.a, fold.blocks_a), ("b", self.diff.b, fold.blocks_b))
                 for c in blocks]
        body = self.items(fold.items)
        classes = "copied" + (" prose-only" if fold.prose_only else "")
        hunks = sorted({p.hunk.number for p in fold.pieces})
        return (f'<details class="{classes}" id="c{fold.number}"><summary>{esc(fold.summary)}'
                f' <span class="hs">(hunk{"s" * (len(hunks) > 1)} {", ".join(f"#{h}" for h in hunks)})</span>'
                f'</summary><p class="blocks">{"; ".join(where)}</p>{body}</details>')

    def items(self, items: list) -> str:
        return "".join(self.same(item, before=k > 0, after=k + 1 < len(items)) if isinstance(item, Same)
                       else self.piece(item) if isinstance(item, Piece) else self.fold(item)
                       for k, item in enumerate(items))


def _markdown(text: str) -> str:
    """One README paragraph or item as inline HTML; links to a lesson's line go to its page, other relative
    links (files the site does not hold) become plain text."""
    import markdown

    html = markdown.markdown(text)
    html = re.sub(r"^<p>(.*)</p>$", r"\1", html.strip(), flags=re.S)

    def fix(match):
        href, inner = match.group(1), match.group(2)
        lesson = re.match(r"^((?:gr|p)po_\w+)\.py#L(\d+)$", href)
        if lesson:
            return f'<a href="../lessons/{lesson.group(1)}.html#L{lesson.group(2)}">{inner}</a>'
        if re.match(r"^https?://", href):
            return match.group(0)
        return inner

    return re.sub(r'<a href="([^"]*)">(.*?)</a>', fix, html, flags=re.S)


def readme_html(diff: PairDiff, pair: ReadmePair | None) -> str:
    """README's list for the pair, each item followed by links to the hunks it names (item_pieces; the one
    item_target finds, for an item that names no code)."""
    if pair is None:
        return ""
    lis = []
    for item in pair.items:
        pieces = item_pieces(diff, item) or [p for p in [item_target(diff, item)] if p is not None]
        to = " ".join(f'<a class="to-hunk" href="#{piece.anchor}">&rarr; #{piece.hunk.number}'
                      f'{"" if piece.part == 1 else f"-{piece.part}"}</a>' for piece in pieces)
        lis.append(f"<li>{_markdown(item)}{' ' + to if to else ''}</li>")
    return (f'<section class="readme"><p>{_markdown(pair.heading)}</p><ul>{"".join(lis)}</ul>'
            f'<p class="from">(README.md, "Comparing the variants")</p></section>')


def render_pair(diff: PairDiff, pair: ReadmePair | None = None) -> str:
    """The whole page of one pair's diff (it sits in diffs/, one folder below the site's root)."""
    h = _Html(diff)
    a, b = diff.a.name, diff.b.name
    title = f"{a} -> {b}"
    readme = readme_html(diff, pair)
    counts = diff.counts()
    files = " ".join(
        f'<span class="file">{label} <b>{esc(name)}</b>: <a href="../lessons/{Path(name).stem}.html">lesson</a>, '
        f'<a href="../raw/{esc(name)}">raw</a></span>' for label, name in (("from", a), ("to", b)))
    legend = ('<p class="legend"><span class="rd">removed</span> <span class="ri">added</span> '
              '<span class="rd rp">prose line</span> <del>changed</del>/<ins>changed</ins> characters; '
              'a copied block that differs is one line that opens to its diff</p>')
    summary = (f'<p class="counts">{len(diff.hunks)} hunks: {counts["code"]} code, {counts["prose"]} prose-only '
               f'(comments, docstrings, help texts, blank lines), {counts["copied"]} inside copied blocks; '
               f'{counts["folds"]} copied block{"s" * (counts["folds"] != 1)} folded</p>')
    # prose-only changes hidden by default: a reader of the diff sees what the variant changes in code first
    switch = ('<input type="checkbox" id="hide-prose" class="hide-prose" checked>'
              '<label for="hide-prose" class="hide-prose">Hide prose-only changes</label>')
    body = (f'<h1>{esc(title)}</h1><p class="files">{files}</p>{readme}{summary}{legend}{switch}'
            f'<div class="diff">{h.items(diff.stream)}</div>')
    return page(title, body, depth=1, extra_css=("diff.css",))


def build_diff_pages(out: Path, root: Path) -> list[Path]:
    """Write out/diffs/<a stem>--<b stem>.html for every neighbour pair; return the paths written."""
    readme = (root / "README.md").read_text(encoding="utf-8") if (root / "README.md").is_file() else ""
    pairs = readme_pairs(readme)
    lessons = {name: read_lesson(root / name) for pair in NEIGHBOURS for name in pair}
    written = []
    (out / "diffs").mkdir(parents=True, exist_ok=True)
    for a, b in NEIGHBOURS:
        path = out / "diffs" / page_name(a, b)
        path.write_text(render_pair(diff_lessons(lessons[a], lessons[b]), pairs.get((a, b))), encoding="utf-8")
        written.append(path)
    return written

