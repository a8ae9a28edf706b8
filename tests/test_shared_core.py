"""The core every script carries its own copy of (GAE, the clipped surrogate, the clipped value loss, the rollout's
episode-end bookkeeping, the annealing schedule, the random-state save and restore), checked by hand in every
copy: each test is parametrized over the scripts that hold the function. The copies are also held to one text,
so a fix made in one is made in all."""

import ast
import importlib

import gymnasium as gym
import numpy as np
import pytest
import torch

from course.lessons import GYM_MODULES, MODULES
from conftest import ROOT, StubAgent, stub_rollout

# CartPole steps one env, the other Gymnasium lessons N (the language lessons' rollout is text: tests/test_language.py)
VECTOR_MODULES = [m for m in GYM_MODULES if m not in ("ppo_cartpole", "ppo_action_masking")]  # (its: test_masking)
# Functions whose copies must read the same in every script that has one.
IDENTICAL = ["compute_gae", "clipped_surrogate_loss", "clipped_value_loss", "resumed_schedule",
             "rng_states", "restore_rng"]


def holding(name: str) -> list[str]:
    """The scripts that define `name`."""
    return [m for m in MODULES if hasattr(importlib.import_module(m), name)]


def module(name):
    return importlib.import_module(name)


@pytest.mark.parametrize("name", IDENTICAL)
def test_copies_of_the_core_read_the_same(name):
    texts = {}
    for script in holding(name):
        source = (ROOT / f"{script}.py").read_text()
        (node,) = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name]
        texts[script] = ast.get_source_segment(source, node)
    assert len(texts) >= 3
    first = next(iter(texts.values()))
    assert [s for s, text in texts.items() if text != first] == [], f"the copies of {name} have drifted apart"


# ---------------------------------------------------------------------------------------------------------
# GAE (paper eqs. 11-12): a terminal step, a truncated step, the bootstrap after the last step
# ---------------------------------------------------------------------------------------------------------
# Five steps: the episode TERMINATES at t=1, a new one is TRUNCATED at t=3 (its final observation worth 0.9),
# and the rollout stops mid-episode after t=4 where V(s_5) = 0.7. gamma 0.9, lambda 0.8 (gamma lambda = 0.72):
# t=4: delta = 1 + 0.9 * 0.7 - 0.1 = 1.53                       A4 = 1.53
# t=3: delta = 1 + 0.9 * 0.9 - 0.2 = 1.61 (V(final obs))         A3 = 1.61 (nothing flows back across the end)
# t=2: delta = 1 + 0.9 * 0.2 - 0.3 = 0.88                       A2 = 0.88 + 0.72 * 1.61 = 2.0392
# t=1: delta = 1 + 0.9 * 0   - 0.4 = 0.60 (terminated: V = 0)    A1 = 0.60
# t=0: delta = 1 + 0.9 * 0.4 - 0.5 = 0.86                       A0 = 0.86 + 0.72 * 0.60 = 1.292
REWARDS = np.ones(5, dtype=np.float32)
VALUES = np.array([0.5, 0.4, 0.3, 0.2, 0.1], dtype=np.float32)
DONES = np.array([0, 1, 0, 1, 0], dtype=np.float32)
FINAL_VALUES = np.array([0.0, 0.0, 0.0, 0.9, 0.0], dtype=np.float32)
ADVANTAGES = [1.292, 0.60, 2.0392, 1.61, 1.53]
# A second env with no episode end and rewards 2: A_t = delta_t + 0.72 A_{t+1}, V = 0 everywhere, last V = 1:
# delta = [2, 2, 2, 2, 2.9] -> A4 = 2.9, A3 = 4.088, A2 = 4.94336, A1 = 5.5592192, A0 = 6.002637824
NO_END_ADVANTAGES = [6.002637824, 5.5592192, 4.94336, 4.088, 2.9]


