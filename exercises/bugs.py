"""`python -m exercises bug`: silent bugs to hunt. Each is one edit of a lesson's source, a mistake that raises no
error and that PPO's public issue trackers show people making; the lesson trains with it planted, and the learner
finds it from the logs alone, as one finds a bug in one's own PPO.

A planted lesson is the lesson's file with one piece of text replaced (`old` by `new`, which must occur exactly
once: tests/test_exercises.py holds every bug to its lesson), run as that lesson in this process: the usual progress
bar, TensorBoard logs and checkpoints. `--answer N` shows the edit as a diff, what it does, and the diagnostic that
gives it away, with the committed run's figures (benchmarks/results/bugs/, `python -m exercises.bugs --record`)
against the healthy runs' range (benchmarks/results/diagnostics/, the same recipe).
"""

from __future__ import annotations

import difflib
import linecache
import statistics
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path

from benchmarks.core import launch
from benchmarks.core.records import load_diagnostics, read_csv
from benchmarks.core.runs import read_scalars
from benchmarks.core.stats import DIAGNOSTIC_TAGS

RESULTS = launch.ROOT / "benchmarks" / "results"


@dataclass(frozen=True)
class Recipe:
    lesson: str
    flags: tuple[str, ...]
    healthy: str  # the healthy runs' diagnostics, benchmarks/results/<healthy>-diagnostics.csv
    wait: str  # how long it takes on 2 CPU cores (benchmarks/test_exercises_train.py, 2026-12-06)


CARTPOLE = Recipe("ppo_cartpole.py", (), "diagnostics/ppo_cartpole", "about 20 seconds")
LUNAR = Recipe("ppo_lunarlander_vec.py", ("--total-timesteps", "500000"), "exercises/ppo_lunarlander_vec-500k",
               "about 90 seconds")
PENDULUM = Recipe("ppo_pendulum_continuous.py", ("--objective", "clip", "--clip-vloss"),
                  "diagnostics/ppo_pendulum_continuous-clip", "about 50 seconds")


@dataclass(frozen=True)
class Bug:
    recipe: Recipe
    old: str  # the lesson's text, exactly once
    new: str  # what the bug puts there
    mistake: str  # the mistake, in a line (shown by --answer only)
    explanation: str  # what it does to PPO, and how the diagnostic shows it
    tag: str  # the diagnostic that gives it away
    reported: str  # a public report of this class of mistake


