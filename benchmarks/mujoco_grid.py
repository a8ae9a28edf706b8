"""The PPO paper's own experiment: its surrogate objectives compared on 7 MuJoCo tasks (section 6.1, Table 1,
Figure 3), run with ppo_pendulum_continuous.py.

The paper trains each setting of the policy objective (no clipping or penalty; clipping with epsilon 0.1, 0.2,
0.3; the adaptive KL penalty with d_targ 0.003, 0.01, 0.03; a fixed KL penalty with beta 0.3, 1, 3, 10) on 7
tasks for 1M steps, 3 seeds each, scores each run by the mean return of its last 100 episodes, normalizes
the scores per task (a random policy 0, the best setting 1) and averages them over the 21 runs of a setting.
This grid does the same with our script on Gymnasium's v5 tasks (the paper ran v1, on an older MuJoCo):

    python -m benchmarks.mujoco_grid                                    # clip 0.2, adaptive KL 0.01, none; 3 seeds
    python -m benchmarks.mujoco_grid --seeds 1                          # one seed per cell first
    python -m benchmarks.mujoco_grid --settings clip0.1 clip0.3 fixed1  # more of Table 1's rows
    python -m benchmarks.mujoco_grid --report-only                      # the tables and figure, from the CSVs
    python -m benchmarks.mujoco_grid --report-only --seeds 1            # ... of seed 1 only (--tasks, --settings too)

Each run is `python ppo_pendulum_continuous.py --env-id <task> --seed <seed> --exp-name table1-<setting>`
with the flags of COMMON_FLAGS and of its setting (print them with --dry-run). COMMON_FLAGS are the paper's
Table 3 (Adam 3e-4, 10 epochs, minibatch 64, gamma 0.99, lambda 0.95, no entropy bonus), with one change for
speed: the 2048 samples of an update come from 8 envs x 256 steps instead of 1 env x 2048 steps, so that the
policy acts on 8 observations per forward pass. The rest is the script's: observation and reward normalization,
advantage normalization, the annealed learning rate and global grad-norm clipping (the implementation details
of openai/baselines and CleanRL, which the paper's Table 3 does not list), and separate 64-64 tanh actor and
critic with a state-independent log-std, as in the paper.

Table 1 is a study of the grid (benchmarks/core/grid.py, `study` below): a cell is (task, setting, seed). The
grid can be stopped (Ctrl-C, or `kill -INT` on the grid when it runs in the background with `nohup ... &`: every
run saves its checkpoint) and started again: a run whose checkpoint holds all its updates (the update's size read
from the checkpoint's own args), or whose results runs.csv already holds, is done and skipped, one with a partial
checkpoint is resumed (`--resume`), and one without a checkpoint starts afresh. --jobs runs run at once, each on
one thread (two on two cores: the grid measures returns, not time).

Outputs, under --results-dir (default benchmarks/results/mujoco/):
- random.csv: each task's random-policy return (uniform random actions, --random-episodes episodes), the 0
  of the normalized score, measured here;
- runs.csv: one row per finished run: its final score (mean return of its last 100 training episodes), its
  episodes, steps, wall seconds (its processes' training time, runs.training_seconds: a stop before a resume
  is in none of them; the rows committed before 2026-12-04 counted such a gap as one median update), and how
  far its updates moved the policy (mean_kl, final_entropy: see policy_moves; a third table in table1.md);
  curves.csv: its learning curve, the mean return of the episodes that ended in each --bin-steps window;
- table1.md: Table 1, our normalized score beside the paper's (the mean over tasks of each task's mean over
  the seeds every setting has: the paper's mean over 21 runs once every task has its 3 seeds) and the same
  score of each seed alone (how far one seed moves it), the per-task final returns beside CleanRL's
  published ppo_continuous_action figures (v4 tasks, 1M steps), and how far the updates moved the policy;
  figure3.png: one panel per task, one line per setting, the mean over seeds and the min-max band.
The normalization needs every setting's runs on a task: "best" is the best setting among those run here,
so with fewer settings than the paper's 11 the scores are not on the paper's exact scale (Table 1 says so).
"""

