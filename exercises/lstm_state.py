"""Exercise: the LSTM's state through a rollout, wiped where an episode starts (lesson ppo_lstm_memory.py, the step
loop of its Agent.get_states).

Write the body of lstm_steps below, then check it:

    python -m exercises check lstm_state

CartPoleNoVel shows the pole's angle, not how fast it turns: the agent needs a memory. An LSTM cell carries a state
(h, c) from one step to the next: c, its memory, which its gates keep, forget or overwrite; h, what it shows the
policy and value heads. One step of the cell, torch's nn.LSTMCell, takes this step's input and the state before it:

    h_t, c_t = cell(x_t, (h_{t-1}, c_{t-1}))

An episode's first step must not read the last episode's memory: the last pole says nothing about this one. The
rollout stores a flag with each step, starts[t] = 1 where x[t] is an episode's first observation, and the state is
multiplied by (1 - starts[t]) before the cell steps on x[t]:

    h_t, c_t = cell(x_t, ((1 - start_t) h_{t-1}, (1 - start_t) c_{t-1}))

env by env (each env of the N in a rollout starts its episodes at steps of its own). The state handed in is the one
the rollout started from: the last rollout's, so a rollout may begin mid-episode (starts[0] = 0) and go on from it.

Before you run the check: an episode ended at step 4 of a rollout, so starts[5] = 1. Which state does the cell step
from at step 5, and at step 6? What would a wipe one step late make the agent believe at step 5?
"""

import torch


def lstm_steps(cell: torch.nn.LSTMCell, features: torch.Tensor, state: tuple, starts: torch.Tensor):
    """The LSTM cell run over T steps of N envs, in order: features [T, N, input], the cell's input at each step;
    state (h, c), [N, hidden] each, the state before step 0; starts [T, N], 1.0 where features[t] is an episode's first
    step (0.0 elsewhere). Returns (the h_t of every step, [T, N, hidden], and the state (h, c) after the last step)."""
    raise NotImplementedError("write lstm_steps")
