"""PPO with memory: an LSTM policy on CartPole with the velocities hidden.

What this lesson teaches
    An observation that does not say everything: CartPoleNoVel shows where the cart and the pole are, not how fast
    they move, so one observation cannot tell a pole falling left from one rising left. The agent needs memory: an
    LSTM whose state h_t sums up the observations so far, stored where each rollout starts, reset where an episode
    ends, and replayed in the update over minibatches of whole envs, so that pi sees what it saw when it acted.

The loop (each line names the function below that does it)
    for each update i = 1, 2, ..., num_iterations:                                 train()
        lr = alpha_i * learning_rate, alpha_i falling linearly from 1 toward 0
        keep the LSTM state the N envs start the rollout in                       collect_rollout()
        run pi_old for T steps, the state carried from step to step, zeroed at each episode's first step
        advantages A_t by GAE down each env's column; V^targ_t = A_t + V(s_t)      compute_gae()
        for K epochs, for each shuffled minibatch of whole envs:
            replay their T steps from the kept state: log pi(a_t|h_t), S, V(h_t)    Agent.get_action_and_value()
            r_t = pi(a_t|h_t) / pi_old(a_t|h_t); -L^CLIP from r_t and A_t          clipped_surrogate_loss()
            L^VF, V held near its old value                                        clipped_value_loss()
            loss = -L^CLIP + c1 L^VF - c2 S; one Adam step, gradient clipped       train()
        every few updates: the greedy policy's return, its state carried too      evaluate_and_log()

What you should see
    The return (the mean of the last 20 episodes, sampled actions) starts near 20 and passes 475, CartPole's
    "solved", after 81k to 174k steps (5 seeds, median 112k); a 500,000-step run took 5 to 8 minutes on 2 CPU cores.
    It does not always stay there: over the last 10% of the steps the seeds averaged 258 to 484, and the greedy
    policy of the final evaluation balanced all 500 steps on 4 of 5 seeds. Without the LSTM (--no-lstm) the return
    stays near 45. Curves of 5 seeds and every range: benchmarks/README.md, "Memory"; a run that looks otherwise:
    python -m course.diagnose runs/<run>.

Try this (predict, then run; "Measured": the record's 5 seeds a setting against the LSTM's, the training return over
the last 10% of the steps, 95% Welch interval, Holm-corrected verdict; benchmarks/README.md, "Memory")
    python ppo_lstm_memory.py --no-lstm
        Predict: a feed-forward layer where the LSTM was, seeing only the current x and theta: how far does it get?
        Answer: not far: it cannot tell which way the pole moves, so it pushes on the angle alone, too late.
        Measured: -374.9 [-492.5, -257.3], hurts (a return of 45; no seed reached 475)
    python ppo_lstm_memory.py --no-lstm --frame-stack 4
        Predict: the last 4 observations side by side, no LSTM. Do two frames in a row give the velocities back?
        Answer: they do: theta_t - theta_{t-1} is the angular velocity times the step, and a layer can take the
        difference; all 5 seeds reached 475 (median 181k steps). A stack is a fixed memory of 4 steps; the LSTM
        learns what to keep, which a task whose clue comes long before it is needed would require.
        Measured: -53.1 [-240.2, 133.9], not detected (could detect 319)
    python ppo_lstm_memory.py --no-norm-obs
        Predict: the observations as the env gives them, theta within +-0.21 rad: slower to learn?
        Answer: slower to reach 475 (median 271k steps against 112k), but not detectably worse at the end.
        Measured: +13.4 [-102.2, 129.0], not detected (could detect 200)

Differs from ppo_lunarlander_vec.py in:
    - the env: CartPoleNoVel-v1, CartPole-v1 with the velocities hidden (`CartPoleNoVelEnv`); `--frame-stack`
    - an LSTM between the encoder and the heads, shared by actor and critic (`Agent`, `--lstm`)
    - the rollout keeps the state it starts from and each step's episode-start flag (`Rollout`, `collect_rollout`);
      the update replays minibatches of whole envs from it; evaluation and --play carry the state too
    - observations standardized by running statistics (`RunningMeanStd`, `--norm-obs`, as in Pendulum's lesson)
    - the hyperparameters of this task: 16 envs x 32 steps, gamma 0.98, lambda 0.8, 10 epochs of minibatches of 4
      envs, no entropy bonus

Usage
    python ppo_lstm_memory.py
    python ppo_lstm_memory.py --play runs/<run>/checkpoint.pt --capture-video
    tensorboard --logdir runs

References
    [PPO] Schulman et al. 2017, Proximal Policy Optimization Algorithms, arXiv:1707.06347 (eqs. 7, 9, 11, 12)
    [GAE] Schulman et al. 2016, High-Dimensional Continuous Control Using GAE, arXiv:1506.02438
    [TL]  Pardo et al. 2018, Time Limits in Reinforcement Learning, arXiv:1712.00378
    [37]  Huang et al. 2022, The 37 Implementation Details of Proximal Policy Optimization (ICLR blog track)
    [LSTM] Hochreiter & Schmidhuber 1997, Long Short-Term Memory, Neural Computation 9(8)
    [DRQN] Hausknecht & Stone 2015, Deep Recurrent Q-Learning for Partially Observable MDPs, arXiv:1507.06527
    [CleanRL] cleanrl/ppo_atari_lstm.py: the state kept at the rollout's start, minibatches of whole envs
    [sb3-contrib] RecurrentPPO (sb3_contrib/ppo_recurrent): the state kept at every step, minibatches of sequences
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal, Optional

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

# "# Copied from common.<module>.<Name>": a copy of common/<module>.py's <Name>, checked by tools.check_copies.


@dataclass
class Hyperparameters:
    """PPO's hyperparameters, each a flag (--learning-rate 1e-3); Args, below the fence, adds the run's flags."""

    # --- environment ---
    env_id: str = "CartPoleNoVel-v1"
    """Gymnasium id of the environment: it needs a Discrete action space and a flat Box observation"""
    total_timesteps: int = 500_000
    """environment steps to train for, summed over all environments"""
    num_envs: int = 16
    """N, environments stepped together; each rollout holds N x T transitions"""
    frame_stack: int = 1
    """observations side by side in one input: 1 is the current one alone; k > 1 the last k, a memory of a fixed k
    steps with no LSTM needed (gymnasium's FrameStackObservation)"""

    # --- PPO hyperparameters (same order in every script) ---
    learning_rate: float = 1e-3
    """the Adam step size at the start of training (paper: 3e-4 on MuJoCo, 2.5e-4 on Atari; SB3 zoo's CartPole: 1e-3)"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0, as the paper does for Atari (Table 5's alpha)"""
    num_steps: int = 32
    """T, the horizon: steps each env runs per rollout, between two updates (paper: 128 to 2048); here also how far
    back the update's gradient reaches through the LSTM (truncated backpropagation through time)"""
    gamma: float = 0.98
    """gamma, the discount of future rewards: the agent looks about 1/(1-gamma) steps ahead (usual 0.9-0.999)"""
    gae_lambda: float = 0.8
    """lambda of GAE: 0 gives the one-step TD advantage (low variance, biased by V), 1 the Monte-Carlo return minus V
    (unbiased, high variance); usual 0.8 to 0.98"""
    minibatch_size: int = 128
    """M, samples per gradient step: whole envs' T-step rollouts, M / T envs at a time, so that the LSTM replays each
    env's steps in order from the state it started the rollout in (M a multiple of --num-steps)"""
    update_epochs: int = 10
    """K, passes over each rollout (paper: 3 to 15); more reuse of the data, more risk of moving too far"""
    norm_adv: bool = True
    """normalize advantages to mean 0, std 1 in each minibatch, so the step size does not depend on reward scale"""
    clip_coef: float = 0.2
    """epsilon, the clip range of the probability ratio (eq. 7): once r_t is outside [1 - epsilon, 1 + epsilon], the
    objective stops rewarding a further move (usual 0.1-0.3)"""
    clip_vloss: bool = True
    """clip the value loss too: once V is more than --vf-clip-coef away from the V that collected the data, the loss
    stops rewarding a further move"""
    vf_clip_coef: float = 10.0  # returns reach 1/(1 - gamma) = 50 here: 0.2 would hold V back
    """the value clip range (--clip-vloss), in units of the value targets; losses/vf_clipfrac logs how often V moved
    past it"""
    ent_coef: float = 0.0  # rl-baselines3-zoo's RecurrentPPO on CartPoleNoVel-v1: 0 too
    """c2, weight of the entropy bonus S (eq. 9): rewards keeping pi spread out, so it keeps exploring (usual 0-0.01)"""
    vf_coef: float = 0.5
    """c1, weight of the value loss in eq. 9's sum, here of the halved squared error (see the loss in train())"""
    max_grad_norm: float = 0.5
    """clip the global norm of the gradient to this, so one bad minibatch cannot make a huge step"""
    target_kl: Optional[float] = None
    """stop the update's epochs early once the approximate KL[pi_old || pi] of an epoch's last minibatch exceeds this
    (usual 0.01-0.05; unset: always run all K epochs)"""
    hidden_size: int = 64
    """width of the encoder, of the LSTM's state and of the layer that replaces it with --no-lstm"""
    lstm: bool = True
    """the LSTM between the encoder and the heads; --no-lstm: a feed-forward layer of the same width in its place,
    which sees only the current input (the memoryless baseline)"""
    norm_obs: bool = True
    """standardize observations with running mean and variance, (s - mean) / std, clipped to +-10"""


# --- The environment -----------------------------------------------------------------------------------------


class CartPoleNoVelEnv(CartPoleEnv):
    """CartPole-v1 with the velocities hidden: the observation is (x, theta), the cart's position and the pole's
    angle; x_dot and theta_dot, 1 and 3 of CartPole's four, are dropped. The task is partially observable: the
    state the physics steps from is not in the observation, so no function of one observation can act as well as
    a function of the state can. (rl-baselines3-zoo's CartPoleNoVel-v1 is the same task.)"""

    VISIBLE = [0, 2]  # x, theta

    def __init__(self, render_mode: Optional[str] = None):
        super().__init__(render_mode=render_mode)
        space = self.observation_space
        self.observation_space = gym.spaces.Box(space.low[self.VISIBLE], space.high[self.VISIBLE], dtype=np.float32)

    def reset(self, **kwargs):
        obs, info = super().reset(**kwargs)
        return obs[self.VISIBLE], info

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs[self.VISIBLE], reward, terminated, truncated, info


# gym.make("CartPoleNoVel-v1") from here on, with CartPole-v1's time limit and its threshold of "solved".
if "CartPoleNoVel-v1" not in gym.registry:  # (once: the script may be imported under two names)
    gym.register("CartPoleNoVel-v1", entry_point=CartPoleNoVelEnv, max_episode_steps=500, reward_threshold=475.0)


def make_env(args: Args, video_folder: Optional[str] = None, video_trigger=None) -> gym.Env:
    """The wrapper stack: --frame-stack k puts the last k observations side by side in one flat vector (an episode's
    first observation repeated until there are k); RecordEpisodeStatistics reports each finished episode in
    info["episode"]."""
    env = checked_env(args, render_mode="rgb_array" if video_folder else None)  # gym.make, refusing bad ids
    if video_folder:
        env = record_video(env, video_folder, video_trigger)
    if args.frame_stack > 1:
        env = gym.wrappers.FlattenObservation(gym.wrappers.FrameStackObservation(env, args.frame_stack))
    return gym.wrappers.RecordEpisodeStatistics(env)


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


# --- The agent: the policy and the value function, with memory -----------------------------------------------


# Copied from common.ppo.layer_init
def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Module:
    """Orthogonal weights with gain `std`, zero biases ([37] detail 2): an orthogonal matrix keeps its input's
    length (times the gain), so no layer starts out shrinking or blowing up the signal."""
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


# Copied from common.ppo.RunningMeanStd
class RunningMeanStd(nn.Module):
    """Running mean and variance of all `update` saw. Buffers: saved, not trained."""

    def __init__(self, shape: tuple = ()):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))  # never divide by 0

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        x = x.reshape(-1, *self.mean.shape).to(self.mean)
        batch_mean, batch_var, batch_count = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta, total = batch_mean - self.mean, self.count + batch_count
        # Chan et al.'s merge of two batches' statistics
        self.var.copy_((self.var * self.count + batch_var * batch_count
                        + delta**2 * self.count * batch_count / total) / total)
        self.mean.add_(delta * batch_count / total)
        self.count.copy_(total)


