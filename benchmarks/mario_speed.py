"""What bounds ppo_mario_cnn.py's speed on this machine: the NES emulator and one minibatch step of a CNN.

Prints:
- the emulator alone: milliseconds per NES frame of gym-super-mario-bros' env (nes-py's C++ emulator and the
  env's reads of the game's memory), in this one process, random actions; then in two processes side by side
  (each one's figure: whether the machine's two cores run two emulators as fast as one);
- the lesson's env stack (frame skip 4, reward shaping, grayscale 84 x 84, stack of 4) in the AsyncVectorEnv
  training uses, with 2 and with 8 envs: wall milliseconds per frame, all envs together (the floor of a
  rollout: 4,096 agent steps are 16,384 frames);
- one gradient step of the policy and one of the value function on a minibatch of --minibatch-size random frame
  stacks, forward, backward and Adam (what the update repeats up to --train-pi-iters + --train-v-iters times), in
  bf16 and in fp32.

Usage, from the repository root:
    python -m benchmarks.mario_speed [--frames 2000] [--steps 20]
"""

import multiprocessing
import time

import numpy as np
import torch
import tyro

import ppo_mario_cnn as mario


def ms_per_call(call, calls: int, warm_up: int = 0) -> float:
    """Wall milliseconds per call of `call()`, over `calls` calls after `warm_up` untimed ones."""
    for _ in range(warm_up):
        call()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls * 1e3


def emulator_ms(frames: int) -> float:
    env = mario.JoypadSpace(mario.gym_super_mario_bros.SuperMarioBrosEnv(lost_levels=False, target=(1, 1)),
                            mario.SIMPLE_MOVEMENT)
    rng = np.random.default_rng(0)
    env.reset()

    def step():
        result = env.step(int(rng.integers(len(mario.SIMPLE_MOVEMENT))))
        if result[2] or (len(result) == 5 and result[3]):  # (the old API returns 4 values, gymnasium's 5)
            env.reset()

    ms = ms_per_call(step, frames)
    env.close()
    return ms


def vector_ms_per_frame(num_envs: int, frames: int) -> float:
    envs = mario.make_envs(mario.Args(num_envs=num_envs, vectorization_mode="async"))
    rng = np.random.default_rng(0)
    envs.reset(seed=1)
    ms = ms_per_call(lambda: envs.step(rng.integers(0, 7, num_envs)), max(1, frames // (4 * num_envs)), warm_up=1)
    envs.close()
    return ms / (num_envs * 4)  # a vector step is 4 frames of each env


def step_ms(bf16: bool, minibatch_size: int, steps: int) -> tuple[float, float]:
    """ms per policy step and per value step on random frame stacks, as the update takes them."""
    args = mario.Args()
    with mario.make_env(args) as env:
        agent = mario.Agent(env, args.hidden_size, bf16)
    pi = mario.adam(agent.actor_parameters(), 1e-4, 1e-5)
    vf = mario.adam(agent.critic_parameters(), 1e-4, 1e-5)
    frames = agent.inputs(torch.randint(0, 256, (minibatch_size, 4, 84, 84), dtype=torch.uint8))
    actions = torch.randint(0, env.action_space.n, (minibatch_size,))

    def policy_step():
        _, logprob, entropy = agent.get_action(frames, actions)
        mario.step_network(pi, -(logprob.mean() + 0.01 * entropy.mean()), agent.actor_parameters(), args)

    def value_step():
        mario.step_network(vf, (agent.get_value(frames) ** 2).mean(), agent.critic_parameters(), args)

    return ms_per_call(policy_step, steps, warm_up=3), ms_per_call(value_step, steps, warm_up=3)


def main(frames: int = 2000, steps: int = 20, minibatch_size: int = 256) -> None:
    """frames: NES frames timed per env measurement; steps: gradient steps timed per network and precision"""
    torch.set_num_threads(2)
    print(f"emulator alone, one process: {emulator_ms(frames):.2f} ms per frame")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        side_by_side = pool.map(emulator_ms, [frames, frames])
    print(f"emulator alone, two processes side by side: {side_by_side[0]:.2f} and {side_by_side[1]:.2f} ms per frame")
    for num_envs in (2, 8):
        print(f"env stack, AsyncVectorEnv of {num_envs}: {vector_ms_per_frame(num_envs, frames):.2f} ms per frame "
              "(wall, all envs together)")
    for bf16 in (True, False):
        policy, value = step_ms(bf16, minibatch_size, steps)
        print(f"{'bf16' if bf16 else 'fp32'}: a policy step {policy:.1f} ms, a value step {value:.1f} ms "
              f"(minibatch of {minibatch_size})")


if __name__ == "__main__":
    tyro.cli(main)
