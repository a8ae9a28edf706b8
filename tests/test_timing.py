"""benchmarks/timing.py: the time breakdown of a tiny CartPole run, which must be the very same run as without it;
and of a run whose envs step in worker processes."""

import re

import torch

from benchmarks.core import launch

TIMING = launch.python_command("-m", "benchmarks.timing")  # (run from a scratch folder: launch.environment())
ARGS = ["--total-timesteps", "512", "--num-steps", "256", "--seed", "3"]


def only_checkpoint(cwd):
    (path,) = (cwd / "runs").glob("*/checkpoint.pt")
    return torch.load(path, weights_only=True)


def test_breakdown_of_a_run_identical_to_a_plain_one(tmp_path):
    timed, plain = tmp_path / "timed", tmp_path / "plain"
    timed.mkdir(), plain.mkdir()
    result = launch.run([*TIMING, "ppo_cartpole.py", *ARGS], timed, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "2 updates; start-up" in out
    shares = dict(re.findall(r"^\| (\w[^|]*?) \| [\d.]+ \| (-?\d+)% \|$", out, re.MULTILINE))
    assert set(shares) == {"rollout", "GAE", "update (minibatch passes, optimizer, logging)", "evaluation",
                           "checkpoints"}
    # the top-level parts add up to the loop (each share is rounded), and none is negative
    assert 97 <= sum(int(v) for v in shares.values()) <= 103 and min(int(v) for v in shares.values()) >= 0
    parts = dict(re.findall(r"^\|   (\w[^|]*?) \| ([\d.]+) \|", out, re.MULTILINE))
    assert set(parts) == {"env steps (envs.step)", "acting (forward passes, no grad)",
                          "rest (buffers, bootstrap values, episode stats)"}
    assert float(parts["env steps (envs.step)"]) > 0 and float(parts["acting (forward passes, no grad)"]) > 0

    result = launch.run(launch.lesson_command("ppo_cartpole.py", ARGS), plain, timeout=120)
    assert result.returncode == 0, result.stderr
    a, b = only_checkpoint(timed), only_checkpoint(plain)
    assert a["global_step"] == b["global_step"] == 512
    for name, tensor in a["agent"].items():
        assert torch.equal(tensor, b["agent"][name]), name


def test_breakdown_of_a_run_with_async_envs(tmp_path):
    """The workers of an AsyncVectorEnv import the script by name, to unpickle their env function: run from
    another folder (the root on PYTHONPATH), timing.py's lesson must be importable there, as under `python
    <script>`."""
    result = launch.run([*TIMING, "ppo_lunarlander_vec.py", "--num-envs", "2", "--vectorization-mode", "async",
                         "--total-timesteps", "256", "--num-steps", "64", "--minibatch-size", "32", "--eval-every", "0"],
                        tmp_path, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "2 updates; start-up" in result.stdout


def test_not_a_script_of_the_library(tmp_path):
    other = tmp_path / "other.py"
    other.write_text("def main():\n    pass\n")
    for script in (str(other), "missing.py"):
        result = launch.run([*TIMING, script], tmp_path, timeout=60)
        assert result.returncode == 2
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith(f"timing.py: {script} is not one of the library's scripts (ppo_cartpole.py, "), line
