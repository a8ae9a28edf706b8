"""ppo_mario_cnn.py: the reward shaping against hand-computed values, the gym/gymnasium adapter against fake envs
of both API shapes and the real gym-super-mario-bros of this Python, the frame pipeline, the two networks, the
minibatch stream, and the script end to end from its command line (train, KL early stop, resume, play with
MP4, determinism, Ctrl-C, bad input, two torchrun ranks)."""

import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

import ppo_mario_cnn as ppo
from benchmarks.core import launch
from conftest import (CLEANRL_TAGS, SCHEDULE, ctrl_c_saves_a_checkpoint, expect_unreadable_checkpoints_refused,
                      expect_usage_error, run_dirs, run_main, run_script, scalars, two_torchrun_ranks)

STOP_MESSAGE = "Ctrl-C: stopping at the next step and saving the last complete update"
SCRIPT = "ppo_mario_cnn.py"
# A tiny configuration: 2 envs x 64 steps = 128 samples per update, 2 updates, 4 + 4 gradient steps of 64.
TINY = ["--total-timesteps", "256", "--num-envs", "2", "--num-steps", "64", "--minibatch-size", "64",
        "--train-pi-iters", "4", "--train-v-iters", "4", "--checkpoint-every", "1", "--no-cuda",
        "--vectorization-mode", "sync"]


# ---------------------------------------------------------------------------------------------------------
# MarioReward on a scripted sequence of steps
# ---------------------------------------------------------------------------------------------------------
class ScriptedEnv(gym.Env):
    """Plays back a list of (reward, terminated, truncated, info) steps; reset's info holds score 0."""

    observation_space = gym.spaces.Box(0, 255, (2, 2), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, steps):
        self.steps = list(steps)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros((2, 2), np.uint8), {"score": 0}

    def step(self, action):
        reward, terminated, truncated, info = self.steps.pop(0)
        return np.zeros((2, 2), np.uint8), reward, terminated, truncated, info


def info(score, flag=False):
    return {"score": score, "flag_get": flag, "x_pos": 40}


def test_mario_reward_by_hand():
    env = ppo.MarioReward(ScriptedEnv([
        (2.0, False, False, info(0)),       # moved right: (2 + 0/40) / 10
        (3.0, False, False, info(100)),     # a goomba stomped, +100 points: (3 + 100/40) / 10
        (-1.0, False, False, info(100)),    # the clock ticked: (-1 + 0) / 10
        (-15.0, True, False, info(300)),    # died after a 200-point brick: (-15 + 200/40 - 50) / 10
    ]))
    env.reset()
    rewards = [env.step(0)[1] for _ in range(4)]
    assert rewards == pytest.approx([0.2, 0.55, -0.1, -6.0])

    env = ppo.MarioReward(ScriptedEnv([
        (5.0, False, False, info(0)),
        (4.0, True, False, info(5000, flag=True)),  # the flag, 5000 points: (4 + 5000/40 + 50) / 10
    ]))
    env.reset()
    assert [env.step(0)[1] for _ in range(2)] == pytest.approx([0.5, 17.9])

    # A truncated episode (a time limit, not a death) gets neither +50 nor -50; a reset restarts the score.
    env = ppo.MarioReward(ScriptedEnv([(1.0, False, True, info(400)), (1.0, False, False, info(40))]))
    env.reset()
    assert env.step(0)[1] == pytest.approx((1 + 400 / 40) / 10)
    env.reset()
    assert env.step(0)[1] == pytest.approx((1 + 40 / 40) / 10)


