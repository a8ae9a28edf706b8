"""ppo_lstm_memory.py: the velocity-hidden CartPole against gymnasium's own; the LSTM state wiped at episode starts
and carried otherwise, by hand; the update's replay of a rollout giving pi_old's log-probabilities and values to
the bit, across episodes that end mid-rollout and a rollout that starts mid-episode; the truncation bootstrap read
from the state the episode reached; evaluation carrying the state; the script end to end; bad input."""

import gymnasium as gym
import numpy as np
import pytest
import torch

import ppo_lstm_memory as ppo
from conftest import (CLEANRL_TAGS, SCHEDULE, expect_unreadable_checkpoints_refused, expect_usage_error, run_dirs,
                      run_script, scalars)

SCRIPT = "ppo_lstm_memory.py"
# 4 envs x 16 steps = 64 samples per update, minibatches of 2 envs; 2 updates, an evaluation after each.
TINY = ["--total-timesteps", "128", "--num-envs", "4", "--num-steps", "16", "--minibatch-size", "32",
        "--update-epochs", "2", "--hidden-size", "16", "--checkpoint-every", "1", "--eval-every", "1",
        "--eval-episodes", "1"]


# ---------------------------------------------------------------------------------------------------------
# The environment
# ---------------------------------------------------------------------------------------------------------
def test_cartpole_novel_is_cartpole_without_the_velocities():
    full, hidden = gym.make("CartPole-v1"), gym.make("CartPoleNoVel-v1")
    assert hidden.observation_space.shape == (2,) and hidden.spec.max_episode_steps == 500
    obs_full, _ = full.reset(seed=3)
    obs_hidden, _ = hidden.reset(seed=3)
    np.testing.assert_array_equal(obs_hidden, obs_full[[0, 2]])
    for step in range(200):
        action = step % 3 == 0  # a fixed sequence of actions: the same physics in both
        obs_full, r_full, term_full, trunc_full, _ = full.step(int(action))
        obs_hidden, r_hidden, term_hidden, trunc_hidden, _ = hidden.step(int(action))
        np.testing.assert_array_equal(obs_hidden, obs_full[[0, 2]])
        assert (r_full, term_full, trunc_full) == (r_hidden, term_hidden, trunc_hidden)
        if term_full or trunc_full:
            break
    assert term_full, "the fixed actions should drop the pole"


def test_frame_stack_puts_the_last_k_observations_side_by_side():
    env = ppo.make_env(ppo.Args(frame_stack=3))
    first, _ = env.reset(seed=0)
    assert first.shape == (6,)
    np.testing.assert_array_equal(first[:2], first[4:6])  # the first observation repeated until there are 3
    np.testing.assert_array_equal(first[2:4], first[4:6])
    second, *_ = env.step(0)
    np.testing.assert_array_equal(second[2:4], first[4:6])  # the older frames shift left
    assert not np.array_equal(second[4:6], first[4:6])


# ---------------------------------------------------------------------------------------------------------
# The LSTM state: wiped at an episode's start, carried otherwise
# ---------------------------------------------------------------------------------------------------------
def tiny_agent(lstm=True, obs_size=2, hidden_size=8, seed=0):
    torch.manual_seed(seed)
    env = gym.make("CartPoleNoVel-v1") if obs_size == 2 else gym.make("CountingTest-v0")
    return ppo.Agent(env, hidden_size, lstm)


def test_get_states_steps_the_lstm_and_wipes_the_state_at_episode_starts():
    agent = tiny_agent()
    x = torch.randn(4, 3, 2)  # T = 4 steps of N = 3 envs
    starts = torch.tensor([[0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 0, 0]], dtype=torch.float32)
    state = (torch.randn(3, 8), torch.randn(3, 8))
    hidden, final = agent.get_states(x, state, starts)

    # By hand, env by env: nn.LSTMCell stepped on the encoder's features, the state zeroed where starts is 1.
    for env in range(3):
        h, c = state[0][env:env + 1], state[1][env:env + 1]
        for t in range(4):
            if starts[t, env]:
                h, c = torch.zeros_like(h), torch.zeros_like(c)
            h, c = agent.memory(agent.encoder(x[t, env:env + 1]), (h, c))
            torch.testing.assert_close(hidden[t, env:env + 1], h, rtol=0, atol=1e-6)
        torch.testing.assert_close(final[0][env:env + 1], h, rtol=0, atol=1e-6)
        torch.testing.assert_close(final[1][env:env + 1], c, rtol=0, atol=1e-6)
    # Where an episode starts, what came before cannot matter: another incoming state, the same outputs.
    other, _ = agent.get_states(x, (torch.randn(3, 8), torch.randn(3, 8)), starts)
    assert torch.equal(other[2:, 0], hidden[2:, 0]) and torch.equal(other[1:, 1], hidden[1:, 1])
    assert not torch.equal(other[:2, 0], hidden[:2, 0]), "before its episode's start env 0 reads the state"
    # And without the wipe the LSTM would carry the last episode into the next one.
    carried, _ = agent.get_states(x, state, torch.zeros(4, 3))
    assert not torch.equal(carried[2:, 0], hidden[2:, 0])


