"""Exercises: write PPO's parts yourself, and be told exactly what is wrong.

Each exercise is a file of this folder holding the signature, the docstring and the equation of one of the lessons'
own functions (or wrapper classes), with a body to write. `python -m exercises check NAME` runs your code on cases
worked out by hand, each built around one trap (an episode that ends mid-rollout, a truncation, a negative
advantage, a ratio outside the clip range, a batch of one), then on random inputs against the lesson's own code; a
failure names the case, what was expected and what came back, and a hint at the idea it tests, never the answer.
`python -m exercises train NAME` trains the lesson with your function swapped in (exercises/train.py). The lessons
are the solutions: `python -m exercises solution NAME` shows the lesson's code. exercises/README.md is the list.
The first, REINFORCE, comes before any lesson (after lesson 0's policy gradient): its solution and its trainer are a
file of their own, exercises/reinforce_cartpole.py.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import gymnasium as gym
import numpy as np
import torch


@dataclass(frozen=True)
class Exercise:
    name: str  # the file exercises/<name>.py and the command's NAME
    function: str  # the function to write there, and the lesson's of the same name
    lesson: str  # the lesson that has it (its solution)
    idea: str  # one line: what the exercise teaches
    traps: tuple[str, ...]  # the traps its cases test, each explained in a sentence (shown by `solution`)

    def learner(self) -> Callable:
        return getattr(importlib.import_module(f"exercises.{self.name}"), self.function)

    def reference(self) -> Callable:
        """The lesson's own code for it: its function of the same name, or (REFERENCES) a call of the lesson's
        code that does the same."""
        if isinstance(REFERENCES.get(self.name), str):  # "module:function", imported when first asked for
            module, _, function = REFERENCES[self.name].partition(":")
            return getattr(importlib.import_module(module), function)
        if self.name in REFERENCES:
            return REFERENCES[self.name]
        return getattr(importlib.import_module(self.lesson.removesuffix(".py")), self.function)

    def shown(self) -> Callable:
        """What `solution` shows: the lesson's function, or the method that holds the code."""
        if self.name in SHOWN:
            module, _, attribute = SHOWN[self.name].partition(":")
            owner = importlib.import_module(module)
            for part in attribute.split("."):
                owner = getattr(owner, part)
            return owner
        return self.reference()


class Failed(Exception):
    """A case the function got wrong: what was expected and what came back."""


@dataclass(frozen=True)
class Case:
    name: str  # the case, as a learner reads it: "a termination mid-rollout (lambda = 0)"
    hint: str  # the idea it tests, never the answer
    run: Callable[[Callable], None]  # raises Failed, with what was expected and what came back


def close(got, expected, what: str = "") -> None:
    """Raise Failed unless `got` equals `expected` (arrays, to float32 rounding; shapes too)."""
    got_array = got.detach().cpu().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    expected = np.asarray(expected, dtype=np.float64)
    if got_array.shape != expected.shape:
        raise Failed(f"{what}expected shape {expected.shape}, got shape {got_array.shape}")
    if not np.allclose(got_array.astype(np.float64), expected, rtol=1e-5, atol=1e-5):
        fmt = {"float_kind": lambda x: f"{x:.4f}"}
        raise Failed(f"{what}expected {np.array2string(expected, formatter=fmt)}, "
                     f"got {np.array2string(got_array.astype(np.float64), formatter=fmt)}")


# --- REINFORCE ------------------------------------------------------------------------------------------------------

def _reinforce_case(logprobs, rewards, dones, gamma, returns):
    """Check -mean(log pi G_t)'s value, and its gradient in each log pi(a_t|s_t): -G_t / T. `returns`: the G_t worked
    out by hand."""
    def run(fn):
        logprob = torch.tensor(logprobs, dtype=torch.float64, requires_grad=True)
        loss = fn(logprob, torch.tensor(rewards, dtype=torch.float64), torch.tensor(dones, dtype=torch.float64), gamma)
        the_loss(loss, -sum(lp * g for lp, g in zip(logprobs, returns)) / len(returns))
        if not loss.requires_grad:
            raise Failed("expected a loss that carries the gradient, got one that carries none: compute it from "
                         "`logprobs` with torch operations")
        loss.backward()
        close(logprob.grad, [-g / len(returns) for g in returns], "its gradient in log pi(a_t|s_t) (-G_t / T): ")
    return run


def _reinforce_random(fn):
    """30 random batches of 1 to 4 episodes against the solution's reinforce_loss."""
    reference = EXERCISES["reinforce"].reference()
    rng = np.random.default_rng(6)
    for k in range(30):
        lengths = rng.integers(1, 8, size=int(rng.integers(1, 5)))
        dones = np.concatenate([np.eye(1, n, n - 1)[0] for n in lengths])
        logprobs, rewards, gamma = -rng.uniform(0.05, 2, len(dones)), rng.normal(size=len(dones)), rng.uniform(0.8, 1)
        mine, theirs = (torch.tensor(logprobs, requires_grad=True) for _ in range(2))
        got = fn(mine, torch.tensor(rewards), torch.tensor(dones), float(gamma))
        expected = reference(theirs, torch.tensor(rewards), torch.tensor(dones), float(gamma))
        what = f"random batch {k + 1} of 30 ({len(lengths)} episodes, T = {len(dones)}), "
        if not isinstance(got, torch.Tensor) or got.dim() != 0 or not got.requires_grad:
            raise Failed(f"{what}expected a torch scalar carrying the gradient, got {got!r}")
        close(got, expected.item(), what + "the loss: ")
        got.backward()
        expected.backward()
        close(mine.grad, theirs.grad.numpy(), what + "the gradient: ")


REINFORCE_CASES = [
    Case("one step, one episode (gamma = 0.9): a batch of one",
         "the loss to minimize is -mean(log pi(a_t|s_t) G_t): log pi as given, not pi; its gradient in log pi is "
         "-G_t / T, so a step makes an action with G_t > 0 more likely",
         _reinforce_case([-0.5], [2.0], [1.0], 0.9, [2.0])),
    Case("two one-step episodes (gamma = 0): the mean over the batch's steps",
         "the loss is the mean over the T steps, not their sum: each step's gradient carries 1 / T",
         _reinforce_case([-0.5, -1.0], [1.0, 3.0], [1.0, 1.0], 0.0, [1.0, 3.0])),
    Case("one episode of three steps (gamma = 1): each step weighted by the rewards from it on",
         "G_t sums the rewards from step t to the episode's end: an action earned nothing that came before it",
         _reinforce_case([-0.2, -0.7, -1.2], [1.0, 2.0, 4.0], [0.0, 0.0, 1.0], 1.0, [1 + 2 + 4, 2 + 4, 4])),
    Case("one episode of three steps (gamma = 0.5): the discount",
         "G_t = r_t + gamma G_{t+1}: a reward k steps after t counts gamma^k, counted from t, not from the "
         "episode's start",
         _reinforce_case([-0.2, -0.7, -1.2], [1.0, 2.0, 4.0], [0.0, 0.0, 1.0], 0.5,
                         [1 + 0.5 * 2 + 0.25 * 4, 2 + 0.5 * 4, 4])),
    Case("two episodes in one batch, the first ending at t = 1 (gamma = 0.5)",
         "where dones[t] = 1 the episode is over: G_{t+1} belongs to the next episode and does not flow back",
         _reinforce_case([-0.3, -0.6, -0.9, -1.2], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0], 0.5,
                         [1 + 0.5 * 1, 1, 1 + 0.5 * 1, 1])),
    Case("random batches of whole episodes against the solution's reinforce_loss",
         "every case above at once: episodes of any length, any gamma", _reinforce_random),
]


# --- GAE ------------------------------------------------------------------------------------------------------------

def _gae(rewards, values, dones, final_values, last_value, gamma, lam):
    def f32(x):
        return np.asarray(x, dtype=np.float32)
    return f32(rewards), f32(values), f32(dones), f32(final_values), f32(last_value), gamma, lam


def _gae_case(args, expected):
    def run(fn):
        close(fn(*_gae(*args)), expected)
    return run


def _gae_random(fn):
    """30 random rollouts, 1 to 3 envs, episodes ending at random, against the lesson's compute_gae."""
    reference = EXERCISES["gae"].reference()
    rng = np.random.default_rng(0)
    for k in range(30):
        shape = (int(rng.integers(1, 12)),) + ((int(rng.integers(1, 4)),) if k % 2 else ())
        dones = (rng.random(shape) < 0.3).astype(np.float32)
        args = (rng.normal(size=shape).astype(np.float32), rng.normal(size=shape).astype(np.float32), dones,
                np.where(dones == 1, rng.normal(size=shape), 0).astype(np.float32),
                rng.normal(size=shape[1:]).astype(np.float32) if len(shape) > 1 else np.float32(rng.normal()),
                float(rng.uniform(0.8, 1)), float(rng.uniform(0, 1)))
        close(fn(*args), reference(*args), f"random rollout {k + 1} of 30 (T = {shape[0]}): ")


G = 0.9
GAE_CASES = [
    Case("one step, the episode goes on (lambda = 0.95)",
         "delta_t = r_t + gamma V(s_{t+1}) - V(s_t); after the rollout's last step, V(s_{t+1}) is last_value",
         _gae_case(([1.0], [0.5], [0], [0], 2.0, G, 0.95), [1 + G * 2.0 - 0.5])),
    Case("three steps, no episode ends (lambda = 0.5)",
         "A_t = delta_t + gamma lambda A_{t+1}: compute it backwards, from the last step to the first",
         _gae_case(([1, 0, 2], [0.5, 1.0, 0.2], [0, 0, 0], [0, 0, 0], 1.0, G, 0.5),
                   [(1 + G * 1.0 - 0.5) + G * 0.5 * ((0 + G * 0.2 - 1.0) + G * 0.5 * (2 + G * 1.0 - 0.2)),
                    (0 + G * 0.2 - 1.0) + G * 0.5 * (2 + G * 1.0 - 0.2), 2 + G * 1.0 - 0.2])),
    Case("an episode that terminates at t = 1 (lambda = 0)",
         "terminated: the MDP ended, no reward can follow, so V(s_{t+1}) is 0 there (final_values[t])",
         _gae_case(([1, 1, 1], [2.0, 0.8, 3.0], [0, 1, 0], [0, 0, 0], 2.6, G, 0.0),
                   [1 + G * 0.8 - 2.0, 1 - 0.8, 1 + G * 2.6 - 3.0])),
    Case("an episode truncated by a time limit at t = 1 (lambda = 0)",
         "truncated: more reward would have come; V(s_{t+1}) is V of the episode's last observation, final_values[t], "
         "not values[t + 1], which is the next episode's first state",
         _gae_case(([1, 1, 1], [2.0, 0.8, 3.0], [0, 1, 0], [0, 2.4, 0], 2.6, G, 0.0),
                   [1 + G * 0.8 - 2.0, 1 + G * 2.4 - 0.8, 1 + G * 2.6 - 3.0])),
    Case("no advantage flows across an episode's end at t = 0 (lambda = 1)",
         "where dones[t] = 1 the recursion is cut: A_{t+1} belongs to the next episode",
         _gae_case(([1, 1, 1], [0.5, 1.0, 2.0], [1, 0, 0], [0, 0, 0], 1.5, G, 1.0),
                   [1 - 0.5, (1 + G * 1 + G * G * 1.5) - 1.0, (1 + G * 1.5) - 2.0])),
    Case("lambda = 1, no episode ends: the discounted rewards to the end, plus gamma^k V(s_T), minus V(s_t)",
         "lambda = 1 keeps every k-step estimate's weight on the longest one",
         _gae_case(([1, 2], [0.0, 0.0], [0, 0], [0, 0], 10.0, G, 1.0), [1 + G * 2 + G * G * 10, 2 + G * 10])),
    Case("N = 2 envs side by side, [T, N] arrays, one env's episode terminating at t = 0 (lambda = 0)",
         "each column is one env's trajectory: the recursion runs down each column on its own",
         _gae_case(([[1, 1], [1, 1]], [[1.0, 2.0], [0.5, 0.5]], [[0, 1], [0, 0]], [[0, 0], [0, 0]], [3.0, 4.0], G, 0.0),
                   [[1 + G * 0.5 - 1.0, 1 - 2.0], [1 + G * 3.0 - 0.5, 1 + G * 4.0 - 0.5]])),
    Case("random rollouts against the lesson's compute_gae",
         "every case above at once: ends of both kinds anywhere, any lambda, one env or several", _gae_random),
]


