"""ppo_action_masking.py: tic-tac-toe's rules and the masked distribution by hand, the rollout's masks against the
update's, then the script end to end in a tiny configuration: a run, its play and videos, a stopped run resumed to
the run that never stopped, and bad input refused."""

import gymnasium as gym
import numpy as np
import pytest
import torch

import ppo_action_masking as ppo
import scripted_runs
from benchmarks.core import launch
from conftest import (CLEANRL_TAGS, expect_unreadable_checkpoints_refused, expect_usage_error,
                      ctrl_c_saves_a_checkpoint, run_dirs, run_script, scalars)

SCRIPT = ppo.SCRIPT
# 4 updates of 64 steps, a checkpoint after each
TINY = ["--total-timesteps", "256", "--num-steps", "64", "--minibatch-size", "32", "--update-epochs", "2",
        "--checkpoint-every", "1"]
X, O = 1, -1


def game(board=None, invalid_action="lose", seed=0):
    """The bare env (no time limit), reset with `seed`, its board set to `board` (9 of X, O, 0) if given."""
    env = ppo.TicTacToeEnv(invalid_action)
    env.reset(seed=seed)
    if board is not None:
        env.board = np.array(board, dtype=np.int8)
    return env


# --- the env's rules ---------------------------------------------------------------------------------------------


def test_a_win_ends_the_game_with_plus_one():
    env = game([X, X, 0,
                O, O, 0,
                0, 0, 0])
    obs, reward, terminated, truncated, info = env.step(2)  # the top row
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert (env.board == O).sum() == 2, "the opponent moved after the game was won"
    assert info["action_mask"].tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1]


def test_a_loss_whatever_the_opponent_draws():
    """X's move 7 wins nothing and leaves 6 and 8, each of which completes a line of O's (2-4-6, 2-5-8)."""
    for seed in range(10):
        env = game([X, X, O,
                    X, O, O,
                    0, 0, 0], seed=seed)
        obs, reward, terminated, truncated, info = env.step(7)
        assert (reward, terminated, truncated) == (-1.0, True, False)
        assert (env.board == 0).sum() == 1 and env.board[7] == X


def test_a_draw_is_the_ninth_cell_filled_with_no_line():
    env = game([X, O, X,
                X, O, O,
                O, X, 0])
    obs, reward, terminated, truncated, info = env.step(8)
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["action_mask"].tolist() == [0] * 9


def test_the_observation_and_the_mask_after_moves():
    env = ppo.TicTacToeEnv()
    obs, info = env.reset(seed=3)
    assert obs.dtype == np.float32 and obs.shape == (18,) and not obs.any()
    assert info["action_mask"].dtype == np.int8 and info["action_mask"].tolist() == [1] * 9
    obs, reward, terminated, _, info = env.step(4)
    (reply,) = np.flatnonzero(env.board == O)
    assert reward == 0.0 and not terminated
    assert np.flatnonzero(obs[:9]).tolist() == [4] and np.flatnonzero(obs[9:]).tolist() == [reply]  # mine, theirs
    assert np.flatnonzero(info["action_mask"] == 0).tolist() == sorted([4, reply])
    obs, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert info["action_mask"].sum() == 5 and (obs[:9] + obs[9:] == 1 - info["action_mask"]).all()


def test_lose_mode_a_taken_cell_ends_the_game_with_minus_one():
    env = game([X, 0, 0, 0, O, 0, 0, 0, 0])
    before = env.board.copy()
    for cell in (0, 4):  # one's own cell and the opponent's
        env.board = before.copy()
        _, reward, terminated, truncated, info = env.step(cell)
        assert (reward, terminated, truncated) == (-1.0, True, False)
        assert (env.board == before).all()


def test_pass_mode_a_taken_cell_changes_nothing_and_the_time_limit_cuts_the_game():
    env = game([X, 0, 0, 0, O, 0, 0, 0, 0], invalid_action="pass")
    before, state = env.board.copy(), env.np_random.bit_generator.state
    obs, reward, terminated, truncated, info = env.step(4)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert (env.board == before).all() and env.np_random.bit_generator.state == state  # no reply drawn
    assert obs.tolist() == env.observation().tolist() and info["action_mask"].tolist() == (before == 0).tolist()
    limited = gym.make("TicTacToe-v0", invalid_action="pass")
    assert limited.spec.max_episode_steps == 30
    limited.reset(seed=0)
    limited.step(4)
    for step in range(2, 31):
        _, reward, terminated, truncated, _ = limited.step(4)  # the same taken cell, again and again
        assert reward == 0.0 and not terminated and truncated == (step == 30)


