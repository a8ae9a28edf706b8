"""Exercise: a diagonal Gaussian policy's log-probability and entropy (lesson ppo_pendulum_continuous.py, its
Agent.get_action_and_value).

Write the body of gaussian_log_prob_and_entropy below, then check it:

    python -m exercises check gaussian

For continuous actions the policy is pi(a|s) = N(mu(s), sigma^2), one independent Gaussian per action dimension i,
sigma_i = exp(log_std_i). PPO needs log pi(a|s), for the ratio r_t = exp(log pi - log pi_old), and the entropy H, for
its bonus. For one dimension

    log N(a; mu, sigma) = -0.5 ((a - mu) / sigma)^2 - log sigma - 0.5 log(2 pi)
    H(N(mu, sigma))     = 0.5 + 0.5 log(2 pi) + log sigma

and with independent dimensions both add up over the action's dimensions (the last axis).
"""

import torch


def gaussian_log_prob_and_entropy(mean: torch.Tensor, log_std: torch.Tensor, action: torch.Tensor):
    """(log pi(action), H(pi)) of the diagonal Gaussian N(mean, exp(log_std)^2): mean, log_std and action are
    [..., A] tensors (A action dimensions); both results are [...], summed over the last axis."""
    raise NotImplementedError("write gaussian_log_prob_and_entropy")
