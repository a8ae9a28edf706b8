"""Exercise: RLHF's per-token reward (lesson ppo_rlhf_tiny.py, its per_token_rewards).

Write the body of per_token_rewards below, then check it:

    python -m exercises check kl_reward

In RLHF the episode is a response: each token the policy writes is an action, and the reward model R judges only the
finished text. So R's score is paid once, on the response's last token. R was trained on the grammar's reviews; text
unlike them it may score wrongly, and pi, paid by R alone, may drift there (the lesson's Try this, --kl-coef 0). So
every token also pays for how far pi has moved from pi_ref, the pretrained model it started as: beta times the log
of how many times more likely pi_old made that token than pi_ref would have. Summed over a response, that charge is
beta times a sample of KL(pi || pi_ref), and the return is R - beta KL (the lesson's [LHP], Ziegler et al. 2019:
its equation 2, spread over the tokens):

    r_t = -beta (log pi_old(a_t|s_t) - log pi_ref(a_t|s_t))     on every token of the response (mask 1),
          + R(prompt + response)                                 on its last token as well;
    r_t = 0                                                      on the padding after its end (mask 0).

A response ends at its first "." (or after T tokens); the responses of a batch are of different lengths, each padded
after its end. Before you run the check: a token pi_old wrote with probability 0.5 where pi_ref gives it 0.25, at
beta = 0.1: does it gain reward or pay, and how much? And a token pi_old makes less likely than pi_ref does?
"""

import torch


def per_token_rewards(scores: torch.Tensor, logprobs: torch.Tensor, ref_logprobs: torch.Tensor, mask: torch.Tensor,
                      beta: float) -> torch.Tensor:
    """The rewards r_t of N responses, an [N, T] tensor: scores = R's score of each response, [N]; logprobs =
    log pi_old(a_t|s_t) and ref_logprobs = log pi_ref(a_t|s_t), [N, T]; mask [N, T], 1.0 on each response's tokens
    and 0.0 on the padding after its end (each row's 1s come first; what the log-probabilities hold on the padding
    is no action's); beta, the KL penalty's weight."""
    raise NotImplementedError("write per_token_rewards")