BUGS = [
    Bug(CARTPOLE,
        "logratio = newlogprob - b_logprobs[mb]",
        "logratio = newlogprob - newlogprob.detach()",
        "the ratio is taken against the current policy's log-probabilities, not the rollout's",
        "r_t = pi(a_t|s_t) / pi_old(a_t|s_t) needs pi_old's log-probability, recorded when the action was taken. "
        "Recomputed from the policy being updated, r_t is exactly 1 at every minibatch. Its gradient is still the "
        "policy gradient, so the run can learn, but the clip never acts: nothing holds pi near pi_old over the K "
        "epochs. The giveaway: clipfrac is 0 at every update (approx_kl too), where a healthy run's typical update "
        "clips several percent of its samples.",
        "losses/clipfrac",
        "https://github.com/higgsfield-ai/higgsfield/issues/20"),
    Bug(CARTPOLE,
        "rollout.dones[step] = terminated or truncated",
        "rollout.dones[step] = truncated",
        "only time limits mark an episode's end: a fall is not cut from the next episode",
        "dones[t] tells GAE where an episode ended, so that no advantage flows across the end and V(s_{t+1}) is "
        "not the next episode's first state. With only truncations marked, a fall bootstraps from V of the fresh "
        "start that follows it, and the next episode's advantages flow back into the steps before the fall. A "
        "fresh start is worth more than the last moments before a fall, so falling looks like a good action: the "
        "agent learns to fall, faster and faster, and is sure of it. The giveaway: the entropy drops below a "
        "healthy run's while the return sinks below where it started.",
        "losses/entropy",
        "https://github.com/Toni-SM/skrl/issues/449"),
    Bug(LUNAR,
        "loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy_loss",
        "loss = pg_loss + args.vf_coef * v_loss + args.ent_coef * entropy_loss",
        "the entropy bonus has the wrong sign: the loss rewards a certain policy instead of a spread one",
        "L^{CLIP+VF+S} (eq. 9) maximizes c2 S, so the loss to minimize subtracts it. Added, the entropy is "
        "minimized: pi is pushed toward certainty before the advantages have said which action is better, and it "
        "stops trying the others. The giveaway: the entropy falls below a healthy run's, and the return stays far "
        "below.",
        "losses/entropy",
        "https://github.com/nebuly-ai/optimate/pull/250"),
    Bug(LUNAR,
        "for x in (rollout.obs, rollout.actions, rollout.logprobs, advantages, returns, rollout.values)",
        "for x in (rollout.obs, rollout.actions.T, rollout.logprobs, advantages, returns, rollout.values)",
        "the actions are flattened env by env while everything else is flattened step by step",
        "The [T, N] rollout becomes N*T samples, and each quantity must be flattened the same way: sample i is one "
        "state, the action taken there, its log-probability and its advantage. With the actions transposed first, "
        "most samples pair a state with an action taken in another state, and the advantages push pi toward "
        "actions no better than any other: the gradient is noise. The policy stays where it started, uniform over "
        "the 4 actions. The giveaway: the entropy stays at its maximum, ln 4 = 1.386, the whole run (and approx_kl "
        "looks normal: all actions being equally likely, the ratio of any two of them is 1).",
        "losses/entropy",
        "https://github.com/Stable-Baselines-Team/stable-baselines3-contrib/issues/111"),
    Bug(LUNAR,
        "next_obs, rollout.rewards[step], terminated, truncated, info = envs.step(rollout.actions[step])",
        "next_obs, rollout.rewards[(step + 1) % len(rollout.obs)], terminated, truncated, info = envs.step(\n"
        "            rollout.actions[step])",
        "each reward is stored one step late: r_t is recorded as the reward of step t + 1",
        "r_t is the reward for a_t in s_t. Stored one step late, each action is credited with the reward of the "
        "action before it, and an episode's last reward (LunarLander's -100 for a crash, +100 for landing safely) "
        "lands on the first step of the next episode, which had no part in it. The recorded run still learned (its "
        "return is in the figure). The giveaway is the critic: in the "
        "recorded run the median of its value loss is a fraction of every healthy seed's. A diagnostic that looks "
        "better than healthy is as much a sign as one that looks worse.",
        "losses/value_loss",
        "https://github.com/openai/spinningup/issues/50"),
    Bug(PENDULUM,
        "bootstrap = truncated & ~terminated",
        "bootstrap = terminated & ~truncated",
        "truncated and terminated swapped where the rollout bootstraps: every time limit is treated as a "
        "termination",
        "A time limit is not the end of the MDP. Pendulum's episodes never terminate: all are cut at 200 steps, "
        "where V(s_{t+1}) should be bootstrapped from the last observation. With the two names swapped, the "
        "rollout bootstraps only where an episode terminated (never, here) and takes V(s_{t+1}) = 0 at every "
        "time limit: the value targets of an episode's last steps say no more cost is coming, while the same "
        "states elsewhere in an episode keep costing. The critic cannot fit both, and the return climbs far later "
        "than a healthy run's. The giveaway: the value loss stays far above a healthy run's while the pendulum "
        "still swings. Once the policy holds it up, a step costs almost nothing, V(s_{t+1}) = 0 is nearly right "
        "at the time limit too, and the value loss falls into the healthy range: a bug can hide once the run "
        "reaches the states where it does no harm.",
        "losses/value_loss",
        "https://github.com/ray-project/ray/pull/59958"),
    Bug(PENDULUM,
        "        for epoch in range(args.update_epochs):\n",
        "        for epoch in range(args.update_epochs):\n"
        "            with torch.no_grad():  # the value targets, A_t + V(s_t)\n"
        "                b_returns = b_advantages + agent.get_value(b_obs)\n",
        "the value targets are recomputed at every epoch with the critic being updated",
        "V^targ_t = A_t + V_old(s_t) is fixed when the rollout is collected, so that the K epochs regress the "
        "critic on one target. Recomputed from the critic as it is being updated, the target runs ahead of it: "
        "each epoch adds A_t again to a V that has already moved toward A_t + V_old, and the critic chases a target "
        "that moves with it. The giveaway: the value loss stays far above a healthy run's until the policy "
        "holds the pendulum up, and the return climbs far later.",
        "losses/value_loss",
        "https://github.com/michaelnny/deep_rl_zoo/issues/5"),
]


