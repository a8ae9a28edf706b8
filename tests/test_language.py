"""The language lessons (ppo_rlhf_tiny.py, grpo_rlhf_tiny.py), piece by piece against values worked out by hand, then
end to end in a tiny configuration: a run, its play, a stopped run resumed to the very run that never stopped, and
bad input refused in one line."""

import math

import numpy as np
import pytest
import torch

import grpo_rlhf_tiny as grpo
import ppo_rlhf_tiny as ppo
from conftest import ctrl_c_saves_a_checkpoint, expect_unreadable_checkpoints_refused, expect_usage_error, run_dirs, \
    run_script, scalars

LESSONS = [ppo, grpo]
IDS = {"<pad>": 0, **{word: i for i, word in enumerate(ppo.VOCAB)}}


def tokens(text: str) -> list[int]:
    return [ppo.BOS] + [IDS[w] for w in text.split()]


# --- the task ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, score", [
    ("the food was great .", 2.0), ("the food was very great .", 4.0), ("the room is not good .", -1.0),
    ("the staff was not very awful .", 4.0), ("the movie is fine .", 0.5),
    ("the food was great but the service was bad .", -1.0),  # after "but", only the second clause counts
    ("the food was bad but the room is very good .", 2.0),
    ("the food .", ppo.INVALID),  # no review at all: what seed 2 writes with beta 0 (benchmarks/README.md)
    ("the room not great .", ppo.INVALID),
    ("the food was great", ppo.INVALID), ("the food was great . .", ppo.INVALID),
    ("the food was very not good .", ppo.INVALID), ("the food was great but .", ppo.INVALID),
    ("the food was good but the room was bad but the staff is fine .", ppo.INVALID),
    ("was great .", ppo.INVALID), ("the great was good .", ppo.INVALID),
])
def test_the_hidden_score_by_hand(text, score):
    assert ppo.ReviewTask().hidden_score(tokens(text)) == score
    assert ppo.ReviewTask().hidden_score(tokens(text) + [ppo.PAD] * 3) == score  # the padding after the end is no text


def test_every_review_of_the_corpus_is_valid_and_fits_the_context():
    np.random.seed(0)
    task = ppo.ReviewTask()
    reviews = [task.review() for _ in range(2000)]
    assert all(task.hidden_score(r) != ppo.INVALID for r in reviews)
    assert max(map(len, reviews)) == task.context  # the longest: two clauses, "not very" in both
    assert {task.hidden_score(r) for r in reviews} == {-4.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 4.0}


def test_the_response_mask_ends_after_the_end_token():
    end, pad, good = ppo.END, ppo.PAD, IDS["good"]
    responses = torch.tensor([[good, end, pad, pad], [good, good, good, good], [end, pad, pad, pad]])
    assert ppo.response_mask(responses).tolist() == [[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]]


# --- PPO: the per-token reward, whitening, GAE, the KL controller -----------------------------------------------


