"""PPO on Atari Breakout from pixels: the Nature CNN, the Atari preprocessing stack, parallel workers, torchrun.

What this lesson teaches
    Learning from the screen: frames go through DQN's preprocessing as openai/baselines' atari_wrappers.py
    implements it (no-op starts, 4-frame skip with a max over the last two, a lost life ends the training episode,
    grayscale 84 x 84, sign-clipped rewards, a stack of the last 4 frames), with two of baselines' own: FIRE pressed
    on reset (FIRE alone here; baselines presses action 2 after it: FireReset says why), and the game carried on
    after a lost life rather than restarted. One convolutional trunk (the Nature DQN CNN) feeds both the policy head
    and the value head, trained with the combined loss L^{CLIP+VF+S} (eq. 9) and the paper's Atari hyperparameters
    (Table 5) but for K = 4 epochs and c1 = 0.5 (baselines' and CleanRL's), the learning rate annealed to 0 and the
    clip range held at 0.1 (CleanRL's; Table 5 anneals it too: `--anneal-clip`). The envs run in worker processes;
    the same file runs on several processes or machines under torchrun, each rank stepping its own envs and the
    gradients averaged across ranks.

What you should see
    The score at the published 10M steps = 40M frames (`--total-timesteps 10000000`, seeds 1 and 2, 4.5 and 4.1 h
    of training across sessions, bf16 on 2 CPU cores): the last 100 whole games 101 / 109 at 10M frames, 239 /
    246 at 20M, 416 / 424 at 40M; with `--anneal-clip` 81 / 110, 205 / 214, 350 / 370 (SB3's agent 81, 261,
    391; CleanRL 415). At 2M frames (`--total-timesteps 500000 --no-cuda`, 14 min a seed; the mean of the last 20
    whole games, 2 seeds): 1.4 at 50k steps, 4.4 at 100k, 10.1 at 200k, 12.3 at 300k, 13.4 at 500k
    (`--anneal-clip`: 13.7). The script's default 2.5M steps = 10M frames, run with `--anneal-clip` when it was the
    default: 27 at 1M steps, 52 at 2M, 49 at the end (39-60; 59 min a seed).
    A healthy update of the 2M-frame runs, as logged (5th-95th percentile of each seed's 488 updates, the lowest
    and the highest of 2 seeds; the median of their medians):
    approx_kl 0.00025-0.0039 (median 0.0019; 0.0014 in the second half, where the learning rate is below half its
    start), clipfrac 0-0.14 (median 0.061; 0.045 in the second half, as the learning rate falls toward 0),
    explained_variance 0.41-0.87, entropy from ln 4 = 1.39 down to 0.66-0.96 in the second half, value_loss
    0.011-0.046 (on sign-clipped rewards).
    The defaults: Table 5's 8 actors x 128 steps, learning rate 2.5e-4 annealed, epsilon 0.1 (held), 256-sample
    minibatches, gamma 0.99, lambda 0.95 and c2 0.01; CleanRL's ppo_atari.py's 4 epochs (Table 5: 3), c1 0.5
    (Table 5: 1), value clipping at 0.1 and the 0.5 gradient norm. The commands behind every figure, and the
    runs they read: benchmarks/README.md, "What a healthy run looks like".

Try this (mean of the last 100 whole games at 40M frames, last 20 at 2M on 2 CPU cores; 1-2 seeds: too few to be sure)
    python ppo_breakout_atari.py --total-timesteps 10000000 --anneal-clip  # 360.0; the default 419.9
    python ppo_breakout_atari.py --total-timesteps 10000000 --anneal-clip --precision fp32  # 349.1; bf16 350.2 (seed 1)
    python ppo_breakout_atari.py --total-timesteps 500000 --anneal-clip --precision fp32  # 12.1; bf16 13.7

Differs from ppo_lunarlander_vec.py in:
    - the Atari wrappers (copied from common/wrappers.py); observations stay uint8 until the network
    - Agent: a CNN trunk shared by the actor and critic heads (one forward pass for both; c1 now matters)
    - `--anneal-clip`: epsilon annealed like the learning rate (Table 5's epsilon = 0.1 alpha); off by default
    - `--precision`: the CNN computes in bfloat16 where the hardware does so natively (on 2 CPU cores the
      update takes 61% of fp32's time with AMX, 69% on an AMD EPYC without it: benchmarks/README.md)
    - torch.distributed: `setup_distributed`, gradients all-reduced, only rank 0 logs, evaluates and saves
    - episodic returns are whole games (all lives, unclipped), recorded below the life and reward wrappers;
      evaluation samples from pi (on a deterministic emulator, argmax can repeat one loop until the time limit)
    - `--vectorization-mode async` by default: with cores to spare, the 8 emulators run in parallel (on 2
      cores sync is the faster: README's speed table)

Deliberately left out, and the script that has each:
    - continuous actions, observation/reward normalization     -> ppo_pendulum_continuous.py
    - the paper's adaptive KL penalty (eq. 8)                  -> ppo_pendulum_continuous.py
    - separate actor and critic CNNs, reward shaping           -> ppo_mario_cnn.py

Usage
    python ppo_breakout_atari.py                              # train 10M frames (2.5M steps); CUDA if present
    python ppo_breakout_atari.py --total-timesteps 500000 --no-cuda    # 2M frames on the CPU
    torchrun --nproc_per_node 2 ppo_breakout_atari.py         # 2 processes, each with its own 8 envs (and GPU)
    torchrun --nnodes 2 --node_rank R --nproc_per_node 1 --master_addr HOST --master_port 29500 ppo_breakout_atari.py
    python ppo_breakout_atari.py --resume runs/<run>/checkpoint.pt --total-timesteps 5000000
    python ppo_breakout_atari.py --play runs/<run>/checkpoint.pt --episodes 5 --capture-video
    tensorboard --logdir runs

References
    [PPO] Schulman et al. 2017, Proximal Policy Optimization Algorithms, arXiv:1707.06347 (eqs. 7, 9, 11, 12;
          Table 5: the Atari hyperparameters)
    [DQN] Mnih et al. 2015, Human-level control through deep reinforcement learning, Nature 518 (the CNN and
          the preprocessing)
    [GAE] Schulman et al. 2016, High-Dimensional Continuous Control Using GAE, arXiv:1506.02438
    [TL]  Pardo et al. 2018, Time Limits in Reinforcement Learning, arXiv:1712.00378
    [37]  Huang et al. 2022, The 37 Implementation Details of Proximal Policy Optimization (ICLR blog track),
          the 9 Atari details
"""

import ast
import collections
import contextlib
import copy
import dataclasses
import functools
import inspect
import io
import multiprocessing
import os
import random
import signal
import sys
import time
from dataclasses import dataclass
from typing import Literal, Optional

import ale_py
import cv2
import gymnasium as gym
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
import tqdm
import tyro
from torch.utils.tensorboard import SummaryWriter

# A "# Copied from common.<module>.<Name>" line marks a checked copy: the original is <Name> in common/<module>.py,
# shared word for word with the other scripts that need it; `python -m common.check_copies` fails when a copy
# drifts from it, and `--fix` rewrites the copy.

SCRIPT = os.path.basename(__file__)
gym.register_envs(ale_py)  # the ALE/... and ...NoFrameskip-v4 ids
VIDEO_STEPS = 2_700  # a recorded game's first 3 minutes at most (2,700 agent steps at 15 fps; 270 MB of frames)


