"""The course's pictures, drawn from the lessons' own code, so that a picture can never disagree with it:

    python -m course.figures           # write course/figures/*.svg and the generated blocks of ppo-on-one-page.md
    python -m course.figures --check   # exit 1 where a committed figure, record or block is not what the code gives
    python -m course.figures --record  # record language, memory and masking's numbers as this machine computes them

- clip.svg: the paper's Figure 1, L^CLIP and its gradient against r for A > 0 and A < 0, each value and slope
  computed by ppo_cartpole.clipped_surrogate_loss (the slope by autograd, as the update computes it);
- gae.svg and the worked example's table: a 6-step rollout with a termination and a truncation, its advantages
  computed by ppo_cartpole.compute_gae for lambda 0, 0.95 and 1;
- loop.svg: the loop of ppo_cartpole.train(), rollout, advantages and K epochs, with its defaults read off Args;
- networks.svg: the layers of each lesson's Agent, read off the modules;
- autoreset.svg: what a gymnasium vector env returns, step by step, around an episode's end, in its default
  autoreset mode and in SAME_STEP (the lessons' make_envs), with a 3-step env of this file;
- atari.svg: one Breakout frame through ppo_breakout_atari.py's wrappers, MaxAndSkip, GrayscaleResize and
  FrameStack, from a seeded reset;
- language.svg: a response of ppo_rlhf_tiny.py's pi_ref and one of its policy after a short run of the lesson's own
  train(), each token's reward by per_token_rewards (the KL term on every token, the reward model's score on the
  last), with the means over 256 sampled responses; and the GRPO example's table, by grpo_rlhf_tiny.group_advantages;
- memory.svg: one episode of ppo_lstm_memory.py's CartPoleNoVel-v1 under a rule that sees the angle alone, the
  observed theta beside the hidden theta_dot (the same angle met turning opposite ways); and the state the lesson's
  LSTM cell is handed at each step of a rollout by its collect_rollout, replayed by its get_action_and_value from
  rollout.initial_state (recorded by a hook on the cell): 0 at each episode's first step;
- masking.svg: pi over tic-tac-toe's 9 cells on one board, by ppo_action_masking.py's Agent after a short run of
  the lesson's own train(), without the mask and with it (taken cells at exactly 0, the others renormalized);
- the loop's pseudocode in ppo-on-one-page.md: each line linked to the line of ppo_cartpole.py that does it,
  found by a needle as tools.details_map finds its lines, so a moved line moves its link.

The SVGs keep their text as text (svg.fonttype none) and carry no date, so the same code and library versions draw
the same bytes; tests/test_course.py redraws them and compares (language.svg and the GRPO table:
tests/test_language_course.py; memory.svg and masking.svg: tests/test_memory_masks_course.py).

language.svg, memory.svg and masking.svg show what a short training run or an LSTM computes in floating point, on
one CPU thread with torch's deterministic algorithms: bit-exact on one processor only. So each is drawn from a
record of its numbers, course/figures/records/<figure>.json, which names the processor and library versions that
computed them (and the figure names the processor): the same bytes on any processor. The tests hold each record
against what the lessons' code computes today, within the tolerance TOLERANCES gives the figure (the measurements
behind it beside it), and this command writes a record again only where the two disagree past it, or with --record.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import functools
import io
import json
import math
import random
import re
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.core import records  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "course"
FIGURES = COURSE / "figures"
LESSON0 = COURSE / "ppo-on-one-page.md"

plt.rcParams.update({
    "svg.fonttype": "none",  # text stays text: no glyph outlines that differ between font builds
    "svg.hashsalt": "ppo-lesson-0",  # the ids of clip paths and the like, fixed (then numbered: see svg())
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
})
BLUE, ORANGE, GREY, GREEN = "#1f77b4", "#ff7f0e", "#7f7f7f", "#2ca02c"


def svg(fig) -> bytes:
    """The figure as SVG bytes, without a date or a creator line, its hashed ids numbered."""
    out = io.BytesIO()
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    plt.close(fig)
    return number_ids(out.getvalue())


def number_ids(drawn: bytes) -> bytes:
    """matplotlib names a clip path or a marker by a hash of its text: the clip rectangle's corners as
    str() writes them, which NumPy 2 writes as np.float64(48.85) and NumPy 1 as 48.85, so the same figure drew other
    ids under each. Each such id (a letter and ten hex digits) becomes its letter and its order of first
    appearance, here and wherever it is referred to (#id), so the bytes do not depend on the NumPy version."""
    names: dict[bytes, bytes] = {}
    for old in re.findall(rb'id="([a-z][0-9a-f]{10})"', drawn):
        names.setdefault(old, old[:1] + b"%d" % len(names))
    return re.sub(rb"(?<=[\"#])([a-z][0-9a-f]{10})(?=[\")])", lambda m: names.get(m[1], m[1]), drawn)


# --- Figure 1: the clip ----------------------------------------------------------------------------------------

def clip_curves(advantage: float, eps: float = 0.2, points: int = 401) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r, L^CLIP(r), dL^CLIP/dr) for one sample with advantage A, by ppo_cartpole.clipped_surrogate_loss (which
    returns -L^CLIP averaged over the samples: here one sample at a time)."""
    import ppo_cartpole

    r = torch.linspace(1 - 2.5 * eps, 1 + 2.5 * eps, points, dtype=torch.float64, requires_grad=True)
    values, slopes = [], []
    for k in range(points):
        ratio = r[k:k + 1]
        objective = -ppo_cartpole.clipped_surrogate_loss(ratio, torch.tensor([advantage], dtype=torch.float64), eps)
        (slope,) = torch.autograd.grad(objective, ratio)
        values.append(objective.item())
        slopes.append(slope.item())
    return r.detach().numpy(), np.array(values), np.array(slopes)


def clip_figure(eps: float = 0.2) -> bytes:
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.0), layout="constrained")
    for ax, advantage in zip(axes, (1.0, -1.0)):
        r, value, slope = clip_curves(advantage, eps)
        ax.plot(r, value, color=BLUE, label="$L^{CLIP}$")
        ax.plot(r, slope, color=ORANGE, linestyle="--", label="its gradient in $r$")
        ax.plot(r, r * advantage, color=GREY, linewidth=0.8, linestyle=":", label="$r A$ (unclipped)")
        for x in (1 - eps, 1 + eps):
            ax.axvline(x, color=GREY, linewidth=0.6)
        ax.axvline(1.0, color="black", linewidth=0.6)
        ax.set_xlabel(r"$r_t(\theta) = \pi_\theta(a_t|s_t) / \pi_{old}(a_t|s_t)$")
        flat = "above $1 + \\epsilon$" if advantage > 0 else "below $1 - \\epsilon$"
        ax.set_title(f"$A_t = {advantage:+.0f}$: flat {flat} ($\\epsilon$ = {eps})", fontsize=8)
    axes[0].legend(frameon=False, loc="upper left")
    fig.suptitle("Figure 1: one sample's $L^{CLIP}$ and its gradient, from ppo_cartpole.py's clipped_surrogate_loss",
                 fontsize=9)
    return svg(fig)


# --- GAE's worked example --------------------------------------------------------------------------------------

class Example:
    """A 6-step rollout of one env: the episode terminates at t = 2, the next one is truncated by a time limit at
    t = 4, and the rollout stops mid-episode after t = 5."""

    rewards = np.ones(6, dtype=np.float32)
    values = np.array([2.0, 1.5, 0.8, 3.0, 2.6, 2.2], dtype=np.float32)  # V(s_t), as the critic guessed them
    dones = np.array([0, 0, 1, 0, 1, 0], dtype=np.float32)
    ends = ["", "", "terminated", "", "truncated", ""]
    final_values = np.array([0, 0, 0.0, 0, 2.4, 0], dtype=np.float32)  # V(s_{t+1}) where an episode ended
    last_value = 2.0  # V(s_6), the state after the rollout's last step
    gamma = 0.9


def gae_example(lambdas=(0.0, 0.95, 1.0)) -> dict[float, np.ndarray]:
    """A_t of the example for each lambda, by ppo_cartpole.compute_gae."""
    import ppo_cartpole

    e = Example()
    return {lam: ppo_cartpole.compute_gae(e.rewards, e.values, e.dones, e.final_values, e.last_value, e.gamma, lam)
            for lam in lambdas}


def gae_table() -> str:
    """The worked example as a Markdown table: each step, what it bootstraps from, and A_t for each lambda."""
    e, found = Example(), gae_example()
    rows = ["| $t$ | $r_t$ | $V(s_t)$ | the episode | $V(s_{t+1})$ used | " +
            " | ".join(f"$A_t$, $\\lambda = {lam:g}$" for lam in found) + " |",
            "|" + "---|" * (5 + len(found))]
    for t in range(len(e.rewards)):
        if e.ends[t] == "terminated":
            nxt = "0 (no future)"
        elif e.ends[t] == "truncated":
            nxt = f"{e.final_values[t]:g} (V of the last observation)"
        else:
            nxt = f"{(e.values[t + 1] if t + 1 < len(e.values) else e.last_value):g}"
        cells = [str(t), f"{e.rewards[t]:g}", f"{e.values[t]:g}", e.ends[t] or "goes on", nxt]
        cells += [f"{found[lam][t]:+.3f}" for lam in found]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def gae_figure() -> bytes:
    e, found = Example(), gae_example()
    fig, ax = plt.subplots(figsize=(7.2, 2.8), layout="constrained")
    steps = np.arange(len(e.rewards))
    width = 0.26
    for k, (lam, adv) in enumerate(found.items()):
        # (rounded: NumPy 1 and 2 round compute_gae's float32 arithmetic differently in the last bit, which would
        # move a bar by a millionth of a point and change the file; the table beside it gives three decimals)
        ax.bar(steps + (k - 1) * width, np.round(adv.astype(np.float64), 4), width, label=f"$\\lambda = {lam:g}$",
               color=[GREY, BLUE, ORANGE][k])
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylim(0, 1.15)
    for t, end in enumerate(e.ends):
        if end:
            ax.axvline(t + 0.5, color=GREEN if end == "truncated" else "black", linewidth=1.2,
                       linestyle="--" if end == "truncated" else "-")
            source = "V = 0" if end == "terminated" else "V(last obs)"
            ax.text(t + 0.5, 1.15, f" {end}\n bootstraps from {source}", va="top", fontsize=7)
    ax.set_xticks(steps, [f"t = {t}" for t in steps])
    ax.set_ylabel("$A_t$")
    ax.legend(frameon=False, ncol=3, loc="lower left", fontsize=7)
    ax.set_title("The worked example's advantages, by ppo_cartpole.py's compute_gae ($\\gamma$ = 0.9, every reward 1)",
                 fontsize=8)
    return svg(fig)


# --- the loop ------------------------------------------------------------------------------------------------

def loop_figure() -> bytes:
    import ppo_cartpole

    args = ppo_cartpole.Args()
    fig, ax = plt.subplots(figsize=(7.2, 2.4))
    ax.set_axis_off()
    ax.set_xlim(0, 10.2)
    ax.set_ylim(0, 3)
    boxes = [
        (0.1, "1. Rollout", f"run $\\pi_{{old}}$ for T = {args.num_steps} steps:\n"
                            "$s_t$, $a_t$, $r_t$, done,\n$\\log \\pi_{old}(a_t|s_t)$, $V(s_t)$"),
        (3.5, "2. Advantages", f"GAE, $\\gamma$ = {args.gamma:g}, $\\lambda$ = {args.gae_lambda:g}:\n"
                               "$A_t$, and the targets\n$V^{targ}_t = A_t + V(s_t)$"),
        (6.9, "3. Update", f"K = {args.update_epochs} epochs; in each, minibatches\nof M = {args.minibatch_size}: "
                           "$r_t$, $-L^{CLIP} + c_1 L^{VF} - c_2 S$,\none Adam step each"),
    ]
    for x, title, body in boxes:
        ax.add_patch(matplotlib.patches.FancyBboxPatch((x, 1.0), 3.1, 1.8, boxstyle="round,pad=0.05",
                                                       facecolor="#eef4fb", edgecolor=BLUE))
        ax.text(x + 1.55, 2.5, title, ha="center", va="center", fontweight="bold")
        ax.text(x + 1.55, 1.6, body, ha="center", va="center", fontsize=7.5)
    for x in (3.25, 6.65):
        ax.annotate("", xy=(x + 0.22, 1.9), xytext=(x, 1.9), arrowprops={"arrowstyle": "->"})
    ax.plot([8.45, 8.45, 1.65], [0.95, 0.45, 0.45], color="black", linewidth=0.8)
    ax.annotate("", xy=(1.65, 0.95), xytext=(1.65, 0.45), arrowprops={"arrowstyle": "->", "linewidth": 0.8})
    ax.text(5.05, 0.12, "the updated $\\pi$ is $\\pi_{old}$ of the next rollout (ppo_cartpole.py's train(), "
            "defaults read off its Args)", ha="center", fontsize=7.5)
    return svg(fig)


# --- the networks --------------------------------------------------------------------------------------------

def layers(module: torch.nn.Module) -> list[str]:
    """The module's layers in order, as "Linear 4->64", "Tanh", "Conv 4->32, 8x8/4", ..."""
    out = []
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            out.append(f"Linear {layer.in_features}->{layer.out_features}")
        elif isinstance(layer, torch.nn.Conv2d):
            out.append(f"Conv {layer.in_channels}->{layer.out_channels}, {layer.kernel_size[0]}x{layer.kernel_size[1]}"
                       f"/{layer.stride[0]}")
        elif isinstance(layer, (torch.nn.Tanh, torch.nn.ReLU, torch.nn.Flatten)):
            out.append(type(layer).__name__)
    return out


