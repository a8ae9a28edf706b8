"""Exercise: the adaptive KL penalty's beta (lesson ppo_pendulum_continuous.py, its adapt_kl_beta).

Write the body of adapt_kl_beta below, then check it:

    python -m exercises check kl_beta

The paper's other objective, L^KLPEN = mean(r_t A_t - beta KL[pi_old, pi]) (eq. 8), charges for distance instead of
clipping. No one beta suits a whole run, so after each update it is adapted to a target d_targ (section 4), with d the
update's mean KL[pi_old || pi]:

    d < d_targ / 1.5:   beta <- beta / 2     (pi moved too little: charge less)
    d > d_targ * 1.5:   beta <- beta * 2     (pi moved too much: charge more)
    otherwise           beta stays
"""


def adapt_kl_beta(beta: float, d: float, kl_target: float) -> float:
    """The beta for the next update, from this update's beta and its mean KL d; kl_target is d_targ."""
    raise NotImplementedError("write adapt_kl_beta")