# ---------------------------------------------------------------------------------------------------------
# ToGymnasium against both API shapes
# ---------------------------------------------------------------------------------------------------------
class OldSpace:
    """Spaces as the old gym defines them: only the attributes ToGymnasium reads."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)


class OldApiEnv:
    """The old gym API (gym-super-mario-bros 7.x through JoypadSpace): reset() takes no arguments and returns
    the observation alone, step() returns (obs, reward, done, info). Like nes-py, every observation is the SAME
    array, the emulator's screen, overwritten by the next frame. Episode: done after 3 steps; with `time_limit`,
    the third step is a time limit's (info["TimeLimit.truncated"])."""

    observation_space = OldSpace(low=np.zeros((2, 3), np.uint8), high=np.full((2, 3), 255, np.uint8),
                                 shape=(2, 3), dtype=np.uint8)
    action_space = OldSpace(n=5)

    def __init__(self, time_limit=False):
        self.screen = np.zeros((2, 3), np.uint8)
        self.time_limit, self.closed = time_limit, False

    def reset(self):
        self.t = 0
        self.screen[:] = 0
        return self.screen

    def step(self, action):
        self.t += 1
        self.screen[:] = 10 * self.t + action
        info = {"x_pos": self.t}
        if self.time_limit and self.t == 3:
            info["TimeLimit.truncated"] = True
        return self.screen, np.float32(0.5), self.t == 3, info

    def close(self):
        self.closed = True


class NewApiEnv(gym.Env):
    """The gymnasium API (gym-super-mario-bros 9.x): reset(seed, options) -> (obs, info), 5-tuple steps."""

    observation_space = gym.spaces.Box(0, 255, (2, 3), np.uint8)
    action_space = gym.spaces.Discrete(7)

    def reset(self, *, seed=None, options=None):
        self.seen = (seed, options)
        self.t = 0
        return np.zeros((2, 3), np.uint8), {"x_pos": 0}

    def step(self, action):
        self.t += 1
        return np.full((2, 3), self.t, np.uint8), 1.5, self.t == 2, self.t == 3, {"x_pos": self.t}


def test_to_gymnasium_speaks_gymnasium_around_an_old_api_env():
    env = ppo.ToGymnasium(OldApiEnv())
    assert env.old_api
    assert isinstance(env.observation_space, gym.spaces.Box) and env.observation_space.shape == (2, 3)
    assert env.observation_space.dtype == np.uint8 and env.observation_space.high.max() == 255
    assert isinstance(env.action_space, gym.spaces.Discrete) and env.action_space.n == 5
    obs, reset_info = env.reset(seed=3)  # the old env takes no seed: ToGymnasium must not pass one on
    assert reset_info == {} and (obs == 0).all()
    first, reward, terminated, truncated, step_info = env.step(2)
    assert (first == 12).all() and reward == 0.5 and type(reward) is float
    assert (terminated, truncated, step_info) == (False, False, {"x_pos": 1})
    second = env.step(1)[0]
    assert (first == 12).all() and (second == 21).all()  # copies: the next frame did not overwrite the first
    assert (env.render() == 21).all()  # the last screen, for RecordVideo
    assert env.step(0)[2:4] == (True, False)  # done, without a time limit's flag: terminated
    env.close()
    assert env.env.closed

    env = ppo.ToGymnasium(OldApiEnv(time_limit=True))
    env.reset()
    env.step(0), env.step(0)
    assert env.step(0)[2:4] == (False, True)  # done by a time limit: truncated, not terminated


def test_to_gymnasium_passes_a_gymnasium_env_through():
    env = ppo.ToGymnasium(NewApiEnv())
    assert not env.old_api and env.action_space.n == 7
    obs, reset_info = env.reset(seed=5, options={"a": 1})
    assert env.env.seen == (5, {"a": 1}) and reset_info == {"x_pos": 0}
    assert env.step(0)[1:] == (1.5, False, False, {"x_pos": 1})
    assert env.step(0)[2:4] == (True, False)
    assert env.step(0)[2:4] == (False, True)