def test_the_seed_of_reset_seeds_the_opponent():
    def replies(seed):
        env = ppo.TicTacToeEnv()
        _, info = env.reset(seed=seed)
        moves = []
        for _ in range(3):  # X plays the first empty cell; O's replies are what the seed decides
            before = env.board.copy()
            _, _, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
            moves.append(np.flatnonzero((env.board == O) & (before != O)).tolist())
            if terminated:
                break
        return moves

    assert replies(7) == replies(7)
    assert len({str(replies(seed)) for seed in range(10)}) > 1, "the seed changes no reply"


def test_render_draws_the_board():
    env = game([X, 0, 0, 0, O, 0, 0, 0, 0])
    frame = env.render()
    assert frame.shape == (96, 96, 3) and frame.dtype == np.uint8
    empty = game().render()
    assert (frame[:32, :32] != empty[:32, :32]).any() and (frame[32:64, 32:64] != empty[32:64, 32:64]).any()
    assert (frame[:32, 64:] == empty[:32, 64:]).all()  # an empty cell stays blank
    assert (frame[:32, :32] != frame[32:64, 32:64]).any(), "X and O look the same"


# --- the masked distribution -------------------------------------------------------------------------------------


def make_agent(seed=0, scale=30.0):
    torch.manual_seed(seed)
    agent = ppo.Agent(ppo.TicTacToeEnv(), hidden_size=16)
    with torch.no_grad():  # make pi far from uniform, so the checks mean something
        agent.actor.weight.mul_(scale)
    return agent


def masks(n, seed=0):
    """n random masks with 1 to 9 valid cells each."""
    generator = torch.Generator().manual_seed(seed)
    mask = torch.rand(n, 9, generator=generator) < 0.5
    mask[torch.arange(n), torch.randint(0, 9, (n,), generator=generator)] = True  # at least one valid
    return mask


def test_invalid_actions_get_probability_zero_and_are_never_sampled():
    agent = make_agent()
    x, mask = torch.rand(4000, 18), masks(4000)
    actions, log_prob, _, _ = agent.get_action_and_value(x, mask)
    assert mask[torch.arange(4000), actions].all(), "an invalid action was sampled"
    assert torch.isfinite(log_prob).all()
    rows, invalid = (~mask).nonzero().unbind(-1)
    _, log_prob_invalid, _, _ = agent.get_action_and_value(x[rows], mask[rows], invalid)
    assert (log_prob_invalid == -torch.inf).all()  # pi = exp(-inf) = 0 exactly
    # Greedy: the most probable valid action, even where an invalid one has the largest logit.
    logits = agent.actor(agent.trunk(x))
    greedy, _, _, _ = agent.get_action_and_value(x, mask, greedy=True)
    assert torch.equal(greedy, logits.masked_fill(~mask, -torch.inf).argmax(-1))
    assert (logits.argmax(-1) != greedy).any(), "no case where an invalid action had the largest logit"


def test_log_pi_is_the_log_softmax_of_the_valid_logits_alone_and_the_entropy_theirs():
    agent = make_agent()
    x, mask = torch.rand(200, 18), masks(200, seed=1)
    logits = agent.actor(agent.trunk(x))
    for i in range(200):
        valid = mask[i].nonzero().squeeze(-1)
        for a in valid:
            _, log_prob, entropy, _ = agent.get_action_and_value(x[i], mask[i], a)
            # renormalized over the valid cells: log pi(a) = logit_a - log sum_{valid b} exp(logit_b)
            reference = torch.log_softmax(logits[i, valid], -1)[(valid == a).nonzero().item()]
            torch.testing.assert_close(log_prob, reference)
        renormalized = torch.distributions.Categorical(logits=logits[i, valid])
        assert torch.isfinite(entropy)
        torch.testing.assert_close(entropy, renormalized.entropy())
    # With every cell valid the masked policy is the unmasked one: ppo_cartpole.py's written-out Categorical.
    everything = torch.ones(200, 9, dtype=torch.bool)
    actions = torch.randint(0, 9, (200,))
    _, log_prob, entropy, _ = agent.get_action_and_value(x, everything, actions)
    reference = torch.distributions.Categorical(logits=logits)
    torch.testing.assert_close(log_prob, reference.log_prob(actions))
    torch.testing.assert_close(entropy, reference.entropy())


