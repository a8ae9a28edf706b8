"""The lessons, in reading order, and the neighbour each one is diffed against: the one list that the site
(render/), README's generated tables (tools.diff_matrix, tools.details_map) and the tests read.

A lesson's neighbour is the script its docstring's "Differs from ppo_<neighbour>.py in:" names; ``bound`` holds
the pair's changed lines of code outside copied blocks to at most that many (tools.diff_matrix --check, a ratchet
that may only come down as the scripts converge). tests/test_conventions.py checks that this list is the
``ppo_*.py`` files on disk and that each ``env_id`` is its script's default; tests/test_diff_matrix.py that the
neighbours are the ones the docstrings name.

A lesson's ``figures`` are the committed learning curves (benchmarks/results/) whose numbers its docstring's "What
you should see" quotes: its page shows them right after that text (render/lesson.py), with their captions and alt
texts; tests/test_site.py checks that they are there, byte for byte the committed PNGs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """A committed figure of the benchmark record, as a lesson's page shows it."""

    path: str  # the PNG, from the repository's root: benchmarks/results/ppo_cartpole.png
    caption: str  # what it plots: the statistic, the seeds, the budget, the machine
    alt: str  # what it shows, in words, for a reader who cannot see it


@dataclass(frozen=True)
class Lesson:
    script: str  # the file, ppo_cartpole.py
    env_id: str  # the env it trains on by default (its Args.env_id)
    pixels: bool  # it learns from frames with a CNN (the MLP lessons read flat observations)
    language: bool = False  # its environment is text (a token MDP) and its agent a transformer: no Gymnasium env
    neighbour: str | None = None  # the script it is diffed against; None for the first lesson
    bound: int | None = None  # the most changed lines of code the diff from its neighbour may have
    figures: tuple[Figure, ...] = ()  # the curves its "What you should see" quotes, in the order it quotes them

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
# Breakout's), +2; then (issue 58) the flags for running a script and their imports moved below the fence, each
# pixel lesson's bad-input checks left make_env for a checked_env below it (as the MLP lessons' had), Pendulum's for
# a checked_env and the shared record_video: CartPole -> LunarLander 109 -> 108, LunarLander -> Pendulum 161 -> 159,
# LunarLander -> Breakout 187 -> 163, and Breakout -> Mario 250 -> 253 (the two games' checks, different by nature,
# now side by side in their checked_env below the fence); then (issue 61) the float64 cast moved from Pendulum's
# make_env into the checked_env of all three MLP lessons, LunarLander -> Pendulum 159 -> 156; then (issue 67) its
# RunningMeanStd became common.ppo's checked copy, shared with the memory lesson: 156 -> 141. Where a bound is above
# its aim (tools.diff_matrix.AIMS), README's pair heading and benchmarks/README.md say what the rest of that diff is.
# Each lesson's figures: the runs its docstring's "What you should see" quotes (every number there is read off
# these runs' committed curves CSVs, and its subsection "... what you should see, in full" in benchmarks/README.md
# has them all). Breakout's points to its 2M-frame figure (the CPU run of its Usage) "and the longer runs' beside it",
# the default 10M and the published 40M, so it shows the three figures, in that order; Mario's quotes the run resumed
# to the flag, ppo_mario_cnn-long.png (ppo_mario_cnn.png is an older, 122,880-step comparison of the action sets
# that the docstring does not quote).
_RESULTS = "benchmarks/results/"
LESSONS = (
    Lesson("ppo_cartpole.py", "CartPole-v1", pixels=False, figures=(
        Figure(_RESULTS + "ppo_cartpole.png",
               "The return (mean of the last 20 training episodes) of 5 seeds, their mean and min-max band, over "
               "the default 100k steps, against the target 475; on 2 CPU cores.",
               "Learning curves of ppo_cartpole.py on CartPole-v1: the five seeds' returns rise from about 20 to "
               "500 by 50k steps, where they stay but for one seed's dips, and end at 500."),)),
    Lesson("ppo_lunarlander_vec.py", "LunarLander-v3", pixels=False, neighbour="ppo_cartpole.py", bound=108, figures=(
        Figure(_RESULTS + "ppo_lunarlander_vec.png",
               "Left: the return (mean of the last 20 training episodes) of 3 seeds, their mean and min-max band, "
               "over the default 1M steps, target 200. Right: the greedy policy's evaluations, target 250. On 2 "
               "CPU cores.",
               "Learning curves of ppo_lunarlander_vec.py on LunarLander-v3: the three seeds' training returns "
               "rise from about -200 to about 280 over 1M steps; the greedy evaluations from about -100 to about "
               "275."),)),
    Lesson("ppo_pendulum_continuous.py", "Pendulum-v1", pixels=False, neighbour="ppo_lunarlander_vec.py", bound=141,
           figures=(
        Figure(_RESULTS + "ppo_pendulum_continuous.png",
               "Left: the return (mean of the last 20 training episodes) of --objective clip and of kl, each the "
               "mean of 3 seeds with its min-max band, over the default 300k steps, target -200. Right: the greedy "
               "policy's evaluations. On 2 CPU cores.",
               "Learning curves of ppo_pendulum_continuous.py on Pendulum-v1, clip against kl: both training "
               "returns rise from about -1200 to about -170 by 100k steps and stay there; the evaluations end "
               "near -150."),)),
    Lesson("ppo_breakout_atari.py", "BreakoutNoFrameskip-v4", pixels=True, neighbour="ppo_lunarlander_vec.py",
           bound=163, figures=(
        Figure(_RESULTS + "ppo_breakout_atari.png",
               "2M frames (--total-timesteps 500000 --no-cuda). Left: the score (mean of the last 20 whole games); "
               "right: the evaluations (3 sampled games). bf16 and fp32, each the mean of 2 seeds with its min-max "
               "band; on 2 CPU cores.",
               "Breakout learning curves over 2M frames, bf16 and fp32: the score rises from 0 to 12-14, the "
               "evaluations from about 5 to 11-15."),
        Figure(_RESULTS + "ppo_breakout_atari-10M.png",
               "10M frames, the default 2.5M steps. Left: the score (mean of the last 20 whole games); right: the "
               "evaluations (3 sampled games). Seeds 1 and 2, their mean and min-max band; bf16 on 2 CPU cores.",
               "Breakout learning curves over 10M frames, two seeds: the score rises from 0 to about 50 by 2M "
               "steps and stays between 40 and 80; the evaluations rise from 15 to 55 and 120."),
        Figure(_RESULTS + "ppo_breakout_atari-40M.png",
               "40M frames, the published 10M steps (--total-timesteps 10000000). The score (mean of the last 100 "
               "whole games) by frames: the default's seeds 1 and 2, and seed 1 with epsilon constant and in fp32, "
               "beside SB3's trained agent (1 seed) and CleanRL's final score (3 seeds); on 2 CPU cores, across "
               "sessions.",
               "Breakout learning curves over 40M frames: four runs' scores rise from 0 to 350-420, beside SB3's "
               "curve ending near 390 and CleanRL's final 415 with its error bar."),
    )),
    Lesson("ppo_mario_cnn.py", "SuperMarioBros-v0", pixels=True, neighbour="ppo_breakout_atari.py", bound=253,
           figures=(
        Figure(_RESULTS + "ppo_mario_cnn-long.png",
               "Seed 1: the 249,856-step run with the defaults, resumed with --target-flag-rate 0.5 to its end at "
               "819,200 steps. Left: x position (mean of the last 100 training episodes) and the evaluations, the "
               "flag at x 3,161; middle: the share of episodes at the flag; right: where Mario died in the last "
               "2,000 training episodes. On 2 CPU cores, across sessions on two machines.",
               "Mario's run to the flag on World 1-1: the x position rises from about 300 to 2,800 over 819,200 "
               "steps, the share of episodes at the flag from 0 to 0.6; deaths are most frequent near x 1,750 and "
               "2,450."),)),
)
# The memory lesson (issue 67): an LSTM on CartPole with the velocities hidden, diffed against the vector-env lesson
# whose rollout, losses and evaluation it extends.
_MEMORY = Figure(
    _RESULTS + "memory.png",
    "CartPoleNoVel-v1 (CartPole-v1 with the velocities hidden), the default 500k steps: per 10,000 steps, the mean "
    "return of the training episodes (sampled actions) that ended in them; the LSTM, no LSTM (one frame) and no LSTM "
    "with 4 frames stacked, each the mean of seeds 1-5 with its min-max band, against the target 475; on 2 CPU cores.",
    "Learning curves on CartPoleNoVel-v1: the LSTM's training return rises from about 20 past 475 between 81k and "
    "174k steps and ends between 258 and 484; with 4 frames stacked it rises later and ends lower on some seeds; the "
    "one-frame network stays near 45.")
