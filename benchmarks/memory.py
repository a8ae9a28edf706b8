"""The memory lesson measured (issue 67): ppo_lstm_memory.py on CartPoleNoVel-v1 (CartPole with the velocities
hidden) with its LSTM, without it (one frame, --no-lstm), with a stack of the last 4 frames and no LSTM
(--no-lstm --frame-stack 4), and with the LSTM on observations not standardized (--no-norm-obs), each on seeds 1-5,
on this machine's CPU, one run at a time.

    python -m benchmarks.memory              # the runs the record lacks, then the report and the figure
    python -m benchmarks.memory --report --plot benchmarks/results/memory.png   # from the record alone
    python -m benchmarks.memory --seeds 1 2  # only these seeds (the runs the record lacks)

Each run is `python ppo_lstm_memory.py --seed S [flags]` in a folder of its own, holding /tmp/ppo-train.lock while it
trains (no other training on the machine meanwhile). Recorded in benchmarks/results/memory/runs.csv: its wall time;
the step at which the mean return of the last 20 training episodes (the progress bar's, sampled actions) first
reached 475, gymnasium's threshold of "solved" for CartPole-v1, or none; the mean return of the training episodes
that ended in the last 10% of the steps; and the final evaluation, the greedy policy's mean return over
--eval-episodes episodes (seeded seed + i). curves.csv holds the training episodes' mean return in bins of BIN steps.

The settings are compared with benchmarks.core.inference, as the ablation study compares its settings: each against
the LSTM on one score, the training return over the last 10% of the steps: the difference of means with its Welch
interval and the exact permutation test, Holm's correction over the family of 3, and where nothing is detected the
difference the test could have detected (80% power). The steps to 475 and the greedy evaluation are described. README's "Memory" (benchmarks/README.md) quotes the report.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.core import launch, plots, runs
from benchmarks.core.inference import compare_means, family
from benchmarks.core.records import append_csv, read_csv, run_records, write_csv
from benchmarks.core.stats import DIAGNOSTIC_TAGS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "memory"
FIGURE = ROOT / "benchmarks" / "results" / "memory.png"
SCRIPT = "ppo_lstm_memory.py"
SEEDS = [1, 2, 3, 4, 5]
SETTINGS = {  # setting -> flags
    "lstm": [],
    "mlp": ["--no-lstm"],
    "stack4": ["--no-lstm", "--frame-stack", "4"],
    "raw": ["--no-norm-obs"],
}
LABELS = {"lstm": "LSTM (the default)", "mlp": "no LSTM, one frame (--no-lstm)",
          "stack4": "no LSTM, 4 frames (--no-lstm --frame-stack 4)",
          "raw": "LSTM, observations not standardized (--no-norm-obs)"}
TOTAL_STEPS = 500_000  # the lesson's default --total-timesteps, the budget
SOLVED = 475.0  # CartPole-v1's reward_threshold, which CartPoleNoVel-v1 keeps
BIN = 10_000  # curves.csv: training episodes' mean return per bin of this many steps
FIELDS = ["setting", "seed", "wall_s", "steps_to_475", "final_train_return", "eval_return", "eval_episodes", "command"]


def train(setting: str, seed: int) -> tuple[dict, list[dict], list[dict], list[dict]]:
    """One run: its row of runs.csv, its rows of curves.csv, and its rows of <setting>-diagnostics.csv and
    <setting>-curves.csv, the records course.diagnose reads a run against (in benchmarks/benchmark.py's format)."""
    argv = ["--seed", str(seed), "--exp-name", setting, *SETTINGS[setting]]
    with tempfile.TemporaryDirectory() as folder:
        with launch.training_lock():  # one training at a time on this machine
            started = time.time()
            result = launch.run(launch.lesson_command(SCRIPT, argv), Path(folder))
            wall = time.time() - started
        if result.returncode != 0:
            raise runs.RunFailed(f"{SCRIPT} {' '.join(argv)}: exit {result.returncode}\n{result.stderr[-2000:]}")
        (run_dir,) = runs.logged_folders(Path(folder) / "runs")
        scalars, first_event = runs.read_events(run_dir)
    names = {"script": SCRIPT, "label": setting, "env_id": runs.parse_run_name(run_dir)[0], "seed": seed}
    points, diagnostics = run_records(names, scalars, first_event, (("training", "charts/episodic_return"),
                                                                    ("evaluation", "eval/mean_return")),
                                      DIAGNOSTIC_TAGS, wall_digits=3)
    episodes = [(e.step, e.value) for e in scalars["charts/episodic_return"]]
    evaluations = scalars["eval/mean_return"]
    ending = [value for step, value in episodes if step > 0.9 * TOTAL_STEPS]
    row = {"setting": setting, "seed": seed, "wall_s": round(wall, 1), "steps_to_475": steps_to(episodes),
           "final_train_return": round(statistics.fmean(ending), 2), "eval_return": round(evaluations[-1].value, 2),
           "eval_episodes": eval_episodes(), "command": f"python {SCRIPT} {' '.join(argv)}"}
    bins: dict[int, list[float]] = {}
    for step, value in episodes:
        bins.setdefault(min(step // BIN, TOTAL_STEPS // BIN - 1), []).append(value)
    curves = [{"setting": setting, "seed": seed, "step": (b + 1) * BIN, "mean_return": round(statistics.fmean(v), 2)}
              for b, v in sorted(bins.items())]
    return row, curves, diagnostics, points


def steps_to(episodes: list[tuple[int, float]], window: int = 20) -> int | str:
    """The step of the first episode at which the mean of the last `window` episodes reached SOLVED, or "" (never)."""
    for i in range(window - 1, len(episodes)):
        if statistics.fmean(value for _, value in episodes[i - window + 1: i + 1]) >= SOLVED:
            return episodes[i][0]
    return ""


def eval_episodes() -> int:
    """The lesson's --eval-episodes default, what the final evaluation averages."""
    return launch.import_lesson(ROOT / SCRIPT).Args().eval_episodes


def report(rows: list[dict]) -> str:
    """The record's table and tests; each setting over the seeds it has run (the LSTM's on all of them)."""
    by = {(r["setting"], int(r["seed"])): r for r in rows}
    seeds_of = {setting: sorted(int(r["seed"]) for r in rows if r["setting"] == setting) for setting in SETTINGS}
    settings = [setting for setting in SETTINGS if len(seeds_of[setting]) >= 2]
    get = lambda setting, name: [float(by[setting, s][name]) for s in seeds_of[setting]]  # noqa: E731
    solved_at = lambda setting: [float(by[setting, s]["steps_to_475"] or TOTAL_STEPS)  # noqa: E731
                                 for s in seeds_of[setting]]
    lines = [f"{TOTAL_STEPS:,} steps a run, on 2 CPU cores, one run at a time. Means with their 95% t intervals over "
             f"the seeds; \"reached 475\": the mean return of the last 20 training episodes (sampled actions) reached "
             f"it; the final evaluation: the greedy policy's mean return over {rows[0]['eval_episodes']} episodes.", ""]
    lines.append("| setting | seeds | reached 475 | steps to 475 (median) | training return, last 10% of steps | "
                 "final evaluation (greedy) | wall s |")
    lines.append("|---|---|---|---|---|---|---|")
    for setting in settings:
        seeds = seeds_of[setting]
        reached = [s for s in seeds if by[setting, s]["steps_to_475"] != ""]
        median = f"{statistics.median(solved_at(setting)):,.0f}" if len(reached) * 2 > len(seeds) else "not reached"
        lines.append(f"| {LABELS[setting]} | {', '.join(map(str, seeds))} | {len(reached)} of {len(seeds)} | {median} | "
                     f"{fmt(*interval(get(setting, 'final_train_return')))} | "
                     f"{fmt(*interval(get(setting, 'eval_return')))} | {fmt(*interval(get(setting, 'wall_s')))} |")
    # One score tested, so that the family stays small enough for 5 runs against 5: an exact permutation test of 5
    # against 5 cannot go below p = 2/252 = 0.0079, and Holm's strictest level over m tests is 0.05/m (0.0167 for 3).
    comparisons = [(setting, compare_means(get(setting, "final_train_return"), get("lstm", "final_train_return")))
                   for setting in settings if setting != "lstm"]
    family([c for _, c in comparisons])
    lines += ["", f"Each setting against the LSTM on the training return over the last 10% of the steps: the difference "
              f"(setting minus LSTM) with its 95% Welch interval, the exact permutation test's p, Holm-corrected over "
              f"the {len(comparisons)} comparisons; where nothing is detected, the difference the test could have "
              f"detected (80% power). Steps to 475 and the greedy evaluation are described, not tested.", "",
              "| setting | difference [95% interval] | p | Holm p | verdict |", "|---|---|---|---|---|"]
    for setting, c in comparisons:
        span = f" [{c.low:.1f}, {c.high:.1f}]" if c.low is not None else ""
        verdict = c.verdict + (f" (could detect {c.detectable:.0f})" if c.verdict == "not detected" and
                               c.detectable not in (None, float("inf")) else "")
        p = lambda value: "-" if value is None else f"{value:.2g}"  # noqa: E731  (at the ceiling: no test)
        lines.append(f"| {LABELS[setting]} | {c.effect:.1f}{span} | {p(c.p)} | {p(c.p_holm)} | {verdict} |")
    return "\n".join(lines)


def fmt(mean: float, low: float, high: float) -> str:
    return f"{mean:.1f} [{low:.1f}, {high:.1f}]"


def interval(x: list[float]) -> tuple[float, float, float]:
    """mean(x) and its 95% t interval over the seeds (the interval is the mean where all are equal)."""
    from scipy import stats

    mean = statistics.fmean(x)
    half = stats.t.ppf(0.975, len(x) - 1) * statistics.stdev(x) / len(x) ** 0.5
    return mean, mean - half, mean + half


def figure(curves: list[dict], path: Path = FIGURE) -> None:
    """The three settings' learning curves: per bin of BIN steps, the mean return of the training episodes that
    ended in it; the mean of the seeds and their min-max band."""
    plt = plots.pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colors = {"lstm": "tab:blue", "mlp": "tab:red", "stack4": "tab:green", "raw": "tab:gray"}
    for setting in SETTINGS:
        per_seed = plots.binned_runs([p for p in curves if p["setting"] == setting], key=lambda p: 0).get(0)
        if per_seed:
            plots.band(ax, per_seed, colors[setting], f"{LABELS[setting]} ({len(per_seed)} seeds)", on="shared")
    ax.axhline(SOLVED, color="gray", linestyle=":", linewidth=1)
    ax.set_xlabel("environment steps (16 envs)")
    ax.set_ylabel(f"training episodes' mean return, per {BIN:,} steps")
    ax.set_ylim(0, 520)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("ppo_lstm_memory.py on CartPoleNoVel-v1 (velocities hidden): sampled actions; the mean of seeds 1-5 "
                 "and their min-max band; on 2 CPU cores", fontsize=9)
    fig.tight_layout()
    plots.save(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="report from the record alone, running nothing")
    parser.add_argument("--seeds", type=int, nargs="+", default=SEEDS)
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--plot", type=Path, default=FIGURE, help="where the figure goes (a PNG)")
    options = parser.parse_args()
    runs_csv, curves_csv = RESULTS / "runs.csv", RESULTS / "curves.csv"
    rows = read_csv(runs_csv) if runs_csv.exists() else []
    curves = read_csv(curves_csv) if curves_csv.exists() else []
    if not options.report:
        done = {(r["setting"], int(r["seed"])) for r in rows}
        for setting in options.settings:
            for seed in options.seeds:
                if (setting, seed) in done:
                    continue
                row, points, diagnostics, episodes = train(setting, seed)
                rows.append(row)
                curves += points
                write_csv(runs_csv, rows, FIELDS)
                write_csv(curves_csv, curves, ["setting", "seed", "step", "mean_return"])
                for suffix, new in (("diagnostics", diagnostics), ("curves", episodes)):
                    append_csv(RESULTS / f"{setting}-{suffix}.csv", new, floats="significant")
                print(f"{setting} seed {seed}: {row['wall_s']} s, reached 475 at {row['steps_to_475'] or 'never'}, "
                      f"last 10% {row['final_train_return']}, greedy {row['eval_return']}", flush=True)
    figure(curves, options.plot)
    if rows:
        print(report(rows))


if __name__ == "__main__":
    main()
