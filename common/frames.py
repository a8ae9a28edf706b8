"""What the lessons from frames, ppo_breakout_atari.py and ppo_mario_cnn.py, share word for word besides their
wrappers (common/wrappers.py): Rollout, whose frames stay uint8, and make_worker_env, whose async workers run
OpenCV on one thread.

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.frames.<name>`, `python -m tools.check_copies` fails when one
drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: Args, make_env.
"""

from __future__ import annotations

import multiprocessing
import signal

import cv2
import numpy as np


def make_worker_env(args: Args) -> gym.Env:
    """make_env, as an async worker runs it; in this process, for a SyncVectorEnv's envs and the one that an
    AsyncVectorEnv makes here to read the spaces off, it is make_env alone."""
    if multiprocessing.parent_process() is not None:
        # An async worker: Ctrl-C reaches the whole process group, but it is the trainer's to handle
        # (it finishes the update, saves and closes us), so the worker ignores it.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        cv2.setNumThreads(1)  # one worker per env already: OpenCV's own threads would only compete
    return make_env(args)


class Rollout:
    """What a rollout of T steps of N envs stores, one NumPy array [T, N] per quantity (obs: [T, N, 4, 84, 84]),
    turned into tensors once per update."""

    def __init__(self, num_steps: int, num_envs: int, obs_shape: tuple):
        self.obs = np.zeros((num_steps, num_envs) + obs_shape, dtype=np.uint8)  # frames stay uint8
        self.actions = np.zeros((num_steps, num_envs), dtype=np.int64)
        self.logprobs = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.rewards = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.dones = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.values = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.final_values = np.zeros((num_steps, num_envs), dtype=np.float32)  # V(s_{t+1}) where an episode ended
