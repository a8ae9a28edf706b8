"""common/wrappers.py's Atari stack against gymnasium's own wrappers on the same seeded ALE Breakout: the same
frames and rewards step for step, and where ours deliberately differs, how and why. Then the lesson's whole
stack (ppo_breakout_atari.make_env) against Stable-Baselines3's AtariWrapper, SB3's port of openai/baselines'
atari_wrappers.py: frame for frame the same, but for FireReset, which presses FIRE only where baselines' presses
FIRE and then action 2."""

import collections

import ale_py
import cv2
import gymnasium as gym
import numpy as np
import pytest

from stable_baselines3.common.atari_wrappers import AtariWrapper, EpisodicLifeEnv, FireResetEnv

import ppo_breakout_atari
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


def test_fire_reset_launches_the_ball():
    # Breakout waits for FIRE: without it, 500 agent steps of NOOP lose no life; after our FireReset's one
    # FIRE, NOOPs lose a life (the ball was launched and falls past the paddle).
    waiting = MaxAndSkip(gym.make(ENV_ID), 4)
    waiting.reset(seed=0)
    for _ in range(500):
        waiting.step(0)
    assert waiting.unwrapped.ale.lives() == 5
    fired = FireReset(MaxAndSkip(gym.make(ENV_ID), 4))
    fired.reset(seed=0)
    for _ in range(100):
        fired.step(0)
    assert fired.unwrapped.ale.lives() == 4


# Stable-Baselines3's AtariWrapper (stable_baselines3/common/atari_wrappers.py) is openai/baselines' stack
# (baselines/common/atari_wrappers.py: make_atari + wrap_deepmind) in gymnasium's API; CleanRL's ppo_atari.py
# imports its wrappers. With its defaults it applies, innermost first, NoopResetEnv(30), MaxAndSkipEnv(4),
# EpisodicLifeEnv, FireResetEnv (where the game has FIRE), WarpFrame(84), ClipRewardEnv; it stacks no frames.


def sb3_stack():
    """SB3's AtariWrapper with its defaults, over the same RecordEpisodeStatistics as make_env's."""
    return AtariWrapper(gym.wrappers.RecordEpisodeStatistics(gym.make(ENV_ID)))


def inner(env, cls):
    while not isinstance(env, cls):
        env = env.env
    return env


def frame_numbers(env):
    return env.unwrapped.ale.getEpisodeFrameNumber(), env.unwrapped.ale.getFrameNumber()


def paddle_columns(env):
    """The leftmost and rightmost screen columns of Breakout's paddle: RGB row 190 holds the two side walls
    (columns 0-7 and 152-159) and the 16-pixel paddle between them."""
    columns = np.nonzero(env.unwrapped.ale.getScreenRGB()[190, 8:152].any(-1))[0] + 8
    return int(columns[0]), int(columns[-1])


def lockstep(ours, sb3, moves, seed, extra_action_after_reset=False):
    """Plays `moves` on the lesson's stack and on SB3's, resetting each when its episode ends, and checks
    step by step that the two agree: rewards, terminated, truncated, the emulators' frame counters, lives and
    the life wrappers' bookkeeping, the scores of whole games, and the frames. With extra_action_after_reset,
    ours takes one more step, of action 2, after each of its resets (baselines' FireResetEnv takes it inside
    reset); ours then shows SB3's newest frame, in a stack that holds one extra, older frame.
    Returns (steps whose frames were compared, lost lives, game overs, steps with a nonzero reward, games whose
    score exceeds their sum of clipped rewards: a brick worth more than 1 point was hit)."""
    ours_life, sb3_life = inner(ours, ppo_breakout_atari.EpisodicLife), inner(sb3, EpisodicLifeEnv)
    history = collections.deque(maxlen=4)  # SB3's frames, stacked as baselines' FrameStack stacks them

    def agree_after_reset(obs, sb3_obs):
        if extra_action_after_reset:  # the step baselines takes inside reset: no reward, no end
            assert frame_numbers(ours)[0] + 4 == frame_numbers(sb3)[0]
            obs, reward, terminated, truncated, _ = ours.step(2)
            assert (reward, terminated, truncated) == (0.0, False, False)
        assert frame_numbers(ours) == frame_numbers(sb3)
        assert ours_life.lives == sb3_life.lives == ours.unwrapped.ale.lives()
        assert not ours_life.game_over and not sb3_life.was_real_done
        history.extend([sb3_obs[..., 0]] * 4)  # after a reset the first frame fills every slot
        np.testing.assert_array_equal(obs[-1], sb3_obs[..., 0])
        if not extra_action_after_reset:
            np.testing.assert_array_equal(obs, np.stack(history))

    agree_after_reset(ours.reset(seed=seed)[0], sb3.reset(seed=seed)[0])
    compared = lives_lost = games = rewarded = clipped = 0
    clipped_sum = 0.0
    for a in moves:
        before = frame_numbers(ours)[0]
        obs, reward, terminated, truncated, info = ours.step(a)
        sb3_obs, sb3_reward, sb3_terminated, sb3_truncated, sb3_info = sb3.step(a)
        assert (reward, terminated, truncated) == (sb3_reward, sb3_terminated, sb3_truncated)
        assert frame_numbers(ours) == frame_numbers(sb3)
        assert ours_life.lives == sb3_life.lives == ours.unwrapped.ale.lives()
        assert ours_life.game_over == sb3_life.was_real_done
        assert ("episode" in info) == ("episode" in sb3_info) == ours_life.game_over
        rewarded += reward != 0
        clipped_sum += reward
        history.append(sb3_obs[..., 0])
        if frame_numbers(ours)[0] - before == 4:
            np.testing.assert_array_equal(obs[-1], sb3_obs[..., 0])
            if not extra_action_after_reset:
                np.testing.assert_array_equal(obs, np.stack(history))
            compared += 1
        else:  # a skip the game over cut short: MaxAndSkip's one documented difference (see its docstring)
            assert ours.unwrapped.ale.game_over() and terminated
        if terminated or truncated:
            if ours_life.game_over:
                games += 1
                assert (info["episode"]["r"], info["episode"]["l"]) == (sb3_info["episode"]["r"],
                                                                         sb3_info["episode"]["l"])
                assert info["episode"]["r"] >= clipped_sum
                clipped += info["episode"]["r"] > clipped_sum
                clipped_sum = 0.0
            else:
                lives_lost += 1
            agree_after_reset(ours.reset()[0], sb3.reset()[0])
    return compared, lives_lost, games, rewarded, clipped


