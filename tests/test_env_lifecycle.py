"""Every env a script makes, it closes: the one train() makes to read the spaces off before the vector envs, the
vector envs' own, the evaluation env, and the one play() makes for the Agent's shapes. Each script trains a tiny
run (evaluating where it does) and plays it, in a driver process of its own, with every env made wrapped in a
recorder of its close()."""

import json
import os
from pathlib import Path

import pytest

from benchmarks.core import launch
from test_whole_runs import CONFIGS, EVALUATING

HERE = Path(__file__).resolve().parent

DRIVER = """
import glob, json
import gymnasium as gym
import scripted_runs  # (registers the counting envs)
from benchmarks.core import launch

ppo = launch.import_lesson({module!r})
base = scripted_runs.stand_in_make_env(ppo) if ppo.__name__ in scripted_runs.PIXEL_SCRIPTS else ppo.make_env
made = []


class Recorded(gym.Wrapper):
    def __init__(self, env):
        super().__init__(env)
        self.closed = False
        made.append(self)

    def close(self):
        self.closed = True
        super().close()


ppo.make_env = lambda *args, **kwargs: Recorded(base(*args, **kwargs))
report = {{}}
for part, argv in (("train", {train!r}), ("play", None)):
    if argv is None:
        argv = ["--play", glob.glob("runs/*/checkpoint.pt")[0], "--episodes", "1"]
    before = len(made)
    code = launch.run_main(ppo, argv)
    assert code == 0, code
    report[part] = {{"made": len(made) - before, "open": sum(not env.closed for env in made[before:])}}
print(json.dumps(report))
"""


@pytest.mark.parametrize("module", list(CONFIGS))
def test_every_env_made_is_closed(module, tmp_path):
    train = [*CONFIGS[module], "--total-timesteps", "24", "--checkpoint-every", "0",
             *(["--eval-every", "1", "--eval-episodes", "1"] if module in EVALUATING else [])]
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(module=module, train=train))
    # (the lessons and benchmarks from the root, scripted_runs from tests/)
    env = launch.environment()
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env["PYTHONPATH"]])
    result = launch.run(launch.python_command(str(driver)), tmp_path, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    # train: the vector envs' N (CartPole: its one env), the one for the spaces, one per evaluation; play: the
    # one for the spaces and the one it plays on
    assert report["train"]["made"] >= (1 if module == "ppo_cartpole" else 4) and report["play"]["made"] == 2, report
    assert report["train"]["open"] == 0 and report["play"]["open"] == 0, report
