"""The figures' common parts: matplotlib set up to draw into files, the mean of several runs with their min-max
band, saving a figure (atomically, as the CSVs are written), and the flags of a learning curve, which every tool
that draws or reads one takes with the same words."""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TAG = "charts/episodic_return"
COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]


@dataclass(kw_only=True)
class Window:
    """--window, for every tool that averages training episodes (benchmark, compare, summary), checked here once."""

    window: int = 20
    """training episodes averaged into the rolling mean: each point of a learning curve, and the final return
    (usually 10-100)"""

    def __post_init__(self):
        if self.window < 1:
            raise ValueError("--window must be at least 1")  # (tyro prints it and exits 2)


@dataclass(kw_only=True)
class Curves(Window):
    """The flags that say what a learning-curve figure draws (benchmark's and compare's)."""

    tag: str = DEFAULT_TAG
    """TensorBoard scalar with one value per finished training episode (e.g. charts/x_pos for Mario: how far it got)"""
    eval_tag: str = "eval/mean_return"
    """TensorBoard scalar of the evaluations during training, drawn in a panel of its own where the run logged it
    (e.g. eval/flag_rate for Mario)"""
    threshold: float | None = None
    """rolling mean of --tag that counts as solved, e.g. 475 for CartPole-v1: the benchmark's steps and seconds to
    solve, and the training panel's dashed target (None: neither)"""
    play_threshold: float | None = None
    """mean return of --play (or of the evaluations) that counts as reaching the target, e.g. 250 for LunarLander:
    the benchmark's count of seeds whose --play reached it, and the evaluation panel's dashed target"""


def pyplot():
    """matplotlib.pyplot, drawing to files (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def binned_runs(points: list[dict], key) -> dict:
    """A curves CSV's points (seed, step, mean_return and more) as band()'s runs, grouped by key(point):
    {key: {seed: (steps, values)}}, seeds and steps in order."""
    runs: dict = {}
    for p in sorted(points, key=lambda p: (int(p["seed"]), int(p["step"]))):
        steps, values = runs.setdefault(key(p), {}).setdefault(int(p["seed"]), ([], []))
        steps.append(int(p["step"]))
        values.append(float(p["mean_return"]))
    return runs


def band(ax, runs: dict, color: str, label: str, on: str = "interpolated") -> None:
    """The mean over runs ({seed: (steps, values)}) and their min-max band. `on` says at which steps:
    "interpolated", 300 points over the steps all of them cover, each run interpolated linearly (runs that log
    at steps of their own, one per episode); "shared", the steps every run has (binned curves), the band only
    where there are several runs."""
    if on == "shared":
        tables = [dict(zip(steps, values)) for steps, values in runs.values()]
        steps = sorted(set.intersection(*(set(table) for table in tables)))
        values = [[table[step] for table in tables] for step in steps]
        ax.plot(steps, [statistics.fmean(v) for v in values], color=color, label=label)
        if len(runs) > 1:
            ax.fill_between(steps, [min(v) for v in values], [max(v) for v in values], color=color, alpha=0.2)
        return
    import numpy as np

    start = max(steps[0] for steps, _ in runs.values())
    stop = min(steps[-1] for steps, _ in runs.values())
    if stop > start:
        grid = np.linspace(start, stop, 300)
        stacked = np.array([np.interp(grid, steps, values) for steps, values in runs.values()])
        ax.fill_between(grid, stacked.min(0), stacked.max(0), color=color, alpha=0.15)
        ax.plot(grid, stacked.mean(0), color=color, linewidth=2, label=label)


def save(figure, path: Path, dpi: int = 100) -> None:
    """Write the figure to `path` as a PNG (atomically) and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    figure.savefig(tmp, dpi=dpi, format="png")
    os.replace(tmp, path)
    pyplot().close(figure)


def curves_from_points(points: list[dict], tag: str, eval_tag: str, window: int) -> tuple[dict, dict]:
    """{seed: (steps, rolling mean of `tag`)} and {seed: (steps, `eval_tag` values)} from the points of a curves
    CSV (the second empty when the script does not evaluate). Seeds are keyed as strings, as a CSV gives them."""
    from benchmarks.core.stats import rolling_mean

    curves, evals = {}, {}
    for point in points:
        target = {("training", tag): curves, ("evaluation", eval_tag): evals}.get((point["kind"], point["tag"]))
        if target is not None:
            steps, values = target.setdefault(str(point["seed"]), ([], []))
            steps.append(point["env_steps"])
            values.append(point["value"])
    curves = {seed: (steps, rolling_mean(values, window)) for seed, (steps, values) in curves.items()}
    return curves, evals


def plot_curves(groups: dict[str, tuple[list[dict], list[dict]]], path: Path, flags: Curves) -> None:
    """Learning curves of benchmark CSVs in one PNG: the rolling mean training return (of --tag, over --window
    episodes) against env steps and, beside it, the evaluations (--eval-tag) when the script logs them.
    `groups` maps a configuration's label to its result rows and curve points: a single group is drawn seed by
    seed (thin) with its mean and min-max band, several groups one colour each, as their mean and band.
    --threshold and --play-threshold are drawn as the targets of the two panels."""
    from benchmarks.core.runs import RunFailed

    tag, eval_tag, window = flags.tag, flags.eval_tag, flags.window

    plt = pyplot()
    training, evaluation = [], []
    for (label, (rows, points)), color in zip(groups.items(), COLORS * len(groups)):
        curves, evals = curves_from_points(points, tag, eval_tag, window)
        if not curves:
            raise RunFailed(f"no {tag} values in the curves of {label or rows[0]['script']}")
        prefix = f"{label}: " if len(groups) > 1 else ""
        training.append((prefix, color, curves))
        if evals:
            evaluation.append((prefix, color, evals))
    measure = "return" if tag == DEFAULT_TAG else tag
    panels = [("training episodes", f"{measure}, mean of last {window} episodes", flags.threshold, training)]
    if evaluation:
        panels.append(("evaluation", eval_tag, flags.play_threshold, evaluation))

    figure, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.5), squeeze=False)
    for ax, (panel, ylabel, target, panel_groups) in zip(axes[0], panels):
        for prefix, color, runs in panel_groups:
            if len(groups) == 1:
                for seed, (steps, values) in sorted(runs.items()):
                    ax.plot(steps, values, linewidth=0.7, alpha=0.6, label=f"seed {seed}")
            if len(runs) > 1 or len(groups) > 1:
                name = f"mean of {len(runs)} seeds, min-max band" if len(runs) > 1 else f"seed {next(iter(runs))}"
                band(ax, runs, color, prefix + name)
        if target is not None:
            ax.axhline(target, color="gray", linestyle="--", linewidth=1, label=f"target {target:g}")
        ax.set_xlabel("env steps")
        ax.set_ylabel(ylabel)
        ax.set_title(panel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    first_label, (first_rows, _) = next(iter(groups.items()))
    named = f": {', '.join(groups)}" if len(groups) > 1 else f" ({first_label})" if first_label else ""
    figure.suptitle(f"{first_rows[0]['script']} on {first_rows[0]['env_id']}{named}")
    figure.tight_layout()
    save(figure, path)
