"""Making the environments, where several scripts do it word for word:

- make_env, the wrapper stack of a Discrete-action env with flat observations: ppo_cartpole.py,
  ppo_lunarlander_vec.py; checked_env (gym.make, refusing what the script cannot train), what it calls, below the
  fence of the same scripts (ppo_pendulum_continuous.py has its own, for continuous actions); record_video, below the
  fence of the three MLP lessons
- make_envs, N envs in one vector env with SAME_STEP autoreset, and worker_start_method, how its async workers
  start: every script with vector envs
- make_worker_env, an env as an async worker makes it: ppo_lunarlander_vec.py, ppo_pendulum_continuous.py (the
  pixel lessons' workers also run OpenCV on one thread: common.frames.make_worker_env)

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.envs.<name>`, `python -m tools.check_copies` fails when one
drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: Args, fail.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal

import gymnasium as gym
import numpy as np


def make_env(args: Args, video_folder: Optional[str] = None, video_trigger=None) -> gym.Env:
    """The wrapper stack. RecordEpisodeStatistics reports each finished episode in info["episode"]."""
    env = checked_env(args, render_mode="rgb_array" if video_folder else None)  # gym.make, refusing bad ids
    if video_folder:
        env = record_video(env, video_folder, video_trigger)
    return gym.wrappers.RecordEpisodeStatistics(env)


def checked_env(args: Args, render_mode: Optional[str]) -> gym.Env:
    """gym.make(--env-id), or one line and exit 2 where it cannot be made or its spaces are not this script's: a
    Discrete action space, a flat Box of observations."""
    try:
        env = gym.make(args.env_id, render_mode=render_mode)
    except (gym.error.Error, ModuleNotFoundError) as e:  # unknown id or version, no dependency, no module
        fail(f"cannot make --env-id {args.env_id!r}: {e}")
    if not isinstance(env.action_space, gym.spaces.Discrete):
        fail(f"--env-id {args.env_id} has a {type(env.action_space).__name__} action space; this script needs Discrete "
             "(for continuous actions use ppo_pendulum_continuous.py)")
    if not (isinstance(env.observation_space, gym.spaces.Box) and len(env.observation_space.shape) == 1):
        fail(f"--env-id {args.env_id}: its observations are {env.observation_space}; this script needs a flat Box "
             "(for Atari's frames use ppo_breakout_atari.py)")
    if env.observation_space.dtype != np.float32:  # (MuJoCo's float64, say: the network's weights are float32)
        space = env.observation_space
        float32_space = gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), dtype=np.float32)
        env = gym.wrappers.TransformObservation(env, lambda obs: obs.astype(np.float32), float32_space)
    return env


def record_video(env: gym.Env, video_folder: str, video_trigger) -> gym.Env:
    """env, its episodes recorded to MP4 in video_folder where video_trigger(episode) is true. The frames are drawn
    off-screen (rgb_array): SDL is told not to look for a display, which it would complain of, and MuJoCo to draw
    through EGL (its default, GLFW, needs one)."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("MUJOCO_GL", "egl")
    return gym.wrappers.RecordVideo(env, video_folder, episode_trigger=video_trigger)


def make_envs(args: Args) -> gym.vector.VectorEnv:
    """N copies of make_env in one vector env. An env that ends is reset by the vector env: by default (gymnasium
    >= 1.0) on the NEXT step, a "transition" that must not be trained on; SAME_STEP resets it within the step
    that ended it, so every step is a real transition, the last observation kept in info["final_obs"]."""
    thunk = functools.partial(make_worker_env, args)
    if args.vectorization_mode == "sync":
        return gym.vector.SyncVectorEnv([thunk] * args.num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    return gym.vector.AsyncVectorEnv([thunk] * args.num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
                                     context=worker_start_method())


def worker_start_method() -> str:
    """How an AsyncVectorEnv starts its workers: from a forkserver, not as forks of this process. torch runs a
    pool of threads here, and a fork copies their locks but not the threads, so a worker could wait forever on a
    lock that a thread held. The forkserver is a fresh process that has run none of them; each worker is sent its
    env function pickled, so that is a plain module-level function of args (make_worker_env), which any pickler
    takes."""
    start_method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"  # Windows
    # Each worker runs this script's imports again (the script is its __main__): the forkserver imports the slow
    # ones once, before it forks any worker, so that each worker finds them loaded (2 s of torch each, otherwise).
    multiprocessing.set_forkserver_preload(["torch", "torch.utils.tensorboard", "gymnasium", "tyro", "tqdm"])
    return start_method


def make_worker_env(args: Args) -> gym.Env:
    """make_env, as an async worker runs it; in this process, for a SyncVectorEnv's envs and the one that an
    AsyncVectorEnv makes here to read the spaces off, it is make_env alone."""
    if multiprocessing.parent_process() is not None:
        # An async worker: Ctrl-C reaches the whole process group, but it is the trainer's to handle
        # (it finishes the update, saves and closes us), so the worker ignores it.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return make_env(args)
