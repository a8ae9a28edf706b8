"""The exercises (exercises/): each check passes on the lesson's own function, rejects the typical wrong answers with
the case that catches each (its message names the case, what was expected and what came back, and a hint), and a
function not yet written gets one line; the command's list, check and solution, and its bad input."""

import collections
import subprocess
import sys

import gymnasium as gym

import numpy as np
import pytest
import torch

import exercises
from benchmarks.core import launch
from benchmarks.core.runs import read_scalars
from conftest import ROOT
from exercises import bugs, train


@pytest.mark.parametrize("name", list(exercises.EXERCISES))
def test_every_check_passes_on_the_lessons_own_function(name):
    report = exercises.check(name, exercises.EXERCISES[name].reference())
    assert report[-1].endswith(f"all {len(exercises.CASES[name])} cases pass"), report


# --- wrong answers a learner writes, each with the case that must catch it -------------------------------------------

def reinforce(sign=-1.0, log=True, detach=False, total=False, discount=True, backwards=True, from_start=False,
              cut=True, whole_episode=False):
    """reinforce_loss with one typical mistake: the sign flipped, pi for log pi, the loss detached, a sum for the
    mean, gamma ignored, the rewards so far (a forward loop), gamma^k counted from the episode's start, the returns
    summed on across episode ends, the whole episode's return at every step."""
    def fn(logprobs, rewards, dones, gamma):
        r, d, g = rewards.tolist(), dones.tolist(), gamma if discount else 1.0
        returns, following = [0.0] * len(r), 0.0
        if backwards:
            for t in reversed(range(len(r))):
                following = r[t] + g * following * ((1.0 - d[t]) if cut else 1.0)
                returns[t] = following
        else:  # the rewards up to t, as a forward loop sums them
            for t in range(len(r)):
                following = r[t] + g * following
                returns[t] = following
                following = following * (1.0 - d[t])
        starts = [t == 0 or d[t - 1] == 1.0 for t in range(len(r))]
        if from_start or whole_episode:  # each episode's steps: gamma^k from its first step
            begin = 0
            for t in range(len(r)):
                begin = t if starts[t] else begin
                end = next(e for e in range(t, len(r)) if d[e] == 1.0 or e == len(r) - 1)
                first = range(t if from_start else begin, end + 1)
                returns[t] = sum(g ** (k - begin) * r[k] for k in first)
        weight = logprobs.exp() if not log else logprobs
        term = weight * torch.tensor(returns, dtype=logprobs.dtype)
        loss = sign * (term.sum() if total else term.mean())
        return loss.detach() if detach else loss
    return fn


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


def clip(sign=-1.0, reduce=torch.min, clip_only=False, total=False, detach=False, positive_only=False):
    def fn(ratio, advantages, clip_coef):
        clipped = torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef) * advantages
        term = clipped if clip_only else reduce(ratio * advantages, clipped)
        if positive_only:  # "the clip stops over-reinforcing good actions": A < 0 left unclipped
            term = torch.where(advantages > 0, term, ratio * advantages)
        loss = sign * (term.sum() if total else term.mean())
        return loss.item() if detach else loss
    return fn


def loss(quotient=False, entropy_sign=-1.0, half=0.5, value_sign=1.0, clipped=True, total=False, pg_sign=-1.0):
    """ppo_loss with one typical mistake: the ratio as a quotient of the logs, the entropy added, the value error not
    halved, the value term's sign, no clip, sums for means, -L^CLIP's sign."""
    def fn(newlogprob, oldlogprob, advantages, newvalue, returns, entropy, clip_coef, vf_coef, ent_coef):
        ratio = newlogprob / oldlogprob if quotient else (newlogprob - oldlogprob).exp()
        term = ratio * advantages
        if clipped:
            term = torch.min(term, torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef) * advantages)
        mean = torch.sum if total else torch.mean
        return (pg_sign * mean(term) + value_sign * vf_coef * half * mean((newvalue - returns) ** 2)
                + entropy_sign * ent_coef * mean(entropy))
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


def rollout(store_after=False, bootstrap_from="final_obs", both_bootstraps=False, every_env=False):
    """collect_rollout with one typical mistake: the observation stored after the step, a truncation bootstrapped
    from next_obs (or not at all: "nothing"), a termination on the limit's step bootstrapped, every env bootstrapped
    that ended where one was truncated."""
    def fn(envs, agent, next_obs, rollout):
        episodes = []
        for step in range(len(rollout.obs)):
            with torch.inference_mode():
                action, logprob, _, value = agent.get_action_and_value(torch.as_tensor(next_obs))
            rollout.obs[step] = next_obs
            rollout.actions[step], rollout.logprobs[step], rollout.values[step] = action, logprob, value
            next_obs, rollout.rewards[step], terminated, truncated, info = envs.step(rollout.actions[step])
            if store_after:
                rollout.obs[step] = next_obs
            rollout.dones[step] = terminated | truncated
            rollout.final_values[step] = 0.0
            if "final_obs" in info:
                bootstrap = truncated if both_bootstraps else truncated & ~terminated
                if every_env and bootstrap.any():
                    bootstrap = info["_final_obs"]
                if bootstrap.any() and bootstrap_from != "nothing":
                    source = info["final_obs"][bootstrap] if bootstrap_from == "final_obs" else next_obs[bootstrap]
                    with torch.inference_mode():
                        rollout.final_values[step, bootstrap] = agent.get_value(
                            torch.as_tensor(np.stack(source).astype(np.float32))).numpy()
                stats = info["final_info"]["episode"]
                for i in np.flatnonzero(info["final_info"]["_episode"]):
                    episodes.append((step, float(stats["r"][i]), int(stats["l"][i])))
        with torch.inference_mode():
            last_value = agent.get_value(torch.as_tensor(next_obs)).numpy()
        return next_obs, last_value, episodes
    return fn