def test_the_per_token_reward_on_a_three_token_response_by_hand():
    """r_t = -beta (log pi - log pi_ref), the score added on the last real token; nothing on the padding."""
    logprobs = torch.tensor([[-0.5, -1.0, -0.2, 0.0]])
    ref_logprobs = torch.tensor([[-1.0, -0.8, -0.2, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    rewards = ppo.per_token_rewards(torch.tensor([2.0]), logprobs, ref_logprobs, mask, beta=0.1)
    # -0.1 * 0.5, -0.1 * -0.2, -0.1 * 0 + 2, and 0 on the padding
    assert torch.allclose(rewards, torch.tensor([[-0.05, 0.02, 2.0, 0.0]]))
    assert math.isclose(rewards.sum().item(), 2.0 - 0.1 * 0.3, rel_tol=1e-6)  # the return: R - beta KL


def test_whitening_by_hand():
    values = torch.tensor([[1.0, 3.0, 99.0], [5.0, 7.0, 99.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])  # the 99s are padding: they count for nothing
    std = math.sqrt(5.0)  # of 1, 3, 5, 7 (mean 4; deviations 9, 1, 1, 9; the population variance 5)
    whitened = ppo.whiten(values, mask)
    assert torch.allclose(whitened, torch.tensor([[-3 / std, -1 / std, 0.0], [1 / std, 3 / std, 0.0]]), atol=1e-6)
    scaled = ppo.whiten(values, mask, shift_mean=False)  # std 1, its mean kept at 4 (lm-human-preferences' whiten)
    assert torch.allclose(scaled, torch.tensor([[4 - 3 / std, 4 - 1 / std, 0.0], [4 + 1 / std, 4 + 3 / std, 0.0]]),
                          atol=1e-6)


def test_gae_down_a_response_by_hand():
    """gamma 1, lambda 0.5; the response ends at its second token (done there, V 0 after it), the third is padding.
    delta_1 = r_1 - V_1 = 2 - 1 = 1; delta_0 = r_0 + V_1 - V_0 = 0 + 1 - 0.5 = 0.5; A_0 = 0.5 + 0.5 * 1 = 1."""
    args = ppo.Hyperparameters(gamma=1.0, gae_lambda=0.5)
    rewards = torch.tensor([[0.0, 2.0, 0.0]])
    values = torch.tensor([[0.5, 1.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    advantages, returns = ppo.response_advantages(rewards, values, mask, args)
    assert torch.allclose(advantages, torch.tensor([[1.0, 1.0, 0.0]]))
    assert torch.allclose(returns, torch.tensor([[1.5, 2.0, 0.0]]))


def test_the_adaptive_kl_controller_by_hand():
    ctl = ppo.AdaptiveKLController(beta=0.1, target=4.0, horizon=100, adaptive=True)
    ctl.update(kl=5.0, n=10)  # e = 5/4 - 1 = 0.25, capped at 0.2: beta *= 1 + 0.2 * 10 / 100
    assert math.isclose(ctl.beta, 0.1 * 1.02)
    ctl.update(kl=3.8, n=10)  # e = -0.05: beta *= 1 - 0.005
    assert math.isclose(ctl.beta, 0.1 * 1.02 * 0.995)
    fixed = ppo.AdaptiveKLController(beta=0.1, target=4.0, horizon=100, adaptive=False)
    fixed.update(kl=50.0, n=10)
    assert fixed.beta == 0.1


def test_the_reward_models_loss_is_bradley_terrys():
    preferred, other = torch.tensor([2.0, 0.0]), torch.tensor([1.0, 0.0])
    expected = -(math.log(1 / (1 + math.exp(-1.0))) + math.log(0.5)) / 2
    assert math.isclose(ppo.reward_model_loss(preferred, other).item(), expected, rel_tol=1e-6)


# --- GRPO: the group advantage, k3, the loss's averaging ---------------------------------------------------------


def test_the_group_advantage_by_hand():
    scores = torch.tensor([1.0, 3.0, 5.0, 5.0, 0.0, 4.0])  # the groups' means 2, 5, 2 (the rollout's: 3)
    advantages = grpo.group_advantages(scores, group_size=2)
    s = math.sqrt(2.0)  # the unbiased std of two scores 2 apart
    assert torch.allclose(advantages, torch.tensor([-1 / (s + 1e-4), 1 / (s + 1e-4), 0.0, 0.0,
                                                    -2 / (2 * s + 1e-4), 2 / (2 * s + 1e-4)]), atol=1e-6)
    # A group of 3: 0, 3, 6 have mean 3 and unbiased std 3
    assert torch.allclose(grpo.group_advantages(torch.tensor([0.0, 3.0, 6.0]), 3),
                          torch.tensor([-3.0, 0.0, 3.0]) / (3.0 + 1e-4))


def test_k3_by_hand():
    logprobs, ref_logprobs = torch.tensor([math.log(0.5), math.log(0.2)]), torch.tensor([math.log(0.25), math.log(0.2)])
    k3 = grpo.kl_k3(logprobs, ref_logprobs)
    assert torch.allclose(k3, torch.tensor([0.5 - math.log(0.5) - 1, 0.0]), atol=1e-6)  # pi_ref/pi = 0.5, then 1
    assert (grpo.kl_k3(torch.randn(100), torch.randn(100)) >= 0).all()


def test_the_grpo_loss_averages_each_response_then_the_responses():
    """Ratios 1 (no clip); response 0 has one token of A = 1, response 1 two tokens of A = -1 and k3 0.5 each:
    J = mean(1 - 0, mean(-1 - 0.1 * 0.5, -1 - 0.1 * 0.5)) = mean(1, -1.05) = -0.025. One entry per real token,
    weighted 1 / |o_i|."""
    ratio = torch.ones(3)
    advantages = torch.tensor([1.0, -1.0, -1.0])
    kl = torch.tensor([0.0, 0.5, 0.5])
    weights = torch.tensor([1.0, 0.5, 0.5])
    loss = grpo.grpo_loss(ratio, advantages, kl, weights, clip_coef=0.2, beta=0.1)
    assert math.isclose(loss.item(), 0.025, rel_tol=1e-6)
    flat = grpo.grpo_loss(ratio, advantages, kl, torch.ones(3), 0.2, 0.1)  # token-averaged instead: another number
    assert math.isclose(flat.item(), -(1 - 1.05 - 1.05) / 3, rel_tol=1e-6)
    clipped = grpo.grpo_loss(torch.tensor([2.0, 1.0, 1.0]), advantages, kl * 0, weights, 0.2, 0.1)
    assert math.isclose(clipped.item(), -(1.2 - 1.0) / 2, rel_tol=1e-6)  # r = 2 > 1 + eps with A > 0: 1.2 A


# --- the models ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda m: m.__name__)
def test_the_transformer_is_causal(lesson):
    """pi(.|s_t) and V(s_t) at position t do not change when a later token does."""
    torch.manual_seed(0)
    agent = lesson.Agent(lesson.Hyperparameters(), 15)
    a = torch.tensor([[1, 3, 4, 9, 13, 2]])
    b = a.clone()
    b[0, 4] = 17
    out_a, out_b = agent.get_action_and_value(a, a), agent.get_action_and_value(b, a)
    assert torch.equal(out_a[1][0, :4], out_b[1][0, :4]) and not torch.equal(out_a[1][0, 4:], out_b[1][0, 4:])


def test_the_value_head_starts_at_zero_and_grpo_has_none():
    agent = ppo.Agent(ppo.Hyperparameters(), 15)
    assert torch.count_nonzero(agent.get_value(torch.tensor([[1, 3, 4]]))) == 0
    assert not hasattr(grpo.Agent(grpo.Hyperparameters(), 15), "critic")


def test_generate_writes_only_padding_after_the_end():
    torch.manual_seed(0)
    agent = ppo.Agent(ppo.Hyperparameters(), 15)
    responses = ppo.generate(agent, torch.tensor([[1, 3, 4]] * 64), 12)
    for row in responses.tolist():
        if ppo.END in row:
            assert set(row[row.index(ppo.END) + 1:]) <= {ppo.PAD}


# --- end to end ----------------------------------------------------------------------------------------------

TINY = ["--pretrain-steps", "30", "--reward-pairs", "64", "--reward-epochs", "1", "--num-envs", "8",
        "--minibatch-size", "4", "--eval-episodes", "8", "--d-model", "16", "--n-heads", "2"]
UPDATE = 8 * 12  # token slots per update at --num-envs 8


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda m: m.__name__)
def test_a_tiny_run_logs_checkpoints_and_plays(lesson, tmp_path):
    result = run_script(lesson.SCRIPT, *TINY, "--total-timesteps", str(3 * UPDATE), "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "reward model: held-out accuracy" in result.stdout and "evaluation, hidden_score" in result.stdout
    (run_dir,) = run_dirs(tmp_path)
    logged = scalars(run_dir)
    for tag in ("charts/episodic_return", "losses/policy_loss", "losses/approx_kl", "objective/kl",
                "objective/kl_coef", "objective/scores", "objective/hidden_score", "objective/valid_share",
                "eval/hidden_score", "eval/ref_hidden_score", "eval/kl", "charts/reward_model_accuracy"):
        assert tag in logged, tag
    assert [step for step, _ in logged["objective/kl"]] == [UPDATE, 2 * UPDATE, 3 * UPDATE]
    assert len(logged["charts/episodic_return"]) == 3 * 8  # each response an episode
    assert {p.name for p in (run_dir / "samples").iterdir()} == {f"step-{k * UPDATE}.txt" for k in (1, 2, 3)}
    assert len((run_dir / "samples" / f"step-{UPDATE}.txt").read_text().splitlines()) == 8
    played = run_script(lesson.SCRIPT, "--play", str(run_dir / "checkpoint.pt"), "--episodes", "3", cwd=tmp_path)
    assert played.returncode == 0, played.stderr[-3000:]
    lines = played.stdout.splitlines()  # 3 responses, their means, and where they were written (--capture-video)
    assert all("(hidden " in line for line in lines[:3]) and lines[3].startswith("over 3 responses: hidden_score")
    assert lines[4].startswith("samples: ") and len(open(lines[4][len("samples: "):]).read().splitlines()) == 3


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda m: m.__name__)
def test_a_stopped_and_resumed_run_is_the_run_that_never_stopped(lesson, tmp_path):
    """Nothing is left out of the checkpoint (pi_ref, R, the weights, Adam, beta, every RNG): resumed after a Ctrl-C,
    the run ends with the very weights of the run that never stopped, on the same machine."""
    total = str(150 * UPDATE)
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    whole.mkdir(), stopped.mkdir()
    assert run_script(lesson.SCRIPT, *TINY, "--total-timesteps", total, cwd=whole).returncode == 0
    ckpt = ctrl_c_saves_a_checkpoint(lesson.SCRIPT, *TINY, "--total-timesteps", total, cwd=stopped,
                                     steps_per_update=UPDATE, total_timesteps=int(total))
    (run_dir,) = run_dirs(stopped)
    result = run_script(lesson.SCRIPT, "--resume", str(run_dir / "checkpoint.pt"), cwd=stopped)
    assert result.returncode == 0, result.stderr[-3000:]
    a = torch.load(run_dirs(whole)[0] / "checkpoint.pt", weights_only=True)
    b = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert 0 < ckpt["iteration"] < 150 and a["iteration"] == b["iteration"] == 150
    for key in ("agent", "reference", "reward_model"):
        assert a[key].keys() == b[key].keys()
        assert all(torch.equal(a[key][k], b[key][k]) for k in a[key]), key
    assert a["kl_coef"] == b["kl_coef"]


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("argv, fragments", [
    (["--env-id", "CartPole-v1"], ["--env-id 'CartPole-v1' is no task of this script"]),
    (["--num-steps", "13"], ["--num-steps must be at most 12"]),
    (["--d-model", "30", "--n-heads", "4"], ["--d-model (30) must be a multiple of --n-heads (4)"]),
    (["--minibatch-size", "48"], ["--num-envs (64) must be a multiple of --minibatch-size (48)"]),
    (["--learning-rate", "nan"], ["--learning-rate must be a finite number"]),
    (["--reward-pairs", "8"], ["--reward-pairs must be at least 16"]),
    (["--kl-coef", "-1"], ["--kl-coef must not be negative"]),
    (["--total-timesteps", "100"], ["is less than one rollout"]),
])
def test_bad_input_is_refused_in_one_line(lesson, argv, fragments, capsys, monkeypatch):
    expect_usage_error(lesson, capsys, monkeypatch, argv, *fragments)


def test_grpo_refuses_a_group_that_does_not_divide_the_rollout(capsys, monkeypatch):
    expect_usage_error(grpo, capsys, monkeypatch, ["--group-size", "3"], "--group-size must be at least 2")
    expect_usage_error(grpo, capsys, monkeypatch, ["--group-size", "1"], "--group-size must be at least 2")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda m: m.__name__)
def test_checkpoints_are_refused_in_one_line(lesson, capsys, monkeypatch, tmp_path):
    expect_unreadable_checkpoints_refused(lesson, capsys, monkeypatch, tmp_path)


def test_a_resume_cannot_change_what_made_pi_ref_or_a_checkpoint_of_the_other_lesson(capsys, monkeypatch, tmp_path):
    result = run_script(ppo.SCRIPT, *TINY, "--total-timesteps", str(UPDATE), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    path = str(run_dirs(tmp_path)[0] / "checkpoint.pt")
    expect_usage_error(ppo, capsys, monkeypatch, ["--resume", path, "--total-timesteps", str(3 * UPDATE),
                                                  "--pretrain-steps", "31"], "--pretrain-steps cannot change on --resume")
    expect_usage_error(grpo, capsys, monkeypatch, ["--play", path], "was written by ppo_rlhf_tiny.py")


def test_the_same_seed_makes_the_same_pi_ref_and_reward_model_in_both_lessons():
    """So that GRPO and PPO, compared on the same seeds, start from the same pi_ref and are scored by the same R:
    the comparison is of the algorithms alone (PPO's value head is made without a random draw)."""
    made = []
    for lesson in LESSONS:
        args = lesson.Args(pretrain_steps=5, reward_pairs=32, reward_epochs=1, seed=3)
        device = lesson.seed_everything(args)
        task = lesson.ReviewTask()
        reference = lesson.pretrain(task, args, device)
        reward_model, accuracy = lesson.train_reward_model(task, reference, args, device)
        made.append((reference.state_dict(), reward_model.state_dict(), accuracy))
    (ref_a, rm_a, acc_a), (ref_b, rm_b, acc_b) = made
    assert set(ref_b) < set(ref_a)  # PPO's has the value head besides
    assert all(torch.equal(ref_a[k], ref_b[k]) for k in ref_b) and acc_a == acc_b
    assert all(torch.equal(rm_a[k], rm_b[k]) for k in rm_a)


# --- the run reader (python -m course.diagnose) -----------------------------------------------------------------


def test_the_reader_calls_the_recorded_beta_0_runs_reward_hacking_and_the_healthy_ones_healthy():
    from course import diagnose

    limits, count = diagnose.language_ranges("ppo_rlhf_tiny.py")
    assert count >= 3
    for seed, medians in diagnose.recorded_medians("ppo").items():
        assert diagnose.language_findings(medians, limits) == [], seed
    # With beta = 0 some seeds hack the reward model and some do not (benchmarks/README.md, "PPO on language"): the
    # reader calls it where the run's final evaluation found most responses ungrammatical, and only there.
    from benchmarks.core.records import read_csv

    final = {int(r["seed"]): float(r["valid_share"]) for r in read_csv(diagnose.RESULTS / "language" / "runs.csv")
             if r["setting"] == "ppo-beta0"}
    hacked = diagnose.recorded_medians("ppo-beta0")
    assert hacked and any(final[seed] < 0.5 for seed in hacked)
    for seed, medians in hacked.items():
        found = diagnose.language_findings(medians, limits)
        assert any("reward hacking" in line for line in found) == (final[seed] < 0.5), (seed, found)


def test_reward_hacking_needs_both_halves():
    from course import diagnose

    limits = {"hidden_score": (1.0, 4.0), "reward_model_score": (1.0, 2.0), "valid_share": (0.9, 1.1), "kl": (2.0, 4.0)}
    healthy = {"hidden_score": 3.0, "reward_model_score": 1.5, "valid_share": 1.0, "kl": 3.0}
    assert diagnose.language_findings(healthy, limits) == []
    broken = {**healthy, "valid_share": 0.5, "reward_model_score": 0.2}  # invalid text that R scores low: not hacking
    assert not any("reward hacking" in line for line in diagnose.language_findings(broken, limits))
    hacked = {**healthy, "valid_share": 0.5, "hidden_score": -4.0}
    assert any("reward hacking" in line for line in diagnose.language_findings(hacked, limits))


def test_diagnose_reads_a_language_run(tmp_path):
    from benchmarks.core import launch

    result = run_script(ppo.SCRIPT, *TINY, "--total-timesteps", str(12 * UPDATE), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = run_dirs(tmp_path)
    read = launch.run(launch.python_command("-m", "course.diagnose", str(run_dir)), tmp_path)
    assert read.returncode == 0, read.stderr
    assert "recorded runs of ppo_rlhf_tiny.py at its defaults" in read.stdout
    assert "note: your run changes" in read.stdout and "pretrain-steps (30, there 1500)" in read.stdout
    assert "the KL to pi_ref against the controller's target 3" in read.stdout
