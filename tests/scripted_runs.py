"""Whole training runs of a script's own main(), on envs whose every episode is known in advance, compared exactly:
a run stopped by Ctrl-C and resumed against the run that never stopped, a run that evaluates against one that
does not.

Why exact comparison can hold here. A resumed run starts fresh episodes (an env's state is not saved), so with
a real env its data differ from the uninterrupted run's. The envs used here are conftest's counting envs
(episodes of 3 steps in an env seeded even, 2 in one seeded odd; env i of a vector env is seeded seed + i),
and every --num-steps used is a multiple of 6: every rollout ends on an episode boundary in every env, and
the episodes a resumed run starts are exactly those the uninterrupted run starts at that update. Both runs
then see the same data, so weights, optimizer state, random states and every logged scalar must match bit for
bit (torch.equal, ==) on the CPU.

- CartPole, LunarLander: CountingTest-v0 (--env-id); Pendulum: CountingContinuousTest-v0 (a Box action).
- Breakout, Mario: their make_env is replaced by a stand-in, PixelCountingEnv: the counting env's episodes with
  uint8 [4, 84, 84] frames drawn from the step counter and the last action, and the info keys the scripts
  read (x_pos and flag_get for Mario; RecordEpisodeStatistics' "episode" for both).

The runs go through a driver process (this file run as a script, the repository root on its PYTHONPATH:
benchmarks.core.launch.environment), since the test envs must be registered, and the stand-in put in place, in the
process that trains; each run is the script's main() through benchmarks.core.launch.run_main. In it the module's
SummaryWriter records every add_scalar call, compute_gae counts the updates, and an optimizer step hook presses
Ctrl-C (SIGINT to itself) after the first gradient step of a chosen update: the MLP scripts then finish that
update and save it; the pixel scripts' Stopper gives it up at the next step and saves the update before it. The
resumed run always runs in a process of its own, as a user's would.

    python tests/scripted_runs.py MODULE VARIANTS.json RESULTS.pt      (cwd: where runs/ should go)

(Run by its path, so that Python puts tests/ first on the driver's sys.path, as pytest does for the tests:
conftest and this file are then imported under the same names in both, and the counting envs registered once.)
"""

import json
import os
import signal
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from benchmarks.core import launch
from conftest import CountingEnv  # (also registers CountingTest-v0 and CountingContinuousTest-v0)

PIXEL_SCRIPTS = ("ppo_breakout_atari", "ppo_mario_cnn")
# Scripts whose Ctrl-C stops at the next step and saves the update before (Stopper), rather than finish the update.
STOPPER_SCRIPTS = PIXEL_SCRIPTS


class PixelCountingEnv(CountingEnv):
    """CountingEnv with frames: observation uint8 [4, 84, 84], a fixed pattern shifted by the step counter k and
    the last action; Discrete(`actions`); reward 1 when the action is k mod `actions`, else 0. Episode ends and
    info (x_pos = k, flag_get = False) as CountingEnv's."""

    observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    PATTERN = (np.arange(4 * 84 * 84).reshape(4, 84, 84) * 7) % 251

    def __init__(self, actions: int, render_mode=None):
        super().__init__(render_mode)
        self.action_space = gym.spaces.Discrete(actions)
        self.last_action = 0

    def reset(self, *, seed=None, options=None):
        self.last_action = 0
        return super().reset(seed=seed, options=options)

    def step(self, action):
        reward = 1.0 if int(action) == self.k % self.action_space.n else 0.0
        self.last_action = int(action)
        _, _, terminated, truncated, info = super().step(action)
        return self._obs(), reward, terminated, truncated, info

    def _obs(self):
        return ((self.PATTERN + 31 * self.k + 17 * self.last_action) % 256).astype(np.uint8)


def stand_in_make_env(ppo):
    """make_env for a pixel script: the counting env with frames, and RecordEpisodeStatistics on top."""
    actions = len(ppo.ACTION_SETS[ppo.Args().action_type]) if hasattr(ppo, "ACTION_SETS") else 4

    def make_env(args, video_folder=None, video_trigger=None):
        return gym.wrappers.RecordEpisodeStatistics(PixelCountingEnv(actions))

    return make_env