def planted_source(bug: Bug) -> str:
    """The lesson's source with the bug planted. Refuses (ValueError) where its text is not there exactly once."""
    source = (launch.ROOT / bug.recipe.lesson).read_text()
    if source.count(bug.old) != 1:
        raise ValueError(f"{bug.recipe.lesson} holds {bug.old!r} {source.count(bug.old)} times, not once")
    return source.replace(bug.old, bug.new)


def diff(bug: Bug) -> str:
    """The planted edit as a unified diff of the lesson (what --answer shows)."""
    source = (launch.ROOT / bug.recipe.lesson).read_text()
    return "".join(difflib.unified_diff(source.splitlines(keepends=True), planted_source(bug).splitlines(keepends=True),
                                        f"{bug.recipe.lesson} (the lesson)", f"{bug.recipe.lesson} (bug)", n=2))


def run_edited(lesson: str, source: str, argv: list[str], names: dict | None = None) -> int:
    """Run `source`, an edited copy of `lesson`'s file, as that lesson's main() with `argv`, in this process (with
    `names` added to its globals first); its exit code. The edited module takes the lesson's name in sys.modules
    while it runs (its dataclasses and tyro look their types up there), and the lesson is put back afterwards.
    So is the lesson's text in linecache: inspect.getsource reads the edited text while it runs (Python 3.13 finds a
    class by its line number, __firstlineno__, which an edit that adds lines moves; common.cli.one_line_help reads
    Args's source), and a traceback shows the edited lines."""
    stem = Path(lesson).stem
    path = launch.ROOT / lesson
    module = types.ModuleType(stem)
    module.__file__ = str(path)
    module.__dict__.update(names or {})
    saved, saved_lines = sys.modules.get(stem), linecache.cache.get(str(path))
    sys.modules[stem] = module
    linecache.cache[str(path)] = (len(source), None, source.splitlines(keepends=True), str(path))  # (no mtime: kept)
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
        return launch.run_main(module, argv)
    finally:
        if saved is None:
            sys.modules.pop(stem, None)
        else:
            sys.modules[stem] = saved
        if saved_lines is None:
            linecache.cache.pop(str(path), None)
        else:
            linecache.cache[str(path)] = saved_lines


def train(number: int, more: tuple[str, ...] = (), seed: int = 1) -> Path:
    """Train the lesson with bug `number` planted (1-based), seed 1; returns its run folder."""
    bug = BUGS[number - 1]
    exp_name = f"bug-{number}-{time.time_ns()}"
    code = run_edited(bug.recipe.lesson, planted_source(bug),
                      [*bug.recipe.flags, "--seed", str(seed), "--exp-name", exp_name, *more])
    if code != 0:
        raise RuntimeError(f"{bug.recipe.lesson} with bug {number} stopped with exit code {code}")
    (run_dir,) = Path("runs").glob(f"*__{exp_name}__{seed}__*")
    return run_dir


TAGS = DIAGNOSTIC_TAGS
RECORD = RESULTS / "bugs"


