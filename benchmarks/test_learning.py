"""The learning checks: each MLP lesson reaches its issue's target, for one fixed seed, from its command line.

    python -m pytest benchmarks/test_learning.py          # all three (7 minutes on 2 cores, 2026-12-01)
    python -m pytest benchmarks/test_learning.py -k cartpole

They live here, not in tests/, because they train for minutes: the guide keeps longer learning checks out of
the CI suite (`python -m pytest` collects tests/ only, pytest.ini's testpaths). They check the targets; the
figures over several seeds are benchmark.py's (benchmarks/README.md). The CI suite pins what tiny runs of each
script log on stand-in envs (tests/fingerprint.py); whether the defaults still learn is checked only here.
"""

import numpy as np

from benchmarks.core import launch
from benchmarks.core.records import PLAY_LINE
from benchmarks.core.runs import logged_folders, read_scalars
from benchmarks.core.stats import rolling_first_crossing, rolling_mean


def test_learns_cartpole_within_100k_steps(tmp_path):
    """CartPole-v1: a rolling mean of 20 training episodes >= 475 within 100k env steps."""
    command = launch.lesson_command("ppo_cartpole.py", ["--seed", "1", "--total-timesteps", "100000"])
    result = launch.run(command, tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr
    (run_dir,) = logged_folders(tmp_path)
    episodes = read_scalars(run_dir)[0]["charts/episodic_return"]
    returns = [e.value for e in episodes]
    # benchmarks/benchmark.py's criterion: the first episode whose last 20 (a full window) average >= 475
    crossing = rolling_first_crossing([e.step for e in episodes], [e.wall_time for e in episodes], returns, 20, 475)
    assert crossing is not None, f"best rolling-20 mean {max(rolling_mean(returns, 20)[19:], default=0):.1f}"


def test_learns_pendulum_within_300k_steps(tmp_path):
    """Pendulum-v1, the defaults (300k steps, the clipped objective): the last 20 training episodes and the
    greedy evaluation after the last update (20 episodes) both average -200 or better."""
    result = launch.run(launch.lesson_command("ppo_pendulum_continuous.py", ["--seed", "1"]), tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr
    (run_dir,) = logged_folders(tmp_path)
    logged = read_scalars(run_dir)[0]
    returns = [event.value for event in logged["charts/episodic_return"]]
    assert np.mean(returns[-20:]) >= -200, f"mean of the last 20 training episodes {np.mean(returns[-20:]):.1f}"
    final_eval = logged["eval/mean_return"][-1].value
    assert final_eval >= -200, f"greedy policy's mean return {final_eval:.1f}"


def test_lunarlander_greedy_policy_scores_250_after_1m_steps(tmp_path):
    """LunarLander-v3, the defaults (1M steps): the final checkpoint, played greedily for 100 fresh episodes
    (`--play`), averages 250 or more."""
    result = launch.run(launch.lesson_command("ppo_lunarlander_vec.py", ["--seed", "1"]), tmp_path, timeout=1800)
    assert result.returncode == 0, result.stderr
    (run_dir,) = logged_folders(tmp_path)
    command = launch.lesson_command("ppo_lunarlander_vec.py",
                                    ["--play", str(run_dir / "checkpoint.pt"), "--episodes", "100"])
    result = launch.run(command, tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr
    match = PLAY_LINE.search(result.stdout)
    assert match and match[1] == "100" and float(match[2]) >= 250, result.stdout
