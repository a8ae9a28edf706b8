"""Tests for benchmarks/benchmark.py and the tools that report its CSVs (summary, compare, diagnostics, describe),
and for the core they share (benchmarks/core: the run reader, the statistics): the rolling-mean analysis,
reading real TensorBoard logs, and end-to-end runs of tiny fake training scripts (no RL training: each fake run
takes well under a second)."""

import csv
import subprocess
import sys
import time

import pytest
from tensorboard.backend.event_processing.event_accumulator import ScalarEvent

from benchmarks import benchmark
from benchmarks.core import launch, plots, runs, stats
from benchmarks.core.records import curves_path, load_points


def tool(name: str, *args: str, cwd=None) -> subprocess.CompletedProcess:
    """`python -m benchmarks.<name> args`, as a user runs it (from `cwd`: the benchmarks package found through
    PYTHONPATH)."""
    return subprocess.run([sys.executable, "-m", f"benchmarks.{name}", *args], cwd=cwd, env=launch.environment(),
                          capture_output=True, text=True, timeout=60)


def tensorboard_scalars(run_dir):
    """Every scalar of a run folder as TensorBoard's own reader shows it: {tag: [(step, value)]}."""
    return {tag: [(e.step, e.value) for e in events] for tag, events in runs.read_events(run_dir)[0].items()}


# ---------------------------------------------------------------------------------------------------------------
# rolling_first_crossing
# ---------------------------------------------------------------------------------------------------------------
def crossing(returns, window, threshold):
    """rolling_first_crossing with episode i finishing at step 100 * (i + 1) and wall time 10 * (i + 1)."""
    steps = [100 * (i + 1) for i in range(len(returns))]
    wall_times = [10.0 * (i + 1) for i in range(len(returns))]
    return stats.rolling_first_crossing(steps, wall_times, returns, window, threshold)


def test_crossing_exactly_at_window_boundary():
    # the first full window (episodes 0-2) has mean exactly 20: >= counts
    assert crossing([10.0, 20.0, 30.0], window=3, threshold=20.0) == (300, 30.0)
    assert crossing([10.0, 20.0, 30.0], window=3, threshold=20.5) is None


def test_never_crossing():
    # rolling means of 2: 1.5, 2.5, 3.5
    assert crossing([1.0, 2.0, 3.0, 4.0], window=2, threshold=4.0) is None


def test_fewer_episodes_than_window():
    # every return is above the threshold, but no full window exists
    assert crossing([100.0, 100.0], window=3, threshold=0.0) is None
    assert crossing([], window=1, threshold=0.0) is None


def test_single_good_episode_is_not_enough():
    # rolling means of 2: 10, 10, 6, 16 -> first >= 15 at episode 4, not at the 20 of episode 1
    assert crossing([0.0, 20.0, 0.0, 12.0, 20.0], window=2, threshold=15.0) == (500, 50.0)


def test_first_crossing_counts_even_if_it_drops_back():
    # rolling means of 2: 5, 10, 5, 0, 5, 10 -> crosses at episode 2, drops, crosses again at episode 6
    assert crossing([0.0, 10.0, 10.0, 0.0, 0.0, 10.0, 10.0], window=2, threshold=10.0) == (300, 30.0)


# ---------------------------------------------------------------------------------------------------------------
# summarize and parse_run_name
# ---------------------------------------------------------------------------------------------------------------
def test_summarize_without_threshold_and_short_run():
    scalars = {
        "charts/episodic_return": [ScalarEvent(1003.0, 40, 2.0), ScalarEvent(1005.0, 80, 4.0)],
        "charts/SPS": [ScalarEvent(1004.0, 64, 30.0), ScalarEvent(1008.0, 128, 50.0)],
    }
    measures = benchmark.summarize(scalars, "charts/episodic_return", 20, None, start_time=1000.0, end_time=1016.0)
    assert measures["steps_to_threshold"] is None and measures["seconds_to_threshold"] is None
    assert measures["final_return"] == 3.0  # fewer than 20 episodes: the mean of all of them
    assert measures["episodes"] == 2
    assert measures["total_steps"] == 128  # the last step of any tag, not only of the returns
    assert measures["wall_seconds"] == 16.0
    assert measures["sps"] == 8.0
    assert measures["logged_sps"] == 40.0


def test_summarize_training_clock():
    # threshold 3 with window 2 is first reached by episode 3 at wall time 1010; training began at 1004
    returns = [ScalarEvent(1006.0, 10, 2.0), ScalarEvent(1008.0, 20, 3.0), ScalarEvent(1010.0, 30, 4.0)]
    measures = benchmark.summarize({"charts/episodic_return": returns}, "charts/episodic_return", 2, 3.0,
                                   start_time=1000.0, end_time=1012.0, train_start=1004.0)
    assert measures["steps_to_threshold"] == 30
    assert measures["seconds_to_threshold"] == 10.0 and measures["train_seconds_to_threshold"] == 6.0


