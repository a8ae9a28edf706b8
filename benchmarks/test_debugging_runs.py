"""The diagnose command on fresh runs, which train for minutes (tests/test_debugging.py reads the recorded runs in
seconds, and trains one CartPole run):

- a run of each MLP lesson at its defaults, on a seed none of the healthy records used, looks healthy;
- each broken run of benchmarks/debugging.py, trained again (seed 1), is flagged with the guide's symptoms for it,
  as its recorded run is.

    python -m pytest benchmarks/test_debugging_runs.py      # 22 minutes on 2 cores
"""

import pytest

from benchmarks import debugging
from benchmarks.core import launch
from course import debugging as guide
from course import diagnose


@pytest.mark.parametrize("lesson", ["ppo_cartpole.py", "ppo_lunarlander_vec.py", "ppo_pendulum_continuous.py"])
def test_a_run_at_the_defaults_on_a_new_seed_looks_healthy(lesson, tmp_path):
    done = launch.run(launch.lesson_command(lesson, ["--seed", "31", "--exp-name", "fresh"]), cwd=tmp_path)
    assert done.returncode == 0, launch.last_line(done.stderr)
    (folder,) = (tmp_path / "runs").glob("*__fresh__31__*")
    lines, findings, verdict = diagnose.report(diagnose.read_run(folder))
    assert lines[-1].startswith("looks healthy"), "\n".join(lines)


@pytest.mark.parametrize("name", [run.name for run in debugging.RUNS if not run.name.startswith("healthy")])
def test_a_broken_run_trained_again_shows_its_symptoms(name, tmp_path):
    runs = guide.judged_runs()
    expected = set(runs[name].symptoms)
    folder = debugging.train(debugging.BY_NAME[name], tmp_path)
    lines, findings, verdict = diagnose.report(diagnose.read_run(folder))
    found = {f.symptom.anchor for f in findings if f.symptom} | set(verdict.symptoms if verdict else [])
    assert found == expected, "\n".join(lines)  # (the same seed on the same processor: the same run)
