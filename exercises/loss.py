"""Exercise: the combined loss, L^{CLIP+VF+S} (lesson ppo_cartpole.py, the lines of its update that compute `loss`).

Write the body of ppo_loss below, then check it:

    python -m exercises check loss

The shared network is trained on one objective, the paper's eq. 9, maximized:

    L^{CLIP+VF+S} = mean over the samples of  L^CLIP_t - c1 L^VF_t + c2 S[pi](s_t)

- L^CLIP: the clipped surrogate (your clip exercise), on the ratio r_t = pi(a_t|s_t) / pi_old(a_t|s_t). The rollout
  stored log-probabilities, not probabilities: r_t = exp(log pi(a_t|s_t) - log pi_old(a_t|s_t)).
- L^VF = (V(s_t) - V^targ_t)^2, the critic's squared error, halved as the lessons write it (its gradient is then
  the error itself), weighed by c1 (vf_coef).
- S, the policy's entropy, weighed by c2 (ent_coef): a bonus for keeping pi spread over the actions.

Return what a gradient step minimizes: the negative of that objective, a torch scalar. Which of the three terms
does the minus sign turn into a cost, and which stays a reward?
"""

import torch


def ppo_loss(newlogprob: torch.Tensor, oldlogprob: torch.Tensor, advantages: torch.Tensor, newvalue: torch.Tensor,
             returns: torch.Tensor, entropy: torch.Tensor, clip_coef: float, vf_coef: float,
             ent_coef: float) -> torch.Tensor:
    """-L^{CLIP+VF+S} over a minibatch, all [B] tensors: newlogprob = log pi(a_t|s_t) now, oldlogprob = log
    pi_old(a_t|s_t) from the rollout, advantages = A_t (already normalized), newvalue = V(s_t) now, returns =
    V^targ_t, entropy = S[pi](s_t); clip_coef is epsilon, vf_coef c1, ent_coef c2."""
    raise NotImplementedError("write ppo_loss")