def max_and_skip(reward="sum", frames="last two", stop=True, skip=None, reduce=np.maximum):
    """MaxAndSkip with one typical mistake: the last frame's reward alone, the max over every frame or the last
    frame alone, stepping on past the episode's end, always 4 frames, the mean of the two."""
    class Wrong(gym.Wrapper):
        def __init__(self, env, skip_=4, **kwargs):
            super().__init__(env)
            self.skip = kwargs.get("skip", skip_)

        def step(self, action):
            total, seen = 0.0, []
            for _ in range(skip or self.skip):
                obs, r, terminated, truncated, info = self.env.step(action)
                total = total + float(r) if reward == "sum" else float(r)
                seen.append(obs)
                if stop and (terminated or truncated):
                    break
            if frames == "last":
                frame = seen[-1]
            elif frames == "all":
                frame = np.max(np.stack(seen), axis=0)
            else:
                frame = seen[-1] if len(seen) == 1 else reduce(seen[-2], seen[-1])
            return frame, total, terminated, truncated, info
    return Wrong


def frame_stack(start="repeat", newest="last", axis=0, refill=True, k=None):
    """FrameStack with one typical mistake: a reset's stack filled with zeros, the newest frame first, the frames
    stacked on the last axis, a reset that does not refill, always 4 frames."""
    class Wrong(gym.Wrapper):
        def __init__(self, env, k_=4, **kwargs):
            super().__init__(env)
            self.frames = collections.deque(maxlen=k or kwargs.get("k", k_))

        def stacked(self):
            frames = list(self.frames)[::-1] if newest == "first" else list(self.frames)
            return np.stack(frames, axis=axis)

        def reset(self, **kwargs):
            obs, info = self.env.reset(**kwargs)
            if not refill and self.frames:
                self.frames.append(obs)
            elif start == "zeros":
                self.frames.extend([np.zeros_like(obs)] * (self.frames.maxlen - 1) + [obs])
            else:
                self.frames.extend([obs] * self.frames.maxlen)
            return self.stacked(), info

        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            self.frames.append(obs)
            return self.stacked(), reward, terminated, truncated, info
    return Wrong


def kl_reward(last="real", sign=-1.0, swapped=False, mask_kl=True, every_token=False, replace=False,
              rows="own"):
    """per_token_rewards with one typical mistake: the score on the last slot, the KL's sign flipped, log pi_old and
    log pi_ref swapped, the padding penalized, the score added to every token, the score put in place of the last
    token's penalty, the score indexed by column (each row gets every response's score at that response's end)."""
    def fn(scores, logprobs, ref_logprobs, mask, beta):
        gap = ref_logprobs - logprobs if swapped else logprobs - ref_logprobs
        rewards = sign * beta * gap * (mask if mask_kl else 1.0)
        ends = mask.sum(1).long() - 1 if last == "real" else torch.full_like(scores, mask.shape[1] - 1).long()
        if every_token:
            return rewards + scores[:, None]
        if rows == "columns":  # rewards[:, ends] += scores: row i gets scores[j] at ends[j], for every j
            rewards[:, ends] += scores
        elif rows == "first":  # the first response's length for all
            rewards[:, int(ends[0])] += scores
        elif replace:
            rewards[torch.arange(len(scores)), ends] = scores
        else:
            rewards[torch.arange(len(scores)), ends] += scores
        return rewards
    return fn


def group_advantage(mean="group", std="unbiased", eps=1e-4, groups="consecutive"):
    """group_advantages with one typical mistake: the whole batch's mean (and std), the biased std, no std division,
    no 1e-4, strided groups (i::N/G)."""
    def fn(scores, group_size):
        n = len(scores)
        if groups == "strided":  # group i: scores[i::n // group_size]
            grouped = scores.view(group_size, n // group_size).T
        else:
            grouped = scores.view(-1, group_size)
        if mean == "batch":
            centre, spread = scores.mean(), scores.std()
        elif mean == "batch mean":
            centre, spread = scores.mean(), grouped.std(1, keepdim=True)
        else:
            centre = grouped.mean(1, keepdim=True)
            spread = grouped.std(1, keepdim=True, correction=1 if std == "unbiased" else 0)
        centred = grouped - centre
        advantages = centred if std == "none" else centred / (spread + eps)
        return advantages.T.reshape(-1) if groups == "strided" else advantages.reshape(-1)
    return fn


def lstm_state(wipe="before", what=("h", "c"), per_env=True, carry=True, from_zeros=False):
    """lstm_steps with one typical mistake: no wipe, the wipe after the step, starts read as dones (the wipe one step
    late), h wiped alone (or c alone), one flag for all envs, each step from the rollout's first state (not carried),
    the rollout started from zeros."""
    def fn(cell, features, state, starts):
        if from_zeros:
            state = (torch.zeros_like(state[0]), torch.zeros_like(state[1]))
        initial, outputs = state, []
        for t, (feature, start) in enumerate(zip(features, starts)):
            if wipe == "late":  # the flag read as "the episode ended here": its wipe before the next step
                start = starts[t - 1] if t else torch.zeros_like(start)
            keep = (1.0 - start).unsqueeze(-1)
            if not per_env:
                keep = torch.zeros_like(keep) if start.any() else torch.ones_like(keep)
            source = state if carry else initial
            if wipe in ("before", "late"):
                source = tuple(keep * x if name in what else x for name, x in zip("hc", source))
            state = cell(feature, source)
            outputs.append(state[0])
            if wipe == "after":
                state = tuple(keep * x for x in state)
        return torch.stack(outputs), state
    return fn


def masked_distribution(how="-inf", renormalize=True, entropy="valid", dim=-1, detach=False, inverted=False):
    """masked_log_pi_and_entropy with one typical mistake, or (how="-1e8", sb3-contrib's) none: the mask ignored, a
    modest penalty for -inf, the probabilities zeroed after an ordinary softmax, the entropy summed with 0 * -inf
    (nan), with torch.where or nan_to_num around pi * log pi (a nan gradient), over every action's softmax, the
    softmax over the batch's axis, the results detached, the mask read the wrong way round."""
    def fn(logits, mask):
        valid = ~mask if inverted else mask
        if how == "none":
            masked = logits
        elif how == "penalty":
            masked = logits - 10.0 * (~valid)
        elif how == "-1e8":
            masked = torch.where(valid, logits, torch.tensor(-1e8, dtype=logits.dtype))
        else:
            masked = logits.masked_fill(~valid, -torch.inf)
        log_pi = masked.log_softmax(dim) if renormalize else (logits.softmax(dim) * valid).log()
        pi = log_pi.exp()
        if entropy == "valid":
            h = -(pi * log_pi.masked_fill(~valid, 0.0)).sum(-1)
        elif entropy == "nan":
            h = -(pi * log_pi).sum(-1)
        elif entropy == "where":
            h = -torch.where(valid, pi * log_pi, torch.zeros_like(pi)).sum(-1)
        elif entropy == "nan_to_num":
            h = -torch.nan_to_num(pi * log_pi).sum(-1)
        else:  # "all": the entropy of the softmax over every action
            h = -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1)
        return (log_pi.detach(), h.detach()) if detach else (log_pi, h)
    return fn