def test_to_gymnasium_around_this_pythons_mario_passes_gymnasiums_checker():
    from gymnasium.utils.env_checker import check_env

    env = ppo.make_env(ppo.Args()).unwrapped  # ToGymnasium(JoypadSpace(SuperMarioBrosEnv))
    assert isinstance(env, ppo.ToGymnasium) and env.old_api == (sys.version_info < (3, 13))
    check_env(env, skip_render_check=True)
    env.close()


# ---------------------------------------------------------------------------------------------------------
# The real gym-super-mario-bros of this Python, raw and through ToGymnasium: 7.4.0 (nes-py 8.2.1, the old gym
# API) below Python 3.13, 9.x (nes-py 9.x, gymnasium's API) from 3.13, as requirements.txt installs them.
# ---------------------------------------------------------------------------------------------------------
OLD_RELEASE = sys.version_info < (3, 13)
# 7.x's info, all of it; 9.x's holds these and more.
INFO_KEYS = {"coins", "flag_get", "life", "score", "stage", "status", "time", "world", "x_pos", "y_pos"}


def play_world_1_1(env, policy):
    """Play one episode of `env` (old API or gymnasium's) with policy(t) -> action; return the first
    observation, the reset's info (None from an old-API env: its reset returns the observation alone) and the
    steps as (reward, terminated, truncated, info)."""
    if OLD_RELEASE and not isinstance(env, gym.Env):
        first, reset_info = env.reset(), None
    else:
        first, reset_info = env.reset(seed=0)
    steps = []
    while not steps or not (steps[-1][1] or steps[-1][2]):
        result = env.step(policy(len(steps)))
        if len(result) == 4:  # the old API: (obs, reward, done, info), with no time limit around the env
            _, reward, done, info = result
            assert "TimeLimit.truncated" not in info
            result = (None, reward, done, False, info)
        steps.append(result[1:])
    return first, reset_info, steps


def test_this_pythons_mario_release_raw():
    """Run right and jump through World 1-1 on the env itself (JoypadSpace(SuperMarioBrosEnv), no ToGymnasium):
    Mario takes a coin from the first ? block at step 137 (200 points) and dies at the first goomba on step
    160, on either release (the same emulator, frame for frame). What differs is the API, the info and the
    reward."""
    from importlib.metadata import version

    assert version("gym_super_mario_bros") == "7.4.0" if OLD_RELEASE else version("gym_super_mario_bros")[0] == "9"
    nes = ppo.gym_super_mario_bros.SuperMarioBrosEnv(target=(1, 1))
    env = ppo.JoypadSpace(nes, ppo.RIGHT_ONLY)
    assert isinstance(env, gym.Env) != OLD_RELEASE
    first, reset_info, steps = play_world_1_1(env, lambda t: 2 if t % 32 < 24 else 1)  # right + A, or right
    # The screen: RGB, 240 x 256, a view of the emulator's frame buffer (which is why ToGymnasium copies it):
    # the first frame, the same on both releases, has been overwritten by the last.
    assert first.shape == (240, 256, 3) and first.dtype == np.uint8 and np.shares_memory(first, nes.screen)
    assert int(first.sum()) != 28_492_876 and np.array_equal(first, nes.screen)
    env.reset()
    assert int(nes.screen.sum()) == 28_492_876
    # The episode: one life, ended by the goomba (terminated); never truncated, neither has a time limit (the
    # game's clock running out kills Mario, which terminates the episode too).
    rewards = [reward for reward, *_ in steps]
    assert len(steps) == 160 and steps[-1][1] and not any(truncated for _, _, truncated, _ in steps)
    coin, death = steps[137][3], steps[-1][3]
    assert (coin["score"], coin["coins"], death["x_pos"], death["flag_get"]) == (200, 1, 296, False)
    if OLD_RELEASE:
        assert reset_info is None and all(set(info) == INFO_KEYS for *_, info in steps)
        # The reward: x moved (1 pixel at the coin's step), the clock's ticks, -25 for dying, clipped to 15.
        assert (rewards[137], rewards[-1], sum(rewards)) == (1, -15, 231)
    else:
        extra = {"reward_components", "x_pos_max", "powerup_level", "is_dying", "timeout"}
        assert INFO_KEYS | extra <= set(reset_info) == set(coin) == set(death)
        assert not any(info["timeout"] for *_, info in steps)
        # The reward also pays points (/ 100), coins (5 each), power-ups (+-5) and the flag (50), and x only
        # past the furthest x so far: at the coin's step, 1 + 200 / 100 + 5.
        assert rewards[137] == 8 and coin["reward_components"] == {
            "progress": 1, "time": 0, "score": 2, "coins": 5, "powerup": 0, "completion": 0, "death": 0}
        assert rewards[-1] == -15 and death["reward_total_unclipped"] == -23 and sum(rewards) == 238
    env.close()


