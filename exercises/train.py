"""`python -m exercises train NAME`: train the lesson that uses an exercise's function with yours swapped in.

The swap is the one the ablation studies make (benchmarks/patches.py): the lesson's module attribute replaced in
this process before its main() runs, so the run has the lesson's usual progress bar and TensorBoard logs. It runs
the recipe of a committed benchmark, seed 1, and ends by placing your learning curve against that benchmark's runs
(benchmarks/results/...: one curve per seed, the same recipe, the lesson's own function):

- a curve's score is the mean of its 20 bins' mean returns (the area under the curve per step: early learning
  counts as much as the end), and its final return the mean of its last 20 training episodes;
- within the band: your score is at least the lowest seed's, less 5% of the lessons' gain (their mean final return
  less where they started, the mean of their first 20 episodes), a margin for another processor's rounding;
- not learning: your final return made less than a quarter of that gain;
- slower: anything between.

The language lessons (ppo_rlhf_tiny.py, grpo_rlhf_tiny.py) are placed by another curve: each rollout's hidden score
(objective/hidden_score: the mean over its 64 responses of the "human's" rule, which the policy is never shown; it
is shown R, learned from that rule's preferences), against the record of python -m benchmarks.language
(benchmarks/results/language/curves.csv, one row per rollout), the final value and the start each the mean of 3
rollouts (192 responses). Not by the return: PPO's, R - beta KL, is summed from the learner's own per-token rewards,
so a wrong function would move the very measure it is judged by.

The masking lesson (ppo_action_masking.py) is placed against the record of python -m benchmarks.masking
(benchmarks/results/masking/curves.csv): the training games' mean return in bins of 2048 steps, which the learner's
games are binned into too, the final value and the start each the mean of 3 bins. The memory lesson
(ppo_lstm_memory.py) against python -m benchmarks.memory's LSTM runs (benchmarks/results/memory/lstm-curves.csv, the
episodes of each seed), at the lesson's whole budget, 500,000 steps: the learning rate anneals over it, so a shorter
run would be another recipe, with no record to place it in.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from benchmarks.core import launch
from benchmarks.core.records import curves_path, load_points, read_csv, read_rows
from benchmarks.core.runs import read_scalars
from benchmarks.core.stats import binned_means

RESULTS = launch.ROOT / "benchmarks" / "results"
BINS = 20  # a curve's bins over the run's steps
WINDOW = 20  # episodes in the final return (and the start)
MARGIN = 0.05  # of the lessons' gain, below their lowest score, still within the band
LEARNING = 0.25  # of the lessons' gain, the least a final return must make to be learning at all
LANGUAGE_WINDOW = 3  # rollouts in a language lesson's final hidden score (and its start): 3 x 64 responses
MASKING_BIN = 2048  # env steps a point of benchmarks.masking's curves averages over (its BIN)
MASKING_WINDOW = 3  # bins in the masking lesson's final return (and its start): 3 x 2048 steps


@dataclass(frozen=True)
class Training:
    lesson: str  # the lesson that trains with the exercise's function
    flags: tuple[str, ...]  # its flags beyond the defaults: the committed runs' own
    record: str  # the benchmark of that recipe, benchmarks/results/<record>.csv, and its -curves.csv
    wait: str  # how long it takes on 2 CPU cores (benchmarks/test_exercises_train.py, 2026-12-06)
    setting: str | None = None  # a language lesson's: its setting in the record (benchmarks/language.py's SETTINGS)
    tag: str = "charts/episodic_return"  # the curve placed: each episode's return (a language lesson: each rollout's
    # hidden score)
    window: int = WINDOW  # points in the final value and the start
    what: str = "return"  # the curve's name, in the verdict
    column: str = "hidden_score"  # a record of binned points (`setting` given): the column its curve is in
    bin: int | None = None  # the learner's episodes averaged in bins of this many steps, as the record's points are
    total_steps: int | None = None  # the record's budget, where it has no runs' CSV that says it (memory's)
    places: int = 1  # decimals in the verdict's numbers (a tic-tac-toe return lies between -1 and 1)


CARTPOLE = Training("ppo_cartpole.py", (), "ppo_cartpole", "about 20 seconds")
PENDULUM_CLIP = Training("ppo_pendulum_continuous.py", ("--objective", "clip", "--clip-vloss"),
                         "ppo_pendulum_continuous-clip", "about 50 seconds")
TRAININGS = {
    "gae": CARTPOLE,
    "clip": CARTPOLE,
    "loss": CARTPOLE,
    # The lesson's 1,000,000 steps take over two minutes: its first 500,000, a recipe of its own (the learning
    # rate anneals to 0 over them), benchmarked apart (benchmarks/README.md, "The exercises' bands").
    "value_clip": Training("ppo_lunarlander_vec.py", ("--total-timesteps", "500000"),
                           "exercises/ppo_lunarlander_vec-500k", "about 90 seconds"),
    "rollout": Training("ppo_lunarlander_vec.py", ("--total-timesteps", "500000"),
                        "exercises/ppo_lunarlander_vec-500k", "about 90 seconds"),
    "gaussian": PENDULUM_CLIP,
    "kl_beta": Training("ppo_pendulum_continuous.py", ("--objective", "kl", "--clip-vloss"),
                        "ppo_pendulum_continuous-kl", "about 50 seconds"),
    "kl_reward": Training("ppo_rlhf_tiny.py", (), "language/curves", "about a minute", "ppo",
                          "objective/hidden_score", LANGUAGE_WINDOW, "hidden score"),
    "group_advantage": Training("grpo_rlhf_tiny.py", (), "language/curves", "about a minute", "grpo",
                                "objective/hidden_score", LANGUAGE_WINDOW, "hidden score"),
    # The lesson's whole 500,000 steps: its record's runs took 5 to 8 minutes each on 2 CPU cores
    # (benchmarks/results/memory/runs.csv, wall_s); the masking lesson's, 22 to 26 seconds (masking/runs.csv).
    "lstm_state": Training("ppo_lstm_memory.py", (), "memory/lstm", "5 to 8 minutes", total_steps=500_000),
    "masked_distribution": Training("ppo_action_masking.py", (), "masking/curves", "about a minute and a half", "mask",
                                    window=MASKING_WINDOW, column="return", bin=MASKING_BIN, places=3),
}
ATTRIBUTES = {"gae": "compute_gae", "clip": "clipped_surrogate_loss", "value_clip": "clipped_value_loss",
              "rollout": "collect_rollout", "kl_beta": "adapt_kl_beta", "kl_reward": "per_token_rewards",
              "group_advantage": "group_advantages"}
# The lessons' methods an exercise's swap replaces (the others replace a module attribute, ATTRIBUTES's), put back
# after the run.
METHODS = {"gaussian": "get_action_and_value", "masked_distribution": "get_action_and_value",
           "lstm_state": "get_states"}
# The wrappers' lesson learns in hours: its shortest committed run, 500,000 steps on 2 CPU cores, took 14 minutes
# to a return of 13.5 (benchmarks/results/ppo_breakout_atari-bf16.csv). Their check's last case runs them against
# the lesson's on random frames instead.
UNTRAINED = {name: "its lesson, Breakout, learns in hours, not minutes: its shortest committed run (500,000 steps "
             "on 2 CPU cores) took 14 minutes; the check's last case runs your wrapper against the lesson's"
             for name in ("max_and_skip", "frame_stack")}


# REINFORCE has no lesson: it trains with a minimal file of its own, exercises/reinforce_cartpole.py, and no band
# of committed runs; its verdict is a rule (reinforce_cartpole.verdict).
OWN = {"reinforce": ("python -m exercises.reinforce_cartpole --seeds 1", "about 5 seconds")}


# The loss is computed inline, in the lesson's train(): its line is edited to call the learner's function
# (exercises.bugs.run_edited runs the edited lesson, as it runs a silent bug).
EDITS = {"loss": ("loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy_loss",
                  "loss = learners_ppo_loss(newlogprob, b_logprobs[mb], mb_advantages, newvalue, b_returns[mb], "
                  "entropy, args.clip_coef, args.vf_coef, args.ent_coef)")}


def edited_source(name: str) -> str:
    """The lesson's source with EDITS[name] made; ValueError where its text is not there exactly once."""
    old, new = EDITS[name]
    lesson = TRAININGS[name].lesson
    source = (launch.ROOT / lesson).read_text()
    if source.count(old) != 1:
        raise ValueError(f"{lesson} holds {old!r} {source.count(old)} times, not once")
    return source.replace(old, new)


