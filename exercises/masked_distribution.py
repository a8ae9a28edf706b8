"""Exercise: the masked policy's log-probabilities and entropy (lesson ppo_action_masking.py, its
Agent.get_action_and_value).

Write the body of masked_log_pi_and_entropy below, then check it:

    python -m exercises check masked_distribution

In tic-tac-toe only the empty cells are moves: the env says which in info["action_mask"], 1 where the action is
valid. The masked policy gives every invalid action probability exactly 0, and the valid ones the softmax of their
logits l among themselves alone:

    pi(a|s) = exp(l_a) / sum over the valid b of exp(l_b)     for a valid a;   pi(a|s) = 0 for an invalid one

which is the softmax with each invalid logit set to -inf (exp(-inf) = 0). PPO needs log pi(a|s) of the actions,
for the ratio r_t, and the entropy of this pi, for its bonus:

    H = - sum over the valid a of pi(a|s) log pi(a|s)

(an invalid action's term is 0 log 0, 0 in the limit: mind what 0 * -inf gives in floating point).

Before you run the check: logits (0, ln 3, 5) with the third action invalid: what is pi? What is H, and how does it
compare with the entropy of a fair coin?
"""

import torch


def masked_log_pi_and_entropy(logits: torch.Tensor, mask: torch.Tensor):
    """(log pi(a|s) of every action, [..., A], and the entropy H of pi, [...]) of the masked policy: logits [..., A],
    the network's output; mask [..., A], bool, True where the action is valid (at least one per state). An invalid
    action's log pi is -inf (or any number whose exp is 0: its probability is exactly 0)."""
    raise NotImplementedError("write masked_log_pi_and_entropy")