# The masking lesson (issue 67): tic-tac-toe, written in the lesson, diffed against the one-env lesson it extends.
_MASKING = Figure(
    _RESULTS + "masking.png",
    "The masking study (benchmarks/masking.py): the mask, and no mask with an invalid move lost or passed, seeds 1-5 each; on 2 CPU cores.",
    "Learning curves of ppo_action_masking.py on tic-tac-toe against a random opponent, with and without the mask.")
LESSONS += (
    Lesson("ppo_lstm_memory.py", "CartPoleNoVel-v1", pixels=False, neighbour="ppo_lunarlander_vec.py", bound=148,
           figures=(_MEMORY,)),
    Lesson("ppo_action_masking.py", "TicTacToe-v0", pixels=False, neighbour="ppo_cartpole.py", bound=110,
           figures=(_MASKING,)),
)
# The language lessons (issue 66): PPO on a token MDP, then its GRPO diff. Their task is a grammar of reviews made in
# the run (env_id names it), so the tests of Gymnasium's envs, wrappers and rollouts (GYM) do not apply to them.
_LANGUAGE = Figure(
    _RESULTS + "language.png",
    "Each rollout's mean over its 64 sampled responses, by token steps (64 responses x 12 a rollout): the reward "
    "model's score, the hidden score and the share of grammatical responses; ppo_rlhf_tiny.py at its defaults, with "
    "--kl-coef 0 --no-adaptive-kl, and grpo_rlhf_tiny.py, each the mean of seeds 1-5 with its min-max band; on 2 CPU "
    "cores.",
    "Three panels over 184,320 token steps. The reward model's score rises from 0 to about 1.65 for all three. PPO: "
    "the hidden score rises to about 3.8 of 4 and the valid share stays at 1. PPO with beta 0: on two of the five "
    "seeds the valid share falls to 0 and the hidden score to -5 while the reward model's score stays high, so their "
    "mean ends near 0.4 and 0.6. GRPO: near PPO but for one seed that drifts off the language, its mean hidden "
    "score near 3 and valid share near 0.9.")
