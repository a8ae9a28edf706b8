"""The canonical environment wrappers.

Every script in this library is one self-contained file, so a script never imports from here: it carries a
copy of each wrapper it needs, directly under a marker comment

    # Copied from common.wrappers.Name

(optionally ``with Old->New`` to rename identifiers in the copy). ``python -m common.check_copies`` fails when
a copy has drifted from the original below, and ``python -m common.check_copies --fix`` rewrites the copies.

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


class NoopReset(gym.Wrapper):
    """On reset, take a random number (1 to noop_max) of NOOP actions, so that episodes start from different
    states: the emulator is deterministic, and a policy could otherwise memorize one opening. The count is
    drawn from the env's own np_random, as gymnasium's AtariPreprocessing draws it, so a seeded reset
    repeats."""

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


class MaxAndSkip(gym.Wrapper):
    """Repeat each action for `skip` frames and sum their rewards; return the pixel-wise max of the last two
    frames. The agent decides `skip` times less often, and an object that the game draws on only one of the
    last two frames (a flickering sprite) still shows in the observation.

    Differs from gymnasium's MaxAndSkipObservation, and baselines' and SB3's MaxAndSkipEnv, only when the
    episode ends before the last frame of a skip: those max two buffers still holding frames of an earlier
    step, this one the last two frames actually seen (or the one, if the episode ended on the first)."""

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


class EpisodicLife(gym.Wrapper):
    """Losing a life ends the training episode (terminated=True, so no value is bootstrapped past a death),
    but not the game: the reset that follows continues the game where it is, and only a game over resets
    the emulator. The agent learns that dying is final, yet still sees the later, harder parts of the game.

    Differs from gymnasium's AtariPreprocessing(terminal_on_life_loss=True), whose reset after a lost life
    restarts the game from its beginning. Wrap the env in RecordEpisodeStatistics BELOW this wrapper: its
    episodes are then whole games (all lives), the score people report."""

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


class FireReset(gym.Wrapper):
    """Press FIRE on every reset, in games that wait for it (Breakout: it launches the ball), so that no
    episode starts with the game waiting for the policy to press it. With EpisodicLife below, that includes
    the reset after each lost life.

    Differs from baselines' FireResetEnv (baselines/common/atari_wrappers.py), and so from SB3's, which CleanRL's
    ppo_atari.py uses: those press FIRE and then action 2 (RIGHT in Breakout), each followed by a reset if the
    game ended; baselines' source gives no reason for the second press. Here the policy chooses that step
    itself: an episode starts one agent step (4 frames) earlier and, at a game's start, with Breakout's paddle
    12 pixels left of where that RIGHT moves it. With SB3's FireResetEnv in its place, make_env's frames,
    rewards, ends and lives are SB3's AtariWrapper's step for step, but for MaxAndSkip's frame at a game over
    (tests/test_atari_wrappers.py). Kept because every committed Breakout run, and agents/breakout.pt, was
    trained with FIRE alone."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        assert env.unwrapped.get_action_meanings()[1] == "FIRE", "action 1 must be FIRE"

    def reset(self, **kwargs):
        self.env.reset(**kwargs)
        obs, _, terminated, truncated, info = self.env.step(1)
        if terminated or truncated:
            obs, info = self.env.reset(**kwargs)
        return obs, info


class GrayscaleResize(gym.ObservationWrapper):
    """RGB frame -> grayscale -> size x size (84 x 84), uint8, as DQN preprocessed Atari frames: 84 x 84 =
    7,056 numbers per frame, 14x fewer than an Atari screen (210 x 160 x 3), 26x fewer than the NES's
    (240 x 256 x 3). OpenCV's RGB-to-gray weights (0.299, 0.587, 0.114) give exactly the ALE's own
    grayscale screen, the one gymnasium's AtariPreprocessing reads; INTER_AREA averages the pixels each output
    pixel covers, as AtariPreprocessing resizes."""

    def __init__(self, env: gym.Env, size: int = 84):
        super().__init__(env)
        self.size = size
        self.observation_space = gym.spaces.Box(0, 255, (size, size), np.uint8)

    def observation(self, obs):
        gray = cv2.cvtColor(obs, cv2.COLOR_RGB2GRAY)
        return cv2.resize(gray, (self.size, self.size), interpolation=cv2.INTER_AREA)


class ClipReward(gym.RewardWrapper):
    """Reward -> its sign (-1, 0 or +1), as in DQN and the PPO paper's Atari runs: one learning rate and one
    value scale then suit every game, whatever its points. Differs from gymnasium's ClipReward(-1, 1) for
    rewards strictly between -1 and 1 (0.5 stays 0.5 there, becomes 1 here); Atari scores are integers."""

    def reward(self, reward):
        return float(np.sign(reward))


class FrameStack(gym.Wrapper):
    """Observation = the last k frames, stacked on a new first axis ([k, 84, 84], uint8): one frame shows
    where things are but not which way they move, a stack of frames does. After a reset, the first frame fills
    all k slots (as gymnasium's FrameStackObservation pads by default)."""

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
    """A gymnasium env around an env of either API: the old gym one (reset() -> obs, step() -> obs, reward, done,
    info: gym-super-mario-bros 7.x with nes-py 8.x, the releases below Python 3.13) or gymnasium's (reset(seed,
    options) -> obs, info, step() -> obs, reward, terminated, truncated, info: 9.x, from Python 3.13). Which one
    is read off the env's class, once.

    An old env's `done` becomes terminated, or truncated where gym's TimeLimit said so in
    info["TimeLimit.truncated"]. Observations are copied: nes-py returns a view of the emulator's screen, which
    the next frame overwrites (MaxAndSkip keeps two frames). render() returns the last screen (rgb_array, for
    RecordVideo), so both APIs record the same way.

    The reward is 7.x's on either release: x moved since the last frame (0 for a jump of more than 5 pixels, as
    at a death), plus the clock's tick (-1 when it ticks) and -25 on dying, the sum clipped to [-15, 15]. 9.x's
    own reward pays x only past the furthest x of the episode so far, and adds points / 100, 5 a coin, +-5 a
    power-up won or lost and 50 at the flag (info["reward_components"] holds its terms): MarioReward above pays
    points and the flag itself, so those would count twice, and the coins and power-ups would be new to the
    lesson. From 9.x's info, the time and death terms are 7.x's as they are, and x moved is read off
    info["x_pos"]."""

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
    """The terms of uvipen/Super-mario-bros-PPO-pytorch's reward shaping (src/env.py, CustomReward) that apply on
    every level, on the env's own reward r (x progress, clock and death penalties): r + (score gained) / 40, then
    +50 when the episode ends with the flag reached and -50 when Mario dies, all divided by 10. Points (coins,
    enemies, blocks) pay a little, the goal pays most, and the division by 10 scales the returns the value
    function has to fit down by as much.
    (ToGymnasium below gives r as gym-super-mario-bros 7.x defines it on 9.x too, whose own reward pays points
    and the flag itself.)

    Not taken from CustomReward: its -50 at any episode end without the flag, a time limit's included (here a
    truncated episode gets neither +50 nor -50), and its terms for the maze levels 4-4 and 7-4, which end the
    episode with -50 where Mario takes a wrong path. Reads info["score"] and info["flag_get"] of each step; put it
    above MaxAndSkip, where a step's score difference covers its 4 frames."""

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
