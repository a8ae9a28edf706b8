"""PPO on Atari Breakout from pixels: the Nature CNN, the Atari preprocessing stack, parallel workers, torchrun.

What this lesson teaches
    Learning from the screen. DQN's preprocessing (make_env) turns the game into an MDP a CNN can learn, its state
    s_t the last 4 frames, grayscale 84 x 84. One convolutional trunk (the Nature DQN CNN) feeds both the policy
    head and the value head (Agent); the N envs step in worker processes; torchrun averages several processes'
    gradients.

The loop (each line names the function below that does it)
    for each update i = 1, 2, ..., num_iterations:                                          train()
        lr = alpha_i * learning_rate, alpha_i falling from 1 toward 0 (--anneal-clip: epsilon too)
        run pi_old for T steps in each of N envs; s_t = the last 4 frames                 collect_rollout()
        advantages A_t by GAE, value targets V^targ_t = A_t + V(s_t)                          compute_gae()
        for K epochs, for each shuffled minibatch of M samples:
            log pi(a_t|s_t), S, V(s_t): one pass through the shared CNN           Agent.get_action_and_value()
            r_t = pi(a_t|s_t) / pi_old(a_t|s_t); -L^CLIP from r_t and A_t           clipped_surrogate_loss()
            L^VF, V kept within eps_v of the V that collected the data                  clipped_value_loss()
            loss = -L^CLIP + c1 L^VF - c2 S; one Adam step, gradients averaged over ranks     step_network()
        stop the epochs early once approx KL[pi_old || pi] > target_kl (unset: never)          train()

What you should see
    On the CPU as in Usage (2M frames, about 14 minutes on 2 CPU cores) the score, the mean of the last 20 whole
    games, climbs from about 1 to about 13; the published 40M frames took under 5 hours a seed and ended above 400.
    In a healthy update pi moves little: approx_kl below about 0.004 and clipfrac below about 0.14, both smaller in
    the second half as the learning rate falls. Curves: benchmarks/results/ppo_breakout_atari.png and the longer
    runs' beside it; every figure: benchmarks/README.md, "What a healthy run looks like"; a run that looks
    otherwise: python -m course.diagnose runs/<run>.

Try this (predict, then run; "Measured": the mean of the last 100 whole games at 40M frames, last 20 at 2M on 2
CPU cores; 1-2 seeds)
    python ppo_breakout_atari.py --total-timesteps 10000000 --anneal-clip
        Predict: Table 5 anneals epsilon to 0 with the learning rate; will that end above or below a held 0.1?
        Answer: below, on both seeds (too few to be sure): as epsilon nears 0 the clip stops rewarding almost any
        move of r_t, so late updates can improve pi less.
        Measured: 360.0; the default 419.9
    python ppo_breakout_atari.py --total-timesteps 10000000 --anneal-clip --precision fp32
        Predict: bf16 keeps 8 of float32's 24 significant bits in the CNN; will float32 end higher?
        Answer: no, level with bf16's run of the same seed (one seed: too few to be sure); bf16's rounding
        turns a minibatch's gradient far less than the choice of its samples does.
        Measured: 349.1; bf16 350.2 (seed 1)
    python ppo_breakout_atari.py --total-timesteps 500000 --anneal-clip --precision fp32
        Predict: float32 against bf16 over 2M frames on the CPU: which learns more, and which runs faster?
        Answer: bf16 ended a little higher on both seeds (too few to be sure) and ran faster, 598-600 steps a
        second against 520-534, on a CPU that computes bfloat16 natively (AMX).
        Measured: 12.1; bf16 13.7

Differs from ppo_lunarlander_vec.py in:
    - the Atari wrappers (common/wrappers.py); frames stay uint8 until the network
    - Agent: one CNN trunk for both heads (one forward pass; c1 now matters)
    - `--anneal-clip`: epsilon annealed like the learning rate (Table 5); off by default
    - `--precision`: the CNN in bfloat16 where the hardware computes it natively
    - torch.distributed: gradients averaged over ranks; only rank 0 logs, evaluates and saves
    - scores are whole games (all lives, unclipped); evaluation samples from pi (argmax can loop on a
      deterministic emulator)
    - `--vectorization-mode async` by default: 8 emulators in parallel

Deliberately left out, and the script that has each:
    - continuous actions, observation/reward normalization, adaptive KL penalty (eq. 8) -> ppo_pendulum_continuous.py
    - separate actor and critic CNNs, reward shaping                                  -> ppo_mario_cnn.py

Usage
    python ppo_breakout_atari.py                                       # train 10M frames
    python ppo_breakout_atari.py --total-timesteps 500000 --no-cuda    # 2M frames on the CPU
    torchrun --nproc_per_node 2 ppo_breakout_atari.py                  # 2 processes, 8 envs each
    python ppo_breakout_atari.py --play runs/<run>/checkpoint.pt --capture-video
    tensorboard --logdir runs

References
    [PPO] Schulman et al. 2017, Proximal Policy Optimization Algorithms, arXiv:1707.06347 (eqs. 7, 9, 11, 12;
          Table 5)
    [DQN] Mnih et al. 2015, Human-level control through deep reinforcement learning, Nature 518
    [GAE] Schulman et al. 2016, High-Dimensional Continuous Control Using GAE, arXiv:1506.02438
    [TL]  Pardo et al. 2018, Time Limits in Reinforcement Learning, arXiv:1712.00378
    [37]  Huang et al. 2022, The 37 Implementation Details of Proximal Policy Optimization (ICLR blog track)
"""

