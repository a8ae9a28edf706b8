"""ppo_cartpole.py: the math against hand-computed values, and the script end to end from its command line."""

import numpy as np
import pytest
import torch

import ppo_cartpole as ppo
from conftest import (CLEANRL_TAGS, SCHEDULE, StubAgent, ctrl_c_saves_a_checkpoint,
                      expect_unreadable_checkpoints_refused,
                      expect_usage_error, run_dirs, run_script, scalars)

SCRIPT = "ppo_cartpole.py"
# A tiny configuration: 4 updates of 128 steps, a checkpoint after each.
TINY = ["--total-timesteps", "512", "--num-steps", "128", "--minibatch-size", "32", "--update-epochs", "2",
        "--checkpoint-every", "1"]


# ---------------------------------------------------------------------------------------------------------
# GAE (paper eqs. 11-12) with a terminal step and a truncated step
# ---------------------------------------------------------------------------------------------------------
def test_gae_with_terminal_and_truncated_steps():
    # Five steps: the episode TERMINATES at t=1, a new one is TRUNCATED by a time limit at t=3 (its final
    # observation is worth 0.9), and the rollout stops mid-episode after t=4 where V(s_5) = 0.7.
    rewards = np.array([1.0, 1.0, 1.0, 1.0, 1.0], dtype=np.float32)
    values = np.array([0.5, 0.4, 0.3, 0.2, 0.1], dtype=np.float32)
    dones = np.array([0, 1, 0, 1, 0], dtype=np.float32)
    final_values = np.array([0.0, 0.0, 0.0, 0.9, 0.0], dtype=np.float32)  # 0 at termination, V(final) at truncation
    gamma, lam = 0.9, 0.8
    # By hand, backwards (gamma * lambda = 0.72):
    # t=4: delta = 1 + 0.9 * 0.7 - 0.1 = 1.53                       A4 = 1.53 (bootstrapped from V(s_5))
    # t=3: delta = 1 + 0.9 * 0.9 - 0.2 = 1.61 (truncated: V(final))  A3 = 1.61 (nothing flows back across it)
    # t=2: delta = 1 + 0.9 * 0.2 - 0.3 = 0.88                       A2 = 0.88 + 0.72 * 1.61 = 2.0392
    # t=1: delta = 1 + 0.9 * 0   - 0.4 = 0.60 (terminated: V = 0)    A1 = 0.60
    # t=0: delta = 1 + 0.9 * 0.4 - 0.5 = 0.86                       A0 = 0.86 + 0.72 * 0.60 = 1.292
    advantages = ppo.compute_gae(rewards, values, dones, final_values, 0.7, gamma, lam)
    np.testing.assert_allclose(advantages, [1.292, 0.60, 2.0392, 1.61, 1.53], rtol=1e-6)


def test_gae_with_lambda_one_is_the_discounted_return_minus_value():
    # lambda = 1, no episode end: A_t = sum_k gamma^k r_{t+k} + gamma^(T-t) V(s_T) - V(s_t)
    rewards = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    values = np.array([0.5, -0.5, 1.0], dtype=np.float32)
    no_end = np.zeros(3, dtype=np.float32)
    advantages = ppo.compute_gae(rewards, values, no_end, no_end, 2.0, 0.5, 1.0)
    expected_returns = [1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 2.0, 2 + 0.5 * 3 + 0.25 * 2.0, 3 + 0.5 * 2.0]
    np.testing.assert_allclose(advantages, np.array(expected_returns) - values, rtol=1e-6)


