"""Exercise: a rollout over vector envs that reset themselves (lesson ppo_lunarlander_vec.py, its collect_rollout).

Write the body of collect_rollout below, then check it:

    python -m exercises check rollout

A rollout runs the current policy pi_old for T steps in N envs at once and records, at each step t and in each env,
what GAE will need: the observation s_t the agent acted on, its action a_t, log pi_old(a_t|s_t), V(s_t), the reward
r_t, whether the episode ended, and, where it ended, the V(s_{t+1}) that step should see.

A Gymnasium vector env resets an env whose episode ended by itself. The lesson makes its envs with
autoreset_mode=SAME_STEP: the step that ends an episode already returns the next episode's first observation in
next_obs, and keeps the observation the episode ended on in info["final_obs"] (an array of N entries, read where
the episode ended). So where an episode ended at step t:

- dones[t] = 1 (terminated or truncated): GAE cuts its recursion there;
- terminated (the MDP ended: the pole fell, the lander crashed or landed): no reward follows, V(s_{t+1}) = 0;
- truncated (a time limit cut it): reward would have followed, so V(s_{t+1}) is V of info["final_obs"], the
  observation it ended on, and never V(next_obs), the next episode's first state;
- both (the episode terminated on the limit's last step): it terminated, V(s_{t+1}) = 0.

Each env is wrapped in RecordEpisodeStatistics: where episodes ended, info["final_info"]["episode"] holds their
returns ("r") and lengths ("l"), an entry per env, and info["final_info"]["_episode"] says which entries are real.
"""

import gymnasium as gym
import numpy as np
import torch


def collect_rollout(envs: gym.vector.VectorEnv, agent, next_obs: np.ndarray, rollout):
    """Run the agent for T = len(rollout.obs) steps in the N envs from next_obs, filling `rollout`'s [T, N] arrays:
    obs (the observation acted on), actions, logprobs, values (V(s_t)), rewards, dones (1.0 where an episode ended
    at t) and final_values (V(s_{t+1}) where an episode ended at t; 0 elsewhere).

    agent.get_action_and_value(x) returns (action, log pi(action|x), entropy, V(x)) for a batch of observations x
    (a torch tensor, on the device of next(agent.parameters())); agent.get_value(x) returns V(x) alone. Acting needs
    no gradients (torch.inference_mode()).

    Returns (next_obs: the observation to go on from, last_value: V(next_obs), a NumPy [N] array, episodes: a
    (step, return, length) tuple for each episode that ended, in the order they ended)."""
    raise NotImplementedError("write collect_rollout")