WRONG = [
    ("reinforce", reinforce(sign=1.0), "a batch of one", "-mean(log pi(a_t|s_t) G_t)"),
    ("reinforce", reinforce(log=False), "a batch of one", "log pi as given, not pi"),
    ("reinforce", reinforce(detach=True), "a batch of one", "its gradient in log pi"),
    ("reinforce", reinforce(total=True), "the mean over the batch's steps", "not their sum"),
    ("reinforce", reinforce(backwards=False), "the rewards from it on", "nothing that came before it"),
    ("reinforce", reinforce(whole_episode=True), "the rewards from it on", "nothing that came before it"),
    ("reinforce", reinforce(discount=False), "the discount", "G_t = r_t + gamma G_{t+1}"),
    ("reinforce", reinforce(from_start=True), "the discount", "counted from t"),
    ("reinforce", reinforce(cut=False), "two episodes in one batch", "does not flow back"),
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
    ("clip", clip(positive_only=True), "A < 0, r below 1 - eps", "flat, gradient 0"),
    ("clip", clip(detach=True), "A > 0, r inside", "its negative"),
    ("loss", loss(quotient=True), "the ratio is exp(0.1)", "not their quotient"),
    ("loss", loss(entropy_sign=1.0), "the entropy bonus", "minimizing the loss raises the entropy"),
    ("loss", loss(half=1.0), "the value term", "halved"),
    ("loss", loss(value_sign=-1.0), "the value term", "pulls V to V^targ"),
    ("loss", loss(clipped=False), "is clipped to 1.2", "not r A alone"),
    ("loss", loss(total=True), "a minibatch of two", "1 / B"),
    ("loss", loss(pg_sign=1.0), "pi = pi_old (r = 1)", "-L^CLIP"),
    ("value_clip", value_clip(reduce=torch.min), "V moved past eps_v toward its target", "max picks the larger"),
    ("value_clip", value_clip(from_old=False), "V_clip is measured from V_old", "the change since the rollout"),
    ("value_clip", value_clip(half=1.0), "the plain squared error, halved", "0.5 (V - V^targ)^2"),
    ("value_clip", value_clip(total=True), "a minibatch of two", "1 / B"),
    ("gaussian", gaussian(log_sigma_term=False), "one sigma from the mean", "loses log sigma"),
    ("gaussian", gaussian(reduce="mean"), "two independent dimensions", "the logs add"),
    ("gaussian", gaussian(reduce="all"), "a batch of two states", "never over the batch"),
    ("gaussian", gaussian(entropy_scale=2.0), "one sigma from the mean", "loses log sigma"),
    ("rollout", rollout(store_after=True), "each step stores the observation it acted on", "before acting"),
    ("rollout", rollout(bootstrap_from="next_obs"), "truncated by a time limit", "another episode's state"),
    ("rollout", rollout(bootstrap_from="nothing"), "truncated by a time limit", "reward would have followed"),
    ("rollout", rollout(both_bootstraps=True), "both terminated and truncated", "termination wins"),
    ("rollout", rollout(every_env=True), "both ending at t = 1", "bootstrap only the env that was truncated"),
    ("max_and_skip", max_and_skip(reward="last"), "their rewards summed", "the sum of the skipped frames' rewards"),
    ("max_and_skip", max_and_skip(frames="all"), "the pixel-wise max of the last two frames", "and nothing older"),
    ("max_and_skip", max_and_skip(frames="last"), "the pixel-wise max of the last two frames", "keeps it"),
    ("max_and_skip", max_and_skip(reduce=lambda a, b: (a.astype(np.float64) + b) / 2),
     "the pixel-wise max of the last two frames", "the max of those two"),
    ("max_and_skip", max_and_skip(stop=False), "terminates on the second frame", "not stepped again"),
    ("max_and_skip", max_and_skip(skip=4), "skip = 2", "self.skip"),
    ("frame_stack", frame_stack(start="zeros"), "reset: the first frame fills", "repeat it k times"),
    ("frame_stack", frame_stack(axis=-1), "reset: the first frame fills", "a new first axis"),
    ("frame_stack", frame_stack(newest="first"), "the newest frame last", "the oldest first"),
    ("frame_stack", frame_stack(refill=False), "a reset after steps", "fills all k places again"),
    ("frame_stack", frame_stack(k=4), "k = 2", "the k the wrapper was made with"),
    ("kl_beta", kl_beta(low=1.0, high=1.0), "a little above the target", "a band around the target"),
    ("kl_beta", kl_beta(swapped=True), "far below the target", "beta <- beta / 2"),
    ("kl_reward", kl_reward(every_token=True), "never wrote", "paid on the last token alone"),
    ("kl_reward", kl_reward(last="slot"), "the score on its last real token", "the slots after it are padding"),
    ("kl_reward", kl_reward(sign=1.0), "each token pays its KL penalty", "-beta (log pi_old - log pi_ref)"),
    ("kl_reward", kl_reward(swapped=True), "each token pays its KL penalty", "swapping log pi_old and log pi_ref"),
    ("kl_reward", kl_reward(mask_kl=False), "log-probabilities on the padding", "mask 0 means r_t = 0 there"),
    ("kl_reward", kl_reward(replace=True), "a response of one token", "not put in its place"),
    ("kl_reward", kl_reward(rows="columns"), "two responses of different lengths", "its own last token"),
    ("kl_reward", kl_reward(rows="first"), "two responses of different lengths", "its own last token"),
    ("lstm_state", lstm_state(wipe="none"), "one step that starts an episode", "wiped before the cell steps"),
    ("lstm_state", lstm_state(wipe="after"), "one step that starts an episode", "not after"),
    ("lstm_state", lstm_state(wipe="late"), "one step that starts an episode", "features[t] is a new episode's first"),
    ("lstm_state", lstm_state(what=("h",)), "c is wiped too", "c is the cell's memory"),
    ("lstm_state", lstm_state(what=("c",)), "one step that starts an episode", "the state is wiped"),
    ("lstm_state", lstm_state(per_env=False), "two envs side by side", "one flag per env"),
    ("lstm_state", lstm_state(carry=False), "carried from t = 1 to t = 2", "carry it from step to step"),
    ("lstm_state", lstm_state(from_zeros=True), "mid-episode (starts = 0)", "not from zeros"),
    ("masked_distribution", masked_distribution(how="none"), "its probability exactly 0", "exp(-inf) = 0"),
    ("masked_distribution", masked_distribution(how="penalty"), "its probability exactly 0", "a finite penalty"),
    ("masked_distribution", masked_distribution(renormalize=False), "renormalized among themselves",
     "after an ordinary softmax"),
    ("masked_distribution", masked_distribution(entropy="nan"), "not nan", "0 * -inf is nan"),
    ("masked_distribution", masked_distribution(entropy="all"), "over the valid actions", "not the entropy of the "
     "softmax over every action"),
    ("masked_distribution", masked_distribution(entropy="where"), "none reaches it", "the backward pass"),
    ("masked_distribution", masked_distribution(entropy="nan_to_num"), "none reaches it", "the backward pass"),
    ("masked_distribution", masked_distribution(dim=0), "each with its own mask", "the last axis"),
    ("masked_distribution", masked_distribution(detach=True), "none reaches it", "1[a = b] - pi(b)"),
    ("masked_distribution", masked_distribution(inverted=True), "the plain softmax", "True where an action is valid"),
    ("group_advantage", group_advantage(mean="batch"), "each against its own group", "not the whole batch's mean"),
    ("group_advantage", group_advantage(mean="batch mean"), "each against its own group",
     "not the whole batch's mean"),
    ("group_advantage", group_advantage(std="biased"), "one group of two", "over G - 1, not G"),
    ("group_advantage", group_advantage(std="none"), "one group of two", "divide by the std"),
    ("group_advantage", group_advantage(eps=0.0), "a group of equal scores", "the 1e-4"),
    ("group_advantage", group_advantage(groups="strided"), "each against its own group", "the groups are consecutive"),
]


