"""The exercises (exercises/): each check passes on the lesson's own function, rejects the typical wrong answers with
the case that catches each (its message names the case, what was expected and what came back, and a hint), and a
function not yet written gets one line; the command's list, check and solution, and its bad input."""

import subprocess
import sys

import numpy as np
import pytest
import torch

import exercises
from conftest import ROOT


@pytest.mark.parametrize("name", list(exercises.EXERCISES))
def test_every_check_passes_on_the_lessons_own_function(name):
    report = exercises.check(name, exercises.EXERCISES[name].reference())
    assert report[-1].endswith(f"all {len(exercises.CASES[name])} cases pass"), report


# --- wrong answers a learner writes, each with the case that must catch it -------------------------------------------

def gae(mask=True, bootstrap_termination=False, truncation_as_termination=False, sign=1.0, backwards=True,
        time_axis=0):
    """compute_gae with one typical mistake switched on."""
    def fn(rewards, values, dones, final_values, last_value, gamma, gae_lambda):
        r, v, d, f = (np.moveaxis(x, time_axis, 0) for x in (rewards, values, dones, final_values))
        following = np.concatenate([v[1:], np.asarray(last_value, dtype=v.dtype).reshape((1,) + v.shape[1:])])
        if truncation_as_termination:
            next_values = np.where(d == 1, 0.0, following)
        elif bootstrap_termination:
            next_values = following
        else:
            next_values = np.where(d == 1, f, following)
        advantages = np.zeros_like(r)
        last = 0.0
        steps = reversed(range(len(r))) if backwards else range(len(r))
        for t in steps:
            delta = r[t] + sign * gamma * next_values[t] - v[t]
            last = delta + gamma * gae_lambda * ((1.0 - d[t]) if mask else 1.0) * last
            advantages[t] = last
        return np.moveaxis(advantages, 0, time_axis)
    return fn


def clip(sign=-1.0, reduce=torch.min, clip_only=False, total=False, detach=False):
    def fn(ratio, advantages, clip_coef):
        clipped = torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef) * advantages
        term = clipped if clip_only else reduce(ratio * advantages, clipped)
        loss = sign * (term.sum() if total else term.mean())
        return loss.item() if detach else loss
    return fn


def value_clip(reduce=torch.max, from_old=True, half=0.5, total=False):
    def fn(newvalue, oldvalue, returns, eps):
        change = torch.clamp(newvalue - oldvalue, -eps, eps)
        clipped = oldvalue + change if from_old else change
        term = half * reduce((newvalue - returns) ** 2, (clipped - returns) ** 2)
        return term.sum() if total else term.mean()
    return fn


def gaussian(log_sigma_term=True, reduce="sum", entropy_scale=1.0):
    def fn(mean, log_std, action):
        log_density = -0.5 * ((action - mean) / log_std.exp()) ** 2 - (log_std if log_sigma_term else 0) \
            - 0.5 * np.log(2 * np.pi)
        entropy = 0.5 + 0.5 * np.log(2 * np.pi) + entropy_scale * log_std + 0 * mean
        if reduce == "all":
            return log_density.sum(), entropy.sum()
        return (log_density.mean(-1), entropy.mean(-1)) if reduce == "mean" else (log_density.sum(-1), entropy.sum(-1))
    return fn


def kl_beta(low=1 / 1.5, high=1.5, swapped=False):
    def fn(beta, d, target):
        if d < target * low:
            return beta * 2 if swapped else beta / 2
        if d > target * high:
            return beta / 2 if swapped else beta * 2
        return beta
    return fn


WRONG = [
    ("gae", gae(mask=False), "no advantage flows across an episode's end", "the recursion is cut"),
    ("gae", gae(bootstrap_termination=True), "terminates at t = 1", "V(s_{t+1}) is 0 there"),
    ("gae", gae(truncation_as_termination=True), "truncated by a time limit", "final_values[t]"),
    ("gae", gae(sign=-1.0), "one step, the episode goes on", "delta_t = r_t + gamma V(s_{t+1}) - V(s_t)"),
    ("gae", gae(backwards=False), "three steps, no episode ends", "backwards"),
    ("gae", gae(time_axis=-1), "N = 2 envs side by side", "each column is one env's trajectory"),
    ("clip", clip(sign=1.0), "A > 0, r inside", "its negative"),
    ("clip", clip(reduce=torch.max), "A > 0, r above 1 + eps", "flat there, its gradient 0"),
    ("clip", clip(clip_only=True), "a move the wrong way is never clipped away", "min keeps the unclipped"),
    ("clip", clip(total=True), "a minibatch of four", "1 / B"),
    ("clip", clip(detach=True), "A > 0, r inside", "its negative"),
    ("value_clip", value_clip(reduce=torch.min), "V moved past eps_v toward its target", "max picks the larger"),
    ("value_clip", value_clip(from_old=False), "V_clip is measured from V_old", "the change since the rollout"),
    ("value_clip", value_clip(half=1.0), "the plain squared error, halved", "0.5 (V - V^targ)^2"),
    ("value_clip", value_clip(total=True), "a minibatch of two", "1 / B"),
    ("gaussian", gaussian(log_sigma_term=False), "one sigma from the mean", "loses log sigma"),
    ("gaussian", gaussian(reduce="mean"), "two independent dimensions", "the logs add"),
    ("gaussian", gaussian(reduce="all"), "a batch of two states", "never over the batch"),
    ("gaussian", gaussian(entropy_scale=2.0), "one sigma from the mean", "loses log sigma"),
    ("kl_beta", kl_beta(low=1.0, high=1.0), "a little above the target", "a band around the target"),
    ("kl_beta", kl_beta(swapped=True), "far below the target", "beta <- beta / 2"),
]


@pytest.mark.parametrize("name, fn, case, hint", WRONG, ids=[f"{w[0]}-{k}" for k, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_the_case_built_for_it(name, fn, case, hint):
    report = exercises.check(name, fn)
    failing = [line for line in report if " fails: " in line]
    assert len(failing) == 1 and case in failing[0], report
    assert report[-1].startswith("  hint: ") and hint in report[-1], report
    assert any(line.startswith("  expected") or "expected" in line for line in report), report


def test_each_exercise_catches_at_least_two_wrong_answers_and_the_traps_are_explained():
    for name, exercise in exercises.EXERCISES.items():
        assert sum(w[0] == name for w in WRONG) >= 2, name
        assert len(exercise.traps) >= 3 and f"def {exercise.shown().__name__}(" in exercises.solution(name)


# --- the command ----------------------------------------------------------------------------------------------------

def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "exercises", *args], cwd=ROOT, capture_output=True, text=True)


def test_the_list_a_stub_and_bad_input():
    """The committed exercises are stubs: the list says not started and names the next; a check of a stub is one
    line and exit 1, no traceback; an unknown name is one line and exit 2."""
    listed = run()
    assert listed.returncode == 0 and "gae" in listed.stdout and "<- next" in listed.stdout
    stub = run("check", "gae")
    assert stub.returncode == 1 and stub.stdout.strip().splitlines() == [
        "exercises/gae.py: compute_gae is not written yet: write its body, then run this again"]
    assert "Traceback" not in stub.stderr + stub.stdout
    for bad in (["check", "nothing"], ["check"], ["train", "gae"]):
        refused = run(*bad)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, bad
        assert "Traceback" not in refused.stderr


def test_solution_shows_the_lessons_function_and_the_traps():
    shown = run("solution", "gae")
    assert shown.returncode == 0 and "def compute_gae(" in shown.stdout and "The traps:" in shown.stdout
