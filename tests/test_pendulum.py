"""ppo_pendulum_continuous.py: the Gaussian policy's log-prob and entropy against closed forms, the exact KL
against a Monte-Carlo estimate, the KL-penalized objective and the beta rule by hand, the normalization
statistics against gymnasium's own wrappers and through a checkpoint, unclipped actions in the rollout, and
the script end to end from its command line with both objectives."""

import math
import re

import gymnasium as gym
import numpy as np
import pytest
import torch

import ppo_lunarlander_vec
import ppo_pendulum_continuous as ppo
from benchmarks.core import launch
from conftest import (CLEANRL_TAGS, SCHEDULE, ctrl_c_saves_a_checkpoint, expect_unreadable_checkpoints_refused,
                      expect_usage_error, run_dirs, run_script, scalars)

SCRIPT = "ppo_pendulum_continuous.py"
# A tiny configuration: 2 envs x 128 steps = 256 samples per update (a Pendulum episode is 200 steps, so
# episodes end in every update from the second on), 3 updates, an evaluation and a checkpoint after each.
TINY = ["--total-timesteps", "768", "--num-envs", "2", "--num-steps", "128", "--minibatch-size", "64",
        "--update-epochs", "2", "--checkpoint-every", "1", "--eval-every", "1", "--eval-episodes", "2"]


def make_agent(seed=0, hidden_size=16):
    torch.manual_seed(seed)
    return ppo.Agent(gym.make("Pendulum-v1"), hidden_size)


def set_gaussian(agent, mean, logstd):
    """Make pi(.|s) = N(mean, exp(logstd)^2) in every state: a zero last layer whose bias is the mean."""
    with torch.no_grad():
        head = agent.actor_mean[-1]
        head.weight.zero_()
        head.bias.copy_(torch.as_tensor(mean, dtype=torch.float32))
        agent.actor_logstd.copy_(torch.as_tensor(logstd, dtype=torch.float32))


# ---------------------------------------------------------------------------------------------------------
# The Gaussian policy
# ---------------------------------------------------------------------------------------------------------
def test_gaussian_log_prob_and_entropy_closed_form():
    agent = ppo.Agent(gym.make("MountainCarContinuous-v0"), hidden_size=8)  # 1 action dimension
    set_gaussian(agent, [0.5], [math.log(2.0)])  # N(0.5, 2^2)
    x = torch.zeros(3, 2)
    actions = torch.tensor([[0.5], [2.5], [-3.5]])  # the mean, one sigma above it, two sigmas below
    _, log_prob, entropy, _ = agent.get_action_and_value(x, actions)
    # log N(a; mu, sigma) = -z^2 / 2 - log sigma - log(2 pi) / 2, z = (a - mu) / sigma = 0, 1, -2
    c = -math.log(2.0) - 0.5 * math.log(2 * math.pi)
    torch.testing.assert_close(log_prob, torch.tensor([c, c - 0.5, c - 2.0]))
    # H = log(sigma sqrt(2 pi e)) = log 2 + (1 + log(2 pi)) / 2, the same in every state
    torch.testing.assert_close(entropy, torch.full((3,), math.log(2.0) + 0.5 * (1 + math.log(2 * math.pi))))


def test_log_prob_sums_over_independent_dimensions_and_matches_torch_normal():
    agent = ppo.Agent(gym.make("LunarLanderContinuous-v3"), hidden_size=16)  # 2 action dimensions
    with torch.no_grad():  # a mean that depends on the state, and two different sigmas
        agent.actor_mean[-1].weight.mul_(100.0)
        agent.actor_logstd.copy_(torch.tensor([-0.7, 0.4]))
    x = torch.randn(64, 8)
    actions = torch.randn(64, 2) * 2
    _, log_prob, entropy, value = agent.get_action_and_value(x, actions)
    mean, logstd = agent.get_distribution(x)
    reference = torch.distributions.Normal(mean, logstd.exp())
    torch.testing.assert_close(log_prob, reference.log_prob(actions).sum(-1))
    torch.testing.assert_close(entropy, reference.entropy().sum(-1))
    torch.testing.assert_close(value, agent.get_value(x))
    assert log_prob.shape == entropy.shape == value.shape == (64,)


