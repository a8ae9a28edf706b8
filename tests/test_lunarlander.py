"""ppo_lunarlander_vec.py: vector-env autoreset and truncation through the rollout and GAE, checked by hand;
the clipped value loss; the script end to end from its command line, sync and async."""

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn as nn

import ppo_cartpole
import ppo_lunarlander_vec as ppo
from conftest import (CLEANRL_TAGS, SCHEDULE, StubAgent, ctrl_c_saves_a_checkpoint,
                      expect_unreadable_checkpoints_refused,
                      expect_usage_error, run_dirs, run_script, scalars)

SCRIPT = "ppo_lunarlander_vec.py"
# A tiny configuration: 4 envs x 64 steps = 256 samples per update (a random lander's episode lasts about 100
# steps, so some end), 2 updates, an evaluation and a checkpoint after each.
TINY = ["--total-timesteps", "512", "--num-envs", "4", "--num-steps", "64", "--minibatch-size", "128",
        "--update-epochs", "2", "--checkpoint-every", "1", "--eval-every", "1", "--eval-episodes", "1"]


# ---------------------------------------------------------------------------------------------------------
# Autoreset and truncation: a tiny env with known episode ends, through collect_rollout and compute_gae
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_autoreset_and_truncation_through_rollout_and_gae(mode):
    # "conftest:": the async workers import conftest to find the id (they are not forks of this process).
    args = ppo.Args(env_id="conftest:CountingTest-v0", num_envs=2, num_steps=5, seed=0, vectorization_mode=mode)
    envs = ppo.make_envs(args)
    next_obs, _ = envs.reset(seed=args.seed)  # env 0: seed 0, terminates after 3 steps; env 1: truncated after 2
    rollout = ppo.Rollout(args.num_steps, args.num_envs, (3,))
    next_obs, last_value, episodes = ppo.collect_rollout(envs, StubAgent(), next_obs, rollout)
    envs.close()

    # Every stored row is a real transition: the step counter of the observation it acted on, reward 1.
    # (With gymnasium's default NEXT_STEP autoreset, the step after an episode end would be a reset with
    # reward 0, and the obs rows would hold the final observations k=3 / k=2: neither may appear here.)
    np.testing.assert_array_equal(rollout.obs[:, :, 0], [[0, 0], [1, 1], [2, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(rollout.rewards, np.ones((5, 2)))
    np.testing.assert_array_equal(rollout.dones, [[0, 0], [0, 1], [1, 0], [0, 1], [0, 0]])
    np.testing.assert_array_equal(rollout.actions, np.ones((5, 2)))
    np.testing.assert_array_equal(rollout.logprobs, np.full((5, 2), -0.5))
    np.testing.assert_array_equal(rollout.values, rollout.obs[:, :, 0])  # V = k
    # V(s_{t+1}) at episode ends: 0 where env 0 terminated (t=2); V(final obs k=2) = 2 where env 1 was truncated.
    np.testing.assert_array_equal(rollout.final_values, [[0, 0], [0, 2], [0, 0], [0, 2], [0, 0]])
    # The rollout continues from k=2 (env 0) and k=1 (env 1): last_value = V of those.
    np.testing.assert_array_equal(next_obs[:, 0], [2, 1])
    np.testing.assert_array_equal(last_value, [2, 1])
    # Episodes (step, return, length): env 0 ended at t=2 after 3 steps, env 1 at t=1 and t=3 after 2.
    assert sorted(episodes) == [(1, 2.0, 2), (2, 3.0, 3), (3, 2.0, 2)]

    gamma, lam = 0.5, 0.5  # gamma * lambda = 0.25
    advantages = ppo.compute_gae(rollout.rewards, rollout.values, rollout.dones, rollout.final_values, last_value,
                                 gamma, lam)
    # By hand, delta_t = 1 + 0.5 V(s_{t+1}) - V(s_t), A_t = delta_t + 0.25 A_{t+1} unless step t ended an episode.
    # env 0: V = [0, 1, 2, 0, 1], next V = [1, 2, 0 (terminated), 1, 2 (last_value)]
    #   delta = [1.5, 1.0, -1.0, 1.5, 1.0]
    #   A4 = 1.0, A3 = 1.5 + 0.25 * 1.0 = 1.75, A2 = -1.0 (end), A1 = 1.0 - 0.25 = 0.75, A0 = 1.5 + 0.1875 = 1.6875
    # env 1: V = [0, 1, 0, 1, 0], next V = [1, 2 (V(final obs)), 1, 2 (V(final obs)), 1 (last_value)]
    #   delta = [1.5, 1.0, 1.5, 1.0, 1.5]
    #   A4 = 1.5, A3 = 1.0 (end), A2 = 1.5 + 0.25 = 1.75, A1 = 1.0 (end), A0 = 1.5 + 0.25 = 1.75
    expected = np.array([[1.6875, 1.75], [0.75, 1.0], [-1.0, 1.75], [1.75, 1.0], [1.0, 1.5]])
    np.testing.assert_allclose(advantages, expected, rtol=1e-6)
    # The value targets V^targ = A + V: at the terminal step just the reward, at truncation r + gamma V(final).
    np.testing.assert_allclose((advantages + rollout.values)[2, 0], 1.0)
    np.testing.assert_allclose((advantages + rollout.values)[1, 1], 1.0 + 0.5 * 2)


def test_vectorized_gae_equals_single_env_gae_per_column():
    rng = np.random.default_rng(0)
    T, N = 64, 6
    rewards, values, final_values = (rng.normal(size=(T, N)).astype(np.float32) for _ in range(3))
    dones = (rng.random((T, N)) < 0.1).astype(np.float32)
    last_value = rng.normal(size=N).astype(np.float32)
    vectorized = ppo.compute_gae(rewards, values, dones, final_values, last_value, 0.99, 0.95)
    assert vectorized.shape == (T, N) and dones.sum() > 0
    for i in range(N):
        single = ppo_cartpole.compute_gae(rewards[:, i], values[:, i], dones[:, i], final_values[:, i],
                                          last_value[i], 0.99, 0.95)
        np.testing.assert_allclose(vectorized[:, i], single, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# The clipped value loss
# ---------------------------------------------------------------------------------------------------------
def test_clipped_value_loss_by_hand():
    old = torch.tensor([0.0, 0.0, 0.0, 0.0])
    new = torch.tensor([1.0, 5.0, -5.0, 5.0], requires_grad=True)
    target = torch.tensor([3.0, 3.0, -10.0, 10.0])
    loss = ppo.clipped_value_loss(new, old, target, vf_clip_coef=2.0)
    # V_clip = old + clip(new - old, -2, 2) = [1, 2, -2, 2]
    # (new - target)^2     = [4, 4, 25, 25];  (V_clip - target)^2 = [4, 1, 64, 64]
    # max = [4, 4, 64, 64]: samples 2 and 3 moved V past the clip range, toward the target, and get no credit:
    # their loss is the clipped one, whose gradient with respect to new is 0.
    assert loss.item() == pytest.approx(0.5 * (4 + 4 + 64 + 64) / 4)
    loss.backward()
    # d/dnew of 0.5 * (new - target)^2 / 4 = (new - target) / 4 where the unclipped term is the max.
    np.testing.assert_allclose(new.grad.numpy(), [(1 - 3) / 4, (5 - 3) / 4, 0.0, 0.0])


def test_agent_networks_share_nothing_and_init_as_documented():
    torch.manual_seed(0)
    agent = ppo.Agent(gym.make("LunarLander-v3"), hidden_size=64)
    actor_params = {id(p) for p in agent.actor.parameters()}
    assert not actor_params & {id(p) for p in agent.critic.parameters()}
    for net, head_gain in ((agent.actor, 0.01), (agent.critic, 1.0)):
        linears = [m for m in net if isinstance(m, nn.Linear)]
        assert [tuple(m.weight.shape) for m in linears][:2] == [(64, 8), (64, 64)]
        for layer, gain in zip(linears, (np.sqrt(2), np.sqrt(2), head_gain)):
            assert torch.all(layer.bias == 0)
            # An orthogonal matrix with gain g has every singular value equal to g.
            np.testing.assert_allclose(torch.linalg.svdvals(layer.weight).detach().numpy(), gain, rtol=1e-4)
    # The policy head's small gain starts pi near uniform over the 4 actions.
    _, logprob, entropy, _ = agent.get_action_and_value(torch.randn(32, 8))
    assert entropy.min().item() > 0.99 * np.log(4)


def test_evaluation_is_greedy_and_repeatable():
    args = ppo.Args(seed=5)
    torch.manual_seed(0)
    agent = ppo.Agent(ppo.make_env(args), args.hidden_size)
    first, first_lengths = ppo.evaluate(args, agent, 3)
    second, second_lengths = ppo.evaluate(args, agent, 3)
    # Episode i starts from seed + i and the policy takes the argmax: the same episodes every time.
    assert first == second and first_lengths == second_lengths
    assert len(set(first)) == 3, "the three episodes should start differently"


# ---------------------------------------------------------------------------------------------------------
# End to end from the command line
# ---------------------------------------------------------------------------------------------------------
def train_tiny(tmp_path, *extra):
    result = run_script(SCRIPT, *TINY, *extra, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_train_resume_play(mode, tmp_path):
    train_tiny(tmp_path, "--vectorization-mode", mode, "--capture-video")
    (run_dir,) = run_dirs(tmp_path)
    checkpoint = run_dir / "checkpoint.pt"
    ckpt = torch.load(checkpoint, weights_only=True)
    assert ckpt["global_step"] == 512 and ckpt["iteration"] == 2
    assert ckpt["args"]["vectorization_mode"] == mode and ckpt["args"]["env_id"] == "LunarLander-v3"
    logged = scalars(run_dir)
    assert CLEANRL_TAGS | {"eval/mean_return", "eval/mean_length", "losses/update_epochs"} <= set(logged)
    # How often the value clip could act: a share of the samples, logged beside the policy's clipfrac.
    assert all(0 <= v <= 1 for _, v in logged["losses/vf_clipfrac"]) and len(logged["losses/vf_clipfrac"]) == 2
    assert [step for step, _ in logged["charts/SPS"]] == [256, 512]
    assert [step for step, _ in logged["eval/mean_return"]] == [256, 512]
    assert not list(run_dir.glob("*.tmp")), "the atomic write left its temporary file behind"
    for step in (256, 512):  # the evaluation episode of each update, recorded
        videos = list((run_dir / "videos" / f"eval-{step}").glob("*.mp4"))
        assert len(videos) == 1 and videos[0].stat().st_size > 0

    # --resume continues the same run, with the flags it trained with (4 envs x 64 steps), in the same folder.
    result = run_script(SCRIPT, "--resume", str(checkpoint), "--total-timesteps", "1024", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert run_dirs(tmp_path) == [run_dir]
    assert torch.load(checkpoint, weights_only=True)["global_step"] == 1024
    assert [step for step, _ in scalars(run_dir)["charts/SPS"]] == [256, 512, 768, 1024]

    result = run_script(SCRIPT, "--play", str(checkpoint), "--episodes", "2", "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:2]] == ["episode 1/2", "episode 2/2"]
    assert any(line.startswith("mean return over 2 episodes:") for line in lines)
    videos = list((run_dir / "videos").glob("play-*/*.mp4"))
    assert len(videos) == 2 and all(v.stat().st_size > 0 for v in videos)


def test_sync_and_async_give_the_same_run_and_the_seed_matters(tmp_path):
    runs = {}
    for name, extra in (("s", ["--vectorization-mode", "sync"]), ("a", ["--vectorization-mode", "async"]),
                        ("s2", ["--vectorization-mode", "sync"]), ("e", ["--eval-every", "1"]),
                        ("other", ["--seed", "2"])):
        train_tiny(tmp_path, "--exp-name", name, "--eval-every", "0", *extra)
        runs[name] = scalars(next(d for d in run_dirs(tmp_path) if f"__{name}__" in d.name))
    # The same seed: the same envs, the same actions, the same losses, whether the envs run here or in workers,
    # and whether or not the greedy policy is evaluated in between (evaluation draws no random numbers).
    assert "eval/mean_return" in runs["e"] and "eval/mean_return" not in runs["s"]
    for tag in ("losses/value_loss", "losses/policy_loss", "losses/entropy", "charts/episodic_return"):
        assert runs["s"][tag] == runs["a"][tag] == runs["s2"][tag] == runs["e"][tag], tag
    assert runs["other"]["losses/value_loss"] != runs["s"]["losses/value_loss"], "the seed changes nothing?"


def test_target_kl_stops_the_epochs_early(tmp_path):
    train_tiny(tmp_path, "--exp-name", "full", "--update-epochs", "4")
    train_tiny(tmp_path, "--exp-name", "kl", "--update-epochs", "4", "--target-kl", "1e-9")
    full, kl = (scalars(next(d for d in run_dirs(tmp_path) if f"__{name}__" in d.name)) for name in ("full", "kl"))
    assert [epochs for _, epochs in full["losses/update_epochs"]] == [4, 4]
    # Any step at all moves pi further than 1e-9 from pi_old: every update stops after its first epoch.
    assert [epochs for _, epochs in kl["losses/update_epochs"]] == [1, 1]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_ctrl_c_saves_a_checkpoint_and_exits(mode, tmp_path):
    # Ctrl-C reaches the async workers too, as it does from a terminal: they must leave it to the trainer.
    ctrl_c_saves_a_checkpoint(SCRIPT, "--vectorization-mode", mode, "--num-envs", "4", "--checkpoint-every", "0",
                              "--eval-every", "0", cwd=tmp_path, steps_per_update=4 * 128, total_timesteps=1_000_000)


# ---------------------------------------------------------------------------------------------------------
# Bad input: one clear line on stderr, exit code 2, no traceback
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--env-id", "NoSuchEnv-v0"], "cannot make --env-id 'NoSuchEnv-v0'"),
        (["--env-id", "Pendulum-v1"], "Box action space; this script needs Discrete"),
        (["--env-id", "FrozenLake-v1"], "needs a flat Box"),
        (["--num-envs", "0"], "--num-envs must be positive"),
        (["--num-envs", "4", "--num-steps", "16", "--minibatch-size", "128"], "larger than the rollout"),
        (["--num-envs", "3", "--num-steps", "16", "--minibatch-size", "32"], "must be a multiple of --minibatch-size"),
        (["--total-timesteps", "1000"], "less than one rollout"),
        (["--gae-lambda", "-0.1"], "--gae-lambda must be in [0, 1]"),
        (["--vf-clip-coef", "0"], "--vf-clip-coef must be positive"),
        (["--target-kl", "0"], "--target-kl must be positive"),
        (["--eval-every", "-1"], "--eval-every must not be negative"),
        (["--eval-episodes", "0"], "--eval-episodes must be positive"),
        (["--minibatch-size", "1"], "--minibatch-size must be at least 2 with --norm-adv"),
        (["--resume", "missing.pt"], "no checkpoint at missing.pt"),
    ],
)
def test_bad_arguments(argv, fragment, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_usage_error(ppo, capsys, monkeypatch, argv, fragment)
    assert not (tmp_path / "runs").exists(), "a refused run must not leave a run folder behind"


def test_unknown_vectorization_mode_is_a_usage_error(tmp_path):
    result = run_script(SCRIPT, "--vectorization-mode", "threads", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "threads" in result.stderr


def test_bad_checkpoints(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_unreadable_checkpoints_refused(ppo, capsys, monkeypatch, tmp_path)

    # A CartPole checkpoint: a checkpoint of this library, but not of this script.
    cartpole_args = ppo_cartpole.Args()
    cartpole_agent = ppo_cartpole.Agent(ppo_cartpole.make_env(cartpole_args), cartpole_args.hidden_size)
    cartpole = tmp_path / "cartpole.pt"
    ppo_cartpole.save_checkpoint(str(cartpole), cartpole_args, cartpole_agent,
                                 torch.optim.Adam(cartpole_agent.parameters()), 0, 0, SCHEDULE)
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(cartpole)], "was written by ppo_cartpole.py")

    args = ppo.Args()
    agent = ppo.Agent(ppo.make_env(args), args.hidden_size)
    real = tmp_path / "real.pt"
    ppo.save_checkpoint(str(real), args, agent, torch.optim.Adam(agent.parameters()), 0, 0, SCHEDULE)
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--env-id", "CartPole-v1"],
                       "holds a policy for LunarLander-v3, not for --env-id CartPole-v1")
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--hidden-size", "32"], "does not fit")
    ppo.save_checkpoint(str(real), args, agent, torch.optim.Adam(agent.parameters()), args.total_timesteps, 488,
                        SCHEDULE)
    expect_usage_error(ppo, capsys, monkeypatch, ["--resume", str(real)], "give a larger --total-timesteps")