def swap(name: str, lesson, fn: Callable) -> None:
    """The lesson's own function replaced by `fn`; where the exercise's code is part of a method of the lesson's
    Agent (METHODS), that method replaced by one that calls `fn` for it: the Gaussian's log-probability and entropy,
    the masked policy's, the LSTM's step loop."""
    if name not in METHODS:
        setattr(lesson, ATTRIBUTES[name], fn)
        return

    if name == "gaussian":
        def method(self, x: torch.Tensor, action=None, greedy: bool = False):
            mean, logstd = self.get_distribution(x)
            if action is None:
                action = mean if greedy else mean + logstd.exp() * torch.randn_like(mean)
            log_prob, entropy = fn(mean, logstd, action)
            return action, log_prob, entropy, self.get_value(x)
    elif name == "masked_distribution":  # ppo_action_masking.py's Agent.get_action_and_value, its pi the learner's
        def method(self, x: torch.Tensor, mask: torch.Tensor, action=None, greedy: bool = False):
            hidden = self.trunk(x)
            log_pi, entropy = fn(self.actor(hidden), mask.bool())
            if action is None:
                action = log_pi.argmax(-1) if greedy else torch.multinomial(log_pi.exp(), 1).squeeze(-1)
            log_prob = log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)
            return action, log_prob, entropy, self.critic(hidden).squeeze(-1)
    else:  # lstm_state: ppo_lstm_memory.py's Agent.get_states, its step loop the learner's
        def method(self, x: torch.Tensor, state: tuple, starts: torch.Tensor):
            features = self.encoder(self.normalize(x))
            if not isinstance(self.memory, torch.nn.LSTMCell):  # --no-lstm: no state to carry
                return self.memory(features), state
            return fn(self.memory, features, state, starts)

    attribute = METHODS[name]
    method.lessons = getattr(lesson.Agent, attribute)  # (the lesson's own, for the reference)
    setattr(lesson.Agent, attribute, method)


