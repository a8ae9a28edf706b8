"""ale-py's native vector env (AtariVectorEnv: C++ threads doing the Atari preprocessing) against the lesson's
Python wrappers in a SyncVectorEnv, for Breakout's 8 envs: milliseconds per vector step (8 agent steps, 32
frames), random actions, the episodes ended and reset as training does. Issue 27's item 4 asked whether the
native backend pays; this is the measurement behind the answer in benchmarks/README.md.

Usage, from the repository root:
    python -m benchmarks.ale_vector_check [--steps 500]
"""

import time

import numpy as np
import tyro

import ppo_breakout_atari as breakout


def per_step_ms(envs, steps: int) -> float:
    rng = np.random.default_rng(0)
    envs.reset(seed=1)
    for _ in range(10):  # warm up
        envs.step(rng.integers(0, envs.single_action_space.n, envs.num_envs))
    start = time.perf_counter()
    for _ in range(steps):
        envs.step(rng.integers(0, envs.single_action_space.n, envs.num_envs))
    return (time.perf_counter() - start) / steps * 1e3


def main(steps: int = 500) -> None:
    """steps: vector steps timed for each backend"""
    from ale_py.vector_env import AtariVectorEnv

    args = breakout.Args(vectorization_mode="sync")
    ours = breakout.make_envs(args)
    ms = per_step_ms(ours, steps)
    print(f"ours (Python wrappers, SyncVectorEnv of {args.num_envs}): {ms:.2f} ms per vector step")
    ours.close()
    for threads in (1, 2):
        native = AtariVectorEnv("breakout", args.num_envs, num_threads=threads, episodic_life=True,
                                autoreset_mode="SameStep")
        print(f"AtariVectorEnv, {threads} thread(s): {per_step_ms(native, steps):.2f} ms per vector step")
        native.close()


if __name__ == "__main__":
    tyro.cli(main)
