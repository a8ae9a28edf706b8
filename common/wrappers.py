"""The canonical environment wrappers.

Every script in this library is one self-contained file, so a script never imports from here: it carries a
copy of each wrapper it needs, directly under a marker comment

    # Copied from common.wrappers.Name

(optionally ``with Old->New`` to rename identifiers in the copy). ``python -m tools.check_copies`` fails when
a copy has drifted from the original below, and ``python -m tools.check_copies --fix`` rewrites the copies.

CartPole, LunarLander and Pendulum need no wrapper beyond gymnasium's own. Below: the Atari preprocessing
stack of Mnih et al. 2015 (Nature DQN) as openai/baselines implements it (baselines/common/atari_wrappers.py),
with two of baselines' own additions: FIRE pressed on reset (baselines then presses action 2 as well, FireReset
does not: its docstring says why), and the game carried on after a lost life rather than restarted. In the
order a script applies them: NoopReset, MaxAndSkip, EpisodicLife, FireReset, GrayscaleResize, ClipReward,
FrameStack. Each is tested against gymnasium's own equivalent, and the whole stack against SB3's AtariWrapper,
baselines' stack as SB3 ships it (tests/test_atari_wrappers.py); where one deliberately differs, its docstring
and its test say how and why.
Then Super Mario Bros (ppo_mario_cnn.py, tests/test_mario.py): ToGymnasium, which gives the script a gymnasium
env whichever API the installed gym-super-mario-bros speaks, and MarioReward, the reward shaping of
uvipen/Super-mario-bros-PPO-pytorch (src/env.py, CustomReward) less its level-specific and time-limit terms;
Mario reuses MaxAndSkip, GrayscaleResize and FrameStack.
"""

import collections

import cv2
import gymnasium as gym
import numpy as np


# The count is drawn as gymnasium's AtariPreprocessing draws it, from the env's own np_random
# (tests/test_atari_wrappers.py compares the two).
class NoopReset(gym.Wrapper):
    """On reset, take a random number (1 to noop_max) of NOOP actions. The emulator is deterministic: without
    this every episode would start from the same state, and a policy could memorize one opening. The count comes
    from the env's np_random, so a seeded reset repeats."""

    def __init__(self, env: gym.Env, noop_max: int = 30):
        super().__init__(env)
        self.noop_max = noop_max
        assert env.unwrapped.get_action_meanings()[0] == "NOOP", "action 0 must be NOOP"

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        for _ in range(self.unwrapped.np_random.integers(1, self.noop_max + 1)):
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # a game that ends while doing nothing: start it again
                obs, info = self.env.reset()
        return obs, info


# Differs from gymnasium's MaxAndSkipObservation, and baselines' and SB3's MaxAndSkipEnv, only when the episode
# ends before the last frame of a skip: those max two buffers still holding frames of an earlier step, this one
# the last two frames actually seen (or the one, if the episode ended on the first).
class MaxAndSkip(gym.Wrapper):
    """Frame skip: repeat each action for `skip` frames and sum their rewards into one r_t, so the agent acts
    `skip` times less often (fewer steps to run the network on and to carry credit back over). The observation is
    the pixel-wise max of the last two frames: games draw some objects only on every other frame (flicker), and
    the max keeps them in view."""

    def __init__(self, env: gym.Env, skip: int = 4):
        super().__init__(env)
        self.skip = skip

    def step(self, action):
        total_reward, previous, obs = 0.0, None, None
        for _ in range(self.skip):
            previous, (obs, reward, terminated, truncated, info) = obs, self.env.step(action)
            total_reward += float(reward)
            if terminated or truncated:
                break
        frame = obs if previous is None else np.maximum(previous, obs)
        return frame, total_reward, terminated, truncated, info


