"""The debugging guide (course/when-ppo-does-not-learn.md) and its command, `python -m course.diagnose runs/<run>`:
the rule by hand, the command on run folders written from the recorded runs (benchmarks/results/debugging/), its
bad input, a real CartPole run at the defaults, and the guide's figures and blocks as the records give them."""

import json
import re
import statistics
import subprocess
import sys

import pytest
import torch

from benchmarks import debugging
from conftest import ROOT
from course import debugging as guide
from course import diagnose
from course.lessons import SCRIPTS

GUIDE_TEXT = (ROOT / diagnose.GUIDE).read_text()


def run_diagnose(*args, cwd=ROOT):
    """`python -m course.diagnose ARGS` as a learner runs it, in a process of its own."""
    return subprocess.run([sys.executable, "-m", "course.diagnose", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


@pytest.fixture
def diagnosed(capsys):
    """The command's main() in this process (the same code, without a second of imports each time): its exit code,
    what it printed and what it wrote on stderr."""
    def run(*args):
        code = diagnose.main([str(a) for a in args])
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)
    return run


# --- the rule, by hand -------------------------------------------------------------------------------------------

def test_the_limits_are_the_widened_medians_narrowed_to_the_band_for_few_seeds():
    r = diagnose.Range(band=(0.0, 1.0), medians=[0.4, 0.5, 0.6])
    assert r.widened("losses/entropy", margin=1.0) == pytest.approx((0.2, 0.8))
    assert r.limits("losses/entropy", margin=1.0) == pytest.approx((0.2, 0.8))
    assert r.limits("losses/entropy", margin=5.0) == (0.0, 1.0)  # never wider than the band
    # approx_kl's medians widen on a log scale: 1e-3 to 1e-2 is one decade, so one decade more each side
    kl = diagnose.Range(band=(1e-6, 1.0), medians=[1e-3, 3e-3, 1e-2])
    assert kl.limits("losses/approx_kl", margin=1.0) == pytest.approx((1e-4, 1e-1))
    # under three seeds the medians say too little: the band alone
    assert diagnose.Range(band=(0.1, 0.9), medians=[0.5, 0.6]).limits("losses/entropy") == (0.1, 0.9)
    # five seeds or more: their spread alone, past the band (a trending diagnostic's band is as narrow as the seeds'
    # last values: a fresh healthy Pendulum seed's entropy, 0.294 over its second half, fell under the band's 0.314)
    many = diagnose.Range(band=(0.3144, 0.6837), medians=[0.369, 0.376, 0.414, 0.423, 0.452, 0.459, 0.46, 0.466,
                                                          0.49, 0.527])
    low, high = many.limits("losses/entropy")
    assert low == pytest.approx(0.369 - 1.5 * (0.527 - 0.369)) and low < 0.294 < 0.3144 and high > 0.6837


def test_outside_names_the_side_and_skips_what_the_record_lacks():
    healthy = {("losses/entropy", "all"): diagnose.Range((0.3, 0.7), [0.45, 0.5, 0.55]),
               ("losses/approx_kl", "all"): diagnose.Range((1e-4, 1e-1), [1e-3, 2e-3, 4e-3])}
    medians = {("losses/entropy", "all"): 0.8, ("losses/approx_kl", "all"): 0.0,
               ("losses/clipfrac", "all"): 0.9}  # clipfrac: no healthy range here, not judged
    found = diagnose.outside(medians, healthy, margin=1.0)
    assert [(tag, side) for tag, _, _, _, side in found] == [("losses/approx_kl", "below"), ("losses/entropy", "above")]


def test_since_is_when_the_rolling_median_first_left_and_whether_it_came_back():
    series = [(100 * i, 0.5) for i in range(1, 51)] + [(100 * i, 5.0) for i in range(51, 101)]
    assert diagnose.since(series, (0.0, 1.0), "above") == (5100, True)  # the change, at the window's middle
    back = series + [(100 * i, 0.5) for i in range(101, 131)]  # 130 updates: a window of 13
    assert diagnose.since(back, (0.0, 1.0), "above") == (5100, False)
    assert diagnose.since(series, (0.0, 1.0), "below") is None


def episodes(values, start=0):
    return [(start + 100 * i, float(v)) for i, v in enumerate(values, start=1)]


def test_the_return_flat_collapsed_or_learning():
    healthy = {"a": episodes([10] * 20 + [200] * 40), "b": episodes([10] * 20 + [100] * 40)}  # gains 190, 90
    flat = diagnose.judge_return(episodes([10] * 30 + [30] * 30), healthy)  # gained 20 < a quarter of 90
    assert flat.symptoms == ["the-return-stays-flat"] and flat.healthy_gain == pytest.approx(90)
    learning = diagnose.judge_return(episodes([10] * 30 + [60] * 30), healthy)  # gained 50 >= 22.5
    assert learning.symptoms == []
    collapsed = diagnose.judge_return(episodes([10] * 20 + [150] * 20 + [20] * 20), healthy)
    assert collapsed.symptoms == ["the-return-rises-then-collapses"]
    assert diagnose.judge_return(episodes([10] * 39), healthy) is None  # too few episodes to judge


def test_a_return_well_below_healthy_is_flagged_and_the_changed_flag_named_first(tmp_path, diagnosed):
    """Gained 60 where the slowest healthy seed gained 90 by then (two thirds): learning. Gained 40 (under half, over a
    quarter): below the healthy runs, its own symptom; a run of it with a changed flag names that flag before the
    guide's causes (the recorded --gamma 0.5 run on CartPole ends at 119 where the healthy runs reach 500)."""
    healthy = {"a": episodes([10] * 20 + [200] * 40), "b": episodes([10] * 20 + [100] * 40)}  # gains 190, 90
    assert diagnose.judge_return(episodes([10] * 30 + [70] * 30), healthy).symptoms == []
    below = diagnose.judge_return(episodes([10] * 30 + [50] * 30), healthy)
    assert below.symptoms == ["the-return-ends-below-the-healthy-runs"]
    # it rose by 40 (over a quarter of 90), kept half of that and ends at +20 (under a quarter): learned, then less;
    # not flat (it rose), not collapsed (it kept half), below (as --gamma 0.5 on CartPole: +167 at best, +96 at the end)
    rose = diagnose.judge_return(episodes([10] * 20 + [50] * 20 + [30] * 20), healthy)
    assert rose.symptoms == ["the-return-ends-below-the-healthy-runs"]
    row = RECORDED["cartpole-gamma-0.5"]  # the recorded run: python ppo_cartpole.py --gamma 0.5 --seed 1
    done = diagnosed(write_run(tmp_path / "gamma", row["lesson"], row["args"], *debugging.series("cartpole-gamma-0.5")))
    lines = done.stdout.splitlines()
    assert f"{diagnose.GUIDE}#the-return-ends-below-the-healthy-runs" in done.stdout
    causes = lines.index("what it looks like, and the likely causes:")
    assert lines[causes + 1] == "  first suspect what your run changes: --gamma 0.5 (the healthy runs' 0.98)"


def test_clipfrac_below_with_approx_kl_above_is_one_pattern_not_two_faults():
    """A wider clip (--clip-coef 0.9) moves the policy further (approx_kl above) while fewer ratios fall outside it
    (clipfrac below): the run is sent to the first section only, not also to the one that says the updates move
    it less; clipfrac below with approx_kl below is still that section."""
    def finding(tag, direction):
        return diagnose.Finding(tag, "all", 1.0, (0.5, 0.8) if direction == "above" else (1.2, 2.0), direction, None)

    recipe = diagnose.RECIPES[0]
    wider = diagnose.Assessment(recipe, {"clip_coef": (0.9, 0.2)},
                                [finding("losses/approx_kl", "above"), finding("losses/clipfrac", "below")], None)
    assert wider.wider_clip() and wider.symptoms() == ["approx_kl-above-the-healthy-range"]
    still = diagnose.Assessment(recipe, {}, [finding("losses/approx_kl", "below"), finding("losses/clipfrac", "below")],
                                None)
    assert not still.wider_clip() and still.symptoms() == ["approx_kl-or-clipfrac-below-the-healthy-range"]
    alone = diagnose.Assessment(recipe, {}, [finding("losses/clipfrac", "below")], None)
    assert alone.symptoms() == ["approx_kl-or-clipfrac-below-the-healthy-range"]
    guide = (ROOT / "course" / "when-ppo-does-not-learn.md").read_text()
    section = guide.split("## approx_kl or clipfrac below the healthy range")[1].split("\n## ")[0]
    assert "--clip-coef 0.9" in section and "(#approx_kl-above-the-healthy-range)" in section


# --- run folders: written from the recorded runs, read by the command ---------------------------------------------

def write_run(folder, lesson, args, series, returns, global_step=0):
    """A run folder as a lesson writes one: TensorBoard events and a checkpoint naming the lesson and its flags."""
    from torch.utils.tensorboard import SummaryWriter

    folder.mkdir(parents=True)
    writer = SummaryWriter(str(folder))
    for tag, points in series.items():
        for step, value in points:
            writer.add_scalar(tag, value, step)
    for step, value in returns:
        writer.add_scalar("charts/episodic_return", value, step)
    writer.close()
    torch.save({"script": lesson, "args": args, "global_step": global_step}, folder / "checkpoint.pt")
    return folder


RECORDED = debugging.recorded_runs()
BROKEN = [name for name in RECORDED if not name.startswith("healthy")]


@pytest.mark.parametrize("name", [name for name in RECORDED if name.startswith("healthy")])
def test_each_recorded_healthy_run_looks_healthy(name, tmp_path, diagnosed):
    row = RECORDED[name]
    folder = write_run(tmp_path / "runs" / name, row["lesson"], row["args"], *debugging.series(name))
    done = diagnosed(folder)
    assert done.returncode == 0, done.stderr
    assert "looks healthy" in done.stdout and "!" not in done.stdout and "note:" not in done.stdout


@pytest.mark.parametrize("name", BROKEN)
def test_each_recorded_broken_run_is_flagged_with_the_guides_symptom(name, tmp_path, diagnosed):
    """The command names, for each broken run, every section of the guide whose causes list it."""
    row = RECORDED[name]
    folder = write_run(tmp_path / "runs" / name, row["lesson"], row["args"], *debugging.series(name))
    done = diagnosed(folder)
    assert done.returncode == 0, done.stderr
    listed = [anchor for anchor in diagnose.SYMPTOMS
              if f"`{row['command']}`" in GUIDE_TEXT.split(f"<!-- symptom:{anchor}:begin -->")[1].split(
                  f"<!-- symptom:{anchor}:end -->")[0]]
    assert listed, f"{name} is listed under no symptom of the guide"
    for anchor in listed:
        assert f"{diagnose.GUIDE}#{anchor}" in done.stdout
    assert "looks healthy" not in done.stdout


def test_a_changed_flag_is_named_and_the_ranges_said_to_be_the_defaults(tmp_path, diagnosed):
    row = RECORDED["cartpole-lr-x10"]
    done = diagnosed(write_run(tmp_path / "run", row["lesson"], row["args"], *debugging.series("cartpole-lr-x10")))
    assert "note: the healthy ranges were measured at those flags; your run changes learning-rate (0.04" in done.stdout


def test_the_report_reads_what_the_code_logged(tmp_path):  # (as a learner runs it: in a process of its own)
    """Bug 1 (the ratio against the current policy): approx_kl 0 at every update, flagged below its range from
    the first update on."""
    row = RECORDED["bug-1"]
    series, returns = debugging.series("bug-1")
    assert {v for _, v in series["losses/approx_kl"]} == {0.0}
    done = run_diagnose(write_run(tmp_path / "run", row["lesson"], row["args"], series, returns))
    line = next(line for line in done.stdout.splitlines() if line.startswith("  losses/approx_kl over the whole"))
    assert ": 0 against " in line and line.endswith(f"out from about step {series['losses/approx_kl'][0][0]:,}")


def stopped_at(name, step, tmp_path, **args):
    """A recorded run's folder as if it had stopped at `step` (Ctrl-C, killed): its logs and checkpoint up to there."""
    row = RECORDED[name]
    series, returns = debugging.series(name)
    cut = {tag: [p for p in points if p[0] <= step] for tag, points in series.items()}
    last = max(points[-1][0] for points in cut.values())
    return write_run(tmp_path / name, row["lesson"], {**row["args"], **args}, cut, [r for r in returns if r[0] <= step],
                     last), last


def test_a_run_stopped_early_is_read_over_the_same_steps_as_the_healthy_runs(tmp_path, diagnosed):
    """Seed 1 (not among the recorded series' seeds 6-15) stopped at 15,000 of 100,000 steps: against the whole runs
    its entropy and value loss are far out (a run's start is not its whole); against the healthy seeds' updates up to
    the same step, healthy. The report says where it stopped."""
    folder, last = stopped_at("healthy-cartpole", 15_000, tmp_path)
    done = diagnosed(folder)
    assert done.returncode == 0, done.stderr
    assert f"stopped early: at step {last:,} of the recipe's 100,000" in done.stdout
    assert "compared over the same steps: 10 healthy runs' updates up to step" in done.stdout
    assert "looks healthy" in done.stdout and "outside the healthy range" not in done.stdout
    row = RECORDED["healthy-cartpole"]
    whole = diagnose.judge(debugging.series("healthy-cartpole")[0], diagnose.ranges(diagnose.healthy_rows(
        diagnose.recipe_for(row["lesson"], row["args"])[0])))
    assert whole == []  # (the same run, whole, is healthy too)


def test_a_run_shorter_than_its_recipe_without_series_is_not_judged_as_a_whole_one(tmp_path, diagnosed):
    """A Pendulum run at --clip-vloss stopped (Ctrl-C) at 100,000 of its 300,000 steps: that recipe's records hold
    whole runs only, so its diagnostics are not held to them (said in the report); its return is still read at the
    same step."""
    folder, last = stopped_at("healthy-pendulum-clip-vloss", 100_000, tmp_path)
    done = diagnosed(folder)
    assert done.returncode == 0, done.stderr
    assert f"stopped early: at step {last:,} of the recipe's 300,000" in done.stdout
    assert "as its --total-timesteps" not in done.stdout  # it asked for the whole run: it was stopped
    assert "its diagnostics are not judged" in done.stdout and "outside the healthy range" not in done.stdout
    assert "the slowest healthy seed had gained" in done.stdout


def test_a_run_of_no_recipes_length_is_read_by_the_recipe_recorded_update_by_update(tmp_path, diagnosed):
    """Issue 65's LunarLander runs of 300,000 steps: as far from the 500k recipe as from the 1M defaults (one flag
    each), so the defaults, whose every update is on record, are its recipe, not the 500k recipe's whole runs. Its
    learning rate is annealed over its own 300,000 steps, though: its diagnostics are left unjudged (three fresh seeds
    of it were flagged when held to the defaults' first 300,000 steps), its return read at the same step."""
    folder, last = stopped_at("healthy-lunarlander-500k", 300_000, tmp_path, total_timesteps=300_000)
    recipe, changed = diagnose.recipe_for("ppo_lunarlander_vec.py", {**RECORDED["healthy-lunarlander-500k"]["args"],
                                                                     "total_timesteps": 300_000})
    assert recipe.flags == {} and changed == {"total_timesteps": (300_000, 1_000_000)}
    done = diagnosed(folder)
    assert done.returncode == 0, done.stderr
    assert f"stopped early: at step {last:,} of the recipe's 1,000,000" in done.stdout
    assert "as its --total-timesteps 300,000 asks" in done.stdout
    # its learning rate reaches 0 at its own end: the healthy runs' at 1M; no record shares that schedule
    assert "its diagnostics are not judged: its learning rate is annealed to 0 by step 300,000" in done.stdout
    assert "outside the healthy range" not in done.stdout
    # stopped at the same step with the defaults' schedule (Ctrl-C at 300,000 of 1M): read over the same steps
    folder, last = stopped_at("healthy-lunarlander-500k", 300_000, tmp_path / "ctrl-c", total_timesteps=1_000_000)
    done = diagnosed(folder)
    assert "compared over the same steps: 5 healthy runs' updates up to step" in done.stdout
    assert "as its --total-timesteps" not in done.stdout


def test_a_whole_run_is_not_said_to_have_stopped_early(tmp_path, diagnosed):
    row = RECORDED["healthy-cartpole"]
    done = diagnosed(write_run(tmp_path / "run", row["lesson"], row["args"], *debugging.series("healthy-cartpole")))
    assert "stopped early" not in done.stdout and "compared with 15 healthy runs" in done.stdout


@pytest.mark.parametrize("lesson,record,seeds", [
    ("ppo_cartpole.py", "ppo_cartpole-healthy", list(range(6, 16))),
    ("ppo_pendulum_continuous.py", "ppo_pendulum_continuous-clip-healthy", list(range(6, 11))),
    ("ppo_lunarlander_vec.py", "ppo_lunarlander_vec-healthy", list(range(6, 11))),
])
def test_the_healthy_series_are_the_recorded_healthy_seeds(lesson, record, seeds):
    """The per-update series (--record-series) are the healthy record's runs, trained again: the same seeds at the
    lesson's defaults give the record's medians (one processor: the same runs)."""
    from benchmarks.core.records import load_diagnostics

    recorded = {(int(row["seed"]), row["tag"]): row["median"] for row in load_diagnostics(
        ROOT / f"benchmarks/results/debugging/{record}-diagnostics.csv") if row["part"] == "all"}
    found = debugging.healthy_series(lesson)
    assert sorted(found) == seeds
    for seed, by_tag in found.items():
        for tag, points in by_tag.items():
            assert statistics.median(v for _, v in points) == pytest.approx(recorded[(seed, tag)], rel=1e-3)


# --- bad input: one line, exit 2 ------------------------------------------------------------------------------

def one_line(done):
    assert done.returncode == 2 and done.stdout == "", done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m course.diagnose: error: ") and "Traceback" not in done.stderr
    return lines[0]


class Unsafe:
    """An object torch's weights_only loader refuses (a pickle of a class of ours, not of tensors)."""


def test_bad_input_gets_one_line_and_exit_2(tmp_path, diagnosed):
    assert "no such folder" in one_line(run_diagnose(tmp_path / "nothing"))  # (the process's exit code and stderr)
    (tmp_path / "notes.txt").write_text("a file")
    assert "is a file, not a folder" in one_line(diagnosed(tmp_path / "notes.txt"))
    (tmp_path / "empty").mkdir()
    assert "holds no TensorBoard events" in one_line(diagnosed(tmp_path / "empty"))
    row = RECORDED["healthy-cartpole"]
    series, returns = debugging.series("healthy-cartpole")
    folder = write_run(tmp_path / "other", row["lesson"], row["args"], series, returns)
    (folder / "checkpoint.pt").unlink()
    assert "holds no checkpoint.pt" in one_line(diagnosed(folder))
    torch.save({"model": {}}, folder / "checkpoint.pt")  # another program's checkpoint
    assert "is not a checkpoint of one of the lessons" in one_line(diagnosed(folder))
    (folder / "checkpoint.pt").write_bytes(b"not a checkpoint")
    assert "cannot read" in (line := one_line(diagnosed(folder))) and "weights_only" not in line
    torch.save({"script": row["lesson"], "args": row["args"], "extra": Unsafe()}, folder / "checkpoint.pt")
    assert "the safe loader" in (line := one_line(diagnosed(folder))) and "weights_only" not in line
    short = write_run(tmp_path / "short", row["lesson"], row["args"],
                      {tag: points[:diagnose.MIN_UPDATES - 1] for tag, points in series.items()}, returns[:5])
    assert "too short to judge" in one_line(diagnosed(short))
    half = {tag: points[:len(points) // 2] for tag, points in series.items()}  # an events file cut to half
    whole_step = max(points[-1][0] for points in series.values())
    cut = write_run(tmp_path / "cut", row["lesson"], row["args"], half, returns[:len(returns) // 2], whole_step)
    line = one_line(diagnosed(cut))
    assert "is cut short" in line and f"checkpoint is at step {whole_step:,}" in line
    whole = write_run(tmp_path / "whole", row["lesson"], row["args"], series, returns, whole_step)
    assert diagnosed(whole).returncode == 0  # the same checkpoint step with the whole logs: judged
    assert run_diagnose().returncode == 2  # no folder given: argparse's usage and exit 2


def test_logs_that_are_not_a_lessons_say_so_not_too_short(tmp_path, diagnosed):
    """"Too short" is for a lesson's short logs only: a corrupt events file, or another program's logs, say so."""
    row = RECORDED["healthy-cartpole"]
    corrupt = write_run(tmp_path / "corrupt", row["lesson"], row["args"], {}, [])
    (events,) = corrupt.glob("events.out.tfevents.*")
    events.write_bytes(bytes(range(256)) * 20)
    line = one_line(diagnosed(corrupt))
    assert "hold no scalars" in line and "corrupt" in line and "too short" not in line
    other = write_run(tmp_path / "other", row["lesson"], row["args"], {"train/loss": [(i, 1.0) for i in range(50)]}, [])
    line = one_line(diagnosed(other))
    assert "another program's" in line and "train/loss" in line and "too short" not in line


def test_no_library_warning_comes_before_the_one_line(tmp_path):
    """A warning raised while the run is read (torch's and TensorBoard's reading code can raise them) is not printed:
    the command's stderr is its one line. In a process of its own, with Python's default warning filters."""
    code = ("import logging, sys, warnings\n"
            "from benchmarks.core import runs\n"
            "def noisy(folder, *a, **k):\n"
            "    warnings.warn('NOISY-1', UserWarning)\n"
            "    logging.getLogger('tensorboard').warning('NOISY-2')\n"
            "    return {}, None\n"
            "runs.read_scalars = noisy\n"
            "from course import diagnose\n"
            "sys.exit(diagnose.main(sys.argv[1:]))\n")
    row = RECORDED["healthy-cartpole"]
    folder = write_run(tmp_path / "run", row["lesson"], row["args"], *debugging.series("healthy-cartpole"))
    done = subprocess.run([sys.executable, "-c", code, str(folder)], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert "hold no scalars" in one_line(done) and "NOISY" not in done.stderr


def test_the_guide_states_the_commands_least_number_of_updates():
    assert f"fewer than {diagnose.MIN_UPDATES} updates (too few" in " ".join(GUIDE_TEXT.split())


# --- a real run at the defaults --------------------------------------------------------------------------------

def test_a_cartpole_run_at_its_defaults_looks_healthy(tmp_path):
    """A new seed, not one of the healthy records: the whole default run (100,000 steps, about 20 s)."""
    done = subprocess.run([sys.executable, str(ROOT / "ppo_cartpole.py"), "--seed", "21", "--exp-name", "diag"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    report = run_diagnose(folder)
    assert report.returncode == 0 and "looks healthy" in report.stdout, report.stdout


# --- the guide -------------------------------------------------------------------------------------------------

def test_the_guide_says_what_clipfrac_counts_as_the_lessons_compute_it():
    """Every lesson counts a sample in clipfrac when its ratio is outside [1 - eps, 1 + eps], whichever the sign of its
    advantage; the guide must not say it counts only the samples whose gradient the clip stopped."""
    row = next(line for line in GUIDE_TEXT.splitlines() if line.startswith("| `losses/clipfrac` |"))
    assert "was outside" in row and "every such sample counts" in row and "where the clip stopped" not in row
    for script in SCRIPTS:
        source = (ROOT / script).read_text()
        assert re.search(r"\(\(ratio - 1\.0\)\.abs\(\) > (args\.clip_coef|clip_coef)\)", source), script


def test_the_headlines_fit_the_measured_values():
    """A symptom's words claim no more than a median outside the healthy range shows: the recorded runs flagged for a
    low explained variance sit at 0 to 0.97 (not all near 0), for a high entropy at well under ln 4 too, for a high
    value loss at 1.5 times the range and up, for a flat return at 119 where the random policy makes 23 (--gamma 0.5);
    what the section says of them is what the records give."""
    for symptom in diagnose.SYMPTOMS.values():
        assert not re.search(r"near 0|as random as it started|far more|far larger|explodes|random policy's level", symptom.short), symptom
    assert "near 0 or negative" not in diagnose.SYMPTOMS["explained-variance-below-the-healthy-range"].title
    runs = guide.judged_runs()
    anchor = "explained-variance-below-the-healthy-range"
    found = [max((f for f in j.findings if f.symptom and f.symptom.anchor == anchor), key=diagnose.Finding.severity)
             for j in guide.causes(anchor, runs)]
    medians, lows = [f.median for f in found], [f.limits[0] for f in found]
    said = f"between {min(medians):.2g} and {max(medians):.2g}, under healthy lower limits of {min(lows):.2f} to " \
           f"{max(lows):.2f}"
    assert said in " ".join(GUIDE_TEXT.split())


def test_the_guide_explains_a_gaussians_entropy_below_0():
    """Pendulum's entropy can fall below 0 (a recorded run's does): the guide says why, with the sigma at which a
    Gaussian's differential entropy 0.5 ln(2 pi e sigma^2) is 0."""
    import math

    sigma = 1 / math.sqrt(2 * math.pi * math.e)
    assert 0.5 * math.log(2 * math.pi * math.e * sigma ** 2) == pytest.approx(0)
    section = GUIDE_TEXT.split("## Entropy collapses early")[1].split("## ")[0]
    assert "differential" in section and f"\\approx {sigma:.3f}" in section
    assert min(v for _, v in debugging.series("pendulum-unclipped")[0]["losses/entropy"]) < 0


def test_the_guides_figures_and_blocks_are_what_the_records_give():
    figures, text = guide.drawn()
    assert text == GUIDE_TEXT, "run python -m course.debugging to rewrite the guide's blocks"
    for name, data in figures.items():
        assert (guide.FIGURES / name).read_bytes() == data, f"run python -m course.debugging to redraw {name}"
    assert {p.name for p in guide.FIGURES.glob("*.svg")} == set(figures)
    assert set(re.findall(r"\(figures/debugging/([\w-]+\.svg)\)", GUIDE_TEXT)) == set(figures)


def test_every_symptom_has_its_section_a_figure_and_a_measured_cause():
    headings = {re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", h.strip().lower()))
                for h in re.findall(r"^## (.+)$", GUIDE_TEXT, re.M)}
    assert set(diagnose.SYMPTOMS) <= headings
    figures, _ = guide.drawn()
    with_figure = {name[:-4] for name in figures}
    assert len(with_figure) >= 8 and with_figure == set(diagnose.SYMPTOMS) - set(guide.unmeasured())


def test_the_runs_index_holds_each_runs_command_and_flags():
    for name, row in RECORDED.items():
        assert row["command"] == debugging.BY_NAME[name].command()
        assert row["args"]["seed"] == 1 and json.loads(json.dumps(row["args"])) == row["args"]


def recorded_run_of(command: str) -> str | None:
    """The recorded run of a Try this experiment's setting: the same command, or the same study's setting."""
    study = re.match(r"python -m benchmarks\.ablations (\w+) --settings ([\w.-]+)", command)
    for run in debugging.RUNS:
        if study and run.study == study.groups() or run.command() == f"{command} --seed 1":
            return run.name
    return None


@pytest.mark.parametrize("lesson", ["ppo_cartpole.py", "ppo_lunarlander_vec.py", "ppo_pendulum_continuous.py"])
def test_try_this_names_the_symptom_its_setting_showed(lesson):
    """An experiment whose setting has a recorded run that shows a symptom links that symptom's section; no other
    experiment links one."""
    from course import lessons

    _, experiments = lessons.try_this(__import__(lesson[:-3]).__doc__)
    linked = 0
    for e in experiments:
        name = recorded_run_of(e.command)
        shows = debugging.symptoms_of(name) if name else []
        if shows:
            assert e.symptom in [f"{diagnose.GUIDE}#{anchor}" for anchor in shows], (e.command, shows)
            linked += 1
        else:
            assert e.symptom == "", e.command
    assert linked or lesson == "ppo_lunarlander_vec.py"


def test_the_margin_is_the_smallest_without_a_held_out_false_alarm_in_the_recipes_it_was_chosen_on():
    """What benchmarks/README.md says of the rule's margin, recomputed from the records: the smallest of the table's
    margins quiet in the larger recipes of the lessons it was chosen on; and that the later lessons' recipes, held
    out after it was chosen, are quiet at it too (since their records hold 10 to 15 seeds: at 5, they were not)."""
    chosen = {m: guide.chosen_and_later(debugging.held_out(m)[1]) for m in guide.MARGINS}
    quiet = [m for m in guide.MARGINS if not chosen[m][0]]
    assert diagnose.MARGIN == min(quiet)
    assert diagnose.MARGIN in guide.MARGINS and all(chosen[m][0] for m in guide.MARGINS if m < diagnose.MARGIN)
    sizes = {r.lesson: len(diagnose.seeds(diagnose.healthy_rows(r))) for r in guide.larger_recipes()
             if r.lesson in diagnose.CHOSEN_ON and not r.flags}
    assert set(sizes) == set(diagnose.CHOSEN_ON) and min(sizes.values()) >= 8  # their defaults, 8 to 15 seeds
    assert not chosen[diagnose.MARGIN][1] and chosen[min(guide.MARGINS)][1] and guide.later_seeds() == 35


def test_the_memory_lessons_baseline_without_memory_is_held_against_a_recipe_that_learns():
    """--no-lstm never learns CartPoleNoVel (benchmarks/README.md, "Memory"): it is no healthy recipe. Its run is
    compared with the nearest that is, the frame stack's (one flag apart, named), and its return is flagged."""
    args = {**diagnose.hyperparameters("ppo_lstm_memory.py"), "lstm": False, "seed": 1, "exp_name": "mlp"}
    recipe, changed = diagnose.recipe_for("ppo_lstm_memory.py", args)
    assert recipe.records == ("memory/stack4", "debugging/ppo_lstm_memory-stack4-healthy")
    assert list(changed) == ["frame_stack"]
    mlp = diagnose.Recipe("ppo_lstm_memory.py", {"lstm": False}, ("memory/mlp",))  # the study's record of its runs
    runs = diagnose.healthy_returns(mlp)
    assert len(runs) == 5
    for name, returns in runs.items():  # ("memory/mlp 1": the record and the seed)
        seed = name.split()[-1]
        series = {row["tag"]: [(returns[-1][0] * (i + 1) // 40, row["median"]) for i in range(40)]
                  for row in diagnose.healthy_rows(mlp) if row["seed"] == seed and row["part"] == "all"}
        assert set(series) == set(diagnose.TAGS)
        verdict = diagnose.assess("ppo_lstm_memory.py", {**args, "seed": int(seed)}, series, returns).verdict
        assert verdict.symptoms and set(verdict.symptoms) <= {"the-return-stays-flat",
                                                               "the-return-ends-below-the-healthy-runs"}, seed


def test_a_report_on_a_recipe_whose_own_seeds_are_flagged_says_so(monkeypatch):
    """The memory lesson's LSTM recipe as it was, the study's five seeds alone: one of them, judged against the
    other four, is flagged, and a report on a run of that recipe carries the note. With the five seeds more that the
    recipe holds now none is, and neither a report on it nor one on CartPole's does."""
    lstm = next(r for r in diagnose.RECIPES if r.lesson == "ppo_lstm_memory.py" and not r.flags)
    assert lstm.records == ("memory/lstm", "debugging/ppo_lstm_memory-healthy") and diagnose.held_out(lstm) == (10, [])
    five = diagnose.Recipe("ppo_lstm_memory.py", {}, ("memory/lstm",))
    judged, alarms = diagnose.held_out(five)
    assert judged == 5 and {(record, seed) for record, seed, *_ in alarms} == {("memory/lstm", "4")}
    cartpole = next(r for r in diagnose.RECIPES if r.lesson == "ppo_cartpole.py" and not r.flags)
    assert diagnose.held_out(cartpole)[1] == []

    def reported(recipe):  # a run that is its recipe's first healthy seed: each diagnostic at that seed's median
        rows = diagnose.healthy_rows(recipe)
        record, seed = diagnose.seeds(rows)[0]
        medians = {row["tag"]: row["median"] for row in rows
                   if (row["record"], row["seed"]) == (record, seed) and row["part"] == "all"}
        returns = diagnose.healthy_returns(recipe)[f"{record} {seed}"]
        last = returns[-1][0]
        series = {tag: [(last * (i + 1) // 40, value) for i in range(40)] for tag, value in medians.items()}
        args = {**diagnose.hyperparameters(recipe.lesson), "seed": 7, "exp_name": "mine"}
        run = diagnose.Run(ROOT / "runs" / "mine", recipe.lesson, args, series, returns)
        return "\n".join(diagnose.report(run)[0])

    assert "weak evidence" not in reported(lstm) and "weak evidence" not in reported(cartpole)
    monkeypatch.setattr(diagnose, "RECIPES", [five if r is lstm else r for r in diagnose.RECIPES])
    lines = reported(five)
    assert "note: 1 of this recipe's 5 healthy seeds, each judged against the others by this rule, is flagged" in lines
    assert "weak evidence" in lines


def test_no_healthy_seed_on_record_is_flagged_in_any_lesson():
    """Every seed of every healthy record, the pixel lessons' too, judged by its medians against its recipe's
    limits (the rule's; held-out seeds: benchmarks/README.md)."""
    judged = 0
    for recipe in diagnose.RECIPES:
        rows = diagnose.healthy_rows(recipe)
        healthy = diagnose.ranges(rows)
        for seed in {(row["record"], row["seed"]) for row in rows}:
            medians = {(row["tag"], row["part"]): row["median"] for row in rows
                       if (row["record"], row["seed"]) == seed}
            assert diagnose.outside(medians, healthy) == [], (recipe.describe(), seed)
            judged += 1
    # (the language lessons are read against their own record: language_report, tests/test_language.py)
    assert {recipe.lesson for recipe in diagnose.RECIPES} == set(SCRIPTS) - set(diagnose.LANGUAGE_LESSONS)
    assert judged >= 50


@pytest.mark.parametrize("lesson, flags, record", [
    ("ppo_cartpole.py", {}, "diagnostics/ppo_cartpole"),
    ("ppo_lunarlander_vec.py", {"total_timesteps": 500_000}, "exercises/ppo_lunarlander_vec-500k"),
    ("ppo_pendulum_continuous.py", {"objective": "kl", "clip_vloss": True}, "diagnostics/ppo_pendulum_continuous-kl"),
    ("ppo_breakout_atari.py", {"total_timesteps": 10_000_000, "anneal_clip": True},
     "diagnostics/ppo_breakout_atari-long40m"),
    ("ppo_breakout_atari.py", {"total_timesteps": 500_000}, "ppo_breakout_atari-constclip"),
    ("ppo_mario_cnn.py", {"total_timesteps": 122_880, "anneal_lr": True, "action_type": "right"},
     "diagnostics/ppo_mario_cnn-right"),
    ("ppo_lstm_memory.py", {}, "memory/lstm"),
    ("ppo_lstm_memory.py", {"lstm": False, "frame_stack": 4}, "memory/stack4"),
    ("ppo_action_masking.py", {}, "masking/mask"),
])
def test_a_run_is_compared_with_the_recipe_it_shares_its_flags_with(lesson, flags, record):
    args = {**diagnose.hyperparameters(lesson), **flags, "seed": 7, "exp_name": "mine"}
    recipe, changed = diagnose.recipe_for(lesson, args)
    assert record in recipe.records and changed == {}
    recipe, changed = diagnose.recipe_for(lesson, {**args, "ent_coef": 0.5})
    assert record in recipe.records and list(changed) == ["ent_coef"]


def test_judging_fresh_runs_again_keeps_the_rows_of_runs_whose_folders_are_gone():
    """benchmarks.false_alarms --judge: a run judged now replaces its row, a recorded run not found keeps its row,
    in the groups' order and by seed (the record is not cut down to the runs one machine still holds)."""
    from benchmarks import false_alarms

    recorded = [{"group": "cartpole", "seed": "101", "symptoms": ""}, {"group": "cartpole", "seed": "102",
                                                                          "symptoms": ""},
                {"group": "pendulum", "seed": "101", "symptoms": ""}]
    judged = [{"group": "masking", "seed": "101", "symptoms": ""}, {"group": "cartpole", "seed": "102",
                                                                        "symptoms": "the-return-stays-flat"}]
    assert false_alarms.merged(recorded, judged) == [
        {"group": "cartpole", "seed": "101", "symptoms": ""},
        {"group": "cartpole", "seed": "102", "symptoms": "the-return-stays-flat"},
        {"group": "pendulum", "seed": "101", "symptoms": ""}, {"group": "masking", "seed": "101", "symptoms": ""}]
    assert false_alarms.merged(recorded, []) == recorded
