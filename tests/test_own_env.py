"""A learner's own environment (tests/custom_env.py, the course's "Your own environment"): it passes gymnasium's
checker, behaves as its docstring says, and a lesson given `--env-id tests.custom_env:Corridor-v0` trains on it
and plays it from the command line, with nothing but the id; the same env with a Box action space is refused in
one line. Whether the lesson learns it is checked by hand: that run is too long for CI."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from conftest import run_dirs, run_script, scalars
from tests import custom_env

SCRIPT = "ppo_cartpole.py"
ENV_ID = "tests.custom_env:Corridor-v0"
CONTINUOUS_ID = "tests.custom_env:CorridorContinuous-v0"


@pytest.mark.parametrize("env_id", [ENV_ID, CONTINUOUS_ID])
def test_gymnasiums_checker_passes_without_a_warning(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker reports most of what it finds as warnings
        check_env(gym.make(env_id).unwrapped)


def test_the_corridor_ends_as_its_docstring_says():
    """Straight to the goal: -STEP_COST a step, +1 on the last, terminated. Into a wall: cut off by the time limit
    of the registration, truncated and not terminated."""
    env = gym.make(ENV_ID)
    obs, _ = env.reset(seed=0)
    rewards, terminated, truncated = [], False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, _ = env.step(int(obs[1] > obs[0]))  # toward the goal
        rewards.append(reward)
    assert terminated and not truncated and 1 <= len(rewards) <= custom_env.LENGTH - 1
    assert rewards == [-custom_env.STEP_COST] * (len(rewards) - 1) + [1.0]
    assert obs[0] == obs[1] and env.observation_space.contains(obs)

    obs, _ = env.reset(seed=0)
    away = 0 if obs[1] > obs[0] else 1  # away from the goal, then against the wall behind the agent
    for step in range(1, custom_env.MAX_STEPS + 1):
        obs, reward, terminated, truncated, _ = env.step(away)
        assert reward == -custom_env.STEP_COST and not terminated and env.observation_space.contains(obs)
        assert truncated == (step == custom_env.MAX_STEPS)


def test_a_lesson_trains_and_plays_it_given_its_module_and_id(tmp_path):
    result = run_script(SCRIPT, "--env-id", ENV_ID, "--total-timesteps", "512", "--seed", "1", "--exp-name",
                        "own-env", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # One run folder holding an events file (run_dirs finds those), named after the id as given, module and
    # ":" included.
    (run_dir,) = run_dirs(tmp_path)
    assert run_dir.parent == tmp_path / "runs" and run_dir.name.startswith(f"{ENV_ID}__own-env__1__")
    ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert ckpt["global_step"] == 512 and ckpt["args"]["env_id"] == ENV_ID
    returns = [value for _, value in scalars(run_dir)["charts/episodic_return"]]
    assert returns and all(np.isfinite(returns))

    # --play makes the env from the checkpoint's id: gym.make imports the module again, in a new process. (The
    # timeout: without the time limit a greedy policy walking into a wall would play one episode forever.)
    result = run_script(SCRIPT, "--play", str(run_dir / "checkpoint.pt"), "--episodes", "2", cwd=tmp_path,
                        timeout=120)
    assert result.returncode == 0, result.stderr
    assert "mean return over 2 episodes:" in result.stdout


def test_a_lesson_refuses_an_action_space_it_cannot_handle_in_one_line(tmp_path):
    result = run_script(SCRIPT, "--env-id", CONTINUOUS_ID, "--total-timesteps", "512", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"{SCRIPT}: error: --env-id {CONTINUOUS_ID} has a Box action space; this script needs Discrete "
        "(for continuous actions use ppo_pendulum_continuous.py)"]
    assert not (tmp_path / "runs").exists()  # a refused run leaves nothing behind


class Float64Corridor(custom_env.Corridor):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float64)

    def _obs(self):
        return super()._obs().astype(np.float64)


gym.register("Float64Corridor-v0", entry_point=Float64Corridor, max_episode_steps=custom_env.MAX_STEPS)


def test_float64_observations_reach_the_network_as_float32():
    """check_env accepts float64 observations; the lesson's checked_env casts them for its float32 network (without
    the cast the first forward pass stops on mixed dtypes)."""
    import ppo_cartpole

    check_env(gym.make("Float64Corridor-v0").unwrapped)
    env = ppo_cartpole.checked_env(ppo_cartpole.Args(env_id="Float64Corridor-v0"), None)
    obs, _ = env.reset(seed=0)
    assert obs.dtype == np.float32 and env.observation_space.dtype == np.float32
    agent = ppo_cartpole.Agent(env, 64)
    agent.get_action_and_value(torch.as_tensor(obs)[None])
    assert ppo_cartpole.checked_env(ppo_cartpole.Args(), None).observation_space.dtype == np.float32  # CartPole's


def test_a_module_that_is_not_there_is_one_line(tmp_path):
    result = run_script(SCRIPT, "--env-id", "my_corridr:Corridor-v0", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{SCRIPT}: error: cannot make --env-id 'my_corridr:Corridor-v0': No module named")


def test_the_diagnose_command_reads_a_run_on_it_and_says_the_ranges_are_cartpoles(tmp_path):
    result = run_script(SCRIPT, "--env-id", ENV_ID, "--total-timesteps", "3000", "--seed", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (run_dir,) = run_dirs(tmp_path)
    from course import diagnose

    lines = diagnose.report(diagnose.read_run(run_dir))[0]
    assert f"your run changes env-id ('{ENV_ID}', there 'CartPole-v1')" in "\n".join(lines)