# Differs from gymnasium's AtariPreprocessing(terminal_on_life_loss=True), whose reset after a lost life restarts
# the game from its beginning. RecordEpisodeStatistics goes BELOW this wrapper, so that its episodes are whole games
# (all lives), the score people report.
class EpisodicLife(gym.Wrapper):
    """Episodic life: losing a life ends the training episode (terminated = True, so no V(s_{t+1}) is bootstrapped
    past a death: the return stops there), but not the game. The reset that follows carries on where the game is;
    only a game over restarts the emulator. The agent learns that a death ends its rewards, yet still sees the
    later, harder parts of the game."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.lives, self.game_over = 0, True

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = self.unwrapped.ale.lives()
        if 0 < lives < self.lives:
            terminated = True  # a life lost: the end of this training episode
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, **kwargs):
        if self.game_over:
            obs, info = self.env.reset(**kwargs)
        else:  # after a lost life: one NOOP step to carry on from the current state
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        self.game_over, self.lives = False, self.unwrapped.ale.lives()
        return obs, info


# Differs from baselines' FireResetEnv (baselines/common/atari_wrappers.py), and so from SB3's, which CleanRL's
# ppo_atari.py uses: those press FIRE and then action 2 (RIGHT in Breakout), each followed by a reset if the game
# ended; baselines' source gives no reason for the second press. Here the policy chooses that step itself: an
# episode starts one agent step (4 frames) earlier and, at a game's start, with Breakout's paddle 12 pixels left
# of where that RIGHT moves it. With SB3's FireResetEnv in its place, make_env's frames, rewards, ends and lives
# are SB3's AtariWrapper's step for step, but for MaxAndSkip's frame at a game over (tests/test_atari_wrappers.py).
# Kept because every committed Breakout run, and agents/breakout.pt, was trained with FIRE alone.
class FireReset(gym.Wrapper):
    """Press FIRE on every reset, in games that wait for it (Breakout: it launches the ball), so that no episode
    starts stalled until the policy happens to press it. With EpisodicLife below, that includes the reset after
    each lost life."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        assert env.unwrapped.get_action_meanings()[1] == "FIRE", "action 1 must be FIRE"

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        obs, _, terminated, truncated, info = self.env.step(1)
        if terminated or truncated:
            obs, info = self.env.reset(**kwargs)
        return obs, info


# OpenCV's RGB-to-gray weights (0.299, 0.587, 0.114) give exactly the ALE's own grayscale screen, the one
# gymnasium's AtariPreprocessing reads; INTER_AREA averages the pixels each output pixel covers, as
# AtariPreprocessing resizes (tests/test_atari_wrappers.py compares the two).
class GrayscaleResize(gym.ObservationWrapper):
    """RGB frame -> grayscale -> size x size (84 x 84), uint8, as DQN preprocessed Atari frames: colour and fine
    detail tell the policy little, and 84 x 84 = 7,056 numbers a frame is 14x fewer than an Atari screen
    (210 x 160 x 3), 26x fewer than the NES's (240 x 256 x 3)."""

    def __init__(self, env: gym.Env, size: int = 84):
        super().__init__(env)
        self.size = size
        self.observation_space = gym.spaces.Box(0, 255, (size, size), np.uint8)

    def observation(self, obs):
        gray = cv2.cvtColor(obs, cv2.COLOR_RGB2GRAY)
        return cv2.resize(gray, (self.size, self.size), interpolation=cv2.INTER_AREA)


# Differs from gymnasium's ClipReward(-1, 1) for rewards strictly between -1 and 1 (0.5 stays 0.5 there, becomes 1
# here); Atari scores are integers.
class ClipReward(gym.RewardWrapper):
    """Reward clipping: r_t -> its sign (-1, 0 or +1), as in DQN and the PPO paper's Atari runs. Returns and V
    then keep a similar scale in every game, whatever its points, so one learning rate and one set of
    hyperparameters suit them all; the price: Breakout's 7-point brick counts no more than a 1-point one."""

    def reward(self, reward):
        return float(np.sign(reward))