import argparse
import statistics
import sys
from pathlib import Path

from benchmarks.core import grid, plots, runs
from benchmarks.core.launch import ROOT
from benchmarks.core.records import read_csv, write_csv
from benchmarks.core.stats import binned_means, mean_std

SCRIPT = "ppo_pendulum_continuous.py"
TASKS = ["HalfCheetah-v5", "Hopper-v5", "InvertedDoublePendulum-v5", "InvertedPendulum-v5", "Reacher-v5",
         "Swimmer-v5", "Walker2d-v5"]
# The paper's Table 3 for MuJoCo, with 8 envs x 256 steps as the 2048-step horizon (see the docstring).
COMMON_FLAGS = ["--num-envs", "8", "--num-steps", "256", "--learning-rate", "3e-4", "--update-epochs", "10",
                "--minibatch-size", "64", "--gamma", "0.99", "--gae-lambda", "0.95", "--ent-coef", "0",
                "--eval-every", "0", "--checkpoint-every", "25"]
# Table 1's rows: setting -> (its flags, the paper's average normalized score, the row's name in the paper).
SETTINGS = {
    "none": (["--objective", "none"], -0.39, "No clipping or penalty"),
    "clip0.1": (["--objective", "clip", "--clip-coef", "0.1"], 0.76, "Clipping, epsilon = 0.1"),
    "clip0.2": (["--objective", "clip", "--clip-coef", "0.2"], 0.82, "Clipping, epsilon = 0.2"),
    "clip0.3": (["--objective", "clip", "--clip-coef", "0.3"], 0.70, "Clipping, epsilon = 0.3"),
    "kl0.003": (["--objective", "kl", "--kl-target", "0.003"], 0.68, "Adaptive KL d_targ = 0.003"),
    "kl0.01": (["--objective", "kl", "--kl-target", "0.01"], 0.74, "Adaptive KL d_targ = 0.01"),
    "kl0.03": (["--objective", "kl", "--kl-target", "0.03"], 0.71, "Adaptive KL d_targ = 0.03"),
    "fixed0.3": (["--objective", "kl", "--no-kl-adaptive", "--kl-beta-init", "0.3"], 0.62, "Fixed KL, beta = 0.3"),
    "fixed1": (["--objective", "kl", "--no-kl-adaptive", "--kl-beta-init", "1"], 0.71, "Fixed KL, beta = 1"),
    "fixed3": (["--objective", "kl", "--no-kl-adaptive", "--kl-beta-init", "3"], 0.72, "Fixed KL, beta = 3"),
    "fixed10": (["--objective", "kl", "--no-kl-adaptive", "--kl-beta-init", "10"], 0.69, "Fixed KL, beta = 10"),
}
# CleanRL's ppo_continuous_action.py at 1M steps on the v4 tasks, mean +/- std over seeds, as published in
# its docs/benchmark/ppo_continuous_action.md (openrlbenchmark, tag pr-424). It has no figure for the other three.
CLEANRL = {"HalfCheetah": (1442.64, 46.03), "Hopper": (2382.86, 271.74), "Walker2d": (2287.95, 571.78),
           "InvertedPendulum": (963.09, 22.20)}
FINAL_EPISODES = 100  # the paper's score of a run: the mean return of its last 100 episodes
RUNS_FIELDS = ["task", "setting", "seed", "final_return", "episodes", "steps", "wall_seconds", "run_dir",
               "mean_kl", "final_entropy"]
