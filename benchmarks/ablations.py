"""What each detail buys: every implementation detail and every variant's choice switched off, one at a time,
in the lessons' own code, and the effect measured against the lesson's own defaults.

    python -m benchmarks.ablations cartpole                 # 15 settings x 20 seeds of ppo_cartpole.py, 2 at a time
    python -m benchmarks.ablations lunarlander --seeds 1 2  # some of a study's seeds (--settings: some settings)
    python -m benchmarks.ablations cartpole --dry-run       # one shell line per cell not done, nothing run
    python -m benchmarks.ablations --report-only            # every study's tables and figures, from the CSVs
    python -m benchmarks.ablations --list                   # the studies and their settings
    python -m benchmarks.ablations breakout                 # Breakout's 40M-frame runs, read from their records

A study is one lesson on one task for a fixed number of steps (STUDIES); a setting changes one thing against the
lesson's defaults: a flag where the lesson has one (--no-norm-adv), a named patch of the lesson's own function
where it has none (benchmarks/patches.py: --patch default-init replaces layer_init, and so on). A cell (script,
task, setting, seed) is one command on the grid (benchmarks/core/grid.py): the grid runs the cells that are not
done, --jobs at a time on one thread each, resumes the stopped ones from their checkpoints (Ctrl-C, or `kill
-INT` on a grid in the background, saves every running cell), and skips the cells whose rows a results CSV holds.
--dry-run prints each cell's command, to be run from the repository's root: with N machines, hand the lines to a
scheduler (a Slurm array, GNU parallel), copy the run folders back into runs/ and run the same command with
--report-only. A study of runs too long for the grid (`breakout`: 40M frames, hours a run, resumed across sessions)
runs nothing: its cells are runs made by their own commands (--dry-run prints them) and read from the results
CSVs that benchmarks.benchmark --from-logs wrote of them.

A run's scores (its row of <study>-runs.csv): the final return (the mean of its last 20 training episodes, 100
for Hopper as in Table 1: sampled actions), the area under its learning curve (AUC: the mean over the run of the
training return binned per --bin-steps steps, <study>-curves.csv; a detail that changes how fast a run learns and
not where it ends shows here), the steps to solve (the first step at which the mean of the last 20 training
episodes reaches the task's threshold; a run that never does is censored at the budget: only its rank is known) and,
for LunarLander, its final greedy evaluation (eval/mean_return: 10 episodes, argmax pi, at the last update).

The effect of a setting on a score: its mean over seeds minus the default's, with its 95% Welch t interval, once the
setting and the default have 3 seeds each (MIN_SEEDS; README's map says "k of n seeds" while a study is still
running). The verdict, by one procedure (benchmarks/core/inference.py): the settings on one score are one family,
each tested against the default with a test suited to few seeds (a permutation test of the difference of means,
exact; Welch's t at 20 against 20; ranks for the censored steps to solve), and Holm's correction holds the chance of
any false verdict on the score to 5%: "helps" or "hurts" where the corrected test rejects, "not detected"
otherwise, with the smallest effect the study could have detected. A score at one value on every run of both
(CartPole's 500) is "at the ceiling": no test. `python -m benchmarks.aa_check` measures the procedure's error on
the defaults' own runs and on simulated studies with no effect anywhere.

Outputs, under --results-dir (benchmarks/results/ablations/): <study>-runs.csv and <study>-curves.csv (the
record), <study>.md (the table), <study>.png (each setting's curve beside the default's), effects.csv (every
effect, its interval and verdict: README's details map reads its column from it) and effects.png (all effects).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import statistics
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import mujoco_grid
from benchmarks.core import grid, inference, plots, runs, stats
from benchmarks.core.launch import ROOT
from benchmarks.core.records import DECIMALS, curves_path, load_points, processor, read_csv, write_csv
from course import lessons

RESULTS = ROOT / "benchmarks" / "results" / "ablations"
MIN_SEEDS = 3  # an effect is tested once the setting and the default have this many seeds each
RECORD = ROOT / "benchmarks" / "README.md"  # its ablation-<study> markers hold each study's table


@dataclass(frozen=True)
class Setting:
    """One change against the lesson's defaults: its flags and patches, what it switches, the row of README's
    implementation-details map it measures (None: a hyperparameter or variant choice the map has no row for), and
    `acts`: a scalar the lesson logs that is above 0 in an update where the change acted (None: not checked).
    A change that never acts runs the same algorithm as the default, its floats' rounding apart: its effect is
    then a measure of how far two sets of seeds land apart, and the table and the map say so."""

    what: str
    flags: tuple[str, ...] = ()
    patches: tuple[str, ...] = ()
    detail: str | None = None
    acts: str | None = None


@dataclass(frozen=True)
class Metric:
    name: str  # the column of <study>-runs.csv (auc: computed from the curve)
    label: str
    higher_is_better: bool = True


FINAL, AUC = Metric("final_return", "final return"), Metric("auc", "AUC")
SOLVE, EVAL = Metric("steps_to_solve", "steps to solve", higher_is_better=False), Metric("eval_return", "greedy eval")


@dataclass
class Ablation:
    """A study: `script` on `task` for `total_timesteps` steps with `flags`, its settings (the first one the
    default, with no change), `seeds`, the scores it reports (the first one leads README's column), and where
    its runs are named (`exp_prefix`)."""

    name: str
    script: str
    task: str
    total_timesteps: int
    settings: dict[str, Setting]
    seeds: list[int]
    metrics: list[Metric]
    default_seeds: list[int] | None = None  # the default's seeds, where it runs more than the settings (None: seeds)
    final_episodes: int = 20
    threshold: float | None = None
    bin_steps: int = 5000
    flags: list[str] = field(default_factory=list)
    exp_prefix: str = ""
    # A study of runs too long for the grid (Breakout's 40M frames: hours each, stopped and resumed across sessions):
    # each cell is its own run, made by record_command, and read from the results CSV that benchmarks.benchmark
    # --from-logs wrote of it: {setting: {seed: the CSV's label}}. A record is finished at `finished_steps`.
    records: dict[str, dict[int, str]] = field(default_factory=dict)
    finished_steps: int = 0
    steps: str = "steps"  # what a step is, where it is not one env step: Breakout's agent steps of 4 frames
    episodes: str = "training episodes"

    @property
    def default(self) -> str:
        return next(iter(self.settings))

    def seeds_of(self, setting: str) -> list[int]:
        """The seeds a setting runs: the default's own list where it has one, else the study's."""
        return self.default_seeds or self.seeds if setting == self.default else self.seeds

    @property
    def step_unit(self) -> str:
        """What `steps` counts, without its note: "agent steps" of "agent steps (4 frames each)"."""
        return self.steps.split(" (")[0]

    def study(self, runs_dir: Path = ROOT) -> grid.Study:
        return grid.Study(self.exp_prefix or f"ablation-{self.name}",
                          {name: list(s.flags) for name, s in self.settings.items()}, self.flags,
                          self.total_timesteps, runs_dir,
                          patches={name: list(s.patches) for name, s in self.settings.items() if s.patches})


def common_settings(epochs: int) -> dict[str, Setting]:
    """The settings every MLP lesson has, after its default: the core details off, then the hyperparameters
    halved and doubled or at their ends."""
    return {
        "no-norm-adv": Setting("advantage normalization off", ("--no-norm-adv",), detail="7. advantage normalization"),
        "no-anneal-lr": Setting("learning-rate annealing off", ("--no-anneal-lr",),
                                detail="4. learning-rate annealing"),
        "no-grad-clip": Setting("global gradient clipping off", patches=("no-grad-clip",),
                                detail="11. global gradient clipping"),
        "default-init": Setting("PyTorch's default init instead of orthogonal", patches=("default-init",),
                                detail="2. orthogonal init, constant bias"),
        "policy-init-1": Setting("policy's last layer at scale 1, not 0.01", patches=("policy-init-1",),
                                 detail="2. orthogonal init, constant bias"),
        "adam-eps-1e-8": Setting("Adam's eps 1e-8, not 1e-5", patches=("adam-eps-1e-8",),
                                 detail="3. Adam epsilon 1e-5"),
        "gae-lambda-1": Setting("GAE lambda 1 (Monte Carlo)", ("--gae-lambda", "1"), detail="5. GAE"),
        "gae-lambda-0": Setting("GAE lambda 0 (one-step TD)", ("--gae-lambda", "0"), detail="5. GAE"),
        f"epochs-{epochs // 2}": Setting(f"{epochs // 2} epochs (halved)", ("--update-epochs", str(epochs // 2))),
        f"epochs-{epochs * 2}": Setting(f"{epochs * 2} epochs (doubled)", ("--update-epochs", str(epochs * 2))),
        "no-bootstrap": Setting("truncations treated as terminations", patches=("no-bootstrap",),
                                detail="truncation bootstrapping"),
    }


UNCLIPPED = Setting("clipped surrogate off (eq. 6's unclipped objective)", patches=("unclipped-objective",),
                    detail="8. clipped surrogate objective")
NO_ENTROPY = Setting("entropy bonus off", ("--ent-coef", "0"), detail="10. overall loss and entropy bonus")
TARGET_KL = Setting("KL early stop on (--target-kl 0.01, Spinning Up's default)", ("--target-kl", "0.01"),
                    detail="early stopping on a KL target")
SHARED = Setting("one shared trunk instead of split networks", patches=("shared-trunk",),
                 detail="13. shared or separate networks")
ONE_ENV = Setting("1 env x 2048 steps instead of N envs, the same update", ("--num-envs", "1", "--num-steps", "2048"),
                  detail="1. vectorized environments")

STUDIES = {
    "cartpole": Ablation(
        "cartpole", "ppo_cartpole.py", "CartPole-v1", 100_000,
        {"default": Setting("the lesson's defaults"), "unclipped-objective": UNCLIPPED, **common_settings(10),
         "no-entropy": NO_ENTROPY,
         "split-networks": Setting("split actor and critic instead of one shared trunk", patches=("split-networks",),
                                   detail="13. shared or separate networks")},
        seeds=list(range(1, 21)), metrics=[AUC, SOLVE, FINAL], threshold=475.0),
    "lunarlander": Ablation(
        "lunarlander", "ppo_lunarlander_vec.py", "LunarLander-v3", 1_000_000,
        {"default": Setting("the lesson's defaults"), "unclipped-objective": UNCLIPPED,
         "no-clip-vloss": Setting("value-loss clipping off", ("--no-clip-vloss",), detail="9. value-loss clipping"),
         **common_settings(20), "no-entropy": NO_ENTROPY, "target-kl": TARGET_KL, "shared-trunk": SHARED,
         "one-env": ONE_ENV},
        seeds=list(range(1, 6)), default_seeds=list(range(1, 11)), metrics=[FINAL, AUC, EVAL, SOLVE],
        threshold=200.0, bin_steps=25_000),
    # Hopper at Table 1's settings, its runs named as Table 1's are (table1-<setting>), every cell run on the study's
    # machine. Its default and its unclipped objective are Table 1's clip0.2 and none run again ("-here"): Table 1's
    # own seeds 1-3 ran in another session and did not reproduce on this one (benchmarks/README, Hopper's section).
    "hopper": Ablation(
        "hopper", "ppo_pendulum_continuous.py", "Hopper-v5", 1_000_000,
        {"clip0.2-here": Setting("the lesson at Table 1's settings", ("--objective", "clip", "--clip-coef", "0.2")),
         "none-here": Setting("clipped surrogate off (eq. 6's unclipped objective)", ("--objective", "none"),
                              detail="8. clipped surrogate objective"),
         "clip-vloss": Setting("value-loss clipping on", ("--clip-vloss",), detail="9. value-loss clipping",
                               acts="losses/vf_clipfrac"),
         **common_settings(10),
         "no-norm-obs": Setting("observation normalization off", ("--no-norm-obs",),
                                detail="6. observation normalization"),
         "no-obs-clip": Setting("observation clipping off", patches=("no-obs-clip",),
                                detail="7. observation clipping"),
         "no-norm-reward": Setting("reward scaling off", ("--no-norm-reward",), detail="8. reward scaling"),
         "target-kl": TARGET_KL, "shared-trunk": SHARED, "one-env": ONE_ENV},
        seeds=list(range(1, 6)), default_seeds=list(range(1, 11)), metrics=[FINAL, AUC], final_episodes=100,
        bin_steps=25_000, flags=mujoco_grid.COMMON_FLAGS, exp_prefix="table1"),
    # Pendulum at the lesson's own scale (issue 65, item 12; the lesson's "Try this" quotes it): its defaults and
    # 300k steps, the lesson's own choices switched one at a time: the objective (eq. 6's L^CPI, eq. 8's adaptive
    # KL penalty in place of the clip) and its two normalizations. Ten seeds a setting; a run trained 0.8 to 2.1 min
    # on one thread, two at a time on 2 cores (pendulum.md's last line). The AUC leads, as on CartPole: the
    # default's mean curve over its seeds, per 5k steps, is above -200 first at 65k (its median steps to solve:
    # 59.2k) and stays between -220.1 and -126.4 from 70k on (pendulum-curves.csv): a change that slows learning
    # shows in the mean over the run more than in where it ends.
    "pendulum": Ablation(
        "pendulum", "ppo_pendulum_continuous.py", "Pendulum-v1", 300_000,
        {"default": Setting("the lesson's defaults (the clipped objective, eq. 7)"),
         "objective-none": Setting("clipped surrogate off (eq. 6's unclipped objective)", ("--objective", "none"),
                                   detail="8. clipped surrogate objective"),
         "objective-kl": Setting("the adaptive KL penalty (eq. 8) instead of the clip", ("--objective", "kl"),
                                 detail="adaptive KL penalty (paper eq. 8)"),
         "no-norm-obs": Setting("observation normalization off", ("--no-norm-obs",),
                                detail="6. observation normalization"),
         "no-norm-reward": Setting("reward scaling off", ("--no-norm-reward",), detail="8. reward scaling")},
        seeds=list(range(1, 11)), metrics=[AUC, FINAL, SOLVE], threshold=-200.0),
    # Breakout's one disputed detail at the published budget (issue 46, item 6): epsilon held (CleanRL's
    # ppo_atari.py, the lesson's default since this study) or annealed with the learning rate (the paper's Table 5,
    # SB3). Its cells are the 40M-frame runs of benchmarks/README, each alone on 2 cores, bf16 (--precision auto);
    # two seeds a setting, fewer than an interval needs (MIN_SEEDS), so its effects have none.
    "breakout": Ablation(
        "breakout", "ppo_breakout_atari.py", "BreakoutNoFrameskip-v4", 10_000_000,
        {"default": Setting("the lesson's defaults: epsilon held at 0.1 (CleanRL's ppo_atari.py)"),
         "anneal-clip": Setting("epsilon annealed to 0 with the learning rate (Table 5)", ("--anneal-clip",))},
        seeds=[1, 2], metrics=[FINAL, AUC], final_episodes=100, bin_steps=250_000,
        flags=["--no-cuda", "--vectorization-mode", "sync"],
        # the runs' labels: the held epsilon's ran with --no-anneal-clip, the default then was annealing
        records={"default": {1: "long40m-constclip", 2: "long40m-constclip-seed2"},
                 "anneal-clip": {1: "long40m", 2: "long40m-seed2"}},
        finished_steps=9_999_360,  # 9,765 updates of 8 envs x 128 steps
        steps="agent steps (4 frames each)", episodes="whole games in training"),
}
RUNS_FIELDS = ["task", "setting", "seed", "final_return", "steps_to_solve", "eval_return", "episodes", "steps",
               "wall_seconds", "processor", "run_dir", "acted"]
CURVE_FIELDS = ["task", "setting", "seed", "step", "mean_return"]
EFFECT_FIELDS = ["study", "task", "setting", "detail", "metric", "runs", "default_runs", "score", "effect", "low",
                 "high", "verdict", "test", "p", "p_holm", "family", "detectable", "solved", "acted"]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ablations", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", nargs="?", choices=list(STUDIES), help="the study to run (none: --report-only of all)")
    parser.add_argument("--settings", nargs="+", help="settings to run (default: all of the study's)")
    parser.add_argument("--seeds", nargs="+", type=int, help="seeds to run (default: the study's)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once, one thread each")
    parser.add_argument("--runs-dir", type=Path, default=ROOT, help="where runs/ (the run folders) goes")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument("--total-timesteps", type=int, help="env steps per run (default: the study's; for tests)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print one shell line per cell not done (to run from the repository's root), run nothing")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: add the finished runs to the CSVs, then rewrite the tables and figures")
    parser.add_argument("--list", action="store_true", help="print the studies and their settings")
    parser.add_argument("--try-this", action="store_true",
                        help="print each lesson's \"Try this\" lines from the committed effects (its docstring quotes them)")
    parser.add_argument("--write-try-this", action="store_true",
                        help="rewrite those lines in the lessons' docstrings (under their hand-written header line)")
    args = parser.parse_args(argv)
    if args.study is None and not (args.report_only or args.list or args.try_this or args.write_try_this):
        parser.error(f"name a study to run ({', '.join(STUDIES)}), or give --report-only or --list")
    if args.study and args.settings:
        unknown = set(args.settings) - set(STUDIES[args.study].settings)
        if unknown:
            parser.error(f"{args.study} has no setting {', '.join(sorted(unknown))} (--list shows them)")
    if args.study and STUDIES[args.study].records and args.seeds:
        unknown = set(args.seeds) - set(STUDIES[args.study].seeds)
        if unknown:  # its cells are the recorded runs: no other seed has a record or a command
            parser.error(f"{args.study} has no seed {', '.join(map(str, sorted(unknown)))}: its cells are the runs "
                         f"of seeds {', '.join(map(str, STUDIES[args.study].seeds))}")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args


# ---------------------------------------------------------------------------------------------------------
# A finished run's row and curve
# ---------------------------------------------------------------------------------------------------------
def summarize_run(ablation: Ablation, run_dir: Path, acts: str | None = None) -> tuple[dict, list[dict]]:
    """A finished run's row (its scores, counts and training seconds; with `acts`, a Setting's, in how many of
    its logged updates the change acted) and its learning curve (the mean return of the training episodes that
    ended in each bin of `bin_steps` steps)."""
    scalars, _ = runs.read_scalars(run_dir)
    episodes = scalars.get("charts/episodic_return", [])
    if not episodes:
        raise ValueError(f"{run_dir} logged no episodes")
    returns = [event.value for event in episodes]
    solved = None
    if ablation.threshold is not None:
        crossing = stats.rolling_first_crossing([e.step for e in episodes], [e.wall_time for e in episodes],
                                                returns, 20, ablation.threshold)
        solved = crossing[0] if crossing else None
    evaluations = scalars.get("eval/mean_return", [])
    row = {"final_return": statistics.fmean(returns[-ablation.final_episodes:]),
           "steps_to_solve": solved, "eval_return": evaluations[-1].value if evaluations else None,
           "episodes": len(episodes), "steps": max(event.step for events in scalars.values() for event in events),
           "wall_seconds": round(runs.training_seconds(run_dir), 1), "processor": processor(),
           "run_dir": grid.relative(run_dir), "acted": acted(scalars, acts) if acts else None}
    return row, stats.binned_means([(event.step, event.value) for event in episodes], ablation.bin_steps)


def record_csv(ablation: Ablation, setting: str, seed: int) -> Path:
    """Where a recorded cell's row is: benchmarks/results/<script>-<label>.csv, its curve beside it."""
    return RESULTS.parent / f"{Path(ablation.script).stem}-{ablation.records[setting][seed]}.csv"


