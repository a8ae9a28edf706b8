"""PPO with invalid action masking: tic-tac-toe, where a move onto a taken cell is no move at all.

What this lesson teaches
    In many games only some actions are legal in a given state: an empty cell, a card in hand, a free square. The
    env says which (info["action_mask"], 1 where legal), and masking gives every other action probability exactly
    0: its logit is set to -inf before the softmax, so pi renormalizes over the legal actions alone. The policy
    never spends a sample on an illegal move, and the gradient of log pi is the gradient of this masked softmax,
    in which the masked logits get none: the update is a policy gradient of the masked policy ([IAM]). Each
    step's mask is kept in the rollout and given again in the update, so that r_t compares pi and pi_old over
    the same legal actions.

The loop (each line names the function below that does it)
    for each update i = 1, 2, ..., num_iterations:                                 train()
        lr = alpha_i * learning_rate, alpha_i falling linearly from 1 toward 0
        run pi_old for T steps: s_t, its mask m_t, a_t ~ pi_old(.|s_t, m_t), r_t,  collect_rollout()
            log pi_old(a_t|s_t, m_t), V(s_t)
        advantages A_t by GAE; value targets V^targ_t = A_t + V(s_t)                 compute_gae()
        for K epochs, for each shuffled minibatch of M steps:
            log pi(a_t|s_t, m_t), the entropy S over the valid actions, V(s_t)      Agent.get_action_and_value()
            r_t = pi(a_t|s_t, m_t) / pi_old(a_t|s_t, m_t); -L^CLIP from r_t and A_t  clipped_surrogate_loss()
            loss = -L^CLIP + c1 L^VF - c2 S; one Adam step, gradient clipped       train()

What you should see
    The return of the training games (+1 a win, 0 a draw, -1 a loss; the progress bar shows the last 20 games')
    averages 0.38 over the first 2,048 steps, above 0.9 from 10,240 on and 0.98 at the end (the mean of 5 seeds);
    the 100,000-step run took 22 to 26 seconds on 2 CPU cores. Its greedy policy won 96 to 100 of 100 seeded games
    on each seed (--play runs/<run>/checkpoint.pt --episodes 100). charts/invalid_action_rate is 0 throughout: the
    mask, by construction. Curves of 5 seeds with and without the mask: benchmarks/results/masking.png; the record:
    benchmarks/README.md, "Action masking". The hyperparameters are ppo_cartpole.py's, unchanged.

Try this (predict, then run; "Measured": benchmarks.masking's 5 seeds a setting, the difference from the mask
paired by seed with its 95% t interval and Holm-corrected verdict, or the setting's own mean; benchmarks/README.md,
"Action masking")
    python ppo_action_masking.py --no-mask-actions
        Predict: without the mask a taken cell loses the game on the spot. Does PPO still learn to win, and what
        does learning the rules cost it?
        Answer: it learns them from the -1s: over the first 2,048 steps 22% of its moves are taken cells and its
        games average -0.64; by 6,000 steps 3% are. The cost is those early games: its final greedy policy is as
        good as the mask's, as far as 5 seeds can tell.
        Measured: over the run -0.058 [-0.081, -0.034], hurts; final greedy -0.012 [-0.074, 0.050], not detected
    python ppo_action_masking.py --no-mask-actions --invalid-action pass
        Predict: a taken cell now costs nothing but a step (no move, no reply, reward 0). Does the agent learn to
        stop playing them?
        Answer: only in part: no reward punishes a pass, only gamma's discount of a win a step later. Greedy, a
        pass repeats: the board is unchanged, so argmax picks the same taken cell until the time limit.
        Measured: over the run -0.017 [-0.033, 0.000], not detected (could detect 0.032); 28.4% of moves invalid
    python ppo_action_masking.py --play runs/<run>/checkpoint.pt --no-mask-actions --episodes 100
        Predict: the mask's own policy played without its mask, a taken cell losing. Where cells are taken, does
        argmax still pick an empty one?
        Answer: often not: a masked logit gets no gradient, so nothing in training ever pushed the logits of taken
        cells down ([IAM] evaluate this too: the mask removed after training with it).
        Measured: the greedy return -0.888 [-1.009, -0.767] (0.976 with its mask); 44% of its moves invalid

Differs from ppo_cartpole.py in:
    - the env: tic-tac-toe against a random opponent, written here (`TicTacToeEnv`, TicTacToe-v0), its mask of
      empty cells in info["action_mask"]; `--invalid-action`, what a taken cell does when pi is not masked
    - the masked policy: the logits of invalid actions set to -inf, the entropy summed over the valid ones
      (`Agent.get_action_and_value(x, mask, ...)`); `--no-mask-actions`, every cell offered
    - the rollout keeps each step's mask and the update gives it again (`Rollout`, `collect_rollout`, train());
      evaluation and --play read it from info; charts/invalid_action_rate logged

Usage
    python ppo_action_masking.py                                                   # train
    python ppo_action_masking.py --play runs/<run>/checkpoint.pt --capture-video   # watch the trained policy
    python ppo_action_masking.py --no-mask-actions --invalid-action pass           # the same without the mask
    tensorboard --logdir runs                                                      # the curves

References
    [PPO] Schulman et al. 2017, Proximal Policy Optimization Algorithms, arXiv:1707.06347 (eqs. 7, 9, 11, 12)
    [GAE] Schulman et al. 2016, High-Dimensional Continuous Control Using GAE, arXiv:1506.02438
    [TL]  Pardo et al. 2018, Time Limits in Reinforcement Learning, arXiv:1712.00378
    [37]  Huang et al. 2022, The 37 Implementation Details of Proximal Policy Optimization (ICLR blog track)
    [IAM] Huang & Ontanon 2020, A Closer Look at Invalid Action Masking in Policy Gradient Algorithms,
          arXiv:2006.14171 (FLAIRS 2022)
    [sb3-contrib] MaskablePPO (sb3_contrib/ppo_mask): the masks, read from the env's action_masks() method, stored
          in the rollout buffer with each step and given again in the update; its masked distribution in
          sb3_contrib/common/maskable/distributions.py
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

# "# Copied from common.<module>.<Name>": a copy of common/<module>.py's <Name>, checked by tools.check_copies.


@dataclass
class Hyperparameters:
    """PPO's hyperparameters, each a flag (--learning-rate 1e-3); Args, below the fence, adds the run's flags."""

    # --- environment ---
    env_id: str = "TicTacToe-v0"
    """Gymnasium id of the environment: one that takes invalid_action and reports info["action_mask"], as
    TicTacToe-v0 (written in this script) does"""
    total_timesteps: int = 100_000
    """environment steps to train for"""
    invalid_action: Literal["lose", "pass"] = "lose"
    """what a move onto a taken cell does, which only an unmasked pi (--no-mask-actions) makes: lose ends the game
    with reward -1; pass does nothing (the board as it was, no reply, reward 0) until the time limit, 30 steps,
    cuts off a game that keeps passing"""
    mask_actions: bool = True
    """give the invalid actions (the taken cells) probability 0, when acting, in the update and in evaluation
    (--no-mask-actions: pi over all 9 cells, and --invalid-action says what a taken one does)"""

    # --- PPO hyperparameters (same order in every script) ---
    learning_rate: float = 4e-3
    """the Adam step size at the start of training (paper: 3e-4 on MuJoCo, 2.5e-4 on Atari; SB3 zoo's CartPole: 1e-3)"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0, as the paper does for Atari (Table 5's alpha)"""
    num_steps: int = 256
    """T, the horizon: steps the env runs per rollout, between two updates (paper: 128 to 2048)"""
    gamma: float = 0.98
    """gamma, the discount of future rewards: the agent looks about 1/(1-gamma) steps ahead (usual 0.9-0.999)"""
    gae_lambda: float = 0.8
    """lambda of GAE: 0 gives the one-step TD advantage (low variance, biased by V), 1 the Monte-Carlo return minus V
    (unbiased, high variance); usual 0.8 to 0.98"""
    minibatch_size: int = 128
    """M, samples per gradient step: each epoch splits the T steps into T/M shuffled minibatches"""
    update_epochs: int = 10
    """K, passes over each rollout (paper: 3 to 15); more reuse of the data, more risk of moving too far"""
    norm_adv: bool = True
    """normalize advantages to mean 0, std 1 in each minibatch, so the step size does not depend on reward scale"""
    clip_coef: float = 0.2
    """epsilon, the clip range of the probability ratio (eq. 7): once r_t is outside [1 - epsilon, 1 + epsilon], the
    objective stops rewarding a further move (usual 0.1-0.3)"""
    ent_coef: float = 0.01
    """c2, weight of the entropy bonus S (eq. 9): rewards keeping pi spread out, so it keeps exploring (usual 0-0.01)"""
    vf_coef: float = 0.5
    """c1, weight of the value loss in eq. 9's sum, here of the halved squared error (see the loss in train()); usual
    0.5 to 1"""
    max_grad_norm: float = 0.5
    """clip the global norm of the gradient to this, so one bad minibatch cannot make a huge step"""
    hidden_size: int = 64
    """width of the shared hidden layer"""


# --- The environment -----------------------------------------------------------------------------------------


class TicTacToeEnv(gym.Env):
    """Tic-tac-toe against an opponent who plays a uniformly random empty cell, drawn from self.np_random (so
    reset(seed=s) seeds the opponent too). The agent is X and moves first.

    Observation: 18 floats, each 0 or 1: the 9 cells that are X's (mine), then the 9 that are O's (theirs), row by
    row. Action: a cell, 0 to 8, row by row. Reward: +1 for a win, -1 for a loss, 0 for a draw, each the end of the
    game. info["action_mask"], after reset and after every step: int8, 1 where the cell is empty (Gymnasium's Taxi
    marks the moves that change its state under the same key, int8 too). A taken cell is an invalid action:
    `invalid_action` says what it does, "lose" (the game ends, -1) or "pass" (nothing happens at all: the board
    as it was, no reply, reward 0).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}
    LINES = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]])

    def __init__(self, invalid_action: str = "lose", render_mode: Optional[str] = None):
        if invalid_action not in ("lose", "pass"):
            raise ValueError(f"invalid_action must be 'lose' or 'pass', got {invalid_action!r}")
        self.invalid_action, self.render_mode = invalid_action, render_mode
        self.observation_space = gym.spaces.Box(0.0, 1.0, (18,), np.float32)
        self.action_space = gym.spaces.Discrete(9)
        self.board = np.zeros(9, dtype=np.int8)  # 1: X, the agent's; -1: O, the opponent's; 0: empty

    def reset(self, **kwargs):
        super().reset(**kwargs)  # (seed=: the opponent's generator, self.np_random)
        self.board = np.zeros(9, dtype=np.int8)
        return self.observation(), self.info()

    def step(self, action):
        if self.board[action] != 0:  # a taken cell
            if self.invalid_action == "lose":
                return self.observation(), -1.0, True, False, self.info()
            return self.observation(), 0.0, False, False, self.info()  # "pass": as if it had not been played
        self.board[action] = 1
        if self.won(1):
            return self.observation(), 1.0, True, False, self.info()
        if self.board.all():  # full with no line: a draw (X's fifth move fills it; O never moves last)
            return self.observation(), 0.0, True, False, self.info()
        self.board[self.np_random.choice(np.flatnonzero(self.board == 0))] = -1  # the opponent's reply
        lost = self.won(-1)
        return self.observation(), -1.0 if lost else 0.0, lost, False, self.info()

    def won(self, player: int) -> bool:
        return bool((self.board[self.LINES] == player).all(axis=1).any())

    def observation(self) -> np.ndarray:
        return np.concatenate([self.board == 1, self.board == -1]).astype(np.float32)

    def info(self) -> dict:
        return {"action_mask": (self.board == 0).astype(np.int8)}

    def render(self) -> np.ndarray:
        """The board as a 96 x 96 RGB image (rgb_array, for --capture-video): X blue, O red, on white."""
        frame = np.full((96, 96, 3), 255, dtype=np.uint8)
        frame[[31, 32, 63, 64], :] = frame[:, [31, 32, 63, 64]] = 0  # the grid
        y, x = np.mgrid[:32, :32] - 15.5  # a cell's pixels, from its centre
        shapes = {1: ((np.abs(np.abs(y) - np.abs(x)) < 1.5) & (np.abs(y) < 10), (40, 80, 220)),  # X
                  -1: (np.abs(np.hypot(y, x) - 10) < 1.5, (220, 50, 40))}  # O
        for cell in np.flatnonzero(self.board):
            shape, color = shapes[int(self.board[cell])]
            frame[32 * (cell // 3):32 * (cell // 3) + 32, 32 * (cell % 3):32 * (cell % 3) + 32][shape] = color
        return frame


# A game lasts at most 5 of X's moves; the limit ends the game of a policy that keeps passing (--invalid-action
# pass), truncated: GAE then bootstraps from V of its last board ([TL]).
if "TicTacToe-v0" not in gym.registry:
    gym.register("TicTacToe-v0", entry_point=TicTacToeEnv, max_episode_steps=30)


# Copied from common.envs.make_env
def make_env(args: Args, video_folder: Optional[str] = None, video_trigger=None) -> gym.Env:
    """The wrapper stack. RecordEpisodeStatistics reports each finished episode in info["episode"]."""
    env = checked_env(args, render_mode="rgb_array" if video_folder else None)  # gym.make, refusing bad ids
    if video_folder:
        env = record_video(env, video_folder, video_trigger)
    return gym.wrappers.RecordEpisodeStatistics(env)


# --- The agent: the policy and the value function ------------------------------------------------------------


# Copied from common.ppo.layer_init
def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Module:
    """Orthogonal weights with gain `std`, zero biases ([37] detail 2): an orthogonal matrix keeps its input's
    length (times the gain), so no layer starts out shrinking or blowing up the signal."""
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """The policy pi(a|s), the actor, and the value function V(s), the critic, on one shared hidden layer.

    pi gives each action a probability; acting samples from it. V(s) predicts the discounted return from s: the
    baseline of the advantages, regressed on the returns (L^VF), which shapes the shared layer too (c1 weighs it).
    """

    def __init__(self, env: gym.Env, hidden_size: int):
        super().__init__()
        self.trunk = nn.Sequential(layer_init(nn.Linear(env.observation_space.shape[0], hidden_size)), nn.Tanh())
        # std 0.01: pi starts near uniform, exploring, with no action preferred by accident ([37] detail 2)
        self.actor = layer_init(nn.Linear(hidden_size, env.action_space.n), std=0.01)
        self.critic = layer_init(nn.Linear(hidden_size, 1), std=1.0)

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.trunk(x)).squeeze(-1)

    def get_action_and_value(self, x: torch.Tensor, mask: torch.Tensor, action: Optional[torch.Tensor] = None,
                             greedy: bool = False):
        """The action (`action` if given, else sampled from pi(.|x, mask), or its most probable one if greedy),
        log pi(action|x, mask), the entropy H(pi(.|x, mask)) and V(x). mask: 1 (True) where the action is valid."""
        hidden = self.trunk(x)
        valid = mask.bool()
        # The masked softmax ([IAM]): an invalid action's logit becomes -inf, so exp(-inf) = 0 gives it probability
        # exactly 0, and log_softmax's normalizer, log sum_a exp(logit_a), sums over the valid actions alone: pi is
        # renormalized over them. (sb3-contrib's MaskableCategorical writes -1e8 instead, finite, whose exp is 0 in
        # float32 too.) The gradient reaches the valid logits only: a masked logit is a constant, not the network's.
        log_pi = self.actor(hidden).masked_fill(~valid, -torch.inf).log_softmax(-1)  # log pi(a|x, mask), every a
        pi = log_pi.exp()
        if action is None:
            action = log_pi.argmax(-1) if greedy else torch.multinomial(pi, 1).squeeze(-1)
        log_prob = log_pi.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        # H = -sum over the valid a of pi(a|x) log pi(a|x). An invalid action's term would be 0 * log 0 = 0 * -inf,
        # nan in floats (its limit is 0): its log is taken as 0 instead, as sb3-contrib's MaskableCategorical.entropy
        # keeps only the valid actions' terms.
        entropy = -(pi * log_pi.masked_fill(~valid, 0.0)).sum(-1)
        return action, log_prob, entropy, self.critic(hidden).squeeze(-1)


# --- PPO: the rollout, the advantages (GAE) and the losses ---------------------------------------------------


class Rollout:
    """What a rollout of T steps stores, one NumPy array per quantity, turned into tensors once per update."""

    def __init__(self, num_steps: int, obs_shape: tuple, num_actions: int):
        self.obs = np.zeros((num_steps,) + obs_shape, dtype=np.float32)
        self.masks = np.zeros((num_steps, num_actions), dtype=bool)  # the actions pi_old could choose at s_t
        self.actions = np.zeros(num_steps, dtype=np.int64)
        self.logprobs = np.zeros(num_steps, dtype=np.float32)
        self.rewards = np.zeros(num_steps, dtype=np.float32)
        self.dones = np.zeros(num_steps, dtype=np.float32)
        self.values = np.zeros(num_steps, dtype=np.float32)
        self.final_values = np.zeros(num_steps, dtype=np.float32)  # V(s_{t+1}) where an episode ended


def collect_rollout(env: gym.Env, agent: Agent, next_obs: np.ndarray, next_mask: np.ndarray, rollout: Rollout,
                    mask_actions: bool):
    """Run pi_old for T steps, filling `rollout`. next_mask: info["action_mask"] of next_obs. Returns the observation
    and mask to go on from, V of it (last_value, for GAE), the episodes that ended, as (step, return, length), and
    how many of the T actions were invalid (none with the mask)."""
    device = next(agent.parameters()).device
    episodes, invalid = [], 0
    for step in range(len(rollout.obs)):
        rollout.obs[step] = next_obs
        # What pi_old chooses from, kept for the update: the valid cells, or every cell with --no-mask-actions
        rollout.masks[step] = next_mask if mask_actions else True
        with torch.inference_mode():  # acting needs no gradients: they are recomputed in the update
            action, logprob, _, value = agent.get_action_and_value(torch.as_tensor(next_obs, device=device),
                                                                   torch.as_tensor(rollout.masks[step], device=device))
        rollout.actions[step], rollout.logprobs[step], rollout.values[step] = (
            action.item(), logprob.item(), value.item())
        invalid += int(next_mask[rollout.actions[step]] == 0)  # a taken cell: only an unmasked pi picks one

        next_obs, rollout.rewards[step], terminated, truncated, info = env.step(rollout.actions[step])
        next_mask = info["action_mask"]
        rollout.dones[step] = terminated or truncated
        rollout.final_values[step] = 0.0  # terminated: the MDP ended, there is no future reward, V(s_{t+1}) = 0
        if terminated or truncated:
            # Truncated: a time limit cut the episode where more reward would have come, so bootstrap from
            # V(final observation) ([TL]); next_obs is that observation. Termination wins: TimeLimit also sets
            # truncated when the episode terminated on the limit step, and then V = 0.
            if truncated and not terminated:
                with torch.inference_mode():
                    rollout.final_values[step] = agent.get_value(torch.as_tensor(next_obs, device=device)).item()
            episodes.append((step, float(info["episode"]["r"]), int(info["episode"]["l"])))
            next_obs, info = env.reset()
            next_mask = info["action_mask"]
    with torch.inference_mode():
        last_value = agent.get_value(torch.as_tensor(next_obs, device=device)).item()
    return next_obs, next_mask, last_value, episodes, invalid


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


# --- Training: the PPO loop ----------------------------------------------------------------------------------


def train(args: Args, ckpt: Optional[dict]) -> None:
    args.batch_size = args.num_steps
    args.num_iterations = args.total_timesteps // args.batch_size
    run = Run(args, ckpt)  # seeds, run folder, log, checkpoints, Ctrl-C: the plumbing, below the fence
    device = run.device

    env = make_env(args, run.videos)
    agent = Agent(env, args.hidden_size).to(device)
    # Adam's eps 1e-5, not 1e-8 ([37] detail 3): it bounds the step of a weight whose gradients were near zero.
    optimizer = adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    global_step, start_iteration, log = run.start(agent, optimizer)  # 0 and 1 in a new run
    rollout = Rollout(args.num_steps, env.observation_space.shape, env.action_space.n)
    next_obs = run.first_observation(env)  # seeded from --seed
    next_mask = np.ones(env.action_space.n, dtype=np.int8)  # a new game's board is empty: every cell is valid

    for iteration in range(start_iteration, args.num_iterations + 1):
        # Annealing ([37] detail 4): lr_i = alpha_i * learning_rate, alpha_i = 1 - (i - 1) / num_iterations (Table 5):
        # large steps while the policy is poor, smaller ones as it settles.
        alpha = run.alpha(iteration)
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = alpha * args.learning_rate

        # --- Rollout: run the current policy pi_old for T steps -------------------------------------------
        next_obs, next_mask, last_value, episodes, invalid = collect_rollout(env, agent, next_obs, next_mask, rollout,
                                                                             args.mask_actions)
        for step, episodic_return, length in episodes:
            log.episode(episodic_return, length, global_step + step + 1)
        global_step += args.batch_size

        # --- Advantages: how much better each action turned out than pi's average from its state -------------
        # A_t > 0 makes a_t more likely, A_t < 0 less. Subtracting the baseline V(s_t) keeps the gradient right on
        # average and takes out what any action from s_t would have got: most of the return's noise.
        advantages = compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.final_values, last_value,
                                 args.gamma, args.gae_lambda)
        returns = advantages + rollout.values  # the value targets V^targ_t = A_t + V(s_t)
        b_obs, b_masks, b_actions, b_logprobs, b_advantages, b_returns = (
            torch.as_tensor(x, device=device)
            for x in (rollout.obs, rollout.masks, rollout.actions, rollout.logprobs, advantages, returns)
        )

        # --- Update: K epochs of minibatch gradient steps on L^{CLIP+VF+S} ----------------------------------
        # The ratio r_t = pi(a_t|s_t) / pi_old(a_t|s_t) reweights pi_old's samples to what pi would see (importance
        # sampling), so one rollout serves K epochs, while pi stays near pi_old: the clip keeps it there. Both are
        # over the same valid actions: log pi is recomputed with the mask a_t was chosen under. Without it pi would
        # spread its probability over taken cells too, and r_t < 1 before any step: two different distributions.
        clipfracs = []
        for epoch in range(args.update_epochs):
            for mb in torch.randperm(args.batch_size, device=device).split(args.minibatch_size):
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_masks[mb], b_actions[mb])
                # r_t as exp(log pi - log pi_old): stable where a ratio of small probabilities is not
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    # KL[pi_old || pi] on the minibatch, two unbiased estimates (http://joschu.net/blog/kl-approx.html):
                    # the mean of -log r_t, noisy, even negative; approx_kl, of (r_t - 1) - log r_t, never negative.
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())

                # Normalized per minibatch ([37] detail 7): the step's size no longer depends on the rewards' scale.
                mb_advantages = b_advantages[mb]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                pg_loss = clipped_surrogate_loss(ratio, mb_advantages, args.clip_coef)
                # L^VF = (V(s_t) - V^targ_t)^2 (eq. 9), halved so that its gradient is the error
                v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                entropy_loss = entropy.mean()
                # Maximize L^CLIP - c1 L^VF + c2 S (eq. 9): c1 weighs the critic's error, c2 the entropy bonus that
                # keeps pi spread over the actions, still exploring.
                loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy_loss

                optimizer.zero_grad()
                loss.backward()
                # Global gradient clipping ([37] detail 11): all gradients scaled down together to a norm of at most
                # max_grad_norm, so one unlucky minibatch cannot take a huge step.
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        # --- Logging: the losses and KL estimates are the last minibatch's (clipfrac: the mean over all of them)
        log.update(global_step, args.batch_size, {
            "charts/learning_rate": optimizer.param_groups[0]["lr"], "losses/value_loss": v_loss.item(),
            "losses/policy_loss": pg_loss.item(), "losses/entropy": entropy_loss.item(),
            "losses/old_approx_kl": old_approx_kl.item(), "losses/approx_kl": approx_kl.item(),
            "losses/clipfrac": np.mean(clipfracs),
            "losses/explained_variance": explained_variance(returns, rollout.values),
            "charts/invalid_action_rate": invalid / args.batch_size,  # the share of taken cells played: 0 masked
        })

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
    """record MP4s under the run folder's videos/ (training: episodes 0, 1, 8, 27, ...; a resumed run: under
    videos/resume-*/; --play: every episode, under videos/play-*/)"""
    checkpoint_every: int = 10
    """save runs/<run>/checkpoint.pt every this many updates, and always at the end (0: only at the end)"""
    resume: Optional[str] = None
    """continue the run saved in this checkpoint. Kept: the weights, optimizer, RNG states, step count and
    annealing. Started afresh: the episode (an env's state is not saved), so a resumed run is not the very run
    that never stopped. Flags not given take the checkpoint's values; a larger --total-timesteps trains longer,
    the annealed learning rate then falling from its last value to 0 over the added updates, never up.
    --num-steps, --learning-rate and --anneal-lr cannot change"""
    play: Optional[str] = None
    """do not train: run the greedy policy saved in this checkpoint for --episodes episodes, print the returns"""
    episodes: int = 10
    """how many episodes --play runs"""

    # --- derived at runtime (not command-line flags) ---
    batch_size: tyro.conf.Suppress[int] = 0
    """samples per rollout: num_steps (one env)"""
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


