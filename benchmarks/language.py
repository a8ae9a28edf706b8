"""The language lessons measured (issue 66): ppo_rlhf_tiny.py at its defaults, the same with no KL penalty (reward
hacking), and grpo_rlhf_tiny.py, each on seeds 1-5, on this machine's CPU, one run at a time.

    python -m benchmarks.language              # the runs the record lacks, then the report and the figure
    python -m benchmarks.language --report --plot benchmarks/results/language.png   # from the record alone
    python -m benchmarks.language --seeds 1 2  # only these seeds (the runs the record lacks)
    python -m benchmarks.language --extra      # and grpo_rlhf_tiny.py's Try this (EXTRA), on seeds 1-3

Each run is `python <script> --seed S [flags]` in a folder of its own; its wall time (pretraining, reward model, RL
and the final evaluation together), the reward model's held-out accuracy and the final evaluation (256 sampled
responses of the policy and of pi_ref to the same prompts: the hidden score, the valid share, R's score, the KL)
go to benchmarks/results/language/runs.csv; its per-update logs (the rollout's hidden score, R's score, the valid
share, the KL and beta) to curves.csv. The same seed makes the same pi_ref and reward model in both lessons
(tests/test_language.py), so the settings are compared seed by seed: paired t intervals at 95%, Holm's correction
over the family of comparisons the report makes. README's "PPO on language" (benchmarks/README.md) quotes the report.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.core import launch, plots, runs
from benchmarks.core.inference import holm
from benchmarks.core.records import read_csv, write_csv

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "language"
FIGURE = ROOT / "benchmarks" / "results" / "language.png"
SEEDS = [1, 2, 3, 4, 5]
# setting -> (script, flags)
SETTINGS = {
    "ppo": ("ppo_rlhf_tiny.py", []),
    "ppo-beta0": ("ppo_rlhf_tiny.py", ["--kl-coef", "0", "--no-adaptive-kl"]),
    "grpo": ("grpo_rlhf_tiny.py", []),
}
# The Try this of grpo_rlhf_tiny.py, on seeds 1-3 (`--extra`), each against GRPO's defaults on the same seeds
EXTRA = {
    "grpo-g2": ("grpo_rlhf_tiny.py", ["--group-size", "2"]),
    "grpo-one-step": ("grpo_rlhf_tiny.py", ["--update-epochs", "1", "--minibatch-size", "64"]),
}
EXTRA_SEEDS = [1, 2, 3]
CURVE_TAGS = {"objective/hidden_score": "hidden_score", "objective/scores": "reward_model_score",
              "objective/valid_share": "valid_share", "objective/kl": "kl", "objective/kl_coef": "kl_coef"}
EVALUATION = ["hidden_score", "hidden_score_std", "valid_share", "reward_model_score", "kl", "ref_hidden_score",
              "ref_hidden_score_std", "ref_valid_share", "ref_reward_model_score"]
FIELDS = ["setting", "seed", "wall_s", "reward_accuracy", *EVALUATION, "command"]
KL_TARGET, KL_BAND = 3.0, 0.2  # ppo_rlhf_tiny.py's --kl-target, and the controller's cap on the relative error


def train(setting: str, seed: int) -> tuple[dict, list[dict]]:
    """One run: its row of runs.csv and its rows of curves.csv."""
    script, flags = {**SETTINGS, **EXTRA}[setting]
    argv = ["--seed", str(seed), "--exp-name", setting, *flags]
    with tempfile.TemporaryDirectory() as folder:
        started = time.time()
        result = launch.run(launch.lesson_command(script, argv), Path(folder))
        wall = time.time() - started
        if result.returncode != 0:
            raise runs.RunFailed(f"{script} {' '.join(argv)}: exit {result.returncode}\n{result.stderr[-2000:]}")
        accuracy = float(re.search(r"held-out accuracy ([0-9.]+)", result.stdout).group(1))
        evaluation = dict(re.findall(r"(\w+) (-?[0-9.]+)", result.stdout.split("evaluation, ", 1)[1].splitlines()[0]))
        (run_dir,) = runs.logged_folders(Path(folder) / "runs")
        scalars, _ = runs.read_events(run_dir)
    row = {"setting": setting, "seed": seed, "wall_s": round(wall, 1), "reward_accuracy": accuracy,
           **{name: float(evaluation[name]) for name in EVALUATION},
           "command": f"python {script} {' '.join(argv)}"}
    steps = [event.step for event in scalars["objective/kl"]]
    curves = [{"setting": setting, "seed": seed, "step": step,
               **{name: scalars[tag][i].value for tag, name in CURVE_TAGS.items()}} for i, step in enumerate(steps)]
    return row, curves


def paired(x: list[float], y: list[float]) -> tuple[float, float, float, float]:
    """mean(x - y), its 95% t interval over the pairs, and the two-sided p of the paired t test."""
    from scipy import stats

    d = [a - b for a, b in zip(x, y)]
    mean, se = statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d))
    half = stats.t.ppf(0.975, len(d) - 1) * se
    p = 2 * stats.t.sf(abs(mean) / se, len(d) - 1) if se > 0 else float(mean == 0)
    return mean, mean - half, mean + half, p


def interval(x: list[float]) -> tuple[float, float, float]:
    """mean(x) and its 95% t interval over the seeds."""
    from scipy import stats

    mean, se = statistics.fmean(x), statistics.stdev(x) / math.sqrt(len(x))
    half = stats.t.ppf(0.975, len(x) - 1) * se
    return mean, mean - half, mean + half


def report(rows: list[dict]) -> str:
    by = {(r["setting"], int(r["seed"])): r for r in rows}
    seeds = sorted({int(r["seed"]) for r in rows if all((s, int(r["seed"])) in by for s in SETTINGS)})
    get = lambda setting, name: [float(by[setting, s][name]) for s in seeds]  # noqa: E731
    fmt = lambda m, lo, hi, spec=".2f": f"{m:{spec}} [{lo:{spec}}, {hi:{spec}}]"  # noqa: E731
    lines = [f"Seeds {', '.join(map(str, seeds))}: means with their 95% t intervals over the seeds; differences "
             "paired by seed, Holm-corrected over the family below. On 2 CPU cores, one run at a time.", ""]
    lines.append("| setting | wall s | R's held-out accuracy | hidden score | its rise, in pi_ref's std | valid share | "
                 "R's score | KL to pi_ref |")
    lines.append("|---|---|---|---|---|---|---|---|")
    reference = get("ppo", "ref_hidden_score")
    for setting in SETTINGS:
        rise = [(h - r) / sd for h, r, sd in zip(get(setting, "hidden_score"), get(setting, "ref_hidden_score"),
                                                  get(setting, "ref_hidden_score_std"))]
        lines.append(f"| {setting} | {fmt(*interval(get(setting, 'wall_s')), '.0f')} | "
                     f"{fmt(*interval(get(setting, 'reward_accuracy')), '.3f')} | "
                     f"{fmt(*interval(get(setting, 'hidden_score')))} | {fmt(*interval(rise))} | "
                     f"{fmt(*interval(get(setting, 'valid_share')))} | "
                     f"{fmt(*interval(get(setting, 'reward_model_score')))} | {fmt(*interval(get(setting, 'kl')))} |")
    lines.append(f"| pi_ref | | | {fmt(*interval(reference))} | 0 | "
                 f"{fmt(*interval(get('ppo', 'ref_valid_share')))} | "
                 f"{fmt(*interval(get('ppo', 'ref_reward_model_score')))} | 0 |")
    kl = get("ppo", "kl")
    inside = sum(KL_TARGET * (1 - KL_BAND) <= k <= KL_TARGET * (1 + KL_BAND) for k in kl)
    lines += ["", f"PPO's final KL to pi_ref: {', '.join(f'{k:.2f}' for k in kl)}; {inside} of {len(kl)} seeds within "
              f"the controller's band, the target {KL_TARGET} +/- {KL_BAND:.0%} ({KL_TARGET * (1 - KL_BAND):.1f} to "
              f"{KL_TARGET * (1 + KL_BAND):.1f}), where its correction is below its cap."]
    family = [("ppo-beta0 - ppo", "reward_model_score", "R's score"),
              ("ppo-beta0 - ppo", "valid_share", "valid share"),
              ("ppo-beta0 - ppo", "hidden_score", "hidden score"),
              ("grpo - ppo", "hidden_score", "hidden score"),
              ("grpo - ppo", "kl", "KL to pi_ref"),
              ("grpo - ppo", "wall_s", "wall seconds")]
    results = [paired(get(pair.split(" - ")[0], name), get("ppo", name)) for pair, name, _ in family]
    reject, adjusted = holm([r[3] for r in results])
    lines += ["", "| difference | of | mean [95% interval] | p (paired t) | Holm-adjusted p | verdict |", "|---|---|---|---|---|---|"]
    for (pair, _, label), (m, lo, hi, p), rejected, adj in zip(family, results, reject, adjusted):
        verdict = "detected" if rejected else "not detected"
        lines.append(f"| {pair} | {label} | {fmt(m, lo, hi)} | {p:.2g} | {adj:.2g} | {verdict} |")
    extra = [(name, sorted(s for s in seeds if (name, s) in by)) for name in EXTRA]
    extra = [(name, s) for name, s in extra if len(s) >= 2]
    if extra:
        lines += ["", f"grpo_rlhf_tiny.py's Try this, against GRPO's defaults on the same seeds (paired; Holm over these "
                  f"{len(extra)}), the final hidden score:", "",
                  "| setting | seeds | hidden score | valid share | KL to pi_ref | minus GRPO's hidden score | Holm p | verdict |",
                  "|---|---|---|---|---|---|---|---|"]
        results = [paired([float(by[name, s]["hidden_score"]) for s in ss], [float(by["grpo", s]["hidden_score"]) for s in ss])
                   for name, ss in extra]
        reject, adjusted = holm([r[3] for r in results])
        for (name, ss), (m, lo, hi, p), rejected, adj in zip(extra, results, reject, adjusted):
            col = lambda k: ", ".join(f"{float(by[name, s][k]):.2f}" for s in ss)  # noqa: E731
            lines.append(f"| {name} | {', '.join(map(str, ss))} | {col('hidden_score')} | {col('valid_share')} | "
                         f"{col('kl')} | {fmt(m, lo, hi)} | {adj:.2g} | {'detected' if rejected else 'not detected'} |")
    return "\n".join(lines)


def figure(curves: list[dict], path: Path = FIGURE) -> None:
    """Reward hacking, shown: per update, R's score and the hidden score (left), the valid share and the KL
    (right), for PPO at its defaults and with beta = 0, and GRPO; each the mean of the seeds with its min-max band."""
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    colors = {"ppo": "tab:blue", "ppo-beta0": "tab:red", "grpo": "tab:green"}
    labels = {"ppo": "PPO (beta adapted)", "ppo-beta0": "PPO, beta = 0", "grpo": "GRPO (beta 0.04 in the loss)"}
    panels = [("reward_model_score", "R's score (what PPO maximizes)"), ("hidden_score", "the hidden score (the \"human\")"),
              ("valid_share", "share of grammatical responses")]
    for ax, (name, title) in zip(axes, panels):
        for setting in SETTINGS:
            points = [p for p in curves if p["setting"] == setting]
            if not points:
                continue
            per_seed = {}
            for p in sorted(points, key=lambda p: (int(p["seed"]), int(p["step"]))):
                steps, values = per_seed.setdefault(int(p["seed"]), ([], []))
                steps.append(int(p["step"]))
                values.append(float(p[name]))
            plots.band(ax, per_seed, colors[setting], f"{labels[setting]} ({len(per_seed)} seeds)", on="shared")
        ax.set_title(title)
        ax.set_xlabel("token steps (64 responses x 12 a rollout)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("ppo_rlhf_tiny.py and grpo_rlhf_tiny.py: each rollout's mean over its 64 sampled responses; the mean "
                 "of seeds 1-5 and their min-max band; on 2 CPU cores", fontsize=10)
    fig.tight_layout()
    plots.save(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="report from the record alone, running nothing")
    parser.add_argument("--seeds", type=int, nargs="+", default=SEEDS)
    parser.add_argument("--extra", action="store_true", help="also grpo_rlhf_tiny.py's Try this, on EXTRA_SEEDS")
    parser.add_argument("--plot", type=Path, default=FIGURE, help="where the figure goes (a PNG)")
    options = parser.parse_args()
    runs_csv, curves_csv = RESULTS / "runs.csv", RESULTS / "curves.csv"
    rows = read_csv(runs_csv) if runs_csv.exists() else []
    curves = read_csv(curves_csv) if curves_csv.exists() else []
    if not options.report:
        done = {(r["setting"], int(r["seed"])) for r in rows}
        todo = [(setting, seed) for seed in options.seeds for setting in SETTINGS]
        todo += [(setting, seed) for seed in EXTRA_SEEDS for setting in EXTRA] if options.extra else []
        for setting, seed in todo:
            if (setting, seed) in done:
                continue
            row, points = train(setting, seed)
            rows.append(row)
            curves += points
            write_csv(runs_csv, rows, FIELDS)
            write_csv(curves_csv, curves, ["setting", "seed", "step", *CURVE_TAGS.values()], floats="significant")
            print(f"{setting} seed {seed}: {row['wall_s']} s, hidden score {row['hidden_score']:.2f}, "
                  f"valid share {row['valid_share']:.2f}, KL {row['kl']:.2f}", flush=True)
    figure(curves, options.plot)
    print(report(rows))


if __name__ == "__main__":
    main()