def record_command(ablation: Ablation, setting: str, seed: int) -> str:
    """The shell line that makes a recorded cell: the run (stopped with Ctrl-C and resumed with --resume as often as
    the sessions need), then its record."""
    label, csv = ablation.records[setting][seed], grid.relative(record_csv(ablation, setting, seed))
    run = ["python", ablation.script, "--total-timesteps", str(ablation.total_timesteps), *ablation.flags,
           *ablation.settings[setting].flags, "--seed", str(seed), "--exp-name", label]
    record = ["python", "-m", "benchmarks.benchmark", "--script", ablation.script, "--window",
              str(ablation.final_episodes), "--label", label, "--csv", csv, "--from-logs",
              f"'runs/{ablation.task}__{label}__*'"]
    return " ".join(run) + " && " + " ".join(record)


def summarize_record(ablation: Ablation, setting: str, seed: int) -> tuple[dict, list[dict]] | None:
    """A recorded cell's row and curve, as summarize_run gives a run folder's, from its results CSV and curves
    (training seconds: the span of its logged points, silences over 10 minutes left out, as benchmarks.results
    times a resumed run); None while its record is missing or unfinished."""
    path = record_csv(ablation, setting, seed)
    rows = [r for r in read_csv(path) if int(r["seed"]) == seed]
    if not rows or int(rows[-1]["total_steps"]) < ablation.finished_steps:
        return None
    points = [p for p in load_points(curves_path(path)) if int(p["seed"]) == seed]
    episodes = [(p["env_steps"], p["value"]) for p in points if p["tag"] == "charts/episodic_return"]
    row = {"final_return": statistics.fmean(v for _, v in episodes[-ablation.final_episodes:]),
           "steps_to_solve": None, "eval_return": None, "episodes": len(episodes),
           "steps": int(rows[-1]["total_steps"]),
           "wall_seconds": round(stats.active_seconds([p["wall_seconds"] for p in points]), 1),
           "processor": None, "run_dir": grid.relative(path), "acted": None}
    return row, stats.binned_means(episodes, ablation.bin_steps)


