"""benchmarks/precision_check.py: bf16 against fp32 gradients of Breakout's loss, beside the sampling noise."""

import re

import torch

from benchmarks import precision_check
from benchmarks.core import launch
from conftest import ROOT

CHECK = launch.python_command("-m", "benchmarks.precision_check")  # (run from the repository root)


def test_cosine_by_hand():
    assert precision_check.cosine(torch.tensor([1.0, 0.0]), torch.tensor([3.0, 0.0])) == 1.0
    assert precision_check.cosine(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 2.0])) == 0.0
    assert abs(precision_check.cosine(torch.tensor([1.0, 1.0]), torch.tensor([1.0, 0.0])) - 2 ** -0.5) < 1e-7


def test_the_shipped_agent(tmp_path):
    """On the shipped Breakout agent: bf16 turns the gradient a little (cosine below 1, above 0.9), and moves the
    values and the policy a little (differences above 0): the two precisions are really both computed."""
    result = launch.run([*CHECK, "--checkpoint", str(ROOT / "agents" / "breakout.pt"), "--rollouts", "2",
                         "--num-steps", "8"], ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("8 minibatches of 2 rollouts")

    def cells(label: str) -> tuple[float, ...]:
        row = next(line for line in result.stdout.splitlines() if line.startswith(f"| {label} |"))
        return tuple(float(x) for x in re.findall(r"-?[\d.]+(?:e-?\d+)?", row.split(" | ", 1)[1]))

    median, low, high = cells("gradient cosine")[:3]  # (printed to 4 digits: one small minibatch's can read 1.0000)
    assert 0.9 < low <= median < 1.0 and median <= high <= 1.0
    assert 0.0 < cells("gradient difference / fp32 gradient")[0] < 0.5
    assert 0.9 < cells("gradient cosine, whole rollout (per rollout)")[0] < 1.0
    assert cells("mean |V_bf16 - V_fp32| (per rollout)")[0] > 0
    assert cells("KL(pi_fp32 || pi_bf16) (per rollout)")[0] > 0
    # the sampling noise: a minibatch's gradient is not its rollout's
    assert cells("gradient cosine")[3] < 0.999
    assert "| cosine between two rollouts' bf16 differences (per pair) |" in result.stdout


def test_bad_input_one_line(tmp_path):
    for argv, message in ((["--rollouts", "0"], "--rollouts must be at least 1"),
                          (["--checkpoint", str(tmp_path / "none.pt")], "no checkpoint at")):
        result = launch.run([*CHECK, *argv], ROOT, timeout=120)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
