"""Exercise: the clipped surrogate objective (lesson ppo_cartpole.py, its clipped_surrogate_loss).

Write the body of clipped_surrogate_loss below, then check it:

    python -m exercises check clip

The probability ratio r_t = pi(a_t|s_t) / pi_old(a_t|s_t) reweights the rollout's samples for the policy being
trained. PPO's objective (paper eq. 7), to be maximized, is

    L^CLIP = mean over the samples of  min(r_t A_t, clip(r_t, 1 - eps, 1 + eps) A_t)

Return the loss a gradient step minimizes: -L^CLIP, a torch scalar, differentiable in `ratio`. Think through the
two cases before you write it: A_t > 0 (what happens past 1 + eps?) and A_t < 0 (past 1 - eps? and above 1 + eps?).
"""

import torch


def clipped_surrogate_loss(ratio: torch.Tensor, advantages: torch.Tensor, clip_coef: float) -> torch.Tensor:
    """-L^CLIP over a minibatch: ratio and advantages are [B] tensors, clip_coef is epsilon."""
    raise NotImplementedError("write clipped_surrogate_loss")