def acted(scalars: dict, tag: str) -> str:
    """'k/n': in k of the n updates that logged `tag` it was above 0 (the change acted)."""
    values = [event.value for event in scalars.get(tag, [])]
    return f"{sum(1 for v in values if v > 0)}/{len(values)}"


def recorded(ablation: Ablation, results_dir: Path) -> tuple[list[dict], list[dict]]:
    """The study's rows and curve points, from its CSVs."""
    return read_csv(results_dir / f"{ablation.name}-runs.csv"), read_csv(results_dir / f"{ablation.name}-curves.csv")


def cells_of(ablation: Ablation, settings: list[str] | None, seeds: list[int] | None) -> list[grid.Cell]:
    """The cells of `settings` (default: all) at `seeds` (default: each setting's own, Ablation.seeds_of), seed by
    seed as grid.cells orders them."""
    every = grid.cells(ablation.script, [ablation.task], settings or list(ablation.settings),
                       seeds or sorted(set(ablation.seeds) | set(ablation.default_seeds or [])))
    return [c for c in every if seeds or c.seed in ablation.seeds_of(c.setting)]


def collect(ablation: Ablation, study: grid.Study, cells: list[grid.Cell], results_dir: Path,
            done: set[grid.Cell]) -> int:
    """Add every finished run of `cells` that is not `done` (recorded: recorded()'s rows) to the study's
    CSVs, and fill a recorded row's `acted` where its setting checks one and its run folder is here; returns how
    many runs were added."""
    own_rows, own_curves = recorded(ablation, results_dir)
    unknown = sorted({r["setting"] for r in own_rows} - set(ablation.settings))
    if unknown:  # a setting taken out of the study: its rows would be neither reported nor sorted
        print(f"{results_dir / f'{ablation.name}-runs.csv'} has rows of settings the {ablation.name} study does not "
              f"have ({', '.join(unknown)}): remove them, or put the settings back", file=sys.stderr)
        sys.exit(2)
    added = filled = 0
    for row in own_rows:  # a recorded row that predates its setting's `acts` check: read it where the run is here
        acts = ablation.settings[row["setting"]].acts
        folder = ROOT / row["run_dir"] if row.get("run_dir") else None
        if acts and not row.get("acted") and folder is not None and folder.is_dir():
            row["acted"] = acted(runs.read_scalars(folder)[0], acts)
            filled += 1
    for cell in cells:
        if cell in done:
            continue
        state, folder = study.state(cell)
        if state != "done":
            continue
        add_run(own_rows, own_curves, cell, *summarize_run(ablation, folder, ablation.settings[cell.setting].acts))
        added += 1
    if added or filled:
        write_recorded(ablation, results_dir, own_rows, own_curves)
    return added


