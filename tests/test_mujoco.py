"""The paper's MuJoCo comparison (Table 1): the continuous script on MuJoCo's float64 observations, the
unconstrained objective (--objective none), and benchmarks/mujoco_grid.py (its normalized score by hand, and a
tiny grid run end to end: skip what is done, resume what is not, write the tables and the figure; a grid run
in the background stopped with kill -INT)."""

import os
import re
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import torch

import ppo_pendulum_continuous as ppo
from benchmarks import mujoco_grid
from benchmarks.core import launch
from benchmarks.core.records import read_csv as read
from benchmarks.core.records import write_csv
from conftest import ROOT, run_dirs, run_script, scalars

SCRIPT = "ppo_pendulum_continuous.py"


def test_unclipped_surrogate_by_hand_and_its_gradient_never_vanishes():
    ratio = torch.tensor([0.5, 1.5, 2.0], requires_grad=True)
    advantages = torch.tensor([-1.0, 1.0, 2.0])
    loss = ppo.unclipped_surrogate_loss(ratio, advantages)
    assert loss.item() == pytest.approx(-(0.5 * -1 + 1.5 * 1 + 2.0 * 2) / 3)
    loss.backward()
    # d(-mean(r A))/dr = -A/3 everywhere, also past both clip edges where L^CLIP's gradient is 0
    assert torch.allclose(ratio.grad, -advantages / 3)
    clipped_ratio = ratio.detach().clone().requires_grad_(True)
    ppo.clipped_surrogate_loss(clipped_ratio, advantages, 0.2).backward()
    # Figure 1's flat parts: r = 0.5 < 1 - eps with A < 0, and r = 1.5, 2.0 > 1 + eps with A > 0
    assert clipped_ratio.grad.tolist() == [0.0, 0.0, 0.0]