def test_sampled_actions_follow_pi_and_greedy_takes_the_mean():
    agent = make_agent()
    set_gaussian(agent, [1.5], [math.log(0.5)])
    x = torch.zeros(40000, 3)
    actions, log_prob, _, _ = agent.get_action_and_value(x)
    assert actions.mean().item() == pytest.approx(1.5, abs=0.01)
    assert actions.std().item() == pytest.approx(0.5, abs=0.01)
    assert (actions.abs() > 2).any(), "the policy's samples are not bounded: the env clips them, not the agent"
    greedy, _, _, _ = agent.get_action_and_value(x[:5], greedy=True)
    torch.testing.assert_close(greedy, torch.full((5, 1), 1.5))


def test_agent_init_as_documented():
    agent = make_agent(hidden_size=64)
    assert torch.all(agent.actor_logstd == 0)  # sigma = 1 at the start
    actor_params = {id(p) for p in agent.actor_mean.parameters()} | {id(agent.actor_logstd)}
    assert not actor_params & {id(p) for p in agent.critic.parameters()}
    head = agent.actor_mean[-1]
    np.testing.assert_allclose(torch.linalg.svdvals(head.weight).detach().numpy(), 0.01, rtol=1e-4)
    # The observation statistics are buffers: in the state dict (so in checkpoints), not among the parameters.
    assert {"obs_rms.mean", "obs_rms.var", "obs_rms.count"} <= set(agent.state_dict())
    assert not {id(b) for b in agent.obs_rms.buffers()} & {id(p) for p in agent.parameters()}


# ---------------------------------------------------------------------------------------------------------
# The KL between two Gaussians, the KL-penalized objective and the adaptive beta
# ---------------------------------------------------------------------------------------------------------
def test_gaussian_kl_by_hand_and_against_monte_carlo():
    # 1 dimension, pi_old = N(0, 1), pi = N(1, 2^2): KL = log 2 + (1 + 1) / (2 * 4) - 1/2 = log 2 - 1/4
    kl = ppo.gaussian_kl(torch.tensor([0.0]), torch.tensor([0.0]), torch.tensor([1.0]), torch.tensor([math.log(2.0)]))
    assert kl.item() == pytest.approx(math.log(2.0) - 0.25, rel=1e-6)

    # 3 dimensions: KL[p || q] = E_{a ~ p}[log p(a) - log q(a)], estimated from a million samples of p.
    old_mean, old_logstd = torch.tensor([0.3, -1.0, 2.0]), torch.tensor([0.0, -0.5, 0.4])
    mean, logstd = torch.tensor([0.5, -0.2, 1.0]), torch.tensor([0.3, -0.4, 0.0])
    exact = ppo.gaussian_kl(old_mean, old_logstd, mean, logstd).item()
    generator = torch.Generator().manual_seed(0)
    samples = old_mean + old_logstd.exp() * torch.randn(1_000_000, 3, generator=generator, dtype=torch.float64)
    p, q = torch.distributions.Normal(old_mean, old_logstd.exp()), torch.distributions.Normal(mean, logstd.exp())
    log_ratios = (p.log_prob(samples) - q.log_prob(samples)).sum(-1)
    standard_error = log_ratios.std().item() / math.sqrt(len(log_ratios))
    assert abs(log_ratios.mean().item() - exact) < 4 * standard_error, (log_ratios.mean().item(), exact)
    assert exact == pytest.approx(torch.distributions.kl_divergence(p, q).sum().item(), rel=1e-5)


def test_gaussian_kl_is_zero_with_zero_gradient_at_the_old_policy():
    old_mean, old_logstd = torch.tensor([[0.3, -1.0]]), torch.tensor([[0.1, -0.5]])
    mean, logstd = old_mean.clone().requires_grad_(), old_logstd.clone().requires_grad_()
    kl = ppo.gaussian_kl(old_mean, old_logstd, mean, logstd)
    kl.sum().backward()
    assert kl.item() == pytest.approx(0.0, abs=1e-7)
    assert mean.grad.abs().max() < 1e-6 and logstd.grad.abs().max() < 1e-6