@pytest.mark.parametrize(
    "seed, obs_k, dones, final_values, last_value, episodes",
    [
        # even seed: terminates after 3 steps -> V(s_{t+1}) = 0 at the end; the rollout goes on from k = 2
        (0, [0, 1, 2, 0, 1], [0, 0, 1, 0, 0], [0, 0, 0, 0, 0], 2, [(2, 3.0, 3)]),
        # odd seed: truncated after 2 steps -> V(s_{t+1}) = V(final obs, k = 2) = 2; goes on from k = 1
        (1, [0, 1, 0, 1, 0], [0, 1, 0, 1, 0], [0, 2, 0, 2, 0], 1, [(1, 2.0, 2), (3, 2.0, 2)]),
    ],
)
def test_rollout_terminal_and_truncated_episodes(seed, obs_k, dones, final_values, last_value, episodes):
    import gymnasium as gym

    env = gym.wrappers.RecordEpisodeStatistics(gym.make("CountingTest-v0"))  # see conftest: V = k, reward 1
    next_obs, _ = env.reset(seed=seed)
    rollout = ppo.Rollout(5, (3,))
    next_obs, value, ended = ppo.collect_rollout(env, StubAgent(), next_obs, rollout)
    np.testing.assert_array_equal(rollout.obs[:, 0], obs_k)  # every row a real transition: no final obs stored
    np.testing.assert_array_equal(rollout.rewards, np.ones(5))
    np.testing.assert_array_equal(rollout.dones, dones)
    np.testing.assert_array_equal(rollout.final_values, final_values)
    np.testing.assert_array_equal(rollout.values, obs_k)
    np.testing.assert_array_equal(rollout.actions, np.ones(5))
    assert value == last_value and next_obs[0] == last_value and ended == episodes


# ---------------------------------------------------------------------------------------------------------
# The clipped surrogate (paper eq. 7, Figure 1)
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("advantage", [2.0, -2.0])
def test_clipped_surrogate_values_and_flat_regions(advantage):
    eps = 0.2
    ratios = torch.tensor([0.5, 0.9, 1.0, 1.1, 1.5], requires_grad=True)
    advantages = torch.full((5,), advantage)
    loss = ppo.clipped_surrogate_loss(ratios, advantages, eps)
    loss.backward()
    # L^CLIP per sample = min(r A, clip(r, 0.8, 1.2) A)
    if advantage > 0:  # A = 2: min(2r, 2 clip(r)) = 2 * [0.5, 0.9, 1.0, 1.1, 1.2]
        per_sample = [1.0, 1.8, 2.0, 2.2, 2.4]
        # Figure 1, left: flat (zero gradient) only where r > 1 + eps; below 1 - eps the objective still
        # pulls the probability back up. d(-L/5)/dr = -A/5 = -0.4 elsewhere.
        expected_grad = [-0.4, -0.4, -0.4, -0.4, 0.0]
    else:  # A = -2: min(-2r, -2 clip(r)) = -2 * [0.8, 0.9, 1.0, 1.1, 1.5]
        per_sample = [-1.6, -1.8, -2.0, -2.2, -3.0]
        # Figure 1, right: flat only where r < 1 - eps; above 1 + eps the loss keeps pushing it down.
        expected_grad = [0.0, 0.4, 0.4, 0.4, 0.4]
    assert loss.item() == pytest.approx(-np.mean(per_sample))
    np.testing.assert_allclose(ratios.grad.numpy(), expected_grad, atol=1e-7)


# ---------------------------------------------------------------------------------------------------------
# The agent's written-out categorical distribution
# ---------------------------------------------------------------------------------------------------------
def make_agent(seed=0):
    import gymnasium as gym

    torch.manual_seed(seed)
    return ppo.Agent(gym.make("CartPole-v1"), hidden_size=16)


def test_log_prob_and_entropy_match_torch_categorical():
    agent = make_agent()
    with torch.no_grad():  # make the policy far from uniform, so the check means something
        agent.actor.weight.mul_(300.0)
    x = torch.randn(64, 4)
    actions = torch.randint(0, 2, (64,))
    _, log_prob, entropy, value = agent.get_action_and_value(x, actions)
    reference = torch.distributions.Categorical(logits=agent.actor(agent.trunk(x)))
    torch.testing.assert_close(log_prob, reference.log_prob(actions))
    torch.testing.assert_close(entropy, reference.entropy())
    torch.testing.assert_close(value, agent.get_value(x))
    assert value.shape == (64,)


def test_sampled_actions_follow_pi_and_greedy_takes_the_mode():
    agent = make_agent()
    with torch.no_grad():
        agent.actor.weight.zero_()
        agent.actor.bias.copy_(torch.tensor([0.0, np.log(3.0)]))  # pi = [0.25, 0.75] everywhere
    x = torch.zeros(20000, 4)
    actions, log_prob, _, _ = agent.get_action_and_value(x)
    assert actions.float().mean().item() == pytest.approx(0.75, abs=0.015)
    torch.testing.assert_close(log_prob, torch.log(torch.where(actions == 1, 0.75, 0.25)))
    greedy, _, _, _ = agent.get_action_and_value(x[:5], greedy=True)
    assert greedy.tolist() == [1] * 5