def test_the_invalid_logits_get_no_gradient_and_nothing_is_nan():
    """[IAM]: the gradient of the masked softmax reaches the valid logits only; the -inf and the 0 * log 0 of the
    entropy leave no nan behind."""
    agent = make_agent(scale=1.0)
    x, mask = torch.rand(64, 18), masks(64, seed=2)
    kept = {}

    def keep(module, inputs, logits):  # the actor's output, the logits, kept to read their gradient
        logits.retain_grad()
        kept["logits"] = logits

    agent.actor.register_forward_hook(keep)
    _, log_prob, entropy, _ = agent.get_action_and_value(x, mask)
    (-(log_prob + 0.01 * entropy).sum()).backward()
    grad = kept["logits"].grad
    assert torch.isfinite(grad).all() and all(torch.isfinite(p.grad).all() for p in agent.actor.parameters())
    assert (grad[~mask] == 0).all()
    several = mask & (mask.sum(-1, keepdim=True) > 1)  # (with one valid cell pi = 1 whatever its logit)
    assert several.any() and (grad[several] != 0).all()


def test_the_rollout_keeps_each_steps_mask_and_the_update_recomputes_the_same_log_pi():
    agent = make_agent(scale=3.0)
    env = ppo.make_env(ppo.Args())
    obs, info = env.reset(seed=0)
    rollout = ppo.Rollout(200, (18,), 9)
    next_obs, next_mask, _, episodes, invalid = ppo.collect_rollout(env, agent, obs, info["action_mask"], rollout, True)
    assert invalid == 0 and episodes
    # Each row's mask is the empty cells of its own board (mine and theirs: the observation's two halves)
    np.testing.assert_array_equal(rollout.masks, rollout.obs[:, :9] + rollout.obs[:, 9:] == 0)
    assert rollout.masks[np.arange(200), rollout.actions].all()
    assert (next_mask == (next_obs[:9] + next_obs[9:] == 0)).all()
    # The update's log pi(a_t|s_t, m_t), all T steps at once, is the log pi_old the rollout kept, step by step.
    _, log_prob, _, _ = agent.get_action_and_value(torch.as_tensor(rollout.obs), torch.as_tensor(rollout.masks),
                                                   torch.as_tensor(rollout.actions))
    np.testing.assert_allclose(log_prob.detach().numpy(), rollout.logprobs, atol=1e-5)
    # ... and not the unmasked log pi, which spreads probability over the taken cells
    _, unmasked, _, _ = agent.get_action_and_value(torch.as_tensor(rollout.obs), torch.ones(200, 9),
                                                   torch.as_tensor(rollout.actions))
    assert (unmasked.detach().numpy() < rollout.logprobs - 1e-3).mean() > 0.5


def test_without_the_mask_every_cell_is_offered_and_the_invalid_moves_counted():
    agent = make_agent(scale=0.0)
    with torch.no_grad():
        agent.actor.bias.copy_(torch.tensor([20.0, 0, 0, 0, 0, 0, 0, 0, 0]))  # cell 0, nearly always
    env = ppo.make_env(ppo.Args())  # --invalid-action lose: a taken cell ends the game
    obs, info = env.reset(seed=0)
    rollout = ppo.Rollout(100, (18,), 9)
    _, _, _, episodes, invalid = ppo.collect_rollout(env, agent, obs, info["action_mask"], rollout, False)
    assert rollout.masks.all()
    # Every game: cell 0, then cell 0 again, lost (unless the opponent... cannot take cell 0: it is X's)
    assert invalid == 50 and len(episodes) == 50 and all(r == -1.0 and l == 2 for _, r, l in episodes)
    masked = ppo.Rollout(100, (18,), 9)
    obs, info = env.reset(seed=0)
    _, _, _, episodes, invalid = ppo.collect_rollout(env, agent, obs, info["action_mask"], masked, True)
    assert invalid == 0 and all(r != -1.0 or l > 2 for _, r, l in episodes)