LESSONS += (
    Lesson("ppo_rlhf_tiny.py", "TinyReviews-v0", pixels=False, language=True, neighbour="ppo_cartpole.py", bound=483,
           figures=(_LANGUAGE,)),
    Lesson("grpo_rlhf_tiny.py", "TinyReviews-v0", pixels=False, language=True, neighbour="ppo_rlhf_tiny.py",
           bound=89, figures=(_LANGUAGE,)),
)
GLOBS = ("ppo_*.py", "grpo_*.py")  # the lesson files on disk: tests/test_conventions.py holds LESSONS to them
GYM = tuple(lesson for lesson in LESSONS if not lesson.language)
LANGUAGE = tuple(lesson for lesson in LESSONS if lesson.language)
SCRIPTS = tuple(lesson.script for lesson in LESSONS)
GYM_SCRIPTS = tuple(lesson.script for lesson in GYM)
GYM_MODULES = tuple(lesson.module for lesson in GYM)
MODULES = tuple(lesson.module for lesson in LESSONS)
# (from, to): bound, in reading order of the `to` lesson: the diffs README walks through.
NEIGHBOURS = {(lesson.neighbour, lesson.script): lesson.bound for lesson in LESSONS if lesson.neighbour}


# A lesson's "Try this": experiments a learner predicts and then runs. The docstring lays each out as
#     python ppo_x.py --flag value                 (the command, 4 spaces in)
#         Predict: the question to answer before running (8 spaces in; it may run over more lines)
#         Answer: what happened and the mechanism (likewise)
#         Measured: the evidence, on one line
#         Symptom: course/when-ppo-does-not-learn.md#<section> (optional, one line)
# under a header "Try this (...)" that says what the measured figures are (it may take two lines). The studies'
# lessons have their "Measured" lines written by `python -m benchmarks.ablations --write-try-this`; the pixel
# lessons' are held to their runs by tests/test_docstring_figures.py. "Symptom" names the debugging guide's section
# that a recorded run of the same setting shows (benchmarks/debugging.py; tests/test_debugging.py holds it to it).
LABELS = ("Predict", "Answer", "Measured")
OPTIONAL = ("Symptom",)


