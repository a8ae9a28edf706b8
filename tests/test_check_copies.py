"""Tests for tools/check_copies.py, on small fake repositories built in tmp_path."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tools.check_copies import CopiedBlock, copied_blocks, find_problems, main

REPO_ROOT = Path(__file__).resolve().parent.parent

# The originals of the fake repository's common/wrappers.py, kept apart so scripts can copy them verbatim.
SKIP_FRAME = '''\
class SkipFrame(gym.Wrapper):
    """Repeat each action `skip` times and sum the rewards."""

    def __init__(self, env, skip=4):
        super().__init__(env)
        self.skip = skip

    def step(self, action):
        total = 0.0
        for _ in range(self.skip):
            obs, reward, terminated, truncated, info = self.env.step(action)
            total += reward
            if terminated or truncated:
                break
        return obs, total, terminated, truncated, info
'''

SCALE_REWARD = '''\
def scale_reward(reward, factor=0.1):
    """Scale the reward into a range the value head learns easily."""
    return reward * factor
'''

# A decorated original: its text starts at the decorator.
FRAME_CONFIG = '''\
@dataclass(frozen=True)
class FrameConfig:
    size: int = 84
    grayscale: bool = True
'''

WRAPPERS = f'''\
"""Fake canonical wrappers."""
from dataclasses import dataclass

import gymnasium as gym


{SKIP_FRAME}

{SCALE_REWARD}

{FRAME_CONFIG}'''

def make_repo(tmp_path: Path, **scripts: str) -> Path:
    """A fake repository: common/wrappers.py plus the given scripts, e.g. ppo_a="..." -> ppo_a.py."""
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "__init__.py").write_text("")
    (tmp_path / "common" / "wrappers.py").write_text(WRAPPERS)
    for name, text in scripts.items():
        (tmp_path / f"{name}.py").write_text(text)
    return tmp_path


def line_of(text: str, needle: str) -> int:
    """1-based number of the first line of ``text`` containing ``needle``."""
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def script(*blocks: str) -> str:
    """A script made of a header and the given blocks, separated as black would."""
    return "\n\n".join(['"""A fake PPO script."""\nimport gymnasium as gym\n', *blocks, "print('train')\n"])


# --------------------------------------------------------------------------------------------------------
# Copies that are in sync
# --------------------------------------------------------------------------------------------------------


def test_exact_copies_pass(tmp_path):
    text = script(
        "# Copied from common.wrappers.SkipFrame\n" + SKIP_FRAME,
        "# Copied from common.wrappers.FrameConfig\n" + FRAME_CONFIG,
        "# Copied from common.wrappers.scale_reward\n\n" + SCALE_REWARD,  # a blank line after the marker is fine
    )
    root = make_repo(tmp_path, ppo_a=text)
    assert find_problems(root) == []
    assert main(["--root", str(root)]) == 0


def test_trailing_whitespace_is_ignored(tmp_path):
    copy = SKIP_FRAME.replace("total = 0.0\n", "total = 0.0   \n")
    assert copy != SKIP_FRAME
    root = make_repo(tmp_path, ppo_a=script("# Copied from common.wrappers.SkipFrame\n" + copy))
    assert find_problems(root) == []


def test_marker_inside_a_docstring_is_not_a_marker(tmp_path):
    text = '"""Example:\n\n    # Copied from common.wrappers.Nope\n"""\nx = 1\n'
    root = make_repo(tmp_path, ppo_a=text)
    assert find_problems(root) == []


# --------------------------------------------------------------------------------------------------------
# Renames
# --------------------------------------------------------------------------------------------------------

RENAMES = "with SkipFrame->MaxAndSkip, skip->frame_skip"
RENAMED = SKIP_FRAME.replace("SkipFrame", "MaxAndSkip").replace("skip", "frame_skip")