def agents() -> dict[str, list[tuple[str, list[str]]]]:
    """Each lesson's Agent, built at its default size on its default env's spaces: {lesson: [(part, its layers)]},
    a shared trunk first where there is one."""
    import types

    import gymnasium as gym

    import ppo_breakout_atari
    import ppo_cartpole
    import ppo_lunarlander_vec
    import ppo_mario_cnn
    import ppo_pendulum_continuous

    def spaces(obs_shape, actions):
        action_space = gym.spaces.Discrete(actions) if isinstance(actions, int) else actions
        return types.SimpleNamespace(observation_space=gym.spaces.Box(0, 255, obs_shape, np.uint8),
                                     action_space=action_space)

    with gym.make("CartPole-v1") as env:
        cartpole = ppo_cartpole.Agent(env, ppo_cartpole.Args().hidden_size)
    with gym.make("LunarLander-v3") as env:
        lunar = ppo_lunarlander_vec.Agent(env, ppo_lunarlander_vec.Args().hidden_size)
    with gym.make("Pendulum-v1") as env:
        pendulum = ppo_pendulum_continuous.Agent(env, ppo_pendulum_continuous.Args().hidden_size)
    breakout = ppo_breakout_atari.Agent(spaces((4, 84, 84), 4), ppo_breakout_atari.Args().hidden_size)
    actions = len(ppo_mario_cnn.ACTION_SETS[ppo_mario_cnn.Args().action_type])
    mario = ppo_mario_cnn.Agent(spaces((4, 84, 84), actions), ppo_mario_cnn.Args().hidden_size)
    return {
        "ppo_cartpole.py": [("trunk", layers(cartpole.trunk)), ("actor: pi(a|s)", layers(cartpole.actor)),
                            ("critic: V(s)", layers(cartpole.critic))],
        "ppo_lunarlander_vec.py": [("actor: pi(a|s)", layers(lunar.actor)), ("critic: V(s)", layers(lunar.critic))],
        "ppo_pendulum_continuous.py": [
            ("actor: mean mu(s)", layers(pendulum.actor_mean) + [f"+ log sigma: {pendulum.actor_logstd.numel()} free"]),
            ("critic: V(s)", layers(pendulum.critic))],
        "ppo_breakout_atari.py": [("trunk: Nature CNN", layers(breakout.trunk)), ("actor: pi(a|s)", layers(breakout.actor)),
                                  ("critic: V(s)", layers(breakout.critic))],
        "ppo_mario_cnn.py": [("actor: pi(a|s)", layers(mario.actor_cnn) + layers(mario.actor)),
                             ("critic: V(s)", layers(mario.critic_cnn) + layers(mario.critic))],
    }