def test_to_gymnasium_gives_7x_reward_on_either_release():
    """Through ToGymnasium, both releases give the same episode, reward for reward: 7.x's reward, which walking
    left costs (9.x's own progress term pays nothing there, and nothing on the way back until Mario is past
    his furthest x). Right for 40 steps, left for 24, then right and jump until Mario dies, at x 1138."""
    env = ppo.ToGymnasium(ppo.JoypadSpace(ppo.gym_super_mario_bros.SuperMarioBrosEnv(target=(1, 1)),
                                          ppo.SIMPLE_MOVEMENT))
    _, reset_info, steps = play_world_1_1(env, lambda t: 1 if t < 40 else 6 if t < 64 else 2 if t % 32 < 24 else 1)
    rewards = [reward for reward, *_ in steps]
    assert all(type(r) is float for r in rewards)
    assert len(steps) == 708 and steps[-1][1] and steps[-1][3]["x_pos"] == 1138 and steps[-1][3]["score"] == 0
    assert rewards[58] == -2.0 and rewards[-1] == -15.0 and sum(rewards) == 1046.0  # step 58: 2 pixels left
    if not OLD_RELEASE:
        assert steps[58][3]["reward_components"]["progress"] == 0  # what 9.x itself pays for the step left
    env.close()


# ---------------------------------------------------------------------------------------------------------
# The real env: frame pipeline, episodes, what is logged
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("action_type, n", [("right", 5), ("simple", 7), ("complex", 12)])
def test_frame_pipeline_shapes_and_action_sets(action_type, n):
    env = ppo.make_env(ppo.Args(action_type=action_type))
    obs, _ = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape == (4, 84, 84) and obs.dtype == np.uint8
    assert env.action_space.n == n
    assert (obs[0] == obs[3]).all()  # after a reset the first frame fills the stack
    obs, *_ = env.step(1)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8 and not (obs[3] == obs[0]).all()
    env.close()


def test_an_episode_reports_the_envs_own_reward_and_how_far_mario_got():
    env = ppo.make_env(ppo.Args(action_type="right"))
    env.reset(seed=0)
    shaped, steps = 0.0, 0
    terminated = truncated = False
    while not (terminated or truncated):  # run right and jump: Mario gets somewhere, then dies
        _, reward, terminated, truncated, step_info = env.step(2 if steps % 8 < 6 else 0)
        shaped += reward
        steps += 1
    assert terminated and not step_info["flag_get"] and step_info["x_pos"] > 100
    # shaped = (own + score / 40 - 50) / 10, so the env's own reward sum is recovered from it by hand:
    own = 10 * shaped - step_info["score"] / 40 + 50
    assert step_info["episode"]["r"] == pytest.approx(own, abs=1e-3)
    assert steps <= step_info["episode"]["l"] <= 4 * steps  # lengths in frames
    env.close()


