"""Read a run and say what looks wrong: `python -m course.diagnose runs/<run>`.

It finds the lesson and its flags in the run's checkpoint, reads the run's TensorBoard logs (the project's one
reader, benchmarks.core.runs.read_scalars) and compares each diagnostic the lessons log (approx_kl, clipfrac,
explained variance, entropy, value loss) with the healthy runs the project recorded for that lesson: over the whole
run and over its second half, as the committed records hold them (benchmarks/results/.../*-diagnostics.csv). It
prints what is outside its range, by how much and since when, and the section of the guide that lists the likely
causes (course/when-ppo-does-not-learn.md); "looks healthy" when nothing is.

The rule (one for every lesson). For each diagnostic and part of the run, the run's median over its updates is
compared with the healthy runs:
- where three seeds or more were recorded, with the range of the healthy seeds' medians, widened on each side by
  MARGIN times its width (on a log scale for approx_kl and the value loss, which vary over decades between seeds);
- where fewer than five were, also with the band that the middle 90% of every healthy seed's updates fall in (the
  lowest 5th percentile to the highest 95th), which then narrows the range. With five seeds or more the seeds'
  own spread judges alone: the band of a diagnostic that trends (the entropy falls all run) is only as wide as
  the healthy seeds' last values, and a fresh healthy Pendulum seed's entropy fell below it (benchmarks/README.md).
A median outside is flagged. MARGIN is the smallest at which no healthy seed of a recipe with five seeds or
more of the lessons it was chosen on (CHOSEN_ON) is flagged when it is judged against the other seeds (leave one
out; benchmarks/README.md, "Reading a run: the healthy ranges and the rule"); where a recipe's own seeds are
flagged so, the report says so. The return is judged
against the healthy runs' return at the same env step: flat when it never gained a quarter of what the slowest
healthy seed had gained by then (the exercises' "not learning"), collapsed when it lost more than half of what it
had gained at its best, below when it ends with less than half of what the slowest healthy seed had gained (and is
neither).

Usage:
    python -m course.diagnose runs/CartPole-v1__ppo_cartpole__1__1700000000
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import math
import pickle
import statistics
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.core.stats import DIAGNOSTIC_TAGS, run_parts

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
GUIDE = "course/when-ppo-does-not-learn.md"
TAGS = DIAGNOSTIC_TAGS
LOG_SCALE = {"losses/approx_kl", "losses/value_loss"}  # positive, and spread over decades between healthy seeds
PARTS = tuple(run_parts([]))  # the parts of a run the records hold: all of it, its second half
PART_NAMES = {"all": "the whole run", "second half": "its second half"}
FEW = 5  # from this many healthy seeds on, the widened medians' range alone is the limit (Range.limits)
MARGIN = 1.5  # the smallest margin with no false alarm on held-out healthy seeds (benchmarks/README.md)
# The lessons whose healthy recipes of five seeds or more chose MARGIN (their defaults, 8 to 15 seeds), before the
# memory and masking lessons' five-seed recipes were recorded: held out the same way, those flag some of their own
# healthy seeds at any margin benchmarks/README.md tabulates, and a report on them says so (report()).
CHOSEN_ON = ("ppo_cartpole.py", "ppo_lunarlander_vec.py", "ppo_pendulum_continuous.py")
MIN_UPDATES = 10  # fewer logged updates than this: too short to judge
EPISODES = 20  # the return's window, as the benchmarks' final return and the exercises' curves
FLAT = 0.25  # gained less than this share of the slowest healthy seed's gain by the same step: flat
COLLAPSE = 0.5  # lost more than this share of its best gain: collapsed
BELOW = 0.5  # gained less than this share of the slowest healthy seed's gain by the same step (and not flat): below


# --- the symptoms: each a section of the guide ------------------------------------------------------------------

@dataclass(frozen=True)
class Symptom:
    anchor: str  # the guide's heading, as its link names it
    title: str
    short: str  # one line for the report


SYMPTOMS = {s.anchor: s for s in [
    Symptom("the-return-stays-flat", "The return stays flat", "the return never gained a quarter of what the slowest healthy seed had gained by the same step"),
    Symptom("the-return-ends-below-the-healthy-runs", "The return ends below the healthy runs",
            "the return gained less than half of what the slowest healthy seed had gained by the same step"),
    Symptom("the-return-rises-then-collapses", "The return rises, then collapses",
            "the return rose, then lost most of what it had gained"),
    Symptom("approx_kl-above-the-healthy-range", "approx_kl above the healthy range",
            "each update moves the policy further than in a healthy run"),
    Symptom("approx_kl-or-clipfrac-below-the-healthy-range", "approx_kl or clipfrac below the healthy range",
            "the updates move the policy less than in a healthy run, or not at all"),
    Symptom("clipfrac-high", "clipfrac high", "many samples' ratios end outside the clip"),
    Symptom("entropy-collapses-early", "Entropy collapses early", "the policy stopped exploring early"),
    Symptom("entropy-never-falls", "Entropy never falls", "the policy stays more random than in a healthy run"),
    Symptom("explained-variance-below-the-healthy-range", "Explained variance below the healthy range",
            "the value function predicts the returns worse than in a healthy run"),
    Symptom("the-value-loss-above-the-healthy-range", "The value loss above the healthy range", "the value loss is above the healthy runs' range"),
    Symptom("the-value-loss-far-below-the-healthy-runs", "The value loss far below the healthy runs",
            "the value function fits its targets better than any healthy run: they may be too easy"),
]}
# (tag, the run's median "above" or "below" the healthy range) -> the symptom's anchor (None: reported, no symptom)
TRIGGERS = {
    ("losses/approx_kl", "above"): "approx_kl-above-the-healthy-range",
    ("losses/approx_kl", "below"): "approx_kl-or-clipfrac-below-the-healthy-range",
    ("losses/clipfrac", "above"): "clipfrac-high",
    ("losses/clipfrac", "below"): "approx_kl-or-clipfrac-below-the-healthy-range",
    ("losses/entropy", "below"): "entropy-collapses-early",
    ("losses/entropy", "above"): "entropy-never-falls",
    ("losses/explained_variance", "below"): "explained-variance-below-the-healthy-range",
    ("losses/explained_variance", "above"): None,  # V explains the returns better than healthy: no fault by itself
    ("losses/value_loss", "above"): "the-value-loss-above-the-healthy-range",
    ("losses/value_loss", "below"): "the-value-loss-far-below-the-healthy-runs",
}


# --- the healthy runs on record ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Recipe:
    """Healthy runs of a lesson at one set of flags: their records (paths under benchmarks/results/ without the
    -diagnostics.csv / -curves.csv ending) and the flags that differ from the lesson's defaults."""
    lesson: str
    flags: dict = field(default_factory=dict)
    records: tuple[str, ...] = ()

    def describe(self) -> str:
        changed = ", ".join(f"{k.replace('_', '-')} {v}" for k, v in self.flags.items())
        return f"{self.lesson} at its defaults" + (f" but {changed}" if changed else "")