def test_summarize_without_episodes():
    scalars = {"charts/SPS": [ScalarEvent(1004.0, 64, 30.0)]}
    measures = benchmark.summarize(scalars, "charts/episodic_return", 20, 1.0, start_time=1000.0, end_time=1002.0)
    assert measures["episodes"] == 0 and measures["final_return"] is None and measures["steps_to_threshold"] is None
    assert measures["sps"] == 32.0


def test_parse_run_name(tmp_path):
    assert runs.parse_run_name(tmp_path / "runs" / "CartPole-v1__bench__3__1700000000") == ("CartPole-v1", 3)
    # env ids with a slash put the run one folder deeper
    assert runs.parse_run_name(tmp_path / "runs" / "ALE" / "Pong-v5__bench__12__1700000000") == ("ALE/Pong-v5", 12)
    with pytest.raises(runs.RunFailed, match="is not named"):
        runs.parse_run_name(tmp_path / "runs" / "my_experiment")


# ---------------------------------------------------------------------------------------------------------------
# Reading real TensorBoard logs (written by the same SummaryWriter the scripts use)
# ---------------------------------------------------------------------------------------------------------------
def test_reads_summary_writer_logs(tmp_path, capsys):
    from torch.utils.tensorboard import SummaryWriter  # imported here: torch takes seconds to import

    run_dir = tmp_path / "runs" / "Env-v0__bench__1__123"
    start = time.time()
    writer = SummaryWriter(str(run_dir))
    # 6 episodes with returns 1..6, one every 50 steps and 10 seconds; SPS logged twice
    for episode in range(1, 7):
        writer.add_scalar("charts/episodic_return", float(episode), 50 * episode, walltime=start + 10 * episode)
        writer.add_scalar("charts/episodic_length", 10.0, 50 * episode, walltime=start + 10 * episode)
    writer.add_scalar("charts/SPS", 100.0, 150, walltime=start + 30)
    writer.add_scalar("charts/SPS", 300.0, 320, walltime=start + 70)
    writer.close()

    args = benchmark.Args(script="ppo_env.py", threshold=4.0, window=3, workdir=tmp_path, csv=tmp_path / "out.csv")
    row, _, _ = benchmark.analyse(args, run_dir, start_time=start - 2, end_time=start + 78)
    # rolling means of 3: 2, 3, 4, 5 -> first >= 4 at episode 5 (step 250, 50 s after start, 52 s after launch)
    assert row["env_id"] == "Env-v0" and row["seed"] == 1
    assert row["steps_to_threshold"] == 250
    assert row["seconds_to_threshold"] == pytest.approx(52.0)
    assert row["final_return"] == pytest.approx(5.0)
    assert row["episodes"] == 6
    assert row["total_steps"] == 320
    assert row["wall_seconds"] == pytest.approx(80.0)
    assert row["sps"] == pytest.approx(4.0)
    assert row["logged_sps"] == pytest.approx(200.0)
    assert row["timed_from"] == "launch"

    # --from-logs re-tabulates the same folder, timing from the writer's first event instead of a launch
    args.from_logs = ("runs/*",)
    assert benchmark.main(args) == 0
    out = capsys.readouterr().out
    assert "| 1 | yes | 250 |" in out
    assert "1/1 seeds reached >= 4 within their budget; median steps 250" in out
    assert "first logged event" in out
    (csv_row,) = list(csv.DictReader(open(tmp_path / "out.csv")))
    assert csv_row["timed_from"] == "first event"
    assert csv_row["steps_to_threshold"] == "250"
    # the first event is the file header the writer wrote when it opened, just after `start` (not the first
    # scalar, 10 s later); the run ends at its last scalar, 70 s after `start`
    assert float(csv_row["seconds_to_threshold"]) == pytest.approx(50.0, abs=0.5)
    assert float(csv_row["wall_seconds"]) == pytest.approx(70.0, abs=0.5)