def medians(run_dir: Path) -> dict[str, float]:
    """Each diagnostic's median over a run's updates, and its final return (the mean of its last 20 episodes)."""
    scalars = read_scalars(run_dir)[0]
    found = {tag: statistics.median(event.value for event in scalars[tag]) for tag in TAGS if tag in scalars}
    returns = [event.value for event in scalars.get("charts/episodic_return", [])]
    found["final return"] = statistics.fmean(returns[-20:]) if returns else float("nan")
    return found


def healthy_medians(recipe: Recipe) -> dict[str, list[float]]:
    """The healthy runs' medians of each diagnostic over their whole runs, one per seed (the committed record of
    the same recipe)."""
    rows = load_diagnostics(RESULTS / f"{recipe.healthy}-diagnostics.csv")
    return {tag: [row["median"] for row in rows if row["tag"] == tag and row["part"] == "all"] for tag in TAGS}


def comparison(run_dir: Path, recipe: Recipe) -> list[str]:
    """The lines a learner reads after a run: each diagnostic's median over the run beside the healthy runs'."""
    found, normal = medians(run_dir), healthy_medians(recipe)
    lines = [f"{'diagnostic':28s} {'your run':>10s}   the healthy runs (the median of each seed's updates)"]
    for tag in TAGS:
        values = sorted(normal[tag])
        lines.append(f"{tag:28s} {found[tag]:10.4g}   {values[0]:.4g} to {values[-1]:.4g} over {len(values)} seeds")
    return lines


def command(recipe: Recipe, *more: str) -> str:
    """The lesson's command line for a recipe."""
    return " ".join(["python", recipe.lesson, *recipe.flags, *more])


def recorded(number: int) -> dict[str, float]:
    """The committed run of bug `number`: {diagnostic or "final return" or "wall seconds": value}."""
    return {row["measure"]: float(row["value"]) for row in read_csv(RECORD / "diagnostics.csv", what="bugs' record")
            if int(row["bug"]) == number}


def answer(number: int) -> list[str]:
    """What --answer shows: the mistake, the planted edit, what it does, the diagnostic that gave it away in the
    committed run against the healthy runs, and where the class of mistake was reported."""
    bug = BUGS[number - 1]
    found, normal = recorded(number), sorted(healthy_medians(bug.recipe)[bug.tag])
    return [f"bug {number}: {bug.mistake}.", "", diff(bug).rstrip("\n"), "", bug.explanation, "",
            f"The giveaway, {bug.tag}: its median over the updates of the recorded run (seed 1, "
            f"benchmarks/results/bugs/diagnostics.csv) was {found[bug.tag]:.4g}; the healthy runs' medians "
            f"{normal[0]:.4g} to {normal[-1]:.4g} over {len(normal)} seeds. The run's curves beside a healthy run's: "
            f"benchmarks/results/bugs/bug-{number}.png.",
            f"This mistake, made in public: {bug.reported}"]


def record(numbers: list[int], workdir: Path) -> None:
    """Train each bug (seed 1) in `workdir` and write RECORD/diagnostics.csv (the medians of every diagnostic,
    the final return and the wall seconds of each bug's run; rows of other bugs kept), each run's giveaway series
    (bug-N-series.csv) and its figure (bug-N.png)."""
    import csv
    import os

    RECORD.mkdir(parents=True, exist_ok=True)
    path = RECORD / "diagnostics.csv"
    rows = [row for row in read_csv(path) if int(row["bug"]) not in numbers] if path.exists() else []
    here = Path.cwd()
    os.chdir(workdir)
    try:
        for number in numbers:
            bug = BUGS[number - 1]
            start = time.time()
            run_dir = train(number)
            seconds = time.time() - start
            found = {**medians(run_dir), "wall seconds": seconds}
            rows += [{"bug": number, "lesson": bug.recipe.lesson, "flags": " ".join(bug.recipe.flags), "seed": 1,
                      "measure": key, "value": f"{value:.6g}"} for key, value in found.items()]
            scalars = read_scalars(run_dir)[0]
            with open(RECORD / f"bug-{number}-series.csv", "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(["tag", "env_steps", "value"])
                for tag in (bug.tag, "charts/episodic_return"):
                    writer.writerows([tag, event.step, f"{event.value:.6g}"] for event in scalars[tag])
            figure(number)
            print(f"bug {number}: {seconds:.0f} s, {bug.tag} median {found[bug.tag]:.4g}", flush=True)
    finally:
        os.chdir(here)
    rows.sort(key=lambda row: (int(row["bug"]), row["measure"]))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, ["bug", "lesson", "flags", "seed", "measure", "value"])
        writer.writeheader()
        writer.writerows(rows)


