"""Exercise: the frame stack (lesson ppo_breakout_atari.py, its FrameStack).

Write the bodies of FrameStack.reset and FrameStack.step below, then check them:

    python -m exercises check frame_stack

One frame shows where things are, not where they are going: Breakout's ball has a velocity only in the change from
frame to frame, and pi(a|s_t) needs it to move the paddle to where the ball will be. So the state s_t the network
sees is the last k frames (4), stacked on a new first axis: [k, 84, 84], the oldest first, the newest last. After a
reset there is only one frame: it fills all k places, so that s_0 looks like a still picture, not a frame beside
k - 1 black ones. A new episode never sees the last one's frames.
"""

import collections

import gymnasium as gym
import numpy as np


class FrameStack(gym.Wrapper):
    """The observation s_t: the last k frames, stacked on a new first axis ([k, *frame's shape], the frame's dtype)."""

    def __init__(self, env: gym.Env, k: int = 4):
        super().__init__(env)
        self.frames = collections.deque(maxlen=k)  # the last k frames, the oldest first: append drops the oldest
        space = env.observation_space
        self.observation_space = gym.spaces.Box(0, 255, (k, *space.shape), space.dtype)

    def reset(self, **kwargs):
        """Reset self.env; return (the stacked observation, info)."""
        raise NotImplementedError("write FrameStack.reset")

    def step(self, action):
        """Step self.env; return (the stacked observation, reward, terminated, truncated, info)."""
        raise NotImplementedError("write FrameStack.step")