# --- the clipped surrogate objective ----------------------------------------------------------------------------------

def the_loss(loss, expected) -> None:
    """A learner's loss must be a torch scalar, the mean over the samples, equal to `expected`."""
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        raise Failed(f"expected a torch scalar (the mean over the samples), got {type(loss).__name__} "
                     f"{tuple(loss.shape) if isinstance(loss, torch.Tensor) else ''}")
    close(loss, expected, "the loss: ")


def _clip_case(ratios, advantages, eps, value, slopes):
    """Check -L^CLIP's value and its gradient in the ratios (each sample's d(-L)/dr_i, the mean's 1/B included)."""
    def run(fn):
        ratio = torch.tensor(ratios, dtype=torch.float64, requires_grad=True)
        loss = fn(ratio, torch.tensor(advantages, dtype=torch.float64), eps)
        the_loss(loss, value)
        if not loss.requires_grad:
            raise Failed("the loss carries no gradient: compute it from `ratio` with torch operations")
        loss.backward()
        close(ratio.grad, slopes, "its gradient in the ratio: ")
    return run


def _clip_random(fn):
    reference = EXERCISES["clip"].reference()
    rng = np.random.default_rng(1)
    for k in range(30):
        size = int(rng.integers(1, 40))
        r, a = rng.uniform(0.5, 1.5, size), rng.normal(size=size)
        mine = torch.tensor(r, requires_grad=True)
        theirs = torch.tensor(r, requires_grad=True)
        got, expected = fn(mine, torch.tensor(a), 0.2), reference(theirs, torch.tensor(a), 0.2)
        close(got, expected.item(), f"random minibatch {k + 1} of 30 (B = {size}), the loss: ")
        got.backward()
        expected.backward()
        close(mine.grad, theirs.grad.numpy(), f"random minibatch {k + 1} of 30 (B = {size}), the gradient: ")


CLIP_CASES = [
    Case("A > 0, r inside [1 - eps, 1 + eps]: a batch of one",
         "L^CLIP is maximized; the loss to minimize is its negative, -r A, with gradient -A",
         _clip_case([1.1], [2.0], 0.2, -1.1 * 2.0, [-2.0])),
    Case("A > 0, r above 1 + eps: no reward for making a_t still more likely",
         "past 1 + eps the clipped term (1 + eps) A is the smaller: the objective is flat there, its gradient 0",
         _clip_case([1.5], [2.0], 0.2, -1.2 * 2.0, [0.0])),
    Case("A < 0, r below 1 - eps: no reward for making a_t still less likely",
         "below 1 - eps the clipped term (1 - eps) A is the smaller (A < 0): flat, gradient 0",
         _clip_case([0.5], [-1.0], 0.2, 0.8, [0.0])),
    Case("A < 0, r above 1 + eps: a move the wrong way is never clipped away",
         "min keeps the unclipped r A where it is the smaller: a pessimistic bound, whose gradient pulls r back",
         _clip_case([1.5], [-1.0], 0.2, 1.5, [1.0])),
    Case("A > 0, r below 1 - eps: the unclipped side",
         "min(r A, clip(r) A) with A > 0 and r < 1 - eps is r A: the clip acts on one side only",
         _clip_case([0.5], [1.0], 0.2, -0.5, [-1.0])),
    Case("a minibatch of four: the mean over the samples",
         "the loss is the mean of the per-sample terms, so each sample's gradient carries 1 / B",
         _clip_case([1.1, 1.5, 0.5, 1.5], [2.0, 2.0, -1.0, -1.0], 0.2,
                    (-2.2 - 2.4 + 0.8 + 1.5) / 4, [-0.5, 0.0, 0.0, 0.25])),
    Case("random minibatches against the lesson's clipped_surrogate_loss",
         "every case above at once", _clip_random),
]


# --- the combined loss -------------------------------------------------------------------------------------------------

LOSS_NAMES = ("logratio", "ratio", "pg_loss", "v_loss", "entropy_loss", "loss")


def loss_statements() -> list:
    """The statements of ppo_cartpole.train that compute the minibatch's loss: its assignments to LOSS_NAMES, in
    the order they run (ast nodes, line numbers counted from the file's first line). Read from the file, not
    through inspect: while `train loss` runs the lesson edited to call the learner's function, inspect reads the
    edited text (exercises.bugs.run_edited), and the reference would call the learner's function too."""
    (tree,) = [node for node in ast.parse(_cartpole_text()).body
               if isinstance(node, ast.FunctionDef) and node.name == "train"]
    return sorted((node for node in ast.walk(tree) if isinstance(node, ast.Assign) and len(node.targets) == 1
                   and isinstance(node.targets[0], ast.Name) and node.targets[0].id in LOSS_NAMES),
                  key=lambda node: node.lineno)


def _cartpole_text() -> str:
    """ppo_cartpole.py's text, as the file holds it."""
    import ppo_cartpole

    return Path(ppo_cartpole.__file__).read_text()


def _cartpole_loss(newlogprob, oldlogprob, advantages, newvalue, returns, entropy, clip_coef, vf_coef, ent_coef):
    """The lesson's own code: ppo_cartpole.train's statements that compute `loss`, run on the given minibatch
    (the names they read bound to the arguments)."""
    import ppo_cartpole

    space = {"newlogprob": newlogprob, "b_logprobs": oldlogprob, "mb": slice(None), "mb_advantages": advantages,
             "newvalue": newvalue, "b_returns": returns, "entropy": entropy,
             "args": types.SimpleNamespace(clip_coef=clip_coef, vf_coef=vf_coef, ent_coef=ent_coef),
             "clipped_surrogate_loss": ppo_cartpole.clipped_surrogate_loss}
    for statement in loss_statements():
        exec(compile(ast.Module([statement], type_ignores=[]), "ppo_cartpole.py", "exec"), space)
    return space["loss"]


def _cartpole_loss_source() -> tuple[str, str]:
    """(where, the source) of the statements _cartpole_loss runs, for `solution`."""
    lines = _cartpole_text().splitlines()
    statements = loss_statements()
    numbers = [n for s in statements for n in range(s.lineno, s.end_lineno + 1)]
    return (f"train(), the lines that compute the loss ({', '.join(map(str, numbers))})",
            "\n".join(textwrap.dedent("\n".join(lines[n - 1] for n in numbers)).splitlines()) + "\n")


def _loss_case(new, old, advantages, value, targets, entropy, expected, slopes=None, coefs=(0.2, 0.5, 0.01)):
    """Check -L^{CLIP+VF+S}'s value, and with `slopes` its gradient in (newlogprob, newvalue, entropy)."""
    def run(fn):
        tensors = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (new, value, entropy)]
        loss = fn(tensors[0], torch.tensor(old, dtype=torch.float64), torch.tensor(advantages, dtype=torch.float64),
                  tensors[1], torch.tensor(targets, dtype=torch.float64), tensors[2], *coefs)
        the_loss(loss, expected)
        if slopes is not None:
            if not loss.requires_grad:
                raise Failed("the loss carries no gradient: compute it with torch operations on the inputs")
            loss.backward()
            for tensor, slope, what in zip(tensors, slopes, ("log pi(a_t|s_t)", "V(s_t)", "the entropy")):
                if slope is not None:  # (None: a gradient this case does not test)
                    close(tensor.grad, slope, f"its gradient in {what}: ")
    return run


def _loss_random(fn):
    reference = EXERCISES["loss"].reference()
    rng = np.random.default_rng(5)
    for k in range(30):
        size = int(rng.integers(1, 40))
        old = rng.normal(-1, 0.3, size)
        args = [old + rng.normal(0, 0.2, size), old, rng.normal(size=size), rng.normal(size=size),
                rng.normal(size=size), rng.uniform(0, 0.7, size)]
        coefs = (float(rng.uniform(0.1, 0.3)), float(rng.uniform(0.25, 1)), float(rng.uniform(0, 0.05)))
        mine = [torch.tensor(x, requires_grad=True) for x in args]
        theirs = [torch.tensor(x, requires_grad=True) for x in args]
        got, expected = fn(*mine, *coefs), reference(*theirs, *coefs)
        where = f"random minibatch {k + 1} of 30 (B = {size}): "
        close(got, expected.item(), f"{where}the loss: ")
        got.backward()
        expected.backward()
        for n, what in ((0, "log pi(a_t|s_t)"), (3, "V(s_t)"), (5, "the entropy")):
            close(mine[n].grad, theirs[n].grad.numpy(), f"{where}the gradient in {what}: ")


