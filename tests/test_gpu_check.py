"""benchmarks/gpu_check.py, run on the CPU with --quick: the checks that a GPU run makes (the ratio at the start
of an update, training, same-seed runs, evaluation leaving training alone, the MLP scripts) all pass here, so a
failure on a GPU is the GPU path's, not the check's."""

import subprocess
import sys

from conftest import ROOT


def test_the_gpu_check_passes_on_the_cpu(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--device", "cpu", "--quick"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    for check in ("breakout fp32: ratio at the start of an update", "mario bf16: ratio at the start of an update",
                  "breakout fp32: same seed, same losses", "mario fp32: evaluation leaves training alone",
                  "ppo_pendulum_continuous --objective kl: train"):
        assert any(line.startswith(check) and " ok " in line for line in lines), (check, result.stdout)
    assert lines[-1] == "gpu_check: 14 checks ok, 0 failed", result.stdout