def write_process(run_dir, scalars, purge_step=None):
    """One process's events file in run_dir: `scalars` as (tag, step, value, seconds after the file opened)."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(run_dir), purge_step=purge_step)
    start = time.time()
    for tag, step, value, seconds in scalars:
        writer.add_scalar(tag, value, step, walltime=start + seconds)
    writer.close()


# A run resumed twice. The first process (updates of 100 steps) logged its updates at 100, 200 and 300, then
# crashed; its last checkpoint held 200, so its update at 300 and the episodes after 200 are not in the run's
# history. The second went on from 200 and was stopped by a Ctrl-C in the update after its rollout to 400 (the
# Stopper saves 300): its episode at 390 is not in the history either. The third went on from 300.
RETURN = "charts/episodic_return"
FIRST = [(RETURN, 50, 1.0, 5), ("charts/SPS", 100, 10.0, 10), (RETURN, 150, 2.0, 15),
         ("charts/SPS", 200, 10.0, 20), (RETURN, 250, -1.0, 25), ("charts/SPS", 300, -1.0, 30)]
SECOND = [(RETURN, 240, 3.0, 4), ("charts/SPS", 300, 20.0, 10), (RETURN, 390, -2.0, 14)]
THIRD = [(RETURN, 330, 4.0, 3), ("charts/SPS", 400, 30.0, 20)]


@pytest.mark.parametrize("marked", [False, True], ids=["logged-before-purge-step", "purge-step"])
def test_a_resumed_run_reads_as_its_history(tmp_path, marked):
    """With or without the purge_step the scripts now open a resumed run's writer with, read_scalars reads what
    the run's history holds; with it TensorBoard's own reader agrees."""
    run_dir, start = tmp_path / "Env-v0__bench__1__123", time.time()
    for scalars, resumed_from in ((FIRST, None), (SECOND, 200), (THIRD, 300)):
        write_process(run_dir, scalars, resumed_from + 1 if marked and resumed_from else None)
        time.sleep(1.1)  # (the files are named by the second they were opened in)
    history = {"charts/episodic_return": [(50, 1.0), (150, 2.0), (240, 3.0), (330, 4.0)],
               "charts/SPS": [(100, 10.0), (200, 10.0), (300, 20.0), (400, 30.0)]}

    def steps_and_values(scalars):
        return {tag: [(event.step, event.value) for event in events] for tag, events in scalars.items()}

    scalars, first_time = runs.read_scalars(run_dir)
    assert steps_and_values(scalars) == history
    assert start - 5 < first_time < start + 5  # the first file's header, written when it opened
    if marked:
        assert tensorboard_scalars(run_dir) == history
    assert steps_and_values(runs.read_scalars(run_dir, up_to_step=300)[0]) == {
        tag: [(step, value) for step, value in points if step <= 300] for tag, points in history.items()}
    # where it resumed: each process from the step it went on from to its last update in the history
    rows = runs.stretches(run_dir)
    assert [(row["from"], row["to"]) for row in rows] == [(0, 200), (200, 300), (300, 400)]
    assert [row["seconds"] for row in rows] == pytest.approx([20, 10, 20], abs=2)  # (from each file's header)
    assert rows[2]["sps"] == pytest.approx(100 / rows[2]["seconds"])
    assert [(row["from"], row["to"]) for row in runs.stretches(run_dir, up_to_step=300)] == [(0, 200), (200, 300)]
    # the time it trained: its stretches summed (about 50 s), not the span from its first event to its last
    # (about 22 s here, the three files opened a second apart; with a stop before a resume, hours more)
    assert runs.training_seconds(run_dir) == pytest.approx(sum(row["seconds"] for row in rows)) == \
        pytest.approx(50, abs=3)


def test_resumes_read_off_the_logs(tmp_path):
    """A process stopped in its first update logged no update: the next one went on from 0. A folder that never
    logs charts/SPS is not a run of these scripts: every file is read whole."""
    first_update = tmp_path / "Env-v0__bench__1__1"
    write_process(first_update, [("charts/episodic_return", 50, -1.0, 1)])
    time.sleep(1.1)
    write_process(first_update, [("charts/episodic_return", 40, 1.0, 1), ("charts/SPS", 100, 9.0, 2)])
    assert {tag: [e.step for e in events] for tag, events in runs.read_scalars(first_update)[0].items()} == {
        "charts/episodic_return": [40], "charts/SPS": [100]}
    other = tmp_path / "Env-v0__bench__1__2"
    write_process(other, [("charts/episodic_return", 50, 1.0, 1)])
    time.sleep(1.1)
    write_process(other, [("charts/episodic_return", 40, 2.0, 1)])
    assert [e.value for e in runs.read_scalars(other)[0]["charts/episodic_return"]] == [1.0, 2.0]
    assert runs.read_scalars(tmp_path / "empty") == ({}, None)


# ---------------------------------------------------------------------------------------------------------------
# End to end, with fake training scripts
# ---------------------------------------------------------------------------------------------------------------
# Follows the scripts' contract with tensorboard's own event writer (which SummaryWriter wraps) to skip the
# seconds torch takes to import. Episode k (1-based) ends at step 10 k with return 10 * seed * k.
FAKE_SCRIPT = """
import argparse, time
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.event_file_writer import EventFileWriter

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int)
parser.add_argument("--exp-name")
parser.add_argument("--total-timesteps", type=int, default=50)
parser.add_argument("--play")
parser.add_argument("--episodes", type=int)
args = parser.parse_args()
if args.play:  # the greedy policy of seed s returns 100 s on average
    seed = int(open(args.play).read())
    if seed == FAIL_PLAY_SEED:
        raise SystemExit("ppo_fake.py: error: fake unreadable checkpoint")
    print(f"episode 1/{args.episodes}: return {100.0 * seed:.1f}, length 10")
    print(f"mean return over {args.episodes} episodes: {100.0 * seed:.1f} +/- 1.5")
    raise SystemExit(0)
