"""The debugging guide (course/when-ppo-does-not-learn.md) and its command, `python -m course.diagnose runs/<run>`:
the rule by hand, the command on run folders written from the recorded runs (benchmarks/results/debugging/), its
bad input, a real CartPole run at the defaults, and the guide's figures and blocks as the records give them."""

import json
import re
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

def test_the_limits_are_the_band_narrowed_to_the_widened_medians():
    r = diagnose.Range(band=(0.0, 1.0), medians=[0.4, 0.5, 0.6])
    assert r.widened("losses/entropy", margin=1.0) == pytest.approx((0.2, 0.8))
    assert r.limits("losses/entropy", margin=1.0) == pytest.approx((0.2, 0.8))
    assert r.limits("losses/entropy", margin=5.0) == (0.0, 1.0)  # never wider than the band
    # approx_kl's medians widen on a log scale: 1e-3 to 1e-2 is one decade, so one decade more each side
    kl = diagnose.Range(band=(1e-6, 1.0), medians=[1e-3, 3e-3, 1e-2])
    assert kl.limits("losses/approx_kl", margin=1.0) == pytest.approx((1e-4, 1e-1))
    # under three seeds the medians say too little: the band alone
    assert diagnose.Range(band=(0.1, 0.9), medians=[0.5, 0.6]).limits("losses/entropy") == (0.1, 0.9)


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


def test_the_margin_is_the_smallest_without_a_held_out_false_alarm_in_the_larger_recipes():
    """What benchmarks/README.md says of the rule's margin, recomputed from the records."""
    def larger(alarms):
        sizes = {r.describe(): len({(row["record"], row["seed"]) for row in diagnose.healthy_rows(r)})
                 for r in diagnose.RECIPES}
        return [a for a in alarms if sizes[a[0]] >= 5]

    quiet = [m for m in guide.MARGINS if not larger(debugging.held_out(m)[1])]
    assert diagnose.MARGIN == min(quiet)
    assert diagnose.MARGIN in guide.MARGINS and all(larger(debugging.held_out(m)[1]) for m in guide.MARGINS
                                                    if m < diagnose.MARGIN)


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
    assert {recipe.lesson for recipe in diagnose.RECIPES} == set(SCRIPTS) and judged >= 50


@pytest.mark.parametrize("lesson, flags, record", [
    ("ppo_cartpole.py", {}, "diagnostics/ppo_cartpole"),
    ("ppo_lunarlander_vec.py", {"total_timesteps": 500_000}, "exercises/ppo_lunarlander_vec-500k"),
    ("ppo_pendulum_continuous.py", {"objective": "kl", "clip_vloss": True}, "diagnostics/ppo_pendulum_continuous-kl"),
    ("ppo_breakout_atari.py", {"total_timesteps": 10_000_000, "anneal_clip": True},
     "diagnostics/ppo_breakout_atari-long40m"),
    ("ppo_breakout_atari.py", {"total_timesteps": 500_000}, "ppo_breakout_atari-constclip"),
    ("ppo_mario_cnn.py", {"total_timesteps": 122_880, "anneal_lr": True, "action_type": "right"},
     "diagnostics/ppo_mario_cnn-right"),
])
def test_a_run_is_compared_with_the_recipe_it_shares_its_flags_with(lesson, flags, record):
    args = {**diagnose.hyperparameters(lesson), **flags, "seed": 7, "exp_name": "mine"}
    recipe, changed = diagnose.recipe_for(lesson, args)
    assert record in recipe.records and changed == {}
    recipe, changed = diagnose.recipe_for(lesson, {**args, "ent_coef": 0.5})
    assert record in recipe.records and list(changed) == ["ent_coef"]