E = float(np.exp(0.5))
LOSS_CASES = [
    Case("pi = pi_old (r = 1), A = 2, a batch of one; V = V^targ, no entropy",
         "the policy term is -L^CLIP: with r = 1 and nothing else, the loss is -A",
         _loss_case([-1.0], [-1.0], [2.0], [3.0], [3.0], [0.0], -2.0)),
    Case("log pi - log pi_old = 0.1: the ratio is exp(0.1), inside the clip range",
         "the rollout stored log-probabilities: r_t = exp(log pi - log pi_old), not their quotient",
         _loss_case([-0.9], [-1.0], [1.0], [0.0], [0.0], [0.0], -float(np.exp(0.1)))),
    Case("the value term: V = 1, V^targ = 3, c1 = 0.5, A = 0",
         "L^VF = (V - V^targ)^2, halved, weighed by c1 and added to the loss: minimizing it pulls V to V^targ",
         _loss_case([-1.0], [-1.0], [0.0], [1.0], [3.0], [0.0], 0.5 * 0.5 * 4, slopes=[[0.0], [0.5 * -2.0], None])),
    Case("the entropy bonus: S = 0.7, c2 = 0.01, A = 0, V = V^targ",
         "S is a bonus, maximized: the loss subtracts c2 S, so minimizing the loss raises the entropy",
         _loss_case([-1.0], [-1.0], [0.0], [2.0], [2.0], [0.7], -0.007, slopes=[[0.0], [0.0], [-0.01]])),
    Case("log pi - log pi_old = 0.5, A = 1: the ratio exp(0.5) = 1.65 is clipped to 1.2",
         "the policy term is the clipped surrogate, not r A alone: past 1 + eps it is flat",
         _loss_case([-0.5], [-1.0], [1.0], [0.0], [0.0], [0.0], -1.2, slopes=[[0.0], [0.0], None])),
    Case("a minibatch of two: every term the mean over the samples",
         "each of the three terms is a mean over the minibatch, so each sample's gradient carries 1 / B",
         _loss_case([-1.0, -1.0], [-1.0, -1.0], [2.0, -2.0], [1.0, 0.0], [3.0, 0.0], [0.5, 0.3],
                    0.0 + 0.5 * 0.5 * 4 / 2 - 0.01 * 0.4, slopes=[[-1.0, 1.0], [-0.5, 0.0], [-0.005, -0.005]])),
    Case("random minibatches against the lesson's own lines", "every case above at once", _loss_random),
]


# --- the clipped value loss ---------------------------------------------------------------------------------------

def _value_case(new, old, targets, eps, value, slopes):
    def run(fn):
        newvalue = torch.tensor(new, dtype=torch.float64, requires_grad=True)
        loss = fn(newvalue, torch.tensor(old, dtype=torch.float64), torch.tensor(targets, dtype=torch.float64), eps)
        the_loss(loss, value)
        loss.backward()
        close(newvalue.grad, slopes, "its gradient in V: ")
    return run


VALUE_CASES = [
    Case("V within eps_v of V_old: the plain squared error, halved",
         "inside the range V_clip = V, and 0.5 (V - V^targ)^2 has gradient V - V^targ",
         _value_case([0.5], [0.0], [3.0], 1.0, 0.5 * 2.5 ** 2, [-2.5])),
    Case("V moved past eps_v toward its target: no more credit for the move",
         "max picks the larger error, V_clip's here, which does not move with V: gradient 0",
         _value_case([3.0], [0.0], [5.0], 1.0, 0.5 * 16.0, [0.0])),
    Case("V moved past eps_v away from its target: the unclipped error counts",
         "max keeps the larger error, V's own here, so the gradient pulls V back",
         _value_case([-3.0], [0.0], [5.0], 1.0, 0.5 * 64.0, [-8.0])),
    Case("V_clip is measured from V_old, not from 0",
         "V_clip = V_old + clip(V - V_old, -eps_v, eps_v): the clip is of the change since the rollout",
         _value_case([13.0], [10.0], [15.0], 1.0, 0.5 * 16.0, [0.0])),
    Case("a minibatch of two: the mean over the samples",
         "the mean's 1 / B in each sample's gradient",
         _value_case([0.5, 3.0], [0.0, 0.0], [3.0, 5.0], 1.0, (0.5 * 2.5 ** 2 + 8.0) / 2, [-1.25, 0.0])),
]


# --- the rollout over self-resetting vector envs ---------------------------------------------------------------------