RECIPES = [
    Recipe("ppo_cartpole.py", {}, ("diagnostics/ppo_cartpole", "debugging/ppo_cartpole-healthy")),
    Recipe("ppo_lunarlander_vec.py", {}, ("diagnostics/ppo_lunarlander_vec", "debugging/ppo_lunarlander_vec-healthy")),
    Recipe("ppo_lunarlander_vec.py", {"total_timesteps": 500_000}, ("exercises/ppo_lunarlander_vec-500k",)),
    Recipe("ppo_pendulum_continuous.py", {}, ("debugging/ppo_pendulum_continuous-clip-healthy",)),
    Recipe("ppo_pendulum_continuous.py", {"clip_vloss": True}, ("diagnostics/ppo_pendulum_continuous-clip",)),
    Recipe("ppo_pendulum_continuous.py", {"objective": "kl", "clip_vloss": True},
           ("diagnostics/ppo_pendulum_continuous-kl",)),
    Recipe("ppo_breakout_atari.py", {"total_timesteps": 500_000}, ("ppo_breakout_atari-constclip",)),
    Recipe("ppo_breakout_atari.py", {"total_timesteps": 500_000, "anneal_clip": True},
           ("diagnostics/ppo_breakout_atari-bf16",)),
    Recipe("ppo_breakout_atari.py", {"total_timesteps": 10_000_000},
           ("diagnostics/ppo_breakout_atari-long40m-constclip", "diagnostics/ppo_breakout_atari-long40m-constclip-seed2")),
    Recipe("ppo_breakout_atari.py", {"total_timesteps": 10_000_000, "anneal_clip": True},
           ("diagnostics/ppo_breakout_atari-long40m", "diagnostics/ppo_breakout_atari-long40m-seed2")),
    Recipe("ppo_mario_cnn.py", {"total_timesteps": 122_880, "anneal_lr": True, "action_type": "right"},
           ("diagnostics/ppo_mario_cnn-right",)),
    # The memory study's runs (benchmarks/memory.py): the LSTM at its defaults, and the frame stack that also
    # solves the task. Not --no-lstm alone: it never learns the task (benchmarks/README.md's "Memory"), so a run at
    # those flags is held against the defaults, and flagged.
    Recipe("ppo_lstm_memory.py", {}, ("memory/lstm", "debugging/ppo_lstm_memory-healthy")),
    Recipe("ppo_lstm_memory.py", {"lstm": False, "frame_stack": 4},
           ("memory/stack4", "debugging/ppo_lstm_memory-stack4-healthy")),
    # The masking study's runs with the mask (benchmarks/masking.py)
    Recipe("ppo_action_masking.py", {}, ("masking/mask", "debugging/ppo_action_masking-healthy")),
]
LANGUAGE_LESSONS = ("ppo_rlhf_tiny.py", "grpo_rlhf_tiny.py")  # read by language_report, against their own record
LESSONS = sorted({recipe.lesson for recipe in RECIPES} | set(LANGUAGE_LESSONS))


def curves_file(record: str) -> Path:
    """A record's curves CSV: beside its diagnostics, or in benchmarks/results/ (the Breakout runs' are there)."""
    path = RESULTS / f"{record}-curves.csv"
    return path if path.exists() else RESULTS / f"{Path(record).name}-curves.csv"


