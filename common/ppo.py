"""The algorithm's code that several lessons share word for word: the networks' initialization, the vector-env
rollout of the MLP lessons, GAE and the losses. It is lesson text, kept readable in place as a copy in each script:

- layer_init: every script
- collect_rollout: ppo_lunarlander_vec.py, ppo_pendulum_continuous.py (CartPole steps a single env; the pixel
  lessons' rollouts also stop at a Ctrl-C and read more at an episode's end)
- compute_gae, clipped_surrogate_loss: every script
- clipped_value_loss: ppo_lunarlander_vec.py, ppo_pendulum_continuous.py, ppo_breakout_atari.py,
  ppo_lstm_memory.py
- RunningMeanStd, the observation statistics: ppo_pendulum_continuous.py, ppo_lstm_memory.py

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.ppo.<name>`, `python -m tools.check_copies` fails when one
drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: Agent, Rollout.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn


def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Module:
    """Orthogonal weights with gain `std`, zero biases ([37] detail 2): an orthogonal matrix keeps its input's
    length (times the gain), so no layer starts out shrinking or blowing up the signal."""
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


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


def collect_rollout(envs: gym.vector.VectorEnv, agent: Agent, next_obs: np.ndarray, rollout: Rollout):
    """Run pi_old for T steps in the N envs, filling `rollout`. Returns the observation to go on from, V of it
    (last_value, for GAE) and the episodes that ended, as (step, return, length)."""
    device = next(agent.parameters()).device
    episodes = []
    for step in range(len(rollout.obs)):
        rollout.obs[step] = next_obs
        with torch.inference_mode():  # acting needs no gradients: they are recomputed in the update
            action, logprob, _, value = agent.get_action_and_value(torch.as_tensor(next_obs, device=device))
        rollout.actions[step], rollout.logprobs[step], rollout.values[step] = (
            action.cpu().numpy(), logprob.cpu().numpy(), value.cpu().numpy())

        next_obs, rollout.rewards[step], terminated, truncated, info = envs.step(rollout.actions[step])
        rollout.dones[step] = terminated | truncated
        rollout.final_values[step] = 0.0  # terminated: the MDP ended, there is no future reward, V(s_{t+1}) = 0
        if "final_obs" in info:
            # Some envs ended here and were reset already (SAME_STEP): next_obs is their new episode's first
            # observation, info["final_obs"] the one they ended on. Truncated: a time limit cut the episode where
            # more reward would have come, so bootstrap from V(final observation) ([TL]). Termination wins:
            # TimeLimit also sets truncated when the episode terminated on the limit step, and then V = 0.
            bootstrap = truncated & ~terminated
            if bootstrap.any():
                final_obs = np.stack(info["final_obs"][bootstrap]).astype(np.float32)
                with torch.inference_mode():
                    rollout.final_values[step, bootstrap] = agent.get_value(
                        torch.as_tensor(final_obs, device=device)).cpu().numpy()
            stats = info["final_info"]["episode"]
            for i in np.flatnonzero(info["final_info"]["_episode"]):
                episodes.append((step, float(stats["r"][i]), int(stats["l"][i])))
    with torch.inference_mode():
        last_value = agent.get_value(torch.as_tensor(next_obs, device=device)).cpu().numpy()
    return next_obs, last_value, episodes


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


def clipped_value_loss(newvalue, oldvalue, returns, vf_clip_coef: float) -> torch.Tensor:
    """L^VF with the value clipped like the ratio ([37] detail 9):
    0.5 * max((V - V^targ)^2, (V_old + clip(V - V_old, -eps_v, eps_v) - V^targ)^2)

    Like L^CLIP, a pessimistic bound: moving V further than eps_v from the V that collected the data earns no
    more credit. The paper uses the plain squared error; baselines and CleanRL clip (whether it helps: README.md).
    """
    clipped = oldvalue + torch.clamp(newvalue - oldvalue, -vf_clip_coef, vf_clip_coef)
    return 0.5 * torch.max((newvalue - returns) ** 2, (clipped - returns) ** 2).mean()
