"""Named patches: a detail that a lesson has no flag for, switched off in the lesson's own code, in process.

The ablation studies (benchmarks/ablations.py) switch each implementation detail off one at a time. Where the
lesson has a flag for it (--no-norm-adv, --ent-coef 0, ...) the study uses the flag; where it has none, one of
the patches below replaces one function or class of the imported lesson before its main() runs, so that the
rest of the file runs as written. No flag is added to a lesson for a study. Run a lesson with patches as:

    python -m benchmarks.patches --patch no-grad-clip ppo_cartpole.py --seed 3 --total-timesteps 100000

(the commands `python -m benchmarks.ablations --dry-run` prints). A patched run's checkpoint is an ordinary
checkpoint; resume it with the same patches (the grid does), since the checkpoint does not record them.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
from torch import nn

from benchmarks.core import launch


def unclipped_objective(lesson) -> None:
    """The clipped surrogate off: L^CPI = E[r_t A_t] (paper eq. 6), with nothing holding r_t near 1."""
    def surrogate_loss(ratio: torch.Tensor, advantages: torch.Tensor, clip_coef: float) -> torch.Tensor:
        return -(ratio * advantages).mean()

    lesson.clipped_surrogate_loss = surrogate_loss


def no_grad_clip(lesson) -> None:
    """Global gradient clipping off: the lesson's clip_grad_norm_(parameters, max_norm) returns the norm and
    leaves the gradients as they are."""
    def clip_grad_norm_(parameters, max_norm, *args, **kwargs) -> torch.Tensor:
        grads = [p.grad for p in parameters if p.grad is not None]
        return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))

    lesson.nn = _NnWith(clip_grad_norm_)


class _NnWith:
    """torch.nn as the lesson sees it, but for nn.utils.clip_grad_norm_ (torch itself is left as it is)."""

    def __init__(self, clip_grad_norm_):
        self.utils = type("utils", (), {"clip_grad_norm_": staticmethod(clip_grad_norm_)})

    def __getattr__(self, name):
        return getattr(nn, name)


def default_init(lesson) -> None:
    """Orthogonal init off: layer_init leaves each layer as PyTorch built it (Kaiming-uniform weights and
    uniform biases, nn.Linear's and nn.Conv2d's reset_parameters)."""
    def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Module:
        return layer

    lesson.layer_init = layer_init


def policy_init_1(lesson) -> None:
    """The policy's last layer initialized orthogonally at scale 1 instead of 0.01 (its only layer_init call
    with std 0.01), so that pi starts far from uniform (or mu far from 0) by accident of the initialization."""
    original = lesson.layer_init

    def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Module:
        return original(layer, 1.0 if std == 0.01 else std, bias_const)

    lesson.layer_init = layer_init


def adam_eps_1e8(lesson) -> None:
    """Adam's epsilon at PyTorch's default 1e-8 instead of the lessons' 1e-5."""
    original = lesson.adam

    def adam(parameters, lr: float, eps: float):
        return original(parameters, lr=lr, eps=1e-8)

    lesson.adam = adam


def no_bootstrap(lesson) -> None:
    """Truncations treated as terminations: GAE sees V(s_{t+1}) = 0 at every episode end, the value the rollout
    recorded for a truncated episode's final observation thrown away."""
    original = lesson.compute_gae

    def compute_gae(rewards, values, dones, final_values, last_value, gamma, gae_lambda):
        return original(rewards, values, dones, np.zeros_like(final_values), last_value, gamma, gae_lambda)

    lesson.compute_gae = compute_gae


def no_obs_clip(lesson) -> None:
    """Observation clipping off (continuous lesson): observations are standardized by the running statistics
    but not clipped to +-norm_clip (the reward scaling's clip is left as it is)."""
    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        if self.norm_clip is None:
            return x
        return ((x - self.obs_rms.mean) / torch.sqrt(self.obs_rms.var + 1e-8)).to(x.dtype)

    lesson.Agent.normalize = normalize


def shared_trunk(lesson) -> None:
    """One shared trunk where the lesson splits actor and critic: the critic's hidden layers become the actor's
    own (the same modules, so the same weights), under the critic's own output layer. The value loss then shapes
    the policy's features too, weighed by --vf-coef."""
    original = lesson.Agent

    class Agent(original):
        def __init__(self, env, hidden_size, *args, **kwargs):
            super().__init__(env, hidden_size, *args, **kwargs)
            actor = self.actor if hasattr(self, "actor") else self.actor_mean
            self.critic = nn.Sequential(*list(actor)[:-1], self.critic[-1])

    Agent.__name__ = Agent.__qualname__ = original.__name__
    lesson.Agent = Agent


def split_networks(lesson) -> None:
    """Separate networks where the lesson shares one trunk (CartPole): the critic gets a hidden layer of its own,
    built as the shared one is, and V(x) no longer shapes the policy's features."""
    original = lesson.Agent

    class Agent(original):
        def __init__(self, env, hidden_size):
            super().__init__(env, hidden_size)
            self.critic_trunk = nn.Sequential(
                lesson.layer_init(nn.Linear(env.observation_space.shape[0], hidden_size)), nn.Tanh())

        def get_value(self, x: torch.Tensor) -> torch.Tensor:
            return self.critic(self.critic_trunk(x)).squeeze(-1)

        def get_action_and_value(self, x, action=None, greedy=False):
            action, log_prob, entropy, _ = super().get_action_and_value(x, action, greedy)
            return action, log_prob, entropy, self.get_value(x)

    Agent.__name__ = Agent.__qualname__ = original.__name__
    lesson.Agent = Agent


PATCHES = {
    "unclipped-objective": unclipped_objective,
    "no-grad-clip": no_grad_clip,
    "default-init": default_init,
    "policy-init-1": policy_init_1,
    "adam-eps-1e-8": adam_eps_1e8,
    "no-bootstrap": no_bootstrap,
    "no-obs-clip": no_obs_clip,
    "shared-trunk": shared_trunk,
    "split-networks": split_networks,
}


def apply(lesson, names: list[str]) -> None:
    for name in names:
        PATCHES[name](lesson)


def main(argv: list[str] | None = None) -> int | str:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.patches", description=__doc__.splitlines()[0])
    parser.add_argument("--patch", action="append", choices=list(PATCHES), required=True,
                        help="a patch to apply (repeat for more): " + ", ".join(PATCHES))
    parser.add_argument("script", help="the lesson, e.g. ppo_cartpole.py")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="the lesson's own flags")
    args = parser.parse_args(argv)
    lesson = launch.import_lesson(args.script)
    apply(lesson, args.patch)
    return launch.run_main(lesson, args.argv)


if __name__ == "__main__":
    sys.exit(main())
