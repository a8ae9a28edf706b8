"""collect_rollout of every script, on the counting env of conftest: what is stored at an episode's end, and
above all that a step which both terminated and was truncated (gymnasium's TimeLimit on a terminal limit
step) is treated as terminal: V(s_{t+1}) = 0 there, never the value of the final observation."""

import importlib

import gymnasium as gym
import numpy as np
import pytest

from course.lessons import GYM_MODULES as MODULES  # (the language lessons roll out text: tests/test_language.py)
from conftest import StubAgent, stub_rollout

# CartPole and the masking lesson step one env (the masking lesson's rollout: tests/test_masking.py)
VECTOR_SCRIPTS = [m for m in MODULES if m not in ("ppo_cartpole", "ppo_action_masking")]


def rollout_of(ppo, num_steps, num_envs):
    if ppo.__name__ == "ppo_pendulum_continuous":
        return ppo.Rollout(num_steps, num_envs, (3,), ())
    return ppo.Rollout(num_steps, num_envs, (3,))


@pytest.mark.parametrize("module", VECTOR_SCRIPTS)
def test_terminated_and_truncated_on_one_step_is_terminal(module):
    ppo = importlib.import_module(module)
    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.wrappers.RecordEpisodeStatistics(gym.make("CountingTest-v0"))] * 2,
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    # env 0 (seed 999): truncated after 2 steps; env 1 (seed 1000): terminated AND truncated after 2 steps.
    next_obs, _ = envs.reset(seed=999)
    rollout = rollout_of(ppo, 5, 2)
    next_obs, last_value, episodes = stub_rollout(ppo, envs, next_obs, rollout)
    envs.close()
    np.testing.assert_array_equal(rollout.obs[:, :, 0], [[0, 0], [1, 1], [0, 0], [1, 1], [0, 0]])
    np.testing.assert_array_equal(rollout.dones, [[0, 0], [1, 1], [0, 0], [1, 1], [0, 0]])
    # Truncated only: bootstrap from V(final obs, k = 2) = 2. Terminated too: the MDP ended, V = 0.
    np.testing.assert_array_equal(rollout.final_values, [[0, 0], [2, 0], [0, 0], [2, 0], [0, 0]])
    np.testing.assert_array_equal(rollout.values, rollout.obs[:, :, 0])
    np.testing.assert_array_equal(last_value, [1, 1])  # the rollout goes on from k = 1
    assert sorted(e[:3] for e in episodes) == [(1, 2.0, 2), (1, 2.0, 2), (3, 2.0, 2), (3, 2.0, 2)]

    # And through GAE: the value target at the doubly-flagged step is the reward alone.
    advantages = ppo.compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.final_values, last_value,
                                 0.5, 0.5)
    targets = advantages + rollout.values
    np.testing.assert_allclose(targets[1], [1.0 + 0.5 * 2, 1.0])
    np.testing.assert_allclose(targets[3], [1.0 + 0.5 * 2, 1.0])


def test_cartpole_terminated_and_truncated_on_one_step_is_terminal():
    import ppo_cartpole as ppo

    env = gym.wrappers.RecordEpisodeStatistics(gym.make("CountingTest-v0"))
    next_obs, _ = env.reset(seed=1000)
    rollout = ppo.Rollout(5, (3,))
    next_obs, last_value, episodes = ppo.collect_rollout(env, StubAgent(), next_obs, rollout)
    np.testing.assert_array_equal(rollout.obs[:, 0], [0, 1, 0, 1, 0])
    np.testing.assert_array_equal(rollout.dones, [0, 1, 0, 1, 0])
    np.testing.assert_array_equal(rollout.final_values, np.zeros(5))  # never V(final obs) = 2
    assert last_value == 1 and episodes == [(1, 2.0, 2), (3, 2.0, 2)]