def curve_score(episodes: list[tuple[int, float]], total_steps: int) -> float:
    """The mean of a curve's BINS bins' mean returns: (step, return) of each episode, in order, binned by the step
    it ended at over [0, total_steps]; a bin no episode ended in holds the bin before it (the first, the first
    episode's return)."""
    sums, counts = [0.0] * BINS, [0] * BINS
    for step, value in episodes:
        k = min(BINS - 1, max(0, step * BINS // max(total_steps, 1)))
        sums[k] += value
        counts[k] += 1
    means, last = [], episodes[0][1]
    for k in range(BINS):
        last = sums[k] / counts[k] if counts[k] else last
        means.append(last)
    return statistics.fmean(means)


@dataclass(frozen=True)
class Band:
    scores: list[float]  # each committed seed's curve score
    finals: list[float]  # each one's final return
    start: float  # the mean of their first WINDOW episodes
    total_steps: int

    @property
    def gain(self) -> float:
        return statistics.fmean(self.finals) - self.start


def band(record: str, setting: str | None = None, window: int = WINDOW, column: str = "hidden_score",
         total_steps: int | None = None) -> Band:
    """The committed runs of a recipe: benchmarks/results/<record>.csv's rows and their curves (<record>-curves.csv;
    with `total_steps`, the curves alone). With `setting`, a record of binned points (a language lesson's, the
    masking lesson's): `column` of each point of that setting's seeds in <record>.csv."""
    if setting is not None:
        return language_band(record, setting, window, column)
    csv = RESULTS / f"{record}.csv"
    if total_steps is None:
        total_steps = int(read_rows(csv)[0]["total_steps"])
    points = [p for p in load_points(curves_path(csv)) if p["kind"] == "training"]
    scores, finals, firsts = [], [], []
    for seed in sorted({p["seed"] for p in points}, key=int):
        episodes = [(p["env_steps"], p["value"]) for p in points if p["seed"] == seed]
        scores.append(curve_score(episodes, total_steps))
        finals.append(statistics.fmean(v for _, v in episodes[-WINDOW:]))
        firsts += [v for _, v in episodes[:WINDOW]]
    return Band(scores, finals, statistics.fmean(firsts), total_steps)


def language_band(record: str, setting: str, window: int, column: str = "hidden_score") -> Band:
    """A record of binned points in benchmarks/results/<record>.csv (python -m benchmarks.language's curves.csv: one
    row per rollout, its hidden score; benchmarks.masking's: one per bin of steps, its mean return): the seeds of
    `setting`, each point at its step, its value in `column`."""
    rows = read_csv(RESULTS / f"{record}.csv", {"seed": int, "step": int, column: float}, "record")
    rows = [row for row in rows if row["setting"] == setting]
    if not rows:
        raise ValueError(f"benchmarks/results/{record}.csv holds no runs of {setting}")
    total_steps = max(row["step"] for row in rows)
    scores, finals, firsts = [], [], []
    for seed in sorted({row["seed"] for row in rows}):
        points = sorted((row["step"], row[column]) for row in rows if row["seed"] == seed)
        scores.append(curve_score(points, total_steps))
        finals.append(statistics.fmean(v for _, v in points[-window:]))
        firsts += [v for _, v in points[:window]]
    return Band(scores, finals, statistics.fmean(firsts), total_steps)


def record_band(training: Training) -> Band:
    """The band of the record an exercise's training is placed in."""
    return band(training.record, training.setting, training.window, training.column, training.total_steps)


def binned(points: list[tuple[int, float]], width: int) -> list[tuple[int, float]]:
    """(step, value) points as a record of binned means has them (benchmarks.core.stats.binned_means): for each bin
    of `width` steps some point fell in, the bin's end and the mean of its values."""
    return [(p["step"], p["mean_return"]) for p in binned_means(points, width)]


def verdict(score: float, final: float, lessons: Band, what: str = "return", places: int = 1) -> str:
    """Where a curve (its score and final return, or the `what` it plots) lies against the lessons' band: within it,
    slower, or not learning, with the numbers that decided (to `places` decimals)."""
    low, high = min(lessons.scores), max(lessons.scores)
    f = f".{places}f"
    said = (f"your curve's score {score:{f}}, the lesson's {low:{f}} to {high:{f}} (mean "
            f"{statistics.fmean(lessons.scores):{f}}) over its {len(lessons.scores)} seeds; your final {what} "
            f"{final:{f}}, theirs {min(lessons.finals):{f}} to {max(lessons.finals):{f}}, from {lessons.start:{f}} at "
            "the start")
    if final < lessons.start + LEARNING * lessons.gain:
        return (f"not learning: {said}. Your function passes its cases, so look at what differs on real data: "
                "shapes (a [T] where the lesson has [T, envs]), dtypes, a tensor detached or not")
    if score >= low - MARGIN * abs(lessons.gain):
        return f"within the lesson's band: {said}"
    return f"slower than the lesson: {said}"


def train(name: str, fn: Callable | None, more: tuple[str, ...] = (), lessons: Band | None = None) -> list[str]:
    """Train the exercise's lesson with `fn` swapped in (None: the lesson's own function), seed 1; the report's
    lines. `more`: flags after the recipe's (a test's tiny run); `lessons`: the band to place it in (the
    record's by default)."""
    training = TRAININGS[name]
    lesson = launch.import_lesson(training.lesson)
    own = getattr(lesson, ATTRIBUTES.get(name, "Agent"))
    methods = {attribute: lesson.Agent.__dict__[attribute] for attribute in set(METHODS.values())
               if attribute in lesson.Agent.__dict__}
    exp_name = f"exercise-{name}-{time.time_ns()}"
    argv = [*training.flags, "--seed", "1", "--exp-name", exp_name, *more]
    if fn is not None and name in EDITS:
        edited = edited_source(name)
    try:
        if fn is not None and name in EDITS:
            from exercises.bugs import run_edited

            code = run_edited(training.lesson, edited, argv, {"learners_ppo_loss": fn})
        else:
            if fn is not None:
                swap(name, lesson, fn)
            code = launch.run_main(lesson, argv)
    except Exception as error:  # the learner's function raised on real data: one line, not a traceback
        return [f"{training.lesson} stopped: your function raised {type(error).__name__}: {error}"]
    finally:  # the lesson as it was, for whatever runs next in this process
        setattr(lesson, ATTRIBUTES.get(name, "Agent"), own)
        for attribute, method in methods.items():
            setattr(lesson.Agent, attribute, method)
    if code != 0:
        return [f"{training.lesson} stopped with exit code {code}"]
    (run_dir,) = Path("runs").glob(f"*__{exp_name}__1__*")
    events = read_scalars(run_dir)[0].get(training.tag, [])
    if not events:
        nothing = ("no episode ended" if training.tag == "charts/episodic_return"
                   else f"nothing logged to {training.tag}")
        return [f"{run_dir}: {nothing}, nothing to compare"]
    episodes = [(event.step, event.value) for event in events]
    if training.bin is not None:  # averaged as the record's points are
        episodes = binned(episodes, training.bin)
    lessons = lessons or record_band(training)
    score = curve_score(episodes, lessons.total_steps)
    final = statistics.fmean(v for _, v in episodes[-training.window:])
    record = f"{training.record}-curves.csv" if training.total_steps is not None else f"{training.record}.csv"
    return [f"your run: {run_dir} (its curves: tensorboard --logdir {run_dir})",
            f"the lesson's runs: benchmarks/results/{record}",
            verdict(score, final, lessons, training.what, training.places)]