def collect_records(ablation: Ablation, cells: list[grid.Cell], results_dir: Path, done: set[grid.Cell],
                    dry_run: bool = False) -> int:
    """collect for a study of long runs (`records`): add each finished record of `cells` that is not `done` to the
    study's CSVs; with `dry_run`, add nothing and print a line per cell: its command where it is not recorded yet
    (`# not recorded`), `# done` where it is. Returns how many runs were added."""
    rows, curves = recorded(ablation, results_dir)
    added = 0
    for cell in cells:
        name = f"{cell.task} {cell.setting} seed {cell.seed}"
        found = None if cell in done else summarize_record(ablation, cell.setting, cell.seed)
        if dry_run:
            print(f"# done {name}" if cell in done or found else
                  f"{record_command(ablation, cell.setting, cell.seed)}  # not recorded {name}")
            continue
        if found is not None:
            add_run(rows, curves, cell, *found)
            added += 1
    if added:
        write_recorded(ablation, results_dir, rows, curves)
    return added


def add_run(rows: list[dict], curves: list[dict], cell: grid.Cell, row: dict, curve: list[dict]) -> None:
    """A finished cell's row and curve points, keyed by its task, setting and seed, to the study's lists."""
    key = {"task": cell.task, "setting": cell.setting, "seed": cell.seed}
    rows.append({**key, **row})
    curves.extend({**key, **point} for point in curve)