class _Scripted(gym.Env):
    """An env that plays a script, whatever the actions: its episodes' lengths and how each ends ("terminated",
    "truncated" or "both"). Its observation is [env, episode, t], its reward at step t of episode e is 10 e + t."""

    observation_space = gym.spaces.Box(-1e6, 1e6, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, index: int, episodes: list[tuple[int, str]]):
        self.index, self.episodes, self.episode, self.t = index, episodes, -1, 0

    def observation(self):
        return np.array([self.index, self.episode, self.t], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t = self.episode + 1, 0
        return self.observation(), {}

    def step(self, action):
        self.t += 1
        length, end = self.episodes[min(self.episode, len(self.episodes) - 1)]
        over = self.t == length
        return (self.observation(), float(10 * self.episode + self.t), over and end in ("terminated", "both"),
                over and end in ("truncated", "both"), {})


def _value(obs: torch.Tensor) -> torch.Tensor:
    """The stand-in critic: V([env, episode, t]) = 100 env + 10 episode + t, so every state has its own value."""
    return obs @ torch.tensor([100.0, 10.0, 1.0], dtype=obs.dtype, device=obs.device)


class _Agent(torch.nn.Module):
    """A stand-in agent: action t mod 2, log-probability -t / 10, entropy 0, V as _value."""

    def __init__(self):
        super().__init__()
        self.unused = torch.nn.Parameter(torch.zeros(1))  # (for next(agent.parameters()).device)

    def get_value(self, x):
        return _value(x)

    def get_action_and_value(self, x, action=None):
        if action is None:
            action = (x[:, 2] % 2).long()
        return action, -x[:, 2] / 10, torch.zeros(len(x)), _value(x)


def _rollout_run(scripts, steps):
    """(the filled rollout, what the function returned) for envs playing `scripts` over `steps` steps."""
    import ppo_lunarlander_vec

    def run(fn):
        envs = gym.vector.SyncVectorEnv(
            [lambda i=i, s=s: gym.wrappers.RecordEpisodeStatistics(_Scripted(i, s)) for i, s in enumerate(scripts)],
            autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
        next_obs, _ = envs.reset(seed=0)
        rollout = ppo_lunarlander_vec.Rollout(steps, len(scripts), (3,))
        returned = fn(envs, _Agent(), next_obs, rollout)
        envs.close()
        if not isinstance(returned, tuple) or len(returned) != 3:
            raise Failed(f"expected (next_obs, last_value, episodes) back, got {type(returned).__name__}")
        return rollout, returned
    return run


def _rollout_case(scripts, steps, **expected):
    """Check the named fields of the rollout ([T, N] lists; obs: [T, N, 3]) and returns (next_obs, last_value,
    episodes)."""
    def run(fn):
        rollout, (next_obs, last_value, episodes) = _rollout_run(scripts, steps)(fn)
        for field in ("obs", "rewards", "values", "dones", "final_values", "logprobs", "actions"):
            if field in expected:
                close(getattr(rollout, field), expected[field], f"rollout.{field}: ")
        if "next_obs" in expected:
            close(next_obs, expected["next_obs"], "the returned next_obs: ")
        if "last_value" in expected:
            close(last_value, expected["last_value"], "the returned last_value: ")
        if "episodes" in expected:
            got = [(int(s), round(float(r), 4), int(n)) for s, r, n in episodes]
            if got != expected["episodes"]:
                raise Failed(f"the returned episodes (step, return, length): expected {expected['episodes']}, "
                             f"got {got}")
    return run


def _rollout_random(fn):
    """20 random scripts, 1 to 3 envs, episodes of 1 to 4 steps ending in every way, against the lesson's."""
    reference = EXERCISES["rollout"].reference()
    rng = np.random.default_rng(2)
    for k in range(20):
        scripts = [[(int(rng.integers(1, 5)), str(rng.choice(["terminated", "truncated", "both"])))
                    for _ in range(12)] for _ in range(int(rng.integers(1, 4)))]
        steps = int(rng.integers(1, 9))
        mine, (next_obs, last_value, episodes) = _rollout_run(scripts, steps)(fn)
        theirs, (next_obs_, last_value_, episodes_) = _rollout_run(scripts, steps)(reference)
        where = f"random script {k + 1} of 20 (T = {steps}, N = {len(scripts)}): "
        for field in ("obs", "actions", "logprobs", "values", "rewards", "dones", "final_values"):
            close(getattr(mine, field), getattr(theirs, field), f"{where}rollout.{field}: ")
        close(next_obs, next_obs_, f"{where}next_obs: ")
        close(last_value, last_value_, f"{where}last_value: ")
        close(np.array(episodes, dtype=np.float64).reshape(-1, 3), np.array(episodes_).reshape(-1, 3),
              f"{where}the episodes (step, return, length): ")


ROLLOUT_CASES = [
    Case("one env, no episode ends: each step stores the observation it acted on",
         "obs[t] is s_t, the observation the agent saw before acting; the step's result is s_{t+1}, stored at t + 1",
         _rollout_case([[(9, "terminated")]], 3, obs=[[[0, 0, 0]], [[0, 0, 1]], [[0, 0, 2]]],
                       values=[[0], [1], [2]], rewards=[[1], [2], [3]], dones=[[0], [0], [0]],
                       logprobs=[[0], [-0.1], [-0.2]], actions=[[0], [1], [0]],
                       next_obs=[[0, 0, 3]], last_value=[3], episodes=[])),
    Case("an episode that terminates at t = 1: done, and nothing after it",
         "terminated: the MDP ended, so dones[t] = 1 and final_values[t] = 0; with SAME_STEP autoreset, next_obs is "
         "already the next episode's first observation",
         _rollout_case([[(2, "terminated"), (9, "terminated")]], 3, obs=[[[0, 0, 0]], [[0, 0, 1]], [[0, 1, 0]]],
                       rewards=[[1], [2], [11]], dones=[[0], [1], [0]], final_values=[[0], [0], [0]],
                       episodes=[(1, 3.0, 2)], next_obs=[[0, 1, 1]], last_value=[11])),
    Case("an episode truncated by a time limit at t = 1: V of the observation it ended on",
         "truncated: reward would have followed, so V(s_{t+1}) is V(info['final_obs']), the episode's last "
         "observation; next_obs is the next episode's first, another episode's state",
         _rollout_case([[(2, "truncated"), (9, "terminated")]], 3, dones=[[0], [1], [0]],
                       final_values=[[0], [2], [0]], obs=[[[0, 0, 0]], [[0, 0, 1]], [[0, 1, 0]]],
                       episodes=[(1, 3.0, 2)])),
    Case("an episode both terminated and truncated at t = 0 (it ended on the limit's last step)",
         "termination wins: the MDP ended, so V(s_{t+1}) = 0, whatever the time limit says",
         _rollout_case([[(1, "both"), (9, "terminated")]], 2, dones=[[1], [0]], final_values=[[0], [0]],
                       episodes=[(0, 1.0, 1)])),
    Case("two envs side by side, both ending at t = 1: one truncated, the other terminated",
         "each env's column on its own: bootstrap only the env that was truncated, from its own final observation",
         _rollout_case([[(2, "truncated"), (9, "terminated")], [(2, "terminated"), (9, "terminated")]], 3,
                       dones=[[0, 0], [1, 1], [0, 0]], final_values=[[0, 0], [2, 0], [0, 0]],
                       values=[[0, 100], [1, 101], [10, 110]], rewards=[[1, 1], [2, 2], [11, 11]],
                       episodes=[(1, 3.0, 2), (1, 3.0, 2)], next_obs=[[0, 1, 1], [1, 1, 1]],
                       last_value=[11, 111])),
    Case("random scripts against the lesson's collect_rollout", "every case above at once", _rollout_random),
]


# --- the adaptive KL penalty's beta ------------------------------------------------------------------------------

def _beta_case(beta, d, target, expected):
    def run(fn):
        got = fn(beta, d, target)
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            raise Failed(f"expected a number, got {type(got).__name__}")
        close(got, expected)
    return run


BETA_CASES = [
    Case("d on target: beta stays", "inside [d_targ / 1.5, 1.5 d_targ] beta is left as it is",
         _beta_case(1.0, 0.01, 0.01, 1.0)),
    Case("d far below the target: pi moved too little, the charge halves",
         "d < d_targ / 1.5: beta <- beta / 2, so the next update may move further",
         _beta_case(1.0, 0.001, 0.01, 0.5)),
    Case("d far above the target: pi moved too much, the charge doubles",
         "d > 1.5 d_targ: beta <- 2 beta, so the next update is held closer to pi_old",
         _beta_case(1.0, 0.05, 0.01, 2.0)),
    Case("d a little above the target but within 1.5 d_targ: beta stays",
         "the thresholds are d_targ / 1.5 and 1.5 d_targ, not d_targ itself: a band around the target",
         _beta_case(3.0, 0.013, 0.01, 3.0)),
    Case("d a little below the target but above d_targ / 1.5: beta stays",
         "the lower threshold is d_targ / 1.5", _beta_case(3.0, 0.008, 0.01, 3.0)),
]


# --- the diagonal Gaussian ------------------------------------------------------------------------------------------

def _pendulum_gaussian(mean, log_std, action):
    """The lesson's own code: ppo_pendulum_continuous.Agent.get_action_and_value on the given mean and log-std."""
    import types

    import ppo_pendulum_continuous

    stand_in = types.SimpleNamespace(get_distribution=lambda x: (mean, log_std), get_value=lambda x: None)
    method = ppo_pendulum_continuous.Agent.get_action_and_value
    method = getattr(method, "lessons", method)  # the lesson's own where train swapped a learner's in
    _, log_prob, entropy, _ = method(stand_in, None, action)
    return log_prob, entropy


def _gaussian_case(mean, log_std, action, log_prob, entropy):
    def run(fn):
        got = fn(torch.tensor(mean, dtype=torch.float64), torch.tensor(log_std, dtype=torch.float64),
                 torch.tensor(action, dtype=torch.float64))
        if not (isinstance(got, tuple) and len(got) == 2):
            raise Failed(f"expected a pair (log_prob, entropy), got {type(got).__name__}")
        close(got[0], log_prob, "log pi(a): ")
        close(got[1], entropy, "the entropy: ")
    return run


def _gaussian_random(fn):
    rng = np.random.default_rng(2)
    for k in range(20):
        shape = (int(rng.integers(1, 5)), int(rng.integers(1, 4)))
        mean, log_std, action = (torch.tensor(rng.normal(size=shape)) for _ in range(3))
        got, expected = fn(mean, log_std, action), _pendulum_gaussian(mean, log_std, action)
        close(got[0], expected[0].numpy(), f"random batch {k + 1} of 20 {shape}, log pi(a): ")
        close(got[1], expected[1].numpy(), f"random batch {k + 1} of 20 {shape}, the entropy: ")


LOG_2PI = float(np.log(2 * np.pi))
GAUSSIAN_CASES = [
    Case("one dimension, the action at the mean, sigma = 1",
         "log N(mu; mu, 1) = -0.5 log(2 pi): the density's peak; H = 0.5 + 0.5 log(2 pi)",
         _gaussian_case([0.0], [0.0], [0.0], -0.5 * LOG_2PI, 0.5 + 0.5 * LOG_2PI)),
    Case("one dimension, the action one sigma from the mean, sigma = 2",
         "(a - mu) / sigma counts sigmas; the log density also loses log sigma (a wider Gaussian is lower)",
         _gaussian_case([1.0], [float(np.log(2))], [3.0], -0.5 - np.log(2) - 0.5 * LOG_2PI,
                        0.5 + 0.5 * LOG_2PI + np.log(2))),
    Case("two independent dimensions: the log densities and entropies add",
         "independent dimensions multiply their densities, so the logs add: sum over the last axis",
         _gaussian_case([0.0, 1.0], [0.0, float(np.log(2))], [0.0, 3.0],
                        -0.5 * LOG_2PI + (-0.5 - np.log(2) - 0.5 * LOG_2PI),
                        2 * (0.5 + 0.5 * LOG_2PI) + np.log(2))),
    Case("a batch of two states, one dimension: one value per state",
         "sum over the action's dimensions (the last axis) only, never over the batch",
         _gaussian_case([[0.0], [1.0]], [[0.0], [0.0]], [[0.0], [1.0]], [-0.5 * LOG_2PI] * 2,
                        [0.5 + 0.5 * LOG_2PI] * 2)),
    Case("random batches against the lesson's Agent", "every case above at once", _gaussian_random),
]


# --- the Atari wrappers: frame skip with the max, the frame stack ----------------------------------------------------

class _Frames(gym.Env):
    """An env of scripted 2 x 3 uint8 frames: reset r shows starts[r], the k-th step after it frames[k] (cycling),
    with reward k; its episode ends at step `end` (`how`: "terminated" or "truncated"). Counts the steps it is
    given."""

    observation_space = gym.spaces.Box(0, 255, (2, 3), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, frames, end=None, how="terminated", starts=None):
        self.frames = [np.asarray(f, dtype=np.uint8) for f in frames]
        self.starts = [np.asarray(f, dtype=np.uint8) for f in (starts or [frames[0]])]
        self.end, self.how, self.t, self.resets, self.steps = end, how, 0, 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.resets = 0, self.resets + 1
        return self.starts[(self.resets - 1) % len(self.starts)].copy(), {"reset": self.resets}

    def step(self, action):
        self.t, self.steps = self.t + 1, self.steps + 1
        over = self.t == self.end
        return (self.frames[self.t % len(self.frames)].copy(), float(self.t), over and self.how == "terminated",
                over and self.how == "truncated", {"frame": self.t})


def _frame(pixels: dict) -> np.ndarray:
    """A 2 x 3 frame, 0 but at the given pixels."""
    frame = np.zeros((2, 3), dtype=np.uint8)
    for where, value in pixels.items():
        frame[where] = value
    return frame


# Frame 1 has a pixel only it shows, frames 3 and 4 one each (the flicker the max keeps), frame 2 another.
SKIP_FRAMES = [_frame({}), _frame({(0, 0): 255}), _frame({(0, 1): 50}), _frame({(1, 0): 200}),
               _frame({(1, 1): 100}), _frame({(0, 2): 30}), _frame({(1, 2): 60})]


def _frames_equal(got, expected, what: str) -> None:
    got = np.asarray(got)
    if got.dtype != np.uint8:
        raise Failed(f"{what}expected uint8 frames, as the env gives them, got {got.dtype}")
    close(got, expected, what)


def _skip_case(skip, end=None, how="terminated", steps=1, rewards=None, observations=None, flags=None,
               env_steps=None, info=None):
    """Step MaxAndSkip(env, skip) `steps` times; check what each step returned and how often the env was stepped."""
    def run(cls):
        env = _Frames(SKIP_FRAMES, end, how)
        wrapper = cls(env, skip=skip)
        wrapper.reset(seed=0)
        for k in range(steps):
            returned = wrapper.step(0)
            if not isinstance(returned, tuple) or len(returned) != 5:
                raise Failed(f"expected step to return (obs, reward, terminated, truncated, info), got "
                             f"{type(returned).__name__}")
            obs, reward, terminated, truncated, got_info = returned
            what = f"step {k + 1}: " if steps > 1 else ""
            if rewards is not None:
                close(reward, rewards[k], f"{what}the reward: ")
            if observations is not None:
                _frames_equal(obs, observations[k], f"{what}the observation: ")
            if flags is not None and (bool(terminated), bool(truncated)) != flags[k]:
                raise Failed(f"{what}expected (terminated, truncated) = {flags[k]}, got "
                             f"{(bool(terminated), bool(truncated))}")
            if info is not None and got_info != info[k]:
                raise Failed(f"{what}expected the last frame's info {info[k]}, got {got_info}")
        if env_steps is not None and env.steps != env_steps:
            raise Failed(f"expected the env stepped {env_steps} times, it was stepped {env.steps} times")
    return run


def _skip_random(cls):
    """20 random scripts (random frames, skips of 1 to 5, episodes ending anywhere) against the lesson's."""
    reference = EXERCISES["max_and_skip"].reference()
    rng = np.random.default_rng(3)
    for k in range(20):
        frames = list(rng.integers(0, 256, size=(9, 2, 3)))
        skip, end, how = int(rng.integers(1, 6)), int(rng.integers(1, 12)), str(rng.choice(["terminated",
                                                                                           "truncated"]))
        mine, theirs = cls(_Frames(frames, end, how), skip=skip), reference(_Frames(frames, end, how), skip=skip)
        mine.reset(seed=0)
        theirs.reset(seed=0)
        for step in range(3):
            got, expected = mine.step(0), theirs.step(0)
            where = f"random script {k + 1} of 20 (skip {skip}, the episode ending at frame {end}), step {step + 1}: "
            _frames_equal(got[0], expected[0], f"{where}the observation: ")
            close(got[1], expected[1], f"{where}the reward: ")
            if (bool(got[2]), bool(got[3])) != (expected[2], expected[3]):
                raise Failed(f"{where}expected (terminated, truncated) = {expected[2:4]}, got {got[2:4]}")
            if expected[2] or expected[3]:
                break


SKIP_CASES = [
    Case("four frames, one step: their rewards summed, the env stepped four times",
         "r_t is the sum of the skipped frames' rewards: the agent is credited with every frame of its action",
         _skip_case(4, rewards=[1 + 2 + 3 + 4], env_steps=4, flags=[(False, False)], info=[{"frame": 4}])),
    Case("the observation: the pixel-wise max of the last two frames",
         "an object drawn on every other frame shows in one of the last two: the max of those two keeps it, and "
         "nothing older",
         _skip_case(4, observations=[np.maximum(SKIP_FRAMES[3], SKIP_FRAMES[4])])),
    Case("the episode terminates on the second frame: the step ends there",
         "a finished episode is not stepped again: stop at the frame that ended it, with what you have so far",
         _skip_case(4, end=2, rewards=[1 + 2], env_steps=2, flags=[(True, False)],
                    observations=[np.maximum(SKIP_FRAMES[1], SKIP_FRAMES[2])])),
    Case("a time limit truncates the episode on the third frame",
         "a truncation ends the episode as a termination does: stop there, and pass truncated on",
         _skip_case(4, end=3, how="truncated", rewards=[6], env_steps=3, flags=[(False, True)],
                    observations=[np.maximum(SKIP_FRAMES[2], SKIP_FRAMES[3])])),
    Case("the episode ends on the first frame: its frame alone",
         "with one frame there is no max to take: the observation is that frame",
         _skip_case(4, end=1, rewards=[1], env_steps=1, observations=[SKIP_FRAMES[1]])),
    Case("skip = 2, two steps in a row",
         "repeat the action self.skip times, not always 4; each step starts afresh from 0 reward",
         _skip_case(2, steps=2, rewards=[1 + 2, 3 + 4], env_steps=4,
                    observations=[np.maximum(SKIP_FRAMES[1], SKIP_FRAMES[2]),
                                  np.maximum(SKIP_FRAMES[3], SKIP_FRAMES[4])])),
    Case("random scripts against the lesson's MaxAndSkip", "every case above at once", _skip_random),
]


STACK_FRAMES = [np.full((2, 3), 10 * k, dtype=np.uint8) + np.arange(6, dtype=np.uint8).reshape(2, 3)
                for k in range(7)]
STACK_START = np.full((2, 3), 250, dtype=np.uint8)  # the second episode's first frame


def _stack_case(k, script, expected, flags=None):
    """Run FrameStack(env, k) through `script` ("reset" or "step" each); check the observation after each, against
    `expected`'s frame indices (a list of k per entry: an index of STACK_FRAMES, or "start" for STACK_START)."""
    def run(cls):
        env = _Frames(STACK_FRAMES, starts=[STACK_FRAMES[0], STACK_START])
        wrapper = cls(env, k=k)
        for n, (action, frames) in enumerate(zip(script, expected)):
            returned = wrapper.reset(seed=0) if action == "reset" else wrapper.step(0)
            size = 2 if action == "reset" else 5
            if not isinstance(returned, tuple) or len(returned) != size:
                raise Failed(f"after {action} {n + 1}: expected a tuple of {size} back, as gymnasium's {action} "
                             f"returns, got {type(returned).__name__}")
            want = np.stack([STACK_START if f == "start" else STACK_FRAMES[f] for f in frames])
            _frames_equal(returned[0], want, f"after {' '.join(script[:n + 1])}: the observation: ")
            if action == "step" and flags is not None:
                if (returned[1], bool(returned[2]), bool(returned[3]), returned[4]) != (float(env.t), False, False,
                                                                                        {"frame": env.t}):
                    raise Failed(f"after {' '.join(script[:n + 1])}: expected the env's reward, terminated, "
                                 f"truncated and info ({float(env.t)}, False, False, {{'frame': {env.t}}}), got "
                                 f"{returned[1:]}")
    return run


def _stack_random(cls):
    """20 random runs of resets and steps, k from 1 to 5, against the lesson's FrameStack."""
    reference = EXERCISES["frame_stack"].reference()
    rng = np.random.default_rng(4)
    for n in range(20):
        k = int(rng.integers(1, 6))
        frames, starts = list(rng.integers(0, 256, size=(7, 2, 3))), list(rng.integers(0, 256, size=(3, 2, 3)))
        mine, theirs = (cls(_Frames(frames, starts=starts), k=k),
                        reference(_Frames(frames, starts=starts), k=k))
        script = ["reset"] + [str(rng.choice(["step", "step", "step", "reset"])) for _ in range(10)]
        for m, action in enumerate(script):
            got = mine.reset(seed=0) if action == "reset" else mine.step(0)
            expected = theirs.reset(seed=0) if action == "reset" else theirs.step(0)
            _frames_equal(got[0], expected[0], f"random run {n + 1} of 20 (k = {k}), after {action} {m + 1}: ")


STACK_CASES = [
    Case("reset: the first frame fills all k places",
         "after a reset there is one frame: repeat it k times, stacked on a new first axis ([k, 2, 3])",
         _stack_case(4, ["reset"], [[0, 0, 0, 0]])),
    Case("one step: the newest frame last, the oldest gone",
         "the stack is in time order, the oldest first: a step appends its frame at the end and drops the first",
         _stack_case(4, ["reset", "step"], [[0, 0, 0, 0], [0, 0, 0, 1]], flags=True)),
    Case("five steps: the last four frames, in order",
         "k frames at most: the one older than them is dropped",
         _stack_case(4, ["reset"] + ["step"] * 5, [[0] * 4, [0, 0, 0, 1], [0, 0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 4],
                                                   [2, 3, 4, 5]])),
    Case("a reset after steps: the new episode's first frame everywhere",
         "a new episode never sees the last one's frames: reset fills all k places again",
         _stack_case(4, ["reset", "step", "step", "reset"], [[0] * 4, [0, 0, 0, 1], [0, 0, 1, 2], ["start"] * 4])),
    Case("k = 2", "use the k the wrapper was made with (the deque's maxlen)",
         _stack_case(2, ["reset", "step", "step", "step"], [[0, 0], [0, 1], [1, 2], [2, 3]])),
    Case("random runs of resets and steps against the lesson's FrameStack", "every case above at once",
         _stack_random),
]


# --- RLHF's per-token reward -----------------------------------------------------------------------------------------

def _f32(x) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float32)


def _kl_reward_case(scores, logprobs, ref_logprobs, mask, beta, expected):
    """Check the [N, T] rewards of the responses given, as the rollout holds them (float32 tensors)."""
    def run(fn):
        got = fn(_f32(scores), _f32(logprobs), _f32(ref_logprobs), _f32(mask), beta)
        if not isinstance(got, torch.Tensor):
            raise Failed(f"expected a torch tensor [N, T], got {type(got).__name__}")
        close(got, expected, "the rewards [N, T]: ")
    return run


def _kl_reward_random(fn):
    """30 random batches, 1 to 5 responses of 1 to T tokens each (T from 1 to 8), log-probabilities on the padding
    too, against the lesson's per_token_rewards."""
    reference = EXERCISES["kl_reward"].reference()
    rng = np.random.default_rng(7)
    for k in range(30):
        n, t = int(rng.integers(1, 6)), int(rng.integers(1, 9))
        lengths = rng.integers(1, t + 1, size=n)
        mask = (np.arange(t)[None, :] < lengths[:, None]).astype(np.float32)
        args = [rng.normal(size=n), -rng.uniform(0.05, 3, (n, t)), -rng.uniform(0.05, 3, (n, t)), mask]
        beta = float(rng.uniform(0, 0.5))
        got = fn(*(_f32(x) for x in args), beta)
        expected = reference(*(_f32(x) for x in args), beta)
        where = f"random batch {k + 1} of 30 (N = {n}, T = {t}, response lengths {lengths.tolist()}): "
        if not isinstance(got, torch.Tensor):
            raise Failed(f"{where}expected a torch tensor [N, T], got {type(got).__name__}")
        close(got, expected.numpy(), where)


KL_REWARD_CASES = [
    Case("beta = 0, one response that never wrote \".\": it fills all T = 4 slots, its score (-1) on the last",
         "R judges the whole response once: its score is paid on the last token alone, and with beta = 0 every "
         "other token's reward is 0",
         _kl_reward_case([-1.0], [[-0.5, -1.0, -0.2, -0.7]], [[-1.0, -0.8, -0.2, -2.0]], [[1, 1, 1, 1]], 0.0,
                         [[0, 0, 0, -1.0]])),
    Case("beta = 0, a response of two tokens, then padding: the score on its last real token",
         "a response ends at its last token with mask 1; the slots after it are padding, no part of the response",
         _kl_reward_case([2.0], [[-0.5, -1.0, 0, 0]], [[-1.0, -0.8, 0, 0]], [[1, 1, 0, 0]], 0.0, [[0, 2.0, 0, 0]])),
    Case("a 3-token response, then padding (beta = 0.1): each token pays its KL penalty",
         "r_t = -beta (log pi_old - log pi_ref): a token pi_old makes likelier than pi_ref does pays, one it makes "
         "less likely earns; swapping log pi_old and log pi_ref flips that sign",
         _kl_reward_case([2.0], [[-0.5, -1.0, -0.2, 0]], [[-1.0, -0.8, -0.2, 0]], [[1, 1, 1, 0]], 0.1,
                         [[-0.1 * 0.5, -0.1 * -0.2, 2.0, 0]])),
    Case("log-probabilities on the padding that are not 0 (beta = 0.1): the model's, after the response's end",
         "the padding holds no actions: mask 0 means r_t = 0 there, whatever log pi_old and log pi_ref hold",
         _kl_reward_case([1.0], [[-0.3, -0.6, -1.5, -0.1]], [[-0.5, -0.6, -0.2, -2.3]], [[1, 1, 0, 0]], 0.1,
                         [[-0.1 * 0.2, 1.0, 0, 0]])),
    Case("a response of one token (beta = 0.5): it pays its KL penalty and gets the score",
         "on the last token the score is added to that token's KL penalty, not put in its place: the last token "
         "was sampled from pi_old as every other one was",
         _kl_reward_case([3.0], [[-0.2, 0, 0]], [[-1.2, 0, 0]], [[1, 0, 0]], 0.5, [[3.0 - 0.5 * 1.0, 0, 0]])),
    Case("two responses of different lengths in one batch (beta = 0.5)",
         "each row is its own response: its own last token, its own score",
         _kl_reward_case([1.5, -2.0], [[-1.0, -0.5, -0.4, 0], [-0.3, -0.9, 0, 0]],
                         [[-0.8, -0.5, -0.6, 0], [-0.7, -0.4, 0, 0]], [[1, 1, 1, 0], [1, 1, 0, 0]], 0.5,
                         [[-0.5 * -0.2, 0, -0.5 * 0.2 + 1.5, 0], [-0.5 * 0.4, -0.5 * -0.5 - 2.0, 0, 0]])),
    Case("random batches against the lesson's per_token_rewards",
         "every case above at once: responses of any length, padding of any content, any beta", _kl_reward_random),
]


# --- GRPO's group advantage ------------------------------------------------------------------------------------------

def _group_case(scores, group_size, expected):
    def run(fn):
        got = fn(_f32(scores), group_size)
        if not isinstance(got, torch.Tensor):
            raise Failed(f"expected a torch tensor [N], got {type(got).__name__}")
        close(got, expected, "the advantages [N]: ")
    return run


def _group_random(fn):
    """30 random batches, groups of 2 to 6, 1 to 5 of them, some groups of equal scores, against the lesson's."""
    reference = EXERCISES["group_advantage"].reference()
    rng = np.random.default_rng(8)
    for k in range(30):
        size, groups = int(rng.integers(2, 7)), int(rng.integers(1, 6))
        scores = rng.normal(size=(groups, size)) * rng.uniform(0.1, 5)
        scores[rng.random(groups) < 0.2] = float(rng.normal())  # a group whose answers all scored the same
        scores = _f32(scores.reshape(-1))
        got, expected = fn(scores.clone(), size), reference(scores.clone(), size)
        where = f"random batch {k + 1} of 30 (G = {size}, {groups} groups): "
        if not isinstance(got, torch.Tensor):
            raise Failed(f"{where}expected a torch tensor [N], got {type(got).__name__}")
        close(got, expected.numpy(), where)


SQRT2 = float(np.sqrt(2))
GROUP_CASES = [
    Case("one group of two, scores 10 and 30 (G = 2): each against the other",
         "A_i counts R_i's distance from its group's mean in the group's standard deviations: divide by the std, the "
         "unbiased one (its squares summed over G - 1, not G)",
         _group_case([10.0, 30.0], 2, [-10 / (10 * SQRT2 + 1e-4), 10 / (10 * SQRT2 + 1e-4)])),
    Case("a group of equal scores (G = 3): A = 0",
         "no answer beat its siblings, so A = 0; their std is 0, and the 1e-4 added to it keeps 0 / 0 from happening",
         _group_case([0.5, 0.5, 0.5], 3, [0.0, 0.0, 0.0])),
    Case("two prompts, two answers each (G = 2), the second prompt's scored higher: each against its own group",
         "an answer's baseline is the mean of the answers to its own prompt, not the whole batch's mean; the groups "
         "are consecutive, scores[0:G], scores[G:2G], ..., as the rollout answers each prompt G times in a row",
         _group_case([1.0, 3.0, 10.0, 14.0], 2, [-1 / (SQRT2 + 1e-4), 1 / (SQRT2 + 1e-4),
                                                  -2 / (2 * SQRT2 + 1e-4), 2 / (2 * SQRT2 + 1e-4)])),
    Case("group size 3: two prompts, three answers each",
         "G is the size of each group, the answers to one prompt: N / G groups of G consecutive scores, each with "
         "its own mean and std",
         _group_case([0.0, 3.0, 6.0, 2.0, 2.0, 5.0], 3,
                     [-3 / (3 + 1e-4), 0.0, 3 / (3 + 1e-4), -1 / (np.sqrt(3) + 1e-4), -1 / (np.sqrt(3) + 1e-4),
                      2 / (np.sqrt(3) + 1e-4)])),
    Case("random batches against the lesson's group_advantages",
         "every case above at once: any G, any number of groups, some of equal scores", _group_random),
]


# --- the LSTM's state through a rollout --------------------------------------------------------------------------

# A one-unit LSTM cell (input 1, hidden 1) with fixed weights, its gates in torch's order: input i, forget f, cell g,
# output o. By hand, one step from (h, c) on x:
#     i = sigmoid(0.5 x + 0.4 h + 0.1)    f = sigmoid(-0.3 x + 0.6 h + 0.5)    g = tanh(0.8 x - 0.5 h)
#     o = sigmoid(0.2 x + 0.3 h - 0.1)    c' = f c + i g                       h' = o tanh(c')
TINY_LSTM = {"weight_ih": [[0.5], [-0.3], [0.8], [0.2]], "weight_hh": [[0.4], [0.6], [-0.5], [0.3]],
             "bias_ih": [0.1, 0.5, 0.0, -0.1], "bias_hh": [0.0, 0.0, 0.0, 0.0]}


def _tiny_cell() -> torch.nn.LSTMCell:
    cell = torch.nn.LSTMCell(1, 1)
    with torch.no_grad():
        for name, value in TINY_LSTM.items():
            getattr(cell, name).copy_(torch.tensor(value))
    return cell


def _by_hand(x: float, h: float, c: float) -> tuple[float, float]:
    """One step of the tiny cell, worked out with its equations (not by torch): (h', c')."""
    def sigmoid(z):
        return 1 / (1 + np.exp(-z))
    i, f = sigmoid(0.5 * x + 0.4 * h + 0.1), sigmoid(-0.3 * x + 0.6 * h + 0.5)
    g, o = np.tanh(0.8 * x - 0.5 * h), sigmoid(0.2 * x + 0.3 * h - 0.1)
    c = f * c + i * g
    return float(o * np.tanh(c)), float(c)


def _lstm_reference(cell, features, state, starts):
    """The lesson's own code: ppo_lstm_memory.Agent.get_states on the given features (its encoder and normalization
    stood in by the identity, its LSTM by `cell`)."""
    import ppo_lstm_memory

    stand_in = types.SimpleNamespace(encoder=lambda x: x, normalize=lambda x: x, memory=cell)
    method = ppo_lstm_memory.Agent.get_states
    method = getattr(method, "lessons", method)  # the lesson's own where train swapped a learner's in
    return method(stand_in, features, state, starts)


def _lstm_returned(got, what: str = "") -> tuple[torch.Tensor, tuple]:
    if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], tuple) and len(got[1]) == 2):
        raise Failed(f"{what}expected (the h_t of every step, (h, c) after the last step), got "
                     f"{type(got).__name__}")
    return got


