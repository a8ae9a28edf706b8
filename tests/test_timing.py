"""benchmarks/timing.py: the time breakdown of a tiny CartPole run, which must be the very same run as without it;
and of a run whose envs step in worker processes."""

import re
import subprocess
import sys

import torch

from conftest import ROOT

TIMING = ROOT / "benchmarks" / "timing.py"
ARGS = ["--total-timesteps", "512", "--num-steps", "256", "--seed", "3"]


def only_checkpoint(cwd):
    (path,) = (cwd / "runs").glob("*/checkpoint.pt")
    return torch.load(path, weights_only=True)


def test_breakdown_of_a_run_identical_to_a_plain_one(tmp_path):
    timed, plain = tmp_path / "timed", tmp_path / "plain"
    timed.mkdir(), plain.mkdir()
    result = subprocess.run([sys.executable, str(TIMING), str(ROOT / "ppo_cartpole.py"), *ARGS], cwd=timed,
                            capture_output=True, text=True, timeout=120)
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

    result = subprocess.run([sys.executable, str(ROOT / "ppo_cartpole.py"), *ARGS], cwd=plain,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    a, b = only_checkpoint(timed), only_checkpoint(plain)
    assert a["global_step"] == b["global_step"] == 512
    for name, tensor in a["agent"].items():
        assert torch.equal(tensor, b["agent"][name]), name


def test_breakdown_of_a_run_with_async_envs(tmp_path):
    """The workers of an AsyncVectorEnv import the script by name, to unpickle their env function: run from
    anywhere, timing.py must make it importable, as `python <script>` does."""
    result = subprocess.run([sys.executable, str(TIMING), str(ROOT / "ppo_lunarlander_vec.py"), "--num-envs", "2",
                             "--vectorization-mode", "async", "--total-timesteps", "256", "--num-steps", "64", "--minibatch-size", "32",
                             "--eval-every", "0"], cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "2 updates; start-up" in result.stdout


def test_not_a_script_of_the_library(tmp_path):
    other = tmp_path / "other.py"
    other.write_text("def main():\n    pass\n")
    result = subprocess.run([sys.executable, str(TIMING), str(other)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == ["timing.py: other has no collect_rollout(): not one of the "
                                                  "library's scripts"]
    result = subprocess.run([sys.executable, str(TIMING), str(tmp_path / "missing.py")], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "no script at" in result.stderr