from __future__ import annotations

import collections
import functools
from dataclasses import dataclass
from typing import Literal, Optional

import ale_py
import cv2
import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

# "# Copied from common.<module>.<Name>": a copy of common/<module>.py's <Name>, checked by tools.check_copies.

gym.register_envs(ale_py)  # the ALE/... and ...NoFrameskip-v4 ids
VIDEO_STEPS = 2_700  # a recorded game's first 3 minutes at most (2,700 agent steps at 15 fps; 270 MB of frames)


@dataclass
class Hyperparameters:
    """PPO's hyperparameters, each a flag (--learning-rate 1e-3); Args, below the fence, adds the run's flags."""

    # --- environment ---
    env_id: str = "BreakoutNoFrameskip-v4"
    """an Atari game of the ALE that does not skip frames itself (the ...NoFrameskip-v4 ids: MaxAndSkip does
    the skipping); v4 has no sticky actions, as in the paper and in CleanRL's and SB3's Atari results"""
    total_timesteps: int = 2_500_000
    """agent steps to train for, summed over all environments and ranks (one step = 4 frames)"""
    num_envs: int = 8
    """N, environments per rank; each rollout holds N x T transitions"""

    # --- PPO hyperparameters (same order in every script) ---
    learning_rate: float = 2.5e-4
    """the Adam step size at the start of training (Table 5: 2.5e-4 x alpha, alpha annealed from 1 to 0)"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0, as the paper does for Atari (Table 5's alpha)"""
    num_steps: int = 128
    """T, the horizon: steps each env runs per rollout, between two updates (paper: 128 to 2048)"""
    gamma: float = 0.99
    """gamma, the discount of future rewards: the agent looks about 1/(1-gamma) steps ahead (usual 0.9-0.999)"""
    gae_lambda: float = 0.95
    """lambda of GAE: 0 gives the one-step TD advantage (low variance, biased by V), 1 the Monte-Carlo return minus V
    (unbiased, high variance); usual 0.8 to 0.98"""
    minibatch_size: int = 256
    """M, samples per gradient step: each epoch splits the N x T batch into N*T/M shuffled minibatches"""
    update_epochs: int = 4
    """K, passes over each rollout (paper: 3 to 15); more reuse of the data, more risk of moving too far"""
    norm_adv: bool = True
    """normalize advantages to mean 0, std 1 in each minibatch, so the step size does not depend on reward scale (under
    torchrun, each rank over its own minibatch)"""
    clip_coef: float = 0.1
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
    vf_clip_coef: float = 0.1
    """the value clip range (--clip-vloss), in units of the value targets; losses/vf_clipfrac logs how often V moved
    past it"""
    ent_coef: float = 0.01
    """c2, weight of the entropy bonus S (eq. 9): rewards keeping pi spread out, so it keeps exploring (usual 0-0.01)"""
    vf_coef: float = 0.5
    """c1, weight of the value loss in eq. 9's sum, here of the halved squared error (see the loss in train()); usual
    0.5 to 1"""
    max_grad_norm: float = 0.5
    """clip the global norm of the gradient to this, so one bad minibatch cannot make a huge step"""
    target_kl: Optional[float] = None
    """stop the update's epochs early once the approximate KL[pi_old || pi] of an epoch's last minibatch exceeds this
    (usual 0.01-0.05; unset: always run all K epochs)"""
    hidden_size: int = 512
    """width of the fully connected layer after the convolutions (Nature CNN: 512)"""



