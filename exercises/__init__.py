"""Exercises: write PPO's parts yourself, and be told exactly what is wrong.

Each exercise is a file of this folder holding the signature, the docstring and the equation of one of the lessons'
own functions, with a body to write. `python -m exercises check NAME` runs your function on cases worked out by hand,
each built around one trap (an episode that ends mid-rollout, a truncation, a negative advantage, a ratio outside
the clip range, a batch of one), then on random inputs against the lesson's own function; a failure names the case,
what was expected and what came back, and a hint at the idea it tests, never the answer. The lessons are the
solutions: `python -m exercises solution NAME` shows the lesson's function.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Callable

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
        return getattr(importlib.import_module(self.lesson.removesuffix(".py")), self.function)


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

def _clip_case(ratios, advantages, eps, value, slopes):
    """Check -L^CLIP's value and its gradient in the ratios (each sample's d(-L)/dr_i, the mean's 1/B included)."""
    def run(fn):
        ratio = torch.tensor(ratios, dtype=torch.float64, requires_grad=True)
        loss = fn(ratio, torch.tensor(advantages, dtype=torch.float64), eps)
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            raise Failed(f"expected a torch scalar (the mean over the samples), got {type(loss).__name__} "
                         f"{tuple(loss.shape) if isinstance(loss, torch.Tensor) else ''}")
        close(loss, value, "the loss: ")
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


# --- the clipped value loss ---------------------------------------------------------------------------------------

def _value_case(new, old, targets, eps, value, slopes):
    def run(fn):
        newvalue = torch.tensor(new, dtype=torch.float64, requires_grad=True)
        loss = fn(newvalue, torch.tensor(old, dtype=torch.float64), torch.tensor(targets, dtype=torch.float64), eps)
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            raise Failed(f"expected a torch scalar (the mean over the samples), got {type(loss).__name__}")
        close(loss, value, "the loss: ")
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


EXERCISES = {e.name: e for e in [
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
    Exercise("value_clip", "clipped_value_loss", "ppo_lunarlander_vec.py", "The clipped value loss", (
        "V_clip is V_old plus the clipped change, so the clip limits how far V moves from what the rollout recorded.",
        "max keeps the larger of the two errors: a move past eps_v toward the target earns nothing more (gradient "
        "0), a move away from it is paid in full. min would reward the first and ignore the second.",
        "The loss is half the squared error, as the lessons write it, averaged over the samples.")),
]}
CASES = {"gae": GAE_CASES, "clip": CLIP_CASES, "value_clip": VALUE_CASES}


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
    source = inspect.getsource(exercise.reference())
    traps = "\n".join(f"- {trap}" for trap in exercise.traps)
    return f"{exercise.lesson}'s {exercise.function}:\n\n{source}\nThe traps:\n{traps}"