@dataclass
class Args:
    # --- environment ---
    env_id: str = "BreakoutNoFrameskip-v4"
    """an Atari game of the ALE that does not skip frames itself (the ...NoFrameskip-v4 ids: MaxAndSkip does
    the skipping); v4 has no sticky actions, as in the paper and in CleanRL's and SB3's Atari results"""
    total_timesteps: int = 2_500_000  # 10M frames
    """agent steps to train for, summed over all environments and ranks (one step = 4 frames)"""
    num_envs: int = 8  # Table 5's 8 actors
    """N, environments per rank; each rollout holds N x T transitions"""
    vectorization_mode: Literal["sync", "async"] = "async"
    """sync: step the N envs one after another in this process; async: one process per env, stepped in parallel (pays
    off when an env step costs more than sending its data between processes, and there are cores to run them on)"""

    # --- PPO hyperparameters (same order in every script) ---
    learning_rate: float = 2.5e-4
    """the Adam step size at the start of training (Table 5: 2.5e-4 x alpha, alpha annealed from 1 to 0)"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0, as the paper does for Atari (Table 5's alpha)"""
    num_steps: int = 128  # Table 5
    """T, the horizon: steps each env runs per rollout, between two updates (paper: 128 to 2048)"""
    gamma: float = 0.99  # Table 5: about 100 steps ahead
    """gamma, the discount of future rewards: the agent looks about 1/(1-gamma) steps ahead (usual 0.9-0.999)"""
    gae_lambda: float = 0.95  # Table 5
    """lambda of GAE: 0 gives the one-step TD advantage (low variance, biased by V), 1 the Monte-Carlo return minus V
    (unbiased, high variance); usual 0.8 to 0.98"""
    minibatch_size: int = 256  # Table 5's 32 x 8: 4 minibatches of the 1024-sample rollout
    """M, samples per gradient step: each epoch splits the N x T batch into N*T/M shuffled minibatches"""
    update_epochs: int = 4  # Table 5: 3; CleanRL's and baselines' 4, as in the results compared with
    """K, passes over each rollout (paper: 3 to 15); more reuse of the data, more risk of moving too far"""
    norm_adv: bool = True
    """normalize advantages to mean 0, std 1 in each minibatch, so the step size does not depend on reward scale (under
    torchrun, each rank over its own minibatch)"""
    clip_coef: float = 0.1  # Table 5
    """epsilon, the clip range of the probability ratio (eq. 7): once r_t is outside [1 - epsilon, 1 + epsilon], the
    objective stops rewarding a further move (usual 0.1-0.3)"""
    anneal_clip: bool = False
    """anneal epsilon linearly to 0 with the learning rate, as the paper does (Table 5: epsilon = 0.1 alpha, alpha
    from 1 to 0); off (the default), it stays at --clip-coef as in CleanRL's ppo_atari.py. At 40M frames, the last
    100 games: held 416.2 and 423.6, annealed 350.2 and 369.8 (seeds 1 and 2: too few for an interval;
    benchmarks/README.md)"""
    clip_vloss: bool = True
    """clip the value loss too: once V is more than --vf-clip-coef away from the V that collected the data, the loss
    stops rewarding a further move"""
    vf_clip_coef: float = 0.1  # sign-clipped rewards keep returns small; CleanRL's is epsilon, 0.1
    """the value clip range (--clip-vloss), in units of the value targets; losses/vf_clipfrac logs how often V moved
    past it"""
    ent_coef: float = 0.01  # Table 5
    """c2, weight of the entropy bonus S (eq. 9): rewards keeping pi spread out, so it keeps exploring (usual 0-0.01)"""
    vf_coef: float = 0.5  # CleanRL's and baselines' 0.5; Table 5: 1
    """c1, weight of the value loss in eq. 9's sum, here of the halved squared error (see the loss in train()); usual
    0.5 to 1"""
    max_grad_norm: float = 0.5
    """clip the global norm of the gradient to this, so one bad minibatch cannot make a huge step"""
    target_kl: Optional[float] = None
    """stop the update's epochs early once the approximate KL[pi_old || pi] of an epoch's last minibatch exceeds this
    (usual 0.01-0.05; unset: always run all K epochs)"""
    hidden_size: int = 512
    """width of the fully connected layer after the convolutions (Nature CNN: 512)"""

    # --- running the script (not PPO) ---
    exp_name: str = SCRIPT[: -len(".py")]
    """name of the experiment: runs are saved in runs/<env-id>__<exp-name>__<seed>__<unix-time>/"""
    seed: int = 1
    """seed of Python, NumPy, torch and the environments: the same seed gives the same run on the CPU (under
    torchrun, rank r uses seed + r for its sampling and seed + r N + i for its env i)"""
    torch_deterministic: bool = True
    """let torch use deterministic algorithms only (torch.use_deterministic_algorithms; on CUDA also cuDNN's
    deterministic convolutions and cuBLAS's fixed workspace): the same seed then repeats a run on the same
    device, the CPU or a GPU; --no-torch-deterministic lets cuDNN pick its fastest algorithms"""
    cuda: bool = True
    """run on CUDA when a GPU is available (--no-cuda: on the CPU even where one is)"""
    precision: Literal["auto", "bf16", "fp32"] = "auto"
    """number format of the CNN trunk's arithmetic. bf16: its convolutions and linear layer compute in
    bfloat16 under torch.autocast (weights, heads, losses and Adam stay float32); fp32: float32 throughout;
    auto: bf16 on a CPU with native bfloat16 arithmetic (AVX512-BF16 or AMX), where the update runs faster;
    fp32 elsewhere, a GPU included, where bf16 was faster in one of the GPU check's three runs and started
    Breakout's ratio r_t 1.1e-3 from 1 (benchmarks/README.md, the GPU check); under torchrun, rank 0's machine
    decides auto for every rank"""
    capture_video: bool = False
    """record the evaluation episodes (whole games) to MP4 under the run folder's videos/eval-<step>/ (a resumed
    run: videos/resume-*/eval-<step>/; --play: videos/play-*/)"""
    checkpoint_every: int = 10
    """save runs/<run>/checkpoint.pt every this many updates, and always at the end (0: only at the end)"""
    resume: Optional[str] = None
    """continue the run saved in this checkpoint. Kept: the weights, optimizer, every rank's RNG states, step
    count and annealing. Started afresh: the games (an emulator's state is not saved), so a resumed run is not
    the very run that never stopped. Flags not given take the checkpoint's values; a larger --total-timesteps
    trains longer, the annealed learning rate and clip range then falling from their last values to 0 over the
    added updates, never up. --num-envs, --num-steps, --learning-rate, --anneal-lr, --anneal-clip (and with it
    --clip-coef) and the number of torchrun ranks cannot change. Under torchrun, every node reads this path: a
    shared folder, or the same checkpoint copied to each"""
    play: Optional[str] = None
    """do not train: play the policy saved in this checkpoint for --episodes games, print the scores"""
    episodes: int = 10
    """how many games --play runs"""
    eval_every: int = 100
    """evaluate the policy every this many updates, and after the last one (0: never during training)"""
    eval_episodes: int = 3
    """games per evaluation (each up to 27k steps); their mean score is logged as eval/mean_return"""

    # --- derived at runtime (not command-line flags) ---
    batch_size: tyro.conf.Suppress[int] = 0
    """samples per rollout and rank: num_envs * num_steps"""
    world_size: tyro.conf.Suppress[int] = 1
    """processes training together (torchrun's WORLD_SIZE; 1 without torchrun)"""
    num_iterations: tyro.conf.Suppress[int] = 0
    """number of rollout + update cycles: total_timesteps // (batch_size * world_size)"""


# ---------------------------------------------------------------------------------------------------------
# The environment
# ---------------------------------------------------------------------------------------------------------


# Copied from common.wrappers.NoopReset
class NoopReset(gym.Wrapper):
    """On reset, take a random number (1 to noop_max) of NOOP actions, so that episodes start from different
    states: the emulator is deterministic, and a policy could otherwise memorize one opening. The count is
    drawn from the env's own np_random, as gymnasium's AtariPreprocessing draws it, so a seeded reset
    repeats."""

    def __init__(self, env: gym.Env, noop_max: int = 30):
        super().__init__(env)
        self.noop_max = noop_max
        assert env.unwrapped.get_action_meanings()[0] == "NOOP", "action 0 must be NOOP"

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        for _ in range(self.unwrapped.np_random.integers(1, self.noop_max + 1)):
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # a game that ends while doing nothing: start it again
                obs, info = self.env.reset()
        return obs, info


# Copied from common.wrappers.MaxAndSkip
class MaxAndSkip(gym.Wrapper):
    """Repeat each action for `skip` frames and sum their rewards; return the pixel-wise max of the last two
    frames. The agent decides `skip` times less often, and an object that the game draws on only one of the
    last two frames (a flickering sprite) still shows in the observation.

    Differs from gymnasium's MaxAndSkipObservation, and baselines' and SB3's MaxAndSkipEnv, only when the
    episode ends before the last frame of a skip: those max two buffers still holding frames of an earlier
    step, this one the last two frames actually seen (or the one, if the episode ended on the first)."""

    def __init__(self, env: gym.Env, skip: int = 4):
        super().__init__(env)
        self.skip = skip

    def step(self, action):
        total_reward, previous, obs = 0.0, None, None
        for _ in range(self.skip):
            previous, (obs, reward, terminated, truncated, info) = obs, self.env.step(action)
            total_reward += float(reward)
            if terminated or truncated:
                break
        frame = obs if previous is None else np.maximum(previous, obs)
        return frame, total_reward, terminated, truncated, info


# Copied from common.wrappers.EpisodicLife
class EpisodicLife(gym.Wrapper):
    """Losing a life ends the training episode (terminated=True, so no value is bootstrapped past a death),
    but not the game: the reset that follows continues the game where it is, and only a game over resets
    the emulator. The agent learns that dying is final, yet still sees the later, harder parts of the game.

    Differs from gymnasium's AtariPreprocessing(terminal_on_life_loss=True), whose reset after a lost life
    restarts the game from its beginning. Wrap the env in RecordEpisodeStatistics BELOW this wrapper: its
    episodes are then whole games (all lives), the score people report."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.lives, self.game_over = 0, True

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = self.unwrapped.ale.lives()
        if 0 < lives < self.lives:
            terminated = True  # a life lost: the end of this training episode
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs):
        if self.game_over:
            obs, info = self.env.reset(**kwargs)
        else:  # after a lost life: one NOOP step to carry on from the current state
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.game_over, self.lives = False, self.unwrapped.ale.lives()
        return obs, info


# Copied from common.wrappers.FireReset
class FireReset(gym.Wrapper):
    """Press FIRE on every reset, in games that wait for it (Breakout: it launches the ball), so that no
    episode starts with the game waiting for the policy to press it. With EpisodicLife below, that includes
    the reset after each lost life.

    Differs from baselines' FireResetEnv (baselines/common/atari_wrappers.py), and so from SB3's, which CleanRL's
    ppo_atari.py uses: those press FIRE and then action 2 (RIGHT in Breakout), each followed by a reset if the
    game ended; baselines' source gives no reason for the second press. Here the policy chooses that step
    itself: an episode starts one agent step (4 frames) earlier and, at a game's start, with Breakout's paddle
    12 pixels left of where that RIGHT moves it. With SB3's FireResetEnv in its place, make_env's frames,
    rewards, ends and lives are SB3's AtariWrapper's step for step, but for MaxAndSkip's frame at a game over
    (tests/test_atari_wrappers.py). Kept because every committed Breakout run, and agents/breakout.pt, was
    trained with FIRE alone."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        assert env.unwrapped.get_action_meanings()[1] == "FIRE", "action 1 must be FIRE"

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        obs, _, terminated, truncated, info = self.env.step(1)
        if terminated or truncated:
            obs, info = self.env.reset(**kwargs)
        return obs, info


# Copied from common.wrappers.GrayscaleResize
class GrayscaleResize(gym.ObservationWrapper):
    """RGB frame -> grayscale -> size x size (84 x 84), uint8, as DQN preprocessed Atari frames: 84 x 84 =
    7,056 numbers per frame, 14x fewer than an Atari screen (210 x 160 x 3), 26x fewer than the NES's
    (240 x 256 x 3). OpenCV's RGB-to-gray weights (0.299, 0.587, 0.114) give exactly the ALE's own
    grayscale screen, the one gymnasium's AtariPreprocessing reads; INTER_AREA averages the pixels each output
    pixel covers, as AtariPreprocessing resizes."""

    def __init__(self, env: gym.Env, size: int = 84):
        super().__init__(env)
        self.size = size
        self.observation_space = gym.spaces.Box(0, 255, (size, size), np.uint8)

    def observation(self, obs):
        gray = cv2.cvtColor(obs, cv2.COLOR_RGB2GRAY)
        return cv2.resize(gray, (self.size, self.size), interpolation=cv2.INTER_AREA)