# --- The environment -----------------------------------------------------------------------------------------


# Copied from common.wrappers.NoopReset
class NoopReset(gym.Wrapper):
    """On reset, take a random number (1 to noop_max) of NOOP actions. The emulator is deterministic: without
    this every episode would start from the same state, and a policy could memorize one opening. The count comes
    from the env's np_random, so a seeded reset repeats."""

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
    """Frame skip: repeat each action for `skip` frames and sum their rewards into one r_t, so the agent acts
    `skip` times less often (fewer steps to run the network on and to carry credit back over). The observation is
    the pixel-wise max of the last two frames: games draw some objects only on every other frame (flicker), and
    the max keeps them in view."""

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
    """Episodic life: losing a life ends the training episode (terminated = True, so no V(s_{t+1}) is bootstrapped
    past a death: the return stops there), but not the game. The reset that follows carries on where the game is;
    only a game over restarts the emulator. The agent learns that a death ends its rewards, yet still sees the
    later, harder parts of the game."""

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
    """Press FIRE on every reset, in games that wait for it (Breakout: it launches the ball), so that no episode
    starts stalled until the policy happens to press it. With EpisodicLife below, that includes the reset after
    each lost life."""

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
    """RGB frame -> grayscale -> size x size (84 x 84), uint8, as DQN preprocessed Atari frames: colour and fine
    detail tell the policy little, and 84 x 84 = 7,056 numbers a frame is 14x fewer than an Atari screen
    (210 x 160 x 3), 26x fewer than the NES's (240 x 256 x 3)."""

    def __init__(self, env: gym.Env, size: int = 84):
        super().__init__(env)
        self.size = size
        self.observation_space = gym.spaces.Box(0, 255, (size, size), np.uint8)

    def observation(self, obs):
        gray = cv2.cvtColor(obs, cv2.COLOR_RGB2GRAY)
        return cv2.resize(gray, (self.size, self.size), interpolation=cv2.INTER_AREA)


# Copied from common.wrappers.ClipReward
class ClipReward(gym.RewardWrapper):
    """Reward clipping: r_t -> its sign (-1, 0 or +1), as in DQN and the PPO paper's Atari runs. Returns and V
    then keep a similar scale in every game, whatever its points, so one learning rate and one set of
    hyperparameters suit them all; the price: Breakout's 7-point brick counts no more than a 1-point one."""

    def reward(self, reward):
        return float(np.sign(reward))