def test_kl_penalty_loss_by_hand():
    ratio = torch.tensor([1.5, 0.5, 1.0], requires_grad=True)
    advantages = torch.tensor([1.0, -1.0, 2.0])
    kl = torch.tensor([0.1, 0.3, 0.0], requires_grad=True)
    loss = ppo.kl_penalty_loss(ratio, advantages, kl, beta=2.0)
    # L^KLPEN per sample = r A - beta KL = [1.5 - 0.2, -0.5 - 0.6, 2.0 - 0] = [1.3, -1.1, 2.0]; the loss is -mean
    assert loss.item() == pytest.approx(-(1.3 - 1.1 + 2.0) / 3)
    loss.backward()
    # No clipping, so no flat region: d(-L)/dr = -A / 3 even far from r = 1, and d(-L)/dKL = beta / 3.
    torch.testing.assert_close(ratio.grad, -advantages / 3)
    torch.testing.assert_close(kl.grad, torch.full((3,), 2.0 / 3))


@pytest.mark.parametrize(
    "d, expected",
    [
        (0.001, 0.5),             # far below the band: halve
        (0.0066, 0.5),            # just below d_targ / 1.5 = 0.00667: halve
        (0.01 / 1.5, 1.0),        # on the lower edge: inside the band, keep
        (0.01, 1.0),              # on target: keep
        (0.015, 1.0),             # on the upper edge d_targ * 1.5: inside the band, keep
        (0.0151, 2.0),            # just above: double
        (0.5, 2.0),               # far above: double (once per update, however far)
    ],
)
def test_adaptive_beta_rule(d, expected):
    assert ppo.adapt_kl_beta(1.0, d, kl_target=0.01) == expected


def test_adaptive_beta_over_several_updates():
    beta, history = 1.0, []
    for d in (0.001, 0.001, 0.012, 0.05, 0.02, 0.009):
        beta = ppo.adapt_kl_beta(beta, d, kl_target=0.01)
        history.append(beta)
    assert history == [0.5, 0.25, 0.25, 0.5, 1.0, 1.0]


@pytest.mark.parametrize("advantage", [2.0, -2.0])
def test_clipped_surrogate_at_both_clip_edges(advantage):
    eps = 0.2
    ratios = torch.tensor([0.7, 0.8, 1.0, 1.2, 1.3], requires_grad=True)
    loss = ppo.clipped_surrogate_loss(ratios, torch.full((5,), advantage), eps)
    loss.backward()
    if advantage > 0:  # min(2r, 2 clip(r, 0.8, 1.2)): flat only above 1 + eps
        expected, grad = [1.4, 1.6, 2.0, 2.4, 2.4], [-0.4, -0.4, -0.4, -0.4, 0.0]
    else:  # min(-2r, -2 clip(r)): flat only below 1 - eps
        expected, grad = [-1.6, -1.6, -2.0, -2.4, -2.6], [0.0, 0.4, 0.4, 0.4, 0.4]
    assert loss.item() == pytest.approx(-np.mean(expected))
    np.testing.assert_allclose(ratios.grad.numpy(), grad, atol=1e-7)


# ---------------------------------------------------------------------------------------------------------
# Normalization: against gymnasium's wrappers, and in the rollout
# ---------------------------------------------------------------------------------------------------------
def pendulum_observations(steps=600, seed=0):
    env = gym.make("Pendulum-v1")
    env.reset(seed=seed)
    env.action_space.seed(seed)
    return np.stack([env.step(env.action_space.sample())[0] for _ in range(steps)])