if args.seed == FAIL_SEED:
    raise RuntimeError("fake crash in the training loop")

run_dir = f"runs/CartPole-v1__{args.exp_name}__{args.seed}__{int(time.time())}"
writer = EventFileWriter(run_dir)

def add_scalar(tag, value, step):
    summary = Summary(value=[Summary.Value(tag=tag, simple_value=value)])
    writer.add_event(Event(wall_time=time.time(), step=step, summary=summary))

for k in range(1, args.total_timesteps // 10 + 1):
    add_scalar("charts/episodic_return", 10.0 * args.seed * k, 10 * k)
    add_scalar("charts/episodic_length", 10.0, 10 * k)
    if k % 5 == 0:
        add_scalar("charts/SPS", 1000.0, 10 * k)
        add_scalar("eval/mean_return", 20.0 * args.seed * k, 10 * k)
        add_scalar("losses/approx_kl", args.seed * k / 8, 10 * k)  # once per fake "update" (5 episodes)
writer.close()
open(f"{run_dir}/checkpoint.pt", "w").write(str(args.seed))
print("training done")
"""


def run_benchmark(tmp_path, fail_seed=None, fail_play_seed=None, options=()):
    script = tmp_path / "ppo_fake.py"
    script.write_text(FAKE_SCRIPT.replace("FAIL_SEED", str(fail_seed)).replace("FAIL_PLAY_SEED", str(fail_play_seed)))
    return tool("benchmark", "--script", str(script), "--seeds", "1", "2", "--threshold", "100", "--window", "2",
                "--workdir", str(tmp_path), "--csv", str(tmp_path / "out.csv"), *options, "--", "--total-timesteps",
                "100", cwd=tmp_path)


def test_end_to_end(tmp_path):
    # an older run with the same name (an empty folder stamped in the future) must not be taken for the new one
    (tmp_path / "runs" / "CartPole-v1__bench__1__9999999999").mkdir(parents=True)
    result = run_benchmark(tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # seed 1: returns 10..100, rolling means of 2 top out at 95; seed 2: returns 20..200, mean 110 at step 60
    assert "| 1 | no | - | - | - | 95.0 | 100 |" in out
    assert "| 2 | yes | 60 |" in out and "| 190.0 | 100 |" in out
    assert "1/2 seeds reached >= 100 within their budget; median steps 60, median seconds " in out
    assert "--total-timesteps 100" in out.split("Command: ")[1]
    # the scripts' own output went to the logs, not to this console
    assert "training done" not in out
    assert (tmp_path / "runs" / "ppo_fake__bench__1.log").read_text().strip() == "training done"

    rows = list(csv.DictReader(open(tmp_path / "out.csv")))
    assert [(row["env_id"], row["seed"]) for row in rows] == [("CartPole-v1", "1"), ("CartPole-v1", "2")]
    assert [row["steps_to_threshold"] for row in rows] == ["", "60"]
    assert [row["final_return"] for row in rows] == ["95.0", "190.0"]
    same_in_both = {
        (row["script"], row["episodes"], row["total_steps"], row["logged_sps"], row["timed_from"]) for row in rows
    }
    assert same_in_both == {("ppo_fake.py", "10", "100", "1000.0", "launch")}
    # seconds to threshold count from the launch, so they are positive and within the run's wall time
    assert 0 < float(rows[1]["seconds_to_threshold"]) <= float(rows[1]["wall_seconds"])
    # the training clock starts at the first event, after the launch: fewer seconds, still positive
    assert 0 <= float(rows[1]["train_seconds_to_threshold"]) < float(rows[1]["seconds_to_threshold"])
    assert float(rows[1]["sps"]) == pytest.approx(100 / float(rows[1]["wall_seconds"]), rel=1e-2)

    # the learning curves beside the CSV: every episode's return and every evaluation, with steps and seconds
    points = list(csv.DictReader(open(tmp_path / "out-curves.csv")))
    assert list(points[0]) == ["script", "label", "env_id", "seed", "kind", "tag", "env_steps", "wall_seconds",
                               "value"]
    training = [(p["seed"], p["env_steps"], p["value"]) for p in points if p["kind"] == "training"]
    assert training == [(str(s), str(10 * k), str(10.0 * s * k)) for s in (1, 2) for k in range(1, 11)]
    evaluation = [(p["seed"], p["env_steps"], p["tag"], p["value"]) for p in points if p["kind"] == "evaluation"]
    assert evaluation == [(str(s), str(10 * k), "eval/mean_return", str(20.0 * s * k)) for s in (1, 2) for k in (5, 10)]
    for seed in ("1", "2"):
        seconds = [float(p["wall_seconds"]) for p in points if p["seed"] == seed and p["kind"] == "training"]
        assert 0 < seconds[0] and seconds == sorted(seconds)
        assert seconds[-1] <= float(rows[int(seed) - 1]["wall_seconds"])


def test_failing_script_is_reported_and_other_seeds_still_run(tmp_path):
    result = run_benchmark(tmp_path, fail_seed=2)
    assert result.returncode == 1
    # one clear line names the seed, the exit status, the error and the log
    failure = [line for line in result.stderr.splitlines() if "seed 2" in line]
    assert len(failure) == 1
    assert "exited with status 1" in failure[0]
    assert "RuntimeError: fake crash in the training loop" in failure[0]
    assert "ppo_fake__bench__2.log" in failure[0]
    # seed 1 is still in the table and the CSV
    assert "| 1 | no | - | - | - | 95.0 | 100 |" in result.stdout
    assert "0/2 seeds reached >= 100" in result.stdout
    assert [row["seed"] for row in csv.DictReader(open(tmp_path / "out.csv"))] == ["1"]


def test_play_episodes_and_plot(tmp_path):
    plot = tmp_path / "curves" / "fake.png"
    options = ["--play-episodes", "7", "--play-threshold", "150", "--plot", str(plot)]
    result = run_benchmark(tmp_path, options=options)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # each seed's checkpoint was played for 7 episodes: seed s's greedy policy returns 100 s
    assert "greedy return (7 episodes) |" in out
    assert "| 100.0 +/- 1.5 |" in out and "| 200.0 +/- 1.5 |" in out
    assert "greedy policy over 7 episodes: mean return per seed 100.0, 200.0 (mean 150.0, min 100.0); " \
           "1/2 seeds >= 150" in out
    rows = list(csv.DictReader(open(tmp_path / "out.csv")))
    assert [(row["play_episodes"], row["play_return"], row["play_return_std"]) for row in rows] == [
        ("7", "100.0", "1.5"), ("7", "200.0", "1.5")]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000

    # the same from the logs, without running anything but --play
    again = tool("benchmark", "--script", str(tmp_path / "ppo_fake.py"), "--workdir", str(tmp_path),
                 "--from-logs", "runs/*__bench__*", "--play-episodes", "3", "--csv", str(tmp_path / "again.csv"))
    assert again.returncode == 0, again.stderr
    assert "greedy policy over 3 episodes: mean return per seed 100.0, 200.0" in again.stdout


def test_other_tags_are_drawn(tmp_path):
    """--tag and --eval-tag draw other scalars than the return (Mario: charts/x_pos and eval/flag_rate)."""
    assert run_benchmark(tmp_path).returncode == 0
    plot = tmp_path / "lengths.png"
    result = tool("benchmark", "--script", str(tmp_path / "ppo_fake.py"), "--workdir", str(tmp_path),
                  "--from-logs", "runs/*__bench__*", "--tag", "charts/episodic_length", "--eval-tag", "charts/SPS",
                  "--csv", str(tmp_path / "lengths.csv"), "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    points = load_points(curves_path(tmp_path / "lengths.csv"))
    curves, evals = plots.curves_from_points(points, "charts/episodic_length", "charts/SPS", 2)
    assert curves["1"] == ([10 * k for k in range(1, 11)], [10.0] * 10)
    assert evals["2"] == ([50, 100], [1000.0, 1000.0])


def test_a_failing_play_fails_its_seed(tmp_path):
    result = run_benchmark(tmp_path, fail_play_seed=2, options=["--play-episodes", "5"])
    assert result.returncode == 1
    failure = [line for line in result.stderr.splitlines() if "seed 2" in line]
    assert len(failure) == 1 and "--play" in failure[0] and "fake unreadable checkpoint" in failure[0]
    assert [row["seed"] for row in csv.DictReader(open(tmp_path / "out.csv"))] == ["1"]


def test_rolling_mean():
    assert stats.rolling_mean([2.0, 4.0, 6.0, 8.0], 2) == [2.0, 3.0, 5.0, 7.0]
    assert stats.rolling_mean([], 3) == []


def test_script_that_writes_no_logs_fails(tmp_path):
    script = tmp_path / "ppo_silent.py"
    script.write_text("print('forgot to log')\n")
    result = tool("benchmark", "--script", str(script), "--seeds", "7", "--workdir", str(tmp_path),
                  "--csv", str(tmp_path / "out.csv"))
    assert result.returncode == 1
    assert "seed 7: exited 0 but wrote no runs/*__bench__7__* folder" in result.stderr


def test_label_and_compare(tmp_path):
    """Two configurations benchmarked under labels, then drawn into one plot with --compare."""
    for label in ("short", "long"):
        steps = "50" if label == "short" else "100"
        fake = FAKE_SCRIPT.replace("FAIL_SEED", "None").replace("FAIL_PLAY_SEED", "None")
        (tmp_path / "ppo_fake.py").write_text(fake)
        result = tool("benchmark", "--script", str(tmp_path / "ppo_fake.py"), "--seeds", "1", "2", "--workdir",
                      str(tmp_path), "--exp-name", label, "--label", label,
                      "--csv", str(tmp_path / f"fake-{label}.csv"), "--", "--total-timesteps", steps, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        rows = list(csv.DictReader(open(tmp_path / f"fake-{label}.csv")))
        assert [row["label"] for row in rows] == [label, label]
    plot = tmp_path / "compare.png"
    compare = [str(tmp_path / "fake-short.csv"), str(tmp_path / "fake-long.csv")]
    result = tool("compare", *compare, "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    assert "Learning curves of short, long drawn in" in result.stdout
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000

    # Without --plot: tyro's usage error, and a non-zero exit.
    result = tool("compare", *compare)
    assert result.returncode == 2 and "--plot" in result.stderr

    # The curves CSVs are enough: with the run folders gone the plot is drawn again, the very same image.
    import shutil

    first = plot.read_bytes()
    for row in [*csv.DictReader(open(tmp_path / "fake-long.csv")), *csv.DictReader(open(tmp_path / "fake-short.csv"))]:
        shutil.rmtree(row["run_dir"])
    result = tool("compare", *compare, "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    assert plot.read_bytes() == first

    # Without its curves CSV, one clear line.
    (tmp_path / "fake-long-curves.csv").unlink()
    result = tool("compare", *compare, "--plot", str(plot))
    assert result.returncode == 2 and "no curves CSV at" in result.stderr and "fake-long-curves.csv" in result.stderr
    assert "Traceback" not in result.stderr


def test_summary_rows(tmp_path):
    """summary prints README's results-table row per CSV: means and spreads over the seeds."""
    assert run_benchmark(tmp_path, options=["--play-episodes", "7"]).returncode == 0
    # the fake run's CSV holds the final returns over its last 2 episodes (--window 2)
    command = ["--window", "2", str(tmp_path / "out.csv")]
    result = tool("summary", *command)
    assert result.returncode == 0, result.stderr
    header, separator, row = result.stdout.strip().splitlines()
    assert header.startswith("| script | env | env steps | seeds | final return (last 2 training episodes) |")
    # final returns 95 and 190 (sample std 67.18), greedy returns 100 and 200 (std 70.71)
    cells = row.strip("| ").split(" | ")
    assert cells[:6] == ["`ppo_fake.py`", "CartPole-v1", "100", "1 2", "142.5 +/- 67.2", "150.0 +/- 70.7 (7 episodes)"]
    # another tag than the return is named beside the figure (read from the curves CSV)
    points = (tmp_path / "out-curves.csv").read_text().replace("charts/episodic_return", "charts/x_pos")
    (tmp_path / "out-curves.csv").write_text(points)
    result = tool("summary", *command)
    assert "| 142.5 +/- 67.2 (charts/x_pos) |" in result.stdout
    # the header names the --window it reports; a CSV written with another window says its own
    command[command.index("--window") + 1] = "100"
    result = tool("summary", *command)
    assert "| final return (last 100 training episodes) |" in result.stdout
    assert "| 142.5 +/- 67.2 (charts/x_pos, last 2) |" in result.stdout

    result = tool("summary", *command[:-1], str(tmp_path / "missing.csv"))
    assert result.returncode == 1 and "summary: cannot read" in result.stderr and "Traceback" not in result.stderr


def test_describe_a_scalar(tmp_path):
    """describe: count, min, median, max of a scalar per run folder, and the share within a band."""
    assert run_benchmark(tmp_path).returncode == 0
    result = tool("describe", "runs/*__bench__*", "--workdir", str(tmp_path), "--tag", "charts/episodic_return",
                  "--band", "50", "100")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| CartPole-v1__bench__")]
    # seed 1 returns 10, 20, ..., 100 (50 to 100 within [50, 100]: 6), seed 2 returns 20, 40, ..., 200 (60, 80, 100)
    assert [row.split(" | ")[1:] for row in rows] == [
        ["10", "10", "55", "100", "60% (6 of 10) |"], ["10", "20", "110", "200", "30% (3 of 10) |"]]
    result = tool("describe", "runs/*__nothing__*", "--workdir", str(tmp_path), "--tag", "losses/kl")
    assert result.returncode == 1 and "no run folders match runs/*__nothing__*" in result.stderr


def test_plot_of_a_tag_the_runs_do_not_log_fails_in_one_line(tmp_path):
    result = run_benchmark(tmp_path, options=["--tag", "charts/nothing", "--plot", str(tmp_path / "p.png")])
    assert result.returncode == 1
    assert "--plot: no charts/nothing values in the curves of ppo_fake.py" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "p.png").exists()