def network_figure() -> bytes:
    found = agents()
    fig = plt.figure(figsize=(7.2, 5.6), layout="constrained")
    grid = fig.add_gridspec(2, 6, height_ratios=[1, 1.7])
    cells = [grid[0, 0:2], grid[0, 2:4], grid[0, 4:6], grid[1, 0:3], grid[1, 3:6]]
    for cell, (lesson, parts) in zip(cells, found.items()):
        ax = fig.add_subplot(cell)
        ax.set_axis_off()
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(lesson, fontsize=7.5, fontweight="bold")
        shared = parts[0][0].startswith("trunk")
        # a trunk across the top, its two heads side by side below it; two networks side by side
        columns = [(0.5, parts[0]), (0.27, parts[1]), (0.75, parts[2])] if shared else \
            [(0.27, parts[0]), (0.75, parts[1])]
        below = 0.97
        for k, (x, (name, stack)) in enumerate(columns):
            y = 0.97 if not shared or k == 0 else below
            ax.text(x, y, name, ha="center", va="top", fontsize=6.5, fontweight="bold")
            step = 0.11 if ax.get_position().height < 0.35 else 0.068  # the same spacing in either row, in inches
            y -= step * 0.9
            for layer in stack:
                ax.text(x, y, layer, ha="center", va="top", fontsize=6,
                        bbox={"boxstyle": "round,pad=0.2", "facecolor": "#eef4fb", "edgecolor": BLUE, "linewidth": 0.6})
                y -= step
            if shared and k == 0:
                below = y - 0.03
    fig.suptitle("Each lesson's Agent, its layers read off the module (the observation enters at the top; a trunk, "
                 "where there is one, feeds both heads)", fontsize=7)
    return svg(fig)


# --- a vector env's autoreset --------------------------------------------------------------------------------

class ThreeSteps:
    """A 3-step episode: the observation counts the steps taken in it (0, 1, 2, 3), the third step terminates."""

    @staticmethod
    def make():
        import gymnasium as gym

        class Env(gym.Env):
            observation_space = gym.spaces.Box(0, 10, (1,), np.float32)
            action_space = gym.spaces.Discrete(2)

            def reset(self, *, seed=None, options=None):
                super().reset(seed=seed)
                self.t = 0
                return np.array([0.0], np.float32), {}

            def step(self, action):
                self.t += 1
                return np.array([float(self.t)], np.float32), 1.0, self.t == 3, False, {}

        return Env()


def autoreset_rows(mode) -> list[tuple[int, float, bool, str]]:
    """(step, the observation returned, terminated, what that step was) for 6 steps of one env in a SyncVectorEnv."""
    import gymnasium as gym

    envs = gym.vector.SyncVectorEnv([ThreeSteps.make], autoreset_mode=mode)
    obs, _ = envs.reset(seed=0)
    rows = [(0, float(obs[0, 0]), False, "reset")]
    ended = False
    for step in range(1, 7):
        obs, _, terminated, _, info = envs.step(np.array([0]))
        kind = "a transition"
        if mode == gym.vector.AutoresetMode.NEXT_STEP and ended:
            kind = "a reset: no transition"
        elif mode == gym.vector.AutoresetMode.SAME_STEP and terminated[0]:
            kind = f"ends: final_obs {float(info['final_obs'][0][0]):g}"
        rows.append((step, float(obs[0, 0]), bool(terminated[0]), kind))
        ended = bool(terminated[0])
    envs.close()
    return rows


def autoreset_figure() -> bytes:
    import gymnasium as gym

    modes = [(gym.vector.AutoresetMode.NEXT_STEP, "gymnasium's default, NEXT_STEP"),
             (gym.vector.AutoresetMode.SAME_STEP, "SAME_STEP, as the lessons' make_envs")]
    fig, axes = plt.subplots(2, 1, figsize=(7.2, 3.0), layout="constrained")
    for ax, (mode, title) in zip(axes, modes):
        rows = autoreset_rows(mode)
        ax.set_axis_off()
        ax.set_xlim(-0.5, 6.5)
        ax.set_ylim(0, 1)
        ax.set_title(title, fontsize=8, loc="left")
        for step, obs, terminated, kind in rows:
            colour = "#fde2e2" if kind.startswith("a reset") else ("#fff4d6" if terminated else "#eef4fb")
            ax.text(step, 0.55, f"obs {obs:g}" + (" (done)" if terminated else ""), ha="center", va="center",
                    fontsize=7, bbox={"boxstyle": "round,pad=0.3", "facecolor": colour, "edgecolor": GREY})
            ax.text(step, 0.05, f"step {step}:\n{kind}" if step else "reset", ha="center", fontsize=6)
    fig.suptitle("One env of a SyncVectorEnv, a 3-step episode: what each step returns", fontsize=8)
    return svg(fig)


# --- an Atari frame through the wrappers ---------------------------------------------------------------------

def atari_frames(steps: int = 8) -> list[tuple[str, np.ndarray]]:
    """One Breakout frame at each stage of ppo_breakout_atari.py's stack, after a seeded reset, FIRE (which launches
    the ball) and `steps` agent steps of NOOP: the emulator's frame, MaxAndSkip's max of the last two, GrayscaleResize's
    84 x 84, and FrameStack's four."""
    import gymnasium as gym

    import ppo_breakout_atari as breakout

    env = gym.make("BreakoutNoFrameskip-v4")
    skip = breakout.MaxAndSkip(env, skip=4)
    gray = breakout.GrayscaleResize(skip, size=84)
    stack = breakout.FrameStack(gray, k=4)
    stack.reset(seed=0)
    meanings = env.unwrapped.get_action_meanings()
    stack.step(meanings.index("FIRE"))
    for _ in range(steps):
        stack.step(meanings.index("NOOP"))
    maxed, _, _, _, _ = skip.step(meanings.index("NOOP"))  # one more agent step, seen at each stage
    raw = env.unwrapped.ale.getScreenRGB()
    small = gray.observation(maxed)
    stack.frames.append(small)
    frames = np.stack(stack.frames)
    env.close()
    return [("the emulator's last frame (210 x 160, RGB)", raw), ("MaxAndSkip: the max of the last two", maxed),
            ("GrayscaleResize: 84 x 84, gray", small), ("FrameStack: the last 4, the state $s_t$", frames)]


def ball(frames: np.ndarray) -> list[tuple[float, float] | None]:
    """Where the ball is in each stacked frame: the centre of the pixels bright in it and dark in its neighbour (the
    ball is what moves between them), or None."""
    spots = []
    for k in range(len(frames)):
        other = frames[k - 1] if k else frames[1]
        ys, xs = np.nonzero(frames[k].astype(int) > other.astype(int) + 30)  # bright here, dark there
        ys, xs = ys[ys > 20], xs[ys > 20]  # below the score
        spots.append((float(xs.mean()), float(ys.mean())) if len(xs) else None)
    return spots