# Copied from common.wrappers.ClipReward
class ClipReward(gym.RewardWrapper):
    """Reward -> its sign (-1, 0 or +1), as in DQN and the PPO paper's Atari runs: one learning rate and one
    value scale then suit every game, whatever its points. Differs from gymnasium's ClipReward(-1, 1) for
    rewards strictly between -1 and 1 (0.5 stays 0.5 there, becomes 1 here); Atari scores are integers."""

    def reward(self, reward):
        return float(np.sign(reward))


# Copied from common.wrappers.FrameStack
class FrameStack(gym.Wrapper):
    """Observation = the last k frames, stacked on a new first axis ([k, 84, 84], uint8): one frame shows
    where things are but not which way they move, a stack of frames does. After a reset, the first frame fills
    all k slots (as gymnasium's FrameStackObservation pads by default)."""

    def __init__(self, env: gym.Env, k: int = 4):
        super().__init__(env)
        self.frames = collections.deque(maxlen=k)
        space = env.observation_space
        self.observation_space = gym.spaces.Box(0, 255, (k, *space.shape), space.dtype)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.frames.extend([obs] * self.frames.maxlen)
        return np.stack(self.frames), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.frames.append(obs)
        return np.stack(self.frames), reward, terminated, truncated, info


def make_env(args: Args, video_folder: Optional[str] = None, video_trigger=None) -> gym.Env:
    """The wrapper stack, innermost first. RecordEpisodeStatistics sits right on the emulator, below the life and
    reward wrappers: what it reports is the real game, all lives, the unclipped score (episode lengths are in
    frames). RecordVideo sits above the frame skip, still below the life wrapper: a video is a whole game (at
    most its first VIDEO_STEPS agent steps), one frame per agent step, played at 15 fps (60 / 4)."""
    try:
        env = gym.make(args.env_id, render_mode="rgb_array" if video_folder else None)
    except gym.error.Error as e:  # unknown id, unknown version, missing optional dependency
        fail(f"cannot make --env-id {args.env_id!r}: {e}")
    if not isinstance(env.unwrapped, ale_py.AtariEnv):
        fail(f"--env-id {args.env_id} is not an Atari game; this script needs one of the ALE, e.g. "
             "BreakoutNoFrameskip-v4 (for flat observations use ppo_lunarlander_vec.py)")
    if env.unwrapped._frameskip != 1:
        fail(f"--env-id {args.env_id} skips frames itself; this script skips them with MaxAndSkip: use a "
             "NoFrameskip-v4 id (e.g. BreakoutNoFrameskip-v4)")
    env = gym.wrappers.RecordEpisodeStatistics(env)
    env = NoopReset(env, noop_max=30)
    env = MaxAndSkip(env, skip=4)
    if video_folder:  # (RecordVideo holds a video's frames in memory until it writes them: hence the cap)
        env = gym.wrappers.RecordVideo(env, video_folder, episode_trigger=video_trigger, video_length=VIDEO_STEPS,
                                       fps=15)
    env = EpisodicLife(env)
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireReset(env)
    env = GrayscaleResize(env, size=84)
    env = ClipReward(env)
    return FrameStack(env, k=4)