CURVE_FIELDS = ["task", "setting", "seed", "step", "mean_return"]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=TASKS, help="MuJoCo task ids (default: the paper's 7, v5)")
    parser.add_argument("--settings", nargs="+", default=["clip0.2", "kl0.01", "none"], choices=list(SETTINGS),
                        help="Table 1 rows to run (default: clip 0.2, adaptive KL 0.01 and no clipping or penalty)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3], help="seeds per task and setting")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once, one thread each")
    parser.add_argument("--total-timesteps", type=int, default=1_000_000, help="env steps per run (paper: 1M)")
    parser.add_argument("--random-episodes", type=int, default=100, help="episodes of the random policy per task")
    parser.add_argument("--bin-steps", type=int, default=25_000, help="width of a learning-curve point, env steps")
    parser.add_argument("--runs-dir", type=Path, default=ROOT, help="where runs/ (the run folders) goes")
    parser.add_argument("--results-dir", type=Path, default=ROOT / "benchmarks" / "results" / "mujoco")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: add the finished runs under --runs-dir to the CSVs, then the tables and figure")
    parser.add_argument("--dry-run", action="store_true", help="print the runs' commands and state, run nothing")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.total_timesteps < 2048 or args.random_episodes < 1 or args.bin_steps < 1:
        parser.error("--jobs, --random-episodes and --bin-steps must be positive, --total-timesteps at least 2048")
    return args


# ---------------------------------------------------------------------------------------------------------
# The random policy: the 0 of the normalized score
# ---------------------------------------------------------------------------------------------------------
def random_policy_return(task: str, episodes: int, seed: int = 0) -> tuple[float, float]:
    """Mean and std of the return of uniformly random actions over `episodes` episodes of `task`."""
    import gymnasium as gym

    env = gym.make(task)
    env.action_space.seed(seed)
    returns = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return statistics.fmean(returns), statistics.pstdev(returns)


def random_baselines(args: argparse.Namespace) -> dict[str, float]:
    """random.csv's returns, measuring the tasks it lacks (or measured with other --random-episodes)."""
    path = args.results_dir / "random.csv"
    rows = {row["task"]: row for row in read_csv(path)}
    for task in args.tasks:
        if task not in rows or int(rows[task]["episodes"]) != args.random_episodes:
            mean, std = random_policy_return(task, args.random_episodes)
            rows[task] = {"task": task, "episodes": args.random_episodes, "mean_return": mean, "std_return": std}
            print(f"random policy on {task}: {mean:.1f} +/- {std:.1f} over {args.random_episodes} episodes")
            write_csv(path, sorted(rows.values(), key=lambda r: r["task"]), ["task", "episodes", "mean_return",
                                                                             "std_return"])
    return {task: float(row["mean_return"]) for task, row in rows.items()}


# ---------------------------------------------------------------------------------------------------------
# The study on the grid: its cells, their runs, and the rows they leave
# ---------------------------------------------------------------------------------------------------------
def study(args: argparse.Namespace) -> grid.Study:
    """Table 1 as a study of the grid (benchmarks/core/grid.py): the script, COMMON_FLAGS, a setting's flags,
    run as `--exp-name table1-<setting>` under --runs-dir."""
    return grid.Study("table1", {name: flags for name, (flags, _, _) in SETTINGS.items()}, COMMON_FLAGS,
                      args.total_timesteps, args.runs_dir)


def recorded_runs(args: argparse.Namespace) -> dict[grid.Cell, dict]:
    """runs.csv's rows by cell (task, setting, seed)."""
    return {grid.Cell(SCRIPT, r["task"], r["setting"], int(r["seed"])): r
            for r in read_csv(args.results_dir / "runs.csv")}


