"""benchmarks/mario_speed.py: it times the emulator, the env stack in async workers and a step of each network
in both precisions, and prints each figure."""

import re

from benchmarks.core import launch
from conftest import ROOT


def test_every_figure_printed():
    result = launch.run(launch.python_command("-m", "benchmarks.mario_speed", "--frames", "64", "--steps", "1",
                                              "--minibatch-size", "8"), ROOT, timeout=240)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"^emulator alone, one process: [\d.]+ ms per frame$", out, re.MULTILINE), out
    assert re.search(r"^emulator alone, two processes side by side: [\d.]+ and [\d.]+ ms per frame$", out,
                     re.MULTILINE), out
    assert len(re.findall(r"^env stack, AsyncVectorEnv of [28]: [\d.]+ ms per frame", out, re.MULTILINE)) == 2, out
    steps = re.findall(r"^(bf16|fp32): a policy step ([\d.]+) ms, a value step ([\d.]+) ms \(minibatch of 8\)$", out,
                       re.MULTILINE)
    assert [p for p, _, _ in steps] == ["bf16", "fp32"] and all(float(v) > 0 for _, a, b in steps for v in (a, b))