# --- end to end ------------------------------------------------------------------------------------------------


def test_a_tiny_run_logs_checkpoints_plays_and_records_videos(tmp_path):
    result = run_script(SCRIPT, *TINY, "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = run_dirs(tmp_path)
    ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert ckpt["global_step"] == 256 and ckpt["iteration"] == 4 and ckpt["args"]["env_id"] == "TicTacToe-v0"
    logged = scalars(run_dir)
    assert CLEANRL_TAGS | {"charts/invalid_action_rate"} <= set(logged)
    assert logged["charts/invalid_action_rate"] == [(64 * k, 0.0) for k in (1, 2, 3, 4)]  # masked: none
    assert set(v for _, v in logged["charts/episodic_return"]) <= {-1.0, 0.0, 1.0}
    assert list((run_dir / "videos").glob("*.mp4")), "--capture-video recorded no training game"

    played = run_script(SCRIPT, "--play", str(run_dir / "checkpoint.pt"), "--episodes", "3", "--capture-video",
                        cwd=tmp_path)
    assert played.returncode == 0, played.stderr[-3000:]
    lines = played.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == ["episode 1/3", "episode 2/3", "episode 3/3"]
    assert all("return" in line and "invalid moves 0" in line for line in lines[:3])
    assert lines[3].startswith("mean return over 3 episodes:")
    assert lines[4].startswith("won ") and lines[4].endswith("invalid moves: 0 of " + str(sum(
        int(line.split("length ")[1].split(",")[0]) for line in lines[:3])))
    videos = list((run_dir / "videos").glob("play-*/*.mp4"))
    assert len(videos) == 3 and all(v.stat().st_size > 0 for v in videos)


def test_without_the_mask_the_random_start_plays_taken_cells(tmp_path):
    result = run_script(SCRIPT, *TINY, "--no-mask-actions", "--invalid-action", "pass", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = run_dirs(tmp_path)
    rates = [v for _, v in scalars(run_dir)["charts/invalid_action_rate"]]
    # pi starts near uniform over 9 cells: after the first move, most draws land on taken ones
    assert len(rates) == 4 and rates[0] > 0.2
    played = run_script(SCRIPT, "--play", str(run_dir / "checkpoint.pt"), "--episodes", "5", cwd=tmp_path)
    assert played.returncode == 0, played.stderr[-3000:]  # played unmasked too (the checkpoint's flags)
    assert "invalid moves: 0 of" not in played.stdout


def test_the_first_epoch_recomputes_pi_olds_log_probabilities(tmp_path):
    """One epoch of one minibatch: the update's only log pi is computed before any step, so r_t = 1 exactly (up
    to float rounding): every logged KL estimate is 0 and nothing is clipped. A log pi recomputed over another
    set of actions than pi_old's (no mask in the update) would put old_approx_kl near log(9 / valid cells)."""
    result = run_script(SCRIPT, "--total-timesteps", "256", "--num-steps", "64", "--minibatch-size", "64",
                        "--update-epochs", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    logged = scalars(run_dirs(tmp_path)[0])
    for tag in ("losses/old_approx_kl", "losses/approx_kl", "losses/clipfrac"):
        values = [v for _, v in logged[tag]]
        assert len(values) == 4 and max(map(abs, values)) < 1e-6, (tag, values)


RESUME = ["--num-steps", "64", "--minibatch-size", "32", "--update-epochs", "2", "--checkpoint-every", "0"]
UPDATES = 150


def test_a_stopped_and_resumed_run_is_the_run_that_never_stopped(tmp_path, scratch, monkeypatch):
    """What a checkpoint keeps (the weights, Adam, every RNG, the step count, the annealing) is the run that never
    stopped. What it does not keep is the game in progress (Args.resume): the resumed run starts a fresh game,
    reset with seed + its step count. So the run that never stopped is made here to do the same after the
    update the Ctrl-C saved: then the two are one run, to the bit: the same weights, Adam state, RNG states and
    every logged scalar. Without that restart, the run that never stopped plays other games."""
    total = str(UPDATES * 64)
    stopped, whole, plain = (tmp_path / name for name in ("stopped", "whole", "plain"))
    for folder in (stopped, whole, plain):
        folder.mkdir()
    saved = ctrl_c_saves_a_checkpoint(SCRIPT, *RESUME, "--total-timesteps", total, cwd=stopped, steps_per_update=64,
                                      total_timesteps=int(total))
    (run_dir,) = run_dirs(stopped)
    result = run_script(SCRIPT, "--resume", str(run_dir / "checkpoint.pt"), cwd=stopped)
    assert result.returncode == 0, result.stderr[-3000:]
    k = saved["iteration"]
    assert 0 < k < UPDATES

    original, calls = ppo.collect_rollout, []

    def restarted_after_update_k(env, agent, next_obs, next_mask, rollout, mask_actions):
        out = original(env, agent, next_obs, next_mask, rollout, mask_actions)
        calls.append(1)
        if len(calls) != k:
            return out
        obs, info = env.reset(seed=1 + k * 64)  # Run.first_observation's seed in the resumed run (--seed 1)
        return (obs, info["action_mask"], *out[2:])

    monkeypatch.setattr(ppo, "collect_rollout", restarted_after_update_k)
    monkeypatch.chdir(whole)
    assert launch.run_main(ppo, [*RESUME, "--total-timesteps", total]) == 0
    monkeypatch.setattr(ppo, "collect_rollout", original)
    monkeypatch.chdir(plain)
    assert launch.run_main(ppo, [*RESUME, "--total-timesteps", total]) == 0

    def final(folder):
        ckpt = torch.load(run_dirs(folder)[0] / "checkpoint.pt", weights_only=True)
        del ckpt["args"]  # (the resumed run's names its --resume)
        return ckpt

    def logged(folder):
        return {tag: values for tag, values in scalars(run_dirs(folder)[0]).items() if tag != "charts/SPS"}

    expected, got = final(whole), final(stopped)
    assert expected["iteration"] == UPDATES and expected["global_step"] == UPDATES * 64
    assert not scripted_runs.differences(expected, got), scripted_runs.differences(expected, got)[:10]
    assert logged(whole) == logged(stopped)
    assert scripted_runs.differences(final(plain)["agent"], got["agent"]), "the restart changed nothing?"
    episodes = {folder: [e for e in logged(folder)["charts/episodic_return"] if e[0] > k * 64]
                for folder in (plain, stopped)}
    assert episodes[plain] != episodes[stopped]


# --- bad input ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, fragment", [
    (["--env-id", "CartPole-v1"], "this script needs an env that takes invalid_action and reports"),
    (["--env-id", "NoSuchEnv-v0"], "cannot make --env-id 'NoSuchEnv-v0'"),
    (["--num-steps", "-5"], "--num-steps must be positive, got -5"),
    (["--total-timesteps", "0"], "--total-timesteps must be positive"),
    (["--ent-coef", "-0.1"], "--ent-coef must not be negative"),
    (["--learning-rate", "nan"], "--learning-rate must be a finite number"),
    (["--num-steps", "256", "--minibatch-size", "100"], "must be a multiple of --minibatch-size"),
    (["--play", "missing.pt"], "no checkpoint at missing.pt"),
])
def test_bad_input_is_refused_in_one_line(argv, fragment, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_usage_error(ppo, capsys, monkeypatch, argv, fragment)
    assert not (tmp_path / "runs").exists(), "a refused run must not leave a run folder behind"


@pytest.mark.parametrize("argv, flag", [(["--invalid-action", "foo"], "--invalid-action"),
                                        (["--invalid-action", "Lose"], "--invalid-action")])
def test_a_value_tyro_cannot_parse_is_refused_without_a_traceback(argv, flag, capsys, monkeypatch, tmp_path):
    """tyro's own error (a box of a few lines, as for every lesson's choices): exit 2, the flag named."""
    monkeypatch.chdir(tmp_path)
    assert launch.run_main(ppo, argv) == 2
    err = capsys.readouterr().err
    assert flag in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


def test_bad_checkpoints_are_refused_in_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_unreadable_checkpoints_refused(ppo, capsys, monkeypatch, tmp_path)


def test_help_lists_the_masking_flags(tmp_path):
    result = run_script(SCRIPT, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for flag in ("--invalid-action", "--no-mask-actions", "--play", "--capture-video", "--resume"):
        assert flag in result.stdout, flag