class Agent(nn.Module):
    """The policy pi(a|h_t) and the value V(h_t) on one encoder and one LSTM: h_t, the LSTM's output after step t,
    is computed from this observation and the state (h_{t-1}, c_{t-1}) that the earlier ones left, so it can hold
    what one observation lacks (here, which way and how fast the pole moves).

    The LSTM ([LSTM]) keeps two vectors: c, its memory, which gates decide to keep, forget or overwrite at each step,
    and h = gated tanh(c), what it shows the heads. Its state must start from zeros at each episode's first step:
    the last episode's pole says nothing about this one's. CleanRL's ppo_atari_lstm.py shares the LSTM between
    actor and critic, as here; sb3-contrib's RecurrentPPO gives the critic an LSTM of its own by default.
    """

    def __init__(self, env: gym.Env, hidden_size: int, lstm: bool = True, norm_obs: bool = True):
        super().__init__()
        obs_size, h = env.observation_space.shape[0], hidden_size
        self.norm_obs = norm_obs
        self.obs_rms = RunningMeanStd(env.observation_space.shape)
        self.encoder = nn.Sequential(layer_init(nn.Linear(obs_size, h)), nn.Tanh())
        if lstm:
            self.memory = nn.LSTMCell(h, h)
            # Orthogonal weights and zero biases, as every layer here (CleanRL does the same for its LSTM).
            for name, param in self.memory.named_parameters():
                torch.nn.init.orthogonal_(param, 1.0) if "weight" in name else torch.nn.init.constant_(param, 0.0)
        else:  # --no-lstm: the same width, no state (what it is handed is passed through untouched)
            self.memory = nn.Sequential(layer_init(nn.Linear(h, h)), nn.Tanh())
        self.hidden_size = h
        # std 0.01: pi starts near uniform, exploring, with no action preferred by accident ([37] detail 2)
        self.actor = layer_init(nn.Linear(h, env.action_space.n), std=0.01)
        self.critic = layer_init(nn.Linear(h, 1), std=1.0)

    def initial_state(self, num_envs: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(h, c) of N envs before their first step: zeros, [N, hidden_size] each."""
        device = next(self.parameters()).device
        return (torch.zeros(num_envs, self.hidden_size, device=device),
                torch.zeros(num_envs, self.hidden_size, device=device))

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """(s - mean) / sqrt(var + 1e-8), clipped to +-10 ([37] continuous details 6, 7); the identity with
        --no-norm-obs. Why here, where CartPole-v1's MLP needs none: the velocities must be read off the change of
        theta from one step to the next, and theta never leaves +-0.21 rad (the episode ends there), so its changes
        reach an encoder of unit-scale weights as tiny differences; standardized, they are differences of the
        angle's own spread. (What it does to learning: benchmarks/README.md, "Memory".)"""
        if not self.norm_obs:
            return x
        std = torch.sqrt(self.obs_rms.var + 1e-8)
        return ((x - self.obs_rms.mean) / std).clamp(-10.0, 10.0).to(x.dtype)

    def get_states(self, x: torch.Tensor, state: tuple, starts: torch.Tensor):
        """The LSTM run over T steps of N envs, step by step: x [T, N, obs], starts [T, N] (1 where x[t] is an
        episode's first observation), state (h, c) before step 0. Returns h_t for every step, [T, N, hidden], and the
        state after the last step."""
        features = self.encoder(self.normalize(x))
        if not isinstance(self.memory, nn.LSTMCell):
            return self.memory(features), state
        outputs = []
        for feature, start in zip(features, starts):
            # A new episode starts from zeros: (1 - start) wipes the state an env's last episode left.
            keep = (1.0 - start).unsqueeze(-1)
            state = self.memory(feature, (keep * state[0], keep * state[1]))  # (h_t, c_t)
            outputs.append(state[0])
        return torch.stack(outputs), state

    def get_value(self, x: torch.Tensor, state: tuple, starts: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.get_states(x, state, starts)
        return self.critic(hidden).squeeze(-1)

    def get_action_and_value(self, x: torch.Tensor, state: tuple, starts: torch.Tensor,
                             action: Optional[torch.Tensor] = None, greedy: bool = False):
        """Over T steps of N envs from `state`: the actions (`action` if given, else sampled from pi(.|h_t), or the
        most probable one if greedy), log pi(action|h_t), the entropy H(pi(.|h_t)), V(h_t), each [T, N], and the
        LSTM state after the last step."""
        hidden, state = self.get_states(x, state, starts)
        log_pi = self.actor(hidden).log_softmax(-1)  # log pi(a|h_t) for every action a
        pi = log_pi.exp()
        if action is None:
            action = log_pi.argmax(-1) if greedy else torch.multinomial(pi.flatten(0, -2), 1).view(pi.shape[:-1])
        log_prob = log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        entropy = -(pi * log_pi).sum(-1)  # H = -sum_a pi(a|h_t) log pi(a|h_t)
        return action, log_prob, entropy, self.critic(hidden).squeeze(-1), state


# --- PPO: the rollout, the advantages (GAE) and the losses ---------------------------------------------------


class Rollout:
    """One rollout, a [T, N] NumPy array per quantity (each column one env's trajectory, which GAE follows back and
    the update replays), and the LSTM state (h, c) the N envs started it in."""

    def __init__(self, num_steps: int, num_envs: int, obs_shape: tuple):
        self.obs = np.zeros((num_steps, num_envs) + obs_shape, dtype=np.float32)
        self.starts = np.zeros((num_steps, num_envs), dtype=np.float32)  # 1 where obs[t] begins an episode
        self.actions = np.zeros((num_steps, num_envs), dtype=np.int64)
        self.logprobs = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.rewards = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.dones = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.values = np.zeros((num_steps, num_envs), dtype=np.float32)
        self.final_values = np.zeros((num_steps, num_envs), dtype=np.float32)  # V(s_{t+1}) where an episode ended
        self.initial_state = None  # (h, c) before step 0, [N, hidden] each


def collect_rollout(envs: gym.vector.VectorEnv, agent: Agent, memory: tuple, rollout: Rollout):
    """Run pi_old for T steps in the N envs, filling `rollout`. `memory` is what the last rollout left: (next_obs,
    starts, state), the observation to go on from, which envs begin an episode with it, and the LSTM state. Returns
    the memory to go on from, V of next_obs (last_value, for GAE) and the episodes that ended, as (step, return,
    length)."""
    device = next(agent.parameters()).device
    next_obs, starts, state = memory
    rollout.initial_state = state  # what the update replays each env's T steps from
    episodes = []
    for step in range(len(rollout.obs)):
        rollout.obs[step], rollout.starts[step] = next_obs, starts
        with torch.inference_mode():  # acting needs no gradients: they are recomputed in the update
            obs_t, starts_t = (torch.as_tensor(v, device=device)[None] for v in (next_obs, starts))  # T = 1
            action, logprob, _, value, state = agent.get_action_and_value(obs_t, state, starts_t)
        rollout.actions[step], rollout.logprobs[step], rollout.values[step] = (
            action[0].cpu().numpy(), logprob[0].cpu().numpy(), value[0].cpu().numpy())

        next_obs, rollout.rewards[step], terminated, truncated, info = envs.step(rollout.actions[step])
        rollout.dones[step] = terminated | truncated
        rollout.final_values[step] = 0.0  # terminated: the MDP ended, there is no future reward, V(s_{t+1}) = 0
        if "final_obs" in info:
            # Some envs ended here and were reset already (SAME_STEP): next_obs is their new episode's first
            # observation, info["final_obs"] the one they ended on. Truncated: a time limit cut the episode where
            # more reward would have come, so bootstrap from V(final observation) ([TL]), read by the LSTM from
            # the state the episode reached. Termination wins: TimeLimit also sets truncated when the episode
            # terminated on the limit step, and then V = 0.
            bootstrap = truncated & ~terminated
            if bootstrap.any():
                final_obs = torch.as_tensor(np.stack(info["final_obs"][bootstrap]).astype(np.float32), device=device)
                with torch.inference_mode():
                    rollout.final_values[step, bootstrap] = agent.get_value(
                        final_obs[None], (state[0][bootstrap], state[1][bootstrap]),
                        torch.zeros(1, int(bootstrap.sum()), device=device))[0].cpu().numpy()
            stats = info["final_info"]["episode"]
            for i in np.flatnonzero(info["final_info"]["_episode"]):
                episodes.append((step, float(stats["r"][i]), int(stats["l"][i])))
        starts = rollout.dones[step].copy()  # an env that ended starts an episode at the next step: its state is wiped then
    with torch.inference_mode():
        obs_t, starts_t = (torch.as_tensor(v, device=device)[None] for v in (next_obs, starts))
        last_value = agent.get_value(obs_t, state, starts_t)[0].cpu().numpy()
    return (next_obs, starts, state), last_value, episodes


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


# --- Training: the PPO loop ----------------------------------------------------------------------------------


def train(args: Args, ckpt: Optional[dict]) -> None:
    args.batch_size = args.num_envs * args.num_steps
    args.num_iterations = args.total_timesteps // args.batch_size
    run = Run(args, ckpt)  # seeds, run folder, log, checkpoints, Ctrl-C: the plumbing, below the fence
    device = run.device

    with make_env(args) as env:  # one env, to read the spaces off
        agent = Agent(env, args.hidden_size, args.lstm, args.norm_obs).to(device)
    envs = make_envs(args)
    # Adam's eps 1e-5, not 1e-8 ([37] detail 3): it bounds the step of a weight whose gradients were near zero.
    optimizer = adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    global_step, start_iteration, log = run.start(agent, optimizer)  # 0 and 1 in a new run
    rollout = Rollout(args.num_steps, args.num_envs, envs.single_observation_space.shape)

    # What one rollout hands the next: the observation, the episode-start flags (all 1: every env begins one) and
    # the LSTM state (zeros). A resumed run starts fresh episodes, so it starts from these too.
    memory = (run.first_observation(envs), np.ones(args.num_envs, np.float32), agent.initial_state(args.num_envs))
    envs_per_minibatch = args.minibatch_size // args.num_steps

    for iteration in range(start_iteration, args.num_iterations + 1):
        # Annealing ([37] detail 4): lr_i = alpha_i * learning_rate, alpha_i = 1 - (i - 1) / num_iterations (Table 5):
        # large steps while the policy is poor, smaller ones as it settles.
        alpha = run.alpha(iteration)
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = alpha * args.learning_rate

        # --- Rollout: run the current policy pi_old for T steps in each of the N envs, the LSTM state carried ---
        memory, last_value, episodes = collect_rollout(envs, agent, memory, rollout)
        for step, episodic_return, length in episodes:
            log.episode(episodic_return, length, global_step + (step + 1) * args.num_envs)
        global_step += args.batch_size

        # --- Advantages: how much better each action turned out than pi's average from its state -------------
        # A_t > 0 makes a_t more likely, A_t < 0 less. Subtracting the baseline V(s_t) keeps the gradient right on
        # average and takes out what any action from s_t would have got: most of the return's noise.
        advantages = compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.final_values, last_value,
                                 args.gamma, args.gae_lambda)
        returns = advantages + rollout.values  # the value targets V^targ_t = A_t + V(s_t)
        # Kept [T, N], not flattened as in ppo_lunarlander_vec.py: the update replays each env's column in order.
        b_obs, b_starts, b_actions, b_logprobs, b_advantages, b_returns, b_values = (
            torch.as_tensor(x, device=device)
            for x in (rollout.obs, rollout.starts, rollout.actions, rollout.logprobs, advantages, returns,
                      rollout.values)
        )

        # --- Update: K epochs of minibatch gradient steps on L^{CLIP+VF+S} ----------------------------------
        # The ratio r_t = pi(a_t|h_t) / pi_old(a_t|h_t) reweights pi_old's samples to what pi would see (importance
        # sampling), so one rollout serves K epochs, while pi stays near pi_old: the clip keeps it there.
        # A minibatch is a few whole envs, their T steps replayed in order from the state each started the rollout
        # in, its episodes' starts wiping the state where they did in the rollout: in the first epoch, before any
        # step, pi(a_t|h_t) is pi_old's to the last bit. Shuffled samples would have no h_t to read.
        clipfracs, vf_clipfracs = [], []
        for epoch in range(args.update_epochs):
            for mb in torch.randperm(args.num_envs, device=device).split(envs_per_minibatch):  # env indices
                state = (rollout.initial_state[0][mb], rollout.initial_state[1][mb])
                _, newlogprob, entropy, newvalue, _ = agent.get_action_and_value(
                    b_obs[:, mb], state, b_starts[:, mb], b_actions[:, mb])
                # r_t as exp(log pi - log pi_old): stable where a ratio of small probabilities is not
                logratio = newlogprob - b_logprobs[:, mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    # KL[pi_old || pi] on the minibatch, two unbiased estimates (http://joschu.net/blog/kl-approx.html):
                    # the mean of -log r_t, noisy, even negative; approx_kl, of (r_t - 1) - log r_t, never negative,
                    # less noisy, and what --target-kl reads.
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())

                # Normalized per minibatch ([37] detail 7): the step's size no longer depends on the rewards' scale.
                mb_advantages = b_advantages[:, mb]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                pg_loss = clipped_surrogate_loss(ratio, mb_advantages, args.clip_coef)
                if args.clip_vloss:
                    v_loss = clipped_value_loss(newvalue, b_values[:, mb], b_returns[:, mb], args.vf_clip_coef)
                    # how often V moved past the clip range
                    moved = (newvalue - b_values[:, mb]).abs()
                    vf_clipfracs.append((moved > args.vf_clip_coef).float().mean().item())
                else:  # L^VF = (V(s_t) - V^targ_t)^2 (eq. 9), halved so that its gradient is the error
                    v_loss = 0.5 * ((newvalue - b_returns[:, mb]) ** 2).mean()
                entropy_loss = entropy.mean()
                # Maximize L^CLIP - c1 L^VF + c2 S (eq. 9): c1 weighs the critic's error, c2 the entropy bonus that
                # keeps pi spread over the actions, still exploring.
                loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy_loss

                optimizer.zero_grad()
                loss.backward()  # back through the LSTM's T steps too (backpropagation through time)
                # Global gradient clipping ([37] detail 11): all gradients scaled down together to a norm of at most
                # max_grad_norm, so one unlucky minibatch cannot take a huge step.
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

            # Early stop: once pi has drifted this far from pi_old, more epochs on the same data would take it
            # past where the samples say anything (CleanRL's check: after each epoch, on its last minibatch).
            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        # The rollout's observations join the statistics only now: pi_old acted, and the update replayed it, with
        # the same normalization, so r_t starts at exactly 1.
        if args.norm_obs:
            agent.obs_rms.update(torch.as_tensor(rollout.obs))

        # --- Logging: the losses and KL estimates are the last minibatch's (clipfrac: the mean over all of them)
        log.update(global_step, args.batch_size, {
            "charts/learning_rate": optimizer.param_groups[0]["lr"], "losses/value_loss": v_loss.item(),
            "losses/policy_loss": pg_loss.item(), "losses/entropy": entropy_loss.item(),
            "losses/old_approx_kl": old_approx_kl.item(), "losses/approx_kl": approx_kl.item(),
            "losses/clipfrac": np.mean(clipfracs),
            "losses/explained_variance": explained_variance(returns, rollout.values),
            "losses/update_epochs": epoch + 1,
            **({"losses/vf_clipfrac": np.mean(vf_clipfracs)} if vf_clipfracs else {}),
        })

        # --- Evaluation of the greedy policy, on an env of its own ------------------------------------------
        last = iteration == args.num_iterations
        if args.eval_every and (last or iteration % args.eval_every == 0):
            evaluate_and_log(args, agent, log, run.videos, global_step)

        if run.after_update(iteration, global_step):  # a checkpoint every few updates; True after a Ctrl-C
            break

    run.close()


# =========================================================================================================
# The rest is plumbing, skippable on a first read: device and process settings, bad-input checks, run folders
# and logging, Ctrl-C, checkpoints and resume, evaluation and play, the --help texts
# (nothing of PPO, which is all above)
# =========================================================================================================

import ast  # (the plumbing's own imports: PPO above needs none of them)
import collections
import dataclasses
import inspect
import multiprocessing
import os
import random
import signal
import sys
import time

import tqdm
import tyro
from torch.utils.tensorboard import SummaryWriter

SCRIPT = os.path.basename(__file__)


@dataclass
class Args(Hyperparameters):
    """The command line: PPO's hyperparameters (Hyperparameters, above) and the flags for running the script."""

    vectorization_mode: Literal["sync", "async"] = "sync"
    """sync: step the N envs one after another in this process; async: one process per env, stepped in parallel (pays
    off when an env step costs more than sending its data between processes, and there are cores to run them on)"""
    exp_name: str = SCRIPT[: -len(".py")]
    """name of the experiment: runs are saved in runs/<env-id>__<exp-name>__<seed>__<unix-time>/"""
    seed: int = 1
    """seed of Python, NumPy, torch and the environments: the same seed gives the same run on the CPU"""
    torch_deterministic: bool = True
    """let torch use deterministic algorithms only (torch.use_deterministic_algorithms; on CUDA with cuBLAS's
    fixed workspace): the same seed then repeats a run on the same device"""
    cuda: bool = False  # README's runs of these small lessons are on the CPU
    """run on CUDA when a GPU is available (--no-cuda: on the CPU even where one is)"""
    capture_video: bool = False
    """record the evaluation episodes to MP4 under the run folder's videos/eval-<step>/ (a resumed run:
    videos/resume-*/eval-<step>/; --play: videos/play-*/);
    recording slows the evaluations down, so lower --eval-episodes or raise --eval-every to record fewer"""
    checkpoint_every: int = 10
    """save runs/<run>/checkpoint.pt every this many updates, and always at the end (0: only at the end)"""
    resume: Optional[str] = None
    """continue the run saved in this checkpoint. Kept: the weights, optimizer, RNG states, step count and
    annealing. Started afresh: the episodes (an env's state is not saved), so a resumed run is not the very run
    that never stopped. Flags not given take the checkpoint's values; a larger --total-timesteps trains longer,
    the annealed learning rate then falling from its last value to 0 over the added updates, never up.
    --num-envs, --num-steps, --learning-rate and --anneal-lr cannot change"""
    play: Optional[str] = None
    """do not train: run the greedy policy saved in this checkpoint for --episodes episodes, print the returns"""
    episodes: int = 10
    """how many episodes --play runs"""
    eval_every: int = 50
    """evaluate the greedy policy every this many updates, and after the last one (0: never during training)"""
    eval_episodes: int = 10
    """episodes per evaluation; their mean return is logged as eval/mean_return"""

    # --- derived at runtime (not command-line flags) ---
    batch_size: tyro.conf.Suppress[int] = 0
    """samples per rollout: num_envs * num_steps"""
    num_iterations: tyro.conf.Suppress[int] = 0
    """number of rollout + update cycles: total_timesteps // batch_size"""


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


# Copied from common.envs.make_worker_env
def make_worker_env(args: Args) -> gym.Env:
    """make_env, as an async worker runs it; in this process, for a SyncVectorEnv's envs and the one that an
    AsyncVectorEnv makes here to read the spaces off, it is make_env alone."""
    if multiprocessing.parent_process() is not None:
        # An async worker: Ctrl-C reaches the whole process group, but it is the trainer's to handle
        # (it finishes the update, saves and closes us), so the worker ignores it.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return make_env(args)


# Copied from common.envs.checked_env
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


# Copied from common.envs.record_video
def record_video(env: gym.Env, video_folder: str, video_trigger) -> gym.Env:
    """env, its episodes recorded to MP4 in video_folder where video_trigger(episode) is true. The frames are drawn
    off-screen (rgb_array): SDL is told not to look for a display, which it would complain of, and MuJoCo to draw
    through EGL (its default, GLFW, needs one)."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("MUJOCO_GL", "egl")
    return gym.wrappers.RecordVideo(env, video_folder, episode_trigger=video_trigger)


# Copied from common.cli.fail
def fail(message: str) -> None:
    """Bad input ends the run with one clear line on stderr and exit code 2, never a traceback."""
    print(f"{SCRIPT}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


# Copied from common.cli.check_args
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
                             "hidden_size", "frame_stack", "episodes", "eval_episodes", "learning_rate", "clip_coef",
                             "vf_clip_coef", "norm_clip", "kl_target", "kl_beta_init", "target_kl", "max_grad_norm"):
        if value <= 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {value}")
    for name, value in given("ent_coef", "vf_coef", "checkpoint_every", "eval_every"):
        if value < 0:
            fail(f"--{name.replace('_', '-')} must not be negative, got {value}")
    for name, value in given("gamma", "gae_lambda"):
        if not 0.0 <= value <= 1.0:
            fail(f"--{name.replace('_', '-')} must be in [0, 1], got {value}")
    if not 0 <= args.seed <= 2**32 - 1:
        fail(f"--seed must be in [0, {2**32 - 1}] (NumPy's seeds), got {args.seed}")
    if not args.exp_name or "/" in args.exp_name:
        fail(f"--exp-name names one run folder (runs/<env-id>__<exp-name>__<seed>__<time>/): it cannot be empty or "
             f"hold a '/', got {args.exp_name!r}")
    if args.norm_adv and args.minibatch_size < 2:
        fail(f"--minibatch-size must be at least 2 with --norm-adv: the advantages are normalized by their std "
             f"over each minibatch, and one sample has none (got {args.minibatch_size})")
    batch_size = getattr(args, "num_envs", 1) * args.num_steps
    rollout = f"--num-steps {args.num_steps}"
    if hasattr(args, "num_envs"):
        rollout = f"--num-envs {args.num_envs} x --num-steps {args.num_steps} = {batch_size}"
    if args.minibatch_size > batch_size:
        fail(f"--minibatch-size ({args.minibatch_size}) is larger than the rollout ({rollout})")
    if batch_size % args.minibatch_size:
        fail(f"the rollout ({rollout}) must be a multiple of --minibatch-size ({args.minibatch_size})")
    if args.total_timesteps < batch_size:
        fail(f"--total-timesteps ({args.total_timesteps}) is less than one rollout ({rollout})")
    if hasattr(args, "lstm") and args.minibatch_size % args.num_steps:  # (ppo_lstm_memory.py: whole envs)
        fail(f"--minibatch-size ({args.minibatch_size}) must be a multiple of --num-steps ({args.num_steps}): a "
             f"minibatch holds whole envs' rollouts, replayed step by step from the state each started in")


# Copied from common.checkpoints.check_resume
def check_resume(args: Args, ckpt: dict) -> None:
    """--resume goes on update by update, so the shape of an update and the learning rate's schedule cannot change;
    and there must be steps left."""
    for name in ("num_envs", "num_steps"):  # each where the script has it (ppo_cartpole.py has one env)
        if hasattr(args, name) and getattr(args, name) != ckpt["args"][name]:
            fail(f"--{name.replace('_', '-')} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, "
                 f"{getattr(args, name)} now): the step count, the buffers and the annealing go update by update")
    # The learning rate goes on from the optimizer's state (--no-anneal-lr: Adam's saved rate) and the annealing
    # schedule, so the flags that set it cannot change: they would be ignored, or raise the rate.
    for name in ("learning_rate", "vf_learning_rate", "anneal_lr", "anneal_clip", "clip_coef"):
        if name == "clip_coef" and not getattr(args, "anneal_clip", False):  # (applied as given where not annealed)
            continue
        if hasattr(args, name) and getattr(args, name) != ckpt["args"][name]:
            fail(f"--{name.replace('_', '-')} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, "
                 f"{getattr(args, name)} now): a resumed run goes on with the step size and annealing it started "
                 "with; start a new run to change them")
    if ckpt["global_step"] + getattr(args, "num_envs", 1) * args.num_steps > args.total_timesteps:
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


# Copied from common.runs.Run
class Run:
    """What train() needs that is not PPO, behind a few calls: the seeds and the device, the run folder, its log,
    what --resume restores, the annealing schedule, the checkpoints and Ctrl-C. train() makes one first, calls
    start() once the agent and the optimizer exist, first_observation() once, alpha() at each update,
    after_update() at the end of each, and close() when the loop is done."""

    def __init__(self, args: Args, ckpt: Optional[dict]):
        self.args, self.ckpt = args, ckpt
        self.device = seed_everything(args)  # Python's, NumPy's and torch's generators seeded; the device
        self.dir = run_folder(args)  # runs/<env-id>__<exp-name>__<seed>__<time>/, or the resumed run's own
        # where --capture-video records (a resumed run: a folder of its own); None without it
        self.videos = videos_folder(args, self.dir) if args.capture_video else None

    def start(self, agent: nn.Module, optimizer: optim.Optimizer, **modules: nn.Module) -> tuple[int, int, RunLog]:
        """(global_step, first update, log): 0 and 1 for a new run; for a resumed one the checkpoint's, with the
        weights, the optimizer's state, the random generators, the annealing schedule and each of `modules` (by its
        name in the checkpoint) restored. Opens the log (TensorBoard, the progress bar); from here on Ctrl-C asks
        for a clean stop: the update finishes, a checkpoint is saved, the script exits."""
        self.agent, self.optimizer = agent, optimizer
        global_step, start_iteration, self.schedule = restore_run(self.args, self.ckpt, agent, optimizer, self.device)
        for name, module in modules.items():
            if self.ckpt:
                module.load_state_dict(self.ckpt[name])
        self.log = RunLog(self.args, self.dir, self.device, global_step)
        self.checkpoint_path = os.path.join(self.dir, "checkpoint.pt")
        self.ctrl_c = CtrlC()
        self.global_step = global_step
        return global_step, start_iteration, self.log

    def first_observation(self, envs) -> np.ndarray:
        """Reset the env(s) for the first rollout, seeded from --seed (a vector env's env i from seed + i) and the
        step count: a resumed run starts fresh episodes, not the ones it started with."""
        self.vector_env = envs  # (closed by close())
        obs, _ = envs.reset(seed=self.args.seed + self.global_step)
        return obs

    def state(self, name: str, default):
        """The checkpoint's `name` in a resumed run, `default` in a new one."""
        return self.ckpt[name] if self.ckpt else default

    def alpha(self, iteration: int) -> float:
        """Table 5's alpha for update `iteration`: 1 - (i - 1) / num_iterations, falling from 1 toward 0. In a run
        resumed with a larger --total-timesteps the schedule's scale makes it go on from its last value over the
        added updates, never up (resumed_schedule); in every other run the scale is 1."""
        return self.schedule["scale"] * (1.0 - (iteration - 1) / self.schedule["num_iterations"])

    def after_update(self, iteration: int, global_step: int, **state) -> bool:
        """The end of update `iteration`: a checkpoint every --checkpoint-every updates, after the last and after a
        Ctrl-C (with `state`, what else this script's checkpoint keeps). True when the run must stop (Ctrl-C)."""
        stop, self.global_step = self.ctrl_c.requested, global_step
        every = self.args.checkpoint_every
        if stop or iteration == self.args.num_iterations or (every and iteration % every == 0):
            save_checkpoint(self.checkpoint_path, self.args, self.agent, self.optimizer, global_step, iteration,
                            self.schedule, **state)
        return stop

    def close(self) -> None:
        """Close the log and the env(s), say where the checkpoint is; exit 130 after a Ctrl-C."""
        end_of_run(self.log, self.vector_env, self.checkpoint_path, self.global_step, self.ctrl_c.requested)


# Copied from common.runs.seed_everything
def seed_everything(args: Args) -> torch.device:
    """Seed Python, NumPy and torch (--seed), deterministic algorithms if asked; return the device to train on."""
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(args.torch_deterministic)
    return torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")


# Copied from common.runs.restore_run
def restore_run(args: Args, ckpt: Optional[dict], agent: nn.Module, optimizer: optim.Optimizer,
                device: torch.device) -> tuple[int, int, dict]:
    """(global_step, first update, annealing schedule) of a new run; resuming, the checkpoint's, with the weights,
    the optimizer's state and the random generators restored from it."""
    if ckpt is None:
        return 0, 1, {"scale": 1.0, "num_iterations": args.num_iterations}
    restore_agent(agent, ckpt, args.resume)
    optimizer.load_state_dict(ckpt["optimizer"])
    restore_rng(ckpt["rng"], device)
    schedule = resumed_schedule(ckpt["schedule"], ckpt["iteration"], args.num_iterations)
    return ckpt["global_step"], ckpt["iteration"] + 1, schedule


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


# Copied from common.runs.CtrlC
class CtrlC:
    """Ctrl-C asks for a clean stop: the current update finishes, a checkpoint is saved, the script exits (130).
    A second Ctrl-C quits at once."""

    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGINT, self.request)

    def request(self, signum, frame) -> None:
        self.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)
        tqdm.tqdm.write("Ctrl-C: saving a checkpoint after this update (press again to quit without saving)")