# Copied from common.envs.make_envs
def make_envs(args: Args) -> gym.vector.VectorEnv:
    """N copies of make_env in one vector env (train() has already made one, for the Agent, so the env is known
    to work), stepped one after another in this process (sync) or each in a worker process of its own (async).

    Autoreset: when one of the N envs ends, the vector env resets it by itself. Gymnasium >= 1.0 does that on
    the NEXT step by default (that step's action is ignored and its "transition" is a reset, which must not
    be trained on). SAME_STEP instead resets it within the step that ended it: the observation returned is
    already the new episode's first, and the one the episode ended on is in info["final_obs"]. Every step
    of the rollout is then a real transition, and truncated episodes can bootstrap from V(final obs).
    """
    thunk = functools.partial(make_worker_env, args)
    if args.vectorization_mode == "sync":
        return gym.vector.SyncVectorEnv([thunk] * args.num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    return gym.vector.AsyncVectorEnv([thunk] * args.num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
                                     context=worker_start_method())


# ---------------------------------------------------------------------------------------------------------
# The agent: the policy and the value function
# ---------------------------------------------------------------------------------------------------------


# Copied from common.ppo.layer_init
def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Module:
    """Orthogonal weights with gain `std`, zero biases ([37] detail 2). sqrt(2) is the ReLU gain (tanh's is 5/3);
    the reference implementations (openai/baselines, CleanRL) give it to their hidden layers, ReLU and tanh alike."""
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """The Nature DQN CNN as a trunk shared by a policy head and a value head ([37] Atari detail 8).

    Input: 4 stacked 84 x 84 grayscale frames, uint8, scaled to [0, 1] inside the network (so the rollout and
    the shared memory the async workers hand their observations over in hold 4x fewer bytes than float32 frames
    would, [37] Atari detail 9). Conv 32 8x8 stride 4,
    conv 64 4x4 stride 2, conv 64 3x3 stride 1, a fully connected layer of 512, ReLUs. Sharing the trunk halves
    the forward passes; the price is that the value loss shapes the policy's features too, weighted by c1.
    """

    def __init__(self, env: gym.Env, hidden_size: int, bf16: bool = False):
        super().__init__()
        self.bf16 = bf16
        channels = env.observation_space.shape[0]
        self.trunk = nn.Sequential(
            layer_init(nn.Conv2d(channels, 32, 8, stride=4)), nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(),
            nn.Flatten(), layer_init(nn.Linear(64 * 7 * 7, hidden_size)), nn.ReLU(),
        )
        # A policy head initialized with std 0.01 starts with near-uniform action probabilities: maximal
        # exploration at first, and no action is preferred by accident of the initialization ([37] detail 2).
        self.actor = layer_init(nn.Linear(hidden_size, env.action_space.n), std=0.01)
        self.critic = layer_init(nn.Linear(hidden_size, 1), std=1.0)
        # Channels-last (NHWC) weights and inputs: oneDNN's CPU convolutions run faster on them than on NCHW.
        self.to(memory_format=torch.channels_last)

    def inputs(self, obs: torch.Tensor) -> torch.Tensor:
        """uint8 frame stacks [B, 4, 84, 84] as the trunk reads them: scaled to [0, 1], channels-last, and in
        bfloat16 under --precision bf16 (the type autocast would cast them to for the first convolution). The
        update converts the whole rollout once, rather than each of its minibatches in every epoch again."""
        x = obs.contiguous(memory_format=torch.channels_last) / 255.0
        return x.to(torch.bfloat16) if self.bf16 else x

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The trunk's 512 features of a batch of frame stacks [B, 4, 84, 84]: uint8 as the env gives them
        (converted here), or already converted by inputs()."""
        if x.dtype == torch.uint8:
            x = self.inputs(x)
        # Mixed precision (--precision bf16): the trunk, nearly all of the arithmetic, computes in bfloat16
        # (float32's 8 exponent bits, 7 of its 23 mantissa bits), which a CPU with AMX runs faster than float32.
        # Its features come back as float32 for the heads, the log-softmax and the losses. The rollout and the
        # update run the same bf16 network, so the ratio r_t starts at 1 up to rounding: on the CPU to ~1e-5,
        # on a GPU to ~1e-3, whose kernels for the rollout's N samples and the update's minibatches round
        # differently (README: the GPU check).
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            hidden = self.trunk(x)
        return hidden.float()

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.features(x)).squeeze(-1)

    def get_action_and_value(self, x: torch.Tensor, action: Optional[torch.Tensor] = None, greedy: bool = False):
        """pi(.|x) and V(x), from one pass through the trunk. Samples an action (the most probable one if
        greedy) unless `action` is given.

        Returns the action, log pi(action|x), the entropy H(pi(.|x)) and V(x). The categorical distribution is
        written out rather than taken from torch.distributions.Categorical: it is four lines.
        """
        hidden = self.features(x)
        log_pi = self.actor(hidden).log_softmax(-1)  # log pi(a|x) for every action a
        pi = log_pi.exp()
        if action is None:
            action = log_pi.argmax(-1) if greedy else torch.multinomial(pi, 1).squeeze(-1)
        log_prob = log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        entropy = -(pi * log_pi).sum(-1)  # H = -sum_a pi(a|x) log pi(a|x)
        return action, log_prob, entropy, self.critic(hidden).squeeze(-1)


# ---------------------------------------------------------------------------------------------------------
# PPO: the rollout, the advantages (GAE) and the losses
# ---------------------------------------------------------------------------------------------------------


# Copied from common.frames.Rollout
class Rollout:
    """One rollout in NumPy, one [T, N] array per quantity (obs: [T, N, 4, 84, 84]).

    The environments speak NumPy and the network torch: a row write here is many times cheaper than one into a
    tensor, and the whole rollout is turned into tensors once per update."""

    def __init__(self, num_steps: int, num_envs: int, obs_shape: tuple):
        self.obs = np.zeros((num_steps, num_envs) + obs_shape, dtype=np.uint8)  # frames stay uint8
        self.actions = np.zeros((num_steps, num_envs), dtype=np.int64)
        self.logprobs = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.rewards = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.dones = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.values = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.final_values = np.zeros((num_steps, num_envs), dtype=np.float32)  # V(s_{t+1}) where an episode ended


def collect_rollout(envs: gym.vector.VectorEnv, agent: Agent, next_obs: np.ndarray, rollout: Rollout,
                    should_stop=lambda: False):
    """Run the current policy pi_old for T steps in the N envs, filling `rollout`.

    Returns the observation to continue from, V of it (last_value, for GAE) and the episodes that ended, as
    (step, return, length) tuples.
    """
    device = next(agent.parameters()).device
    episodes = []
    for step in range(len(rollout.obs)):
        if should_stop():  # Ctrl-C (Stopper): this rollout is given up
            break
        rollout.obs[step] = next_obs
        with torch.inference_mode():  # acting needs no gradients: they are recomputed in the update
            action, logprob, _, value = agent.get_action_and_value(torch.as_tensor(next_obs, device=device))
        rollout.actions[step], rollout.logprobs[step], rollout.values[step] = (
            action.cpu().numpy(), logprob.cpu().numpy(), value.cpu().numpy())

        next_obs, rollout.rewards[step], terminated, truncated, info = envs.step(rollout.actions[step])
        rollout.dones[step] = terminated | truncated
        rollout.final_values[step] = 0.0  # terminated: the MDP ended, there is no future reward, V(s_{t+1}) = 0
        if "final_obs" in info:
            # Some envs ended at this step and were already reset (SAME_STEP): next_obs holds the first
            # observation of their new episode, and info["final_obs"] the one they ended on.
            # A truncated episode was cut by a time limit in a state that is not terminal, and the agent would
            # have collected more reward: bootstrap from V(final observation) ([TL]). Termination wins:
            # gymnasium's TimeLimit also sets truncated on the limit step when the episode terminated there,
            # and then the MDP ended (V = 0) whatever the clock says.
            bootstrap = truncated & ~terminated
            if bootstrap.any():
                final_obs = np.stack(info["final_obs"][bootstrap])
                with torch.inference_mode():
                    rollout.final_values[step, bootstrap] = agent.get_value(
                        torch.as_tensor(final_obs, device=device)).cpu().numpy()
            if "episode" in info["final_info"]:  # a lost life ends an episode but not the game: no score yet
                stats = info["final_info"]["episode"]
                for i in np.flatnonzero(info["final_info"]["_episode"]):
                    episodes.append((step, float(stats["r"][i]), int(stats["l"][i])))
    with torch.inference_mode():
        last_value = agent.get_value(torch.as_tensor(next_obs, device=device)).cpu().numpy()
    return next_obs, last_value, episodes


# Copied from common.ppo.compute_gae
def compute_gae(rewards, values, dones, final_values, last_value, gamma: float, gae_lambda: float) -> np.ndarray:
    """Generalized Advantage Estimation over a rollout, backwards in time. NumPy arrays of shape [T] (or [T, N]).

    dones[t] = 1 where an episode ended at step t, by termination or truncation: no advantage flows back
    across it. final_values[t], read only there, is the V(s_{t+1}) the return should see, as the rollout set it:
    0 after a termination, V(final observation) after a truncation. last_value = V(s_T), the state after the
    rollout's last step.
    """
    # V(s_{t+1}) for every step: the next row's value, last_value after the last row, final_values at ends.
    next_values = np.where(dones == 1, final_values, np.concatenate([values[1:], [last_value]]))
    advantages = np.zeros_like(rewards)
    last_gae = 0.0
    for t in reversed(range(len(rewards))):
        # delta_t = r_t + gamma * V(s_{t+1}) - V(s_t)                              (paper eq. 12)
        delta = rewards[t] + gamma * next_values[t] - values[t]
        # A_t = delta_t + gamma * lambda * A_{t+1}, cut at episode ends            (paper eq. 11)
        last_gae = delta + gamma * gae_lambda * (1.0 - dones[t]) * last_gae
        advantages[t] = last_gae
    return advantages


# Copied from common.ppo.clipped_surrogate_loss
def clipped_surrogate_loss(ratio: torch.Tensor, advantages: torch.Tensor, clip_coef: float) -> torch.Tensor:
    """-L^CLIP, to minimize. L^CLIP = E[min(r_t A_t, clip(r_t, 1 - eps, 1 + eps) A_t)]      (paper eq. 7)

    The min makes it a pessimistic bound: once the ratio r_t has moved past 1 + eps (A > 0) or below 1 - eps
    (A < 0), the clipped term is the smaller one and its gradient is zero (the flat parts of Figure 1). That takes
    away the incentive to move r_t further, not the move itself: a step taken for other samples can still carry
    it past the range.
    """
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_coef, 1.0 + clip_coef) * advantages
    return -torch.min(unclipped, clipped).mean()


# Copied from common.ppo.clipped_value_loss
def clipped_value_loss(newvalue, oldvalue, returns, vf_clip_coef: float) -> torch.Tensor:
    """L^VF with the value clipped like the ratio ([37] detail 9):
    0.5 * max((V - V^targ)^2, (V_old + clip(V - V_old, -eps_v, eps_v) - V^targ)^2)

    Like L^CLIP, a pessimistic bound: a step that moves V further than eps_v from the V that collected the
    data earns no more credit for it. The paper uses the plain squared error; the reference implementations
    (openai/baselines, CleanRL) clip. [37] ran no ablation of it; it cites Engstrom et al. 2020 (arXiv:2005.12729),
    who found no evidence that it helps, and Andrychowicz et al. 2021 (arXiv:2006.05990), whose decision C13 found
    that it hurts. `--no-clip-vloss` turns it off.
    """
    clipped = oldvalue + torch.clamp(newvalue - oldvalue, -vf_clip_coef, vf_clip_coef)
    return 0.5 * torch.max((newvalue - returns) ** 2, (clipped - returns) ** 2).mean()


# Copied from common.distributed.step_network
def step_network(optimizer: optim.Optimizer, loss: torch.Tensor, parameters, args: Args) -> None:
    """One gradient step of one network (its `parameters`) on `loss`."""
    parameters = list(parameters)  # (read twice below: a generator such as agent.parameters() would run dry)
    optimizer.zero_grad()
    loss.backward()
    # Several ranks: average the gradients over them, so that every rank takes the same step, the one a single
    # process holding all world_size x N x T samples would take (all but the advantages' normalization, which
    # each rank does over its own minibatch).
    all_ranks_mean_grads(parameters, args)
    # Global grad-norm clipping: one norm over all the network's parameters together, rescaled to at most
    # max_grad_norm, so one bad minibatch cannot make a huge step ([37] detail 11).
    nn.utils.clip_grad_norm_(parameters, args.max_grad_norm)
    optimizer.step()


# ---------------------------------------------------------------------------------------------------------
# Training: the PPO loop
# ---------------------------------------------------------------------------------------------------------


def train(args: Args, ckpt: Optional[dict]) -> None:
    rank, device = setup_distributed(args)  # under torchrun: this process's rank and its device
    args.batch_size = args.num_envs * args.num_steps
    # global_step counts the steps of all ranks: each update consumes world_size rollouts.
    args.num_iterations = args.total_timesteps // (args.batch_size * args.world_size)
    seed_everything(args, rank, device)  # each rank's generators seeded with seed + rank
    run_dir = run_folder(args)  # runs/<env-id>__<exp-name>__<seed>__<time>/, or the resumed run's own
    videos = videos_folder(args, run_dir)  # where --capture-video records (a resumed run: a folder of its own)

    with make_env(args) as env:  # one env, to read the spaces off and refuse a bad --env-id early
        agent = Agent(env, args.hidden_size, use_bf16(args, device)).to(device)
    envs = make_envs(args)
    # eps 1e-5 instead of Adam's default 1e-8, as in the reference implementations ([37] detail 3): it bounds
    # the step lr * m / (sqrt(v) + eps) where a gradient has been near zero, so such a weight cannot jump.
    optimizer = adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    # A new run starts at step 0, annealing from 1; --resume restores the weights, the optimizer's state, this
    # rank's random generators, the step count and the annealing schedule. Every rank takes rank 0's weights.
    global_step, start_iteration, schedule = restore_run(args, ckpt, agent, optimizer, device, rank)
    log = RunLog(args, run_dir, device, global_step, rank)  # the run folder: TensorBoard, the progress bar, SPS
    checkpoint_path = os.path.join(run_dir, "checkpoint.pt")
    rollout = Rollout(args.num_steps, args.num_envs, envs.single_observation_space.shape)

    # Env i of rank r starts from seed + r N + i; a resumed run starts fresh episodes, seeded from the seed and
    # the step count.
    next_obs, _ = envs.reset(seed=args.seed + rank * args.num_envs + global_step)

    # Ctrl-C asks for a clean stop: at the next rollout step or minibatch, the checkpoint of the last complete
    # update (the snapshot, taken after every update) is saved and the script exits.
    stopper = Stopper(args, rank, device)
    stopper.snapshot = checkpoint_state(args, agent, optimizer, global_step, start_iteration - 1, schedule)

    for iteration in range(start_iteration, args.num_iterations + 1):
        # Linear annealing ([37] detail 4): lr_i = alpha_i * learning_rate, alpha_i = 1 - (i - 1) / num_iterations
        # falling from 1 toward 0 (Table 5's alpha). The scale is 1, but in a run resumed with a larger
        # --total-timesteps, where it makes alpha go on from its last value (resumed_schedule): never up.
        frac = schedule["scale"] * (1.0 - (iteration - 1) / args.num_iterations)
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate
        # Table 5 anneals epsilon too (--anneal-clip): the objective stops rewarding a move of r_t ever sooner as
        # training goes on. Held at 0.1 by default, as in CleanRL: at 40M frames it ended above annealing on both seeds.
        clip_coef = frac * args.clip_coef if args.anneal_clip else args.clip_coef

        # --- Rollout: run the current policy pi_old for T steps in each of the N envs -----------------------
        next_obs, last_value, episodes = collect_rollout(envs, agent, next_obs, rollout, stopper.check)
        if stopper.stopped:
            break
        for step, episodic_return, length in episodes:  # rank 0's games: the whole game's real score
            log.episode(episodic_return, length, global_step + (step + 1) * args.num_envs * args.world_size)
        global_step += args.batch_size * args.world_size

        # --- Advantages: computed once per rollout, from the value function that collected it -------------
        advantages = compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.final_values, last_value,
                                 args.gamma, args.gae_lambda)
        returns = advantages + rollout.values  # the value targets: V^targ_t = A_t + V(s_t)
        # Flatten [T, N] into one batch of N*T samples: after GAE, the order of the samples no longer matters.
        b_obs, b_actions, b_logprobs, b_advantages, b_returns, b_values = (
            torch.as_tensor(x, device=device).flatten(0, 1)
            for x in (rollout.obs, rollout.actions, rollout.logprobs, advantages, returns, rollout.values)
        )
        b_obs = agent.inputs(b_obs)  # scaled once here, for all the epochs below

        # --- Update: K epochs of minibatch gradient steps on L^{CLIP+VF+S} ----------------------------------
        clipfracs, vf_clipfracs = [], []
        for epoch in range(args.update_epochs):
            for mb in torch.randperm(args.batch_size, device=device).split(args.minibatch_size):
                if stopper.check():  # Ctrl-C
                    break
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                # r_t(theta) = pi(a_t|s_t) / pi_old(a_t|s_t), computed as exp(log pi - log pi_old): a ratio
                # of two small probabilities is numerically fragile, a difference of logs is not. b_logprobs is
                # log pi_old, recorded in the rollout: it stays fixed through all K epochs while pi moves.
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    # KL[pi_old || pi] estimators (http://joschu.net/blog/kl-approx.html), logged; approx_kl
                    # (k3, unbiased and never negative) also drives the --target-kl early stop.
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    # Under torchrun, their mean over the ranks: logged, and read by the early stop (the ranks must
                    # all stop at the same epoch).
                    old_approx_kl, approx_kl = all_ranks_mean(torch.stack([old_approx_kl, approx_kl]), args)
                    clipfracs.append(((ratio - 1.0).abs() > clip_coef).float().mean().item())

                mb_advantages = b_advantages[mb]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                pg_loss = clipped_surrogate_loss(ratio, mb_advantages, clip_coef)
                if args.clip_vloss:
                    v_loss = clipped_value_loss(newvalue, b_values[mb], b_returns[mb], args.vf_clip_coef)
                    # the share of samples whose V moved past the clip range: where the clip can act
                    vf_clipfracs.append(((newvalue - b_values[mb]).abs() > args.vf_clip_coef).float().mean().item())
                else:  # L^VF = (V(s_t) - V^targ_t)^2, halved so its gradient is the plain error       (eq. 9)
                    v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                entropy_loss = entropy.mean()
                # L^{CLIP+VF+S} = L^CLIP - c1 L^VF + c2 S is maximized; we minimize its negative       (eq. 9)
                # With v_loss's 0.5 the value term is c1 * 0.5 * (V - V^targ)^2: c1 = 0.5 weighs the squared
                # error by 0.25, as CleanRL's defaults do; eq. 9's c1 weighs the squared error by c1 itself.
                loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy_loss

                step_network(optimizer, loss, agent.parameters(), args)

            # Early stop: once pi has drifted this far from pi_old, more epochs on the same data would take it
            # past where the samples say anything (Spinning Up's PPO checks before every step; this check, like
            # CleanRL's, comes after each epoch and reads approx_kl of that epoch's last minibatch only).
            if stopper.stopped or args.target_kl is not None and approx_kl > args.target_kl:
                break
        if stopper.stopped:
            break

        # --- Logging: the losses and KL estimates are the last minibatch's (clipfrac: the mean over all of them)
        log.update(global_step, args.batch_size * args.world_size, {
            "charts/learning_rate": optimizer.param_groups[0]["lr"], "losses/value_loss": v_loss.item(),
            "losses/policy_loss": pg_loss.item(), "losses/entropy": entropy_loss.item(),
            "losses/old_approx_kl": old_approx_kl.item(), "losses/approx_kl": approx_kl.item(),
            "losses/clipfrac": np.mean(clipfracs),
            "losses/explained_variance": explained_variance(returns, rollout.values),
            "losses/update_epochs": epoch + 1,
            **({"losses/vf_clipfrac": np.mean(vf_clipfracs)} if vf_clipfracs else {}),
            "charts/clip_coef": clip_coef,
        })

        # --- Evaluation of the policy on whole games, on an env of its own ---------------------------------
        last = iteration == args.num_iterations
        if args.eval_every and (last or iteration % args.eval_every == 0):
            evaluate_and_log(args, agent, log, videos, global_step, stopper) if rank == 0 else stopper.wait_for_rank_0()

        # --- Checkpoint -------------------------------------------------------------------------------------
        stopper.snapshot = checkpoint_state(args, agent, optimizer, global_step, iteration, schedule)  # (every rank)
        if rank == 0 and (last or (args.checkpoint_every and iteration % args.checkpoint_every == 0)):
            save_checkpoint(checkpoint_path, stopper.snapshot)

    end_of_run(log, envs, checkpoint_path, stopper)


# =========================================================================================================
# The rest is plumbing, skippable on a first read: device and process settings, bad-input checks, run folders
# and logging, Ctrl-C, checkpoints and resume, evaluation and play, the --help texts
# and torchrun and precision (nothing of PPO, which is all above)
# =========================================================================================================


# On a GPU, torch.use_deterministic_algorithms(True) lets cuBLAS multiply matrices only with a fixed workspace,
# and raises on the first matmul without one. cuBLAS reads this when CUDA starts: it is set here, as the script is
# imported, before anything touches CUDA.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


# Copied from common.runs.adam
def adam(parameters, lr: float, eps: float) -> optim.Adam:
    """torch's Adam, its update done in a few batched operations over all the parameter tensors together (foreach)
    instead of a Python loop over them."""
    return optim.Adam(parameters, lr=lr, eps=eps, foreach=True)


# Copied from common.envs.worker_start_method
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


# Copied from common.frames.make_worker_env
def make_worker_env(args: Args) -> gym.Env:
    """make_env, as an async worker runs it; in this process, for a SyncVectorEnv's envs and the one that an
    AsyncVectorEnv makes here to read the spaces off, it is make_env alone."""
    if multiprocessing.parent_process() is not None:
        # An async worker: Ctrl-C reaches the whole process group, but it is the trainer's to handle
        # (it finishes the update, saves and closes us), so the worker ignores it.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        cv2.setNumThreads(1)  # one worker per env already: OpenCV's own threads would only compete
    return make_env(args)


# Copied from common.cli.fail
def fail(message: str) -> None:
    """Bad input ends the run with one clear line on stderr and exit code 2, never a traceback."""
    print(f"{SCRIPT}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


# Copied from common.distributed.check_args
def check_args(args: Args) -> None:
    """Refuse hyperparameters that cannot work together, before anything is built. Each check applies where the
    script has the flag (and, for an optional one such as --target-kl, where it is set)."""

    def given(*names: str) -> list[tuple[str, float]]:
        return [(name, getattr(args, name)) for name in names if getattr(args, name, None) is not None]

    # Every float first: nan would pass the checks below (nan <= 0 is False), and Adam would then raise.
    for field in dataclasses.fields(args):
        value = getattr(args, field.name)
        if isinstance(value, float) and not np.isfinite(value):
            fail(f"--{field.name.replace('_', '-')} must be a finite number, got {value}")
    for name, value in given("total_timesteps", "num_envs", "num_steps", "minibatch_size", "update_epochs",
                             "train_pi_iters", "train_v_iters", "hidden_size", "episodes", "eval_episodes",
                             "learning_rate", "vf_learning_rate", "clip_coef", "vf_clip_coef", "target_kl",
                             "max_grad_norm"):
        if value <= 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {value}")
    for name, value in given("ent_coef", "vf_coef", "checkpoint_every", "eval_every"):
        if value < 0:
            fail(f"--{name.replace('_', '-')} must not be negative, got {value}")
    for name, value in given("gamma", "gae_lambda"):
        if not 0.0 <= value <= 1.0:
            fail(f"--{name.replace('_', '-')} must be in [0, 1], got {value}")
    if not 0 <= args.seed <= 2**32 - args.world_size:
        fail(f"--seed must be in [0, {2**32 - args.world_size}] (NumPy seeds rank r with seed + r), got {args.seed}")
    if not args.exp_name or "/" in args.exp_name:
        fail(f"--exp-name names one run folder (runs/<env-id>__<exp-name>__<seed>__<time>/): it cannot be empty or "
             f"hold a '/', got {args.exp_name!r}")
    if args.norm_adv and args.minibatch_size < 2:
        fail(f"--minibatch-size must be at least 2 with --norm-adv: the advantages are normalized by their std "
             f"over each minibatch, and one sample has none (got {args.minibatch_size})")
    batch_size = args.num_envs * args.num_steps
    rollout = f"--num-envs {args.num_envs} x --num-steps {args.num_steps} = {batch_size}"
    if args.minibatch_size > batch_size:
        fail(f"--minibatch-size ({args.minibatch_size}) is larger than the rollout ({rollout})")
    if batch_size % args.minibatch_size:
        fail(f"the rollout ({rollout}) must be a multiple of --minibatch-size ({args.minibatch_size})")
    if args.total_timesteps < batch_size * args.world_size:
        fail(f"--total-timesteps ({args.total_timesteps}) is less than one rollout of every rank (--num-envs "
             f"{args.num_envs} x --num-steps {args.num_steps} x {args.world_size} ranks = "
             f"{batch_size * args.world_size})")
    for name, value in given("target_flag_rate"):  # (Mario's: a share of the evaluation episodes)
        if not 0.0 < value <= 1.0:
            fail(f"--target-flag-rate is a share of the evaluation episodes, in (0, 1]; got {value}")
        if not args.eval_every:
            fail("--target-flag-rate ends the run after an evaluation, and --eval-every 0 evaluates never: give "
                 "--eval-every N")


# Copied from common.distributed.check_gpus
def check_gpus(args: Args) -> None:
    """Under torchrun on GPUs, each rank needs a GPU of its own (NCCL refuses two ranks on one GPU): more ranks on a
    machine than it has GPUs are refused before training starts."""
    local_rank, ranks_here = int(os.environ.get("LOCAL_RANK", 0)), int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    if "RANK" in os.environ and torch.cuda.is_available() and args.cuda and \
            max(ranks_here, local_rank + 1) > torch.cuda.device_count():
        fail(f"torchrun starts {max(ranks_here, local_rank + 1)} ranks on this machine and it has "
             f"{torch.cuda.device_count()} GPU(s): each rank needs a GPU of its own; give --nproc_per_node "
             f"{torch.cuda.device_count()} or fewer, or --no-cuda to train the ranks on the CPU")


# Copied from common.distributed.check_resume
def check_resume(args: Args, ckpt: dict) -> None:
    """--resume goes on update by update, so the shape of an update and the learning rate's schedule cannot change;
    and there must be steps left."""
    for name in ("num_envs", "num_steps", "world_size"):
        if getattr(args, name) != ckpt["args"][name]:
            flag = "the number of torchrun ranks" if name == "world_size" else "--" + name.replace("_", "-")
            fail(f"{flag} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, {getattr(args, name)} "
                 "now): the step count, the buffers and the annealing go update by update")
    # The learning rate goes on from the optimizer's state (--no-anneal-lr: Adam's saved rate) and the annealing
    # schedule, so the flags that set it cannot change: they would be ignored, or raise the rate.
    for name in ("learning_rate", "vf_learning_rate", "anneal_lr", "anneal_clip", "clip_coef"):
        if name == "clip_coef" and not getattr(args, "anneal_clip", False):  # (applied as given where not annealed)
            continue
        if hasattr(args, name) and getattr(args, name) != ckpt["args"][name]:
            fail(f"--{name.replace('_', '-')} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, "
                 f"{getattr(args, name)} now): a resumed run goes on with the step size and annealing it started "
                 "with; start a new run to change them")
    if ckpt["global_step"] + args.num_envs * args.num_steps * args.world_size > args.total_timesteps:
        fail(f"{args.resume} has already trained {ckpt['global_step']} steps; "
             f"give a larger --total-timesteps to train longer")


# Copied from common.runs.run_folder
def run_folder(args: Args) -> str:
    """runs/<env-id>__<exp-name>__<seed>__<unix time>/ for a new run; a resumed run keeps writing into its own
    folder, and TensorBoard continues its curves."""
    if args.resume:
        return os.path.dirname(os.path.abspath(args.resume))
    return os.path.join("runs", f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}")


# Copied from common.runs.videos_folder
def videos_folder(args: Args, run_dir: str) -> str:
    """Where --capture-video records: the run folder's videos/, and for a resumed run a folder of its own in it
    (videos/resume-<unix time>/): RecordVideo numbers the episodes from 0 again, and in videos/ itself it would
    overwrite what the run recorded before it stopped."""
    videos = os.path.join(run_dir, "videos")
    return os.path.join(videos, f"resume-{int(time.time())}") if args.resume else videos


# Copied from common.distributed.seed_everything
def seed_everything(args: Args, rank: int, device: torch.device) -> None:
    """Seed Python, NumPy and torch with seed + rank (--seed), so that each rank samples and explores with a seed of
    its own. Deterministic algorithms if asked, cuDNN's too on a GPU."""
    random.seed(args.seed + rank)
    np.random.seed(args.seed + rank)
    torch.manual_seed(args.seed + rank)
    torch.use_deterministic_algorithms(args.torch_deterministic)
    # ...but without also filling every fresh tensor with NaN first (a debugging aid that comes with it: it
    # takes time and does not change the results).
    torch.utils.deterministic.fill_uninitialized_memory = False
    if device.type == "cuda":
        set_cudnn_flags(args)


# Copied from common.distributed.restore_run
def restore_run(args: Args, ckpt: Optional[dict], agent: nn.Module, optimizer: optim.Optimizer,
                device: torch.device, rank: int) -> tuple[int, int, dict]:
    """(global_step, first update, annealing schedule) of a new run; resuming, the checkpoint's, with the weights,
    Adam's state and this rank's random generators restored from it. Under torchrun every rank then starts from
    rank 0's weights."""
    global_step, start_iteration = 0, 1
    schedule = {"scale": 1.0, "num_iterations": args.num_iterations}
    if ckpt is not None:
        restore_agent(agent, ckpt, args.resume)
        optimizer.load_state_dict(ckpt["optimizer"])
        global_step, start_iteration = ckpt["global_step"], ckpt["iteration"] + 1
        schedule = resumed_schedule(ckpt["schedule"], ckpt["iteration"], args.num_iterations)
        restore_rng(ckpt["rng"][rank], device)  # this rank's own generators (check_resume: same ranks)
    if args.world_size > 1:  # (each rank drew its own weights at construction)
        for tensor in agent.state_dict().values():
            dist.broadcast(tensor, src=0)
    return global_step, start_iteration, schedule


# Copied from common.runs.RunLog
class RunLog:
    """What a run reports: scalars to TensorBoard in the run folder, the progress bar with the mean return of the
    last 20 episodes, and the steps per second. The folder is made here, once the env and the checkpoint have been
    accepted, so that a refused run leaves nothing behind. Under torchrun only rank 0 writes."""

    def __init__(self, args: Args, run_dir: str, device: torch.device, global_step: int, rank: int = 0):
        self.writer = None
        if rank == 0:
            os.makedirs(run_dir, exist_ok=True)
            # A resumed run goes on from its checkpoint's step G. What an earlier process logged past G (the episodes
            # of a rollout that a Ctrl-C gave up, or everything after the last checkpoint before a crash) is not in
            # this run's history: purge_step has TensorBoard drop the earlier events from step G + 1 on.
            self.writer = SummaryWriter(run_dir, purge_step=global_step + 1 if args.resume else None)
            self.writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(
                f"|{k}|{v}|" for k, v in dataclasses.asdict(args).items()))
            print(f"run folder {run_dir}, training on {device} (curves: tensorboard --logdir {os.path.dirname(run_dir)})")
        self.recent_returns = collections.deque(maxlen=20)
        self.progress = tqdm.tqdm(total=args.total_timesteps, initial=global_step, unit="step", dynamic_ncols=True,
                                  disable=rank != 0)
        self.start_time, self.start_step = time.time(), global_step

    def scalar(self, tag: str, value: float, step: int) -> None:
        if self.writer is not None:
            self.writer.add_scalar(tag, value, step)

    def episode(self, episodic_return: float, length: int, step: int) -> None:
        self.recent_returns.append(episodic_return)
        self.scalar("charts/episodic_return", episodic_return, step)
        self.scalar("charts/episodic_length", length, step)

    def update(self, global_step: int, steps: int, scalars: dict) -> None:
        """After an update: its scalars, the steps per second, and the progress bar moved on by `steps`."""
        sps = int((global_step - self.start_step) / (time.time() - self.start_time))
        for tag, value in {**scalars, "charts/SPS": sps}.items():
            self.scalar(tag, value, global_step)
        self.progress.update(steps)
        if self.recent_returns:
            self.progress.set_postfix_str(
                f"return(last {len(self.recent_returns)}) {np.mean(self.recent_returns):.1f}, SPS {sps}")

    def close(self) -> None:
        self.progress.close()
        if self.writer is not None:
            self.writer.close()


