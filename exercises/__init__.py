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
        """The lesson's own code for it: its function of the same name, or (REFERENCES) a call of the lesson's
        code that does the same."""
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
    _, log_prob, entropy, _ = ppo_pendulum_continuous.Agent.get_action_and_value(stand_in, None, action)
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
]}
CASES = {"gae": GAE_CASES, "clip": CLIP_CASES, "value_clip": VALUE_CASES, "gaussian": GAUSSIAN_CASES,
         "kl_beta": BETA_CASES}
REFERENCES = {"gaussian": _pendulum_gaussian}  # the lesson's code, where it is not a function of that name
SHOWN = {"gaussian": "ppo_pendulum_continuous:Agent.get_action_and_value"}


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
    shown = exercise.shown()
    source = inspect.getsource(shown)
    traps = "\n".join(f"- {trap}" for trap in exercise.traps)
    return f"{exercise.lesson}'s {shown.__qualname__}:\n\n{source}\nThe traps:\n{traps}"