def atari_figure() -> bytes:
    (raw_title, raw), (max_title, maxed), (gray_title, small), (stack_title, frames) = atari_frames()
    fig = plt.figure(figsize=(7.2, 4.2), layout="constrained")
    grid = fig.add_gridspec(2, 12)
    top = [fig.add_subplot(grid[0, 4 * k:4 * k + 4]) for k in range(3)]
    bottom = [fig.add_subplot(grid[1, 3 * k:3 * k + 3]) for k in range(4)]
    for ax, (title, image) in zip(top, ((raw_title, raw), (max_title, maxed), (gray_title, small))):
        ax.imshow(image, cmap=None if image.ndim == 3 else "gray", interpolation="nearest")
        ax.set_title(title, fontsize=7)
    for k, (ax, spot) in enumerate(zip(bottom, ball(frames))):
        ax.imshow(frames[k], cmap="gray", interpolation="nearest")
        if spot:
            ax.add_patch(matplotlib.patches.Circle(spot, 4, fill=False, edgecolor="red", linewidth=1))
        ax.set_title(f"frame {k + 1} of $s_t$" + (" (the newest)" if k == 3 else ""), fontsize=7)
    for ax in top + bottom:
        ax.set_axis_off()
    fig.suptitle(f"A Breakout frame through ppo_breakout_atari.py's wrappers (one seeded game); below, {stack_title}: "
                 "the ball (circled) moves from frame to frame", fontsize=7)
    return svg(fig)


# --- from games to language: one response's per-token rewards -------------------------------------------------

# The short run the figure trains: small enough for this command (`time python -m course.figures --check` took 21 s
# on 2026-12-07 on an Intel Xeon, 2 cores, this run 18 s of it), long enough for the policy to move away from pi_ref. The lesson's defaults are larger (its
# Hyperparameters; the figure says both).
LANGUAGE_RUN = {"pretrain_steps": 600, "reward_pairs": 2048, "reward_epochs": 2, "updates": 20, "seed": 1}
LANGUAGE_SAMPLES, LANGUAGE_SAMPLE_SEED = 256, 0


@contextlib.contextmanager
def kept_process_state():
    """The process as it was, after a lesson's train() has seeded its generators, switched on deterministic
    algorithms and taken over Ctrl-C; and one CPU thread meanwhile, so that the numbers do not depend on how many
    cores the machine has."""
    states = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    deterministic, threads, sigint = torch.are_deterministic_algorithms_enabled(), torch.get_num_threads(), \
        signal.getsignal(signal.SIGINT)
    torch.set_num_threads(1)
    try:
        yield
    finally:
        random.setstate(states[0]), np.random.set_state(states[1]), torch.set_rng_state(states[2])
        torch.use_deterministic_algorithms(deterministic)
        torch.set_num_threads(threads)
        signal.signal(signal.SIGINT, sigint)


@functools.lru_cache(maxsize=1)
def language_run() -> dict:
    """A short run of ppo_rlhf_tiny.train() itself (pretraining pi_ref, the reward model, then PPO's updates), in a
    temporary folder, its output silenced: {"args", "reference", "agent", "reward_model", "beta"}, the models read
    back from the run's checkpoint as the lesson's --play reads them."""
    import ppo_rlhf_tiny as lesson

    run = LANGUAGE_RUN
    args = lesson.Args(pretrain_steps=run["pretrain_steps"], reward_pairs=run["reward_pairs"],
                       reward_epochs=run["reward_epochs"], seed=run["seed"], checkpoint_every=0, eval_episodes=16)
    args.total_timesteps = args.num_envs * args.num_steps * run["updates"]
    lesson.check_args(args)
    with kept_process_state():
        with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder), \
                contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            lesson.train(args, None)
            (path,) = Path(folder).glob("runs/*/checkpoint.pt")
            ckpt = lesson.load_checkpoint(str(path))
        reference = lesson.Agent(args, lesson.ReviewTask().context)
        lesson.restore_agent(reference, {"agent": ckpt["reference"]}, str(path))
        agent, reward_model = copy.deepcopy(reference), lesson.RewardModel(reference)
        lesson.restore_agent(agent, ckpt, str(path))
        reward_model.load_state_dict(ckpt["reward_model"])
    return {"args": args, "reference": reference.requires_grad_(False), "agent": agent.requires_grad_(False),
            "reward_model": reward_model.requires_grad_(False), "beta": ckpt["kl_coef"]}


def language_samples() -> dict[str, dict]:
    """For pi_ref (before PPO) and the run's policy (after): LANGUAGE_SAMPLES responses to the same prompts, sampled
    (seed LANGUAGE_SAMPLE_SEED), by the lesson's collect_rollout, and each token's reward by its per_token_rewards
    with the run's last beta. {"before" | "after": {"rollout", "rewards", "hidden", "kl"}}, kl per response."""
    import ppo_rlhf_tiny as lesson

    found = language_run()
    args = dataclasses.replace(found["args"], num_envs=LANGUAGE_SAMPLES)
    out = {}
    for name, policy in (("before", found["reference"]), ("after", found["agent"])):
        with kept_process_state():
            np.random.seed(LANGUAGE_SAMPLE_SEED)  # the prompts: the same for both
            torch.manual_seed(LANGUAGE_SAMPLE_SEED)  # the sampling
            task = lesson.ReviewTask()
            rollout = lesson.collect_rollout(task, policy, found["reference"], found["reward_model"], args)
        rewards = lesson.per_token_rewards(rollout.scores, rollout.logprobs, rollout.ref_logprobs, rollout.mask,
                                           found["beta"])
        texts = torch.cat([rollout.prompts, rollout.responses], dim=1).tolist()
        out[name] = {"rollout": rollout, "rewards": rewards, "hidden": np.array([task.hidden_score(t) for t in texts]),
                     "kl": (rollout.logprobs - rollout.ref_logprobs).sum(1)}
    return out


def language_numbers() -> dict:
    """What language.svg shows, computed by the lesson's code: the run's last beta and, for pi_ref (before) and the
    run's policy (after), the first response's prompt, words, each token's KL term -beta (log pi - log pi_ref) (its
    reward by per_token_rewards, less R on the last token), R, return and hidden rule, and the means over the
    LANGUAGE_SAMPLES responses."""
    import ppo_rlhf_tiny as lesson

    found, samples = language_run(), language_samples()
    numbers = {"run": dict(LANGUAGE_RUN), "samples": LANGUAGE_SAMPLES, "sample_seed": LANGUAGE_SAMPLE_SEED,
               "beta": float(found["beta"])}
    for name, sample in samples.items():
        rollout, hidden, k = sample["rollout"], sample["hidden"], 0  # the first of the responses
        length = int(rollout.mask[k].sum().item())
        kl_terms = sample["rewards"][k, :length].clone()
        kl_terms[-1] -= rollout.scores[k]
        numbers[name] = {
            "prompt": lesson.ReviewTask().decode(rollout.prompts[k].tolist()),
            "words": [lesson.VOCAB[t] for t in rollout.responses[k, :length].tolist()],
            "kl_terms": [term + 0.0 for term in kl_terms.tolist()],  # (+ 0.0: -0.0 is 0, no "-0.00")
            "score": float(rollout.scores[k]), "return": float(sample["rewards"][k].sum()),
            "hidden_rule": float(hidden[k]), "mean_hidden": float(hidden.mean()),
            "grammatical": float((hidden != lesson.INVALID).mean()), "mean_score": rollout.scores.mean().item(),
            "mean_kl": sample["kl"].mean().item() + 0.0}
    return numbers