# ---------------------------------------------------------------------------------------------------------------
# The diagnostics: percentiles per seed, ranges over the seeds
# ---------------------------------------------------------------------------------------------------------------
def test_percentile_interpolates_between_ranks():
    # sorted 1..5: position q / 100 * 4, so the 5th percentile is 1 + 0.2 * (2 - 1) and the 95th 4 + 0.8 * 1
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert [stats.percentile(values, q) for q in (0, 5, 50, 95, 100)] == pytest.approx([1, 1.2, 3, 4.8, 5])
    assert stats.percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)  # between the middle two
    assert stats.percentile([7.0], 95) == 7.0


def test_spread():
    assert stats.spread([10.0, 0.0]) == pytest.approx(
        {"count": 2, "min": 0.0, "p5": 0.5, "median": 5.0, "p95": 9.5, "max": 10.0})


def test_diagnostic_spreads_whole_run_and_second_half():
    kl = [ScalarEvent(0.0, 10 * i, value) for i, value in enumerate([4.0, 1.0, 3.0, 2.0, 5.0])]
    rows = stats.diagnostic_spreads({"losses/approx_kl": kl}, ("losses/approx_kl", "losses/clipfrac"))
    # clipfrac was not logged: no row; the second half of 5 values is the last 3 (2, 3, 5 sorted)
    assert [(row["tag"], row["part"]) for row in rows] == [("losses/approx_kl", "all"),
                                                           ("losses/approx_kl", "second half")]
    assert rows[0] == pytest.approx({"tag": "losses/approx_kl", "part": "all", "count": 5, "min": 1.0,
                                     "p5": 1.2, "median": 3.0, "p95": 4.8, "max": 5.0})
    assert rows[1] == pytest.approx({"tag": "losses/approx_kl", "part": "second half", "count": 3, "min": 2.0,
                                     "p5": 2.1, "median": 3.0, "p95": 4.8, "max": 5.0})