# Copied from common.wrappers.FrameStack
class FrameStack(gym.Wrapper):
    """Frame stack: the observation s_t is the last k frames, stacked on a new first axis ([k, 84, 84], uint8).
    One frame shows where things are, not where they are going: Breakout's ball has a velocity only in the change
    from frame to frame, and pi(a|s_t) needs it to move the paddle to where the ball will be. After a reset, the
    first frame fills all k slots."""

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
    """One game as the agent sees it: the wrappers above, innermost first. RecordEpisodeStatistics sits on the
    emulator, below the life and reward wrappers, so it reports the real game: all lives, the unclipped score."""
    env = checked_env(args, render_mode="rgb_array" if video_folder else None)  # gym.make, refusing bad ids
    env = gym.wrappers.RecordEpisodeStatistics(env)
    env = NoopReset(env, noop_max=30)
    env = MaxAndSkip(env, skip=4)
    if video_folder:
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
    """N copies of make_env in one vector env. An env that ends is reset by the vector env: by default (gymnasium
    >= 1.0) on the NEXT step, a "transition" that must not be trained on; SAME_STEP resets it within the step
    that ended it, so every step is a real transition, the last observation kept in info["final_obs"]."""
    thunk = functools.partial(make_worker_env, args)
    if args.vectorization_mode == "sync":
        return gym.vector.SyncVectorEnv([thunk] * args.num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    return gym.vector.AsyncVectorEnv([thunk] * args.num_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
                                     context=worker_start_method())


# --- The agent: the policy and the value function ------------------------------------------------------------


# Copied from common.ppo.layer_init
def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Module:
    """Orthogonal weights with gain `std`, zero biases ([37] detail 2): an orthogonal matrix keeps its input's
    length (times the gain), so no layer starts out shrinking or blowing up the signal."""
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """The Nature DQN CNN, one trunk for the policy head pi(a|s) and the value head V(s) ([37] Atari detail 8).
    A convolution slides the same small filters over the whole image, so the ball is recognized wherever it is;
    three, each coarser, turn the 4 x 84 x 84 frame stack into 64 maps of 7 x 7, which a fully connected layer
    mixes into the features both heads read. Sharing halves the forward passes, but the value loss (weighted by
    c1) shapes the policy's features too."""

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
        # std 0.01: pi starts near uniform, exploring, with no action preferred by accident ([37] detail 2)
        self.actor = layer_init(nn.Linear(hidden_size, env.action_space.n), std=0.01)
        self.critic = layer_init(nn.Linear(hidden_size, 1), std=1.0)
        # channels-last (NHWC): faster on the CPU
        self.to(memory_format=torch.channels_last)

    def inputs(self, obs: torch.Tensor) -> torch.Tensor:
        """The trunk's input: uint8 frame stacks scaled to [0, 1] only now ([37] Atari detail 9), channels-last,
        bfloat16 under --precision bf16."""
        x = obs.contiguous(memory_format=torch.channels_last) / 255.0
        return x.to(torch.bfloat16) if self.bf16 else x

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The trunk's features of frame stacks, uint8 from the env or already inputs()'s."""
        if x.dtype == torch.uint8:
            x = self.inputs(x)
        # --precision bf16: the trunk in bfloat16, the rest in float32; the rollout runs the same network, so r_t
        # still starts at 1 (up to rounding)
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            hidden = self.trunk(x)
        return hidden.float()

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.features(x)).squeeze(-1)

    def get_action_and_value(self, x: torch.Tensor, action: Optional[torch.Tensor] = None, greedy: bool = False):
        """The action (`action` if given, else sampled from pi(.|x), or its most probable one if greedy),
        log pi(action|x), the entropy H(pi(.|x)) and V(x), from one pass through the trunk."""
        hidden = self.features(x)
        log_pi = self.actor(hidden).log_softmax(-1)  # log pi(a|x) for every action a
        pi = log_pi.exp()
        if action is None:
            action = log_pi.argmax(-1) if greedy else torch.multinomial(pi, 1).squeeze(-1)
        log_prob = log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        entropy = -(pi * log_pi).sum(-1)  # H = -sum_a pi(a|x) log pi(a|x)
        return action, log_prob, entropy, self.critic(hidden).squeeze(-1)


# --- PPO: the rollout, the advantages (GAE) and the losses ---------------------------------------------------


# Copied from common.frames.Rollout
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


def collect_rollout(envs: gym.vector.VectorEnv, agent: Agent, next_obs: np.ndarray, rollout: Rollout,
                    check=lambda: None):
    """Run pi_old for T steps in the N envs, filling `rollout`. Returns the observation to go on from, V of it
    (last_value, for GAE) and the episodes that ended, as (step, return, length)."""
    device = next(agent.parameters()).device
    episodes = []
    for step in range(len(rollout.obs)):
        check()  # Ctrl-C: the run ends here
        rollout.obs[step] = next_obs
        with torch.inference_mode():  # acting needs no gradients: they are recomputed in the update
            action, logprob, _, value = agent.get_action_and_value(torch.as_tensor(next_obs, device=device))
        rollout.actions[step], rollout.logprobs[step], rollout.values[step] = (
            action.cpu().numpy(), logprob.cpu().numpy(), value.cpu().numpy())

        next_obs, rollout.rewards[step], terminated, truncated, info = envs.step(rollout.actions[step])
        rollout.dones[step] = terminated | truncated
        rollout.final_values[step] = 0.0  # terminated: the MDP ended, no future reward: V(s_{t+1}) = 0
        if "final_obs" in info:
            # Truncated (info["final_obs"]: where it ended): a time limit cut the episode where more reward would
            # have come, so bootstrap from V(final observation) ([TL]). Termination wins: TimeLimit also sets
            # truncated when the episode terminated on the limit step, and then V = 0.
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
    """Generalized Advantage Estimation ([GAE]), backwards over a rollout. NumPy arrays [T] (or [T, N]).

    A k-step estimate of A_t sums k rewards, then trusts V: r_t + ... + gamma^(k-1) r_{t+k-1} + gamma^k V(s_{t+k})
    - V(s_t). Small k leans on V (little variance, but V's bias); large k on the rewards (no bias, much variance).
    GAE averages them all with weights (1 - lambda) lambda^(k-1): lambda = 0 is the one-step delta_t, lambda = 1
    the whole return minus V. The average sums to the recursion below.

    dones[t] = 1 where an episode ended at step t: no advantage flows back across it, and final_values[t] is its
    V(s_{t+1}), 0 after a termination, V(final observation) after a truncation. last_value = V(s_T).
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

    By cases (the paper's Figure 1). A_t > 0, an action better than average: L^CLIP grows with r_t up to 1 + eps,
    then is flat, so nothing is gained by making a_t more likely than that. A_t < 0: it grows as r_t falls to
    1 - eps, then is flat. The min keeps the unclipped term where it is smaller, so a move the wrong way is never
    clipped away. Flat means a zero gradient: the clip removes the incentive to push r_t further, not the move.
    """
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_coef, 1.0 + clip_coef) * advantages
    return -torch.min(unclipped, clipped).mean()


# Copied from common.ppo.clipped_value_loss
def clipped_value_loss(newvalue, oldvalue, returns, vf_clip_coef: float) -> torch.Tensor:
    """L^VF with the value clipped like the ratio ([37] detail 9):
    0.5 * max((V - V^targ)^2, (V_old + clip(V - V_old, -eps_v, eps_v) - V^targ)^2)

    Like L^CLIP, a pessimistic bound: moving V further than eps_v from the V that collected the data earns no
    more credit. The paper uses the plain squared error; baselines and CleanRL clip (whether it helps: README.md).
    """
    clipped = oldvalue + torch.clamp(newvalue - oldvalue, -vf_clip_coef, vf_clip_coef)
    return 0.5 * torch.max((newvalue - returns) ** 2, (clipped - returns) ** 2).mean()


# Copied from common.distributed.step_network
def step_network(optimizer: optim.Optimizer, loss: torch.Tensor, parameters, args: Args) -> None:
    """One gradient step of one network (its `parameters`) on `loss`."""
    parameters = list(parameters)  # (read twice below: a generator such as agent.parameters() would run dry)
    optimizer.zero_grad()
    loss.backward()
    all_ranks_mean_grads(parameters, args)  # (torchrun: every process takes the same step, the mean one)
    # Global gradient clipping ([37] detail 11): all gradients scaled down together to a norm of at most
    # max_grad_norm, so one unlucky minibatch cannot take a huge step.
    nn.utils.clip_grad_norm_(parameters, args.max_grad_norm)
    optimizer.step()


# --- Training: the PPO loop ----------------------------------------------------------------------------------


def train(args: Args, ckpt: Optional[dict]) -> None:
    args.batch_size = args.num_envs * args.num_steps
    run = Run(args, ckpt)  # processes (torchrun), seeds, run folder, log, checkpoints, Ctrl-C: below the fence
    device = run.device
    args.num_iterations = args.total_timesteps // (args.num_steps * run.parallel_envs)  # N envs on every process

    with make_env(args) as env:  # one env, to read the spaces off
        agent = Agent(env, args.hidden_size, use_bf16(args, device)).to(device)
    envs = make_envs(args)
    # Adam's eps 1e-5, not 1e-8 ([37] detail 3): it bounds the step of a weight whose gradients were near zero.
    optimizer = adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    global_step, start_iteration, log = run.start(agent, optimizer)  # 0 and 1 in a new run
    rollout = Rollout(args.num_steps, args.num_envs, envs.single_observation_space.shape)
    next_obs = run.first_observation(envs)  # seeded from --seed

    for iteration in range(start_iteration, args.num_iterations + 1):
        # Annealing ([37] detail 4): lr_i = alpha_i * learning_rate, alpha_i = 1 - (i - 1) / num_iterations (Table 5):
        # large steps while the policy is poor, smaller ones as it settles.
        alpha = run.alpha(iteration)
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = alpha * args.learning_rate
        # Table 5 anneals epsilon too (--anneal-clip): the objective stops rewarding a move of r_t ever sooner as
        # training goes on. Held at 0.1 by default, as in CleanRL: at 40M frames it ended above annealing on both seeds.
        clip_coef = alpha * args.clip_coef if args.anneal_clip else args.clip_coef

        # --- Rollout: run the current policy pi_old for T steps in each of the N envs -----------------------
        next_obs, last_value, episodes = collect_rollout(envs, agent, next_obs, rollout, run.check)
        for step, episodic_return, length in episodes:  # rank 0's games: the whole game's real score
            log.episode(episodic_return, length, global_step + (step + 1) * run.parallel_envs)
        global_step += args.num_steps * run.parallel_envs

        # --- Advantages: how much better each action turned out than pi's average from its state -------------
        # A_t > 0 makes a_t more likely, A_t < 0 less. Subtracting the baseline V(s_t) keeps the gradient right on
        # average and takes out what any action from s_t would have got: most of the return's noise.
        advantages = compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.final_values, last_value,
                                 args.gamma, args.gae_lambda)
        returns = advantages + rollout.values  # the value targets V^targ_t = A_t + V(s_t)
        # Flatten [T, N] into one batch of N*T samples: after GAE, the order of the samples no longer matters.
        b_obs, b_actions, b_logprobs, b_advantages, b_returns, b_values = (
            torch.as_tensor(x, device=device).flatten(0, 1)
            for x in (rollout.obs, rollout.actions, rollout.logprobs, advantages, returns, rollout.values)
        )
        b_obs = agent.inputs(b_obs)  # scaled once here, for all the epochs below

        # --- Update: K epochs of minibatch gradient steps on L^{CLIP+VF+S} ----------------------------------
        # The ratio r_t = pi(a_t|s_t) / pi_old(a_t|s_t) reweights pi_old's samples to what pi would see (importance
        # sampling), so one rollout serves K epochs, while pi stays near pi_old: the clip keeps it there.
        clipfracs, vf_clipfracs = [], []
        for epoch in range(args.update_epochs):
            for mb in torch.randperm(args.batch_size, device=device).split(args.minibatch_size):
                run.check()  # Ctrl-C: the run ends here
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                # r_t as exp(log pi - log pi_old): stable where a ratio of small probabilities is not
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    # KL[pi_old || pi] on the minibatch, two unbiased estimates (http://joschu.net/blog/kl-approx.html):
                    # the mean of -log r_t, noisy, even negative; approx_kl, of (r_t - 1) - log r_t, never negative,
                    # less noisy, and what --target-kl reads.
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    # (torchrun: the mean over the processes, so that they all stop at the same epoch)
                    old_approx_kl, approx_kl = all_ranks_mean(torch.stack([old_approx_kl, approx_kl]), args)
                    clipfracs.append(((ratio - 1.0).abs() > clip_coef).float().mean().item())

                # Normalized per minibatch ([37] detail 7): the step's size no longer depends on the rewards' scale.
                mb_advantages = b_advantages[mb]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                pg_loss = clipped_surrogate_loss(ratio, mb_advantages, clip_coef)
                if args.clip_vloss:
                    v_loss = clipped_value_loss(newvalue, b_values[mb], b_returns[mb], args.vf_clip_coef)
                    # the share of samples whose V moved past the clip range: where the clip can act
                    vf_clipfracs.append(((newvalue - b_values[mb]).abs() > args.vf_clip_coef).float().mean().item())
                else:  # L^VF = (V(s_t) - V^targ_t)^2 (eq. 9), halved so that its gradient is the error
                    v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                entropy_loss = entropy.mean()
                # Maximize L^CLIP - c1 L^VF + c2 S (eq. 9): c1 weighs the critic's error, c2 the entropy bonus that
                # keeps pi spread over the actions, still exploring.
                loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy_loss

                step_network(optimizer, loss, agent.parameters(), args)

            # Early stop: once pi has drifted this far from pi_old, more epochs on the same data would take it
            # past where the samples say anything (Spinning Up's PPO checks before every step; this check, like
            # CleanRL's, comes after each epoch and reads approx_kl of that epoch's last minibatch only).
            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        # --- Logging: the losses and KL estimates are the last minibatch's (clipfrac: the mean over all of them)
        log.update(global_step, args.num_steps * run.parallel_envs, {
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
            run.evaluate(agent, global_step)  # (under torchrun, rank 0 plays while the others wait)

        run.after_update(iteration, global_step)  # a checkpoint every few updates (Ctrl-C: run.check())

    run.close()


# =========================================================================================================
# The rest is plumbing, skippable on a first read: device and process settings, bad-input checks, run folders
# and logging, Ctrl-C, checkpoints and resume, evaluation and play, the --help texts
# and torchrun and precision (nothing of PPO, which is all above)
# =========================================================================================================

import ast  # (the plumbing's own imports: PPO above needs none of them)
import contextlib
import copy
import dataclasses
import inspect
import io
import multiprocessing
import os
import random
import signal
import sys
import time

import torch.distributed as dist
import tqdm
import tyro
from torch.utils.tensorboard import SummaryWriter

SCRIPT = os.path.basename(__file__)


@dataclass
class Args(Hyperparameters):
    """The command line: PPO's hyperparameters (Hyperparameters, above) and the flags for running the script."""

    vectorization_mode: Literal["sync", "async"] = "async"
    """sync: step the N envs one after another in this process; async: one process per env, stepped in parallel (pays
    off when an env step costs more than sending its data between processes, and there are cores to run them on)"""
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


def checked_env(args: Args, render_mode: Optional[str]) -> gym.Env:
    """gym.make(--env-id), or one line and exit 2 where it cannot be made or is not this script's: an Atari game of
    the ALE that does not skip frames itself (MaxAndSkip does)."""
    try:
        env = gym.make(args.env_id, render_mode=render_mode)
    except (gym.error.Error, ModuleNotFoundError) as e:  # unknown id or version, no dependency, no module
        fail(f"cannot make --env-id {args.env_id!r}: {e}")
    if not isinstance(env.unwrapped, ale_py.AtariEnv):
        fail(f"--env-id {args.env_id} is not an Atari game; this script needs one of the ALE, e.g. "
             "BreakoutNoFrameskip-v4 (for flat observations use ppo_lunarlander_vec.py)")
    if env.unwrapped._frameskip != 1:
        fail(f"--env-id {args.env_id} skips frames itself; this script skips them with MaxAndSkip: use a "
             "NoFrameskip-v4 id (e.g. BreakoutNoFrameskip-v4)")
    return env


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


# Copied from common.distributed.Run
class Run:
    """common.runs.Run's twin for the scripts that can train under torchrun: what train() needs that is not PPO,
    behind a few calls. Here it also holds the processes (ranks, one a GPU or a share of the CPU) that torchrun
    starts, each running N envs and averaging its gradients with the others, and Ctrl-C stops mid-update: check(),
    called at every rollout step and before every gradient step, saves the last complete update and ends the run."""

    def __init__(self, args: Args, ckpt: Optional[dict]):
        self.args, self.ckpt = args, ckpt
        self.rank, self.device = setup_distributed(args)  # under torchrun: this process's rank and its device
        # the envs stepped together, N on each rank: global_step counts the steps of them all
        self.parallel_envs = args.num_envs * args.world_size
        seed_everything(args, self.rank, self.device)  # each rank's generators seeded with seed + rank
        self.dir = run_folder(args)  # runs/<env-id>__<exp-name>__<seed>__<time>/, or the resumed run's own
        # where --capture-video records (a resumed run: a folder of its own); None without it
        self.videos = videos_folder(args, self.dir) if args.capture_video else None

    def start(self, agent: nn.Module, optimizer: optim.Optimizer) -> tuple[int, int, RunLog]:
        """(global_step, first update, log): 0 and 1 for a new run; for a resumed one the checkpoint's, with the
        weights, the optimizer's state, this rank's random generators and the annealing schedule restored. Every
        rank takes rank 0's weights. Opens the log (rank 0 writes it) and takes the first snapshot for Ctrl-C."""
        self.agent, self.optimizer = agent, optimizer
        global_step, start_iteration, self.schedule = restore_run(self.args, self.ckpt, agent, optimizer, self.device,
                                                                  self.rank)
        self.log = RunLog(self.args, self.dir, self.device, global_step, self.rank)
        self.checkpoint_path = os.path.join(self.dir, "checkpoint.pt")
        self.stopper = Stopper(self.args, self.rank, self.device)
        self.stopper.snapshot = checkpoint_state(self.args, agent, optimizer, global_step, start_iteration - 1,
                                                 self.schedule)
        self.global_step = global_step
        return global_step, start_iteration, self.log

    def first_observation(self, envs) -> np.ndarray:
        """Reset the envs for the first rollout: env i of rank r seeded from seed + r N + i and the step count (a
        resumed run starts fresh episodes, not the ones it started with)."""
        self.vector_env = envs  # (closed by close())
        obs, _ = envs.reset(seed=self.args.seed + self.rank * self.args.num_envs + self.global_step)
        return obs

    def alpha(self, iteration: int) -> float:
        """Table 5's alpha for update `iteration`: 1 - (i - 1) / num_iterations, falling from 1 toward 0. In a run
        resumed with a larger --total-timesteps the schedule's scale makes it go on from its last value over the
        added updates, never up (resumed_schedule); in every other run the scale is 1."""
        return self.schedule["scale"] * (1.0 - (iteration - 1) / self.schedule["num_iterations"])

    def check(self) -> None:
        """Ctrl-C, under torchrun on any rank (the ranks agree on it: Stopper): save the last complete update and
        end the run now (exit 130). Called between rollout steps and before gradient steps."""
        if self.stopper.check():
            self.close()

    def evaluate(self, agent: nn.Module, global_step: int):
        """evaluate_and_log on rank 0 (what it returns), while the other ranks wait for it (None)."""
        if self.rank == 0:
            return evaluate_and_log(self.args, agent, self.log, self.videos, global_step, self.stopper)
        return self.stopper.wait_for_rank_0()

    def after_update(self, iteration: int, global_step: int, last: bool = False) -> None:
        """The end of update `iteration` (`last`: the run ends after it): the snapshot a Ctrl-C would save, taken on
        every rank; rank 0 saves it every --checkpoint-every updates and after the last."""
        self.global_step = global_step
        self.stopper.snapshot = checkpoint_state(self.args, self.agent, self.optimizer, global_step, iteration,
                                                 self.schedule)
        every = self.args.checkpoint_every
        if self.rank == 0 and (last or iteration == self.args.num_iterations or (every and iteration % every == 0)):
            save_checkpoint(self.checkpoint_path, self.stopper.snapshot)

    def close(self) -> None:
        """End the run: end_of_run (a Ctrl-C's checkpoint, the log and the envs closed, the process group left; exit
        130 after a Ctrl-C)."""
        end_of_run(self.log, self.vector_env, self.checkpoint_path, self.stopper)


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
    "help" metadata before the docstring: that is where the joined text goes. The fields cls inherits (Args's from
    Hyperparameters) are read in their own class's source. Returns cls."""
    if cls.__dict__.get("help_joined"):  # (once per process: reading the source takes tens of milliseconds)
        return cls
    for klass in [k for k in cls.__mro__ if dataclasses.is_dataclass(k)]:
        body = ast.parse(inspect.getsource(klass)).body[0].body
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