@pytest.mark.parametrize("name, fn, case, hint", WRONG, ids=[f"{w[0]}-{k}" for k, w in enumerate(WRONG)])
def test_a_typical_wrong_answer_fails_the_case_built_for_it(name, fn, case, hint):
    report = exercises.check(name, fn)
    failing = [line for line in report if " fails: " in line]
    assert len(failing) == 1 and case in failing[0], report
    assert report[-1].startswith("  hint: ") and hint in report[-1], report
    assert any(line.startswith("  expected") or "expected" in line for line in report), report


# The traps the issue lists, each with the cases that hold it: at least two wrong answers must fail on each.
LISTED_TRAPS = {
    "an episode that ends mid-rollout": ["terminates at t = 1", "no advantage flows across an episode's end",
                                         "an episode that terminates", "both terminated and truncated",
                                         "both ending at t = 1", "terminates on the second frame",
                                         "a reset after steps"],
    "a truncation": ["truncated by a time limit", "a time limit truncates"],
    "a negative advantage": ["A < 0"],
    "a ratio outside the clip range": ["r above 1 + eps", "r below 1 - eps", "V moved past eps_v"],
    "a batch of one": ["a batch of one"],
}


def test_each_listed_trap_rejects_at_least_two_wrong_answers():
    """Each trap of the issue's list: two wrong answers or more fail on a case that holds it."""
    failing = [next(line for line in exercises.check(name, fn) if " fails: " in line) for name, fn, *_ in WRONG]
    for trap, cases in LISTED_TRAPS.items():
        caught = [line for line in failing if any(case in line for case in cases)]
        assert len(caught) >= 2, (trap, caught)


def test_each_exercise_catches_at_least_two_wrong_answers_and_the_traps_are_explained():
    for name, exercise in exercises.EXERCISES.items():
        assert sum(w[0] == name for w in WRONG) >= 2, name
        assert len(exercise.traps) >= 3
        if name == "loss":  # the lesson's lines in train(), which the reference runs
            assert all(f"\n{n} = " in exercises.solution(name) for n in exercises.LOSS_NAMES), name
            continue
        shown = exercise.shown()
        keyword = "class" if isinstance(shown, type) else "def"
        assert f"{keyword} {shown.__name__}(" in exercises.solution(name)


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
    for bad in (["check", "nothing"], ["check"], ["train", "gae"], ["check", "gae", "--lesson"],
                ["train", "frame_stack", "--lesson"]):
        refused = run(*bad)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, bad
        assert "Traceback" not in refused.stderr
    assert "compute_gae is not written yet: nothing to train" in run("train", "gae").stderr
    assert "reinforce_loss is not written yet: nothing to train" in run("train", "reinforce").stderr
    assert "no train for frame_stack: its lesson, Breakout, learns in hours" in run("train", "frame_stack").stderr


@pytest.mark.parametrize("name, function", [("kl_reward", "per_token_rewards"), ("group_advantage",
                                                                               "group_advantages")])