def language_figure(recorded: dict | None = None) -> bytes:
    """language.svg, drawn from `recorded` (None: its committed record, records/language.json)."""
    import ppo_rlhf_tiny as lesson

    recorded = recorded or record("language.svg")
    numbers, defaults = recorded["numbers"], lesson.Hyperparameters()
    fig, axes = plt.subplots(2, 1, figsize=(7.2, 4.6), layout="constrained", sharey=True)
    titles = {"before": "$\\pi_{ref}$, the pretrained model (PPO starts here: $\\pi = \\pi_{ref}$)",
              "after": f"$\\pi$ after {numbers['run']['updates']} PPO updates"}
    for ax, name in zip(axes, ("before", "after")):
        panel = numbers[name]
        words, kl_term, score = panel["words"], np.array(panel["kl_terms"]), panel["score"]
        length, steps = len(words), np.arange(len(words))
        ax.bar(steps, kl_term, 0.6, color=BLUE, label="$-\\beta(\\log \\pi - \\log \\pi_{ref})$, every token")
        ax.bar([length - 1], [score], 0.6, bottom=[kl_term[-1]], color=ORANGE,
               label="$R$, the reward model's score, on the last token")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.text(length - 1 + 0.35, kl_term[-1] + score, f"R = {score:+.2f}", va="center", fontsize=7, color=ORANGE)
        ax.set_xticks(steps, [f"$a_{{{t}}}$ = {w}\n{kl_term[t]:+.2f}" for t, w in enumerate(words)], fontsize=7)
        for label in ax.get_xticklabels():
            label.set_color(BLUE)
        ax.set_xlim(-0.6, max(length, 6) - 0.4)
        ax.set_ylabel("$r_t$")
        said = f"\"{panel['prompt']} | {' '.join(words)}\", return {panel['return']:+.2f}"
        ax.set_title(f"{titles[name]}: {said}, hidden rule {panel['hidden_rule']:+g}\n"
                     f"over its {numbers['samples']} responses: hidden score {panel['mean_hidden']:+.2f}, "
                     f"grammatical {panel['grammatical']:.0%}, R {panel['mean_score']:+.2f}, "
                     f"KL to $\\pi_{{ref}}$ {panel['mean_kl']:.2f} nats a response", fontsize=7, loc="left")
    axes[0].legend(frameon=False, fontsize=7, loc="upper right")
    run = numbers["run"]
    fig.suptitle(f"Each token's reward, by ppo_rlhf_tiny.py's per_token_rewards ($\\beta$ = {numbers['beta']:.3f}, "
                 f"the run's last), for the first of {numbers['samples']} responses sampled to the same prompts "
                 f"(seed {numbers['sample_seed']})\n"
                 f"a short run of the lesson's train(), seed {run['seed']}: "
                 f"{run['pretrain_steps']} pretraining steps, {run['reward_pairs']} preference pairs, "
                 f"{run['updates']} updates (its defaults: {defaults.pretrain_steps}, {defaults.reward_pairs}, "
                 f"{defaults.total_timesteps // (defaults.num_envs * defaults.num_steps)})\n"
                 f"{made_on(recorded)}", fontsize=7)
    return svg(fig)


# --- memory and masks: what one observation hides, what the LSTM keeps, what the mask rules out ----------------

MEMORY_SEED = 0  # CartPoleNoVel's episode (reset seed) and the LSTM rollout's envs (reset seeds 0, 1, 2) and weights
MEMORY_ENVS, MEMORY_STEPS = 3, 48  # the rollout the LSTM panel replays: N envs, T steps


def novel_episode(seed: int = MEMORY_SEED) -> dict:
    """One episode of ppo_lstm_memory.py's CartPoleNoVel-v1 under a rule that sees the angle alone, pushing the cart
    the way the pole leans: {"obs": what the agent sees, [T, 2] (x, theta), "state": the physics' state the env steps
    from, [T, 4] (x, x_dot, theta, theta_dot), "pair": two steps (t1, t2) of nearly the same angle on which the
    pole turns opposite ways}."""
    import gymnasium as gym

    import ppo_lstm_memory  # noqa: F401  (registers CartPoleNoVel-v1)

    env = gym.make("CartPoleNoVel-v1")
    obs, _ = env.reset(seed=seed)
    seen, states = [], []
    while True:
        seen.append(obs)
        states.append(np.array(env.unwrapped.state, dtype=np.float64))
        obs, _, terminated, truncated, _ = env.step(int(obs[1] > 0))
        if terminated or truncated:
            break
    env.close()
    seen, states = np.array(seen, dtype=np.float64), np.array(states)
    theta, theta_dot = states[:, 2], states[:, 3]
    # the two steps, at least 3 apart, whose angles are the closest (and not near 0) with angular velocities of
    # opposite signs
    pairs = [(abs(theta[i] - theta[j]), i, j) for i in range(len(theta)) for j in range(i + 3, len(theta))
             if theta_dot[i] * theta_dot[j] < 0 and abs(theta[i]) > 0.03]
    _, t1, t2 = min(pairs)
    return {"obs": seen, "state": states, "pair": (t1, t2)}


def lstm_rollout() -> dict:
    """A rollout of MEMORY_STEPS steps of MEMORY_ENVS envs by ppo_lstm_memory.py's collect_rollout, with an untrained
    Agent at the lesson's defaults (the second rollout of the run, so that it starts mid-episode from the state the
    first left), then replayed as the update replays it: get_action_and_value over the whole rollout from
    rollout.initial_state, its starts wiping the state. {"rollout", "handed": the state (h, c) the LSTM cell was
    handed at each step of the replay, [T, N, 2H], and "features": its input there, [T, N, H], both recorded by a hook
    on the cell, "logprobs": the replay's log pi(a_t|h_t), "agent"}."""
    import ppo_lstm_memory as lesson

    args = lesson.Args(num_envs=MEMORY_ENVS, num_steps=MEMORY_STEPS)
    with kept_process_state():
        torch.manual_seed(MEMORY_SEED)
        with lesson.make_env(args) as env:
            agent = lesson.Agent(env, args.hidden_size, args.lstm, args.norm_obs)
        envs = lesson.make_envs(args)
        obs, _ = envs.reset(seed=MEMORY_SEED)
        memory = (obs, np.ones(args.num_envs, np.float32), agent.initial_state(args.num_envs))
        for _ in range(2):
            rollout = lesson.Rollout(args.num_steps, args.num_envs, envs.single_observation_space.shape)
            memory, _, _ = lesson.collect_rollout(envs, agent, memory, rollout)
        envs.close()
        seen = []
        hook = agent.memory.register_forward_pre_hook(lambda cell, inputs: seen.append(inputs))
        with torch.no_grad():
            _, logprobs, _, _, _ = agent.get_action_and_value(
                torch.as_tensor(rollout.obs), rollout.initial_state, torch.as_tensor(rollout.starts),
                torch.as_tensor(rollout.actions))
        hook.remove()
    return {"rollout": rollout, "handed": torch.stack([torch.cat(state, -1) for _, state in seen]).numpy(),
            "features": torch.stack([feature for feature, _ in seen]), "logprobs": logprobs.numpy(), "agent": agent}


def memory_numbers() -> dict:
    """What memory.svg shows, computed by the lesson's code: novel_episode's observed theta and hidden theta_dot and
    its two marked steps; lstm_rollout's norm of the state (h, c) the cell was handed at each step of each env [T][N],
    its episode starts [T][N], and the replay's largest |log pi - the rollout's log pi|."""
    episode, found = novel_episode(), lstm_rollout()
    rollout = found["rollout"]
    return {"seed": MEMORY_SEED, "theta": episode["obs"][:, 1].astype(np.float64).tolist(),
            "theta_dot": episode["state"][:, 3].tolist(), "pair": [int(t) for t in episode["pair"]],
            "norms": np.linalg.norm(found["handed"].astype(np.float64), axis=-1).tolist(),
            "starts": rollout.starts.astype(int).tolist(),
            "gap": float(np.abs(found["logprobs"] - rollout.logprobs).max())}