def test_no_lstm_has_no_memory():
    agent = tiny_agent(lstm=False)
    assert not any(isinstance(m, torch.nn.LSTMCell) for m in agent.modules())
    x = torch.randn(5, 2, 2)
    alone, _ = agent.get_states(x, agent.initial_state(2), torch.zeros(5, 2))
    for t in range(5):  # each step's output depends on that step's input alone
        one, _ = agent.get_states(x[t:t + 1], (torch.randn(2, 8), torch.randn(2, 8)), torch.zeros(1, 2))
        torch.testing.assert_close(one[0], alone[t], rtol=0, atol=1e-6)


def test_the_lstm_is_initialized_as_documented():
    agent = tiny_agent(hidden_size=16)
    for name, param in agent.memory.named_parameters():
        if "bias" in name:
            assert torch.equal(param, torch.zeros_like(param)), name
        else:  # orthogonal with gain 1: the [4h, h] matrix has orthonormal columns
            torch.testing.assert_close(param.T @ param, torch.eye(16), rtol=0, atol=1e-5)


# ---------------------------------------------------------------------------------------------------------
# The rollout and its replay in the update
# ---------------------------------------------------------------------------------------------------------
def counting_rollouts(agent, rollouts=2, num_steps=5):
    """`rollouts` rollouts of 5 steps of 2 counting envs (env 0 terminates after 3 steps, env 1 is truncated after
    2): episodes end mid-rollout, and the second rollout starts mid-episode, from a state that is not zeros."""
    args = ppo.Args(env_id="CountingTest-v0", num_envs=2, num_steps=num_steps, seed=0, vectorization_mode="sync")
    envs = ppo.make_envs(args)
    memory = (envs.reset(seed=0)[0], np.ones(2, np.float32), agent.initial_state(2))
    made = []
    for _ in range(rollouts):
        rollout = ppo.Rollout(num_steps, 2, (3,))
        memory, last_value, episodes = ppo.collect_rollout(envs, agent, memory, rollout)
        made.append((rollout, memory, last_value))
    envs.close()
    return made


def replay(agent, rollout, envs_idx, starts=None, state=None):
    """The update's first forward pass over the envs `envs_idx` of `rollout`, as train() makes it."""
    mb = torch.tensor(envs_idx)
    state = state or (rollout.initial_state[0][mb], rollout.initial_state[1][mb])
    starts = torch.as_tensor(rollout.starts)[:, mb] if starts is None else starts
    _, logprob, _, value, _ = agent.get_action_and_value(
        torch.as_tensor(rollout.obs)[:, mb], state, starts, torch.as_tensor(rollout.actions)[:, mb])
    return logprob, value