# The padding after a reset is gymnasium's FrameStackObservation's default.
class FrameStack(gym.Wrapper):
    """Frame stack: the observation s_t is the last k frames, stacked on a new first axis ([k, 84, 84], uint8).
    One frame shows where things are, not where they are going: Breakout's ball has a velocity only in the change
    from frame to frame, and pi(a|s_t) needs it to move the paddle to where the ball will be. After a reset, the
    first frame fills all k slots."""

    def __init__(self, env: gym.Env, k: int = 4):
        super().__init__(env)
        self.frames = collections.deque(maxlen=k)
        space = env.observation_space
        self.observation_space = gym.spaces.Box(0, 255, (k, *space.shape), space.dtype)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.frames.extend([obs] * self.frames.maxlen)
        return np.stack(self.frames), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.frames.append(obs)
        return np.stack(self.frames), reward, terminated, truncated, info


class ToGymnasium(gym.Env):
    """A gymnasium env around gym-super-mario-bros 7.x (the old gym API, below Python 3.13) or 9.x (gymnasium's):
    an old env's `done` becomes terminated, or truncated where gym's TimeLimit said so, and the screen is copied
    (nes-py's is a view that the next frame overwrites). The reward is 7.x's on both: x moved since the last frame
    (0 for a jump of more than 5 pixels, as at a death), -1 when the clock ticks and -25 on dying, clipped to
    [-15, 15]. 9.x's own also pays points and the flag, which MarioReward pays itself, so 7.x's is rebuilt from
    9.x's info (benchmarks/README.md, "Two releases of the env")."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 60}  # the NES draws 60 frames a second

    def __init__(self, env):
        self.env = env
        self.old_api = not isinstance(env, gym.Env)
        space = env.observation_space
        self.observation_space = gym.spaces.Box(np.min(space.low), np.max(space.high), space.shape, space.dtype)
        self.action_space = gym.spaces.Discrete(int(env.action_space.n))
        self.render_mode = "rgb_array"
        self.screen = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self.old_api:  # (an old env has no seed to set; the NES is deterministic anyway)
            obs, info = self.env.reset(), {}
        else:
            obs, info = self.env.reset(seed=seed, options=options)
        self.screen = np.array(obs)  # a copy
        self.x = info.get("x_pos", 0)
        return self.screen, dict(info)

    def step(self, action):
        if self.old_api:
            obs, reward, done, info = self.env.step(action)
            truncated = bool(info.get("TimeLimit.truncated", False))
            terminated = bool(done) and not truncated
        else:
            obs, reward, terminated, truncated, info = self.env.step(action)
            if "reward_components" in info:  # gym-super-mario-bros 9.x: its reward, back to 7.x's terms
                dx, self.x, terms = info["x_pos"] - self.x, info["x_pos"], info["reward_components"]
                reward = (dx if -5 <= dx <= 5 else 0) + terms["time"] + terms["death"]
                reward = min(max(reward, -15), 15)  # SuperMarioBrosEnv.reward_range, as nes-py clips
        self.screen = np.array(obs)  # a copy
        return self.screen, float(reward), bool(terminated), bool(truncated), dict(info)

    def render(self):
        return self.screen

    def close(self):
        self.env.close()


class MarioReward(gym.Wrapper):
    """The reward shaping of uvipen/Super-mario-bros-PPO-pytorch (src/env.py, CustomReward), its terms for every
    level. The env's own reward r (ToGymnasium's) pays progress: the x moved since the last frame (moving right
    pays, moving left costs), -1 each tick of the game's clock (time costs) and -25 on dying, so an episode's
    return grows with how far and how fast Mario gets. On top of r: the points gained (coins, enemies, blocks) / 40,
    +50 when the episode ends at the flag and -50 when Mario dies, all divided by 10, which scales down the returns
    the value function has to fit. Not taken: CustomReward's -50 at a time limit (here a truncated episode gets
    neither) and its terms for the maze levels 4-4 and 7-4. Put it above MaxAndSkip, where a step's score
    difference covers its 4 frames."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.score = 0

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.score = info.get("score", 0)  # 0 at a stage's start; old-API envs report no info on reset
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        reward += (info["score"] - self.score) / 40.0
        self.score = info["score"]
        if terminated:
            reward += 50.0 if info["flag_get"] else -50.0
        return obs, reward / 10.0, terminated, truncated, info
