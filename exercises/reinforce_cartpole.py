"""REINFORCE on CartPole-v1: the policy gradient with nothing else, the step before PPO.

What this teaches
    Lesson 0's policy gradient, eq. 1 of arXiv:1707.06347 with the reward-to-go G_t for A_t, run as it stands:
    sample whole episodes with pi_theta, weight each step's log pi_theta(a_t|s_t) by the rewards that followed it,
    take one gradient step, throw the episodes away. No critic, no GAE, no ratio, no clip: PPO adds each of them to
    this loop. It is the solution of exercises/reinforce.py and the trainer of `python -m exercises train reinforce`.

The loop
    for each update:
        run pi_theta for whole episodes, at least batch_steps steps: s_t, a_t, r_t, done_t      collect_episodes()
        G_t = r_t + gamma G_{t+1}, cut where an episode ends; loss = -mean(log pi(a_t|s_t) G_t)  reinforce_loss()
        one Adam step on the loss                                                             train()

    python -m exercises.reinforce_cartpole                       # train with this file's reinforce_loss, seed 1
    python -m exercises.reinforce_cartpole --seeds 1 2 3 4 5     # exercises/README.md's record, about 5 s a seed
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn


@dataclass(frozen=True)
class Args:
    updates: int = 30
    """gradient steps, one per batch of fresh episodes"""
    batch_steps: int = 1000
    """the least number of env steps in a batch; whole episodes, so a batch ends with an episode's end"""
    learning_rate: float = 0.01
    """Adam's step size"""
    gamma: float = 0.99
    """the discount in G_t"""
    hidden_size: int = 32
    """the policy network's hidden units"""
    seed: int = 1
    """the seed of the network's weights, the env's resets and the sampled actions"""


class Policy(nn.Module):
    """pi_theta(a|s): a softmax over CartPole's two actions from one hidden layer."""

    def __init__(self, env: gym.Env, hidden_size: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(env.observation_space.shape[0], hidden_size), nn.Tanh(),
                                 nn.Linear(hidden_size, env.action_space.n))

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Categorical:
        return torch.distributions.Categorical(logits=self.net(obs))


def reinforce_loss(logprobs: torch.Tensor, rewards: torch.Tensor, dones: torch.Tensor, gamma: float) -> torch.Tensor:
    """-mean_t(log pi(a_t|s_t) G_t) over a batch of whole episodes, one after the other ([T] tensors; dones[t] = 1
    at each episode's last step). Its gradient is -g_hat, eq. 1 with the reward-to-go G_t for A_t."""
    returns = torch.zeros_like(rewards)
    following = 0.0
    for t in reversed(range(len(rewards))):  # backwards: G_t = r_t + gamma G_{t+1}, and G_{t+1} = 0 past an end
        following = rewards[t] + gamma * following * (1.0 - dones[t])
        returns[t] = following
    return -(logprobs * returns).mean()  # G_t is a weight, not a function of theta: no gradient flows into it


def collect_episodes(env: gym.Env, policy: Policy, batch_steps: int):
    """Whole episodes until the batch holds at least batch_steps steps: the observations, the actions taken, the
    rewards, the episode ends (terminated or truncated: with no critic, a truncated episode's G_t stops at the
    limit) and each episode's return. Acting needs no gradient: the update computes log pi in one pass."""
    observations, actions, rewards, dones, episode_returns = [], [], [], [], []
    with torch.no_grad():
        while len(rewards) < batch_steps:
            obs, _ = env.reset()
            done, total = False, 0.0
            while not done:
                action = int(policy.distribution(torch.as_tensor(obs, dtype=torch.float32)).sample())
                observations.append(obs)
                actions.append(action)
                obs, reward, terminated, truncated, _ = env.step(action)
                done = terminated or truncated
                rewards.append(float(reward))
                dones.append(float(done))
                total += float(reward)
            episode_returns.append(total)
    return (torch.as_tensor(np.array(observations), dtype=torch.float32), torch.tensor(actions),
            torch.tensor(rewards), torch.tensor(dones), episode_returns)


def train(loss_fn: Callable = reinforce_loss, args: Args = Args()) -> list[tuple[int, float]]:
    """Train CartPole with `loss_fn` in place of reinforce_loss; (env steps so far, return) of every episode."""
    torch.manual_seed(args.seed)
    env = gym.make("CartPole-v1")
    env.reset(seed=args.seed)
    env.action_space.seed(args.seed)
    policy = Policy(env, args.hidden_size)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.learning_rate)
    episodes, steps = [], 0
    for _ in range(args.updates):
        observations, actions, rewards, dones, returns = collect_episodes(env, policy, args.batch_steps)
        logprobs = policy.distribution(observations).log_prob(actions)  # log pi_theta(a_t|s_t), [T]
        loss = loss_fn(logprobs, rewards, dones, args.gamma)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ends = np.flatnonzero(dones.numpy())
        episodes += [(steps + int(end) + 1, value) for end, value in zip(ends, returns)]
        steps += len(rewards)
    env.close()
    return episodes


WINDOW = 20  # episodes in the first and the last return
LEARNING = 2.0  # learning: the last WINDOW episodes' mean return at least this many times the first WINDOW's


def first_and_last(episodes: list[tuple[int, float]]) -> tuple[float, float]:
    """The mean return of the first WINDOW episodes and of the last WINDOW."""
    values = [value for _, value in episodes]
    return statistics.fmean(values[:WINDOW]), statistics.fmean(values[-WINDOW:])


def verdict(episodes: list[tuple[int, float]]) -> str:
    """Learning or not learning, by the rule LEARNING, with the numbers that decided. The solution's seeds, for
    comparison: exercises/README.md, "REINFORCE's runs"."""
    first, last = first_and_last(episodes)
    said = (f"your return (mean of {WINDOW} episodes) went from {first:.1f} to {last:.1f} in {episodes[-1][0]} steps "
            f"(learning: the last {WINDOW} at least {LEARNING:g} times the first {WINDOW}; the solution's seeds: "
            "exercises/README.md, \"REINFORCE's runs\")")
    if last >= LEARNING * first:
        return f"learning: {said}"
    return (f"not learning: {said}. Your function passes its cases? Then look at what differs on real data: "
            "float32 tensors of a thousand steps, many episodes in the batch")


def report(fn: Callable | None, args: Args = Args()) -> list[str]:
    """`python -m exercises train reinforce`: train with `fn` (None: this file's reinforce_loss), the report's
    lines; one line where the function raised."""
    try:
        episodes = train(fn or reinforce_loss, args)
    except Exception as error:  # the learner's function raised on real data: one line, not a traceback
        return [f"exercises/reinforce_cartpole.py stopped: your function raised {type(error).__name__}: {error}"]
    return [verdict(episodes)]


class Parser(argparse.ArgumentParser):
    def error(self, message):  # bad input: one line, exit 2
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m exercises.reinforce_cartpole", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1], help="train once for each seed (default: 1)")
    parser.add_argument("--updates", type=int, default=Args.updates,
                        help=f"gradient steps, one per batch of at least {Args.batch_steps} steps "
                        f"(default {Args.updates})")
    options = parser.parse_args(argv)
    if options.updates < 1:
        parser.error(f"--updates must be at least 1 (got {options.updates})")
    for seed in options.seeds:
        start = time.perf_counter()
        episodes = train(reinforce_loss, Args(seed=seed, updates=options.updates))
        first, last = first_and_last(episodes)
        print(f"seed {seed}: {episodes[-1][0]} steps, {len(episodes)} episodes, return (mean of {WINDOW} episodes) "
              f"first {first:.1f}, last {last:.1f}, {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