def test_renamed_copy_passes(tmp_path):
    assert "self.frame_skip = frame_skip" in RENAMED and "class MaxAndSkip" in RENAMED
    root = make_repo(tmp_path, ppo_a=script(f"# Copied from common.wrappers.SkipFrame {RENAMES}\n" + RENAMED))
    assert find_problems(root) == []


def test_renames_are_applied_in_order(tmp_path):
    # skip->frame_skip, then frame_skip->n: every "skip" ends up as "n".
    copy = SKIP_FRAME.replace("skip", "n")
    marker = "# Copied from common.wrappers.SkipFrame with skip->frame_skip,frame_skip->n"
    root = make_repo(tmp_path, ppo_a=script(marker + "\n" + copy))
    assert find_problems(root) == []


@pytest.mark.parametrize(
    "marker, copy",
    [
        (f"# Copied from common.wrappers.SkipFrame {RENAMES}", SKIP_FRAME),  # renames declared, not applied
        ("# Copied from common.wrappers.SkipFrame", RENAMED),  # renames applied, not declared
    ],
)
def test_renames_must_match(tmp_path, marker, copy):
    root = make_repo(tmp_path, ppo_a=script(marker + "\n" + copy))
    [problem] = find_problems(root)
    assert "drifted" in problem.message


# --------------------------------------------------------------------------------------------------------
# Problems
# --------------------------------------------------------------------------------------------------------