@pytest.mark.parametrize("script", holding("compute_gae"))
def test_gae_by_hand(script):
    ppo = module(script)
    advantages = ppo.compute_gae(REWARDS, VALUES, DONES, FINAL_VALUES, 0.7, 0.9, 0.8)
    np.testing.assert_allclose(advantages, ADVANTAGES, rtol=1e-6)
    # [T, N]: every env its own column, its own episode ends and its own bootstrap value.
    stack = lambda a, b: np.stack([a, b], axis=1).astype(np.float32)  # noqa: E731
    advantages = ppo.compute_gae(stack(REWARDS, 2 * REWARDS), stack(VALUES, np.zeros(5)), stack(DONES, np.zeros(5)),
                                 stack(FINAL_VALUES, np.zeros(5)), np.array([0.7, 1.0], dtype=np.float32), 0.9, 0.8)
    np.testing.assert_allclose(advantages, np.stack([ADVANTAGES, NO_END_ADVANTAGES], axis=1), rtol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# The clipped surrogate (paper eq. 7, Figure 1), on both sides of the clip
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("script", holding("clipped_surrogate_loss"))
@pytest.mark.parametrize("advantage", [2.0, -2.0])
def test_clipped_surrogate_by_hand(script, advantage):
    ratios = torch.tensor([0.5, 0.9, 1.0, 1.1, 1.5], requires_grad=True)
    loss = module(script).clipped_surrogate_loss(ratios, torch.full((5,), advantage), 0.2)
    loss.backward()
    if advantage > 0:  # min(2r, 2 clip(r, 0.8, 1.2)): flat only above 1 + eps
        per_sample, grad = [1.0, 1.8, 2.0, 2.2, 2.4], [-0.4, -0.4, -0.4, -0.4, 0.0]
    else:  # min(-2r, -2 clip(r)): flat only below 1 - eps
        per_sample, grad = [-1.6, -1.8, -2.0, -2.2, -3.0], [0.0, 0.4, 0.4, 0.4, 0.4]
    assert loss.item() == pytest.approx(-np.mean(per_sample))
    np.testing.assert_allclose(ratios.grad.numpy(), grad, atol=1e-7)


# ---------------------------------------------------------------------------------------------------------
# The clipped value loss ([37] detail 9) with old values away from 0, on both sides of the clip
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("script", holding("clipped_value_loss"))
def test_clipped_value_loss_by_hand(script):
    old = torch.tensor([2.0, 2.0, -3.0, -3.0, 5.0])
    new = torch.tensor([4.0, 4.0, -6.0, -6.0, 5.5], requires_grad=True)
    target = torch.tensor([5.0, 0.0, -8.0, 0.0, 7.0])
    loss = module(script).clipped_value_loss(new, old, target, vf_clip_coef=1.0)
    # V_clip = old + clip(new - old, -1, 1) = [3, 3, -4, -4, 5.5]: samples 0, 1 moved up past the range, 2, 3 down
    # past it, 4 stayed inside it.
    # (new - target)^2    = [1, 16, 4, 36, 2.25]
    # (V_clip - target)^2 = [4,  9, 16, 16, 2.25]
    # max                 = [4, 16, 16, 36, 2.25]: samples 0 and 2 moved V past the range toward their targets and
    # get no credit for it (the clipped term is the max, and its gradient is 0); samples 1 and 3 moved away from
    # their targets and are charged the full error.
    assert loss.item() == pytest.approx(0.5 * (4 + 16 + 16 + 36 + 2.25) / 5)
    loss.backward()
    # d/dnew of 0.5 (new - target)^2 / 5 = (new - target) / 5 where the unclipped term is the max (and inside the
    # range, where both terms are the same function of new).
    np.testing.assert_allclose(new.grad.numpy(), [0.0, 4.0 / 5, 0.0, -6.0 / 5, -1.5 / 5], rtol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# The rollout's episode ends: which rows are transitions, where V(s_{t+1}) is 0 and where it is bootstrapped
# ---------------------------------------------------------------------------------------------------------
def rollout_of(ppo, num_steps, num_envs):
    if ppo.__name__ == "ppo_pendulum_continuous":
        return ppo.Rollout(num_steps, num_envs, (3,), ())
    return ppo.Rollout(num_steps, num_envs, (3,))


@pytest.mark.parametrize("script", VECTOR_MODULES)
def test_rollout_episode_ends_by_hand(script):
    """conftest's counting env, 2 envs (seeds 0, 1: env 0 terminates after 3 steps, env 1 is truncated after 2),
    SAME_STEP autoreset as every script's make_envs, and the stub agent (V = k, the step counter)."""
    ppo = module(script)
    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.wrappers.RecordEpisodeStatistics(gym.make("CountingTest-v0"))] * 2,
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    next_obs, _ = envs.reset(seed=0)
    rollout = rollout_of(ppo, 5, 2)
    next_obs, last_value, episodes = stub_rollout(ppo, envs, next_obs, rollout)
    envs.close()
    # Every row a real transition: the counter of the observation acted on (never a final observation k=3 / k=2).
    np.testing.assert_array_equal(rollout.obs[:, :, 0], [[0, 0], [1, 1], [2, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(rollout.rewards, np.ones((5, 2)))
    np.testing.assert_array_equal(rollout.dones, [[0, 0], [0, 1], [1, 0], [0, 1], [0, 0]])
    np.testing.assert_array_equal(rollout.values, rollout.obs[:, :, 0])
    # V(s_{t+1}) at the ends: 0 where env 0 terminated, V(final obs k=2) = 2 where env 1 was truncated.
    np.testing.assert_array_equal(rollout.final_values, [[0, 0], [0, 2], [0, 0], [0, 2], [0, 0]])
    np.testing.assert_array_equal(next_obs[:, 0], [2, 1])
    np.testing.assert_array_equal(last_value, [2, 1])
    assert sorted(e[:3] for e in episodes) == [(1, 2.0, 2), (2, 3.0, 3), (3, 2.0, 2)]


# ---------------------------------------------------------------------------------------------------------
# The annealing schedule (Table 5's alpha), fresh and resumed
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("script", MODULES)
def test_annealing_fresh_and_resumed(script):
    ppo = module(script)

    def alpha(i, schedule):  # as train() computes it
        return schedule["scale"] * (1.0 - (i - 1) / schedule["num_iterations"])

    fresh = {"scale": 1.0, "num_iterations": 4}
    assert [alpha(i, fresh) for i in (1, 2, 3, 4)] == [1.0, 0.75, 0.5, 0.25]
    # Resumed after update 2 with the same length: the schedule goes on unchanged.
    assert ppo.resumed_schedule(fresh, 2, 4) == fresh
    # Resumed after update 4 for 4 more updates (8 in all): from the last update's 0.25 down toward 0, never up.
    longer = ppo.resumed_schedule(fresh, 4, 8)
    assert longer == {"scale": 0.5, "num_iterations": 8}
    assert [alpha(i, longer) for i in (5, 6, 7, 8)] == [0.25, 0.1875, 0.125, 0.0625]
    # Resumed again, after update 6, for 12 in all: on from 0.1875, down to 0 after update 12.
    again = ppo.resumed_schedule(longer, 6, 12)
    assert [round(alpha(i, again), 12) for i in (7, 9, 12)] == [0.1875, 0.1875 * 4 / 6, 0.1875 / 6]


# ---------------------------------------------------------------------------------------------------------
# Random states: what rng_states captures, restore_rng puts back, every generator
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("script", MODULES)
def test_rng_states_round_trip(script):
    import random

    def seed_all(seed):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)

    def draw():
        return random.random(), np.random.rand(), torch.rand(1).item()

    ppo = module(script)
    seed_all(5)
    states = ppo.rng_states(torch.device("cpu"))
    draws = draw()
    seed_all(6)
    ppo.restore_rng(states, torch.device("cpu"))
    assert draw() == draws
