"""Exercise: Generalized Advantage Estimation (lesson ppo_cartpole.py, its compute_gae).

Write the body of compute_gae below, then check it:

    python -m exercises check gae

The advantage A_t says how much better the action a_t turned out than the policy's average from s_t. GAE blends
the k-step estimates with weights (1 - lambda) lambda^(k-1), which sums to a recursion you compute backwards in
time, from the rollout's last step to its first:

    delta_t = r_t + gamma * V(s_{t+1}) - V(s_t)                                  (paper eq. 12)
    A_t     = delta_t + gamma * lambda * A_{t+1}, cut where an episode ended     (paper eq. 11)

Where an episode ended at step t (dones[t] = 1), two things change:
- no advantage flows back across the end: A_{t+1} belongs to another episode;
- V(s_{t+1}) is not values[t + 1] (the next episode's first state) but final_values[t]: 0 if the episode
  terminated (no future reward), V of its last observation if a time limit truncated it.
After the rollout's last step, V(s_T) is last_value.
"""

import numpy as np


def compute_gae(rewards, values, dones, final_values, last_value, gamma: float, gae_lambda: float) -> np.ndarray:
    """The advantages A_t, an array shaped like rewards ([T], or [T, N] for N envs side by side).

    rewards[t], values[t] = V(s_t), dones[t] (1.0 where an episode ended at step t, else 0.0), final_values[t]
    (the V(s_{t+1}) an ended episode's step should see; read only where dones[t] = 1), last_value = V(s_T)."""
    raise NotImplementedError("write compute_gae")
