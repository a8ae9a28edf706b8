"""Exercise: frame skip, and the max over the last two frames (lesson ppo_breakout_atari.py, its MaxAndSkip).

Write the body of MaxAndSkip.step below, then check it:

    python -m exercises check max_and_skip

An Atari game draws 60 frames a second and changes little from one to the next; deciding at every frame costs a
pass of the network per frame. The preprocessing DQN introduced (Mnih et al. 2015), which PPO's Atari code keeps
(CleanRL's, the lesson's), repeats each action for `skip` frames (4) and makes them one step: the step's reward
r_t is the sum of the frames' rewards, and the agent acts 4 times less often, with 4 times fewer steps to carry
credit back over.

The step's observation is the pixel-wise maximum of the last two frames: the Atari draws some objects only on every
other frame (flicker), and the max keeps them in view. When the episode ends on one of the frames, the step ends
there: a finished episode is not stepped again.
"""

import gymnasium as gym
import numpy as np


class MaxAndSkip(gym.Wrapper):
    """Repeat each action for `skip` frames: one step, the frames' summed reward, the max of the last two frames."""

    def __init__(self, env: gym.Env, skip: int = 4):
        super().__init__(env)
        self.skip = skip

    def step(self, action):
        """Step self.env with `action` up to self.skip times; return (observation, total reward, terminated,
        truncated, info) as gymnasium's step does: the observation the max of the last two frames (or the only
        one, where the episode ended on the first), terminated, truncated and info those of the last frame."""
        raise NotImplementedError("write MaxAndSkip.step")