def write_recorded(ablation: Ablation, results_dir: Path, rows: list[dict], curves: list[dict]) -> None:
    """The study's rows and curve points to <study>-runs.csv and -curves.csv, in the study's order of settings."""
    order = list(ablation.settings)
    sort = lambda r: (order.index(r["setting"]), int(r["seed"]))  # noqa: E731
    write_csv(results_dir / f"{ablation.name}-runs.csv", sorted(rows, key=sort), RUNS_FIELDS)
    write_csv(results_dir / f"{ablation.name}-curves.csv", sorted(curves, key=lambda r: (*sort(r), int(r["step"]))),
              CURVE_FIELDS)


def acted_total(rows: list[dict]) -> str | None:
    """The runs' 'k/n' summed ('0/1464': never acted in 3 runs of 488 updates), None where a run lacks one."""
    counts = [r.get("acted") for r in rows]
    if not counts or any(c in ("", None) for c in counts):
        return None
    k, n = (sum(int(c.split("/")[i]) for c in counts) for i in (0, 1))
    return f"{k}/{n}"


def acted_text(setting: Setting, total: str | None) -> str:
    """What the table and the map say of a setting with an `acts` check: '' where it acted or is not checked."""
    if not setting.acts or total is None or not total.startswith("0/"):
        return ""
    return (f"it never acted ({setting.acts} 0 in all {total.split('/')[1]} updates): the same algorithm as the "
            f"default, rounding apart, so this interval is two samples of one recipe")


# ---------------------------------------------------------------------------------------------------------
# Effects, intervals and verdicts
# ---------------------------------------------------------------------------------------------------------
def auc(points: list[dict]) -> float:
    """The area under one run's binned learning curve, per step: the mean of its bins' mean returns."""
    return statistics.fmean(float(p["mean_return"]) for p in points)


def scores(ablation: Ablation, rows: list[dict], curves: list[dict], metric: Metric) -> dict[str, list[float]]:
    """{setting: [one score per seed, in seed order]}. Steps to solve: the budget where a run never solved."""
    by_run: dict[tuple[str, int], list[dict]] = {}
    for point in curves:
        by_run.setdefault((point["setting"], int(point["seed"])), []).append(point)
    found: dict[str, list[float]] = {}
    for row in sorted(rows, key=lambda r: int(r["seed"])):
        if metric is AUC:
            value = auc(by_run[row["setting"], int(row["seed"])])
        elif metric is SOLVE:
            value = float(row["steps_to_solve"]) if row["steps_to_solve"] not in ("", None) else float(row["steps"])
        elif row.get(metric.name) in ("", None):
            continue
        else:
            value = float(row[metric.name])
        found.setdefault(row["setting"], []).append(value)
    return found


def effects(ablation: Ablation, rows: list[dict], curves: list[dict]) -> list[dict]:
    """Every setting's effect on every score against the default's, with its interval, test, Holm-corrected
    verdict and detectable effect (benchmarks/core/inference.py: the settings on one score are one family)."""
    found = []
    for metric in ablation.metrics:
        by_setting = scores(ablation, rows, curves, metric)
        default = by_setting.get(ablation.default, [])
        family = []
        for name, setting in ablation.settings.items():
            values = by_setting.get(name, [])
            seeds = min(len(values), len(default))
            if name == ablation.default or seeds < MIN_SEEDS and not (seeds == len(ablation.seeds) > 1):
                continue
            if seeds < MIN_SEEDS:  # a study of fewer seeds than a test needs, all run: the difference alone
                c = inference.Comparison(statistics.fmean(values) - statistics.fmean(default), None, None, None,
                                         f"none: {seeds} seeds a side, a test needs {MIN_SEEDS}", None,
                                         verdict=f"none: {seeds} seeds a side, a test needs {MIN_SEEDS}")
            elif metric is SOLVE:
                c = inference.compare_censored(values, default, metric.higher_is_better)
            else:
                c = inference.compare_means(values, default, metric.higher_is_better)
            family.append((name, setting, values, default, c))
        inference.family([c for *_, c in family])
        tested = sum(1 for *_, c in family if c.p is not None)  # the family's size: the comparisons with a test
        center = statistics.median if metric is SOLVE else statistics.fmean
        # to effects.csv's decimals here, so that the table and the map (read from the CSV) print one figure
        rounded = lambda x: None if x is None else round(x, DECIMALS)  # noqa: E731
        for name, setting, values, default, c in family:
            found.append({
                "study": ablation.name, "task": ablation.task, "setting": name, "detail": setting.detail or "",
                "metric": metric.name, "runs": len(values), "default_runs": len(default),
                "score": round(center(values), DECIMALS), "effect": round(c.effect, DECIMALS), "low": rounded(c.low),
                "high": rounded(c.high), "verdict": c.verdict, "test": c.test,
                "p": None if c.p is None else f"{c.p:.4g}",  # strings: write_csv rounds floats to 3 decimals
                "p_holm": None if c.p_holm is None else f"{c.p_holm:.4g}",
                "family": tested, "detectable": rounded(c.detectable),
                "solved": f"{sum(1 for r in rows if r['setting'] == name and r['steps_to_solve'] not in ('', None))}"
                          f"/{len(values)}" if metric is SOLVE else None,
                "acted": acted_total([r for r in rows if r["setting"] == name]) if setting.acts else None})
    return found


# ---------------------------------------------------------------------------------------------------------
# Report: the table, the curves, the chart of effects
# ---------------------------------------------------------------------------------------------------------
def number(value: float, metric: Metric) -> str:
    """A score or an effect to one decimal, steps in thousands ("12.3k"); no "-0.0"."""
    value = value / 1000 if metric is SOLVE else value
    return f"{0.0 if round(value, 1) == 0 else value:.1f}" + ("k" if metric is SOLVE else "")


