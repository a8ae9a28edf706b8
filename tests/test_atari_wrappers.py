"""common/wrappers.py's Atari stack against gymnasium's own wrappers on the same seeded ALE Breakout: the same
frames and rewards step for step, and where ours deliberately differs, how and why."""

import ale_py
import cv2
import gymnasium as gym
import numpy as np
import pytest

from common.wrappers import ClipReward, EpisodicLife, FireReset, FrameStack, GrayscaleResize, MaxAndSkip, NoopReset

gym.register_envs(ale_py)
ENV_ID = "BreakoutNoFrameskip-v4"  # every frame (frameskip 1), no sticky actions: the wrappers do the skipping


def actions(n, seed=0):
    return np.random.default_rng(seed).integers(0, 4, size=n)  # NOOP, FIRE, RIGHT, LEFT


def frame_number(env):
    return env.unwrapped.ale.getEpisodeFrameNumber()


def test_max_and_skip_matches_gymnasium():
    ours, reference = MaxAndSkip(gym.make(ENV_ID), 4), gym.wrappers.MaxAndSkipObservation(gym.make(ENV_ID), 4)
    np.testing.assert_array_equal(ours.reset(seed=0)[0], reference.reset(seed=0)[0])
    compared = ends = 0
    for a in actions(600):
        before = frame_number(ours)
        obs, reward, terminated, truncated, _ = ours.step(a)
        ref_obs, ref_reward, ref_terminated, ref_truncated, _ = reference.step(a)
        assert (reward, terminated, truncated) == (ref_reward, ref_terminated, ref_truncated)
        if frame_number(ours) - before == 4:  # a whole skip: both max the same last two frames
            np.testing.assert_array_equal(obs, ref_obs)
            compared += 1
        if terminated or truncated:
            ends += 1
            # A skip cut short by the end of the game: gymnasium maxes buffers that still hold frames of an
            # earlier step; ours the last frames this step saw. (A terminal observation is never bootstrapped
            # from, so this only matters for what an agent is shown, and for a truncated one's V(s).)
            np.testing.assert_array_equal(ours.reset(seed=ends)[0], reference.reset(seed=ends)[0])
    assert compared > 500 and ends >= 1, (compared, ends)


def test_noop_reset_max_and_skip_grayscale_resize_match_atari_preprocessing():
    ours = GrayscaleResize(MaxAndSkip(NoopReset(gym.make(ENV_ID), 30), 4), 84)
    reference = gym.wrappers.AtariPreprocessing(gym.make(ENV_ID), noop_max=30, frame_skip=4, screen_size=84)
    for seed in range(3):  # the same seeded number of no-ops: the same first frame
        first, ref_first = ours.reset(seed=seed)[0], reference.reset(seed=seed)[0]
        assert frame_number(ours) == frame_number(reference) > 0
        np.testing.assert_array_equal(first, ref_first)
    compared = ends = 0
    for a in actions(600):
        obs, reward, terminated, truncated, _ = ours.step(a)
        ref_obs, ref_reward, ref_terminated, ref_truncated, _ = reference.step(a)
        assert obs.shape == ref_obs.shape == (84, 84) and obs.dtype == ref_obs.dtype == np.uint8
        assert (reward, terminated, truncated) == (ref_reward, ref_terminated, ref_truncated)
        if not (terminated or truncated):
            # Ours maxes the two RGB frames, then turns the result gray (the order of the baselines, SB3 and
            # CleanRL stacks, whose Atari scores we compare with); AtariPreprocessing turns each frame gray,
            # then maxes. On Breakout's frames the two agree exactly.
            np.testing.assert_array_equal(obs, ref_obs)
            compared += 1
        else:
            # The step a game ends on: AtariPreprocessing stops before reading that step's last frames and
            # returns an older screen; ours returns the frames the game ended on.
            ends += 1
            np.testing.assert_array_equal(ours.reset(seed=10 + ends)[0], reference.reset(seed=10 + ends)[0])
    assert compared > 550 and ends >= 1, (compared, ends)


def test_grayscale_is_the_ale_screen_not_gymnasium_grayscale_observation():
    env = gym.make(ENV_ID)
    obs, _ = env.reset(seed=0)
    for a in actions(40):
        obs, *_ = env.step(a)
    ale_gray = np.empty(obs.shape[:2], np.uint8)
    env.unwrapped.ale.getScreenGrayscale(ale_gray)
    ours = GrayscaleResize(env, 84).observation(obs)
    np.testing.assert_array_equal(ours, cv2.resize(ale_gray, (84, 84), interpolation=cv2.INTER_AREA))
    # gymnasium's GrayscaleObservation weighs the channels (0.2125, 0.7154, 0.0721) and truncates: a few
    # gray levels off the ALE's own screen, which is what AtariPreprocessing (and so most results) use.
    grayscale = gym.wrappers.GrayscaleObservation(env)
    theirs = gym.wrappers.ResizeObservation(grayscale, (84, 84)).observation(grayscale.observation(obs))
    difference = np.abs(ours.astype(int) - theirs.astype(int))
    assert 0 < difference.max() <= 16