def test_the_rollout_keeps_its_starting_state_and_the_episode_starts():
    agent = tiny_agent(obs_size=3)
    (first, memory, _), (second, _, _) = counting_rollouts(agent)
    # The counting envs' step counters: env 0 ends after 3 steps (t = 2), env 1 after 2 (t = 1 and t = 3).
    np.testing.assert_array_equal(first.obs[:, :, 0], [[0, 0], [1, 1], [2, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(first.starts, [[1, 1], [0, 0], [0, 1], [1, 0], [0, 1]])
    assert all(torch.equal(s, torch.zeros(2, 8)) for s in first.initial_state)
    # The second rollout goes on where the first stopped, both envs mid-episode: env 0 at k = 2, env 1 at k = 1.
    np.testing.assert_array_equal(second.obs[0, :, 0], [2, 1])
    np.testing.assert_array_equal(second.starts[0], [0, 0])
    assert second.initial_state is memory[2]
    assert not torch.equal(second.initial_state[0][0], torch.zeros(8)), "env 0's state carries its episode"


@pytest.mark.parametrize("envs_idx", [[0, 1], [0], [1]])
def test_the_update_replays_pi_old_exactly_at_the_first_epoch(envs_idx):
    """The recomputed log pi(a_t|h_t) and V(h_t) equal the rollout's, in both rollouts: across the episodes that
    end mid-rollout (the state wiped there) and in the rollout that starts mid-episode (from the kept state)."""
    agent = tiny_agent(obs_size=3)
    for rollout, _, _ in counting_rollouts(agent):
        logprob, value = replay(agent, rollout, envs_idx)
        torch.testing.assert_close(logprob, torch.as_tensor(rollout.logprobs)[:, envs_idx], rtol=0, atol=1e-6)
        torch.testing.assert_close(value, torch.as_tensor(rollout.values)[:, envs_idx], rtol=0, atol=1e-6)
    # The whole batch, as the rollout computed it: the same operations on the same shapes, to the bit.
    for rollout, _, _ in counting_rollouts(agent):
        logprob, _ = replay(agent, rollout, [0, 1])
        assert torch.equal(logprob, torch.as_tensor(rollout.logprobs))


def test_a_training_update_replays_pi_old_exactly(tmp_path):
    """train()'s own replay: with one epoch of one minibatch (both envs), the logged KL estimates are computed before
    the update's only step, so they are 0 (to rounding) in every update, the second and third of which start
    mid-episode (a random CartPole episode lasts about 20 steps, a rollout 16)."""
    result = run_script(SCRIPT, "--total-timesteps", "96", "--num-envs", "2", "--num-steps", "16",
                        "--minibatch-size", "32", "--update-epochs", "1", "--hidden-size", "16", "--eval-every", "0",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    logged = scalars(run_dirs(tmp_path)[0])
    assert len(logged["losses/approx_kl"]) == 3 and len(logged["charts/episodic_return"]) >= 1
    for tag in ("losses/approx_kl", "losses/old_approx_kl", "losses/clipfrac"):
        assert all(abs(value) < 1e-7 for _, value in logged[tag]), (tag, logged[tag])


def test_a_replay_without_the_wipes_or_the_kept_state_is_not_pi_old():
    """What the exact replay above rules out: replaying without the episode-start flags, or from zeros instead of
    the kept state, gives other log-probabilities (so the test above can fail)."""
    agent = tiny_agent(obs_size=3)
    (first, _, _), (second, _, _) = counting_rollouts(agent)
    no_wipes, _ = replay(agent, first, [0, 1], starts=torch.zeros(5, 2))
    assert not torch.allclose(no_wipes, torch.as_tensor(first.logprobs), rtol=0, atol=1e-6)
    from_zeros, _ = replay(agent, second, [0, 1], state=agent.initial_state(2))
    assert not torch.allclose(from_zeros[:, 0], torch.as_tensor(second.logprobs)[:, 0], rtol=0, atol=1e-6)


def test_truncation_bootstraps_from_the_state_the_episode_reached_and_last_value_goes_on():
    agent = tiny_agent(obs_size=3)
    (first, memory, last_value), (second, _, _) = counting_rollouts(agent)
    # Env 1 is truncated at t = 1 (its final observation k = 2): V(final obs) read with the state after t = 1.
    hidden, _ = agent.get_states(torch.as_tensor(first.obs)[:2, 1:], (first.initial_state[0][1:],
                                 first.initial_state[1][1:]), torch.as_tensor(first.starts)[:2, 1:])
    state = agent.memory(agent.encoder(torch.tensor([[2.0, 0.0, 0.0]])), (hidden[-1], _cell(agent, first, 1, 2)))
    torch.testing.assert_close(torch.tensor(first.final_values[1, 1]), agent.critic(state[0])[0, 0], rtol=0,
                               atol=1e-6)
    assert first.final_values[2, 0] == 0.0  # env 0 terminated at t = 2: no future
    # last_value is V(s_T) under the state the next rollout starts from: its first row's value.
    np.testing.assert_allclose(last_value, second.values[0], rtol=0, atol=1e-6)


def _cell(agent, rollout, env, steps):
    """The LSTM's cell state c after `steps` steps of `env` in `rollout`."""
    state = (rollout.initial_state[0][env:env + 1], rollout.initial_state[1][env:env + 1])
    _, final = agent.get_states(torch.as_tensor(rollout.obs)[:steps, env:env + 1], state,
                                torch.as_tensor(rollout.starts)[:steps, env:env + 1])
    return final[1]


def test_evaluation_carries_the_state_and_wipes_it_per_episode(monkeypatch):
    args = ppo.Args(seed=5)
    agent = tiny_agent(hidden_size=args.hidden_size)
    seen = []
    real = agent.get_action_and_value

    def spy(x, state, starts, action=None, greedy=False):
        out = real(x, state, starts, action, greedy)
        seen.append((state, starts.item(), out[4], greedy))
        return out

    monkeypatch.setattr(agent, "get_action_and_value", spy)
    returns, lengths = ppo.evaluate(args, agent, 2)
    assert len(seen) == sum(lengths) and all(greedy for *_, greedy in seen)
    episode_starts = [0, lengths[0]]
    for i, (state, start, after, _) in enumerate(seen):
        if i in episode_starts:  # each episode from zeros, flagged as a start
            assert start == 1.0 and all(torch.equal(s, torch.zeros_like(s)) for s in state)
        else:  # every other step from the state the last one left
            assert start == 0.0 and all(s is a for s, a in zip(state, seen[i - 1][2]))
    assert ppo.evaluate(args, agent, 2) == (returns, lengths)  # greedy and seeded: the same episodes


# ---------------------------------------------------------------------------------------------------------
# End to end from the command line
# ---------------------------------------------------------------------------------------------------------
def test_train_resume_play(tmp_path):
    result = run_script(SCRIPT, *TINY, "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (run_dir,) = run_dirs(tmp_path)
    checkpoint = run_dir / "checkpoint.pt"
    ckpt = torch.load(checkpoint, weights_only=True)
    assert ckpt["global_step"] == 128 and ckpt["args"]["env_id"] == "CartPoleNoVel-v1"
    assert any(key.startswith("memory.") for key in ckpt["agent"]), "the LSTM's weights are in the checkpoint"
    logged = scalars(run_dir)
    assert CLEANRL_TAGS | {"eval/mean_return", "losses/update_epochs", "losses/vf_clipfrac"} <= set(logged)
    assert [step for step, _ in logged["eval/mean_return"]] == [64, 128]
    assert all(len(list((run_dir / "videos" / f"eval-{s}").glob("*.mp4"))) == 1 for s in (64, 128))

    result = run_script(SCRIPT, "--resume", str(checkpoint), "--total-timesteps", "256", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert run_dirs(tmp_path) == [run_dir] and torch.load(checkpoint, weights_only=True)["global_step"] == 256

    result = run_script(SCRIPT, "--play", str(checkpoint), "--episodes", "2", "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert any(line.startswith("mean return over 2 episodes:") for line in result.stdout.splitlines())
    assert len(list((run_dir / "videos").glob("play-*/*.mp4"))) == 2


def test_the_baselines_train_and_play(tmp_path):
    """--no-lstm and --no-lstm --frame-stack 4: their checkpoints hold no LSTM and play with the flags they trained
    with."""
    for name, flags in (("mlp", ["--no-lstm"]), ("stack", ["--no-lstm", "--frame-stack", "4"])):
        result = run_script(SCRIPT, *TINY, "--exp-name", name, *flags, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        (run_dir,) = [d for d in run_dirs(tmp_path) if f"__{name}__" in d.name]
        ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=True)
        assert not any("weight_hh" in key for key in ckpt["agent"])
        assert ckpt["agent"]["encoder.0.weight"].shape[1] == (8 if name == "stack" else 2)
        result = run_script(SCRIPT, "--play", str(run_dir / "checkpoint.pt"), "--episodes", "1", cwd=tmp_path)
        assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------------------------------------------------
# Bad input: one clear line on stderr, exit code 2, no traceback
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--num-envs", "6", "--num-steps", "32", "--minibatch-size", "48"], "must be a multiple of --num-steps (32)"),
        (["--frame-stack", "0"], "--frame-stack must be positive"),
        (["--num-envs", "3", "--minibatch-size", "64"], "must be a multiple of --minibatch-size"),
        (["--env-id", "Pendulum-v1"], "Box action space; this script needs Discrete"),
        (["--hidden-size", "0"], "--hidden-size must be positive"),
    ],
)
def test_bad_arguments(argv, fragment, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_usage_error(ppo, capsys, monkeypatch, argv, fragment)
    assert not (tmp_path / "runs").exists(), "a refused run must not leave a run folder behind"


def test_bad_checkpoints(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_unreadable_checkpoints_refused(ppo, capsys, monkeypatch, tmp_path)
    args = ppo.Args(lstm=False)
    agent = ppo.Agent(ppo.make_env(args), args.hidden_size, lstm=False)
    path = tmp_path / "mlp.pt"
    ppo.save_checkpoint(str(path), args, agent, torch.optim.Adam(agent.parameters()), 0, 0, SCHEDULE)
    # The checkpoint's --no-lstm is its default on --play; asking for the LSTM cannot load its weights.
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(path), "--lstm"], "does not fit")
