"""An environment of one's own, as a learner would write it: the worked example of the course's "Your own
environment" section, and the env tests/test_own_env.py runs a lesson on, from outside the lessons' own.

Corridor-v0: a corridor of LENGTH cells. Each episode puts a goal and the agent on two different random cells;
the agent steps left (action 0) or right (1), a wall stops it at either end. Reward -STEP_COST a step, +1 on the
step that reaches the goal, which ends the episode (terminated). The time limit, MAX_STEPS steps, is the
registration's max_episode_steps: gymnasium's TimeLimit then reports it as truncated, not terminated. The
observation is [agent cell, goal cell], each scaled to [-1, 1].

CorridorContinuous-v0: the same corridor with a Box action in [-1, 1] (its sign picks the direction), for the
lessons' refusal of an action space they cannot handle.

Importing this module registers both ids, so `--env-id tests.custom_env:Corridor-v0` works wherever the
repository root is importable: gym.make imports the module named before the ':', then makes the id after it.
"""

import gymnasium as gym
import numpy as np

LENGTH = 31
STEP_COST = 0.01  # asks for the short way; the latest arrival (return 0.01) still beats a cut-off walk (-1.0)
MAX_STEPS = 100  # over 3 times the longest walk to the goal (30 steps), yet it cuts off many a random walk


class Corridor(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, render_mode=None):
        self.render_mode = render_mode  # (the lessons' gym.make passes one: there is nothing to draw)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)  # seeds self.np_random
        self.goal = int(self.np_random.integers(LENGTH))
        self.cell = int(self.np_random.integers(LENGTH - 1))
        self.cell += self.cell >= self.goal  # skip the goal's cell: every episode takes a step at least
        return self._obs(), {}

    def step(self, action):
        self.cell = min(max(self.cell + (1 if self._right(action) else -1), 0), LENGTH - 1)
        terminated = self.cell == self.goal
        return self._obs(), 1.0 if terminated else -STEP_COST, terminated, False, {}

    def _right(self, action) -> bool:
        return action == 1

    def _obs(self) -> np.ndarray:
        # cells 0 .. LENGTH - 1 to [-1, 1]: inputs of order 1 suit a network freshly initialized for them
        return (np.array([self.cell, self.goal]) * 2.0 / (LENGTH - 1) - 1.0).astype(np.float32)


class CorridorContinuous(Corridor):
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _right(self, action) -> bool:
        return float(action[0]) > 0.0


gym.register("Corridor-v0", entry_point=Corridor, max_episode_steps=MAX_STEPS)
gym.register("CorridorContinuous-v0", entry_point=CorridorContinuous, max_episode_steps=MAX_STEPS)