# Copied from common.runs.end_of_run
def end_of_run(log: RunLog, envs, checkpoint_path: str, global_step: int, stopped: bool) -> None:
    """Close the log and the env(s), say where the checkpoint is and how to watch it; a run stopped by Ctrl-C
    exits 130, the convention."""
    log.close()
    envs.close()
    print(f"checkpoint: {checkpoint_path} (step {global_step})")
    print(f"watch it: python {SCRIPT} --play {checkpoint_path} --capture-video")
    if stopped:
        raise SystemExit(130)


# Copied from common.checkpoints.save_checkpoint
def save_checkpoint(path: str, args: Args, agent: nn.Module, optimizer: optim.Optimizer, global_step: int,
                    iteration: int, schedule: dict, **extra) -> None:
    """Write to a temporary file, then rename: a crash mid-write never leaves a half-written checkpoint. `extra`:
    what a lesson keeps besides (the language lessons' pi_ref, reward model and beta)."""
    state = {
        "script": SCRIPT,
        "args": dataclasses.asdict(args),
        "agent": agent.state_dict(),
        "optimizer": optimizer.state_dict(),
        "global_step": global_step,
        "iteration": iteration,
        "schedule": schedule,
        "rng": rng_states(next(agent.parameters()).device),
        **extra,
    }
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