def test_agent_has_two_separate_networks():
    torch.manual_seed(0)
    agent = ppo.Agent(ppo.make_env(ppo.Args()), hidden_size=512)
    x = torch.randint(0, 256, (5, 4, 84, 84), dtype=torch.uint8)
    action, log_prob, entropy, value = agent.get_action_and_value(x)
    assert action.shape == log_prob.shape == entropy.shape == value.shape == (5,)
    assert entropy.min().item() > 0.99 * np.log(7)  # the 0.01-gain policy head starts near uniform
    assert {id(p) for p in agent.actor_parameters()}.isdisjoint(id(p) for p in agent.critic_parameters())
    assert len(agent.actor_parameters()) + len(agent.critic_parameters()) == len(list(agent.parameters()))
    # The value loss reaches only the critic, the policy loss only the actor.
    agent.get_value(x).sum().backward()
    assert all(p.grad is None for p in agent.actor_parameters())
    assert all(p.grad is not None for p in agent.critic_parameters())
    agent.zero_grad(set_to_none=True)
    agent.get_action(x, action)[1].sum().backward()
    assert all(p.grad is None for p in agent.critic_parameters())
    assert all(p.grad is not None for p in agent.actor_parameters())


def test_bf16_networks_keep_the_ratio_at_one():
    torch.manual_seed(0)
    env = ppo.make_env(ppo.Args())
    agent = ppo.Agent(env, hidden_size=512, bf16=True)
    x = torch.randint(0, 256, (32, 4, 84, 84), dtype=torch.uint8)
    actions = torch.randint(0, 7, (32,))
    with torch.no_grad():
        minibatch = agent.get_action(x, actions)[1]
        rollout = torch.cat([agent.get_action(x[i:i + 8], actions[i:i + 8])[1] for i in range(0, 32, 8)])
        assert (minibatch - rollout).abs().max() < 1e-4
        features = agent.features(agent.critic_cnn, x)
        assert features.dtype == torch.float32 and torch.equal(features, features.bfloat16().float())


def test_minibatches_pass_over_the_rollout_in_fresh_orders():
    torch.manual_seed(0)
    batches = list(ppo.minibatches(12, 4, 7, torch.device("cpu")))
    assert len(batches) == 7 and all(len(b) == 4 for b in batches)
    first, second = torch.cat(batches[:3]), torch.cat(batches[3:6])
    assert sorted(first.tolist()) == sorted(second.tolist()) == list(range(12))  # each pass: every sample once
    assert not torch.equal(first, second)  # reshuffled