def _lstm_case(xs, h0, c0, starts, hidden, last):
    """Run the learner's loop on the tiny cell: xs and starts [T, N] (the cell's one input), h0 and c0 [N]; check the
    h_t of every step ([T, N], as worked out by hand) and the state after the last step (`last`: (h, c), [N] each)."""
    def run(fn):
        features = torch.tensor(xs, dtype=torch.float32)[..., None]
        state = (torch.tensor(h0, dtype=torch.float32)[:, None], torch.tensor(c0, dtype=torch.float32)[:, None])
        with torch.no_grad():
            got, (h, c) = _lstm_returned(fn(_tiny_cell(), features, state, torch.tensor(starts, dtype=torch.float32)))
        close(got, np.asarray(hidden)[..., None], "the h_t of every step, [T, N, hidden]: ")
        close(h, np.asarray(last[0])[:, None], "h after the last step (what the next rollout goes on from): ")
        close(c, np.asarray(last[1])[:, None], "c after the last step (what the next rollout goes on from): ")
    return run


def _lstm_random(fn):
    """30 random rollouts (T 1 to 8 steps, N 1 to 4 envs, random cells of 1 to 3 inputs and 1 to 4 units, episode
    starts anywhere, a random state to start from) against the lesson's get_states."""
    rng = np.random.default_rng(9)
    for k in range(30):
        steps, envs = int(rng.integers(1, 9)), int(rng.integers(1, 5))
        inputs, units = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        torch.manual_seed(k)
        cell = torch.nn.LSTMCell(inputs, units)
        features = torch.tensor(rng.normal(size=(steps, envs, inputs)), dtype=torch.float32)
        state = tuple(torch.tensor(rng.normal(size=(envs, units)), dtype=torch.float32) for _ in range(2))
        starts = torch.tensor((rng.random((steps, envs)) < 0.3).astype(np.float32))
        where = (f"random rollout {k + 1} of 30 (T = {steps}, N = {envs}, starts at (t, env) "
                 f"{[tuple(map(int, i)) for i in np.argwhere(starts.numpy())]}): ")
        with torch.no_grad():
            got, (h, c) = _lstm_returned(fn(cell, features, state, starts), where)
            expected, (h_, c_) = _lstm_reference(cell, features, state, starts)
        close(got, expected.numpy(), f"{where}the h_t of every step: ")
        close(h, h_.numpy(), f"{where}h after the last step: ")
        close(c, c_.numpy(), f"{where}c after the last step: ")