def test_mujoco_float64_observations_train_and_play(tmp_path):
    """Hopper-v5 observes float64: the script casts them and trains, evaluates and plays (it used to stop with a
    dtype error on its first forward pass); --objective none trains too."""
    assert ppo.gym.make("Hopper-v5").observation_space.dtype == "float64"
    env = ppo.make_env(ppo.Args(env_id="Hopper-v5"))
    obs, _ = env.reset(seed=0)
    assert obs.dtype == "float32" and env.observation_space.dtype == "float32"
    result = run_script(SCRIPT, "--env-id", "Hopper-v5", "--objective", "none", "--total-timesteps", "1024",
                        "--num-envs", "2", "--num-steps", "256", "--minibatch-size", "128", "--update-epochs", "2",
                        "--eval-every", "2", "--eval-episodes", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (run_dir,) = run_dirs(tmp_path)
    logged = scalars(run_dir)
    assert len(logged["losses/kl"]) == 2 and len(logged["eval/mean_return"]) == 1
    assert "charts/kl_beta" not in logged  # beta belongs to --objective kl only
    result = run_script(SCRIPT, "--play", str(run_dir / "checkpoint.pt"), "--episodes", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert re.search(r"mean return over 1 episodes: -?[\d.]+", result.stdout), result.stdout


def test_normalized_score_by_hand():
    """Per task: random 0, the best setting's mean over seeds 1, on the seeds every setting has; a setting's
    Table 1 score is the mean over tasks of its mean over seeds."""
    def run(task, setting, seed, final_return):
        return {"task": task, "setting": setting, "seed": str(seed), "final_return": str(final_return)}

    rows = [run("A", "clip0.2", 1, 110), run("A", "clip0.2", 2, 90), run("A", "none", 1, 55), run("A", "none", 2, 10),
            run("A", "clip0.2", 3, 1000),  # seed 3 of A has no "none" run yet: not scored
            run("B", "clip0.2", 1, -20), run("B", "none", 1, -10),
            run("C", "clip0.2", 1, 5)]  # C lacks "none": not scored
    with_seeds = mujoco_grid.scores_by_seed(rows, {"A": 10.0, "B": -50.0, "C": 0.0})
    scores = mujoco_grid.without_seeds(with_seeds)
    # A, seeds 1 and 2: best = clip's mean(110, 90) = 100, span 90; B, seed 1: best = -10 (none), span 40
    assert scores["clip0.2"] == {"A": pytest.approx([100 / 90, 80 / 90]), "B": pytest.approx([30 / 40])}
    assert scores["none"] == {"A": pytest.approx([45 / 90, 0.0]), "B": pytest.approx([1.0])}
    # Each task counts once, whatever its number of seeds: (mean(100/90, 80/90) + 30/40) / 2, not the mean of 3 runs.
    assert mujoco_grid.table1_score(scores["clip0.2"]) == pytest.approx((1.0 + 0.75) / 2)
    assert mujoco_grid.table1_score(scores["none"]) == pytest.approx((0.25 + 1.0) / 2)
    # Seed by seed, on the same anchors: only seed 1 is on every scored task (B has no seed 2).
    assert with_seeds["clip0.2"] == {"A": {1: pytest.approx(100 / 90), 2: pytest.approx(80 / 90)},
                                     "B": {1: pytest.approx(30 / 40)}}
    assert mujoco_grid.seed_scores(with_seeds["clip0.2"]) == {1: pytest.approx((100 / 90 + 30 / 40) / 2)}
    assert mujoco_grid.seed_scores(with_seeds["none"]) == {1: pytest.approx((45 / 90 + 1.0) / 2)}
    # With the same seeds on every task, the seeds' scores average to the Table 1 score.
    only_a = mujoco_grid.scores_by_seed(rows[:4], {"A": 10.0})
    assert mujoco_grid.seed_scores(only_a["none"]) == {1: pytest.approx(0.5), 2: pytest.approx(0.0)}
    assert mujoco_grid.table1_score(mujoco_grid.without_seeds(only_a)["none"]) == pytest.approx(0.25)


def test_policy_moves_by_hand():
    """mean_kl: the mean over all updates; final_entropy: the mean over the last quarter of them."""
    def events(values):
        return [SimpleNamespace(step=2048 * (i + 1), value=v) for i, v in enumerate(values)]

    scalars = {"losses/kl": events([0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08]),
               "losses/entropy": events([4.0, 3.0, 2.0, 1.0, 0.5, 0.0, -1.0, -2.0])}
    assert mujoco_grid.policy_moves(scalars) == {"mean_kl": 0.045, "final_entropy": -1.5}


def test_the_report_shows_the_seeds_asked_for(tmp_path):
    """--seeds selects the runs the report scores (as --tasks and --settings do): seed 2 of "none" is left out."""
    fields = mujoco_grid.RUNS_FIELDS
    rows = [dict.fromkeys(fields, "1") | {"task": "Hopper-v5", "setting": s, "seed": seed, "final_return": r}
            for s, seed, r in [("clip0.2", 1, 116.7), ("none", 1, 66.7), ("clip0.2", 2, 116.7), ("none", 2, 266.7)]]
    write_csv(tmp_path / "runs.csv", rows, fields)
    write_csv(tmp_path / "random.csv", [{"task": "Hopper-v5", "mean_return": 16.7}])
    report = lambda *flags: mujoco_grid.report(mujoco_grid.parse_args(  # noqa: E731
        ["--results-dir", str(tmp_path), "--settings", "clip0.2", "none", *flags]))
    seed_1 = report("--seeds", "1")  # clip the best (100 above random), none 50/100
    assert "| Clipping, epsilon = 0.2 | 1 | 1.00 |" in seed_1 and "| No clipping or penalty | 1 | 0.50 |" in seed_1
    # Both seeds: the best is none's mean, 166.7 (150 above random): clip 100/150, none (50 + 250) / 2 / 150.
    assert "| Clipping, epsilon = 0.2 | 2 | 0.67 |" in report() and "| No clipping or penalty | 2 | 1.00 |" in report()
    # ... and seed by seed on those anchors: none 50/150 in seed 1, 250/150 in seed 2; clip 100/150 in both.
    assert "| by seed (1 / 2) |" in report() and "| 0.33 / 1.67 |" in report() and "| 0.67 / 0.67 |" in report()
    assert "| by seed (1) |" in seed_1 and "| No clipping or penalty | 1 | 0.50 | 0.50 | -0.39 |" in seed_1


def test_grid_runs_skips_resumes_and_reports(tmp_path, capsys):
    grid = ["--tasks", "InvertedPendulum-v5", "--settings", "clip0.2", "none", "--seeds", "1", "--jobs", "2",
            "--random-episodes", "2", "--bin-steps", "1024", "--runs-dir", str(tmp_path),
            "--results-dir", str(tmp_path / "results")]
    assert mujoco_grid.main([*grid, "--total-timesteps", "2048"]) == 0
    runs = read(tmp_path / "results" / "runs.csv")
    assert {(r["setting"], int(r["steps"])) for r in runs} == {("clip0.2", 2048), ("none", 2048)}
    (random_row,) = read(tmp_path / "results" / "random.csv")
    assert random_row["task"] == "InvertedPendulum-v5" and 1 <= float(random_row["mean_return"]) < 50
    table = (tmp_path / "results" / "table1.md").read_text()
    assert "| Clipping, epsilon = 0.2 | 1 |" in table and "| 0.82 |" in table and "963.1 +/- 22.2" in table
    assert (tmp_path / "results" / "figure3.png").stat().st_size > 10_000
    folders = sorted(run_dirs(tmp_path))
    assert len(folders) == 2
    # How far each run's updates moved the policy, from its own log: the mean exact KL, the late entropy.
    moved = {}
    for row in runs:  # one update each: its KL and its entropy
        (folder,) = [f for f in folders if f"table1-{row['setting']}__" in f.name]
        (kl,), (entropy,) = ([value for _, value in scalars(folder)[tag]] for tag in ("losses/kl", "losses/entropy"))
        assert float(row["mean_kl"]) == pytest.approx(kl, abs=1e-5) and kl > 0
        assert float(row["final_entropy"]) == pytest.approx(entropy, abs=1e-3)
        moved[row["setting"]] = f"{kl:.4f} / {entropy:.2f}"
    assert f"| InvertedPendulum-v5 | {moved['none']} | {moved['clip0.2']} |" in table
    # A row lacking a column (written before it existed) gets it from its run folder, where that is here.
    written = read(tmp_path / "results" / "runs.csv")
    blanked = [{**row, "mean_kl": "", "final_entropy": "", "wall_seconds": ""} for row in written]
    write_csv(tmp_path / "results" / "runs.csv", blanked, mujoco_grid.RUNS_FIELDS)
    assert mujoco_grid.main([*grid, "--total-timesteps", "2048", "--report-only"]) == 0
    assert read(tmp_path / "results" / "runs.csv") == written
    capsys.readouterr()

    # Done runs are skipped; with a longer budget both become partial and are resumed in their own folders.
    mujoco_grid.main([*grid, "--total-timesteps", "2048", "--dry-run"])
    assert capsys.readouterr().out.count("done ") == 2
    mujoco_grid.main([*grid, "--total-timesteps", "4096", "--dry-run"])
    out = capsys.readouterr().out
    assert out.count("partial") == 2 and out.count("--resume") == 2
    assert mujoco_grid.main([*grid, "--total-timesteps", "4096"]) == 0
    assert sorted(run_dirs(tmp_path)) == folders  # no new run folder: the same runs went on
    # On a fresh checkout the run folders are gone, but runs.csv holds the results: nothing is run again.
    (tmp_path / "runs").rename(tmp_path / "runs-elsewhere")
    capsys.readouterr()
    mujoco_grid.main([*grid, "--total-timesteps", "2048", "--dry-run"])
    assert capsys.readouterr().out.count("done ") == 2
    (tmp_path / "runs-elsewhere").rename(tmp_path / "runs")
    for folder in folders:
        ckpt = torch.load(folder / "checkpoint.pt", weights_only=True)
        assert ckpt["global_step"] == 4096 and ckpt["args"]["objective"] in ("clip", "none")
        assert [step for step, _ in scalars(folder)["losses/kl"]] == [2048, 4096]


def test_the_record_shows_the_committed_results():
    """benchmarks/README.md shows Table 1 and the returns as the committed runs.csv gives them today: the report
    regenerated from the committed CSVs is table1.md, and the record's part between its table1 markers."""
    args = mujoco_grid.parse_args([])
    text = mujoco_grid.report(args)
    assert (ROOT / "benchmarks" / "results" / "mujoco" / "table1.md").read_text() == text + "\n"
    record = (ROOT / "benchmarks" / "README.md").read_text()
    begin, end = "<!-- table1:begin -->\n", "<!-- table1:end -->\n"
    assert record.count(begin) == record.count(end) == 1, "benchmarks/README.md needs one pair of table1 markers"
    assert record[record.index(begin) + len(begin):record.index(end)] == text + "\n"


def test_a_grid_started_in_the_background_stops_on_kill_int_and_its_runs_save(tmp_path):
    """`nohup python -m benchmarks.mujoco_grid ... &` starts the grid with SIGINT ignored (a shell does that to a
    background job), as its runs would be. `kill -INT` on the grid alone must still stop it the way Ctrl-C does:
    the running run saves a checkpoint mid-way, and the grid exits 130."""
    grid = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.mujoco_grid", "--tasks", "InvertedPendulum-v5", "--settings",
         "clip0.2", "--seeds", "1", "--jobs", "1", "--random-episodes", "2", "--total-timesteps", "400000",
         "--runs-dir", str(tmp_path), "--results-dir", str(tmp_path / "results")],
        env=launch.environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        log, deadline = tmp_path / "runs" / "table1-logs" / "InvertedPendulum-v5-clip0.2-1.log", time.time() + 120
        while time.time() < deadline and not (log.is_file() and "SPS" in log.read_text(errors="replace")):
            time.sleep(0.5)  # until the run has finished an update (its Ctrl-C handler is set)
        grid.send_signal(signal.SIGINT)
        out, _ = grid.communicate(timeout=90)
    finally:  # (a grid that ignored the signal is still running, and so is its run: both go)
        if grid.poll() is None:
            os.killpg(grid.pid, signal.SIGKILL)
            grid.communicate()
    assert grid.returncode == 130, out
    assert "Ctrl-C: waiting for the running runs to save their checkpoints" in out
    (folder,) = run_dirs(tmp_path)
    assert 0 < torch.load(folder / "checkpoint.pt", weights_only=True)["global_step"] < 400_000