def evaluate(args: Args, agent: Agent, episodes: int, video_folder: Optional[str] = None, verbose: bool = False):
    """Run `episodes` episodes of the greedy policy (argmax pi) on an env of its own, episode i seeded with
    seed + i, so every evaluation sees the same starts; the LSTM state starts from zeros in each episode and is
    carried from step to step, as in the rollouts. Returns the episodic returns and lengths."""
    env = make_env(args, video_folder, video_trigger=lambda episode: True)
    device = next(agent.parameters()).device
    returns, lengths = [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=args.seed + episode)
        state, start = agent.initial_state(1), torch.ones(1, 1, device=device)  # [T = 1, N = 1]
        while True:
            with torch.inference_mode():
                action, _, _, _, state = agent.get_action_and_value(
                    torch.as_tensor(obs, device=device)[None, None], state, start, greedy=True)
            start = torch.zeros_like(start)
            obs, _, terminated, truncated, info = env.step(action.item())
            if terminated or truncated:
                break
        returns.append(float(info["episode"]["r"]))
        lengths.append(int(info["episode"]["l"]))
        if verbose:
            print(f"episode {episode + 1}/{episodes}: return {returns[-1]:.1f}, length {lengths[-1]}")
    env.close()
    return returns, lengths


# Copied from common.evaluation.evaluate_and_log
def evaluate_and_log(args: Args, agent: Agent, log: RunLog, videos: str, global_step: int) -> None:
    """Evaluate the greedy policy for --eval-episodes episodes (recorded under videos/eval-<step>/ with
    --capture-video), log the mean return and length, and say it above the progress bar."""
    video_folder = os.path.join(videos, f"eval-{global_step}") if args.capture_video else None
    eval_returns, eval_lengths = evaluate(args, agent, args.eval_episodes, video_folder)
    log.scalar("eval/mean_return", np.mean(eval_returns), global_step)
    log.scalar("eval/mean_length", np.mean(eval_lengths), global_step)
    tqdm.tqdm.write(f"step {global_step}: greedy policy, mean return over {args.eval_episodes} episodes "
                    f"{np.mean(eval_returns):.1f}")


