"""Exercise: the clipped value loss (lesson ppo_lunarlander_vec.py, its clipped_value_loss).

Write the body of clipped_value_loss below, then check it:

    python -m exercises check value_clip

The critic V is regressed on the value targets V^targ_t (here `returns`). Clipped like the ratio, it may not move
more than eps_v from V_old, the value the rollout recorded, and still earn credit for it ([37] detail 9):

    V_clip = V_old + clip(V - V_old, -eps_v, eps_v)
    L^VF   = 0.5 * mean over the samples of  max((V - V^targ)^2, (V_clip - V^targ)^2)

(halved, as the lessons write it: its gradient is then the error itself). A pessimistic bound, like L^CLIP: which of
the two errors does max pick when V has moved past eps_v toward its target, and when away from it?
"""

import torch


def clipped_value_loss(newvalue: torch.Tensor, oldvalue: torch.Tensor, returns: torch.Tensor,
                       vf_clip_coef: float) -> torch.Tensor:
    """L^VF over a minibatch: newvalue = V(s_t) now, oldvalue = V_old(s_t) from the rollout, returns = V^targ_t,
    all [B] tensors; vf_clip_coef is eps_v. A torch scalar, differentiable in newvalue."""
    raise NotImplementedError("write clipped_value_loss")