def healthy_rows(recipe: Recipe) -> list[dict]:
    """The recipe's diagnostics rows (one per seed, tag and part), every record's (read once a process)."""
    return _rows(recipe.records)


@functools.cache
def _rows(records: tuple[str, ...]) -> list[dict]:
    from benchmarks.core.records import load_diagnostics

    rows = []
    for record in records:
        rows += [{**row, "record": record} for row in load_diagnostics(RESULTS / f"{record}-diagnostics.csv")]
    return rows


def seeds(rows: list[dict]) -> list[tuple[str, str]]:
    """The healthy seeds diagnostics rows hold: (record, seed), in order."""
    return sorted({(row["record"], row["seed"]) for row in rows})


def held_out(recipe: Recipe, margin: float = MARGIN) -> tuple[int, list[tuple]]:
    """The rule on each healthy seed of `recipe`, judged against the recipe's other seeds (leave one out; none under
    two seeds): how many seeds were judged, and the false alarms, each (record, seed, tag, part, median, limits,
    side). benchmarks/README.md's "Choosing the margin" tabulates them over every recipe."""
    rows = healthy_rows(recipe)
    judged, alarms = 0, []
    if len(seeds(rows)) < 2:
        return judged, alarms
    for seed in seeds(rows):
        mine = {(row["tag"], row["part"]): row["median"] for row in rows if (row["record"], row["seed"]) == seed}
        others = ranges([row for row in rows if (row["record"], row["seed"]) != seed])
        judged += 1
        alarms += [(*seed, *found) for found in outside(mine, others, margin)]
    return judged, alarms


def healthy_returns(recipe: Recipe) -> dict[str, list[tuple[int, float]]]:
    """Each healthy seed's training episodes, (env step, return), by record and seed (read once a process)."""
    return _returns(recipe.records)


@functools.cache
def _returns(records: tuple[str, ...]) -> dict[str, list[tuple[int, float]]]:
    from benchmarks.core.records import load_points

    found: dict[str, list[tuple[int, float]]] = {}
    for record in records:
        path = curves_file(record)
        if not path.exists():
            continue
        for point in load_points(path):
            if point["kind"] == "training" and point["tag"] == "charts/episodic_return":
                found.setdefault(f"{record} {point['seed']}", []).append((point["env_steps"], point["value"]))
    return found


# --- the judgement --------------------------------------------------------------------------------------------

@dataclass
class Range:
    band: tuple[float, float]  # the lowest p5 to the highest p95 of the healthy seeds' updates
    medians: list[float]  # each healthy seed's median

    def widened(self, tag: str, margin: float = MARGIN) -> tuple[float, float] | None:
        """The seeds' medians' range widened by `margin` times its width each side; None under three seeds."""
        if len(self.medians) < 3:
            return None
        scale, unscale = _scale(tag)
        low, high = scale(min(self.medians)), scale(max(self.medians))
        width = high - low
        return unscale(low - margin * width), unscale(high + margin * width)

    def limits(self, tag: str, margin: float = MARGIN) -> tuple[float, float]:
        """The healthy range a median must stay in: the widened medians' range, narrowed to the band where fewer
        than FEW seeds were recorded; the band alone under three."""
        widened = self.widened(tag, margin)
        if widened is None:
            return self.band
        if len(self.medians) >= FEW:  # enough seeds: their spread judges (the module docstring's rule)
            return widened
        return max(self.band[0], widened[0]), min(self.band[1], widened[1])


def _scale(tag: str):
    if tag in LOG_SCALE:
        return (lambda x: math.log10(max(x, 1e-12))), (lambda y: 10 ** y)
    return (lambda x: x), (lambda y: y)


def ranges(rows: list[dict]) -> dict[tuple[str, str], Range]:
    """(tag, part) -> the healthy Range, from diagnostics rows."""
    grouped: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        grouped.setdefault((row["tag"], row["part"]), []).append(row)
    return {key: Range((min(r["p5"] for r in group), max(r["p95"] for r in group)), [r["median"] for r in group])
            for key, group in grouped.items()}


@dataclass
class Finding:
    tag: str
    part: str
    median: float
    limits: tuple[float, float]
    direction: str  # "above" or "below"
    since: tuple[int, bool] | None  # when the rolling median first left the range, and whether it is out at the end

    @property
    def symptom(self) -> Symptom | None:
        anchor = TRIGGERS[(self.tag, self.direction)]
        return SYMPTOMS[anchor] if anchor else None

    def severity(self) -> float:
        """How far outside its limits the median is, in widths of the limits (on the diagnostic's scale)."""
        scale, _ = _scale(self.tag)
        low, high = scale(self.limits[0]), scale(self.limits[1])
        return abs(scale(self.median) - (high if self.direction == "above" else low)) / max(high - low, 1e-12)

    def how_far(self) -> str:
        edge = self.limits[1] if self.direction == "above" else self.limits[0]
        if self.tag in LOG_SCALE or (self.tag == "losses/clipfrac" and self.direction == "above"):
            if edge > 0 and self.median > 0:
                ratio = self.median / edge if self.direction == "above" else edge / self.median
                return f"{ratio:.3g} times {'above' if self.direction == 'above' else 'below'} the range"
        return f"{abs(self.median - edge):.3g} {self.direction} the range"