def test_diagnostic_ranges_over_seeds():
    def row(seed, tag, count, p5, median, p95):
        return {"label": "", "seed": seed, "tag": tag, "part": "all", "count": count, "min": p5 - 1,
                "p5": p5, "median": median, "p95": p95, "max": p95 + 1}

    rows = [row(1, "a", 10, 0.0, 1.0, 2.0), row(1, "b", 10, 5.0, 6.0, 7.0), row(2, "a", 12, -1.0, 3.0, 1.5),
            row(3, "a", 11, 0.5, 2.5, 4.0)]
    summed = stats.diagnostic_ranges(rows)
    assert [s["tag"] for s in summed] == ["a", "b"]  # first-seen order
    # tag a: the lowest 5th percentile (-1, seed 2), the median of the medians 1, 3, 2.5, the highest 95th (4)
    assert summed[0] == {"label": "", "tag": "a", "part": "all", "seeds": [1, 2, 3], "counts": [10, 12, 11],
                         "min": -2.0, "p5": -1.0, "median": 2.5, "p95": 4.0, "max": 5.0}
    assert summed[1]["seeds"] == [1] and summed[1]["median"] == 6.0


def test_curve_at_a_step():
    def point(seed, step, value, seconds, kind="training", tag="r"):
        return {"seed": seed, "kind": kind, "tag": tag, "env_steps": step, "wall_seconds": seconds, "value": value}

    points = [point(1, 10, 1.0, 1.0), point(1, 15, 99.0, 1.5, kind="evaluation"), point(1, 20, 2.0, 2.0),
              point(1, 20, 50.0, 2.0, tag="other"), point(1, 30, 6.0, 3.0), point(2, 25, 10.0, 5.0)]
    # at step 20 seed 1 has finished the episodes of steps 10 and 20 (mean 1.5), seed 2 none yet
    assert stats.curve_at(points, "r", 2, 20) == {"1": (1.5, 2.0)}
    # at step 30 the window of 2 holds seed 1's last two (2 and 6); seed 2's one episode is its mean
    assert stats.curve_at(points, "r", 2, 30) == {"1": (4.0, 3.0), "2": (10.0, 5.0)}
    assert stats.curve_at(points, "r", 2, 5) == {}


