"""benchmarks/ale_vector_check.py: it times both backends (ours and ale-py's AtariVectorEnv) and says so."""

import re

from benchmarks.core import launch
from conftest import ROOT


def test_both_backends_timed():
    result = launch.run(launch.python_command("-m", "benchmarks.ale_vector_check", "--steps", "3"), ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    times = re.findall(r"^(ours|AtariVectorEnv)[^:]*: ([\d.]+) ms per vector step$", result.stdout, re.MULTILINE)
    assert [name for name, _ in times] == ["ours", "AtariVectorEnv", "AtariVectorEnv"]
    assert all(float(ms) > 0 for _, ms in times)