def interval_text(e: dict, metric: Metric) -> str:
    """'-45.2 [-80.1, -12.0]', steps in thousands ('+12.3k [3.1k, 20.0k]'); '+13.1k (medians)' for steps to solve
    (a rank test, no interval), '>= +751.1k (medians; 1 of 5 solved)' where half the setting's runs or more never
    solved (its median is the budget: the effect is a lower bound); 'none: 500 on every run of both' where every
    run of both is at one value (a ceiling); '+56.3 (no interval)' where the study has too few seeds for one."""
    sign = lambda v: ("" if number(v, metric)[0] in "-0" else "+") + number(v, metric)  # noqa: E731
    if has_interval(e):
        return f"{sign(e['effect'])} [{number(e['low'], metric)}, {number(e['high'], metric)}]"
    if e.get("verdict") == "at the ceiling":
        return f"none: {float(e['score']):g} on every run of both"
    if metric is SOLVE and e.get("p") not in ("", None):
        solved, runs = (int(k) for k in str(e.get("solved") or "0/0").split("/"))
        if runs and 2 * solved <= runs:  # the setting's median is an unsolved run's: the budget, a lower bound
            return f">= {sign(e['effect'])} (medians; {solved} of {runs} solved)"
        return f"{sign(e['effect'])} (medians)"
    return f"{sign(e['effect'])} (no interval)"


def verdict_text(e: dict, metric: Metric) -> str:
    """The verdict as a table, the map and "Try this" print it: 'hurts (Holm p 0.004)'; 'not detected (could
    detect 412.5)' where the study could have detected an effect of that size (4 times in 5), 'not detected (Holm
    p 0.31)' where no such size is computed (a rank test), 'not detected (nothing detectable: 5 against 5 runs)'
    where no split of the runs could pass the family's correction; the others as they are."""
    if e["verdict"] in ("helps", "hurts"):
        return f"{e['verdict']} (Holm p {float(e['p_holm']):.2g})"
    if e["verdict"] == "not detected":
        if e.get("detectable") not in ("", None):
            if float(e["detectable"]) == float("inf"):
                return f"not detected (nothing detectable: {e['runs']} against {e['default_runs']} runs)"
            return f"not detected (could detect {number(float(e['detectable']), metric)})"
        return f"not detected (Holm p {float(e['p_holm']):.2g})"
    return e["verdict"]


def has_interval(e: dict) -> bool:
    """Whether an effect (in memory, or an effects.csv row) has an interval: not where its study has too few seeds,
    nor for a rank test or a score at the ceiling."""
    return e["low"] not in ("", None)


def effect_values(e: dict) -> dict:
    """An effects.csv row with its figures as numbers (None where it has none), the rest as it is."""
    numbers = {k: float(e[k]) if e.get(k) not in ("", None) else None
               for k in ("effect", "low", "high", "detectable", "p", "p_holm")}
    return {**e, **numbers}


def report(ablation: Ablation, rows: list[dict], curves: list[dict], found: list[dict]) -> str:
    metrics = ablation.metrics
    by_setting = {m.name: scores(ablation, rows, curves, m) for m in metrics}
    head = "| setting | what it changes | runs | " + " | ".join(
        f"{m.label} | effect {'(medians)' if m is SOLVE else '[95% CI]'} | verdict" for m in metrics) \
        + " | min / cell |"
    lines = [f"{ablation.script} on {ablation.task}, {ablation.total_timesteps:,} {ablation.steps} a run, one change "
             f"per setting against the default (the first row). " + scores_text(ablation), "",
             head, "|---" * (4 + 3 * len(metrics)) + "|"]
    notes = []
    for name, setting in ablation.settings.items():
        done = [r for r in rows if r["setting"] == name]
        if not done:
            continue
        cells = []
        for m in metrics:
            values = by_setting[m.name].get(name, [])
            e = next((e for e in found if e["setting"] == name and e["metric"] == m.name), None)
            shown = stats.mean_std(values, ".1f") if values else "-"
            if m is SOLVE:
                solved = sum(1 for r in done if r["steps_to_solve"] not in ("", None))
                shown = f"median {number(statistics.median(values), m)} ({solved}/{len(done)} solved)"
            cells += [shown, interval_text(e, m) if e else "-", verdict_text(e, m) if e else "-"]
        how = " ".join([*setting.flags, *(f"--patch {p}" for p in setting.patches)])
        how = f" (`{how}`)" if how else ""
        walls = [float(r["wall_seconds"]) for r in done if r.get("wall_seconds") not in ("", None)]
        minutes = f"{statistics.fmean(walls) / 60:.1f}" if walls else "-"
        lines.append(f"| `{name}` | {setting.what}{how} | {len(done)} | " + " | ".join(cells) + f" | {minutes} |")
        inert = acted_text(setting, acted_total(done))
        if inert:
            notes.append(f"`{name}`: {inert}.")
    walls = [float(r["wall_seconds"]) for r in rows if r.get("wall_seconds") not in ("", None)]
    lines += ["", *notes] if notes else []
    if walls:
        machines = sorted({r.get("processor") or "processor not recorded" for r in rows})
        how = ("each run alone on 2 cores, stopped and resumed across sessions, its stops left out; the machines "
               "of each stretch: benchmarks/README's history" if ablation.records else
               f"each cell on one thread, two at a time on 2 cores; {'; '.join(machines)}")
        lines += ["", f"{len(rows)} runs; training time per cell {min(walls) / 60:.1f} to {max(walls) / 60:.1f} min, "
                  f"{sum(walls) / 3600:.2f} h in all ({how})"]
    return "\n".join(lines)


def scores_text(ablation: Ablation) -> str:
    """What the columns mean, for the table's caption."""
    parts = [f"Final return: the mean of the last {ablation.final_episodes} {ablation.episodes} (sampled actions); "
             f"AUC: the mean of the training return binned per {ablation.bin_steps // 1000}k {ablation.step_unit} "
             "over the run"]
    if SOLVE in ablation.metrics:
        parts.append(f"steps to solve: the first step where the mean of the last 20 training episodes reaches "
                     f"{ablation.threshold:g} (a run that never does is censored at the budget: it is known only to "
                     "solve later, so this score gets its median, how many solved, and a rank test)")
    if EVAL in ablation.metrics:
        parts.append("greedy eval: the last update's evaluation, 10 episodes of argmax pi")
    if len(ablation.seeds) < MIN_SEEDS:
        return ("; ".join(parts) + f". Each: mean +/- std over seeds; effect: the setting's mean minus the default's; "
                f"with {len(ablation.seeds)} seeds a setting, under the {MIN_SEEDS} a test needs: the difference "
                "alone, no interval and no verdict. min / cell: training minutes per run, "
                + ("both cores." if ablation.records else "one thread."))
    return ("; ".join(parts) + ". Each: mean +/- std over seeds; effect: the setting's mean minus the default's, with "
            "its 95% Welch t interval. Verdict: the settings on one score are one family; each is tested against "
            "the default (a permutation test of the difference of means, exact where the runs' splits number "
            f"{inference.EXACT_SPLITS:,} or fewer, else Welch's t; ranks for steps to solve) and the family is "
            "Holm-corrected, so that the chance of any false verdict on a score is 5%: helps / hurts where the "
            "corrected test rejects (its Holm-adjusted p), else not detected, with the smallest effect the study "
            "could have detected (4 times in 5, at Holm's strictest level); at the ceiling: every run of both at one "
            "value, no test (benchmarks/core/inference.py). The interval is the effect's size, not the verdict: one "
            "that misses 0 can still be not detected once the family is counted. min / cell: training minutes per "
            "run, " + ("both cores." if ablation.records else "one thread."))