def test_drifted_copy_is_reported(tmp_path, capsys):
    drifted = SKIP_FRAME.replace("total += reward", "total += 2 * reward")
    text = script(
        "# Copied from common.wrappers.scale_reward\n" + SCALE_REWARD,
        "# Copied from common.wrappers.SkipFrame\n" + drifted,
    )
    root = make_repo(tmp_path, ppo_a=text)
    marker_line = line_of(text, "# Copied from common.wrappers.SkipFrame")

    [problem] = find_problems(root)
    assert (problem.path, problem.line) == ("ppo_a.py", marker_line)
    original_line = line_of(WRAPPERS, "class SkipFrame")
    expected = f"copy of common.wrappers.SkipFrame has drifted from common/wrappers.py:{original_line}"
    assert problem.message.startswith(expected)
    assert "-            total += reward" in problem.diff and "+            total += 2 * reward" in problem.diff

    assert main(["--root", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"ppo_a.py:{marker_line}: copy of common.wrappers.SkipFrame has drifted" in out
    assert "--fix" in out


def test_drift_in_a_decorator_is_reported(tmp_path):
    copy = FRAME_CONFIG.replace("frozen=True", "frozen=False")
    root = make_repo(tmp_path, ppo_a=script("# Copied from common.wrappers.FrameConfig\n" + copy))
    [problem] = find_problems(root)
    assert "drifted" in problem.message


@pytest.mark.parametrize(
    "target",
    ["common.wrappers.Nope", "common.nothere.SkipFrame", "nothere.SkipFrame", "common.wrappers.SkipFrame.nope"],
)
def test_missing_original_is_reported(tmp_path, target):
    text = script(f"# Copied from {target}\n" + SKIP_FRAME)
    root = make_repo(tmp_path, ppo_a=text)
    [problem] = find_problems(root)
    assert (problem.path, problem.line) == ("ppo_a.py", line_of(text, "# Copied from"))
    assert problem.message.startswith(f"original {target} not found")
    assert main(["--root", str(root)]) == 1
    assert main(["--root", str(root), "--fix"]) == 1  # nothing to rewrite it from


@pytest.mark.parametrize(
    "below",
    [
        "x = 1\n",  # not a definition
        "# another comment\n" + SCALE_REWARD,  # something other than blank lines in between
        "",  # nothing below at all
    ],
)
def test_marker_not_above_a_definition_is_reported(tmp_path, below):
    text = "x = 0\n# Copied from common.wrappers.scale_reward\n" + below
    root = make_repo(tmp_path, ppo_a=text)
    problems = find_problems(root)
    assert [(p.path, p.line, p.message) for p in problems] == [
        ("ppo_a.py", 2, "marker is not directly above a top-level class or function definition")
    ]


def test_marker_above_a_method_is_reported(tmp_path):
    # Copies are top-level classes and functions: a method is not one.
    text = "class Agent:\n    # Copied from common.wrappers.scale_reward\n" + textwrap.indent(SCALE_REWARD, "    ")
    root = make_repo(tmp_path, ppo_a=text)
    assert [(p.line, p.message) for p in find_problems(root)] == [
        (2, "marker is not directly above a top-level class or function definition")
    ]


def test_marker_between_decorator_and_definition_is_reported(tmp_path):
    # The definition starts at its decorator, so a marker below the decorator is not above it.
    text = "@decorator\n# Copied from common.wrappers.scale_reward\n" + SCALE_REWARD
    root = make_repo(tmp_path, ppo_a=text)
    assert [(p.line, p.message) for p in find_problems(root)] == [
        (2, "marker is not directly above a top-level class or function definition")
    ]


@pytest.mark.parametrize(
    "marker",
    [
        "# Copied from common.wrappers.SkipFrame with SkipFrame=>MaxAndSkip",
        "# Copied from common.wrappers.SkipFrame with",
        "# Copied from common.wrappers.SkipFrame with SkipFrame->",
        "# Copied from common.wrappers.SkipFrame with A->B, ",
        "# Copied from common.wrappers.SkipFrame and then some",
        "# Copied from SkipFrame",
        "# Copied from common/wrappers.py",
        "# Copied from",
    ],
)
def test_malformed_marker_is_reported(tmp_path, marker):
    root = make_repo(tmp_path, ppo_a=script(marker + "\n" + SKIP_FRAME))
    [problem] = find_problems(root)
    assert problem.line == line_of(script(marker), marker)
    assert problem.message.startswith("malformed marker")


# --------------------------------------------------------------------------------------------------------
# --fix
# --------------------------------------------------------------------------------------------------------


def test_fix_rewrites_two_drifted_copies(tmp_path, capsys):
    # Two hand-edited copies: the upper one shrinks by a line when fixed, so the lower one's line numbers move.
    good_skip = f"# Copied from common.wrappers.SkipFrame {RENAMES}\n" + RENAMED
    bad_skip = good_skip.replace("total += reward\n", "total += reward\n            total -= 0\n")
    good_scale = "# Copied from common.wrappers.scale_reward\n" + SCALE_REWARD
    bad_scale = good_scale.replace("return reward * factor", "return reward")
    in_sync = "# Copied from common.wrappers.FrameConfig\n" + FRAME_CONFIG
    untouched = "def untouched():  \n    return 1   # trailing spaces stay\n"
    expected = script(good_skip, untouched, good_scale, in_sync)
    drifted = script(bad_skip, untouched, bad_scale, in_sync)
    assert drifted != expected
    root = make_repo(tmp_path, ppo_a=drifted, ppo_b=expected)

    skip_line = line_of(drifted, "Copied from common.wrappers.SkipFrame")
    scale_line = line_of(drifted, "Copied from common.wrappers.scale_reward")
    problems = find_problems(root, fix=True)
    assert sorted((p.path, p.line, p.message, p.fixed) for p in problems) == [
        ("ppo_a.py", skip_line, "rewrote copy of common.wrappers.SkipFrame", True),
        ("ppo_a.py", scale_line, "rewrote copy of common.wrappers.scale_reward", True),
    ]
    assert (root / "ppo_a.py").read_text() == expected  # every other byte of the file unchanged
    assert (root / "ppo_b.py").read_text() == expected
    assert find_problems(root) == []

    (root / "ppo_a.py").write_text(drifted)
    assert main(["--root", str(root), "--fix"]) == 0
    out = capsys.readouterr().out
    assert f"ppo_a.py:{skip_line}: rewrote copy of common.wrappers.SkipFrame" in out
    assert (root / "ppo_a.py").read_text() == expected
    assert main(["--root", str(root)]) == 0


# --------------------------------------------------------------------------------------------------------
# Command line and the real repository
# --------------------------------------------------------------------------------------------------------


def test_files_argument_limits_the_check(tmp_path):
    bad = script("# Copied from common.wrappers.Nope\n" + SCALE_REWARD)
    good = script("# Copied from common.wrappers.scale_reward\n" + SCALE_REWARD)
    root = make_repo(tmp_path, ppo_a=good, ppo_b=bad)
    assert find_problems(root, files=[Path("ppo_a.py")]) == []
    assert [p.path for p in find_problems(root, files=[Path("ppo_b.py")])] == ["ppo_b.py"]
    # Files that are not ppo_*.py are checked when named.
    (root / "other.py").write_text(bad)
    assert [p.path for p in find_problems(root, files=[root / "other.py"])] == ["other.py"]


def test_command_line(tmp_path):
    text = script("# Copied from common.wrappers.SkipFrame\n" + SKIP_FRAME.replace("break", "pass"))
    good = script("# Copied from common.wrappers.scale_reward\n" + SCALE_REWARD)
    root = make_repo(tmp_path, ppo_a=text, ppo_b=good)

    def run(*args):
        command = [sys.executable, "-m", "tools.check_copies", "--root", str(root), *args]
        return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)

    result = run()
    assert result.returncode == 1, result.stderr
    marker_line = line_of(text, "Copied from")
    assert f"ppo_a.py:{marker_line}: copy of common.wrappers.SkipFrame has drifted" in result.stdout

    result = run(str(root / "ppo_b.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checked 1 script, 1 copy: all in sync" in result.stdout

    result = run("--fix")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rewrote copy of common.wrappers.SkipFrame" in result.stdout
    assert "checked 2 scripts, 2 copies: all in sync" in result.stdout


def test_copied_blocks_run_from_the_marker_to_the_end_of_the_definition():
    """The blocks tools.diff_matrix and the site read: only well-formed markers directly above a top-level
    definition make one (the checker reports the others)."""
    text = script(
        "# Copied from common.wrappers.FrameConfig\n" + FRAME_CONFIG,  # decorated: the block starts at the marker
        "# Copied from common.wrappers.scale_reward\n\n" + SCALE_REWARD,
        "# Copied from common.wrappers.Nope and then some\n" + SCALE_REWARD,  # malformed
        '"""# Copied from common.wrappers.Nope"""\n# Copied from common.wrappers.scale_reward\nx = 1\n',
    )
    first, second = line_of(text, "FrameConfig"), line_of(text, "common.wrappers.scale_reward")
    assert copied_blocks(text) == [CopiedBlock(first, first + 4, "common.wrappers.FrameConfig"),
                                   CopiedBlock(second, second + 4, "common.wrappers.scale_reward")]
    assert (copied_blocks(text)[1].module, copied_blocks(text)[1].name) == ("common/wrappers.py", "scale_reward")


def test_real_repository_is_in_sync(capsys):
    assert main(["--root", str(REPO_ROOT)]) == 0, capsys.readouterr().out


def test_common_holds_what_the_lessons_copy_and_nothing_else():
    """Every top-level function and class of every module of common/ is the original of a copy that some lesson
    carries: the maintainers' tools live in tools/, the course's in course/ (issue 59's layout)."""
    import ast
    import re

    copied = set()
    for script in [*REPO_ROOT.glob("ppo_*.py"), *REPO_ROOT.glob("grpo_*.py")]:
        copied |= set(re.findall(r"# Copied from (common\.\w+\.\w+)", script.read_text()))
    modules = [m for m in sorted((REPO_ROOT / "common").glob("*.py")) if m.name != "__init__.py"]
    assert len(modules) >= 10
    for module in modules:
        names = [n.name for n in ast.parse(module.read_text()).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert names, module.name
        orphans = [name for name in names if f"common.{module.stem}.{name}" not in copied]
        assert not orphans, f"common/{module.name} holds what no lesson copies: {orphans}"