_S1 = _by_hand(1.0, 0.5, -0.8)  # one step from the state given: (h, c) = (0.5, -0.8), x = 1
_Z1 = _by_hand(1.0, 0.0, 0.0)  # the same step from zeros
_Z2 = _by_hand(-0.5, *_Z1)  # from there, on x = -0.5
LSTM_CASES = [
    Case("one env, one step, mid-episode (starts = 0): the cell steps from the state given",
         "starts[0] = 0: the rollout begins mid-episode, and the cell goes on from `state`, the state the last rollout "
         "left, not from zeros; return the h_t of every step and the state after the last",
         _lstm_case([[1.0]], [0.5], [-0.8], [[0.0]], [[_S1[0]]], ([_S1[0]], [_S1[1]]))),
    Case("one env, one step that starts an episode (starts = 1): the cell steps from zeros",
         "where starts[t] = 1, features[t] is a new episode's first step: the last episode's state says nothing about "
         "it, so the state is wiped before the cell steps on it, not after",
         _lstm_case([[1.0]], [0.5], [0.0], [[1.0]], [[_Z1[0]]], ([_Z1[0]], [_Z1[1]]))),
    Case("an episode's first step where the state's c is not 0 (h = 0): c is wiped too",
         "the state is the pair (h, c), and c is the cell's memory, which h only shows through a gate: a new "
         "episode starts with both at zeros",
         _lstm_case([[1.0]], [0.0], [-0.8], [[1.0]], [[_Z1[0]]], ([_Z1[0]], [_Z1[1]]))),
    Case("three steps, an episode starting at t = 1 (the middle): wiped there, carried from t = 1 to t = 2",
         "the state after step t is the one step t + 1 starts from: carry it from step to step, and wipe it only "
         "where starts[t + 1] = 1",
         _lstm_case([[1.0], [1.0], [-0.5]], [0.5], [-0.8], [[0.0], [1.0], [0.0]], [[_S1[0]], [_Z1[0]], [_Z2[0]]],
                    ([_Z2[0]], [_Z2[1]]))),
    Case("two envs side by side, the second starting an episode at t = 1, the first going on",
         "each env is its own row of the state: (1 - starts[t]) holds one flag per env, [N], to multiply each env's "
         "[hidden] state with, not one flag for all",
         _lstm_case([[1.0, 1.0], [-0.5, 1.0]], [0.0, 0.5], [0.0, -0.8], [[1.0, 0.0], [0.0, 1.0]],
                    [[_Z1[0], _S1[0]], [_Z2[0], _Z1[0]]], ([_Z2[0], _Z1[0]], [_Z2[1], _Z1[1]]))),
    Case("random rollouts against the lesson's get_states",
         "every case above at once: any T, any N, starts anywhere, cells of any size", _lstm_random),
]


# --- the masked policy's log-probabilities and entropy ---------------------------------------------------------

def _masking_reference(logits, mask):
    """The lesson's own code: ppo_action_masking.Agent.get_action_and_value on the given logits (its trunk and actor
    stood in by the identity), asked for each action's log pi in turn; (log pi [..., A], the entropy [...])."""
    import ppo_action_masking

    stand_in = types.SimpleNamespace(trunk=lambda x: x, actor=lambda h: h,
                                     critic=lambda h: torch.zeros(h.shape[:-1] + (1,), dtype=h.dtype))
    method = ppo_action_masking.Agent.get_action_and_value
    method = getattr(method, "lessons", method)  # the lesson's own where train swapped a learner's in
    found = [method(stand_in, logits, mask, torch.full(logits.shape[:-1], a, dtype=torch.long))
             for a in range(logits.shape[-1])]
    return torch.stack([log_prob for _, log_prob, _, _ in found], -1), found[0][2]


def _masked_returned(got, logits, what: str = "") -> tuple[torch.Tensor, torch.Tensor]:
    """The learner's (log pi, entropy), each a tensor of its shape, log pi free of nan."""
    if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(x, torch.Tensor) for x in got)):
        raise Failed(f"{what}expected a pair of tensors (log pi [..., A], the entropy [...]), got {type(got).__name__}")
    log_pi, entropy = got
    if tuple(log_pi.shape) != tuple(logits.shape) or tuple(entropy.shape) != tuple(logits.shape[:-1]):
        raise Failed(f"{what}expected log pi of shape {tuple(logits.shape)} and the entropy of shape "
                     f"{tuple(logits.shape[:-1])}, got {tuple(log_pi.shape)} and {tuple(entropy.shape)}")
    if torch.isnan(log_pi).any():
        raise Failed(f"{what}log pi: expected numbers (-inf where invalid), got nan: {log_pi.detach().numpy()}")
    return log_pi, entropy