def checked_env(args: Args, render_mode: Optional[str]) -> gym.Env:
    """gym.make(--env-id, invalid_action=--invalid-action), or one line and exit 2 where it cannot be made or its
    spaces are not this script's: a Discrete action space, a flat Box of observations."""
    try:
        env = gym.make(args.env_id, render_mode=render_mode, invalid_action=args.invalid_action)
    except (gym.error.Error, ModuleNotFoundError) as e:  # unknown id or version, no dependency, no module
        fail(f"cannot make --env-id {args.env_id!r}: {e}")
    except TypeError as e:  # an env of another kind: it takes no invalid_action (nor reports a mask)
        fail(f"cannot make --env-id {args.env_id!r} with invalid_action={args.invalid_action!r} ({e}): this script "
             f"needs an env that takes invalid_action and reports info['action_mask'], as TicTacToe-v0 does")
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
    """Run `episodes` games of the greedy policy (argmax pi, over the valid cells unless --no-mask-actions) on an env
    of its own, game i seeded with seed + i, so every evaluation starts each game from the same seed. Returns the
    episodic returns and lengths, and each game's count of invalid moves."""
    env = make_env(args, video_folder, video_trigger=lambda episode: True)
    device = next(agent.parameters()).device
    returns, lengths, invalid = [], [], []
    for episode in range(episodes):
        obs, info = env.reset(seed=args.seed + episode)
        invalid.append(0)
        while True:
            valid = info["action_mask"]
            mask = torch.as_tensor(valid if args.mask_actions else np.ones_like(valid), device=device)
            with torch.inference_mode():
                action, _, _, _ = agent.get_action_and_value(torch.as_tensor(obs, device=device), mask, greedy=True)
            invalid[-1] += int(valid[action.item()] == 0)
            obs, _, terminated, truncated, info = env.step(action.item())
            if terminated or truncated:
                break
        returns.append(float(info["episode"]["r"]))
        lengths.append(int(info["episode"]["l"]))
        if verbose:
            cut = ", cut off by the time limit" if truncated and not terminated else ""
            print(f"episode {episode + 1}/{episodes}: return {returns[-1]:.1f}, length {lengths[-1]}, "
                  f"invalid moves {invalid[-1]}{cut}")
    env.close()
    return returns, lengths, invalid


def play(args: Args, ckpt: dict) -> None:
    # A folder of its own for each --play, so that no earlier video is overwritten.
    video_folder = os.path.join(os.path.dirname(os.path.abspath(args.play)), "videos", f"play-{int(time.time())}")
    with make_env(args) as env:  # one env to read the spaces off
        agent = Agent(env, args.hidden_size)
    restore_agent(agent, ckpt, args.play)
    returns, lengths, invalid = evaluate(args, agent, args.episodes, video_folder if args.capture_video else None,
                                         verbose=True)
    print(f"mean return over {args.episodes} episodes: {np.mean(returns):.1f} +/- {np.std(returns):.1f}")
    print(f"won {sum(r > 0 for r in returns)}, drawn {sum(r == 0 for r in returns)}, lost {sum(r < 0 for r in returns)}"
          f" (a game cut off by the time limit counts as drawn); invalid moves: {sum(invalid)} of {sum(lengths)}")
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