def memory_figure(recorded: dict | None = None) -> bytes:
    """memory.svg, drawn from `recorded` (None: its committed record, records/memory.json)."""
    recorded = recorded or record("memory.svg")
    numbers = recorded["numbers"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.2, 3.4), layout="constrained")
    theta, theta_dot = np.array(numbers["theta"]), np.array(numbers["theta_dot"])
    steps = np.arange(len(theta))
    left.plot(steps, theta, color=BLUE, label=r"$\theta$, seen (the observation)")
    left.set_xlabel("step of the episode")
    left.set_ylabel(r"$\theta$ (rad)", color=BLUE)
    twin = left.twinx()
    twin.plot(steps, theta_dot, color=ORANGE, linestyle="--", label=r"$\dot\theta$, hidden")
    twin.set_ylabel(r"$\dot\theta$ (rad/s), not observed", color=ORANGE)
    twin.spines["right"].set_visible(True)
    for t, offset in zip(numbers["pair"], ((3, -26), (6, 6))):
        left.plot([t], [theta[t]], marker="o", color="black")
        twin.plot([t], [theta_dot[t]], marker="s", color=ORANGE)
        left.annotate(f"t = {t}: $\\theta$ = {theta[t]:.3f},\n$\\dot\\theta$ = {theta_dot[t]:+.2f}",
                      (t, theta[t]), textcoords="offset points", xytext=offset, fontsize=6.5)
    left.set_title("CartPoleNoVel-v1 (ppo_lstm_memory.py), one episode of\na rule that sees $\\theta$ alone: push "
                   f"the way the pole leans\n(reset seed {numbers['seed']}). Dots: the same angle, turning opposite "
                   "ways", fontsize=7, loc="left")
    lines = left.get_lines()[:1] + twin.get_lines()[:1]
    left.legend(lines, [line.get_label() for line in lines], frameon=False, fontsize=6.5, loc="lower left")

    norms, starts = np.array(numbers["norms"]), np.array(numbers["starts"])  # [T, N]
    colours = [BLUE, ORANGE, GREEN]
    for n in range(starts.shape[1]):
        right.plot(np.arange(len(norms)), norms[:, n], color=colours[n], marker=".", markersize=3,
                   label=f"env {n}")
        for t in np.flatnonzero(starts[:, n]):
            right.axvline(t, color=colours[n], linewidth=0.6, linestyle=":")
    right.set_xlabel("step t of the rollout")
    right.set_ylabel("$\\|(h, c)\\|$ the cell steps from")
    right.legend(frameon=False, fontsize=6.5, loc="upper left", ncol=3)
    gap = numbers["gap"]
    right.set_title(f"ppo_lstm_memory.py's get_states over a rollout of {len(norms)} steps\nof {norms.shape[1]} envs "
                    "(untrained Agent): the state each step starts\nfrom; dotted: an episode's first step, where it "
                    "is 0.\nReplayed from rollout.initial_state, the update's log $\\pi$\nis the rollout's: largest "
                    f"difference {gap:.1g}", fontsize=7, loc="left")
    fig.supxlabel(made_on(recorded), fontsize=6.5)
    return svg(fig)


MASKING_RUN = {"updates": 20, "seed": 1}  # the short run of ppo_action_masking.train() the board's policy comes from
MASKING_GAME_SEED, MASKING_MOVES = 0, 2  # the game: reset seed, and the policy's greedy moves before the board shown


@functools.lru_cache(maxsize=1)
def masking_board() -> dict:
    """A board of TicTacToe-v0 (ppo_action_masking.py) after MASKING_MOVES greedy moves of the policy a short run of
    the lesson's own train() left, each answered by the random opponent, and pi over its 9 cells on it by the lesson's
    Agent.get_action_and_value: with the env's mask, and with every cell offered (--no-mask-actions' mask).
    {"board": [9] (1 X, -1 O, 0 empty), "mask": [9], "masked" and "unmasked": {"pi": [9], "entropy"}, "args"}."""
    import gymnasium as gym

    import ppo_action_masking as lesson

    run = MASKING_RUN
    args = lesson.Args(seed=run["seed"], checkpoint_every=0)
    args.total_timesteps = args.num_steps * run["updates"]
    lesson.check_args(args)
    with kept_process_state():
        with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder), \
                contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            lesson.train(args, None)
            (path,) = Path(folder).glob("runs/*/checkpoint.pt")
            ckpt = lesson.load_checkpoint(str(path))
        env = gym.make(args.env_id)
        agent = lesson.Agent(env, args.hidden_size)
        lesson.restore_agent(agent, ckpt, str(path))
        obs, info = env.reset(seed=MASKING_GAME_SEED)
        with torch.no_grad():
            for _ in range(MASKING_MOVES):
                action, _, _, _ = agent.get_action_and_value(torch.as_tensor(obs), torch.as_tensor(info["action_mask"]),
                                                             greedy=True)
                obs, _, terminated, truncated, info = env.step(action.item())
                assert not (terminated or truncated), "the game ended before the board the figure shows"
            board, mask = env.unwrapped.board.copy(), info["action_mask"].copy()
            found = {"board": board, "mask": mask, "args": args}
            for name, offered in (("masked", mask), ("unmasked", np.ones_like(mask))):
                x, m = torch.as_tensor(obs), torch.as_tensor(offered)
                log_pi = torch.stack([agent.get_action_and_value(x, m, torch.tensor(a))[1] for a in range(len(mask))])
                entropy = agent.get_action_and_value(x, m, torch.tensor(int(np.flatnonzero(mask)[0])))[2]
                found[name] = {"pi": log_pi.exp().numpy().astype(np.float64), "entropy": float(entropy)}
        env.close()
    return found


def masking_numbers() -> dict:
    """What masking.svg shows, computed by the lesson's code: masking_board's board, mask, and pi over the 9 cells
    and its entropy, with the mask and with every cell offered."""
    found = masking_board()
    return {"run": dict(MASKING_RUN), "num_steps": found["args"].num_steps, "game_seed": MASKING_GAME_SEED,
            "moves": MASKING_MOVES, "board": [int(c) for c in found["board"]], "mask": [int(m) for m in found["mask"]],
            **{name: {"pi": found[name]["pi"].tolist(), "entropy": found[name]["entropy"]}
               for name in ("unmasked", "masked")}}