def plot_curves(ablation: Ablation, rows: list[dict], curves: list[dict], path: Path) -> None:
    """One panel per setting: its curve (mean over seeds, min-max band) beside the default's."""
    plt = plots.pyplot()
    settings = [s for s in ablation.settings if s != ablation.default and any(r["setting"] == s for r in rows)]
    if not settings:
        return
    columns = min(4, len(settings))
    height = (len(settings) + columns - 1) // columns
    figure, axes = plt.subplots(height, columns, squeeze=False, sharey=True, figsize=(max(4 * columns, 10), 3 * height))
    runs = plots.binned_runs(curves, key=lambda p: p["setting"])
    default = runs.get(ablation.default, {})
    for ax, name in zip(axes.flat, settings):
        if default:
            plots.band(ax, default, "gray", "default", on="shared")
        plots.band(ax, runs.get(name, {}), "tab:red", name, on="shared")
        ax.set_title(name, fontsize=10)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(settings):]:
        ax.axis("off")
    title = (f"{ablation.script} on {ablation.task}: training return per {ablation.bin_steps // 1000}k "
             f"{ablation.step_unit}, mean over seeds and min-max band (gray: the default)")
    figure.suptitle(textwrap.fill(title, 9 * int(figure.get_figwidth())))  # one panel: two lines
    figure.tight_layout()
    plots.save(figure, path, dpi=70)


def plot_effects(found: list[dict], path: Path) -> None:
    """Every study's effects on its leading score, with their intervals, one panel per study."""
    plt = plots.pyplot()
    studies = [a for a in STUDIES.values() if any(e["study"] == a.name and e["metric"] == a.metrics[0].name
                                                  and has_interval(e) for e in found)]
    if not studies:
        return
    figure, axes = plt.subplots(1, len(studies), squeeze=False, figsize=(6 * len(studies), 6))
    colors = {"helps": "tab:green", "hurts": "tab:red", "not detected": "gray"}
    for ax, ablation in zip(axes.flat, studies):
        metric = ablation.metrics[0]
        shown = [e for e in found if e["study"] == ablation.name and e["metric"] == metric.name and has_interval(e)]
        for y, e in enumerate(shown):
            ax.errorbar(float(e["effect"]), y, xerr=[[float(e["effect"]) - float(e["low"])],
                                                      [float(e["high"]) - float(e["effect"])]],
                        fmt="o", color=colors[e["verdict"]])
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(shown)), [e["setting"] for e in shown])
        ax.invert_yaxis()
        counts = sorted({(int(e["runs"]), int(e["default_runs"])) for e in shown})
        runs = ", ".join(f"{n} against {m}" for n, m in counts)
        ax.set_title(f"{ablation.task}: effect on {metric.label}\n(runs: {runs}; family of {shown[0]['family']})")
        ax.grid(alpha=0.3)
    figure.suptitle("Each setting minus the default (mean over seeds), 95% Welch t interval; the verdict by the "
                    "study's Holm-corrected tests (green helps, red hurts, gray not detected)")
    figure.tight_layout()
    plots.save(figure, path, dpi=70)


def write_reports(results_dir: Path, studies: dict[str, Ablation] = STUDIES) -> list[dict]:
    """Every study's table and curves, effects.csv and effects.png, from the CSVs; returns the effects."""
    found = []
    for ablation in studies.values():
        rows, curves = recorded(ablation, results_dir)
        if not rows:
            continue
        mine = effects(ablation, rows, curves)
        found += mine
        text = report(ablation, rows, curves, mine)
        (results_dir / f"{ablation.name}.md").write_text(text + "\n")
        plot_curves(ablation, rows, curves, results_dir / f"{ablation.name}.png")
        if results_dir == RESULTS:  # the committed record: its part of benchmarks/README too
            write_marked(RECORD, f"ablation-{ablation.name}", text)
    if found:
        write_csv(results_dir / "effects.csv", found, EFFECT_FIELDS, floats="decimals")
        plot_effects(found, results_dir / "effects.png")
    return found


# ---------------------------------------------------------------------------------------------------------
# README's implementation-details map: the column of what each detail's settings did
# ---------------------------------------------------------------------------------------------------------
# Why a row of the map has no setting in the studies (every other row has one or more).
NOT_MEASURED = {
    "6. minibatch updates": "not switched off; the epochs' count is (halved, doubled: benchmarks/README)",
    "12. debug variables (approx_kl, clipfrac, ...)": "logging only: it changes no update",
    "1. Gaussian policy": "the continuous variant itself",
    "2. state-independent log std": "the continuous variant itself",
    "3. independent action components": "the continuous variant itself",
    "4. separate policy and value networks": "see core 13 (`shared-trunk` on Hopper)",
    "5. action clipped for the env, stored unclipped": "not in the studies",
    "9. reward clipping": "not alone: `no-norm-reward` takes it away with the scaling",
}
ATARI = "not in the studies: a Breakout run is 40M frames (its study is epsilon's annealing)"


def map_column(detail: str, group: str, found: list[dict]) -> str:
    """The map's cell for one detail: each setting that measured it, on each study's leading score, as
    "`setting` Task score: effect [low, high] verdict (Holm p, or what it could have detected)"; or why it is not
    measured (yet)."""
    parts, pending = [], {}
    for ablation in STUDIES.values():
        leading = ablation.metrics[0]
        for name, setting in ablation.settings.items():
            if setting.detail != detail:
                continue
            e = next((e for e in found if e["study"] == ablation.name and e["setting"] == name
                      and e["metric"] == leading.name), None)
            task = ablation.task.split("-v")[0]
            if e is None:
                pending.setdefault(name, []).append(task)
            else:
                value = effect_values(e)
                partial = f" ({e['runs']} of {len(ablation.seeds)} seeds)" if int(e["runs"]) < len(ablation.seeds) else ""
                inert = acted_text(setting, e.get("acted") or None)
                parts.append(f"`{name}` {task} {leading.label}: {interval_text(value, leading)} "
                             f"{verdict_text(e, leading)}{partial}"
                             + (f", but {inert}" if inert else ""))
    parts += [f"`{name}` not run yet on {', '.join(tasks)}" for name, tasks in pending.items()]
    if parts:
        return "; ".join(parts)
    return ATARI if group == "Atari" else NOT_MEASURED.get(detail, "not in the studies")