def instrument(ppo) -> dict:
    """Record what `ppo` logs, count its updates, and press Ctrl-C where state["stop_update"] says."""
    state = {"update": 0, "stop_update": None, "pressed": False, "log": [], "run_dir": None,
             "make_env": {"real": ppo.make_env, "stand-in": stand_in_make_env(ppo)}}

    compute_gae = ppo.compute_gae

    def counting_compute_gae(*args, **kwargs):  # called once per update, after its rollout
        state["update"] += 1
        return compute_gae(*args, **kwargs)

    ppo.compute_gae = counting_compute_gae

    def press_ctrl_c(optimizer, args, kwargs):  # after a gradient step: the terminal's Ctrl-C, once
        if state["update"] == state["stop_update"] and not state["pressed"]:
            state["pressed"] = True
            os.kill(os.getpid(), signal.SIGINT)

    register_optimizer_step_post_hook(press_ctrl_c)

    class RecordingWriter(ppo.SummaryWriter):
        def __init__(self, log_dir, *args, **kwargs):
            super().__init__(log_dir, *args, **kwargs)
            state["run_dir"] = os.path.abspath(log_dir)

        def add_scalar(self, tag, value, step=None, *args, **kwargs):
            state["log"].append((tag, int(step), float(value)))
            super().add_scalar(tag, value, step, *args, **kwargs)

    ppo.SummaryWriter = RecordingWriter
    return state


def drive(module: str, variants: list[dict], results_path: str) -> None:
    """Run `module`'s main() once per variant ({"name", "argv", "stop_update", optional "real_env"}), one after
    another in this process; save {name: {"exit", "log", "run_dir"}}. A pixel script trains on the stand-in env
    unless the variant asks for the real one."""
    ppo = launch.import_lesson(module)
    state = instrument(ppo)
    results = {}
    for variant in variants:
        state.update(update=0, stop_update=variant["stop_update"], pressed=False, log=[], run_dir=None)
        if ppo.__name__ in PIXEL_SCRIPTS:
            ppo.make_env = state["make_env"]["real" if variant.get("real_env") else "stand-in"]
        code = launch.run_main(ppo, variant["argv"])
        results[variant["name"]] = {"exit": code, "log": state["log"], "run_dir": state["run_dir"]}
    torch.save(results, results_path)


def run_variants(module: str, variants: list[dict], cwd: Path, timeout: float = 300) -> dict:
    """Drive `variants` of `module` in a fresh process, in `cwd`; return their results."""
    (cwd / "variants.json").write_text(json.dumps(variants))
    result = launch.run(launch.python_command(__file__, module, "variants.json", "results.pt"), cwd, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return torch.load(cwd / "results.pt", weights_only=True)


# ---------------------------------------------------------------------------------------------------------
# Comparing runs
# ---------------------------------------------------------------------------------------------------------
def scalars(*logs: list) -> dict:
    """{(tag, step): [values in the order logged]} over the logs of runs that follow each other (a stopped run,
    then its resumption): a later run's entries replace an earlier one's at the same tag and step (the pixel
    scripts' Stopper gives up an update whose episodes were already logged; the resumed run logs them again).
    charts/SPS is left out: it is a wall-clock speed."""
    merged = {}
    for log in logs:
        own = {}
        for tag, step, value in log:
            if tag != "charts/SPS":
                own.setdefault((tag, step), []).append(value)
        merged.update(own)
    return merged


def differences(a, b, where: str = "") -> list[str]:
    """Where two checkpoint values differ: tensors by torch.equal (and dtype), floats exactly (NaN equal to NaN),
    dicts, lists and tuples item by item."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        same = (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
                and a.shape == b.shape and torch.equal(a, b))
        return [] if same else [where]
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(map(str, a.keys() ^ b.keys()))}"]
        return [d for k in a for d in differences(a[k], b[k], f"{where}[{k!r}]")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: lengths {len(a)} and {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return []
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def scalar_differences(expected: dict, got: dict) -> list[str]:
    if expected.keys() != got.keys():
        return [f"logged (tag, step) pairs differ: {sorted(expected.keys() ^ got.keys())[:10]}"]
    return [f"{tag} at step {step}: {expected[tag, step]} != {got[tag, step]}"
            for tag, step in sorted(expected) if differences(expected[tag, step], got[tag, step])]


if __name__ == "__main__":
    drive(sys.argv[1], json.loads(Path(sys.argv[2]).read_text()), sys.argv[3])