def masking_figure(recorded: dict | None = None) -> bytes:
    """masking.svg, drawn from `recorded` (None: its committed record, records/masking.json)."""
    import ppo_action_masking as lesson

    recorded = recorded or record("masking.svg")
    numbers, defaults = recorded["numbers"], lesson.Hyperparameters()
    board, valid = np.array(numbers["board"]), np.array(numbers["mask"]) == 1
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.6), layout="constrained")
    marks = {1: "X", -1: "O"}
    titles = {"unmasked": "every cell offered (the mask all ones,\nas with --no-mask-actions)",
              "masked": "the env's mask (info[\"action_mask\"]):\nthe taken cells' logits set to $-\\infty$"}
    for ax, name in zip(axes, ("unmasked", "masked")):
        pi = np.array(numbers[name]["pi"])
        ax.imshow(pi.reshape(3, 3), cmap="Blues", vmin=0, vmax=1)
        for cell in range(9):
            row, col = divmod(cell, 3)
            taken = board[cell] != 0
            text = f"{marks.get(int(board[cell]), '')}\n" if taken else ""
            value = "exactly 0" if pi[cell] == 0 else f"{pi[cell]:.3f}" if pi[cell] >= 0.001 else f"{pi[cell]:.1e}"
            ax.text(col, row, text + value, ha="center", va="center", fontsize=8,
                    color="white" if pi[cell] > 0.5 else ("#b03030" if taken else "black"),
                    fontweight="bold" if taken else "normal")
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
        for k in (0.5, 1.5):
            ax.axhline(k, color=GREY, linewidth=0.8)
            ax.axvline(k, color=GREY, linewidth=0.8)
        ax.set_title(f"{titles[name]}\nsum over the empty cells {pi[valid].sum():.3f}, over the taken "
                     f"{pi[~valid].sum():.3f};\nentropy {numbers[name]['entropy']:.3f} nats", fontsize=7)
    run = numbers["run"]
    fig.suptitle(f"$\\pi$ over tic-tac-toe's 9 cells, by ppo_action_masking.py's Agent.get_action_and_value, after a "
                 f"short run of its train()\n({run['updates']} updates of {numbers['num_steps']} steps, seed "
                 f"{run['seed']}; the lesson's default: {defaults.total_timesteps // defaults.num_steps} updates), on "
                 f"the board its greedy policy reached\nin the game of reset seed {numbers['game_seed']} after "
                 f"{numbers['moves']} moves (X: the agent, O: the random opponent; taken cells in red)", fontsize=7)
    fig.supxlabel(made_on(recorded), fontsize=6.5)
    return svg(fig)


# GRPO's worked example: four responses to one prompt and the reward model's scores of them (chosen by hand)
GRPO_SCORES = [1.5, 0.5, 0.5, -0.5]


def grpo_table() -> str:
    """The GRPO example as a Markdown table: each response's score, its distance to the group's mean, and its
    advantage by grpo_rlhf_tiny.group_advantages (the group's std unbiased, plus 1e-4)."""
    import grpo_rlhf_tiny

    scores = torch.tensor(GRPO_SCORES)
    advantages = grpo_rlhf_tiny.group_advantages(scores, len(GRPO_SCORES))
    mean, std = scores.mean().item(), scores.std().item()
    rows = ["| response $i$ | $R_i$ | $R_i - \\text{mean}$ | $\\hat{A}_i$, on each of its tokens |",
            "|---|---|---|---|"]
    rows += [f"| {i + 1} | {r:+g} | {f'{r - mean:+g}' if r != mean else '0'} | {f'{a:+.3f}' if a else '0'} |"
             for i, (r, a) in enumerate(zip(GRPO_SCORES, advantages.tolist()))]
    rows.append(f"| the group | mean {mean:g} | std {std:.3f} | |")
    return "\n".join(rows)


# --- the loop's pseudocode, linked to ppo_cartpole.py ------------------------------------------------------------

# Each line: the text, then the needle that finds its line in ppo_cartpole.py (the first line holding it).
PSEUDOCODE = [
    ("for each update i = 1, ..., num_iterations:", "for iteration in range(start_iteration"),
    ("    lr = alpha_i * learning_rate, alpha_i = 1 - (i - 1) / num_iterations", '["lr"] = alpha * args.learning_rate'),
    ("    run pi_old for T steps: s_t, a_t, r_t, done_t, log pi_old(a_t|s_t), V(s_t)", "def collect_rollout("),
    ("        a time limit's step bootstraps from V(last observation), a termination's from 0",
     "rollout.final_values[step] = agent.get_value("),
    ("    A_t by GAE: delta_t = r_t + gamma V(s_{t+1}) - V(s_t), A_t = delta_t + gamma lambda A_{t+1}",
     "def compute_gae("),
    ("    V^targ_t = A_t + V(s_t)", "returns = advantages + rollout.values"),
    ("    for K epochs:", "for epoch in range(args.update_epochs):"),
    ("        for each shuffled minibatch of M steps:", "torch.randperm(args.batch_size"),
    ("            r_t = exp(log pi(a_t|s_t) - log pi_old(a_t|s_t))", "ratio = logratio.exp()"),
    ("            A_t normalized over the minibatch", "if args.norm_adv:"),
    ("            -L^CLIP = -mean(min(r_t A_t, clip(r_t, 1 - eps, 1 + eps) A_t))", "def clipped_surrogate_loss("),
    ("            loss = -L^CLIP + c1 L^VF - c2 S", "loss = pg_loss + args.vf_coef * v_loss"),
    ("            one Adam step, the gradient's norm clipped to max_grad_norm", "optimizer.step()"),
]


def pseudocode_block(root: Path = ROOT) -> str:
    """The loop as a Markdown list of lines (a code block cannot hold links), each linking to its line."""
    lines = (root / "ppo_cartpole.py").read_text().splitlines()
    out = []
    for text, needle in PSEUDOCODE:
        found = [n for n, line in enumerate(lines, start=1) if needle in line and not line.strip().startswith("#")]
        if not found:
            raise SystemExit(f"course.figures: no line of ppo_cartpole.py holds {needle!r}")
        indent = len(text) - len(text.lstrip())
        out.append(f"{'&nbsp;' * indent}[`{text.strip()}`](../ppo_cartpole.py#L{found[0]})<br>")
    out[-1] = out[-1].removesuffix("<br>")
    return "\n".join(out)


# --- the figures drawn from recorded numbers ---------------------------------------------------------------------

# language.svg, memory.svg and masking.svg show what the lessons' code computes in floating point (a short training
# run, an LSTM's state), which is bit-exact on one processor only: another one's kernels sum in another order and
# round differently. So what each shows is recorded, with the processor that computed it, in
# course/figures/records/<figure>.json, and the figure is drawn from its record: the same bytes on any processor.
# The record is held against what the code computes today within the figure's tolerance (`differences`), and
# `python -m course.figures` writes it again only where they disagree (or with --record).
@dataclasses.dataclass(frozen=True)
class Recorded:
    numbers: Callable[[], dict]  # what the figure shows, computed by the lessons' code now (JSON's types)
    draw: Callable[[dict | None], bytes]  # the figure, from a record (None: the committed one)
    tolerance: dict  # how far a float may move from its record: {"relative", "absolute"} (see TOLERANCES)


# How far a number may move between processors: |now - recorded| <= absolute + relative * max(|now|, |recorded|).
# Measured on 2026-12-07 on the Intel Xeon (no AMX) that computed the records, against the same code with torch's
# kernels held to other instruction sets, as another processor's would be:
# - language.svg, in 7 variants (ATEN_CPU_CAPABILITY=default and avx2, ONEDNN_MAX_CPU_ISA=SSE41, AVX2 and
#   AVX512_CORE, and two pairs of these): its short run is chaotic. The reward model comes out a thousandth away
#   (pi_ref's R -1.5812 recorded, up to 0.002 from it), a sampled token goes another way, and in 6 of the 7 the
#   policy after 20 updates is another: its mean KL to pi_ref (2.04 recorded) 0.26 to 0.38 away, up to 18.5% of
#   it; the first response's first KL term (-0.043) up to 0.010 away, 19.7%; its words the same. The tolerance is
#   2 to 4 times the largest of these moves, and still catches a sign flipped (2|x| > 0.02 + 0.4|x| for any
#   |x| > 0.0125).
# - memory.svg and masking.svg, in 3 (ATEN_CPU_CAPABILITY=default and avx2, ONEDNN_MAX_CPU_ISA=AVX2): no number
#   moved by more than 1.5e-8 and 3.6e-7, no sampled action went another way. On a processor where one did, they
#   would move past these tolerances (those of the figures' printed digits) and be recorded again there.
# - Python 3.13 (.ci/run's second half: numpy 2.5.5, torch 2.13.0's CUDA build on the CPU), the same machine: language
#   and memory the same to the bit, masking 1.8e-7 away.
TOLERANCES = {"language.svg": {"relative": 0.4, "absolute": 0.02},
              "memory.svg": {"relative": 1e-3, "absolute": 1e-4},
              "masking.svg": {"relative": 1e-3, "absolute": 1e-4}}