def policy_moves(scalars: dict) -> dict:
    """How far the run's updates moved the policy: mean_kl, the mean over updates of the exact KL[pi_old || pi]
    after each (losses/kl, which the continuous lesson logs; the k3 estimate losses/approx_kl where a lesson
    logs only that); final_entropy, the policy's entropy (losses/entropy: with a state-independent log-std, the
    same in every state) averaged over the last quarter of the updates. Either is left empty where not logged."""
    kl = [event.value for event in scalars.get("losses/kl") or scalars.get("losses/approx_kl", [])]
    entropy = [event.value for event in scalars.get("losses/entropy", [])]
    return {"mean_kl": round(statistics.fmean(kl), 5) if kl else "",
            "final_entropy": round(statistics.fmean(entropy[-max(1, len(entropy) // 4):]), 3) if entropy else ""}


def summarize_run(run_dir: Path, bin_steps: int) -> tuple[dict, list[dict]]:
    """A finished run's row (final score, counts, its training seconds, policy_moves) and its learning curve
    (mean return per bin of steps)."""
    scalars, _ = runs.read_scalars(run_dir)
    episodes = scalars.get("charts/episodic_return", [])
    if not episodes:
        raise ValueError(f"{run_dir} logged no episodes")
    row = {
        "final_return": statistics.fmean(event.value for event in episodes[-FINAL_EPISODES:]),
        "episodes": len(episodes),
        "steps": max(event.step for events in scalars.values() for event in events),
        "wall_seconds": round(runs.training_seconds(run_dir), 1),
        "run_dir": grid.relative(run_dir),
        **policy_moves(scalars),
    }
    return row, binned_means([(event.step, event.value) for event in episodes], bin_steps)


def collect(args: argparse.Namespace, cells: list[grid.Cell]) -> None:
    """Add every finished run of `cells` that runs.csv lacks to runs.csv and curves.csv; fill in the columns a
    row lacks (written before they existed) from its run folder, where that is here."""
    runs_path, curves_path = args.results_dir / "runs.csv", args.results_dir / "curves.csv"
    table = study(args)
    have = recorded_runs(args)
    rows, curves = list(have.values()), read_csv(curves_path)
    added = filled = 0
    for cell in cells:
        row = have.get(cell)
        if row and all(row.get(field) for field in RUNS_FIELDS):
            continue  # recorded in full: its checkpoint need not be read
        state, folder = table.state(cell)
        if state != "done":
            continue
        if row:
            row.update({k: v for k, v in summarize_run(folder, args.bin_steps)[0].items() if not row.get(k)})
            filled += 1
            continue
        row, curve = summarize_run(folder, args.bin_steps)
        key = {"task": cell.task, "setting": cell.setting, "seed": cell.seed}
        rows.append({**key, **row})
        curves.extend({**key, **point} for point in curve)
        added += 1
    if added or filled:
        order = lambda r: (r["task"], r["setting"], int(r["seed"]))  # noqa: E731
        write_csv(runs_path, sorted(rows, key=order), RUNS_FIELDS)
        write_csv(curves_path, sorted(curves, key=lambda r: (*order(r), int(r["step"]))), CURVE_FIELDS)
        print(f"added {added} finished runs to {runs_path}" + (f", filled in {filled}" if filled else ""))


# ---------------------------------------------------------------------------------------------------------
# Report: Table 1, the per-task returns, Figure 3
# ---------------------------------------------------------------------------------------------------------
def scores_by_seed(rows: list[dict], random: dict[str, float]) -> dict[str, dict[str, dict[int, float]]]:
    """The paper's score: per task, a run's final return mapped so that the random policy is 0 and the best
    setting (the highest mean over seeds, among the settings in `rows`) is 1; by setting, then task, then seed,
    one score per run. Only the seeds that every setting has on a task count (no seed: the task is left out),
    so that the settings are compared on the same tasks and seeds."""
    settings = sorted({r["setting"] for r in rows})
    returns = {(r["task"], r["setting"], int(r["seed"])): float(r["final_return"]) for r in rows}
    scores: dict[str, dict[str, dict[int, float]]] = {s: {} for s in settings}
    for task in sorted({r["task"] for r in rows} & random.keys()):
        seeds = sorted(set.intersection(*({seed for t, s, seed in returns if t == task and s == setting}
                                          for setting in settings)))
        if not seeds:
            continue
        best = max(statistics.fmean(returns[task, s, seed] for seed in seeds) for s in settings)
        span = best - random[task]
        for s in settings:
            scores[s][task] = {seed: (returns[task, s, seed] - random[task]) / span for seed in seeds}
    return scores


def without_seeds(with_seeds: dict[str, dict[str, dict[int, float]]]) -> dict[str, dict[str, list[float]]]:
    """scores_by_seed's scores without the seed numbers: by setting, then task, its runs' scores in seed order."""
    return {s: {task: list(by_seed.values()) for task, by_seed in by_task.items()} for s, by_task in with_seeds.items()}


def seed_scores(by_task: dict[str, dict[int, float]]) -> dict[int, float]:
    """A setting's Table 1 score seed by seed: for each seed that every scored task has, the mean over tasks
    of that seed's score. The anchors stay those of all the seeds (scores_by_seed), so with the same seeds on
    every task the mean of these is table1_score: they show how much of a gap one seed can open or close."""
    common = sorted(set.intersection(*(set(by_seed) for by_seed in by_task.values()))) if by_task else []
    return {seed: statistics.fmean(by_seed[seed] for by_seed in by_task.values()) for seed in common}


def table1_score(by_task: dict[str, list[float]]) -> float:
    """A setting's Table 1 score: the mean over tasks of its mean over seeds. With the same number of seeds on
    every task (the paper's 3), that is the mean over all its runs, as the paper averages; while seeds are
    still being added, it keeps a task with more seeds from counting more."""
    return statistics.fmean(statistics.fmean(values) for values in by_task.values())


def report(args: argparse.Namespace) -> str:
    rows = [r for r in read_csv(args.results_dir / "runs.csv") if r["setting"] in args.settings
            and r["task"] in args.tasks and int(r["seed"]) in args.seeds]
    random = {r["task"]: float(r["mean_return"]) for r in read_csv(args.results_dir / "random.csv")}
    if not rows:
        return "no finished runs yet"
    settings = [s for s in SETTINGS if any(r["setting"] == s for r in rows)]
    with_seeds = scores_by_seed(rows, random)
    scores = without_seeds(with_seeds)
    scored = scores[settings[0]]
    seeds = sorted({len(values) for values in scored.values()}) or [0]
    per_task = f"{seeds[0]} seed{'s' * (seeds[0] > 1)}" if len(seeds) == 1 else f"{seeds[0]} to {seeds[-1]} seeds"
    # every setting has the same seeds on a task (scores_by_seed), so the same seeds in seed_scores
    common = list(seed_scores(with_seeds[settings[0]]))
    seed_list = f" ({' / '.join(map(str, common))})" if common else ""
    lines = [f"Table 1: average normalized score over {len(scored)} tasks, {per_task} per task (the seeds every "
             f"setting has; the mean over a task's seeds, then over tasks; random policy 0, the best of the "
             f"{len(settings)} settings run here 1 on each task; the paper's best is of 11 settings). By seed: "
             f"the score of each seed alone, on the same anchors (the seeds every task has)", "",
             f"| setting | runs | our score | by seed{seed_list} | paper's score |", "|---|---|---|---|---|"]
    for s in sorted(settings, key=lambda s: -table1_score(scores[s]) if scores[s] else 0):
        runs = sum(len(values) for values in scores[s].values())
        ours = f"{table1_score(scores[s]):.2f}" if scores[s] else "-"
        by_seed = " / ".join(f"{score:.2f}" for score in seed_scores(with_seeds[s]).values()) or "-"
        lines.append(f"| {SETTINGS[s][2]} | {runs} | {ours} | {by_seed} | {SETTINGS[s][1]:.2f} |")
    lines += ["", f"Final return (mean of the last {FINAL_EPISODES} training episodes), mean +/- std "
              "over seeds; CleanRL: ppo_continuous_action.py, v4 tasks, 1M steps, as published", "",
              "| task | random policy | " + " | ".join(SETTINGS[s][2] for s in settings) + " | CleanRL (v4) |",
              "|---" * (len(settings) + 3) + "|"]
    for task in sorted({r["task"] for r in rows}):
        cells = []
        for s in settings:
            values = [float(r["final_return"]) for r in rows if r["task"] == task and r["setting"] == s]
            cells.append(mean_std(values, ".1f", seeds=True) if values else "-")
        name = task.split("-v")[0]
        cleanrl = f"{CLEANRL[name][0]:.1f} +/- {CLEANRL[name][1]:.1f}" if name in CLEANRL else "-"
        rand = f"{random[task]:.1f}" if task in random else "-"
        lines.append(f"| {task} | {rand} | " + " | ".join(cells) + f" | {cleanrl} |")
    moved = [r for r in rows if r.get("mean_kl")]
    if moved:
        lines += ["", "How far the updates moved the policy: the mean over updates of the exact KL[pi_old || pi] after "
                  "each, then the policy's entropy over the last quarter of the updates; means over seeds", "",
                  "| task | " + " | ".join(SETTINGS[s][2] for s in settings) + " |", "|---" * (len(settings) + 1) + "|"]
        for task in sorted({r["task"] for r in moved}):
            cells = []
            for s in settings:
                runs = [r for r in moved if r["task"] == task and r["setting"] == s]
                cells.append(f"{statistics.fmean(float(r['mean_kl']) for r in runs):.4f} / "
                             f"{statistics.fmean(float(r['final_entropy']) for r in runs):.2f}" if runs else "-")
            lines.append(f"| {task} | " + " | ".join(cells) + " |")
    walls = [float(r["wall_seconds"]) for r in rows]
    lines += ["", f"{len(rows)} runs, wall time per run {min(walls) / 60:.1f} to {max(walls) / 60:.1f} min "
              f"(mean {statistics.fmean(walls) / 60:.1f}), {args.jobs} at a time on this machine"]
    return "\n".join(lines)


def plot(args: argparse.Namespace) -> Path | None:
    """Figure 3: one panel per task, one line per setting (mean over seeds of the binned curve, min-max band)."""
    plt = plots.pyplot()
    points = [p for p in read_csv(args.results_dir / "curves.csv") if p["setting"] in args.settings
              and p["task"] in args.tasks and int(p["seed"]) in args.seeds]
    if not points:
        return None
    tasks = sorted({p["task"] for p in points})
    settings = [s for s in SETTINGS if any(p["setting"] == s for p in points)]
    columns = 4
    figure, axes = plt.subplots((len(tasks) + columns - 1) // columns, columns, squeeze=False,
                                figsize=(4.2 * columns, 3.4 * ((len(tasks) + columns - 1) // columns)))
    colors = dict(zip(settings, plt.rcParams["axes.prop_cycle"].by_key()["color"] * 3))
    curves = plots.binned_runs(points, key=lambda p: (p["task"], p["setting"]))
    for ax, task in zip(axes.flat, tasks):
        for s in settings:
            if (task, s) in curves:
                plots.band(ax, curves[task, s], colors[s], SETTINGS[s][2], on="shared")
        ax.set_title(task)
        ax.set_xlabel("env steps")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(tasks):]:
        ax.axis("off")
    # every setting drawn on any panel, once, in the order first drawn
    legend = {label: handle for ax in axes.flat for handle, label in zip(*ax.get_legend_handles_labels())}
    (list(axes.flat)[len(tasks)] if len(tasks) % columns else axes.flat[0]).legend(
        list(legend.values()), list(legend), loc="center")
    figure.suptitle(f"ppo_pendulum_continuous.py on MuJoCo: mean return per {args.bin_steps // 1000}k steps, "
                    "mean over seeds and min-max band")
    figure.tight_layout()
    path = args.results_dir / "figure3.png"
    plots.save(figure, path, dpi=80)
    return path


def main(argv=None) -> int:
    args = parse_args(argv)
    cells = grid.cells(SCRIPT, args.tasks, args.settings, args.seeds)
    if args.dry_run:
        grid.run(study(args), cells, args.jobs, set(recorded_runs(args)), dry_run=True)
        return 0
    if not args.report_only:
        random_baselines(args)
        grid.run(study(args), cells, args.jobs, set(recorded_runs(args)))
    collect(args, cells)  # finished runs that runs.csv lacks, wherever they came from; none: nothing changes
    text = report(args)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "table1.md").write_text(text + "\n")
    figure = plot(args)
    print(text)
    print(f"written: {args.results_dir / 'table1.md'}" + (f", {figure}" if figure else ""))
    recorded = recorded_runs(args)
    missing = [cell for cell in cells if cell not in recorded] if not args.report_only else []
    if missing:
        print(f"{len(missing)} runs not finished: rerun the same command to continue them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