def test_the_language_exercises_stub_and_solution(name, function):
    """The language lessons' exercises: the committed stub raises NotImplementedError, and check says in one line
    that it is not written (exit 1, no traceback); train refuses it in one line; solution shows the lesson's function
    and the traps."""
    with pytest.raises(NotImplementedError):
        exercises.EXERCISES[name].learner()(*(
            (torch.zeros(1), torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2), 0.1) if name == "kl_reward"
            else (torch.zeros(2), 2)))
    assert exercises.status(name) == "not started"
    stub = run("check", name)
    assert stub.returncode == 1 and stub.stdout.strip().splitlines() == [
        f"exercises/{name}.py: {function} is not written yet: write its body, then run this again"]
    assert "Traceback" not in stub.stderr + stub.stdout
    refused = run("train", name)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        f"python -m exercises: error: exercises/{name}.py: {function} is not written yet: nothing to train"]
    shown = run("solution", name)
    lesson = exercises.EXERCISES[name].lesson
    assert shown.returncode == 0 and shown.stdout.startswith(f"{lesson}'s {function}:\n\ndef {function}(")
    assert "The traps:" in shown.stdout


@pytest.mark.parametrize("name, function, method", [("lstm_state", "lstm_steps", "Agent.get_states"),
                                                    ("masked_distribution", "masked_log_pi_and_entropy",
                                                     "Agent.get_action_and_value")])
def test_the_memory_and_masking_exercises_stub_and_solution(name, function, method):
    """The memory and masking lessons' exercises: the committed stub raises NotImplementedError and check says so in
    one line (exit 1, no traceback); train refuses it in one line; solution shows the lesson's method that holds the
    code (the exercise's function is a part of it) and the traps."""
    args = ((torch.nn.LSTMCell(1, 1), torch.zeros(1, 1, 1), (torch.zeros(1, 1), torch.zeros(1, 1)), torch.zeros(1, 1))
            if name == "lstm_state" else (torch.zeros(3), torch.tensor([True, True, False])))
    with pytest.raises(NotImplementedError):
        exercises.EXERCISES[name].learner()(*args)
    assert exercises.status(name) == "not started"
    stub = run("check", name)
    assert stub.returncode == 1 and stub.stdout.strip().splitlines() == [
        f"exercises/{name}.py: {function} is not written yet: write its body, then run this again"]
    assert "Traceback" not in stub.stderr + stub.stdout
    refused = run("train", name)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        f"python -m exercises: error: exercises/{name}.py: {function} is not written yet: nothing to train"]
    shown = run("solution", name)
    lesson = exercises.EXERCISES[name].lesson
    assert shown.returncode == 0 and shown.stdout.startswith(f"{lesson}'s {method}:\n\n    def {method.split('.')[1]}(")
    assert "The traps:" in shown.stdout


def test_sb3_contribs_finite_mask_passes_the_masking_check():
    """-1e8 for an invalid logit, as sb3-contrib's MaskableCategorical writes it, gives probability exactly 0 (its exp
    underflows to 0) and finite gradients: a right answer, with the entropy summed by torch.where as sb3-contrib's is,
    or as the lesson's is."""
    for entropy in ("valid", "where"):
        report = exercises.check("masked_distribution", masked_distribution(how="-1e8", entropy=entropy))
        assert report[-1].endswith("all 9 cases pass"), report


def test_the_lstm_cases_by_hand_are_torchs_lstm_cell():
    """The cases' one-unit cell, worked out with its equations, is torch's LSTMCell with those weights, step by step."""
    cell = exercises._tiny_cell()
    for x, h, c in ((1.0, 0.5, -0.8), (1.0, 0.0, 0.0), (-0.5, 0.3, 0.9)):
        with torch.no_grad():
            h_, c_ = cell(torch.tensor([[x]]), (torch.tensor([[h]]), torch.tensor([[c]])))
        assert np.allclose(exercises._by_hand(x, h, c), (h_.item(), c_.item()), atol=1e-6)


def test_reinforces_trainer_refuses_bad_input_in_one_line():
    for bad in (["--updates", "0"], ["--seeds", "x"], ["--no-such-flag"]):
        refused = subprocess.run([sys.executable, "-m", "exercises.reinforce_cartpole", *bad], cwd=ROOT,
                                 capture_output=True, text=True)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, bad
        assert refused.stderr.startswith("python -m exercises.reinforce_cartpole: error: ") and not refused.stdout


def test_solution_shows_the_lessons_function_and_the_traps():
    shown = run("solution", "gae")
    assert shown.returncode == 0 and "def compute_gae(" in shown.stdout and "The traps:" in shown.stdout
    shown = run("solution", "reinforce")  # no lesson holds it: its own file's
    assert shown.stdout.startswith("exercises/reinforce_cartpole.py's reinforce_loss:\n\ndef reinforce_loss(")


# --- train ----------------------------------------------------------------------------------------------------------

def test_a_curves_score_by_hand():
    """20 bins of 10 steps over 200: episodes end in bins 0, 6 and 16; an empty bin holds the one before it."""
    episodes = [(0, 10.0), (60, 20.0), (160, 30.0), (165, 50.0)]
    assert train.curve_score(episodes, 200) == pytest.approx((6 * 10 + 10 * 20 + 4 * 40) / 20)
    assert train.curve_score([(250, 7.0)], 200) == 7.0  # past the end: the last bin


def test_the_verdict_by_hand():
    """The lessons: scores 100 and 120, finals 200 and 220 from 0: gain 210, margin 10.5, learning from 52.5."""
    lessons = train.Band(scores=[100.0, 120.0], finals=[200.0, 220.0], start=0.0, total_steps=1000)
    assert train.verdict(95.0, 210.0, lessons).startswith("within the lesson's band: your curve's score 95.0, "
                                                          "the lesson's 100.0 to 120.0 (mean 110.0) over its 2 seeds")
    assert train.verdict(130.0, 230.0, lessons).startswith("within")
    assert train.verdict(89.0, 210.0, lessons).startswith("slower than the lesson")
    assert train.verdict(89.0, 52.0, lessons).startswith("not learning")
    assert train.verdict(100.0, 52.0, lessons).startswith("not learning")  # a good start is not a learned end