# Copied from common.runs.explained_variance
def explained_variance(returns: np.ndarray, values: np.ndarray) -> float:
    """How much of the value targets' variance V explains: 1 is a perfect critic, 0 no better than a constant."""
    var_returns = np.var(returns)
    return 1 - np.var(returns - values) / var_returns if var_returns > 0 else float("nan")


# Copied from common.distributed.Stopper
class Stopper:
    """Ctrl-C: stop at the next rollout step or minibatch and save the last complete update (`snapshot`, taken
    after every update), rather than finish the update first as the MLP scripts do. torchrun forwards Ctrl-C to
    its workers and kills them 30 s later (its default), sooner than a CNN update can end on a CPU. The ranks
    meet in collective calls, so they must stop at the same step: they agree on it through an all-reduce, at
    every AGREE_EVERY-th check only (a collective and a wait for its result each time), and rank 0 says so,
    whichever rank the Ctrl-C reached (pressed on another machine, it reaches that machine's ranks only). On 2 CPU
    cores 16 checks are about a second of training (a minibatch step takes 44-72 ms, benchmarks/README.md), far
    inside the 30 s. While rank 0 evaluates, the others wait for it (wait_for_rank_0)."""

    AGREE_EVERY = 16

    def __init__(self, args: Args, rank: int, device: torch.device):
        self.args, self.rank, self.device = args, rank, device
        self.requested, self.stopped, self.snapshot, self.checks, self.eval_steps = False, False, None, 0, 0
        signal.signal(signal.SIGINT, self.request)

    def request(self, signum, frame):
        self.requested = True
        if "RANK" not in os.environ:  # (torchrun sends Ctrl-C again on its way out: its SIGKILL is the hard stop)
            signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C quits at once
            tqdm.tqdm.write("Ctrl-C: stopping at the next step and saving the last complete update "
                            "(press again to quit without saving)")

    def check(self) -> bool:
        """Whether to stop now: in one process, whether Ctrl-C was pressed; under torchrun, whether it reached any
        rank, as they found at their last agreement (all ranks call this at the same steps)."""
        self.checks += 1
        if "RANK" not in os.environ:
            self.stopped = self.stopped or self.requested
        elif self.checks % self.AGREE_EVERY == 0 and not self.stopped:
            self.meet(evaluating=False)
        return self.stopped

    def meet(self, evaluating: bool) -> bool:
        """The ranks' agreement, one all-reduce: whether Ctrl-C reached any rank (then they all stop), and whether
        rank 0 is still evaluating (`evaluating` is rank 0's word; the other ranks say False)."""
        flags = torch.tensor([float(self.requested), float(evaluating)], device=self.device)
        requested, evaluating = all_ranks_mean(flags, self.args).tolist()
        if requested > 0 and not self.stopped and self.rank == 0:
            tqdm.tqdm.write("Ctrl-C: stopping at the next step and saving the last complete update")
        self.stopped = self.stopped or requested > 0
        return evaluating > 0

    def evaluating(self) -> bool:
        """evaluate()'s should_stop on rank 0, at every step of its episodes: whether to give them up (a Ctrl-C).
        Under torchrun the other ranks meet it at every AGREE_EVERY-th step (wait_for_rank_0), so that no rank waits
        inside one collective for a whole evaluation (it would end at the process group's timeout, 30 min with
        gloo and 10 with NCCL, which a long one with --capture-video can reach) and a Ctrl-C on any rank ends it."""
        self.eval_steps += 1
        if "RANK" in os.environ and self.eval_steps % self.AGREE_EVERY == 0:
            self.meet(evaluating=True)
        return self.requested or self.stopped

    def evaluated(self) -> bool:
        """Rank 0, its episodes over or given up: the other ranks wait no more. Whether they were played to the end
        (not given up)."""
        if "RANK" in os.environ:
            self.meet(evaluating=False)
        return not (self.requested or self.stopped)

    def wait_for_rank_0(self) -> None:
        """The ranks but 0, while rank 0 evaluates: they meet it until it says it is done. Returns None (what the
        evaluation found is rank 0's alone)."""
        while self.meet(evaluating=False):
            pass