def test_summary_at_steps(tmp_path):
    """summary --at-steps: the rolling mean and the wall seconds of each CSV's curve at given steps."""
    assert run_benchmark(tmp_path).returncode == 0
    result = tool("summary", "--window", "2", str(tmp_path / "out.csv"), "--at-steps", "35", "100", "200")
    assert result.returncode == 0, result.stderr
    rows = [line.split(" | ")[1:5] for line in result.stdout.splitlines() if " | charts/episodic_return | " in line]
    # at step 35: episodes 2 and 3 of each seed, 10 s (20, 30) and 20 s (40, 60): means 25 and 50, mean 37.5;
    # at 100: 95 and 190; both seeds trained for 100 steps, so at 200 there is nothing to give
    assert rows == [["35", "charts/episodic_return", "1 2", "37.5 (25.0 - 50.0)"],
                    ["100", "charts/episodic_return", "1 2", "142.5 (95.0 - 190.0)"],
                    ["200", "charts/episodic_return", "-", "-"]]


def test_diagnostics_are_recorded_and_printed(tmp_path):
    """Each benchmark writes <name>-diagnostics.csv beside its CSV; benchmarks.diagnostics prints its ranges."""
    assert run_benchmark(tmp_path).returncode == 0
    rows = list(csv.DictReader(open(tmp_path / "out-diagnostics.csv")))
    assert list(rows[0]) == ["script", "label", "env_id", "seed", "tag", "part", "count", "min", "p5", "median",
                             "p95", "max"]
    # the fake logs approx_kl = seed * k / 8 at episodes k = 5 and 10 (the other 4 tags: not logged, no rows)
    assert [(row["seed"], row["tag"], row["part"], row["count"]) for row in rows] == [
        ("1", "losses/approx_kl", "all", "2"), ("1", "losses/approx_kl", "second half", "1"),
        ("2", "losses/approx_kl", "all", "2"), ("2", "losses/approx_kl", "second half", "1")]
    # seed 1: 0.625 and 1.25, so p5 0.625 + 0.05 * 0.625, median 0.9375, p95 0.625 + 0.95 * 0.625
    assert [float(rows[0][key]) for key in ("min", "p5", "median", "p95", "max")] == pytest.approx(
        [0.625, 0.65625, 0.9375, 1.21875, 1.25], rel=1e-3)
    assert [float(rows[3][key]) for key in ("min", "median", "max")] == [2.5, 2.5, 2.5]

    result = tool("diagnostics", str(tmp_path / "out-diagnostics.csv"))
    assert result.returncode == 0, result.stderr
    table = [line for line in result.stdout.splitlines() if line.startswith("| `ppo_fake.py`")]
    # over both seeds: min 0.625, lowest p5 0.656 (seed 1), median of 0.9375 and 1.875, highest p95 2.44 (seed 2)
    assert table == ["| `ppo_fake.py` | losses/approx_kl | all | 1 2 | 2 | 0.625 | 0.656 | 1.41 | 2.44 | 2.5 |",
                     "| `ppo_fake.py` | losses/approx_kl | second half | 1 2 | 1 | 1.25 | 1.25 | 1.88 | 2.5 | 2.5 |"]
    result = tool("diagnostics", str(tmp_path / "missing.csv"))
    assert result.returncode == 1 and "diagnostics: cannot read" in result.stderr and "Traceback" not in result.stderr


