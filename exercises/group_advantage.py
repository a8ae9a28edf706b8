"""Exercise: GRPO's group advantage (lesson grpo_rlhf_tiny.py, its group_advantages).

Write the body of group_advantages below, then check it:

    python -m exercises check group_advantage

PPO's advantage needs a critic: V(s) says how good a state is, and A = what the action earned - V(s). GRPO has no
critic. Each prompt is answered G times instead, and the G answers are compared with one another: an answer's
advantage is how much better R scored it than its siblings (the other answers to the same prompt) did on average,
counted in the group's spread, so that every prompt's group speaks on the same scale. The group's mean is the
baseline V(s) was:

    A_i = (R_i - mean of R over i's group) / (std of R over i's group + 1e-4)

with the std unbiased (its squares summed over G - 1, not G). The rollout answers each prompt G times in a row, so the
groups are consecutive: scores[0:G] answer the first prompt, scores[G:2G] the second, and so on. The lesson gives
every token of response i the same A_i.

Before you run the check: a group whose G answers all scored the same: what is each one's A, and what does the policy
learn from that group? With G = 2, what values can A take, whatever the two scores?
"""

import torch


def group_advantages(scores: torch.Tensor, group_size: int) -> torch.Tensor:
    """A_i of each of N responses, an [N] tensor: scores = R's score of each, [N], the N / group_size groups one
    after another; group_size = G, the answers to each prompt."""
    raise NotImplementedError("write group_advantages")