# Copied from common.distributed.end_of_run
def end_of_run(log: RunLog, envs, checkpoint_path: str, stopper: Stopper) -> None:
    """A run stopped by Ctrl-C saves the last complete update (rank 0 writes the snapshot every rank took part
    in). Close the log and the envs; rank 0 says where the checkpoint is and how to watch it; leave the process
    group; a run stopped by Ctrl-C exits 130, the convention."""
    if stopper.stopped and stopper.rank == 0:
        save_checkpoint(checkpoint_path, stopper.snapshot)
    log.close()
    envs.close()
    if stopper.rank == 0:
        print(f"checkpoint: {checkpoint_path} (step {stopper.snapshot['global_step']})")
        print(f"watch it: python {SCRIPT} --play {checkpoint_path} --capture-video", flush=True)
    if stopper.args.world_size > 1:
        # No rank leaves before rank 0 has saved: torchrun answers the first worker that exits with a failure (130)
        # by sending SIGTERM to the others, rank 0 mid-save included, when the Ctrl-C did not reach torchrun itself
        # (pressed on another machine, or sent to one worker).
        dist.barrier()  # (rank 0 comes once its last checkpoint is written, whichever path saved it)
        dist.destroy_process_group()
    if stopper.stopped:
        raise SystemExit(130)