def test_frame_stack_matches_gymnasium_frame_stack_observation():
    def base():
        return GrayscaleResize(MaxAndSkip(gym.make(ENV_ID), 4), 84)

    ours, reference = FrameStack(base(), 4), gym.wrappers.FrameStackObservation(base(), 4)
    obs, ref_obs = ours.reset(seed=0)[0], reference.reset(seed=0)[0]
    assert obs.shape == ours.observation_space.shape == (4, 84, 84) and obs.dtype == np.uint8
    np.testing.assert_array_equal(obs, ref_obs)
    assert all(np.array_equal(obs[0], obs[i]) for i in range(4))  # the first frame fills every slot
    previous = obs
    for a in actions(200):
        obs, reward, terminated, truncated, _ = ours.step(a)
        ref_obs, ref_reward, *_ = reference.step(a)
        np.testing.assert_array_equal(obs, ref_obs)
        np.testing.assert_array_equal(obs[:3], previous[1:])  # the oldest frame leaves, the new one enters
        previous = obs
        if terminated or truncated:
            break


def test_episodic_life_ends_the_episode_at_a_lost_life_but_not_the_game():
    ours = EpisodicLife(MaxAndSkip(gym.make(ENV_ID), 4))
    reference = gym.wrappers.AtariPreprocessing(gym.make(ENV_ID), noop_max=0, frame_skip=4,
                                                terminal_on_life_loss=True)
    ours.reset(seed=0)
    reference.reset(seed=0)
    assert ours.unwrapped.ale.lives() == 5
    for a in actions(1000):  # until the first life is lost: the same step ends the episode in both
        _, reward, terminated, _, _ = ours.step(a)
        _, ref_reward, ref_terminated, _, _ = reference.step(a)
        assert (reward, terminated) == (ref_reward, ref_terminated)
        if terminated:
            break
    assert terminated and ours.unwrapped.ale.lives() == 4
    frames = frame_number(ours)
    ours.reset()
    # The game goes on: 4 lives left, the frame counter runs on (gymnasium's reset would restart the game).
    assert ours.unwrapped.ale.lives() == 4 and frame_number(ours) > frames
    reference.reset()
    assert reference.unwrapped.ale.lives() == 5 and frame_number(reference) == 0

    lives_seen, real_resets = [], 0
    for a in actions(5000, seed=1):
        _, _, terminated, truncated, _ = ours.step(a)
        if terminated or truncated:
            lives_seen.append(ours.unwrapped.ale.lives())
            game_over = ours.game_over
            ours.reset()
            if game_over:  # a real game over: the emulator restarts with all lives
                real_resets += 1
                assert ours.unwrapped.ale.lives() == 5 and frame_number(ours) == 0
                break
    assert lives_seen == [3, 2, 1, 0] and real_resets == 1


def test_fire_reset_presses_fire_after_the_reset():
    ours = FireReset(gym.make(ENV_ID))
    by_hand = gym.make(ENV_ID)
    obs, _ = ours.reset(seed=3)
    by_hand.reset(seed=3)
    expected, *_ = by_hand.step(1)  # FIRE
    np.testing.assert_array_equal(obs, expected)
    assert frame_number(ours) == 1


class RewardsEnv(gym.Env):
    """Hands out the given rewards, one per step."""

    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(1)

    def __init__(self, rewards):
        self.rewards = list(rewards)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(1, np.float32), self.rewards[self.t - 1], False, False, {}


@pytest.mark.parametrize("reward, sign, clipped", [(0.0, 0.0, 0.0), (4.0, 1.0, 1.0), (-7.0, -1.0, -1.0),
                                                    (0.5, 1.0, 0.5), (-0.25, -1.0, -0.25)])
def test_clip_reward_is_the_sign(reward, sign, clipped):
    ours, theirs = ClipReward(RewardsEnv([reward])), gym.wrappers.ClipReward(RewardsEnv([reward]), -1.0, 1.0)
    ours.reset()
    theirs.reset()
    assert ours.step(0)[1] == sign
    # gymnasium's ClipReward clips to [-1, 1]: the same on integer scores, not on fractions (DQN's rule is the
    # sign: "all positive rewards at 1 and all negative rewards at -1").
    assert theirs.step(0)[1] == clipped