@dataclass(frozen=True)
class Experiment:
    command: str
    predict: str  # each text joined into one line
    answer: str
    measured: str
    symptom: str = ""


def try_this(docstring: str) -> tuple[str, list[Experiment]]:
    """The "Try this" part of a lesson's docstring: its header (joined into one line) and its experiments; raises
    ValueError on anything out of the layout above."""
    lines = docstring.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Try this (")), None)
    if start is None:
        raise ValueError('no "Try this (" header')
    end = start
    while not lines[end].endswith(")"):
        end += 1
    header = " ".join(line.strip() for line in lines[start:end + 1])
    items: list[dict] = []
    label = None
    for line in lines[end + 1:]:
        if not line:
            break
        if line.startswith("    python "):
            items.append({"command": line.strip()})
            label = None
        elif line.startswith("        ") and items:
            text = line.strip()
            name = text.split(":", 1)[0]
            if name in LABELS + OPTIONAL:
                order = LABELS + OPTIONAL
                if name in items[-1] or list(items[-1]) != ["command", *order[:order.index(name)]]:
                    raise ValueError(f"{items[-1]['command']}: {name!r} out of the order {order}")
                label, items[-1][name] = name, text.split(":", 1)[1].strip()
            elif label in ("Predict", "Answer"):
                items[-1][label] += " " + text
            else:
                raise ValueError(f"{items[-1]['command']}: a line outside Predict/Answer: {text!r}")
        else:
            raise ValueError(f"not an experiment's line: {line!r}")
    for item in items:
        if list(item)[:len(LABELS) + 1] != ["command", *LABELS]:
            raise ValueError(f"{item['command']}: needs {', '.join(LABELS)}, has {', '.join(list(item)[1:])}")
    if not items:
        raise ValueError('"Try this" holds no experiment')
    return header, [Experiment(i["command"], i["Predict"], i["Answer"], i["Measured"], i.get("Symptom", ""))
                    for i in items]


# A lesson's command line is two dataclasses: Hyperparameters, PPO's, at the top of the file, and Args(Hyperparameters)
# below the fence, which adds the flags for running the script (seed, device, video, checkpoints, resume, play, ...).
CLI_CLASSES = ("Hyperparameters", "Args")


def cli_fields(tree) -> list[tuple]:
    """Each field of the lesson's Hyperparameters and Args, in --help's order, as (the field's ast.AnnAssign, the
    statement after it: its docstring, if it has one). `tree` is the lesson's ast.Module."""
    import ast

    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef) and node.name in CLI_CLASSES}
    fields = []
    for name in CLI_CLASSES:
        body = classes[name].body
        fields += [(node, body[i + 1] if i + 1 < len(body) else None)
                   for i, node in enumerate(body) if isinstance(node, ast.AnnAssign)]
    return fields