@pytest.mark.parametrize("name", list(train.TRAININGS))
def test_each_band_is_the_records_runs(name):
    """Every exercise trains a recipe with a committed record: its seeds' curves, from a start below their end."""
    training = train.TRAININGS[name]
    lessons = train.record_band(training)
    assert len(lessons.scores) == len(lessons.finals) >= 3
    assert lessons.gain > 0 and min(lessons.scores) > lessons.start
    assert set(train.TRAININGS) | set(train.UNTRAINED) | set(train.OWN) == set(exercises.EXERCISES)


def test_train_reinforce_learns_with_the_solution_and_not_with_its_sign_flipped(monkeypatch, capsys):
    """`python -m exercises train reinforce --lesson` cut to 15 batches (about 15,000 steps, 3 to 4 seconds): the
    solution's loss is placed as learning (seed 1: from 18.1 to 55.0); with its sign flipped, in 5 batches, as not
    learning. The whole 30 batches, and pi for log pi: benchmarks/test_exercises_train.py."""
    import functools

    from exercises import __main__ as command
    from exercises import reinforce_cartpole

    short, report = reinforce_cartpole.Args(updates=15), reinforce_cartpole.report
    monkeypatch.setattr(reinforce_cartpole, "report", functools.partial(report, args=short))
    assert command.main(["train", "reinforce", "--lesson"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("python -m exercises.reinforce_cartpole --seeds 1 with its own function (about 5 seconds "
                      "on 2 CPU cores)")
    assert out[1].startswith("learning: your return (mean of 20 episodes) went from 18.1 to "), out

    def flipped(logprobs, rewards, dones, gamma):
        return -reinforce_cartpole.reinforce_loss(logprobs, rewards, dones, gamma)

    assert report(flipped, reinforce_cartpole.Args(updates=5))[-1].startswith("not learning")
    raised = report(lambda *args: (_ for _ in ()).throw(ValueError("mine")), short)
    assert raised == ["exercises/reinforce_cartpole.py stopped: your function raised ValueError: mine"]


def test_train_swaps_the_function_in_and_puts_the_lesson_back(tmp_path, monkeypatch):
    """A tiny CartPole run with the learner's compute_gae: the lesson calls it at every update, logs as usual, and
    has its own function back afterwards; the report places the run in a band."""
    import ppo_cartpole

    monkeypatch.chdir(tmp_path)
    calls, own = [], ppo_cartpole.compute_gae

    def learners_gae(*args):
        calls.append(1)
        return own(*args)

    lessons = train.Band(scores=[1e9, 1e9], finals=[2e9, 2e9], start=0.0, total_steps=2048)
    report = train.train("gae", learners_gae, ("--total-timesteps", "2048", "--num-steps", "512"), lessons)
    assert len(calls) == 4 and ppo_cartpole.compute_gae is own
    assert report[0].startswith("your run: runs/CartPole-v1__exercise-gae-") and "not learning" in report[2]
    import ppo_pendulum_continuous

    own_method = ppo_pendulum_continuous.Agent.get_action_and_value
    report = train.train("gaussian", lambda mean, log_std, action: (_ for _ in ()).throw(ValueError("mine")),
                         ("--total-timesteps", "2048"), lessons)
    assert report == ["ppo_pendulum_continuous.py stopped: your function raised ValueError: mine"]
    assert ppo_pendulum_continuous.Agent.get_action_and_value is own_method


LANGUAGE_TINY = ("--pretrain-steps", "30", "--reward-pairs", "64", "--reward-epochs", "1", "--num-envs", "8",
                 "--minibatch-size", "4", "--eval-episodes", "8", "--d-model", "16", "--n-heads", "2",
                 "--total-timesteps", str(3 * 8 * 12))


def test_train_swaps_the_language_lessons_functions_in_and_places_the_hidden_score(tmp_path, monkeypatch):
    """A tiny run of each language lesson (3 rollouts of 8 responses): the learner's per_token_rewards is called at
    every update and the lesson has its own back afterwards; the run is placed by its hidden score; a learner's
    group_advantages that raises is one line, and the lesson's own comes back."""
    import grpo_rlhf_tiny
    import ppo_rlhf_tiny

    monkeypatch.chdir(tmp_path)
    calls, own = [], ppo_rlhf_tiny.per_token_rewards

    def learners_rewards(*args):
        calls.append(1)
        return own(*args)

    lessons = train.Band(scores=[1e9, 1e9], finals=[2e9, 2e9], start=0.0, total_steps=3 * 8 * 12)
    report = train.train("kl_reward", learners_rewards, LANGUAGE_TINY, lessons)
    assert len(calls) == 3 and ppo_rlhf_tiny.per_token_rewards is own
    assert report[0].startswith("your run: runs/TinyReviews-v0__exercise-kl_reward-")
    assert report[2].startswith("not learning: ") and "your final hidden score " in report[2]
    own = grpo_rlhf_tiny.group_advantages
    report = train.train("group_advantage", lambda scores, size: (_ for _ in ()).throw(ValueError("mine")),
                         LANGUAGE_TINY, lessons)
    assert report == ["grpo_rlhf_tiny.py stopped: your function raised ValueError: mine"]
    assert grpo_rlhf_tiny.group_advantages is own


@pytest.mark.parametrize("name, setting", [("kl_reward", "ppo"), ("group_advantage", "grpo")])
def test_a_language_band_is_the_records_hidden_scores_by_hand(name, setting, tmp_path, monkeypatch):
    """The language lessons' band, read from a record in benchmarks.language's form: each seed's rollouts of the
    setting (another setting's rows left out), its final value and its start the mean of 3 rollouts."""
    training = train.TRAININGS[name]
    assert (training.record, training.setting, training.tag) == ("language/curves", setting, "objective/hidden_score")
    (tmp_path / "language").mkdir()
    lines = ["setting,seed,step,hidden_score"] + [
        f"{s},{seed},{step * 10},{value}" for s in (setting, "other") for seed, values in ((1, range(6)), (2, [3] * 6))
        for step, value in enumerate(values, start=1)]
    (tmp_path / "language" / "curves.csv").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(train, "RESULTS", tmp_path)
    lessons = train.band(training.record, training.setting, training.window)
    assert training.window == 3 and lessons.total_steps == 60
    assert lessons.finals == [4.0, 3.0] and lessons.start == pytest.approx((0 + 1 + 2 + 3 * 3) / 6)
    assert lessons.scores == [train.curve_score([(10 * k, k - 1) for k in range(1, 7)], 60), 3.0]


def test_train_swaps_the_lstm_loop_and_the_masked_policy_in_and_puts_the_lessons_back(tmp_path, monkeypatch):
    """A tiny run of the memory lesson with the learner's lstm_steps (the lesson's own loop, passed through): the
    lesson's get_states calls it on every rollout step and in every replay, and has its own back afterwards; a tiny
    run of the masking lesson with a learner's masked_log_pi_and_entropy that raises is one line, and the lesson's
    get_action_and_value comes back."""
    import ppo_action_masking
    import ppo_lstm_memory

    monkeypatch.chdir(tmp_path)
    calls, reference = [], exercises.EXERCISES["lstm_state"].reference()

    def learners_loop(*args):
        calls.append(1)
        return reference(*args)

    own = ppo_lstm_memory.Agent.get_states
    lessons = train.Band(scores=[1e9, 1e9], finals=[2e9, 2e9], start=0.0, total_steps=128)
    report = train.train("lstm_state", learners_loop, ("--total-timesteps", "128", "--num-envs", "4", "--num-steps",
                                                        "16", "--minibatch-size", "32", "--update-epochs", "1",
                                                        "--hidden-size", "8", "--eval-every", "0"), lessons)
    # 2 updates: 16 rollout steps and the value of the last observation each (plus any truncation's), and the
    # replay of 2 minibatches in 1 epoch
    assert len(calls) >= 2 * (16 + 1 + 2) and ppo_lstm_memory.Agent.get_states is own
    assert report[0].startswith("your run: runs/CartPoleNoVel-v1__exercise-lstm_state-"), report
    assert report[1] == "the lesson's runs: benchmarks/results/memory/lstm-curves.csv"
    own = ppo_action_masking.Agent.get_action_and_value
    report = train.train("masked_distribution", lambda logits, mask: (_ for _ in ()).throw(ValueError("mine")),
                         ("--total-timesteps", "128", "--num-steps", "64", "--minibatch-size", "32"), lessons)
    assert report == ["ppo_action_masking.py stopped: your function raised ValueError: mine"]
    assert ppo_action_masking.Agent.get_action_and_value is own


def test_the_masking_band_bins_the_learners_games_as_the_record_does(tmp_path, monkeypatch):
    """The masking lesson's band, from a record in benchmarks.masking's form (one row per bin of 2048 steps, the
    games' mean return), its final value and start the mean of 3 bins; a learner's games binned by the same rule
    (benchmarks.core.stats.binned_means: a game ending at step s in bin (s - 1) // 2048)."""
    training = train.TRAININGS["masked_distribution"]
    assert (training.record, training.setting, training.column, training.bin, training.window) == (
        "masking/curves", "mask", "return", 2048, 3)
    (tmp_path / "masking").mkdir()
    lines = ["setting,seed,step,return,invalid_rate"] + [
        f"{s},{seed},{2048 * k},{value},0.0" for s in ("mask", "no-mask-lose") for seed, values in
        ((1, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]), (2, [0.5] * 6)) for k, value in enumerate(values, start=1)]
    (tmp_path / "masking" / "curves.csv").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(train, "RESULTS", tmp_path)
    lessons = train.record_band(training)
    assert lessons.total_steps == 6 * 2048 and lessons.finals == pytest.approx([0.8, 0.5])
    assert lessons.start == pytest.approx((0.0 + 0.2 + 0.4 + 3 * 0.5) / 6)
    games = [(1, 1.0), (2048, -1.0), (2049, 1.0), (4100, 0.0), (4100, 1.0)]
    assert train.binned(games, 2048) == [(2048, 0.0), (4096, 1.0), (6144, 0.5)]


def test_the_memory_band_is_the_lessons_whole_budget():
    """lstm_state trains the memory lesson at its defaults and is placed against benchmarks.memory's LSTM runs, whose
    budget is the lesson's 500,000 steps (the record's runs.csv holds no total_steps of its own)."""
    import benchmarks.memory
    import ppo_lstm_memory

    training = train.TRAININGS["lstm_state"]
    assert training.flags == () and training.record == "memory/lstm"
    assert training.total_steps == ppo_lstm_memory.Hyperparameters().total_timesteps == benchmarks.memory.TOTAL_STEPS
    assert benchmarks.memory.SETTINGS["lstm"] == []


def test_the_exercises_readme_lists_every_exercise_after_its_lesson():
    """exercises/README.md's table: every exercise, in the list's order, with its lesson and whether it trains."""
    rows = [line.split(" | ") for line in (ROOT / "exercises" / "README.md").read_text().splitlines()
            if line.startswith("| `")]
    assert [row[0].strip("| `") for row in rows] == list(exercises.EXERCISES)
    for row in rows:
        name = row[0].strip("| `")
        assert row[2] == f"`{exercises.EXERCISES[name].lesson}`"
        assert row[3].startswith("no:") == (name in train.UNTRAINED), row


# --- silent bugs ----------------------------------------------------------------------------------------------------

NUMBERS = range(1, len(bugs.BUGS) + 1)
TINY = {"ppo_cartpole.py": ("--total-timesteps", "1024", "--num-steps", "256"),
        "ppo_lunarlander_vec.py": ("--total-timesteps", "512", "--num-envs", "2", "--num-steps", "128",
                                   "--minibatch-size", "64", "--eval-episodes", "1"),
        "ppo_pendulum_continuous.py": ("--total-timesteps", "512", "--num-envs", "2", "--num-steps", "128",
                                       "--eval-episodes", "1")}


@pytest.mark.parametrize("number", NUMBERS)
def test_each_bug_is_one_edit_of_its_lesson_that_compiles(number):
    """The bug's text is in its lesson exactly once; planted, the lesson compiles, and the answer's diff is one
    hunk, whose lines out are the text's and whose lines in are the bug's."""
    bug = bugs.BUGS[number - 1]
    assert (ROOT / bug.recipe.lesson).read_text().count(bug.old) == 1
    compile(bugs.planted_source(bug), bug.recipe.lesson, "exec")
    diff = bugs.diff(bug).splitlines()
    assert sum(line.startswith("@@ ") for line in diff) == 1
    removed = "\n".join(line[1:] for line in diff if line.startswith("-") and not line.startswith("---"))
    added = "\n".join(line[1:] for line in diff if line.startswith("+") and not line.startswith("+++"))
    assert removed.strip() in bug.old and added.strip() and added.strip() in bug.new
    assert bug.tag in bugs.TAGS and bug.reported.startswith("https://github.com/")


def test_a_bug_whose_text_the_lesson_no_longer_holds_is_refused():
    import dataclasses

    moved = dataclasses.replace(bugs.BUGS[0], old="logratio = newlogprob - b_logprobs[mb]  # not there")
    with pytest.raises(ValueError, match="not once"):
        bugs.planted_source(moved)


@pytest.mark.parametrize("number", [1, 4, 7])
def test_a_planted_lesson_trains_and_the_lesson_comes_back(number, tmp_path, monkeypatch):
    """A tiny run of a bug in each lesson: it trains and logs as the lesson does, and the lesson's module is back
    in sys.modules afterwards. Bug 1 shows its giveaway even here: clipfrac and approx_kl 0 at every update."""
    bug = bugs.BUGS[number - 1]
    lesson = launch.import_lesson(bug.recipe.lesson)
    monkeypatch.chdir(tmp_path)
    run_dir = bugs.train(number, TINY[bug.recipe.lesson])
    assert sys.modules[lesson.__name__] is lesson
    found = bugs.medians(run_dir)
    assert set(bugs.TAGS) <= set(found)
    lines = bugs.comparison(run_dir, bug.recipe)  # what `bug N` prints after the run
    assert len(lines) == 1 + len(bugs.TAGS) and all(tag in line for tag, line in zip(bugs.TAGS, lines[1:]))
    assert all(line.endswith(" seeds") for line in lines[1:])
    if number == 1:
        scalars = read_scalars(run_dir)[0]
        assert {e.value for tag in ("losses/clipfrac", "losses/approx_kl") for e in scalars[tag]} == {0.0}


def test_an_edited_lesson_reads_its_own_source_and_the_lesson_comes_back(capsys):
    """--help's text comes from Args's source (common.cli.one_line_help, through inspect.getsource): the edited run
    reads the edited text, even where the edit moved Args down (Python 3.13 finds a class by its line number), and
    linecache holds the lesson's own text afterwards."""
    import inspect
    import linecache

    lesson = launch.import_lesson("ppo_cartpole.py")
    source = (ROOT / "ppo_cartpole.py").read_text()
    old = '"""the Adam step size at the start of training'
    assert source.count(old) == 1
    edited = "# one\n# two\n# three\n" + source.replace(old, '"""an edited help line for the step size')
    assert bugs.run_edited("ppo_cartpole.py", edited, ["--help"]) == 0
    assert "an edited help line for the step size" in " ".join(capsys.readouterr().out.split())
    assert linecache.getlines(lesson.__file__) == source.splitlines(keepends=True)
    assert old in inspect.getsource(lesson.Hyperparameters)


def test_the_bugs_command_lists_answers_and_refuses():
    listed = run("bug")
    assert listed.returncode == 0 and f"bug {len(bugs.BUGS)}: python ppo_" in listed.stdout
    assert "clipfrac" not in listed.stdout  # the list gives nothing away
    shown = run("bug", "1", "--answer")
    assert shown.returncode == 0 and "+                logratio = newlogprob - newlogprob.detach()" in shown.stdout
    assert "This mistake, made in public: https://github.com/" in shown.stdout
    assert run("bug", "--answer", "1").stdout == shown.stdout  # the spelling, bug --answer N, too
    for bad in (["bug", "0"], ["bug", str(len(bugs.BUGS) + 1)], ["bug", "one"], ["bug", "--answer"],
                ["check", "gae", "--answer"]):
        refused = run(*bad)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, bad


@pytest.mark.parametrize("number", NUMBERS)
def test_each_bugs_recorded_run_shows_its_giveaway(number):
    """The committed run of each bug (python -m exercises.bugs --record): the diagnostic its answer names lies
    outside the healthy runs' range (the medians of each healthy seed's updates), and its figure is there."""
    bug = bugs.BUGS[number - 1]
    found = bugs.recorded(number)[bug.tag]
    normal = bugs.healthy_medians(bug.recipe)[bug.tag]
    assert len(normal) >= 3 and not min(normal) <= found <= max(normal), (found, normal)
    assert (bugs.RECORD / f"bug-{number}.png").stat().st_size > 10_000


def test_the_loss_reference_runs_the_lessons_own_lines():
    """The combined loss's reference is ppo_cartpole.train's statements, one for each name, in the order they run;
    train's edit of the lesson's loss line finds it once."""
    statements = exercises.loss_statements()
    assert [s.targets[0].id for s in statements] == list(exercises.LOSS_NAMES)
    assert "learners_ppo_loss(" in train.edited_source("loss")


def test_train_edits_the_lessons_loss_line_to_call_the_learners(tmp_path, monkeypatch):
    """The combined loss is inline in the lesson: train runs the lesson with its loss line calling the learner's
    ppo_loss, at every minibatch, and the lesson's module comes back."""
    import ppo_cartpole

    monkeypatch.chdir(tmp_path)
    calls, reference = [], exercises.EXERCISES["loss"].reference()

    def learners_loss(*args):
        calls.append(1)
        return reference(*args)

    lessons = train.Band(scores=[1e9, 1e9], finals=[2e9, 2e9], start=0.0, total_steps=1024)
    report = train.train("loss", learners_loss, ("--total-timesteps", "1024", "--num-steps", "512"), lessons)
    assert len(calls) == 2 * 10 * (512 // 128) and report[0].startswith("your run: runs/CartPole-v1__exercise-loss-")
    assert sys.modules["ppo_cartpole"] is ppo_cartpole