def test_running_mean_std_matches_gymnasium_normalize_observation():
    observations = pendulum_observations()
    # gymnasium's NormalizeObservation updates its statistics one observation at a time...
    reference = gym.wrappers.NormalizeObservation(gym.make("Pendulum-v1"))
    for obs in observations:
        reference.observation(obs)
    # ...ours once per rollout, with the whole batch: the parallel algorithm gives the same statistics.
    agent = make_agent()
    for rollout in np.split(observations, 3):
        agent.obs_rms.update(torch.as_tensor(rollout))
    # (gymnasium keeps them in the observations' float32, we in float64: equal to float32 precision)
    np.testing.assert_allclose(agent.obs_rms.mean.numpy(), reference.obs_rms.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(agent.obs_rms.var.numpy(), reference.obs_rms.var, rtol=1e-5)
    assert agent.obs_rms.count.item() == pytest.approx(reference.obs_rms.count)
    np.testing.assert_allclose(agent.obs_rms.var.numpy(), observations.var(0), rtol=1e-3)  # the data's own
    # And the same normalized observation (gymnasium's does not clip; no Pendulum observation is 10 std out).
    reference.update_running_mean = False
    for obs in observations[:5]:
        np.testing.assert_allclose(agent.normalize(torch.as_tensor(obs)).numpy(), reference.observation(obs),
                                   rtol=1e-5, atol=1e-6)


def test_normalized_observations_are_clipped():
    agent = make_agent()
    agent.obs_rms.update(torch.tensor([[0.0, 0.0, -1.0], [0.0, 0.0, 1.0]]))  # the third: mean 0, var ~1
    normalized = agent.normalize(torch.tensor([[0.0, 0.0, 50.0], [0.0, 0.0, -0.5]]))
    assert normalized[0, 2].item() == pytest.approx(10.0) and normalized[1, 2].item() == pytest.approx(-0.5, rel=1e-3)


def test_no_norm_obs_is_the_identity_in_training_and_play(tmp_path, monkeypatch):
    # --no-norm-obs: the networks see the observations as they are, beyond +-norm_clip too (MuJoCo's can be),
    # in the agent train() builds and in the one --play builds.
    built = []

    class Recorded(ppo.Agent):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setattr(ppo, "Agent", Recorded)
    monkeypatch.chdir(tmp_path)
    tiny = ["--env-id", "CountingContinuousTest-v0", "--num-envs", "2", "--num-steps", "6", "--minibatch-size", "6",
            "--total-timesteps", "12", "--hidden-size", "8", "--vectorization-mode", "sync", "--eval-every", "0"]
    for argv in ([*tiny, "--no-norm-obs"], ["--play", None, "--episodes", "1"]):
        if argv[1] is None:
            (argv[1],) = map(str, tmp_path.glob("runs/*/checkpoint.pt"))
        threads = torch.get_num_threads()
        try:
            assert launch.run_main(ppo, argv) == 0
        finally:  # (main() sets one thread)
            torch.set_num_threads(threads)
    x = torch.tensor([[50.0, -50.0, 0.5]])
    assert len(built) == 2 and all(torch.equal(agent.normalize(x[:, :agent.obs_rms.mean.numel()]),
                                               x[:, :agent.obs_rms.mean.numel()]) for agent in built)
    # With the default --norm-obs the same input is clipped to +-norm_clip.
    assert make_agent().normalize(x).abs().max().item() == pytest.approx(10.0)


class RewardStreamEnv(gym.Env):
    """Hands out the given rewards one per step, and never ends an episode."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, rewards):
        self.rewards = iter(rewards)

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), float(next(self.rewards)), False, False, {}


def test_reward_scaler_matches_gymnasium_normalize_reward_within_an_episode():
    rewards = np.random.default_rng(0).uniform(-16, 0, size=(300, 1)).astype(np.float32)  # one env, no end
    reference = gym.wrappers.NormalizeReward(RewardStreamEnv(rewards[:, 0]), gamma=0.9, epsilon=1e-8)
    reference.reset()
    scaled_by_gymnasium = [reference.step(np.zeros(1))[1] for _ in range(len(rewards))]
    scaler = ppo.RewardScaler(num_envs=1, gamma=0.9)
    scaled = scaler.scale(rewards, np.zeros_like(rewards), clip=10.0)[:, 0]  # updates the statistics, then scales
    assert scaler.return_rms.mean.item() == pytest.approx(float(reference.return_rms.mean), rel=1e-6)
    assert scaler.return_rms.var.item() == pytest.approx(float(reference.return_rms.var), rel=1e-6)
    # The scaled rewards differ in when the statistics are read: gymnasium scales each reward by the std
    # known at its step, we scale the whole rollout by the std after it (one divisor for every step of an
    # update). They agree on the last step, where both have seen the same returns.
    assert scaled[-1] == pytest.approx(float(scaled_by_gymnasium[-1]), rel=1e-5)
    assert scaled[0] != pytest.approx(float(scaled_by_gymnasium[0]), rel=1e-2)


def test_reward_scaler_restarts_the_return_at_every_episode_end():
    scaler = ppo.RewardScaler(num_envs=2, gamma=0.5)
    rewards = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]])
    dones = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])  # env 0's episode ends at t = 1 (terminated or truncated)
    scaled = scaler.scale(rewards, dones, clip=1.5)
    # R_t = 0.5 R_{t-1} + r_t, restarting after an end: env 0: 1, 1.5, then 1 (a new episode); env 1: 2, 3, 3.5.
    # (gymnasium's NormalizeReward instead multiplies by (1 - terminated) at the terminal step itself, and
    # never restarts at a truncation: its R runs on across Pendulum's time-limited episodes.)
    returns = np.array([1.0, 2.0, 1.5, 3.0, 1.0, 3.5])
    assert scaler.return_rms.mean.item() == pytest.approx(returns.mean() * 6 / (6 + 1e-4))
    np.testing.assert_allclose(scaler.returns, [1.0, 3.5])
    # Scaled by the std of the returns after this rollout, never shifted by their mean; clipped to +-clip.
    std = math.sqrt(scaler.return_rms.var.item() + 1e-8)
    assert 1.0 / std < 1.5 < 2.0 / std
    np.testing.assert_allclose(scaled, [[1.0 / std, 1.5]] * 3, rtol=1e-6)


class ActionEchoEnv(gym.Env):
    """Observation [last action received, 0, 0], reward 0; actions bounded to [-1, 1]; 3-step episodes."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, render_mode=None):
        self.render_mode = render_mode

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.k = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        self.k += 1
        return np.array([action[0], 0, 0], np.float32), 0.0, False, self.k == 3, {}


gym.register("ActionEchoTest-v0", entry_point=ActionEchoEnv)


def test_rollout_stores_the_sampled_action_and_the_env_gets_it_clipped():
    args = ppo.Args(env_id="ActionEchoTest-v0", num_envs=2, num_steps=6)
    envs = ppo.make_envs(args)
    agent = ppo.Agent(ppo.make_env(args), hidden_size=8)
    set_gaussian(agent, [0.0], [math.log(3.0)])  # sigma = 3: most samples fall outside [-1, 1]
    rollout = ppo.Rollout(args.num_steps, args.num_envs, (3,), (1,))
    next_obs, _ = envs.reset(seed=0)
    torch.manual_seed(0)
    ppo.collect_rollout(envs, agent, next_obs, rollout)
    envs.close()
    actions = rollout.actions[:, :, 0]
    assert np.abs(actions).max() > 1.0
    # What the env received (the next observation; episodes last 3 steps, so rows 0, 1, 3, 4 are followed by
    # an observation of the same episode) is the stored action clipped to the bounds...
    for t in (0, 1, 3, 4):
        np.testing.assert_allclose(rollout.obs[t + 1, :, 0], np.clip(actions[t], -1, 1))
    # ...and the stored log-prob is that of the stored (unclipped) sample.
    _, log_prob, _, _ = agent.get_action_and_value(torch.as_tensor(rollout.obs), torch.as_tensor(rollout.actions))
    np.testing.assert_allclose(log_prob.detach().numpy(), rollout.logprobs, rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------
# End to end from the command line
# ---------------------------------------------------------------------------------------------------------
def train_tiny(tmp_path, *extra):
    result = run_script(SCRIPT, *TINY, *extra, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return result


def run_by_name(tmp_path, name):
    return next(d for d in run_dirs(tmp_path) if f"__{name}__" in d.name)


@pytest.mark.parametrize("objective", ["clip", "kl"])
def test_train_resume_play(objective, tmp_path):
    train_tiny(tmp_path, "--objective", objective, "--capture-video", "--eval-episodes", "1")
    (run_dir,) = run_dirs(tmp_path)
    checkpoint = run_dir / "checkpoint.pt"
    ckpt = torch.load(checkpoint, weights_only=True)
    assert ckpt["global_step"] == 768 and ckpt["iteration"] == 3 and ckpt["args"]["objective"] == objective
    # Both sets of statistics went into the checkpoint: 3 rollouts of 256 observations and returns each.
    assert ckpt["agent"]["obs_rms.count"].item() == pytest.approx(768, abs=1e-3)
    assert ckpt["reward_scaler"]["return_rms.count"].item() == pytest.approx(768, abs=1e-3)
    logged = scalars(run_dir)
    expected_tags = CLEANRL_TAGS | {"eval/mean_return", "eval/mean_length", "losses/kl"}
    assert expected_tags | ({"charts/kl_beta"} if objective == "kl" else set()) <= set(logged)
    assert ("charts/kl_beta" in logged) == (objective == "kl")
    # Value clipping is off by default here (it never acted on scaled returns): nothing to log.
    assert not ppo.Args().clip_vloss and "losses/vf_clipfrac" not in logged
    assert [step for step, _ in logged["charts/SPS"]] == [256, 512, 768]
    assert not list(run_dir.glob("*.tmp")), "the atomic write left its temporary file behind"
    for step in (256, 512, 768):
        videos = list((run_dir / "videos" / f"eval-{step}").glob("*.mp4"))
        assert len(videos) == 1 and videos[0].stat().st_size > 0

    # --resume continues the run with its statistics and its beta, in the same folder.
    result = run_script(SCRIPT, "--resume", str(checkpoint), "--total-timesteps", "1280", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert run_dirs(tmp_path) == [run_dir]
    resumed = torch.load(checkpoint, weights_only=True)
    assert resumed["global_step"] == 1280
    assert resumed["agent"]["obs_rms.count"].item() == pytest.approx(1280, abs=1e-3)
    assert resumed["reward_scaler"]["return_rms.count"].item() == pytest.approx(1280, abs=1e-3)
    logged = scalars(run_dir)
    assert [step for step, _ in logged["charts/SPS"]] == [256, 512, 768, 1024, 1280]
    if objective == "kl":  # the first resumed update is penalized with the beta the checkpoint held
        assert dict(logged["charts/kl_beta"])[1024] == pytest.approx(ckpt["kl_beta"])

    result = run_script(SCRIPT, "--play", str(checkpoint), "--episodes", "2", "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:2]] == ["episode 1/2", "episode 2/2"]
    assert any(line.startswith("mean return over 2 episodes:") for line in lines)
    videos = list((run_dir / "videos").glob("play-*/*.mp4"))
    assert len(videos) == 2 and all(v.stat().st_size > 0 for v in videos)


def test_play_acts_with_the_saved_statistics(tmp_path):
    """A reloaded agent acts exactly as it did when saved: --play reproduces the last evaluation of training
    (the same greedy policy on the same seeded episodes), and only with the statistics it was saved with."""
    train_tiny(tmp_path, "--total-timesteps", "2560", "--num-steps", "256", "--minibatch-size", "128",
               "--eval-every", "5", "--eval-episodes", "3")
    (run_dir,) = run_dirs(tmp_path)
    checkpoint = run_dir / "checkpoint.pt"
    (last_step, logged_eval), = scalars(run_dir)["eval/mean_return"]  # 5 updates: evaluated after the last only
    ckpt = torch.load(checkpoint, weights_only=True)
    assert last_step == ckpt["global_step"]
    assert ckpt["agent"]["obs_rms.var"].numpy()[2] > 3, "the statistics are far from the identity"

    def played_mean(path):
        result = run_script(SCRIPT, "--play", str(path), "--episodes", "3", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        return float(re.search(r"mean return over 3 episodes: (-?[\d.]+)", result.stdout)[1])

    assert played_mean(checkpoint) == pytest.approx(logged_eval, abs=0.051)  # printed with one decimal
    # The same weights with the statistics reset to the identity (as if they had not been saved) act otherwise.
    ckpt["agent"]["obs_rms.mean"].zero_()
    ckpt["agent"]["obs_rms.var"].fill_(1.0)
    stripped = tmp_path / "stripped.pt"
    torch.save(ckpt, stripped)
    assert abs(played_mean(stripped) - logged_eval) > 1.0

    # In process too, exactly: a fresh agent (statistics at the identity) restored from the checkpoint replays
    # the last evaluation to the bit of the logged mean return (float32 in TensorBoard), one thread as training.
    args = ppo.Args()
    agent = ppo.Agent(ppo.make_env(args), args.hidden_size)
    assert torch.equal(agent.obs_rms.var, torch.ones(3, dtype=torch.float64))
    ppo.restore_agent(agent, torch.load(checkpoint, weights_only=True), str(checkpoint))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        returns, _ = ppo.evaluate(args, agent, 3)
    finally:
        torch.set_num_threads(threads)
    assert np.float32(np.mean(returns)) == np.float32(logged_eval)


def test_same_seed_same_run_and_the_objective_matters(tmp_path):
    runs = {}
    for name, extra in (("a", []), ("b", []), ("async", ["--vectorization-mode", "async"]),
                        ("kl", ["--objective", "kl"]), ("fixed", ["--objective", "kl", "--no-kl-adaptive",
                                                                 "--kl-beta-init", "3"]),
                        ("raw", ["--no-norm-obs", "--no-norm-reward"])):
        train_tiny(tmp_path, "--exp-name", name, "--eval-every", "0", *extra)
        runs[name] = scalars(run_by_name(tmp_path, name))
    for tag in ("losses/value_loss", "losses/policy_loss", "losses/kl", "charts/episodic_return"):
        assert runs["a"][tag] == runs["b"][tag] == runs["async"][tag], tag
    assert runs["kl"]["losses/policy_loss"] != runs["a"]["losses/policy_loss"]
    assert runs["raw"]["losses/value_loss"] != runs["a"]["losses/value_loss"]
    # The fixed-penalty baseline keeps beta where it started; the adaptive one moves it by factors of 2.
    assert [beta for _, beta in runs["fixed"]["charts/kl_beta"]] == [3.0, 3.0, 3.0]
    betas = [beta for _, beta in runs["kl"]["charts/kl_beta"]]
    assert betas[0] == 1.0 and all(b / a in (0.5, 1.0, 2.0) for a, b in zip(betas, betas[1:]))


def test_ctrl_c_saves_a_checkpoint_and_exits(tmp_path):
    ctrl_c_saves_a_checkpoint(SCRIPT, "--checkpoint-every", "0", "--eval-every", "0", cwd=tmp_path,
                              steps_per_update=8 * 256, total_timesteps=300_000)


# ---------------------------------------------------------------------------------------------------------
# Bad input: one clear line on stderr, exit code 2, no traceback
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--env-id", "NoSuchEnv-v0"], "cannot make --env-id 'NoSuchEnv-v0'"),
        (["--env-id", "CartPole-v1"], "Discrete action space; this script needs a flat Box"),
        (["--env-id", "CarRacing-v3"], "observations are Box(0, 255, (96, 96, 3), uint8); this script needs a flat"),
        (["--num-steps", "0"], "--num-steps must be positive"),
        (["--num-envs", "2", "--num-steps", "16", "--minibatch-size", "64"], "larger than the rollout"),
        (["--total-timesteps", "1000"], "less than one rollout"),
        (["--gamma", "1.5"], "--gamma must be in [0, 1]"),
        (["--kl-target", "0"], "--kl-target must be positive"),
        (["--kl-beta-init", "-1"], "--kl-beta-init must be positive"),
        (["--norm-clip", "0"], "--norm-clip must be positive"),
        (["--resume", "missing.pt"], "no checkpoint at missing.pt"),
    ],
)
def test_bad_arguments(argv, fragment, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_usage_error(ppo, capsys, monkeypatch, argv, fragment)
    assert not (tmp_path / "runs").exists(), "a refused run must not leave a run folder behind"


def test_unknown_objective_is_a_usage_error(tmp_path):
    result = run_script(SCRIPT, "--objective", "trpo", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "trpo" in result.stderr


def test_bad_checkpoints(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_unreadable_checkpoints_refused(ppo, capsys, monkeypatch, tmp_path)

    lander_args = ppo_lunarlander_vec.Args()
    lander_agent = ppo_lunarlander_vec.Agent(ppo_lunarlander_vec.make_env(lander_args), lander_args.hidden_size)
    lander = tmp_path / "lander.pt"
    ppo_lunarlander_vec.save_checkpoint(str(lander), lander_args, lander_agent,
                                        torch.optim.Adam(lander_agent.parameters()), 0, 0, SCHEDULE)
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(lander)], "was written by ppo_lunarlander_vec.py")

    args = ppo.Args()
    agent = ppo.Agent(ppo.make_env(args), args.hidden_size)
    real = tmp_path / "real.pt"
    scaler = ppo.RewardScaler(args.num_envs, args.gamma)
    ppo.save_checkpoint(str(real), args, agent, torch.optim.Adam(agent.parameters()), 0, 0, SCHEDULE, scaler, 1.0)
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--env-id", "MountainCarContinuous-v0"],
                       "holds a policy for Pendulum-v1, not for --env-id MountainCarContinuous-v0")
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--hidden-size", "32"], "does not fit")
    ppo.save_checkpoint(str(real), args, agent, torch.optim.Adam(agent.parameters()), args.total_timesteps, 146,
                        SCHEDULE, scaler, 1.0)
    expect_usage_error(ppo, capsys, monkeypatch, ["--resume", str(real)], "give a larger --total-timesteps")