# ---------------------------------------------------------------------------------------------------------
# End to end from the command line
# ---------------------------------------------------------------------------------------------------------
def test_train_resume_play(tmp_path):
    result = run_script(SCRIPT, *TINY, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (run_dir,) = run_dirs(tmp_path)
    checkpoint = run_dir / "checkpoint.pt"
    ckpt = torch.load(checkpoint, weights_only=True)
    assert ckpt["global_step"] == 512 and ckpt["iteration"] == 4
    assert {"agent", "optimizer", "rng", "args"} <= set(ckpt) and ckpt["args"]["env_id"] == "CartPole-v1"
    logged = scalars(run_dir)
    assert CLEANRL_TAGS <= set(logged)
    assert [step for step, _ in logged["charts/SPS"]] == [128, 256, 384, 512]
    assert not list(run_dir.glob("*.tmp")), "the atomic write left its temporary file behind"

    # --resume continues the same run from step 512 to the new total, in the same folder.
    result = run_script(SCRIPT, "--resume", str(checkpoint), "--total-timesteps", "1024", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert run_dirs(tmp_path) == [run_dir]
    assert torch.load(checkpoint, weights_only=True)["global_step"] == 1024
    sps_steps = [step for step, _ in scalars(run_dir)["charts/SPS"]]
    # 128 steps apart: the flags it trained with came back from the checkpoint, not the defaults (256).
    assert sps_steps == [128, 256, 384, 512, 640, 768, 896, 1024]
    # The learning rate never goes back up: 4e-3 annealed over 4 updates, then from the last update's 1e-3 to 0
    # over the 4 the longer run adds.
    lrs = [round(v, 9) for _, v in scalars(run_dir)["charts/learning_rate"]]
    assert lrs == [4e-3, 3e-3, 2e-3, 1e-3, 1e-3, 7.5e-4, 5e-4, 2.5e-4]

    # A resume that changes the shape of an update is refused in one line.
    result = run_script(SCRIPT, "--resume", str(checkpoint), "--total-timesteps", "4096", "--num-steps", "256",
                        cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        f"{SCRIPT}: error: --num-steps cannot change on --resume (128 in {checkpoint}, 256 now): the step count, "
        "the buffers and the annealing go update by update"]

    result = run_script(SCRIPT, "--play", str(checkpoint), "--episodes", "2", "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:2]] == ["episode 1/2", "episode 2/2"]
    assert all("return" in line for line in lines[:2])
    assert any(line.startswith("mean return over 2 episodes:") for line in lines)
    videos = list((run_dir / "videos").glob("play-*/*.mp4"))
    assert len(videos) == 2 and all(v.stat().st_size > 0 for v in videos)


def test_resume_keeps_its_learning_rate_and_the_earlier_videos(tmp_path, capsys, monkeypatch):
    result = run_script(SCRIPT, *TINY, "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (run_dir,) = run_dirs(tmp_path)
    checkpoint = str(run_dir / "checkpoint.pt")
    earlier = {video: video.read_bytes() for video in (run_dir / "videos").glob("*.mp4")}
    assert len(earlier) >= 2  # training episodes 0 and 1 at least
    # The learning rate goes on from Adam's state and the schedule: another value would be ignored
    # (--no-anneal-lr) or raise it, so it is refused, as is turning the annealing off or on.
    monkeypatch.chdir(tmp_path)
    for flag, given, saved in (("--learning-rate", "1e-3", "0.004"), ("--no-anneal-lr", None, "True")):
        name = flag.replace("--no-", "--")
        expect_usage_error(ppo, capsys, monkeypatch, ["--resume", checkpoint, "--total-timesteps", "1024", flag,
                                                      *([given] if given else [])],
                           f"{name} cannot change on --resume ({saved} in {checkpoint}, ")
    # A resumed run records into a folder of its own: RecordVideo numbers episodes from 0 again, and the
    # videos the run made before it stopped stay as they were.
    result = run_script(SCRIPT, "--resume", checkpoint, "--total-timesteps", "1024", "--capture-video",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {video: video.read_bytes() for video in (run_dir / "videos").glob("*.mp4")} == earlier
    resumed = list((run_dir / "videos").glob("resume-*/*.mp4"))
    assert resumed and {video.name for video in resumed} <= {video.name for video in earlier}


def test_same_seed_same_losses(tmp_path):
    runs = []
    for name in ("a", "b"):
        result = run_script(SCRIPT, *TINY, "--exp-name", name, "--seed", "3", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        runs.append(scalars(next(d for d in run_dirs(tmp_path) if f"__{name}__" in d.name)))
    for tag in ("losses/value_loss", "losses/policy_loss", "losses/entropy", "charts/episodic_return"):
        assert runs[0][tag] == runs[1][tag], tag
    other = run_script(SCRIPT, *TINY, "--exp-name", "c", "--seed", "4", cwd=tmp_path)
    assert other.returncode == 0
    other_run = scalars(next(d for d in run_dirs(tmp_path) if "__c__" in d.name))
    assert other_run["losses/value_loss"] != runs[0]["losses/value_loss"], "the seed changes nothing?"


def test_ctrl_c_saves_a_checkpoint_and_exits(tmp_path):
    ctrl_c_saves_a_checkpoint(SCRIPT, "--total-timesteps", "1000000", "--checkpoint-every", "0", cwd=tmp_path,
                              steps_per_update=256, total_timesteps=1_000_000)


# ---------------------------------------------------------------------------------------------------------
# Bad input: one clear line on stderr, exit code 2, no traceback
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--env-id", "NoSuchEnv-v0"], "cannot make --env-id 'NoSuchEnv-v0'"),
        (["--env-id", "Pendulum-v1"], "Box action space; this script needs Discrete"),
        (["--env-id", "FrozenLake-v1"], "needs a flat Box"),
        (["--total-timesteps", "0"], "--total-timesteps must be positive"),
        (["--num-steps", "-5"], "--num-steps must be positive"),
        (["--num-steps", "128", "--minibatch-size", "512"], "larger than the rollout"),
        (["--num-steps", "128", "--minibatch-size", "48"], "must be a multiple of --minibatch-size"),
        (["--total-timesteps", "100", "--num-steps", "128", "--minibatch-size", "64"], "less than one rollout"),
        (["--minibatch-size", "1"], "--minibatch-size must be at least 2 with --norm-adv"),
        (["--gamma", "1.5"], "--gamma must be in [0, 1]"),
        (["--learning-rate", "0"], "--learning-rate must be positive"),
        (["--play", "missing.pt"], "no checkpoint at missing.pt"),
    ],
)
def test_bad_arguments(argv, fragment, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_usage_error(ppo, capsys, monkeypatch, argv, fragment)
    assert not (tmp_path / "runs").exists(), "a refused run must not leave a run folder behind"


def test_bad_checkpoints(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_unreadable_checkpoints_refused(ppo, capsys, monkeypatch, tmp_path)

    # A real checkpoint, then the same one claiming another script, and played on another env.
    args = ppo.Args()
    env = ppo.make_env(args)
    agent = ppo.Agent(env, args.hidden_size)
    real = tmp_path / "real.pt"
    ppo.save_checkpoint(str(real), args, agent, torch.optim.Adam(agent.parameters()), 0, 0, SCHEDULE)
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--env-id", "Acrobot-v1"],
                       "holds a policy for CartPole-v1, not for --env-id Acrobot-v1")
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--hidden-size", "8"], "does not fit")
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--resume", str(real)],
                       "either --resume or --play")
    # Resuming a run that has already done its --total-timesteps: nothing to do, and it says how to go on.
    ppo.save_checkpoint(str(real), args, agent, torch.optim.Adam(agent.parameters()), args.total_timesteps, 390,
                        SCHEDULE)
    expect_usage_error(ppo, capsys, monkeypatch, ["--resume", str(real)], "give a larger --total-timesteps")
    ckpt = torch.load(real, weights_only=True)
    ckpt["script"] = "ppo_lunarlander_vec.py"
    torch.save(ckpt, real)
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real)], "was written by ppo_lunarlander_vec.py")


def test_bad_input_from_the_real_command_line(tmp_path):
    result = run_script(SCRIPT, "--env-id", "NoSuchEnv-v0", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "Traceback" not in result.stderr and "cannot make --env-id" in result.stderr
