"""benchmarks/ale_vector_check.py: it times both backends (ours and ale-py's AtariVectorEnv) and says so."""

import re
import subprocess
import sys

from conftest import ROOT


def test_both_backends_timed():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "ale_vector_check.py"), "--steps", "3"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    times = re.findall(r"^(ours|AtariVectorEnv)[^:]*: ([\d.]+) ms per vector step$", result.stdout, re.MULTILINE)
    assert [name for name, _ in times] == ["ours", "AtariVectorEnv", "AtariVectorEnv"]
    assert all(float(ms) > 0 for _, ms in times)