def _masked_case(logits, mask, log_pi=None, entropy=None, zero=False, finite=False, grads=None):
    """Check what the case names, on float64 logits: `zero`, each invalid action's probability exp(log pi) exactly 0;
    `log_pi`, the valid actions' log pi ([..., A], invalid entries ignored); `finite`, the entropy finite; `entropy`,
    its value; `grads`, (a, d log pi(a)/d logits, d H/d logits) of a one-state case, by autograd."""
    def run(fn):
        x = torch.tensor(logits, dtype=torch.float64, requires_grad=grads is not None)
        valid = torch.tensor(mask, dtype=torch.bool)
        got, h = _masked_returned(fn(x, valid), x)
        if zero:
            pi = got.detach().exp()
            if not torch.all(pi[~valid] == 0):
                raise Failed(f"an invalid action's probability, exp(log pi): expected exactly 0, got "
                             f"{pi[~valid].numpy()}")
        if log_pi is not None:
            close(got.detach()[valid], np.asarray(log_pi)[np.asarray(mask)], "log pi of the valid actions: ")
        if finite and not torch.isfinite(h).all():
            raise Failed(f"the entropy: expected a finite number, got {h.detach().numpy()}")
        if entropy is not None:
            close(h.detach(), entropy, "the entropy: ")
        if grads is not None:
            action, of_log_pi, of_entropy = grads
            for what, value, expected in (("log pi(a)", got[action], of_log_pi), ("the entropy", h, of_entropy)):
                if not value.requires_grad:
                    raise Failed(f"expected {what} to carry the gradient to the logits, got one that carries none: "
                                 "compute it from `logits` with torch operations")
                (grad,) = torch.autograd.grad(value, x, retain_graph=True)
                close(grad, expected, f"the gradient of {what} in the logits: ")
    return run


def _masked_random(fn):
    """30 random batches (1 to 5 states, 2 to 9 actions, 1 to all of them valid) against the lesson's Agent."""
    rng = np.random.default_rng(10)
    for k in range(30):
        states, actions = int(rng.integers(1, 6)), int(rng.integers(2, 10))
        logits = torch.tensor(rng.normal(size=(states, actions)) * 3, dtype=torch.float32)
        mask = rng.random((states, actions)) < rng.uniform(0.2, 1)
        mask[np.arange(states), rng.integers(0, actions, states)] = True  # at least one valid action each
        mask = torch.tensor(mask)
        where = f"random batch {k + 1} of 30 ({states} states, {actions} actions, {int(mask.sum())} valid): "
        got, h = _masked_returned(fn(logits.clone(), mask.clone()), logits, where)
        expected, h_ = _masking_reference(logits, mask)
        if not torch.all(got.detach().exp()[~mask] == 0):
            raise Failed(f"{where}an invalid action's probability: expected exactly 0, got "
                         f"{got.detach().exp()[~mask].numpy()}")
        close(got.detach()[mask], expected[mask].numpy(), f"{where}log pi of the valid actions: ")
        close(h.detach(), h_.numpy(), f"{where}the entropy: ")


LN3 = float(np.log(3))
H_QUARTER = float(-(0.25 * np.log(0.25) + 0.75 * np.log(0.75)))  # the entropy of (1/4, 3/4): 0.5623
MASKED_CASES = [
    Case("every action valid, two of them: the plain softmax",
         "mask is True where an action is valid: with all valid it changes nothing, and log pi is the log-softmax of "
         "the logits over the last axis",
         _masked_case([0.0, LN3], [True, True], log_pi=[np.log(0.25), np.log(0.75)], entropy=H_QUARTER)),
    Case("three actions, the third invalid (a taken cell): its probability exactly 0",
         "an invalid action's logit becomes -inf before the softmax, and exp(-inf) = 0: its probability is exactly "
         "0; a finite penalty on the logit (or none) leaves it some",
         _masked_case([0.0, LN3, 5.0], [True, True, False], zero=True)),
    Case("the same three actions: the two valid ones renormalized among themselves",
         "the softmax's normalizer sums exp(l_b) over the valid actions alone, so their probabilities sum to 1 "
         "(here 1/4 and 3/4); zeroing the invalid ones after an ordinary softmax leaves them summing to less",
         _masked_case([0.0, LN3, 5.0], [True, True, False], log_pi=[np.log(0.25), np.log(0.75), 0.0])),
    Case("the same three actions: the entropy is a number, not nan",
         "an invalid action's term is 0 log 0, 0 in the limit; but in floating point 0 * -inf is nan: leave the "
         "invalid actions' terms out of the sum",
         _masked_case([0.0, LN3, 5.0], [True, True, False], finite=True)),
    Case("the same three actions: the entropy of the masked pi, over the valid actions",
         "H = -sum over the valid a of pi(a) log pi(a), with the masked pi, the distribution the policy acts from "
         "(here that of 1/4 and 3/4), not the entropy of the softmax over every action",
         _masked_case([0.0, LN3, 5.0], [True, True, False], entropy=H_QUARTER)),
    Case("one valid action of three: probability 1, entropy 0",
         "with one valid action the policy has no choice: log pi = 0 for it, and nothing is uncertain, H = 0",
         _masked_case([2.0, -1.0, 0.5], [False, True, False], log_pi=[0.0, 0.0, 0.0], entropy=0.0, zero=True)),
    Case("a batch of two states, four actions, each with its own mask",
         "one distribution per state: the softmax and the entropy's sum run over the last axis, the actions, each "
         "row with its own mask",
         _masked_case([[0.0, LN3, 1.0, 2.0], [1.0, 1.0, 1.0, 1.0]], [[True, True, False, False], [True, False, True, True]],
                      log_pi=[[np.log(0.25), np.log(0.75), 0, 0], [np.log(1 / 3), 0, np.log(1 / 3), np.log(1 / 3)]],
                      entropy=[H_QUARTER, LN3], zero=True)),
    Case("the gradients, in the three actions' logits, the third invalid: none reaches it",
         "d log pi(a)/d l_b = 1[a = b] - pi(b), 0 for an invalid b, and the entropy's gradient must be finite too: "
         "the backward pass of pi * log pi meets 0 * -inf at an invalid action even where the forward pass left its "
         "term out, so keep -inf out of the product itself",
         _masked_case([0.0, LN3, 5.0], [True, True, False],
                      grads=(1, [-0.25, 0.25, 0.0],
                             [-0.25 * (np.log(0.25) + H_QUARTER), -0.75 * (np.log(0.75) + H_QUARTER), 0.0]))),
    Case("random batches against the lesson's Agent", "every case above at once: any number of actions and of valid "
         "ones", _masked_random),
]