# Copied from common.distributed.checkpoint_state
def checkpoint_state(args: Args, agent: nn.Module, optimizer: optim.Optimizer, global_step: int,
                     iteration: int, schedule: dict) -> dict:
    """What a checkpoint holds, copied: it can be kept while training goes on (Stopper keeps the last complete
    update's). Every rank calls it, after every update: the ranks' weights are checked equal (check_weights_agree)
    and the random generators of all ranks are gathered (rng[r] is rank r's), so a resumed rank r draws on from
    where rank r stopped."""
    rng = [rng_states(next(agent.parameters()).device)]
    if args.world_size > 1:
        check_weights_agree(agent, args, iteration)
        rng = [None] * args.world_size
        dist.all_gather_object(rng, rng_states(next(agent.parameters()).device))
    return {
        "script": SCRIPT,
        "args": dataclasses.asdict(args),
        "agent": copy.deepcopy(agent.state_dict()),
        "optimizer": copy.deepcopy(optimizer.state_dict()),
        "global_step": global_step,
        "iteration": iteration,
        "schedule": dict(schedule),
        "rng": rng,
    }


# Copied from common.distributed.check_weights_agree
def check_weights_agree(agent: nn.Module, args: Args, iteration: int) -> None:
    """Stop the run if the ranks' weights differ. They start from rank 0's and take the same averaged steps, so they
    stay equal bit for bit, but only as long as every rank computes every update the same way; ranks that drifted
    apart would go on training different networks, and rank 0 would save its own. The check is one all-reduce:
    a checksum of the weights (their bits summed as integers, which is exact in any order), whose maximum and
    minimum over the ranks differ if any rank's weights do."""
    weights = torch.cat([tensor.reshape(-1) for tensor in agent.state_dict().values()])
    checksum = weights.view(torch.int32).sum(dtype=torch.int64)
    extremes = torch.stack([checksum, -checksum])  # (one MAX all-reduce: the maximum and minus the minimum)
    dist.all_reduce(extremes, op=dist.ReduceOp.MAX)
    if extremes[0] != -extremes[1]:
        if int(os.environ.get("LOCAL_RANK", 0)) == 0:  # (said once on each machine, above the progress bar)
            tqdm.tqdm.write(f"{SCRIPT}: error: the ranks' weights differ after update {iteration}: they no longer "
                            "train one network, so the run stops without saving (every checkpoint saved before "
                            "passed this check)", file=sys.stderr)
        dist.destroy_process_group()
        raise SystemExit(1)


# Copied from common.distributed.save_checkpoint
def save_checkpoint(path: str, state: dict) -> None:
    """Write to a temporary file, then rename: a crash mid-write never leaves a half-written checkpoint."""
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


# Copied from common.checkpoints.load_checkpoint
def load_checkpoint(path: str) -> dict:
    """Read a checkpoint of this script, or fail with one line that says what is wrong with the file."""
    if os.path.isdir(path):
        fail(f"{path} is a folder, not a checkpoint (a run's is runs/<run>/checkpoint.pt)")
    if not os.path.isfile(path):
        fail(f"no checkpoint at {path}")
    if os.path.getsize(path) == 0:
        fail(f"{path} is empty (0 bytes), not a checkpoint")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated, unreadable, not a torch file, or holding objects that weights_only refuses
        reason = next((line.strip() for line in str(e).splitlines() if line.strip()), "")[:120]  # (can be empty)
        fail(f"{path} is not a readable checkpoint ({type(e).__name__}{': ' if reason else ''}{reason})")
    if not isinstance(ckpt, dict) or not {"script", "args", "agent"} <= ckpt.keys():
        fail(f"{path} is not a checkpoint of this library")
    if ckpt["script"] != SCRIPT:
        fail(f"{path} was written by {ckpt['script']}, not {SCRIPT}")
    missing = {"optimizer", "global_step", "iteration", "schedule", "rng"} - ckpt.keys()
    if missing and ckpt.get("policy") is not True:  # (a policy file holds the weights alone: benchmarks/ship.py)
        fail(f"{path} is an incomplete checkpoint (no {', '.join(sorted(missing))})")
    return ckpt


# Copied from common.resume.resumed_schedule
def resumed_schedule(schedule: dict, iteration: int, num_iterations: int) -> dict:
    """The annealing schedule of a run resumed after update `iteration`: {"scale", "num_iterations"}, with alpha_i =
    scale * (1 - (i - 1) / num_iterations) (a new run's scale is 1). Same length: it goes on unchanged. A new
    --total-timesteps: the scale makes alpha go on from the value the last update had down to 0 over the new
    length, so resuming never raises the learning rate (nor an annealed clip range)."""
    if schedule["num_iterations"] == num_iterations:
        return schedule
    last = schedule["scale"] * (1.0 - (iteration - 1) / schedule["num_iterations"])  # alpha of update `iteration`
    # scale' * (1 - iteration / num_iterations) = last: update iteration + 1 starts where update `iteration` was
    return {"scale": last * num_iterations / (num_iterations - iteration), "num_iterations": num_iterations}


# Copied from common.resume.rng_states
def rng_states(device: torch.device) -> dict:
    """Every random generator this process draws from: Python's, NumPy's, torch's CPU one and the GPU's in use."""
    np_state = np.random.get_state()
    states = {
        "python": random.getstate(),
        "numpy": (np_state[0], np_state[1].tolist(), *np_state[2:]),
        "torch": torch.get_rng_state(),
    }
    if device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(device)
    return states


# Copied from common.resume.restore_rng
def restore_rng(states: dict, device: torch.device) -> None:
    random.setstate(states["python"])
    np_state = states["numpy"]
    np.random.set_state((np_state[0], np.array(np_state[1], dtype=np.uint32), *np_state[2:]))
    torch.set_rng_state(states["torch"])
    if device.type == "cuda" and "cuda" in states:
        torch.cuda.set_rng_state(states["cuda"], device)


# Copied from common.checkpoints.restore_agent
def restore_agent(agent: nn.Module, ckpt: dict, path: str) -> None:
    try:
        agent.load_state_dict(ckpt["agent"])
    except RuntimeError as e:
        fail(f"the network in {path} does not fit this one ({str(e).splitlines()[-1].strip()})")


# Copied from common.checkpoints.args_from_checkpoint
def args_from_checkpoint(args: Args) -> tuple[Args, dict]:
    """--resume / --play: the checkpoint's Args become the defaults, and the flags given override them."""
    path = args.resume or args.play
    ckpt = load_checkpoint(path)
    if args.resume and ckpt.get("policy") is True:
        fail(f"{path} is a policy file: it holds no optimizer, annealing schedule or random generators, so it can "
             f"only be played (--play {path}), not resumed")
    saved = {k: v for k, v in ckpt["args"].items() if k in {f.name for f in dataclasses.fields(Args)}}
    defaults = dataclasses.replace(Args(**saved), resume=args.resume, play=args.play)
    args = tyro.cli(Args, default=defaults, description=__doc__)
    if args.env_id != ckpt["args"]["env_id"]:
        fail(f"{path} holds a policy for {ckpt['args']['env_id']}, not for --env-id {args.env_id}")
    return args, ckpt