def test_the_lessons_stack_with_baselines_fire_reset_is_sb3s_atari_wrapper_frame_for_frame(monkeypatch):
    """With SB3's FireResetEnv (baselines' FIRE, then action 2) in place of our FireReset, the lesson's
    make_env plays Breakout exactly as SB3's AtariWrapper, topped by baselines' FrameStack, does: every frame of
    every stack, every reward, every end, lost lives and game overs, through two games. Both stacks draw their
    number of no-ops from the emulator's np_random right after its reset, so the same seed gives the same
    count; the later resets (seed=None) go on drawing from the same, identically used generator."""
    monkeypatch.setattr(ppo_breakout_atari, "FireReset", FireResetEnv)
    ours = ppo_breakout_atari.make_env(ppo_breakout_atari.Args())
    assert isinstance(inner(ours, FireResetEnv), FireResetEnv)
    # Measured with ale-py 0.12.1: (598, 12, 2, 6, 1), the 2 other steps cut short by a game over; two 4-point
    # bricks are hit (steps 371 and 447), so a reward above 1 is clipped. The bounds keep what is covered.
    compared, lives_lost, games, rewarded, clipped = counts = lockstep(ours, sb3_stack(), actions(600, seed=28), seed=0)
    assert compared >= 590 and lives_lost >= 8 and games >= 2 and rewarded >= 3 and clipped >= 1, counts


def test_our_fire_reset_is_baselines_but_for_its_action_2():
    """The one difference, pinned: baselines' FireResetEnv (as SB3 has it) presses FIRE and then action 2
    (RIGHT, in Breakout) on every reset, ours FIRE only. So our first observation is one agent step (4 frames)
    earlier, with the paddle where the game put it, 12 pixels left of where RIGHT moves it; and ours taking that
    action 2 itself after each reset makes the two stacks agree again, frame for frame, through whole games."""
    assert gym.make(ENV_ID).unwrapped.get_action_meanings() == ["NOOP", "FIRE", "RIGHT", "LEFT"]
    for seed in range(3):
        ours, sb3 = ppo_breakout_atari.make_env(ppo_breakout_atari.Args()), sb3_stack()
        obs, sb3_obs = ours.reset(seed=seed)[0], sb3.reset(seed=seed)[0]
        assert not np.array_equal(obs[-1], sb3_obs[..., 0])
        assert frame_numbers(ours)[0] + 4 == frame_numbers(sb3)[0]
        left, right = paddle_columns(ours), paddle_columns(sb3)
        assert right[1] - right[0] == left[1] - left[0] == 15 and right[0] - left[0] == 12, (left, right)
    ours, sb3 = ppo_breakout_atari.make_env(ppo_breakout_atari.Args()), sb3_stack()
    compared, lives_lost, games, rewarded, clipped = counts = lockstep(ours, sb3, actions(600, seed=28), seed=0,
                                                                       extra_action_after_reset=True)
    assert compared >= 590 and lives_lost >= 8 and games >= 2 and rewarded >= 3 and clipped >= 1, counts


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