def play(args: Args, ckpt: dict) -> None:
    # A folder of its own for each --play, so that no earlier video is overwritten.
    video_folder = os.path.join(os.path.dirname(os.path.abspath(args.play)), "videos", f"play-{int(time.time())}")
    with make_env(args) as env:  # one env to read the spaces off
        agent = Agent(env, args.hidden_size, args.lstm, args.norm_obs)  # (--no-lstm's checkpoints have no LSTM)
    restore_agent(agent, ckpt, args.play)
    returns, _ = evaluate(args, agent, args.episodes, video_folder if args.capture_video else None, verbose=True)
    print(f"mean return over {args.episodes} episodes: {np.mean(returns):.1f} +/- {np.std(returns):.1f}")
    if args.capture_video:
        print(f"videos: {video_folder}")


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


# Copied from common.cli.main
def main() -> None:
    args = tyro.cli(one_line_help(Args), description=__doc__)
    if "" in (args.resume, args.play):  # (an empty path would read as not given: a training instead of a play)
        fail(f"--{'resume' if args.resume == '' else 'play'} needs the path of a checkpoint, got ''")
    if args.resume and args.play:
        fail("give either --resume or --play, not both")
    ckpt = None
    if args.resume or args.play:
        args, ckpt = args_from_checkpoint(args)
    check_args(args)
    if args.resume:
        check_resume(args, ckpt)
    # One thread for these small networks: a 64-wide matmul leaves little work to split between threads.
    torch.set_num_threads(1)
    try:
        play(args, ckpt) if args.play else train(args, ckpt)
    except KeyboardInterrupt:
        print(f"{SCRIPT}: interrupted", file=sys.stderr)
        raise SystemExit(130)


if __name__ == "__main__":
    main()