def evaluate(args: Args, agent: Agent, episodes: int, video_folder: Optional[str] = None, verbose: bool = False,
             should_stop=lambda: False):
    """Play `episodes` whole games (all lives) with actions sampled from pi, on an env of its own, game i
    seeded with seed + i. Returns the game scores and lengths (in frames).

    Sampled, not argmax: FireReset presses FIRE after every lost life, but the emulator is deterministic, so a
    greedy policy can repeat one loop (the ball bouncing without hitting a brick) until the 27k-step (108k-frame)
    time limit. torch's random state is put back afterwards, so evaluating does not change training.
    """
    env = make_env(args, video_folder, video_trigger=lambda episode: True)
    device = next(agent.parameters()).device
    # Sampling draws from torch's generators: the episodes run on forks of them (the CPU's, and the GPU's in
    # use), put back afterwards, so evaluating does not change what training samples next.
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(args.seed)
        returns, lengths = [], []
        for episode in range(episodes):
            obs, _ = env.reset(seed=args.seed + episode)
            while not should_stop():  # (a Ctrl-C during training's evaluation: the episodes are given up)
                with torch.inference_mode():
                    action, _, _, _ = agent.get_action_and_value(torch.as_tensor(obs[None], device=device))
                obs, _, terminated, truncated, info = env.step(action.item())
                if "episode" in info:  # game over: RecordEpisodeStatistics, below EpisodicLife, reports the game
                    break
                if terminated or truncated:  # a life lost: the same game goes on
                    obs, _ = env.reset()
            else:
                break
            returns.append(float(info["episode"]["r"]))
            lengths.append(int(info["episode"]["l"]))
            if verbose:
                print(f"episode {episode + 1}/{episodes}: return {returns[-1]:.1f}, length {lengths[-1]}")
    env.close()
    return returns, lengths


def evaluate_and_log(args: Args, agent: Agent, log: RunLog, videos: str, global_step: int, stopper: Stopper) -> None:
    """Play --eval-episodes games (recorded under videos/eval-<step>/ with --capture-video), log their mean score
    and length, and say it above the progress bar. A Ctrl-C gives the games up, and nothing is logged. Under
    torchrun, rank 0 plays while the other ranks wait for it (Stopper.wait_for_rank_0)."""
    video_folder = os.path.join(videos, f"eval-{global_step}") if args.capture_video else None
    eval_returns, eval_lengths = evaluate(args, agent, args.eval_episodes, video_folder, should_stop=stopper.evaluating)
    if stopper.evaluated():  # (played to the end: not given up)
        log.scalar("eval/mean_return", np.mean(eval_returns), global_step)
        log.scalar("eval/mean_length", np.mean(eval_lengths), global_step)
        tqdm.tqdm.write(f"step {global_step}: mean score over {args.eval_episodes} games {np.mean(eval_returns):.1f}")


def play(args: Args, ckpt: dict) -> None:
    # A folder of its own for each --play, so that no earlier video is overwritten.
    video_folder = os.path.join(os.path.dirname(os.path.abspath(args.play)), "videos", f"play-{int(time.time())}")
    with make_env(args) as env:  # one env to read the spaces off
        agent = Agent(env, args.hidden_size, use_bf16(args, torch.device("cpu")))
    restore_agent(agent, ckpt, args.play)
    returns, _ = evaluate(args, agent, args.episodes, video_folder if args.capture_video else None, verbose=True)
    print(f"mean return over {args.episodes} episodes: {np.mean(returns):.1f} +/- {np.std(returns):.1f}")
    if args.capture_video:
        print(f"videos: {video_folder}")


# Copied from common.distributed.every_rank_agrees
@contextlib.contextmanager
def every_rank_agrees():
    """Under torchrun, the checks made in the `with` block are agreed by every rank. A rank that refused alone (a
    --resume checkpoint missing on its node, too few GPUs on its machine) would leave the others waiting for it in
    the process group until its timeout (30 min with gloo). So every rank joins the process group first, makes the
    checks, and tells the others whether it refused (fail's line, held back meanwhile): if any did, every rank
    refuses with the first refusal's line, said once on each machine, within seconds. Without torchrun: the block
    alone, as in the other scripts."""
    if "RANK" not in os.environ:
        yield
        return
    # gloo for the tensors on the CPU (the verdicts below), NCCL for those on a GPU where there are GPUs: which
    # device a rank trains on is known only once the checks have read the command line and the checkpoint.
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")
    said, refusal = io.StringIO(), None
    try:
        with contextlib.redirect_stderr(said):
            yield
    except SystemExit as exit_:
        refusal = (exit_.code, said.getvalue().strip())
    else:
        sys.stderr.write(said.getvalue())
    refusals = [None] * int(os.environ["WORLD_SIZE"])
    dist.all_gather_object(refusals, refusal)
    refused = [(rank, r) for rank, r in enumerate(refusals) if r is not None]
    if refused:
        rank, (code, line) = refused[0]
        if line and int(os.environ["LOCAL_RANK"]) == 0:
            alone = "" if len(refused) == len(refusals) else f" (rank {rank}; every rank stops with it)"
            print(line + alone, file=sys.stderr)
        dist.destroy_process_group()
        raise SystemExit(code)


# Copied from common.distributed.setup_distributed
def setup_distributed(args: Args) -> tuple[int, torch.device]:
    """Under torchrun (which sets RANK, LOCAL_RANK and WORLD_SIZE; main has joined the process group): this process's
    rank and its device, one GPU per rank (check_gpus) or the CPU; and --precision auto decided once, by rank 0, for
    every rank (each machine deciding for itself, a cluster of mixed CPUs would train some ranks in bf16 and others
    in fp32). Without torchrun: rank 0 of 1."""
    use_cuda = torch.cuda.is_available() and args.cuda
    if "RANK" not in os.environ:
        return 0, torch.device("cuda" if use_cuda else "cpu")
    device = torch.device(f"cuda:{os.environ['LOCAL_RANK']}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if args.precision == "auto":
        precision = ["bf16" if use_bf16(args, device) else "fp32"]
        dist.broadcast_object_list(precision, src=0)
        args.precision = precision[0]  # (and so in the checkpoint: a resumed run keeps it)
    return dist.get_rank(), device


# Copied from common.distributed.all_ranks_mean
def all_ranks_mean(value: torch.Tensor, args: Args) -> torch.Tensor:
    """The mean of `value` over the ranks (in place): every rank then holds the same number."""
    if args.world_size > 1:
        dist.all_reduce(value)
        value /= args.world_size
    return value


# Copied from common.distributed.all_ranks_mean_grads
def all_ranks_mean_grads(parameters, args: Args) -> None:
    """Average the gradients over the ranks, so that every rank takes the same step: flattened into one tensor,
    they go through one all-reduce per step rather than one per parameter tensor (as in CleanRL's
    ppo_atari_multigpu.py). Every parameter's, zeros where this rank's loss has none, as DDP does: every rank
    then all-reduces a tensor of the same size."""
    if args.world_size == 1:
        return
    for param in parameters:
        if param.grad is None:
            param.grad = torch.zeros_like(param)
    grads = [param.grad for param in parameters]
    flat = all_ranks_mean(torch.cat([grad.reshape(-1) for grad in grads]), args)
    for grad, mean in zip(grads, flat.split([grad.numel() for grad in grads])):
        grad.copy_(mean.view_as(grad))


# Copied from common.precision.use_bf16
def use_bf16(args: Args, device: torch.device) -> bool:
    """--precision auto: bf16 on a CPU with native bfloat16 arithmetic (AVX512-BF16 or AMX), where it pays (the
    Breakout update 1.64x faster on 2 cores, benchmarks/README.md); fp32 elsewhere: on CPUs without it, which
    emulate bfloat16 slower than float32, and on CUDA, where the H200 check's three runs found bf16 faster in one
    (Breakout's SPS at the last of 8 updates: 1,359 against 1,225 in fp32, then 1,189 against 1,244 and 1,536
    against 1,603) and Breakout's ratio r_t starting 1.1e-3 away from 1 in bf16 (1.2e-6 in fp32)."""
    if args.precision != "auto":
        return args.precision == "bf16"
    if device.type != "cpu":
        return False
    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


# Copied from common.precision.set_cudnn_flags
def set_cudnn_flags(args: Args) -> None:
    """On a GPU, cuDNN picks the fastest convolution algorithm, or a deterministic one if asked. And float32 is
    computed as float32: by default cuDNN runs float32 convolutions in TF32 (10 mantissa bits) on Ampere and
    later GPUs, where log pi_old of the rollout (batches of N envs) and of the update (minibatches) then differ
    by ~1e-3 and the ratio r_t no longer starts at 1 (benchmarks/gpu_check.py measures it)."""
    torch.backends.cudnn.deterministic = args.torch_deterministic
    torch.backends.cudnn.benchmark = not args.torch_deterministic
    torch.backends.cudnn.allow_tf32 = False


# Copied from common.cli.one_line_help
def one_line_help(cls: type) -> type:
    """Hand tyro each field's docstring as one line, which --help wraps to the terminal's width. tyro keeps the
    line breaks of a docstring whose continuation lines are indented (it joins only lines that start with a
    letter), so --help would break its lines where the source does, mid-sentence. It reads a dataclass field's
    "help" metadata before the docstring: that is where the joined text goes. Returns cls."""
    if cls.__dict__.get("help_joined"):  # (once per process: reading the source takes tens of milliseconds)
        return cls
    body = ast.parse(inspect.getsource(cls)).body[0].body
    for node, doc in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant):
            field = cls.__dataclass_fields__[node.target.id]
            field.metadata = {**field.metadata, "help": " ".join(doc.value.value.split())}
    cls.help_joined = True
    return cls


# Copied from common.distributed.main
def main() -> None:
    with every_rank_agrees():  # under torchrun: a check that one rank refuses, every rank refuses
        args = tyro.cli(one_line_help(Args), description=__doc__)
        if "" in (args.resume, args.play):  # (an empty path would read as not given: a training instead of a play)
            fail(f"--{'resume' if args.resume == '' else 'play'} needs the path of a checkpoint, got ''")
        if args.resume and args.play:
            fail("give either --resume or --play, not both")
        ckpt = None
        if args.resume or args.play:
            args, ckpt = args_from_checkpoint(args)
        args.world_size = int(os.environ.get("WORLD_SIZE", 1))
        check_args(args)
        if args.resume:
            check_resume(args, ckpt)
        if not args.play:
            check_gpus(args)
    try:
        play(args, ckpt) if args.play else train(args, ckpt)
    except KeyboardInterrupt:
        print(f"{SCRIPT}: interrupted", file=sys.stderr)
        raise SystemExit(130)


if __name__ == "__main__":
    main()