def recorded_figures() -> dict[str, Recorded]:
    return {"language.svg": Recorded(language_numbers, language_figure, TOLERANCES["language.svg"]),
            "memory.svg": Recorded(memory_numbers, memory_figure, TOLERANCES["memory.svg"]),
            "masking.svg": Recorded(masking_numbers, masking_figure, TOLERANCES["masking.svg"])}


def record_path(figure: str) -> Path:
    return FIGURES / "records" / f"{Path(figure).stem}.json"


def record(figure: str) -> dict:
    """The committed record of `figure`: {"figure", "command", "processor", "versions", "numbers"}."""
    path = record_path(figure)
    if not path.is_file():
        raise SystemExit(f"course.figures: {shown(path)} is missing: run python -m course.figures to record it")
    return json.loads(path.read_text())


def new_record(figure: str, numbers: dict) -> dict:
    """A record of `numbers`, computed on this machine, on one CPU thread (kept_process_state)."""
    return {"figure": figure, "command": "python -m course.figures", "processor": records.processor(),
            "versions": records.versions(), "numbers": json.loads(json.dumps(numbers))}


def write_record(figure: str, recorded: dict) -> None:
    """The record as JSON, atomically (written beside it, then renamed over it)."""
    path = record_path(figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(record_json(recorded) + "\n")
    tmp.replace(path)


def record_json(value, depth: int = 0) -> str:
    """JSON with a key a line and a list of numbers on one line (a list of lists a line each), to read and diff."""
    pad = " " * (depth + 1)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(key)}: {record_json(item, depth + 1)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        return "[\n" + ",\n".join(pad + record_json(item, depth + 1) for item in value) + "\n" + " " * depth + "]"
    return json.dumps(value)


def made_on(recorded: dict) -> str:
    """The line a recorded figure says where its numbers come from."""
    return (f"computed on one CPU thread of an {recorded['processor']} "
            f"(course/figures/records/{Path(recorded['figure']).stem}.json)")


def differences(recorded, fresh, tolerance: dict, where: str = "numbers") -> list[str]:
    """Where `fresh` (JSON's types) is not `recorded`, one line each: every key, length, string, int and bool
    exactly; each float within `tolerance` of the recorded one (|fresh - recorded| <= absolute + relative *
    max(|fresh|, |recorded|)), and exactly 0 where the record has exactly 0, and only there (the figures show exact
    zeros: a taken cell's masked pi, a KL term before any update, a state wiped at an episode's start)."""
    if isinstance(recorded, dict) and isinstance(fresh, dict):
        if recorded.keys() != fresh.keys():
            return [f"{where}: keys {sorted(recorded)} recorded, {sorted(fresh)} now"]
        return [line for key in recorded for line in differences(recorded[key], fresh[key], tolerance,
                                                                 f"{where}.{key}")]
    if isinstance(recorded, list) and isinstance(fresh, list):
        if len(recorded) != len(fresh):
            return [f"{where}: {len(recorded)} values recorded, {len(fresh)} now"]
        return [line for i, (a, b) in enumerate(zip(recorded, fresh))
                for line in differences(a, b, tolerance, f"{where}[{i}]")]
    if type(recorded) is float and type(fresh) is float:
        if (recorded == 0) != (fresh == 0):
            return [f"{where}: {recorded!r} recorded, {fresh!r} now (exactly 0 on one side only)"]
        bound = tolerance["absolute"] + tolerance["relative"] * max(abs(recorded), abs(fresh))
        if recorded != fresh and not (math.isfinite(recorded) and math.isfinite(fresh)
                                      and abs(recorded - fresh) <= bound):
            return [f"{where}: {recorded:.6g} recorded, {fresh:.6g} now (beyond the tolerance)"]
        return []
    if type(recorded) is type(fresh) and recorded == fresh:
        return []
    return [f"{where}: {recorded!r} recorded, {fresh!r} now"]


def today(figure: str) -> dict:
    """A new record of what `figure` shows, as the lessons' code computes it on this machine now."""
    return new_record(figure, recorded_figures()[figure].numbers())


def moved(figure: str, fresh: dict) -> list[str]:
    """Where the record `fresh` differs from the committed record of `figure` beyond the figure's tolerance."""
    if not record_path(figure).is_file():
        return ["no record"]
    return differences(record(figure)["numbers"], fresh["numbers"], recorded_figures()[figure].tolerance)


def held_against_records(rerecord: bool = False) -> tuple[dict[str, dict], dict[str, str]]:
    """For each recorded figure, the record to draw it from: the committed one where what the code computes today
    agrees with it within the figure's tolerance (and not `rerecord`), else a new record of today's numbers; and, for
    each record that changes, why."""
    out, changed = {}, {}
    for figure in recorded_figures():
        fresh = today(figure)
        lines = moved(figure, fresh)
        old = None if lines == ["no record"] else record(figure)
        if lines:
            changed[figure] = lines[0] + (f" and {len(lines) - 1} more" if len(lines) > 1 else "")
        elif rerecord and fresh != old:
            changed[figure] = "--record"
        out[figure] = fresh if figure in changed else old
    return out, changed


# --- writing and checking ------------------------------------------------------------------------------------------

def figures(recorded: dict[str, dict] | None = None) -> dict[str, bytes]:
    """Every figure, the recorded ones from `recorded` (figure: record; None: the committed records)."""
    recorded = recorded or {}
    return {"clip.svg": clip_figure(), "gae.svg": gae_figure(), "loop.svg": loop_figure(),
            "networks.svg": network_figure(), "autoreset.svg": autoreset_figure(), "atari.svg": atari_figure(),
            **{name: figure.draw(recorded.get(name)) for name, figure in recorded_figures().items()}}


def between(text: str, name: str, body: str, where: str = LESSON0.name) -> str:
    """`text` with `body` between the markers of the generated block `name` (the file `where` names)."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{where} has no {begin} ... {end} markers")
    return text[:text.index(begin) + len(begin)] + "\n" + body + "\n" + text[text.index(end):]


def lesson0(text: str) -> str:
    """ppo-on-one-page.md with its generated blocks as the code gives them today."""
    text = between(between(text, "gae-example", gae_table()), "loop", pseudocode_block())
    return between(text, "grpo-example", grpo_table())


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 where a committed figure, record or block differs (a record: beyond its "
                             "figure's tolerance)")
    parser.add_argument("--record", action="store_true",
                        help="record what this machine computes for the recorded figures (language, memory, "
                             "masking), even where it agrees with their records within the tolerance")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    FIGURES.mkdir(parents=True, exist_ok=True)
    recorded, changed = held_against_records(rerecord=args.record)
    stale = [f"{shown(record_path(figure))} ({why})" for figure, why in changed.items()]
    if not args.check:
        for figure in changed:
            write_record(figure, recorded[figure])
    drawn = figures(recorded)
    for name, data in drawn.items():
        path = FIGURES / name
        if not path.is_file() or path.read_bytes() != data:
            stale.append(shown(path))
            if not args.check:
                path.write_bytes(data)
    text = LESSON0.read_text()
    updated = lesson0(text)
    if updated != text:
        stale.append(shown(LESSON0))
        if not args.check:
            LESSON0.write_text(updated)
    if args.check:
        print("\n".join(f"stale: {s}" for s in stale) or "course figures and blocks: as the code draws them")
        return 1 if stale else 0
    print(f"wrote {len(drawn)} figures in {shown(FIGURES)}/" + (f"; rewrote {', '.join(stale)}" if stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
