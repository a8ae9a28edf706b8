"""The mutation check: does the test suite notice when the training loop is broken? Each mutation below is a small,
meaningful break (a flipped sign, a dropped mask, a deleted restore, min and max swapped, an off-by-one index). It
is applied to every script that holds the code it changes (every copy at once, so the check that the copies
read the same cannot be what catches it), in a scratch copy of the repository, never in the working tree; then
the tests that should catch it run there. A mutation they let through is a survivor: a part of the behaviour
that can be deleted with every test still passing.

    python -m tests.mutations                 # every mutation; exit status 1 if any survives
    python -m tests.mutations --list          # the mutations and the tests each one runs
    python -m tests.mutations NAME [NAME ...] # only these (names as --list prints them)
    python -m tests.mutations --every-failure # no -x: name every test that fails, so every copy's catch shows

It runs the selected tests once unmutated first (they must pass, or no result means anything), then once per
mutation with pytest -x. Not part of the CI run (pytest does not collect this file: its name does not start with
test_): it takes several minutes. CONTRIBUTING.md ("The mutation check") has its last result.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WHOLE = "tests/test_whole_runs.py::"
CORE = "tests/test_shared_core.py::"
RESUME = [WHOLE + "test_a_stopped_and_resumed_run_ends_as_the_run_that_never_stopped"]
EVALUATION = [WHOLE + "test_evaluating_leaves_training_unchanged"]
ROLLOUT = [CORE + "test_rollout_episode_ends_by_hand", "tests/test_rollouts.py",
           "tests/test_cartpole.py::test_rollout_terminal_and_truncated_episodes"]


@dataclass
class Mutation:
    name: str
    what: str
    edits: list[tuple[str, str]]  # (text, replacement): each applied wherever the text occurs in a ppo_*.py
    tests: list[str]  # pytest node ids (a test function without parameters selects all of them)
    after: list[str] = field(default_factory=list)  # a `python` command to run in the scratch copy once mutated
    files: str = "ppo_*.py grpo_*.py"  # the files the edits apply to (globs from the root, space-separated): every
    # lesson's copy by default (grpo_rlhf_tiny.py's are ppo_rlhf_tiny.py's), render/'s files for the site's

    def paths(self, root: Path) -> list[Path]:
        """The files under `root` that `files` names, in order."""
        return sorted(path for pattern in self.files.split() for path in root.glob(pattern))


MUTATIONS = [
    Mutation("gae-mask-dropped", "GAE: the (1 - done) mask dropped, advantages flow back across episode ends",
             [("last_gae = delta + gamma * gae_lambda * (1.0 - dones[t]) * last_gae",
               "last_gae = delta + gamma * gae_lambda * last_gae")], [CORE + "test_gae_by_hand"]),
    Mutation("gae-bootstrap-off-by-one", "GAE: delta_t bootstraps from V(s_t) (next_values[t - 1]), not V(s_{t+1})",
             [("delta = rewards[t] + gamma * next_values[t] - values[t]",
               "delta = rewards[t] + gamma * next_values[t - 1] - values[t]")], [CORE + "test_gae_by_hand"]),
    Mutation("gae-sign-flipped", "GAE: delta_t = r_t - gamma V(s_{t+1}) - V(s_t) (the bootstrap's sign flipped)",
             [("delta = rewards[t] + gamma * next_values[t] - values[t]",
               "delta = rewards[t] - gamma * next_values[t] - values[t]")], [CORE + "test_gae_by_hand"]),
    Mutation("gae-final-value-ignored", "GAE: V(s_{t+1}) = 0 at every episode end, truncations too",
             [("np.where(dones == 1, final_values, ", "np.where(dones == 1, 0.0, ")], [CORE + "test_gae_by_hand"]),
    Mutation("surrogate-min-max-swapped", "L^CLIP: max instead of min (an optimistic bound)",
             [("return -torch.min(unclipped, clipped).mean()", "return -torch.max(unclipped, clipped).mean()")],
             [CORE + "test_clipped_surrogate_by_hand"]),
    Mutation("surrogate-sign-flipped", "L^CLIP: the loss is +L^CLIP (gradient descent on the objective)",
             [("return -torch.min(unclipped, clipped).mean()", "return torch.min(unclipped, clipped).mean()")],
             [CORE + "test_clipped_surrogate_by_hand"]),
    Mutation("value-clip-without-old", "clipped value loss: V_clip = clip(V - V_old) without + V_old (survived "
             "tests/test_lunarlander.py's old values of 0)",
             [("clipped = oldvalue + torch.clamp(newvalue - oldvalue", "clipped = torch.clamp(newvalue - oldvalue")],
             [CORE + "test_clipped_value_loss_by_hand"]),
    Mutation("value-clip-min-max-swapped", "clipped value loss: min instead of max",
             [("return 0.5 * torch.max((newvalue - returns) ** 2", "return 0.5 * torch.min((newvalue - returns) ** 2")],
             [CORE + "test_clipped_value_loss_by_hand"]),
    Mutation("rollout-truncation-not-done", "rollout: a truncated step is not an episode end (done = terminated)",
             [("rollout.dones[step] = terminated | truncated", "rollout.dones[step] = terminated"),
              ("rollout.dones[step] = terminated or truncated", "rollout.dones[step] = terminated")], ROLLOUT),
    Mutation("rollout-termination-bootstrapped", "rollout: a step both terminated and truncated is bootstrapped",
             [("bootstrap = truncated & ~terminated", "bootstrap = truncated"),
              ("if truncated and not terminated:", "if truncated:")], ROLLOUT),
    Mutation("rollout-truncation-not-bootstrapped", "rollout: V(final obs) never computed, truncations get V = 0",
             [("bootstrap = truncated & ~terminated", "bootstrap = truncated & False"),
              ("if truncated and not terminated:", "if False:")], ROLLOUT),
    Mutation("resume-optimizer-deleted", "resume: the optimizer state not restored (survived the e2e tests)",
             [('optimizer.load_state_dict(ckpt["optimizer"])', "pass"),
              ('optimizers.load_state_dict(ckpt["optimizers"])', "pass")], RESUME),
    Mutation("resume-weights-deleted", "resume: the weights not restored (survived the e2e tests but Pendulum's)",
             [("restore_agent(agent, ckpt, args.resume)", "pass")], RESUME),
    Mutation("resume-rng-deleted", "resume: the random states not restored (survived the e2e tests)",
             [('restore_rng(ckpt["rng"], device)', "pass"), ('restore_rng(ckpt["rng"][rank], device)', "pass")],
             RESUME),
    Mutation("resume-reward-statistics-deleted", "resume: Pendulum's reward statistics not restored",
             [("module.load_state_dict(self.ckpt[name])", "pass")], RESUME),
    Mutation("resume-beta-deleted", "resume: Pendulum's beta not restored (starts again from --kl-beta-init)",
             [('run.state("kl_beta", args.kl_beta_init)', "args.kl_beta_init")], RESUME),
    Mutation("ctrl-c-not-saved", "Ctrl-C: the MLP scripts stop without saving the update they finished",
             [("if stop or iteration == self.args.num_iterations", "if iteration == self.args.num_iterations")],
             RESUME),
    Mutation("stopper-snapshot-not-copied", "Ctrl-C: the pixel scripts' snapshot of the last complete update holds "
             "the live weights and optimizer state, which the abandoned update goes on changing",
             [('"agent": copy.deepcopy(agent.state_dict()),', '"agent": agent.state_dict(),'),
              ('"optimizer": copy.deepcopy(optimizer.state_dict()),', '"optimizer": optimizer.state_dict(),'),
              ('"optimizers": copy.deepcopy(optimizers.state_dict()),', '"optimizers": optimizers.state_dict(),')],
             RESUME),
    Mutation("beta-never-adapted", "Pendulum: the adapt_kl_beta call deleted from train (survived: the old "
             "check accepted a ratio of 1)",
             [("kl_beta = adapt_kl_beta(kl_beta, kl_divergence, args.kl_target)", "pass")],
             [WHOLE + "test_pendulum_beta_is_halved_and_doubled_by_train_and_restored_on_resume"]),
    Mutation("evaluation-rng-not-forked", "Breakout, Mario: evaluate samples from (and reseeds) the training "
             "generator: the fork_rng block deleted (survived: no same-seed run evaluated)",
             [('with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):', "if True:")],
             EVALUATION),
    Mutation("evaluation-samples", "LunarLander, Pendulum (and CartPole's play): evaluate samples from pi instead "
             "of taking the greedy action, drawing from the training generator",
             [("agent.get_action_and_value(torch.as_tensor(obs, device=device), greedy=True)",
               "agent.get_action_and_value(torch.as_tensor(obs, device=device))")], EVALUATION),
    Mutation("resume-orphans-shown", "resume: the resumed run's writer opens without purge_step, and TensorBoard "
             "shows what the stopped process logged past the checkpoint beside what the resumed one logs",
             [("purge_step=global_step + 1 if args.resume else None", "purge_step=None")],
             [WHOLE + "test_a_resumed_runs_folder_reads_as_the_run_that_never_stopped"]),
    Mutation("record-orphans-kept", "runs.read_processes: an earlier process's events past the step the next "
             "resumed from are kept (the record counts episodes that are not in the run's history)",
             [('[event for event in events if event.step <= process["resumed_from"]]', "list(events)")],
             ["tests/test_benchmark.py::test_a_resumed_run_reads_as_its_history",
              "tests/test_mario_record.py::test_a_resumed_run_without_what_the_stopped_process_gave_up"],
             files="benchmarks/core/runs.py"),
    Mutation("checkpoint-not-atomic", "checkpoints: a plain torch.save to the checkpoint's own name (survived: "
             "'no .tmp left' holds for it)",
             [('torch.save(state, path + ".tmp")\n    os.replace(path + ".tmp", path)', "torch.save(state, path)")],
             ["tests/test_checkpoints.py"]),
    Mutation("details-map-links-a-comment", "a comment that mentions a detail's needle above its code, and the map "
             "rewritten (survived: the old test holds by construction)",
             [("# Adam's eps 1e-5, not 1e-8", "# Adam's eps=1e-5, not 1e-8")],
             ["tests/test_details_map.py"], after=["-m", "tools.details_map", "--write"]),
    Mutation("ablation-verdict-sign", "the ablation studies' verdict: an effect below the default called better on a "
             "score where higher is better (the sides swapped)",
             [("effect > 0 if higher_is_better else effect < 0", "effect < 0 if higher_is_better else effect > 0")],
             ["tests/test_ablations.py::test_the_verdicts_sides_on_each_kind_of_score"],
             files="benchmarks/core/inference.py"),
    Mutation("ablation-family-size-1", "the ablation studies' correction: each setting tested at 5% alone, as if its "
             "family held one comparison (Holm's ALPHA / (m - k) made ALPHA)",
             [("stopped = stopped or pvalues[i] > ALPHA / (m - k)", "stopped = stopped or pvalues[i] > ALPHA")],
             ["tests/test_inference.py::test_the_aa_check_holds_the_family_wise_error"],
             files="benchmarks/core/inference.py"),
    Mutation("ablation-acted-counts-zeros", "the ablation studies' acts check: an update whose check logged 0 counted "
             "as one where the change acted (so an inert change would never be named as such)",
             [("sum(1 for v in values if v > 0)", "sum(1 for v in values if v >= 0)")],
             ["tests/test_ablations.py::test_acted_counts_the_updates_where_the_logged_check_was_above_0"],
             files="benchmarks/ablations.py"),
    Mutation("ablation-effects-unrounded", "the ablation studies' effects formatted in the table unrounded, while the "
             "map and the lessons' Try this read them from effects.csv's 3 decimals (one interval, two figures)",
             [("rounded = lambda x: None if x is None else round(x, DECIMALS)  # noqa: E731",
               "rounded = lambda x: x  # noqa: E731")],
             ["tests/test_ablations.py::test_an_interval_end_on_a_rounding_edge_prints_as_the_csv_gives_it"],
             files="benchmarks/ablations.py"),
    Mutation("ablation-patch-keeps-bootstrap", "the no-bootstrap patch passes the truncated episodes' V(final obs) on",
             [("original(rewards, values, dones, np.zeros_like(final_values), last_value, gamma, gae_lambda)",
               "original(rewards, values, dones, final_values, last_value, gamma, gae_lambda)")],
             ["tests/test_ablations.py::test_no_bootstrap_gives_the_advantages_of_a_termination"],
             files="benchmarks/patches.py"),
    Mutation("annealing-off-by-one", "annealing: alpha_i = 1 - i / N instead of 1 - (i - 1) / N",
             [('return self.schedule["scale"] * (1.0 - (iteration - 1) / self.schedule["num_iterations"])',
               'return self.schedule["scale"] * (1.0 - iteration / self.schedule["num_iterations"])')],
             ["tests/test_cartpole.py::test_train_resume_play"]),
    Mutation("resumed-annealing-drops", "a run resumed with a larger --total-timesteps: the scale set to alpha's "
             "last value, so alpha drops at the resume instead of going on from it",
             [("last * num_iterations / (num_iterations - iteration)", "last")],
             [CORE + "test_annealing_fresh_and_resumed"]),
    Mutation("gradients-summed-over-ranks", "torchrun: the ranks' gradients summed, not averaged",
             [("flat = all_ranks_mean(torch.cat([grad.reshape(-1) for grad in grads]), args)",
               "flat = torch.cat([grad.reshape(-1) for grad in grads])\n    dist.all_reduce(flat)")],
             ["tests/test_distributed.py::test_gradients_of_every_parameter_are_averaged_in_one_all_reduce"]),
    Mutation("ranks-leave-before-rank-0-saved", "torchrun: end_of_run's barrier dropped, the other ranks leave while "
             "rank 0 writes its last checkpoint, and torchrun's SIGTERM cuts the save short when the Ctrl-C reached "
             "one worker only",
             [("dist.barrier()  # (rank 0 comes once its last checkpoint is written",
               "pass  # (rank 0 comes once its last checkpoint is written")],
             ["tests/test_torchrun_faults.py::test_rank_0s_last_checkpoint_outlasts_a_ctrl_c_that_reached_one_worker"]),
    Mutation("rng-restore-forgets-numpy", "restore_rng does not put NumPy's generator back",
             [("np.random.set_state((np_state[0], np.array(np_state[1], dtype=np.uint32), *np_state[2:]))", "pass")],
             [CORE + "test_rng_states_round_trip"]),
    Mutation("entropy-bonus-sign-flipped", "the loss: + c2 S instead of - c2 S, the entropy penalized (the suite's "
             "only check of that sign: the fingerprint, whose values it moves by 4 times their tolerance)",
             [("- args.ent_coef * entropy_loss", "+ args.ent_coef * entropy_loss")],
             ["tests/test_fingerprint.py::test_every_script_logs_what_its_fingerprint_recorded"]),
    Mutation("flag-target-never-ends-the-run", "Mario: --target-flag-rate read but the run goes on to "
             "--total-timesteps", [("last = last or all_ranks_mean(", "_ = last or all_ranks_mean(")],
             ["tests/test_mario.py::test_target_flag_rate_ends_the_run_after_the_evaluation_that_reaches_it"]),
    Mutation("flag-target-strict", "Mario: the run ends only past --target-flag-rate, not at it",
             [("flag_rate >= args.target_flag_rate", "flag_rate > args.target_flag_rate")],
             ["tests/test_mario.py::test_target_flag_rate_ends_the_run_after_the_evaluation_that_reaches_it"]),
    # The lessons' site (render/): what its tests promise a reader.
    Mutation("site-note-line-dropped", "lesson page: the first line of every run of comments left out of its note",
             [("render_markdown(_comment_markdown([lesson.lines[m - 1] for m in run]))",
               "render_markdown(_comment_markdown([lesson.lines[m - 1] for m in run][1:]))")],
             ["tests/test_site.py::test_every_line_once_and_in_order"], files="render/lesson.py"),
    Mutation("site-code-citations-untypeset", "lesson page: equations cited in code lines (trailing comments, help "
             "texts) get no box", [("for n in row.note + row.code)", "for n in row.note)")],
             ["tests/test_site.py::test_each_cited_equation_is_typeset_beside_its_line",
              "tests/test_site_equation_homes.py::"
              "test_an_equation_no_prose_cites_is_typeset_beside_its_first_code_line"],
             files="render/lesson.py"),
    Mutation("site-copies-unfolded", "lesson page: copied blocks shown at full length, not folded",
             [("copies = [c for c in lesson.copies if first <= c.first <= last]", "copies = []")],
             ["tests/test_site.py::test_a_folded_block_holds_exactly_its_copied_lines"], files="render/lesson.py"),
    Mutation("diff-prose-counted-as-code", "diff page: every hunk a code change, none prose-only",
             [("hunk.prose_only = _code_equal(a_nums, b_nums, code_a, code_b)", "hunk.prose_only = False"),
              ("piece.prose_only = hunk.prose_only or _code_equal(", "piece.prose_only = False and _code_equal(")],
             ["tests/test_site_diffs.py"], files="render/diffs.py"),
    Mutation("diff-switch-inert", "diff page: the switch hides nothing (its CSS rule aims at no element)",
             [("input.hide-prose:checked ~ .diff .prose-only", "input.hide-prose:checked ~ .nothing .prose-only")],
             ["tests/test_site_browser.py::test_the_switch_hides_prose_only_hunks_until_asked"],
             files="render/static/diff.css"),
    Mutation("exercise-band-margin-flipped", "exercises train: the band's margin added above the lowest seed, not "
             "taken below it", [("if score >= low - MARGIN * abs(lessons.gain):",
                                 "if score >= low + MARGIN * abs(lessons.gain):")],
             ["tests/test_exercises.py::test_the_verdict_by_hand"], files="exercises/train.py"),
    Mutation("exercise-curve-gap-zero", "exercises train: a bin no episode ended in counts as a return of 0",
             [("last = sums[k] / counts[k] if counts[k] else last",
               "last = sums[k] / counts[k] if counts[k] else 0.0")],
             ["tests/test_exercises.py::test_a_curves_score_by_hand"], files="exercises/train.py"),
    Mutation("exercise-language-band-every-setting", "exercises train: a language lesson's band read from every "
             "setting of the record (PPO's placed among GRPO's runs and those with no KL penalty too)",
             [('rows = [row for row in rows if row["setting"] == setting]', "rows = list(rows)")],
             ["tests/test_exercises.py::test_a_language_band_is_the_records_hidden_scores_by_hand"],
             files="exercises/train.py"),
    Mutation("bug-planted-wherever", "exercises bug: a bug planted though its text is not in the lesson (a silent "
             "no-op: the lesson trains unchanged)",
             [("if source.count(bug.old) != 1:", "if source.count(bug.old) > 1:")],
             ["tests/test_exercises.py::test_a_bug_whose_text_the_lesson_no_longer_holds_is_refused"],
             files="exercises/bugs.py"),
    Mutation("exercise-check-goes-on", "exercises check: a failing case reported and the next cases run on, the "
             "report ending as if all passed", [("            return lines + [f\"case {k} of {len(CASES[name])} fails: "
                                                 "{case.name}\", f\"  {failed}\",",
                                                 "            lines += [f\"case {k} of {len(CASES[name])} fails: "
                                                 "{case.name}\", f\"  {failed}\",")],
             ["tests/test_exercises.py::test_a_typical_wrong_answer_fails_the_case_built_for_it"],
             files="exercises/__init__.py"),
    Mutation("reinforce-returns-not-cut", "REINFORCE's solution: G_t summed on across episode ends, the batch's "
             "later episodes credited to the earlier ones",
             [("following = rewards[t] + gamma * following * (1.0 - dones[t])",
               "following = rewards[t] + gamma * following")],
             ["tests/test_exercises.py::test_every_check_passes_on_the_lessons_own_function"],
             files="exercises/reinforce_cartpole.py"),
    Mutation("diagnose-limits-loosest", "diagnose: a median judged against the looser of the band and the widened "
             "medians' range, not the tighter",
             [("return max(self.band[0], widened[0]), min(self.band[1], widened[1])",
               "return min(self.band[0], widened[0]), max(self.band[1], widened[1])")],
             ["tests/test_debugging.py::test_the_limits_are_the_widened_medians_narrowed_to_the_band_for_few_seeds"],
             files="course/diagnose.py"),
    Mutation("diagnose-kl-widened-linearly", "diagnose: approx_kl and the value loss widened on a linear scale",
             [('LOG_SCALE = {"losses/approx_kl", "losses/value_loss"}', "LOG_SCALE = set()")],
             ["tests/test_debugging.py::test_the_limits_are_the_widened_medians_narrowed_to_the_band_for_few_seeds"],
             files="course/diagnose.py"),
    Mutation("diagnose-flat-return-inverted", "diagnose: a return that gained more than a quarter of the healthy "
             "gain called flat", [("final - first < FLAT * healthy_gain", "final - first > FLAT * healthy_gain")],
             ["tests/test_debugging.py::test_the_return_flat_collapsed_or_learning"], files="course/diagnose.py"),
    Mutation("diagnose-since-the-last-step", "diagnose: \"out from step\" names where the last window started, "
             "not the first", [("        if outside and first is None:", "        if outside:")],
             ["tests/test_debugging.py::test_since_is_when_the_rolling_median_first_left_and_whether_it_came_back"],
             files="course/diagnose.py"),
    Mutation("rlhf-score-on-the-last-slot", "ppo_rlhf_tiny: R's score added on the response's last slot (padding "
             "included), not its last real token", [("rewards[torch.arange(len(scores)), mask.sum(1).long() - 1] += scores",
                                                     "rewards[:, -1] += scores")],
             ["tests/test_language.py::test_the_per_token_reward_on_a_three_token_response_by_hand"],
             files="ppo_rlhf_tiny.py"),
    Mutation("rlhf-kl-sign-flipped", "ppo_rlhf_tiny: the per-token reward pays for moving toward pi_ref",
             [("rewards = -beta * (logprobs - ref_logprobs) * mask", "rewards = beta * (logprobs - ref_logprobs) * mask")],
             ["tests/test_language.py::test_the_per_token_reward_on_a_three_token_response_by_hand"],
             files="ppo_rlhf_tiny.py"),
    Mutation("rlhf-whiten-mean-dropped", "ppo_rlhf_tiny: whiten(shift_mean=False) scales without keeping the mean",
             [("return (whitened if shift_mean else whitened + mean) * mask", "return whitened * mask")],
             ["tests/test_language.py::test_whitening_by_hand"], files="ppo_rlhf_tiny.py"),
    Mutation("rlhf-controller-uncapped", "ppo_rlhf_tiny: the KL controller's error not capped at 20%",
             [("error = float(np.clip(kl / self.target - 1.0, -0.2, 0.2))", "error = kl / self.target - 1.0")],
             ["tests/test_language.py::test_the_adaptive_kl_controller_by_hand"], files="ppo_rlhf_tiny.py"),
    Mutation("grpo-batch-baseline", "grpo_rlhf_tiny: the baseline is the whole rollout's mean score, not the group's",
             [("mean, std = groups.mean(1, keepdim=True), groups.std(1, keepdim=True)",
               "mean, std = groups.mean(), groups.std(1, keepdim=True)")],
             ["tests/test_language.py::test_the_group_advantage_by_hand"], files="grpo_rlhf_tiny.py"),
    Mutation("grpo-token-average", "grpo_rlhf_tiny: the loss averaged over tokens, not over each response first",
             [("    return -((surrogate - beta * kl) * weights).sum() / weights.sum()",
               "    return -(surrogate - beta * kl).mean()")],
             ["tests/test_language.py::test_the_grpo_loss_averages_each_response_then_the_responses"],
             files="grpo_rlhf_tiny.py"),
    Mutation("diagnose-hacking-either-half", "diagnose: reward hacking called on the valid share alone",
             [("if medians[\"valid_share\"] < limits[\"valid_share\"][0] and medians[\"reward_model_score\"] >= \\",
               "if medians[\"valid_share\"] < limits[\"valid_share\"][0] or medians[\"reward_model_score\"] >= \\")],
             ["tests/test_language.py::test_reward_hacking_needs_both_halves"], files="course/diagnose.py"),
    Mutation("lstm-state-never-wiped", "ppo_lstm_memory: the LSTM state carried across episode starts",
             [("keep = (1.0 - start).unsqueeze(-1)", "keep = torch.ones_like(start).unsqueeze(-1)")],
             ["tests/test_lstm_memory.py::test_get_states_steps_the_lstm_and_wipes_the_state_at_episode_starts"],
             files="ppo_lstm_memory.py"),
    Mutation("lstm-starts-one-step-late", "ppo_lstm_memory: the state wiped on an episode's last step, not its first",
             [("rollout.obs[step], rollout.starts[step] = next_obs, starts",
               "rollout.obs[step], rollout.starts[step] = next_obs, 0.0 * starts"),
              ("starts = rollout.dones[step].copy()", "starts = rollout.dones[step].copy(); rollout.starts[step] = starts")],
             ["tests/test_lstm_memory.py::test_the_rollout_keeps_its_starting_state_and_the_episode_starts"],
             files="ppo_lstm_memory.py"),
    Mutation("lstm-replay-from-zeros", "ppo_lstm_memory: the update replays each env from zeros, not the kept state",
             [("state = (rollout.initial_state[0][mb], rollout.initial_state[1][mb])",
               "state = agent.initial_state(len(mb))")],
             ["tests/test_lstm_memory.py::test_a_training_update_replays_pi_old_exactly"],
             files="ppo_lstm_memory.py"),
    Mutation("lstm-bootstrap-from-zeros", "ppo_lstm_memory: a truncated episode's V(final obs) read from a wiped state",
             [("final_obs[None], (state[0][bootstrap], state[1][bootstrap]),",
               "final_obs[None], agent.initial_state(int(bootstrap.sum())),")],
             ["tests/test_lstm_memory.py::test_truncation_bootstraps_from_the_state_the_episode_reached_and_last_value_goes_on"],
             files="ppo_lstm_memory.py"),
    Mutation("lstm-eval-state-dropped", "ppo_lstm_memory: evaluation acts on a fresh state at every step",
             [("                    torch.as_tensor(obs, device=device)[None, None], state, start, greedy=True)",
               "                    torch.as_tensor(obs, device=device)[None, None], agent.initial_state(1), start,\n"
               "                    greedy=True)")],
             ["tests/test_lstm_memory.py::test_evaluation_carries_the_state_and_wipes_it_per_episode"],
             files="ppo_lstm_memory.py"),
    Mutation("mask-not-applied", "ppo_action_masking: the invalid logits left as they are, pi over every cell",
             [("masked_fill(~valid, -torch.inf).log_softmax(-1)", "masked_fill(valid & ~valid, -torch.inf).log_softmax(-1)")],
             ["tests/test_masking.py::test_invalid_actions_get_probability_zero_and_are_never_sampled"],
             files="ppo_action_masking.py"),
    Mutation("mask-entropy-over-every-cell", "ppo_action_masking: the entropy of the unmasked logits, taken cells too",
             [("entropy = -(pi * log_pi.masked_fill(~valid, 0.0)).sum(-1)",
               "entropy = torch.distributions.Categorical(logits=self.actor(hidden)).entropy()")],
             ["tests/test_masking.py::test_log_pi_is_the_log_softmax_of_the_valid_logits_alone_and_the_entropy_theirs"],
             files="ppo_action_masking.py"),
    Mutation("mask-dropped-in-update", "ppo_action_masking: the update recomputes log pi over every cell, not pi_old's",
             [("agent.get_action_and_value(b_obs[mb], b_masks[mb], b_actions[mb])",
               "agent.get_action_and_value(b_obs[mb], torch.ones_like(b_masks[mb]), b_actions[mb])")],
             ["tests/test_masking.py::test_the_first_epoch_recomputes_pi_olds_log_probabilities"],
             files="ppo_action_masking.py"),
    Mutation("mask-one-step-stale", "ppo_action_masking: the rollout acts on the mask of the board before the last move",
             [('        next_mask = info["action_mask"]\n        rollout.dones[step]', "        rollout.dones[step]")],
             ["tests/test_masking.py::test_the_rollout_keeps_each_steps_mask_and_the_update_recomputes_the_same_log_pi"],
             files="ppo_action_masking.py"),
    Mutation("mask-dropped-in-evaluation", "ppo_action_masking: greedy play offers every cell, with the mask on",
             [("valid if args.mask_actions else np.ones_like(valid)", "np.ones_like(valid)")],
             ["tests/test_masking.py::test_a_tiny_run_logs_checkpoints_plays_and_records_videos"],
             files="ppo_action_masking.py"),
]


def scratch_copy() -> Path:
    """The repository's working tree (tracked files and untracked ones git does not ignore) in a fresh folder."""
    scratch = Path(tempfile.mkdtemp(prefix="ppo-mutations-"))
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (scratch / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, scratch / name)
    return scratch