# Each lesson's "Try this": the settings its docstring quotes, with what each did in its study (the study's
# leading score; tests/test_ablations.py holds the docstrings to try_this's lines).
TRY_THIS = {
    "ppo_cartpole.py": ("cartpole", ["gae-lambda-1", "unclipped-objective", "no-norm-adv"]),
    "ppo_lunarlander_vec.py": ("lunarlander", ["shared-trunk", "epochs-10", "no-clip-vloss"]),
    "ppo_pendulum_continuous.py": ("pendulum", ["objective-none", "no-norm-reward", "no-norm-obs"]),
}


def try_this(script: str, found: list[dict]) -> list[tuple[str, str]]:
    """The docstring's "Try this" experiments of `script`, as (command, measured): the command a learner types
    for each setting, and what it did to the study's leading score (the header names it), e.g.
    ("python ppo_cartpole.py --no-norm-adv", "+3.6 [-4.2, 11.3], not detected (could detect 15.2)"). The study runs
    the lesson at its own defaults (tests/test_ablations.py holds it to them), so that command is the study's run."""
    study, settings = TRY_THIS[script]
    ablation = STUDIES[study]
    metric = ablation.metrics[0]
    experiments = []
    for name in settings:
        setting = ablation.settings[name]
        e = next(e for e in found if e["study"] == study and e["setting"] == name and e["metric"] == metric.name)
        command = " ".join(["python", *(f"-m benchmarks.patches --patch {p}" for p in setting.patches), script,
                            *setting.flags])
        # the bare verdict where it is one: a lesson's reader has the interval, Holm's p stays in the tables
        verdict = e["verdict"] if e["verdict"] in ("helps", "hurts") else verdict_text(e, metric)
        experiments.append((command, f"{interval_text(effect_values(e), metric)}, {verdict}"))
    return experiments


def write_try_this(path: Path, experiments: list[tuple[str, str]]) -> None:
    """Rewrite the "Measured:" line of each experiment under the docstring's "Try this" header (course.lessons'
    layout) from `experiments`, [(command, measured)]: the docstring must hold these commands, in this order (its
    questions and answers are the lesson's own prose, which this never writes)."""
    path.write_text(try_this_text(path, experiments))


def try_this_text(path: Path, experiments: list[tuple[str, str]]) -> str:
    """The lesson's text with write_try_this's Measured lines; ValueError where its commands are not these."""
    text = path.read_text()
    _, found = lessons.try_this(ast.get_docstring(ast.parse(text), clean=False))
    if [e.command for e in found] != [command for command, _ in experiments]:
        raise ValueError(f"{path.name}: its Try this commands {[e.command for e in found]} are not the study's "
                         f"{[command for command, _ in experiments]}")
    start = text.index("\nTry this (")
    for command, measured in experiments:
        start = text.index(f"    {command}\n", start)
        line = text.index("        Measured: ", start)
        end = text.index("\n", line)
        text = text[:line] + f"        Measured: {measured}" + text[end:]
    return text


def read_effects(results_dir: Path = RESULTS) -> list[dict]:
    return read_csv(results_dir / "effects.csv")


def write_marked(path: Path, name: str, text: str) -> None:
    """`text` between the `<!-- name:begin -->` and `<!-- name:end -->` lines of `path`, where it has them."""
    from tools.diff_matrix import between_markers

    record = path.read_text()
    updated = between_markers(record, f"<!-- {name}:begin -->", f"<!-- {name}:end -->", text)
    if updated is not None and updated != record:
        path.write_text(updated)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.try_this or args.write_try_this:
        found = read_effects(args.results_dir)
        every = {script: try_this(script, found) for script in TRY_THIS}
        if args.write_try_this:
            try:  # every lesson checked before any is written
                texts = {script: try_this_text(ROOT / script, experiments) for script, experiments in every.items()}
            except ValueError as error:  # a docstring's commands are not its study's: say so, write nothing
                print(error, file=sys.stderr)
                return 2
            for script, text in texts.items():
                (ROOT / script).write_text(text)
        for script, experiments in every.items():
            print(f"{script}:" + "".join(f"\n    {command}\n        Measured: {measured}"
                                         for command, measured in experiments))
        return 0
    if args.list:
        for ablation in STUDIES.values():
            print(f"{ablation.name}: {ablation.script} on {ablation.task}, {ablation.total_timesteps:,} steps, "
                  f"seeds {ablation.seeds[0]}-{ablation.seeds[-1]}" + (
                      f" (the default: {ablation.default_seeds[0]}-{ablation.default_seeds[-1]})"
                      if ablation.default_seeds else ""))
            for name, setting in ablation.settings.items():
                how = " ".join([*setting.flags, *(f"--patch {p}" for p in setting.patches)])
                print(f"  {name:22s} {setting.what}" + (f" ({how})" if how else ""))
        return 0
    studies = {name: dataclasses.replace(a, total_timesteps=args.total_timesteps or a.total_timesteps)
               for name, a in STUDIES.items()}
    for name in [args.study] if args.study else list(studies):
        ablation = studies[name]
        study = ablation.study(args.runs_dir)
        cells = cells_of(ablation, args.settings if args.study else None, args.seeds if args.study else None)
        rows, _ = recorded(ablation, args.results_dir)
        done = {grid.Cell(ablation.script, ablation.task, r["setting"], int(r["seed"])) for r in rows}
        if ablation.records:  # long runs, each made by its own command: read from their records, none run here
            added = collect_records(ablation, cells, args.results_dir, done, dry_run=args.dry_run)
            if args.dry_run:
                return 0
        else:
            if not args.report_only:
                grid.run(study, cells, args.jobs, done, dry_run=args.dry_run)
            if args.dry_run:
                return 0
            added = collect(ablation, study, cells, args.results_dir, done)
        if added:
            print(f"{name}: added {added} finished runs to {args.results_dir / (name + '-runs.csv')}")
    found = write_reports(args.results_dir, studies)
    print(f"written under {args.results_dir}: {len(found)} effects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
