"""benchmarks/gpu_check.py, run on the CPU with --quick: the checks that a GPU run makes (the ratio at the start
of an update, training, same-seed runs, evaluation leaving training alone, the MLP scripts) all pass here, so a
failure on a GPU is the GPU path's, not the check's.

The run hides gym-super-mario-bros (a package of that name that fails to import comes first on the path), as on
the GPU machine, where it cannot be installed: the check must then find that out once and run Mario on its
stand-in NES throughout, in sync mode, since async workers import the script afresh and would meet the hidden
package (a later test for the real NES, made after a check had installed the stand-in, found it instead).
"""

import os

from benchmarks.core import launch
from conftest import ROOT


def test_the_gpu_check_passes_on_the_cpu(tmp_path):
    hidden = tmp_path / "hidden" / "gym_super_mario_bros"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ImportError("hidden by tests/test_gpu_check.py")\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden.parent), os.environ.get("PYTHONPATH", "")])}
    result = launch.run(launch.python_command("-m", "benchmarks.gpu_check", "--device", "cpu", "--quick"), ROOT,
                        timeout=900, env=env)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    for check in ("breakout fp32: ratio at the start of an update", "mario bf16: ratio at the start of an update",
                  "breakout fp32: same seed, same losses", "mario fp32: evaluation leaves training alone",
                  "ppo_pendulum_continuous --objective kl: train"):
        assert any(line.startswith(check) and " ok " in line for line in lines), (check, result.stdout)
    assert lines[-1] == "gpu_check: 14 checks ok, 0 failed", result.stdout