def pytest(scratch: Path, tests: list[str], timeout: float, first_failure: bool = True) -> tuple[int, str]:
    stop = ["-x"] if first_failure else []
    # -n 0: in this one process, not pytest.ini's parallel workers: a mutation runs a few files, and -x stops at once
    result = subprocess.run([sys.executable, "-m", "pytest", *stop, "-n", "0", "-q", "-p", "no:cacheprovider", *tests],
                            cwd=scratch, capture_output=True, text=True, timeout=timeout)
    return result.returncode, result.stdout + result.stderr


def apply(scratch: Path, mutation: Mutation) -> tuple[dict[Path, str], list[str]]:
    """Mutate every script (or other file the mutation names) holding the mutation's texts; return the originals of the files it changed and the
    texts found in no script."""
    originals, unmatched = {}, []
    for text, replacement in mutation.edits:
        found = False
        for script in mutation.paths(scratch):
            source = script.read_text()
            if text in source:
                found = True
                originals.setdefault(script, source)
                mutated = source.replace(text, replacement)
                if script.suffix == ".py":  # a mutation must stay valid Python: a SyntaxError is no catch
                    compile(mutated, str(script), "exec")
                script.write_text(mutated)
        if not found:
            unmatched.append(text)
    return originals, unmatched


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutations", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run only these mutations")
    parser.add_argument("--list", action="store_true", help="list the mutations and their tests, run nothing")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for each pytest run (default 900)")
    parser.add_argument("--every-failure", action="store_true",
                        help="run each mutation's tests to the end (no -x) and name every test that failed: shows "
                             "which copies' tests catch it, not just the first")
    args = parser.parse_args(argv)
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"no mutation named {', '.join(sorted(unknown))} (see --list)")
    selected = [m for m in MUTATIONS if not args.names or m.name in args.names]
    if args.list:
        for m in selected:
            print(f"{m.name}: {m.what}\n    tests: {' '.join(m.tests)}")
        return 0

    start = time.time()
    scratch = scratch_copy()
    try:
        tests = list(dict.fromkeys(t for m in selected for t in m.tests))
        print(f"scratch copy: {scratch}\nunmutated: {len(tests)} test selections ...", flush=True)
        code, output = pytest(scratch, tests, args.timeout)
        if code != 0:
            print(output[-3000:] + "\nthe tests fail unmutated: fix them first, no mutation result would mean anything",
                  file=sys.stderr)
            return 2
        print(f"unmutated: pass ({time.time() - start:.0f} s)", flush=True)
        survivors, rows = [], []
        for mutation in selected:
            began, failed = time.time(), []
            readme = (scratch / "README.md").read_text()
            originals, unmatched = apply(scratch, mutation)
            try:
                if unmatched:
                    verdict = f"NOT APPLIED (no script holds {unmatched[0]!r} any more: update tests/mutations.py)"
                else:
                    if mutation.after:
                        subprocess.run([sys.executable, *mutation.after], cwd=scratch, check=True, capture_output=True)
                    code, output = pytest(scratch, mutation.tests, args.timeout, not args.every_failure)
                    verdict = {0: "SURVIVED", 1: "caught"}.get(code, f"ERROR (pytest exit {code})")
                    failed = [line.split()[1] for line in output.splitlines() if line.startswith(("FAILED ", "ERROR "))]
            finally:
                for script, source in originals.items():
                    script.write_text(source)
                (scratch / "README.md").write_text(readme)
            if verdict != "caught":
                survivors.append(mutation.name)
            copies = ", ".join(p.stem.removeprefix("ppo_") for p in originals)
            rows.append((mutation.name, copies, verdict, time.time() - began))
            shown = failed if args.every_failure else failed[:1]
            by = f", by {', '.join(f.split('::', 1)[-1] for f in shown)}" if verdict == "caught" and failed else ""
            print(f"{verdict:>8}  {mutation.name} [{copies}] ({time.time() - began:.0f} s{by})", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    caught = sum(row[2] == "caught" for row in rows)
    print(f"\n{caught} of {len(rows)} mutations caught, {len(survivors)} not: {', '.join(survivors) or 'none'}; "
          f"{time.time() - start:.0f} s in all")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
