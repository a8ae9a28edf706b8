"""The lessons, in reading order, and the neighbour each one is diffed against: the one list that the site
(render/), README's generated tables (common.diff_matrix, common.details_map) and the tests read.

A lesson's neighbour is the script its docstring's "Differs from ppo_<neighbour>.py in:" names; ``bound`` holds
the pair's changed lines of code outside copied blocks to at most that many (common.diff_matrix --check, a ratchet
that may only come down as the scripts converge). tests/test_conventions.py checks that this list is the
``ppo_*.py`` files on disk and that each ``env_id`` is its script's default; tests/test_diff_matrix.py that the
neighbours are the ones the docstrings name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lesson:
    script: str  # the file, ppo_cartpole.py
    env_id: str  # the env it trains on by default (its Args.env_id)
    pixels: bool  # it learns from frames with a CNN (the MLP lessons read flat observations)
    neighbour: str | None = None  # the script it is diffed against; None for the first lesson
    bound: int | None = None  # the most changed lines of code the diff from its neighbour may have

    @property
    def module(self) -> str:  # ppo_cartpole
        return self.script.removesuffix(".py")

    @property
    def name(self) -> str:  # cartpole, lunarlander_vec, ...: the column names of README's tables
        return self.module.removeprefix("ppo_")


# The bounds as measured 2026-11-30 after the restructuring of issue 16 (plumbing shared as checked copies, train()
# folded), then 2026-12-01 (issue 25): the one env train() makes for the spaces is now closed (`with make_env(args)
# as env:`, +1 line from CartPole), and Pendulum's agent takes no clip with --no-norm-obs (+2), while Breakout ->
# Mario came down; then (issue 27) Pendulum's make_env tells MuJoCo to draw through EGL when it records video (+1), so
# that a shipped Hopper plays with --capture-video where there is no display; then (issue 28) Mario scales a
# rollout's frames once per update (Agent.inputs), reads the clip fractions once at the log and can end a run at
# --target-flag-rate (+23); then Breakout took Agent.inputs too (its whole batch converted once per update, not each
# minibatch in every epoch: pure speed, the same run bit for bit), which moves 6 lines from Breakout -> Mario (254 ->
# 248) to LunarLander -> Breakout (181 -> 187); the clip fractions' single read stayed Mario's own (in Breakout's 16
# minibatches an update it saves nothing, and LunarLander -> Breakout would grow by 6 for it); then Mario's settings
# were chosen in 250k-step runs (issue 28: the learning rates constant, and lambda's comment says why it stays
# Breakout's), +2. Where a bound is above its aim (common.diff_matrix.AIMS), README's pair heading and
# benchmarks/README.md say what the rest of that diff is.
LESSONS = (
    Lesson("ppo_cartpole.py", "CartPole-v1", pixels=False),
    Lesson("ppo_lunarlander_vec.py", "LunarLander-v3", pixels=False, neighbour="ppo_cartpole.py", bound=109),
    Lesson("ppo_pendulum_continuous.py", "Pendulum-v1", pixels=False, neighbour="ppo_lunarlander_vec.py", bound=161),
    Lesson("ppo_breakout_atari.py", "BreakoutNoFrameskip-v4", pixels=True, neighbour="ppo_lunarlander_vec.py",
           bound=187),
    Lesson("ppo_mario_cnn.py", "SuperMarioBros-v0", pixels=True, neighbour="ppo_breakout_atari.py", bound=250),
)
SCRIPTS = tuple(lesson.script for lesson in LESSONS)
MODULES = tuple(lesson.module for lesson in LESSONS)
# (from, to): bound, in reading order of the `to` lesson: the diffs README walks through.
NEIGHBOURS = {(lesson.neighbour, lesson.script): lesson.bound for lesson in LESSONS if lesson.neighbour}