def since(series: list[tuple[int, float]], limits: tuple[float, float], direction: str) -> tuple[int, bool] | None:
    """When the run's rolling median (over a tenth of the updates, at least 5) first went outside the limits on
    `direction`'s side: (the middle step of that window, whether it is still outside at the end); None if it never
    did (a median outside the limits while no window of it is: a diagnostic that jumps about)."""
    window = max(5, len(series) // 10)
    values = [v for _, v in series]
    first, outside = None, False
    for i in range(len(series)):
        rolled = statistics.median(values[max(0, i - window + 1): i + 1])
        outside = rolled > limits[1] if direction == "above" else rolled < limits[0]
        if outside and first is None:
            first = series[max(0, i - (window - 1) // 2)][0]  # (the window's middle: where the change sits)
    return None if first is None else (first, outside)


def outside(medians: dict[tuple[str, str], float], healthy: dict[tuple[str, str], Range],
            margin: float = MARGIN) -> list[tuple[str, str, float, tuple[float, float], str]]:
    """(tag, part, median, limits, "above" or "below") for each median outside its healthy limits; `medians` by
    (tag, part), as a run's series gives them or a diagnostics CSV's row records them."""
    found = []
    for tag in TAGS:
        for part in PARTS:
            if (tag, part) not in medians or (tag, part) not in healthy:
                continue
            limits, value = healthy[(tag, part)].limits(tag, margin), medians[(tag, part)]
            if not limits[0] <= value <= limits[1]:
                found.append((tag, part, value, limits, "above" if value > limits[1] else "below"))
    return found


def judge(series: dict[str, list[tuple[int, float]]], healthy: dict[tuple[str, str], Range],
          margin: float = MARGIN) -> list[Finding]:
    """What in a run's diagnostics (tag -> [(env step, value)] in logging order) lies outside the healthy ranges."""
    medians = {(tag, part): statistics.median(values) for tag, points in series.items() if points
               for part, values in run_parts([v for _, v in points]).items()}
    return [Finding(tag, part, value, limits, direction, since(run_parts(series[tag])[part], limits, direction))
            for tag, part, value, limits, direction in outside(medians, healthy, margin)]


def rolling_means(returns: list[tuple[int, float]], window: int = EPISODES) -> list[tuple[int, float]]:
    """(env step, mean of the `window` episodes ending there), from the window-th episode on."""
    values = [v for _, v in returns]
    return [(returns[i][0], statistics.fmean(values[i - window + 1: i + 1])) for i in range(window - 1, len(values))]


@dataclass
class ReturnVerdict:
    first: float  # the mean of the first EPISODES episodes: about the random policy's level
    final: float
    best: float
    healthy_gain: float | None  # the slowest healthy seed's gain by the run's last step (None: no record)
    symptoms: list[str]


def judge_return(returns: list[tuple[int, float]], healthy: dict[str, list[tuple[int, float]]]) -> ReturnVerdict | None:
    """The return's verdict; None when the run finished fewer than 2 * EPISODES episodes."""
    if len(returns) < 2 * EPISODES:
        return None
    rolled = rolling_means(returns)
    first, final, best = rolled[0][1], rolled[-1][1], max(v for _, v in rolled)
    last_step = returns[-1][0]
    gains = []
    for episodes in healthy.values():
        upto = [e for e in episodes if e[0] <= last_step]
        if len(upto) >= 2 * EPISODES:
            gains.append(rolling_means(upto)[-1][1] - rolling_means(upto)[0][1])
    healthy_gain = min(gains) if gains else None
    symptoms = []
    if healthy_gain is not None and healthy_gain > 0 and final - first < FLAT * healthy_gain:
        if best - first >= FLAT * healthy_gain and best - final > COLLAPSE * (best - first):
            symptoms.append("the-return-rises-then-collapses")
        elif best - first >= FLAT * healthy_gain:  # it did rise, kept most of it, and ends far below: not flat
            symptoms.append("the-return-ends-below-the-healthy-runs")
        else:
            symptoms.append("the-return-stays-flat")
    elif best > first and best - final > COLLAPSE * (best - first) and (
            healthy_gain is None or best - first >= FLAT * healthy_gain):
        symptoms.append("the-return-rises-then-collapses")
    elif healthy_gain is not None and healthy_gain > 0 and final - first < BELOW * healthy_gain:
        symptoms.append("the-return-ends-below-the-healthy-runs")
    return ReturnVerdict(first, final, best, healthy_gain, symptoms)


# --- reading a run --------------------------------------------------------------------------------------------

class BadInput(Exception):
    """What is wrong with the input, in one line."""


@dataclass
class Run:
    folder: Path
    lesson: str
    args: dict
    series: dict[str, list[tuple[int, float]]]
    returns: list[tuple[int, float]]


def read_run(folder: Path) -> Run:
    """The run's lesson and flags (its checkpoint) and its logged scalars; BadInput where it is not a run of a
    lesson that can be judged."""
    import torch

    from benchmarks.core.runs import read_scalars

    folder = Path(folder)
    if folder.is_file() and folder.name == "checkpoint.pt":
        folder = folder.parent
    if folder.is_file():
        raise BadInput(f"{folder} is a file, not a folder: give a run's folder, runs/<run>")
    if not folder.is_dir():
        raise BadInput(f"no such folder: {folder} (give a run's folder, runs/<run>)")
    if not list(folder.glob("events.out.tfevents.*")):
        raise BadInput(f"{folder} holds no TensorBoard events: give a run's folder, runs/<run>")
    checkpoint = folder / "checkpoint.pt"
    if not checkpoint.is_file():
        raise BadInput(f"{folder} holds no checkpoint.pt, which names the lesson and its flags (the lessons write one "
                       "every --checkpoint-every updates and at the end)")
    try:
        ckpt = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:  # torch's message advises weights_only=False: never load an unknown pickle so
        raise BadInput(f"cannot read {checkpoint}: the safe loader (tensors, plain containers, numbers and "
                       "strings) refused it, so it is not a checkpoint one of the lessons wrote") from None
    except Exception as error:  # noqa: BLE001 (any unreadable file is the same bad input)
        raise BadInput(f"cannot read {checkpoint}: not a torch checkpoint, or one cut short "
                       f"({type(error).__name__}: {error})".splitlines()[0]) from None
    if not isinstance(ckpt, dict) or ckpt.get("script") not in LESSONS or not isinstance(ckpt.get("args"), dict):
        raise BadInput(f"{checkpoint} is not a checkpoint of one of the lessons ({', '.join(LESSONS)})")
    scalars = read_scalars(folder)[0]
    if not any(scalars.values()):
        raise BadInput(f"{folder}'s events files hold no scalars: they are empty, corrupt or not TensorBoard's")
    if not any(tag.startswith(("losses/", "charts/")) for tag in scalars):
        raise BadInput(f"{folder}'s logs hold none of the lessons' tags (losses/..., charts/...): they are another "
                       f"program's, such as {sorted(scalars)[0]}")
    series = {tag: [(e.step, e.value) for e in scalars.get(tag, [])] for tag in (*TAGS, *LANGUAGE_TAGS)}
    # A checkpoint well past the logs' last step: the events file was cut (a copy that stopped, a full disk), and
    # half a run must not be judged as a whole one. The slack allows a Ctrl-C save a rollout or two after the last
    # log, and ranks under torchrun (a quarter more).
    logged = max((points[-1][0] for points in series.values() if points), default=0)
    step, rollout = ckpt.get("global_step"), ckpt["args"].get("num_envs", 1) * ckpt["args"].get("num_steps", 0)
    if isinstance(step, int) and logged and step > 1.25 * logged + 2 * rollout:
        raise BadInput(f"{folder}'s logs end at step {logged:,} but its checkpoint is at step {step:,}: its events "
                       "file is cut short, and a part of a run cannot be judged as a whole one")
    returns = [(e.step, e.value) for e in scalars.get("charts/episodic_return", [])]
    return Run(folder, ckpt["script"], ckpt["args"], series, returns)


def hyperparameters(lesson: str) -> dict:
    """The lesson's hyperparameters and their defaults (its Hyperparameters class: not the running flags)."""
    from benchmarks.core import launch

    module = launch.import_lesson(lesson)
    return {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
            for f in dataclasses.fields(module.Hyperparameters)}


def recipe_for(lesson: str, args: dict) -> tuple[Recipe, dict[str, tuple]]:
    """The healthy recipe closest to the run's flags (all its own flags matched, the most of them), and the
    hyperparameters in which the run differs from it: {name: (the run's, the recipe's)}. Where the run's length
    matches no recipe's (a 300k LunarLander run: neither the 500k recipe nor the 1M defaults), the recipe whose
    every update is on record wins the tie: only it can be read over the steps the run took."""
    from benchmarks import debugging

    defaults = hyperparameters(lesson)
    candidates = []
    for recipe in (r for r in RECIPES if r.lesson == lesson):
        expected = {**defaults, **recipe.flags}
        diff = {k: (args.get(k), v) for k, v in expected.items() if k in args and args[k] != v}
        by_step = "total_timesteps" in diff and not recipe.flags and debugging.series_file(lesson).exists()
        candidates.append(((len(diff), not by_step, -len(recipe.flags)), recipe, diff))
    _, best, best_diff = min(candidates, key=lambda c: c[0])
    return best, best_diff


def stopped_early(recipe: Recipe, defaults: dict, series: dict[str, list[tuple[int, float]]],
                  args: dict) -> tuple[int, int] | None:
    """(the run's last logged step, the recipe's total steps) when the run ended more than one rollout before the
    recipe's end (Ctrl-C, killed, a short --total-timesteps); None when it ran the recipe's length or longer."""
    total = {**defaults, **recipe.flags}.get("total_timesteps")
    last = max((points[-1][0] for points in series.values() if points), default=0)
    rollout = args.get("num_envs", 1) * args.get("num_steps", 0)
    if isinstance(total, int) and last + rollout < total:
        return last, total
    return None


def ranges_upto(lesson: str, step: int) -> tuple[dict[tuple[str, str], Range], int]:
    """The healthy ranges of the lesson's defaults read at the same steps as a run that stopped at `step`: each
    recorded healthy seed's updates up to `step` (benchmarks/results/debugging/<lesson>-healthy-series.csv), split
    into parts and summed up as the whole-run records are; and how many seeds. ({}, 0) under three seeds."""
    from benchmarks import debugging
    from benchmarks.core.stats import spread

    rows = []
    for seed, by_tag in debugging.healthy_series(lesson).items():
        for tag, points in by_tag.items():
            values = [v for s, v in points if s <= step]
            if len(values) < MIN_UPDATES:
                continue
            rows += [{"record": "series", "seed": seed, "tag": tag, "part": part, **spread(part_values)}
                     for part, part_values in run_parts(values).items()]
    count = len(seeds(rows))
    return (ranges(rows), count) if count >= 3 else ({}, 0)


@dataclass
class Assessment:
    """A run judged: the healthy recipe it was held to, the flags it changes from it, what lies outside the
    diagnostics' limits and the return's verdict; for a run that stopped early, (its last step, the recipe's
    total) and how many healthy seeds' series its diagnostics were read against (0: not judged)."""
    recipe: Recipe
    changed: dict[str, tuple]
    findings: list[Finding]
    verdict: ReturnVerdict | None
    stopped: tuple[int, int] | None = None
    series_seeds: int = 0
    other_schedule: bool = False  # stopped early by its own --total-timesteps, its learning rate annealed to it

    def wider_clip(self) -> bool:
        """clipfrac below its range while approx_kl is above: not two faults that contradict each other but one
        pattern, a clip range wider than the healthy runs' (a larger --clip-coef counts fewer ratios outside it,
        and stops fewer, while the policy moves more)."""
        sides = {(f.tag, f.direction) for f in self.findings}
        return (("losses/approx_kl", "above") in sides and ("losses/clipfrac", "below") in sides
                and ("losses/approx_kl", "below") not in sides)

    def symptoms(self) -> list[str]:
        """The guide's sections it shows (anchors): the return's first, then the diagnostics' in their order; not
        "approx_kl or clipfrac below" when only clipfrac is below and approx_kl is above (wider_clip)."""
        found = [f.symptom.anchor for f in self.findings if f.symptom
                 and not (self.wider_clip() and f.tag == "losses/clipfrac" and f.direction == "below")]
        return list(dict.fromkeys([*(self.verdict.symptoms if self.verdict else []), *found]))

    def worst(self, anchor: str) -> float:
        """How far outside its limits the run's furthest finding for a diagnostic's symptom is (Finding.severity)."""
        return max((f.severity() for f in self.findings if f.symptom and f.symptom.anchor == anchor), default=0.0)


def assess(lesson: str, args: dict, series: dict[str, list[tuple[int, float]]],
           returns: list[tuple[int, float]]) -> Assessment:
    """A run of `lesson` with `args` (its checkpoint's flags), its diagnostics' `series` and its `returns`, held to
    the healthy recipe it shares its flags with. The return is not judged against a recipe of another env.

    A run that stopped before the recipe's end is read over the same steps as the healthy runs: its diagnostics
    against the healthy seeds' series cut at its last step (where the lesson's defaults have such a record; none:
    not judged, since a whole run's medians are not a part's), its return against theirs at the same step."""
    recipe, changed = recipe_for(lesson, args)
    stopped = stopped_early(recipe, hyperparameters(lesson), series, args)
    count = 0
    # A run of its own shorter --total-timesteps with the learning rate annealed follows another schedule: its rate
    # reaches 0 at its own end, so its late updates are smaller than the healthy runs' at the same step (LunarLander
    # at 300,000 steps: approx_kl and clipfrac below in all three fresh seeds, benchmarks/README.md); no healthy
    # record shares that schedule, and its diagnostics are left unjudged.
    schedule = stopped is not None and bool(args.get("anneal_lr")) and args.get("total_timesteps") != stopped[1]
    if stopped is None:
        healthy = ranges(healthy_rows(recipe))
    elif not recipe.flags and not schedule:
        healthy, count = ranges_upto(lesson, stopped[0])
    else:
        healthy = {}
    findings = judge(series, healthy)
    verdict = judge_return(returns, healthy_returns(recipe) if "env_id" not in changed else {})
    return Assessment(recipe, changed, findings, verdict, stopped, count, schedule)


# --- the language lessons ------------------------------------------------------------------------------------
# Their runs are read against their own record (benchmarks/results/language/curves.csv, `python -m
# benchmarks.language`): each rollout's hidden score, the reward model's score, the share of grammatical responses
# and the KL to pi_ref, the median over the last quarter of the run's updates set against the recorded seeds' of
# the same lesson at its defaults, their range widened by MARGIN times its width on each side, as for the others.
LANGUAGE_TAGS = {"objective/hidden_score": "hidden_score", "objective/scores": "reward_model_score",
                 "objective/valid_share": "valid_share", "objective/kl": "kl"}
LANGUAGE_RECORD = RESULTS / "language" / "curves.csv"
LANGUAGE_SETTINGS = {"ppo_rlhf_tiny.py": "ppo", "grpo_rlhf_tiny.py": "grpo"}


def last_quarter(values: list[float]) -> float:
    """The median of the last quarter of a run's updates (at least one)."""
    return statistics.median(values[-max(1, len(values) // 4):])


def recorded_medians(setting: str) -> dict[int, dict[str, float]]:
    """{seed: {name: the last-quarter median}} of each recorded run of a setting of the language record ("ppo",
    "grpo", "ppo-beta0", ...)."""
    from benchmarks.core.records import read_csv

    per_seed: dict[int, list[dict]] = {}
    for row in read_csv(LANGUAGE_RECORD):
        if row["setting"] == setting:
            per_seed.setdefault(int(row["seed"]), []).append(row)
    return {seed: {name: last_quarter([float(r[name]) for r in sorted(rows, key=lambda r: int(r["step"]))])
                   for name in LANGUAGE_TAGS.values()} for seed, rows in sorted(per_seed.items())}


def language_ranges(lesson: str) -> tuple[dict[str, tuple[float, float]], int]:
    """{name: (low, high)}: the recorded seeds' last-quarter medians of the lesson at its defaults, their range
    widened by MARGIN times its width on each side; and how many seeds."""
    per_seed = recorded_medians(LANGUAGE_SETTINGS[lesson])
    limits = {}
    for name in LANGUAGE_TAGS.values():
        medians = [seed_medians[name] for seed_medians in per_seed.values()]
        width = max(medians) - min(medians)
        limits[name] = (min(medians) - MARGIN * width, max(medians) + MARGIN * width)
    return limits, len(per_seed)


def language_findings(medians: dict[str, float], limits: dict[str, tuple[float, float]]) -> list[str]:
    """What is outside the healthy limits, one line each, and the pattern of reward hacking where R's score is not
    below its range while the share of grammatical responses is below its own."""
    lines = []
    for name, value in medians.items():
        low, high = limits[name]
        if not low <= value <= high:
            lines.append(f"  {name.replace('_', ' ')}: {value:.3g} against {low:.3g} to {high:.3g} "
                         f"({'below' if value < low else 'above'})")
    if medians["valid_share"] < limits["valid_share"][0] and medians["reward_model_score"] >= \
            limits["reward_model_score"][0]:
        lines.append("  ! reward hacking: the reward model scores the responses as well as the healthy runs' or "
                     "better while fewer of them are the language: pi has left the text R was trained on (too small "
                     "a beta, or a KL target too far)")
    return lines


def language_report(run: Run) -> list[str]:
    """A language lesson's run against its record (see LANGUAGE_TAGS)."""
    series = {name: [v for _, v in run.series[tag]] for tag, name in LANGUAGE_TAGS.items()}
    updates = len(series["kl"])
    if updates < MIN_UPDATES:
        raise BadInput(f"{run.folder} logged {updates} updates: too short to judge (fewer than {MIN_UPDATES})")
    limits, count = language_ranges(run.lesson)
    defaults = hyperparameters(run.lesson)
    changed = {k: (run.args.get(k), v) for k, v in defaults.items() if k in run.args and run.args[k] != v}
    medians = {name: last_quarter(values) for name, values in series.items()}
    lines = [f"{run.folder}: {run.lesson} on {run.args.get('env_id')}, {run.series['objective/kl'][-1][0]:,} token "
             f"steps, {updates} updates",
             f"compared with {count} recorded runs of {run.lesson} at its defaults "
             f"({LANGUAGE_RECORD.relative_to(ROOT)}): the median over the last quarter of the updates"]
    if changed:
        lines.append("note: your run changes " + ", ".join(
            f"{k.replace('_', '-')} ({mine!r}, there {theirs!r})" for k, (mine, theirs) in changed.items())
            + ": a difference may be what the change does, not a fault")
    lines += ["", "last quarter: " + ", ".join(f"{name.replace('_', ' ')} {value:.3g}" for name, value in medians.items())]
    if run.args.get("adaptive_kl"):
        target = run.args.get("kl_target")
        inside = 0.8 * target <= medians["kl"] <= 1.2 * target
        lines.append(f"the KL to pi_ref against the controller's target {target:g}: "
                     + ("within its band (+-20%)" if inside else "outside its band (+-20%): beta has not caught up"))
    findings = language_findings(medians, limits)
    lines.append("")
    lines += (["outside the recorded runs' range:", *findings] if findings else
              ["looks healthy: the hidden score, R's score, the valid share and the KL within the recorded runs' range"])
    return lines


def report(run: Run) -> tuple[list[str], list[Finding], ReturnVerdict | None]:
    """The report's lines, the findings and the return's verdict."""
    if run.lesson in LANGUAGE_LESSONS:
        return language_report(run), [], None
    updates = len(run.series["losses/approx_kl"])
    if updates < MIN_UPDATES:
        raise BadInput(f"{run.folder} logged {updates} updates: too short to judge (fewer than {MIN_UPDATES})")
    assessed = assess(run.lesson, run.args, run.series, run.returns)
    recipe, changed, findings, verdict = assessed.recipe, assessed.changed, assessed.findings, assessed.verdict
    count = len(seeds(healthy_rows(recipe)))
    steps = run.series["losses/approx_kl"][-1][0]
    lines = [f"{run.folder}: {run.lesson} on {run.args.get('env_id')}, {steps:,} env steps, {updates} updates"]
    if assessed.stopped is None:
        lines.append(f"compared with {count} healthy run{'s' if count > 1 else ''} of {recipe.describe()} "
                     f"({', '.join(f'benchmarks/results/{r}-diagnostics.csv' for r in recipe.records)})")
    else:
        last, total = assessed.stopped
        own = run.args.get("total_timesteps")
        lines.append(f"stopped early: at step {last:,} of the recipe's {total:,} ({recipe.describe()})"
                     + (f", as its --total-timesteps {own:,} asks" if isinstance(own, int) and own < total else ""))
        if assessed.series_seeds:
            from benchmarks import debugging

            lines.append(f"compared over the same steps: {assessed.series_seeds} healthy runs' updates up to step "
                         f"{last:,} ({debugging.series_file(run.lesson).relative_to(ROOT)}), and their returns")
        elif assessed.other_schedule:
            lines.append(f"its diagnostics are not judged: its learning rate is annealed to 0 by step {own:,}, the "
                         f"healthy runs' by step {total:,}, so its late updates are smaller than theirs at the same "
                         "step and no healthy record shares its schedule; its return is compared with theirs at the "
                         "same step")
        else:
            lines.append("its diagnostics are not judged: the healthy records of this recipe hold whole runs only, and "
                         "a part of a run is not a whole one; its return is compared with theirs at the same step")
    alarms = held_out(recipe)[1] if assessed.stopped is None and count >= FEW else []  # (fewer: the band judges too)
    if alarms:
        flagged = len({(record, seed) for record, seed, *_ in alarms})
        lines.append(f"note: {flagged} of this recipe's {count} healthy seeds, each judged against the others by this "
                     f"rule, {'is' if flagged == 1 else 'are'} flagged themselves (benchmarks/README.md, \"Choosing the margin\"): its seeds are too "
                     "few for their spread, so a flag here is weak evidence of a fault")
    if changed:
        lines.append("note: the healthy ranges were measured at those flags; your run changes "
                     + ", ".join(f"{k.replace('_', '-')} ({mine!r}, there {theirs!r})" for k, (mine, theirs)
                                 in changed.items())
                     + ": a difference may be what the change does, not a fault")
    lines.append("")
    if verdict is None:
        lines.append(f"return: fewer than {2 * EPISODES} episodes finished, not judged")
    else:
        gain = "" if verdict.healthy_gain is None else \
            f"; the slowest healthy seed had gained {verdict.healthy_gain:+.4g} by this step"
        lines.append(f"return (mean of {EPISODES} episodes): first {verdict.first:.4g}, best {verdict.best:.4g}, "
                     f"last {verdict.final:.4g}{gain}")
        for anchor in verdict.symptoms:
            lines.append(f"  ! {SYMPTOMS[anchor].short}: {GUIDE}#{anchor}")
    if findings:
        lines.append("")
        lines.append("outside the healthy range (the median over the part of the run; the healthy limits):")
        for f in findings:
            if f.since is None:
                when = "no stretch of it stayed out"
            else:
                when = f"out from about step {f.since[0]:,}" + ("" if f.since[1] else ", back inside by the end")
            lines.append(f"  {f.tag} over {PART_NAMES[f.part]}: {f.median:.3g} against {f.limits[0]:.3g} to "
                         f"{f.limits[1]:.3g}, {f.how_far()}; {when}")
    symptoms = assessed.symptoms()
    if assessed.wider_clip():
        lines.append("  (clipfrac below while approx_kl is above: one pattern, not two faults; the clip range is wider "
                     "than the healthy runs', so fewer ratios fall outside it while the policy moves further"
                     + (f"; your run's --clip-coef is {changed['clip_coef'][0]!r}" if "clip_coef" in changed else "")
                     + f": {GUIDE}#approx_kl-above-the-healthy-range)")
    lines.append("")
    if symptoms:
        lines.append("what it looks like, and the likely causes:")
        if changed and verdict and verdict.symptoms:  # the run's own changes come before the guide's generic causes
            lines.append("  first suspect what your run changes: " + ", ".join(
                f"--{k.replace('_', '-')} {mine!r} (the healthy runs' {theirs!r})" for k, (mine, theirs) in changed.items()))
        lines += [f"  {SYMPTOMS[a].title}: {SYMPTOMS[a].short}. {GUIDE}#{a}" for a in symptoms]
    else:
        lines.append("looks healthy: every diagnostic and the return within the healthy runs' ranges")
    return lines, findings, verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.diagnose", description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a run's folder, runs/<run> (its checkpoint.pt names the lesson)")
    args = parser.parse_args(argv)
    try:  # the libraries' warnings (torch's, TensorBoard's) are not the learner's business: one line or the report
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.disable(logging.WARNING)
            try:
                lines = report(read_run(args.run))[0]
            finally:
                logging.disable(logging.NOTSET)
    except BadInput as error:
        print(f"python -m course.diagnose: error: {error}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