# ---------------------------------------------------------------------------------------------------------
# The script from its command line
# ---------------------------------------------------------------------------------------------------------
def test_train_resume_play(tmp_path):
    result = run_script(SCRIPT, *TINY, "--eval-every", "2", "--eval-episodes", "1", "--capture-video",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (run_dir,) = run_dirs(tmp_path)
    assert run_dir.name.startswith("SuperMarioBros-1-1-v0__ppo_mario_cnn__1__")
    checkpoint = run_dir / "checkpoint.pt"
    ckpt = torch.load(checkpoint, weights_only=True)
    assert ckpt["global_step"] == 256 and ckpt["iteration"] == 2 and set(ckpt["optimizers"]) == {"pi", "vf"}
    logged = scalars(run_dir)
    assert CLEANRL_TAGS | {"charts/x_pos", "charts/flag_get", "losses/stop_iter", "eval/mean_x_pos",
                           "eval/flag_rate"} <= set(logged)
    assert all(x > 0 for _, x in logged["charts/x_pos"]) and {f for _, f in logged["charts/flag_get"]} <= {0, 1}
    videos = list((run_dir / "videos" / "eval-256").glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 0

    result = run_script(SCRIPT, "--resume", str(checkpoint), "--total-timesteps", "384", "--eval-every", "0",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert run_dirs(tmp_path) == [run_dir]
    assert torch.load(checkpoint, weights_only=True)["global_step"] == 384

    result = run_script(SCRIPT, "--play", str(checkpoint), "--episodes", "2", "--capture-video", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "episode 2/2: return" in result.stdout and ", x position " in result.stdout
    assert "flag reached in 0/2" in result.stdout and "mean x position" in result.stdout
    videos = list((run_dir / "videos").glob("play-*/*.mp4"))
    assert len(videos) == 2 and all(v.stat().st_size > 0 for v in videos)


def test_kl_early_stopping_and_determinism(tmp_path):
    """A tiny --target-kl stops the policy's steps early (logged as losses/stop_iter); without one it takes
    every --train-pi-iters step. The same seed gives the same run."""
    config = [*TINY, "--train-pi-iters", "20", "--eval-every", "0"]
    stopped = scalars(run_dirs_after(run_script(SCRIPT, *config, "--target-kl", "1e-6", "--exp-name", "kl",
                                                cwd=tmp_path), tmp_path, "kl"))
    assert all(1 <= s < 20 for _, s in stopped["losses/stop_iter"])
    assert all(kl > 1.5e-6 for _, kl in stopped["losses/approx_kl"])  # the KL that stopped it
    full = run_dirs_after(run_script(SCRIPT, *config, "--target-kl", "None", "--exp-name", "full", cwd=tmp_path),
                          tmp_path, "full")
    assert [s for _, s in scalars(full)["losses/stop_iter"]] == [20, 20]
    again = run_dirs_after(run_script(SCRIPT, *config, "--target-kl", "None", "--exp-name", "again",
                                      cwd=tmp_path), tmp_path, "again")
    first, second = (torch.load(d / "checkpoint.pt", weights_only=True)["agent"] for d in (full, again))
    assert all(torch.equal(first[k], second[k]) for k in first)


# What a stand-in for evaluate reports after each of 4 updates: the flag in 0, 1, 2 and 2 of 2 episodes.
FLAGS = [[False, False], [True, False], [True, True], [True, True]]


def test_target_flag_rate_ends_the_run_after_the_evaluation_that_reaches_it(scratch, capsys, monkeypatch):
    """--target-flag-rate 0.5: the run of 4 updates, evaluated after each, ends after the first evaluation with
    the flag in half of its episodes (the second: a stand-in for evaluate plays them), its checkpoint saved."""
    flags = iter(FLAGS)
    monkeypatch.setattr(ppo, "evaluate", lambda args, agent, episodes, *rest, **kwargs: (
        [1.0, 2.0], [40, 80], [300, 900], next(flags)))
    outcome, out, err = run_main(ppo, [*TINY, "--total-timesteps", "512", "--eval-every", "1", "--eval-episodes",
                                       "2", "--target-flag-rate", "0.5"], capsys)
    assert outcome == "returned", err
    assert "--target-flag-rate 0.5 reached: the run ends here" in out + err
    (run_dir,) = run_dirs(scratch)
    ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert ckpt["iteration"] == 2 and ckpt["global_step"] == 256
    assert [rate for _, rate in scalars(run_dir)["eval/flag_rate"]] == [0.0, 0.5]


FLAG_DRIVER = """
import sys
import ppo_mario_cnn as ppo
from benchmarks.core import launch

flags = iter({flags!r})
ppo.evaluate = lambda args, agent, episodes, *rest, **kwargs: ([1.0, 2.0], [40, 80], [300, 900], next(flags))
sys.exit(launch.run_main(ppo, {argv!r}))
"""


def test_target_flag_rate_under_torchrun_every_rank_ends_at_the_same_update(tmp_path):
    """Rank 0 evaluates, the ranks agree: both leave the loop after update 2 of 4 (a rank that went on would
    wait forever in its next collective), and the checkpoint is update 2's."""
    argv = [*TINY, "--total-timesteps", "1024", "--eval-every", "1", "--eval-episodes", "2",
            "--target-flag-rate", "0.5"]  # 2 ranks x 128 samples an update: 4 updates
    (tmp_path / "driver.py").write_text(FLAG_DRIVER.format(flags=FLAGS, argv=argv))
    result = launch.run(launch.python_command("driver.py", torchrun=2), tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = run_dirs(tmp_path)
    ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert ckpt["iteration"] == 2 and ckpt["global_step"] == 512


def run_dirs_after(result, tmp_path, exp_name):
    assert result.returncode == 0, result.stderr
    (run_dir,) = [d for d in run_dirs(tmp_path) if f"__{exp_name}__" in d.name]
    return run_dir


def test_video_frames_held_stay_bounded_on_a_long_episode(tmp_path, monkeypatch):
    """RecordVideo holds an episode's frames until it writes them: one frame per agent step (above the frame
    skip), and at most VIDEO_STEPS of them, however long the episode."""
    import gymnasium as gym

    monkeypatch.setattr(ppo, "VIDEO_STEPS", 20)
    env = ppo.make_env(ppo.Args(), str(tmp_path / "videos"), video_trigger=lambda episode: True)
    recorder = env
    while not isinstance(recorder, gym.wrappers.RecordVideo):
        recorder = recorder.env
    env.reset(seed=0)
    rng, held = np.random.default_rng(0), []
    for _ in range(60):  # 60 agent steps = 240 frames, all in one episode
        _, _, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        held.append(len(recorder.recorded_frames))
        assert not truncated and "episode" not in info
        if terminated:  # (Breakout: a lost life; the game goes on)
            env.reset()
    env.close()
    assert [b - a for a, b in zip(held[:5], held[1:5])] == [1, 1, 1, 1]  # one frame per agent step
    assert max(held) <= 21 and len(list((tmp_path / "videos").glob("*.mp4"))) >= 1


def test_two_torchrun_ranks_end_an_update_with_identical_parameters(tmp_path):
    argv = [*TINY, "--eval-every", "0"]  # 2 ranks x 128 samples: one update
    rank0, rank1 = two_torchrun_ranks("ppo_mario_cnn", argv, tmp_path)
    # Each rank drew its own weights (its own seed), then took rank 0's, and the averaged gradients kept
    # them equal through the update (both networks, both optimizers), which moved them.
    assert any(not torch.equal(rank0["initial"][k], rank1["initial"][k]) for k in rank0["initial"])
    for name in rank0["final"]:
        assert torch.equal(rank0["final"][name], rank1["final"][name]), name
    for network in ("actor", "critic"):
        assert any(not torch.equal(rank0["final"][k], rank0["initial"][k]) for k in rank0["final"]
                   if k.startswith(network))
    (run_dir,) = run_dirs(tmp_path)
    assert torch.load(run_dir / "checkpoint.pt", weights_only=True)["global_step"] == 256


def test_ctrl_c_saves_a_checkpoint_and_exits(tmp_path):
    ctrl_c_saves_a_checkpoint(SCRIPT, "--num-envs", "2", "--num-steps", "64", "--minibatch-size", "64",
                              "--train-pi-iters", "2", "--train-v-iters", "2", "--no-cuda",
                              "--checkpoint-every", "0", "--eval-every", "0", cwd=tmp_path,
                              steps_per_update=2 * 64, total_timesteps=5_000_000, message=STOP_MESSAGE)


def test_ctrl_c_under_torchrun_saves_every_ranks_state_in_time(tmp_path):
    # torchrun kills its workers 30 s after forwarding Ctrl-C: they stop at the next step they agree on and
    # rank 0 saves the last complete update, with both ranks' random generators.
    ckpt = ctrl_c_saves_a_checkpoint(SCRIPT, "--num-envs", "2", "--num-steps", "64", "--minibatch-size", "64",
                                     "--train-pi-iters", "2", "--train-v-iters", "2", "--no-cuda",
                                     "--checkpoint-every", "0", "--eval-every", "0",
                                     "--vectorization-mode", "sync", cwd=tmp_path, steps_per_update=2 * 2 * 64,
                                     total_timesteps=5_000_000, message=STOP_MESSAGE, ranks=2)
    assert len(ckpt["rng"]) == 2 and not torch.equal(ckpt["rng"][0]["torch"], ckpt["rng"][1]["torch"])


def test_torchrun_resume_gives_each_rank_its_own_random_state(tmp_path):
    argv = [*TINY, "--eval-every", "0"]
    bars = []
    two_torchrun_ranks(ppo.__name__, argv, tmp_path, stderr=bars)
    total = int(argv[argv.index("--total-timesteps") + 1])
    assert f"{total}/{total} [" in bars[0]  # the progress bar counts the steps of both ranks
    (run_dir,) = run_dirs(tmp_path)
    saved = torch.load(run_dir / "checkpoint.pt", weights_only=True)["rng"]
    assert len(saved) == 2 and not torch.equal(saved[0]["torch"], saved[1]["torch"])
    rank0, rank1 = two_torchrun_ranks(ppo.__name__, ["--resume", str(run_dir / "checkpoint.pt"),
                                                     "--total-timesteps", str(2 * total)], tmp_path)
    assert torch.equal(rank0["restored"][0], saved[0]["torch"]) and torch.equal(rank1["restored"][0], saved[1]["torch"])


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--env-id", "BreakoutNoFrameskip-v4"], "is not a Super Mario Bros game; this script plays"),
        (["--env-id", "SuperMarioBrosLostLevels-v0"], "is not a Super Mario Bros game"),  # (not the library's id)
        (["--world", "9"], "SuperMarioBros-v0 has no level --world 9 --stage 1 to start at"),
        (["--stage", "5"], "has no level --world 1 --stage 5"),
        (["--env-id", "SuperMarioBros2-v0", "--world", "14"], "SuperMarioBros2-v0 has no level --world 14"),
        (["--train-pi-iters", "0"], "--train-pi-iters must be positive"),
        (["--vf-learning-rate", "0"], "--vf-learning-rate must be positive"),
        (["--num-envs", "2", "--num-steps", "16", "--minibatch-size", "64"], "larger than the rollout"),
        (["--num-envs", "3", "--num-steps", "16", "--minibatch-size", "32"], "must be a multiple of"),
        (["--total-timesteps", "1000"], "less than one rollout of every rank"),
        (["--target-kl", "0"], "--target-kl must be positive"),
        (["--minibatch-size", "1"], "--minibatch-size must be at least 2 with --norm-adv"),
        (["--target-flag-rate", "0"], "--target-flag-rate is a share of the evaluation episodes, in (0, 1]"),
        (["--target-flag-rate", "1.5"], "in (0, 1]; got 1.5"),
        (["--target-flag-rate", "0.5", "--eval-every", "0"], "--eval-every 0 evaluates never"),
        (["--resume", "missing.pt"], "no checkpoint at missing.pt"),
    ],
)
def test_bad_arguments(argv, fragment, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_usage_error(ppo, capsys, monkeypatch, argv, fragment)
    assert not (tmp_path / "runs").exists(), "a refused run must not leave a run folder behind"


def test_bad_checkpoints(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    expect_unreadable_checkpoints_refused(ppo, capsys, monkeypatch, tmp_path)
    args = ppo.Args()
    agent = ppo.Agent(ppo.make_env(args), args.hidden_size)
    real = tmp_path / "real.pt"
    optimizers = ppo.Optimizers(pi=torch.optim.Adam(agent.actor_parameters()),
                                vf=torch.optim.Adam(agent.critic_parameters()))
    ppo.save_checkpoint(str(real), ppo.checkpoint_state(args, agent, optimizers, 0, 0, SCHEDULE))
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--env-id", "SuperMarioBros2-v0"],
                       "holds a policy for SuperMarioBros-v0, not for --env-id SuperMarioBros2-v0")
    expect_usage_error(ppo, capsys, monkeypatch, ["--play", str(real), "--action-type", "complex"], "does not fit")