EXERCISES = {e.name: e for e in [
    Exercise("reinforce", "reinforce_loss", "course/ppo-on-one-page.md", "REINFORCE: the policy gradient with the "
             "reward-to-go, before PPO", (
                 "The loss is -mean(log pi(a_t|s_t) G_t): minimizing it climbs eq. 1's g_hat. Its sign flipped, "
                 "every step makes the actions that earned the most less likely.",
                 "The weight is on log pi, not pi: the gradient of log pi is grad pi / pi, which cancels how often "
                 "the policy samples each action. With pi itself each step's gradient is multiplied by "
                 "pi(a_t|s_t), the estimate is no longer the policy gradient, and CartPole does not learn "
                 "(benchmarks/test_exercises_train.py).",
                 "G_t is the reward-to-go, the rewards from step t on, computed backwards: an action earned nothing "
                 "that came before it. (The whole episode's return at every step is unbiased too, since the earlier "
                 "rewards' terms average to 0, but it carries their noise; the cases ask for the reward-to-go.)",
                 "A reward k steps after t counts gamma^k, counted from t; and where an episode ends G is cut, so "
                 "no reward flows back from the next episode of the batch.",
                 "The loss is a mean over the batch's steps, as eq. 1's average is: a sum makes the gradient grow "
                 "with the batch's length.")),
    Exercise("gae", "compute_gae", "ppo_cartpole.py", "Generalized Advantage Estimation, with terminations and "
             "truncations", (
                 "A termination ends the MDP: no reward follows, so V(s_{t+1}) is 0 there; bootstrapping from V would "
                 "credit the agent with a future it does not have.",
                 "A truncation is a time limit, not an end of the MDP: the return should see V of the episode's last "
                 "observation (final_values[t]); values[t + 1] is the next episode's first state, which has nothing "
                 "to do with this one.",
                 "Where an episode ends, the recursion is cut by (1 - dones[t]): the advantage of the next step "
                 "belongs to another episode.",
                 "The recursion runs backwards in time, from last_value after the rollout's last step.")),
    Exercise("clip", "clipped_surrogate_loss", "ppo_cartpole.py", "The clipped surrogate objective, L^CLIP", (
        "A > 0, r above 1 + eps: the clipped term is the smaller and flat, so nothing is gained by making a_t more "
        "likely still; its gradient is 0.",
        "A < 0, r below 1 - eps: likewise, nothing is gained by making a_t less likely still.",
        "The min keeps the unclipped term where it is smaller: a move the wrong way (A < 0 and r above 1 + eps) is "
        "never clipped away, and its gradient pulls r back. Clipping r alone, without the min, loses that.",
        "The function returns the loss to minimize, -L^CLIP, the mean over the samples.")),
    Exercise("loss", "ppo_loss", "ppo_cartpole.py", "The combined loss, L^{CLIP+VF+S}: the ratio, the value loss and "
             "the entropy bonus", (
                 "The rollout stored log-probabilities: the ratio is exp(log pi - log pi_old), which also stays "
                 "accurate where both probabilities are tiny; the quotient of the logs is no ratio at all.",
                 "The objective is maximized and the loss minimized, so the signs flip: -L^CLIP and +c1 L^VF are "
                 "costs, the entropy bonus enters as -c2 S, so that a step raises the entropy. Added, it would "
                 "push pi toward certainty.",
                 "The policy term is the clipped surrogate, not r A: without the clip, the update may move pi as "
                 "far as the gradient takes it.",
                 "Every term is a mean over the minibatch, and the value error is halved before c1 weighs it.")),
    Exercise("value_clip", "clipped_value_loss", "ppo_lunarlander_vec.py", "The clipped value loss", (
        "V_clip is V_old plus the clipped change, so the clip limits how far V moves from what the rollout recorded.",
        "max keeps the larger of the two errors: a move past eps_v toward the target earns nothing more (gradient "
        "0), a move away from it is paid in full. min would reward the first and ignore the second.",
        "The loss is half the squared error, as the lessons write it, averaged over the samples.")),
    Exercise("rollout", "collect_rollout", "ppo_lunarlander_vec.py", "A rollout over vector envs that reset "
             "themselves: what to store, where to bootstrap", (
                 "obs[t] is the observation the agent acted on, stored before the step; storing the step's result "
                 "shifts every transition by one.",
                 "With SAME_STEP autoreset, the step that ends an episode returns the next episode's first "
                 "observation: a truncated episode's V(s_{t+1}) comes from info['final_obs'], the observation it "
                 "ended on, never from next_obs.",
                 "A terminated episode has no future: V(s_{t+1}) = 0, also where a time limit truncated it on the "
                 "same step (termination wins).",
                 "Each env is its own column: bootstrap only the envs that were truncated, each from its own final "
                 "observation.")),
    Exercise("gaussian", "gaussian_log_prob_and_entropy", "ppo_pendulum_continuous.py", "A diagonal Gaussian "
             "policy's log-probability and entropy", (
                 "The log density of N(mu, sigma) loses log sigma as well as the squared distance in sigmas: "
                 "dropping it makes a wide Gaussian look as likely as a narrow one.",
                 "Independent dimensions: the log densities and the entropies add over the last axis, the action's, "
                 "not over the batch.",
                 "The entropy depends on sigma alone, not on the mean or the action: the same in every state when "
                 "log sigma is a free vector, as in the lesson.")),
    Exercise("kl_beta", "adapt_kl_beta", "ppo_pendulum_continuous.py", "The adaptive KL penalty's beta (the "
             "paper's section 4)", (
                 "Too little movement (d < d_targ / 1.5) halves beta, too much (d > 1.5 d_targ) doubles it: the charge "
                 "follows the movement, not the other way round.",
                 "The thresholds are a band around d_targ, 1.5 either way: inside it beta stays, so it does not "
                 "flip-flop at every update.",
                 "The step is a factor of 2 and the band's edges are a factor of 1.5: the paper's two constants, "
                 "which it reports the method is not very sensitive to.")),
    Exercise("max_and_skip", "MaxAndSkip", "ppo_breakout_atari.py", "Frame skip, and the max over the last two "
             "frames", (
                 "The step's reward is the sum over its skipped frames: the last frame's alone loses the rewards "
                 "earned on the others.",
                 "The max of the last two frames keeps an object the Atari draws on every other frame; a max over "
                 "all the skipped frames smears moving objects over their path, the last frame alone loses the "
                 "flicker.",
                 "Where the episode ends on a frame, the step ends there: stepping a finished episode again runs "
                 "frames of an episode that is over.")),
    Exercise("frame_stack", "FrameStack", "ppo_breakout_atari.py", "The frame stack: the last k frames as the "
             "state", (
                 "After a reset the first frame fills all k places: zeros would show a picture the game never "
                 "draws.",
                 "The stack is in time order on a new first axis, [k, 84, 84], the oldest first: the network's "
                 "first convolution reads the k frames as its input channels.",
                 "A reset refills the stack: a new episode must not begin beside the last episode's frames.")),
    Exercise("lstm_state", "lstm_steps", "ppo_lstm_memory.py", "The LSTM's state through a rollout: carried "
             "from step to step, wiped where an episode starts", (
                 "The state is wiped before the cell steps on an episode's first observation, not after: wiped after, "
                 "the first step reads the last episode's memory, and the flag's wipe lands on the second step, one "
                 "step late. Reading starts as dones (the episode's last step) makes the same mistake.",
                 "Both h and c: c is the cell's memory, which h only shows through its output gate. Wiping h alone "
                 "leaves the last episode in c, and the new episode's first h is made from it.",
                 "The flag is one per env, (1 - starts[t]) broadcast over each env's [hidden] state: the N envs of a "
                 "rollout start their episodes at steps of their own.",
                 "The state handed in is where the rollout starts, mid-episode as a rule (starts[0] = 0): the cell "
                 "goes on from it, and the state after the last step is what the next rollout goes on from. The "
                 "update replays each env's T steps from the same kept state with the same starts, so that h_t, and "
                 "log pi(a_t|h_t), are pi_old's again.")),
    Exercise("masked_distribution", "masked_log_pi_and_entropy", "ppo_action_masking.py", "The masked policy: "
             "invalid actions at probability exactly 0, the valid ones renormalized, the entropy over them", (
                 "The logits of the invalid actions are set to -inf before the softmax (or to a number so negative "
                 "that its exp is 0, as sb3-contrib's -1e8): their probability is exactly 0 and the normalizer sums "
                 "over the valid actions alone. Zeroing the probabilities after an ordinary softmax leaves the valid "
                 "ones summing to less than 1; a modest penalty leaves the invalid ones some probability.",
                 "The entropy is the masked pi's, over the valid actions: an invalid action's term is 0 log 0, whose "
                 "limit is 0, but 0 * -inf is nan in floating point: in the forward pass, and in the backward pass "
                 "of pi * log pi too, where torch.where or nan_to_num around the product keeps the nan out of the "
                 "value but not out of the gradient. The lesson replaces an invalid action's log pi by 0 before the "
                 "product.",
                 "The entropy of the softmax over every action is another distribution's: it rewards spreading "
                 "probability onto the moves the mask rules out.",
                 "The gradient of log pi(a) reaches the valid logits only: d log pi(a)/d l_b = 1[a = b] - pi(b) is 0 "
                 "for an invalid b, and a masked logit is a constant; what the update climbs is a policy gradient of "
                 "the masked policy ([IAM]).",
                 "One distribution per state: the softmax and the sums run over the last axis, each state with its "
                 "own mask.")),
    Exercise("kl_reward", "per_token_rewards", "ppo_rlhf_tiny.py", "RLHF's per-token reward: the reward model's "
             "score on the last token, the KL penalty to pi_ref on every token", (
                 "R judges the whole response once: its score is added on the response's last real token only. Added "
                 "to every token, a response of k tokens is paid k times its score: its length, not only its text, "
                 "would set what R's judgement is worth.",
                 "The last real token is not the last slot: a response that wrote \".\" before T tokens is padded "
                 "after it, and a score in the last slot lands on padding, no action of the response; the lesson's "
                 "later steps mask the padding away, so that response would go unscored.",
                 "The sign: r_t = -beta (log pi_old - log pi_ref) charges for every token pi_old makes likelier than "
                 "pi_ref does. Flipped, the penalty is a bonus: pi is paid for moving away from pi_ref. Swapping "
                 "log pi_old and log pi_ref is the same mistake, -beta (log pi_ref - log pi_old) being the sign "
                 "flipped, and the same case catches both.",
                 "The padding after a response's end holds no actions: r_t = 0 there (mask 0), whatever "
                 "log-probabilities the model gives those slots.",
                 "On the last token the score is added to that token's KL penalty, not put in its place: the last "
                 "token was sampled from pi_old as every other one was.",
                 "Each row is its own response, with its own length and its own score.")),
    Exercise("group_advantage", "group_advantages", "grpo_rlhf_tiny.py", "GRPO's advantage: each answer against "
             "the other answers to its prompt, with no critic", (
                 "The baseline is the mean of the answers to the same prompt, the group's. The whole batch's mean "
                 "compares answers to different prompts, and credits an answer for its prompt rather than for "
                 "itself.",
                 "The groups are consecutive: the rollout answers each prompt G times in a row "
                 "(repeat_interleave), so scores[0:G] answer one prompt. Strided groups, every (N/G)-th score, mix "
                 "answers to different prompts.",
                 "Dividing by the group's std puts every group on one scale: a group whose scores spread over 10 "
                 "and one whose scores spread over 0.1 give advantages of the same size. Without it, the groups "
                 "with the widest spread weigh the most in the update.",
                 "The std is the unbiased one, its squares summed over G - 1 (torch.std's default). The biased one, "
                 "over G, is smaller: with G = 2 it makes every A about +-1 where the unbiased std gives about "
                 "+-0.71 (for gaps well above 1e-4).",
                 "A group whose scores are all equal has std 0 and A = 0: it teaches nothing, and the 1e-4 keeps "
                 "0 / 0 from happening.")),
]}
CASES = {"reinforce": REINFORCE_CASES, "gae": GAE_CASES, "clip": CLIP_CASES, "loss": LOSS_CASES,
         "value_clip": VALUE_CASES, "rollout": ROLLOUT_CASES, "gaussian": GAUSSIAN_CASES, "kl_beta": BETA_CASES,
         "max_and_skip": SKIP_CASES, "frame_stack": STACK_CASES, "lstm_state": LSTM_CASES,
         "masked_distribution": MASKED_CASES, "kl_reward": KL_REWARD_CASES, "group_advantage": GROUP_CASES}
# The lesson's code, where it is not a function of that name; REINFORCE, which no lesson holds: its own file's.
REFERENCES = {"gaussian": _pendulum_gaussian, "loss": _cartpole_loss, "lstm_state": _lstm_reference,
              "masked_distribution": _masking_reference, "reinforce": "exercises.reinforce_cartpole:reinforce_loss"}
SHOWN = {"gaussian": "ppo_pendulum_continuous:Agent.get_action_and_value", "lstm_state": "ppo_lstm_memory:Agent.get_states",
         "masked_distribution": "ppo_action_masking:Agent.get_action_and_value"}


def check(name: str, fn: Callable | None = None) -> list[str]:
    """Run the exercise's cases on `fn` (the learner's function by default), in order, stopping at the first that
    fails. Returns the report's lines: one per case passed, then what failed, or that the function is not written
    yet."""
    exercise = EXERCISES[name]
    fn = fn or exercise.learner()
    where = f"exercises/{name}.py: {exercise.function}"
    lines = []
    for k, case in enumerate(CASES[name], start=1):
        try:
            case.run(fn)
        except NotImplementedError:
            return lines + [f"{where} is not written yet: write its body, then run this again"]
        except Failed as failed:
            return lines + [f"case {k} of {len(CASES[name])} fails: {case.name}", f"  {failed}",
                            f"  hint: {case.hint}"]
        except Exception as error:  # the learner's code raised: one line, the case and the error
            return lines + [f"case {k} of {len(CASES[name])} fails: {case.name}",
                            f"  {where} raised {type(error).__name__}: {error}", f"  hint: {case.hint}"]
        lines.append(f"case {k} of {len(CASES[name])} passes: {case.name}")
    return lines + [f"{where}: all {len(CASES[name])} cases pass"]


def status(name: str) -> str:
    """done, not started or in progress, as `check` finds the learner's function."""
    report = check(name)
    if report[-1].endswith("cases pass"):
        return "done"
    return "not started" if "not written yet" in report[-1] else "in progress"


def solution(name: str) -> str:
    """The lesson's own function (the lessons are the solutions) and each trap, explained."""
    exercise = EXERCISES[name]
    traps = "\n".join(f"- {trap}" for trap in exercise.traps)
    if name == "loss":  # the lesson computes it inline, in train(): its lines
        where, source = _cartpole_loss_source()
        return f"{exercise.lesson}, {where}:\n\n{source}\nThe traps:\n{traps}"
    shown = exercise.shown()
    source = inspect.getsource(shown)
    owner = exercise.lesson if exercise.lesson.endswith(".py") else f"{shown.__module__.replace('.', '/')}.py"
    return f"{owner}'s {shown.__qualname__}:\n\n{source}\nThe traps:\n{traps}"
