"""Exercise: REINFORCE, the policy gradient before PPO (lesson 0, "A policy and its gradient"; the solution:
exercises/reinforce_cartpole.py, its reinforce_loss).

Write the body of reinforce_loss below, then check it, then train CartPole with it:

    python -m exercises check reinforce
    python -m exercises train reinforce

The policy gradient (paper eq. 1) weights each step's log pi_theta(a_t|s_t) by how good the step turned out. Here
"how good" is the reward-to-go G_t, the discounted rewards from step t to the end of its episode, computed
backwards, from an episode's last step to its first:

    G_t  = r_t + gamma * G_{t+1},   and G_{t+1} = 0 where the episode ended at step t (dones[t] = 1)
    loss = -mean over the batch's steps of  log pi_theta(a_t|s_t) * G_t

A gradient step on this loss is a step up eq. 1's estimate g_hat. The batch holds whole episodes one after the
other: a reward of one episode must not flow back into another. G_t is a weight, computed from the rewards; only
log pi carries the gradient.
"""

import torch


def reinforce_loss(logprobs: torch.Tensor, rewards: torch.Tensor, dones: torch.Tensor, gamma: float) -> torch.Tensor:
    """-mean_t(log pi(a_t|s_t) G_t), a torch scalar, differentiable in `logprobs`.

    logprobs[t] = log pi_theta(a_t|s_t), rewards[t] = r_t, dones[t] = 1.0 at each episode's last step (else 0.0):
    [T] tensors over the batch's steps, episode after episode; gamma the discount."""
    raise NotImplementedError("write reinforce_loss")