def test_run_records_points_and_diagnostics_as_the_studies_write_them():
    """benchmarks.core.records.run_records, which benchmark.analyse and the memory and masking studies share: a
    point per event of each (kind, tag), its wall seconds from the start (rounded where asked), the names first;
    the diagnostics rows diagnostic_spreads gives, with the names."""
    from benchmarks.core.records import run_records

    names = {"script": "s.py", "label": "l", "env_id": "E-v0", "seed": 3}
    kl = [ScalarEvent(1000.0 + i, 10 * i, value) for i, value in enumerate([4.0, 1.0, 3.0, 2.0, 5.0])]
    scalars = {"charts/episodic_return": [ScalarEvent(1000.12345, 40, 2.0), ScalarEvent(1002.5, 80, 4.0)],
               "eval/mean_return": [ScalarEvent(1003.0, 80, 9.0)], "losses/approx_kl": kl}
    curves = (("training", "charts/episodic_return"), ("evaluation", "eval/mean_return"))
    points, diagnostics = run_records(names, scalars, 999.0, curves, ("losses/approx_kl", "losses/clipfrac"))
    assert [(p["kind"], p["env_steps"], p["value"]) for p in points] == [("training", 40, 2.0), ("training", 80, 4.0),
                                                                        ("evaluation", 80, 9.0)]
    assert [p["wall_seconds"] for p in points] == pytest.approx([1.12345, 3.5, 4.0])
    assert all({k: p[k] for k in names} == names for p in points + diagnostics)
    assert [{k: v for k, v in d.items() if k not in names} for d in diagnostics] == \
        stats.diagnostic_spreads(scalars, ("losses/approx_kl", "losses/clipfrac"))
    assert len(diagnostics) == 2  # approx_kl's whole run and second half; clipfrac was not logged
    rounded, _ = run_records(names, scalars, 999.0, curves[:1], (), wall_digits=3)
    assert [p["wall_seconds"] for p in rounded] == [1.123, 3.5]


def test_append_csv_makes_the_file_then_adds_to_its_end(tmp_path):
    from benchmarks.core.records import append_csv, read_csv

    path = tmp_path / "sub" / "x.csv"
    append_csv(path, [{"a": 1, "b": 0.123456}], floats="significant")
    append_csv(path, [{"a": 2, "b": 2.0}, {"a": 3, "b": 3.0}], floats="significant")
    assert read_csv(path) == [{"a": "1", "b": "0.1235"}, {"a": "2", "b": "2.0"}, {"a": "3", "b": "3.0"}]