def figure(number: int) -> None:
    """bug-N.png: the bug's run beside the healthy runs. Left, the training return (each episode's, smoothed over
    20) against the healthy seeds' (their committed curves); right, the giveaway diagnostic at each update against
    the healthy seeds' range (their 5th to 95th percentiles over the run, and their medians)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from benchmarks.core.records import load_points

    bug = BUGS[number - 1]
    series = read_csv(RECORD / f"bug-{number}-series.csv", {"env_steps": int, "value": float})
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    healthy_curves = RESULTS / f"{bug.recipe.healthy}-curves.csv"
    points = [p for p in load_points(healthy_curves) if p["kind"] == "training"]
    for k, seed in enumerate(sorted({p["seed"] for p in points}, key=int)):
        mine = [p for p in points if p["seed"] == seed]
        values = np.convolve([p["value"] for p in mine], np.ones(20) / 20, mode="valid")
        left.plot([p["env_steps"] for p in mine][19:], values, color="tab:gray", lw=1,
                  label="healthy runs (one line a seed)" if k == 0 else None)
    returns = [p for p in series if p["tag"] == "charts/episodic_return"]
    if len(returns) >= 20:
        left.plot([p["env_steps"] for p in returns][19:],
                  np.convolve([p["value"] for p in returns], np.ones(20) / 20, mode="valid"), color="tab:red",
                  lw=1.5, label=f"bug {number}, seed 1")
    left.set(xlabel="env steps", ylabel="training return (mean of 20 episodes)", title="return")
    left.legend(fontsize=8)
    rows = load_diagnostics(RESULTS / f"{bug.recipe.healthy}-diagnostics.csv")
    normal = [row for row in rows if row["tag"] == bug.tag and row["part"] == "all"]
    right.axhspan(min(r["p5"] for r in normal), max(r["p95"] for r in normal), color="tab:gray", alpha=0.25,
                  label=f"healthy: 5th-95th percentile of the updates ({len(normal)} seeds)")
    for k, row in enumerate(normal):
        right.axhline(row["median"], color="tab:gray", lw=1, label="healthy: each seed's median" if k == 0 else None)
    diagnostic = [p for p in series if p["tag"] == bug.tag]
    right.plot([p["env_steps"] for p in diagnostic], [p["value"] for p in diagnostic], color="tab:red", lw=1,
               label=f"bug {number}, each update")
    right.set(xlabel="env steps", ylabel=bug.tag, title=bug.tag + (" (log scale)" if bug.tag == "losses/value_loss"
                                                                   else ""))
    if bug.tag == "losses/value_loss":  # (it spans orders of magnitude over a run)
        right.set_yscale("log")
    right.legend(fontsize=8)
    fig.suptitle(f"bug {number}: {command(bug.recipe, '--seed 1')} with the bug, on 2 CPU cores", fontsize=9)
    fig.tight_layout()
    fig.savefig(RECORD / f"bug-{number}.png", dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m exercises.bugs", description="record the bugs' runs")
    parser.add_argument("--record", type=int, nargs="*", help="the bugs to record (none: all)")
    args = parser.parse_args(argv)
    if args.record is None:
        parser.error("nothing to do: --record [N ...]")
    with tempfile.TemporaryDirectory() as workdir:
        record(args.record or list(range(1, len(BUGS) + 1)), Path(workdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
