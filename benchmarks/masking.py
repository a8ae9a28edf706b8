"""The action-masking lesson measured (issue 67): ppo_action_masking.py with the mask (its default) and without it,
an invalid move either losing the game or passing, each on seeds 1-5, on this machine's CPU, one run at a time.

    python -m benchmarks.masking                # the runs the record lacks, then the report and the figure
    python -m benchmarks.masking --report --plot benchmarks/results/masking.png   # from the record alone
    python -m benchmarks.masking --seeds 1 2    # only these seeds (the runs the record lacks)

Each run is `python ppo_action_masking.py --seed S [flags]` in a folder of its own, holding /tmp/ppo-train.lock (the
lock flock(1) takes, fcntl's flock here: one training on this machine at a time), then `--play` of its checkpoint
for 100 greedy games seeded S to S + 99, under the same lock. To benchmarks/results/masking/runs.csv go its
training's wall seconds, the greedy games' mean return, their win, draw, loss and cut-off rates and their share of
invalid moves, the training's share of invalid actions (over the run and in its last rollout) and the mean return
of every training game; for the mask, also its policy played without the mask (--no-mask-actions, a taken cell
losing the game: [IAM]'s "masking removed"). To curves.csv: the training games' mean return and the rollouts' mean
invalid-action rate in bins of 2048 steps. The mask's runs also write mask-diagnostics.csv and mask-curves.csv
(benchmarks/benchmark.py's format), the healthy recipe course.diagnose holds a learner's run against. Each setting is compared with the mask seed by seed (the same seed: the
same initial weights and the same evaluation games): paired t intervals at 95%, Holm's correction over the family
of comparisons the report makes. benchmarks/README.md's "Action masking" quotes the report.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.core import launch, plots, runs
from benchmarks.core.inference import detectable, holm
from benchmarks.core.records import append_csv, read_csv, run_records, write_csv
from benchmarks.core.stats import DIAGNOSTIC_TAGS, binned_means
from benchmarks.language import interval, paired

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = "ppo_action_masking.py"
RESULTS = ROOT / "benchmarks" / "results" / "masking"
FIGURE = ROOT / "benchmarks" / "results" / "masking.png"
SEEDS = [1, 2, 3, 4, 5]
SETTINGS = {
    "mask": [],
    "no-mask-lose": ["--no-mask-actions", "--invalid-action", "lose"],
    "no-mask-pass": ["--no-mask-actions", "--invalid-action", "pass"],
}
HEALTHY = "mask"  # the setting course.diagnose holds a learner's run against (its diagnostics recorded)
UNMASKED_PLAY = ["--no-mask-actions", "--invalid-action", "lose"]  # the mask's policy, played without it
GAMES = 100  # greedy evaluation games a run, seeded seed + i
BIN = 2048  # env steps a curve point averages over
GAME_LINE = re.compile(r"^episode \d+/\d+: return (-?[\d.]+), length (\d+), invalid moves (\d+)(, cut off)?",
                       re.MULTILINE)
EVALUATION = ["return", "win_rate", "draw_rate", "loss_rate", "cutoff_rate", "invalid_moves"]
FIELDS = ["setting", "seed", "wall_s", *(f"eval_{name}" for name in EVALUATION), "train_invalid_rate",
          "last_invalid_rate", "train_return", "unmasked_return", "unmasked_invalid_moves", "command"]


def games(stdout: str) -> dict:
    """The greedy games a --play printed: the mean return, the win, draw, loss and cut-off rates (a game cut off by
    the time limit is neither a draw nor a loss here) and the share of its moves that were invalid."""
    played = [(float(r), int(length), int(invalid), bool(cut)) for r, length, invalid, cut in GAME_LINE.findall(stdout)]
    assert len(played) == GAMES, stdout[-2000:]
    n = len(played)
    return {"return": statistics.fmean(r for r, _, _, _ in played),
            "win_rate": sum(r > 0 for r, _, _, _ in played) / n,
            "draw_rate": sum(r == 0 and not cut for r, _, _, cut in played) / n,
            "loss_rate": sum(r < 0 for r, _, _, _ in played) / n,
            "cutoff_rate": sum(cut for _, _, _, cut in played) / n,
            "invalid_moves": sum(i for _, _, i, _ in played) / sum(length for _, length, _, _ in played)}


def play(checkpoint: Path, folder: Path, flags: list[str] = ()) -> dict:
    result = launch.run(launch.lesson_command(SCRIPT, ["--play", str(checkpoint), "--episodes", str(GAMES), *flags]),
                        folder)
    if result.returncode != 0:
        raise runs.RunFailed(f"--play {checkpoint}: exit {result.returncode}\n{result.stderr[-2000:]}")
    return games(result.stdout)


def train(setting: str, seed: int) -> tuple[dict, list[dict], list[dict], list[dict]]:
    """One run and its evaluations: its row of runs.csv, its rows of curves.csv, and its rows of
    <setting>-diagnostics.csv and <setting>-curves.csv, the records course.diagnose reads a run against (in
    benchmarks/benchmark.py's format)."""
    argv = ["--seed", str(seed), "--exp-name", setting, *SETTINGS[setting]]
    with tempfile.TemporaryDirectory() as name, launch.training_lock():
        folder = Path(name)
        started = time.time()
        result = launch.run(launch.lesson_command(SCRIPT, argv), folder)
        wall = time.time() - started
        if result.returncode != 0:
            raise runs.RunFailed(f"{SCRIPT} {' '.join(argv)}: exit {result.returncode}\n{result.stderr[-2000:]}")
        (run_dir,) = runs.logged_folders(folder / "runs")
        checkpoint = run_dir / "checkpoint.pt"
        evaluation = play(checkpoint, folder)
        unmasked = play(checkpoint, folder, UNMASKED_PLAY) if setting == "mask" else None
        scalars, first_event = runs.read_events(run_dir)
    names = {"script": SCRIPT, "label": setting, "env_id": runs.parse_run_name(run_dir)[0], "seed": seed}
    episodes, diagnostics = run_records(names, scalars, first_event, (("training", "charts/episodic_return"),),
                                        DIAGNOSTIC_TAGS, wall_digits=3)
    returns = [(e.step, e.value) for e in scalars["charts/episodic_return"]]
    rates = [(e.step, e.value) for e in scalars["charts/invalid_action_rate"]]
    row = {"setting": setting, "seed": seed, "wall_s": round(wall, 1),
           **{f"eval_{name}": evaluation[name] for name in EVALUATION},
           "train_invalid_rate": statistics.fmean(v for _, v in rates), "last_invalid_rate": rates[-1][1],
           "train_return": statistics.fmean(v for _, v in returns),
           "unmasked_return": unmasked["return"] if unmasked else None,
           "unmasked_invalid_moves": unmasked["invalid_moves"] if unmasked else None,
           "command": f"python {SCRIPT} {' '.join(argv)}"}
    invalid = {p["step"]: p["mean_return"] for p in binned_means(rates, BIN)}
    curves = [{"setting": setting, "seed": seed, "step": p["step"], "return": p["mean_return"],
               "invalid_rate": invalid.get(p["step"])} for p in binned_means(returns, BIN)]
    return row, curves, diagnostics, episodes


def report(rows: list[dict]) -> str:
    by = {(r["setting"], int(r["seed"])): r for r in rows}
    seeds = sorted({int(r["seed"]) for r in rows if all((s, int(r["seed"])) in by for s in SETTINGS)})
    get = lambda setting, name: [float(by[setting, s][name]) for s in seeds]  # noqa: E731
    fmt = lambda m, lo, hi, spec=".3f": f"{m:{spec}} [{lo:{spec}}, {hi:{spec}}]"  # noqa: E731
    lines = [f"Seeds {', '.join(map(str, seeds))}: each cell the mean over the seeds with its 95% t interval; "
             f"greedy: {GAMES} games of argmax pi a run, seeded seed + i; training: the games pi sampled while it "
             "learned. On 2 CPU cores, one run at a time.", "",
             "| setting | wall s | greedy return | won | drawn | lost | cut off | greedy invalid moves | "
             "training return | training invalid actions | last rollout's invalid actions |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for setting in SETTINGS:
        cells = [fmt(*interval(get(setting, "wall_s")), ".0f")]
        cells += [fmt(*interval(get(setting, f"eval_{name}"))) for name in EVALUATION]
        cells += [fmt(*interval(get(setting, name)))
                  for name in ("train_return", "train_invalid_rate", "last_invalid_rate")]
        lines.append(f"| {setting} | " + " | ".join(cells) + " |")
    unmasked = [float(by["mask", s]["unmasked_return"]) for s in seeds]
    unmasked_invalid = [float(by["mask", s]["unmasked_invalid_moves"]) for s in seeds]
    lines += ["", f"The mask's policy played without its mask (--no-mask-actions --invalid-action lose, the same "
              f"{GAMES} games): greedy return {fmt(*interval(unmasked))} (seeds: "
              f"{', '.join(f'{v:.2f}' for v in unmasked)}), invalid moves {fmt(*interval(unmasked_invalid))} of its "
              "moves."]
    family = [(setting, name, label) for setting in SETTINGS if setting != "mask"
              for name, label in (("eval_return", "greedy return"), ("train_return", "training return"))]
    results = [paired(get(setting, name), get("mask", name)) for setting, name, _ in family]
    reject, adjusted = holm([r[3] for r in results])
    lines += ["", f"Each setting minus the mask, paired by seed ({len(seeds)} pairs), 95% t interval; Holm over the "
              f"{len(family)} comparisons; where not detected, the difference a paired t test at Holm's strictest "
              "level would detect 4 times in 5 at this spread:", "",
              "| difference | of | mean [95% interval] | p (paired t) | Holm-adjusted p | verdict |",
              "|---|---|---|---|---|---|"]
    for (setting, name, label), (m, lo, hi, p), rejected, adj in zip(family, results, reject, adjusted):
        d = [a - b for a, b in zip(get(setting, name), get("mask", name))]
        se = statistics.stdev(d) / len(d) ** 0.5
        smallest = detectable(se, len(d) - 1, len(family))
        verdict = ("helps" if m > 0 else "hurts") if rejected else f"not detected (could detect {smallest:.3f})"
        lines.append(f"| {setting} - mask | {label} | {fmt(m, lo, hi)} | {p:.2g} | {adj:.2g} | {verdict} |")
    return "\n".join(lines)


def figure(curves: list[dict], rows: list[dict], path: Path = FIGURE) -> None:
    """Per bin of 2048 steps, the training games' mean return (left) and the rollouts' share of invalid actions
    (right), each the mean of the seeds with their min-max band; the greedy evaluation's mean at the end."""
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
    colors = {"mask": "tab:blue", "no-mask-lose": "tab:red", "no-mask-pass": "tab:orange"}
    labels = {"mask": "the mask (default)", "no-mask-lose": "--no-mask-actions --invalid-action lose",
              "no-mask-pass": "--no-mask-actions --invalid-action pass"}
    for setting in SETTINGS:
        points = sorted((p for p in curves if p["setting"] == setting), key=lambda p: (int(p["seed"]), int(p["step"])))
        for ax, name in zip(axes, ("return", "invalid_rate")):
            per_seed = {}
            for p in points:
                steps, values = per_seed.setdefault(int(p["seed"]), ([], []))
                steps.append(int(p["step"]))
                values.append(float(p[name]))
            if per_seed:
                plots.band(ax, per_seed, colors[setting], f"{labels[setting]} ({len(per_seed)} seeds)", on="shared")
        greedy = [float(r["eval_return"]) for r in rows if r["setting"] == setting]
        last = max((int(p["step"]) for p in points), default=0)
        if greedy:
            axes[0].plot([last], [statistics.fmean(greedy)], marker="o", color=colors[setting], linestyle="none")
    axes[0].set_title(f"return of the training games (pi sampled), mean per {BIN} steps; dots: greedy, {GAMES} games",
                      fontsize=10)
    axes[0].set_ylabel("return (+1 win, 0 draw, -1 loss)")
    axes[1].set_title("share of the rollouts' actions that were invalid (a taken cell)", fontsize=10)
    axes[1].set_ylabel("invalid actions / steps")
    for ax in axes:
        ax.set_xlabel("env steps")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    seeds = ", ".join(map(str, sorted({int(r["seed"]) for r in rows})))
    fig.suptitle(f"ppo_action_masking.py on TicTacToe-v0 against a random opponent: the mean of seeds {seeds} and "
                 "their min-max band; on 2 CPU cores", fontsize=10)
    fig.tight_layout()
    plots.save(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="report from the record alone, running nothing")
    parser.add_argument("--seeds", type=int, nargs="+", default=SEEDS)
    parser.add_argument("--plot", type=Path, default=FIGURE, help="where the figure goes (a PNG)")
    options = parser.parse_args()
    runs_csv, curves_csv = RESULTS / "runs.csv", RESULTS / "curves.csv"
    rows = read_csv(runs_csv) if runs_csv.exists() else []
    curves = read_csv(curves_csv) if curves_csv.exists() else []
    if not options.report:
        done = {(r["setting"], int(r["seed"])) for r in rows}
        for seed in options.seeds:
            for setting in SETTINGS:
                if (setting, seed) in done:
                    continue
                row, points, diagnostics, episodes = train(setting, seed)
                rows.append(row)
                curves += points
                write_csv(runs_csv, rows, FIELDS, floats="significant")
                write_csv(curves_csv, curves, ["setting", "seed", "step", "return", "invalid_rate"],
                          floats="significant")
                if setting == HEALTHY:  # course.diagnose's recipe: its diagnostics and its episodes
                    for suffix, new in (("diagnostics", diagnostics), ("curves", episodes)):
                        append_csv(RESULTS / f"{HEALTHY}-{suffix}.csv", new, floats="significant")
                print(f"{setting} seed {seed}: {row['wall_s']} s, greedy return {row['eval_return']:.2f} (won "
                      f"{row['eval_win_rate']:.0%}), training return {row['train_return']:.3f}, invalid actions "
                      f"{row['train_invalid_rate']:.3f}", flush=True)
    figure(curves, rows, options.plot)
    print(report(rows))


if __name__ == "__main__":
    main()
