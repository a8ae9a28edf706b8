"""Where a training script's time goes: rollout (env steps, acting), update, evaluation, checkpoints.

Runs one of the library's scripts in this process (its main(), through benchmarks.core.launch.run_main), exactly
as `python <script> [args]` would, with timers wrapped around the functions every script shares (the skeleton is
the same in all five):

- `collect_rollout`: the whole rollout, and inside it `envs.step` (the environments: emulator, wrappers,
  vector env, worker processes) and the agent's forward passes under no_grad / inference_mode (acting);
- `compute_gae`: the advantages;
- `evaluate` and `save_checkpoint`;
- the update: what is left of each iteration (minibatch forward and backward passes, optimizer steps, logging).

It prints one table of seconds per update and shares of the training loop. Nothing in the scripts changes:
the timers are put around the module's functions before its `main()` runs, so the figures are those of a
normal run (plus a few microseconds per timed call).

Usage, from the repository root (the lesson by its file name; its runs/ lands there):
    python -m benchmarks.timing ppo_breakout_atari.py --total-timesteps 20480 --eval-every 0 --no-cuda
    python -m benchmarks.timing ppo_mario_cnn.py --total-timesteps 16384 --eval-every 0 --no-cuda
    python -m benchmarks.timing ppo_cartpole.py --total-timesteps 20480
"""

from __future__ import annotations

import collections
import functools
import sys
import time
from pathlib import Path

import torch

from benchmarks.core import launch
from course.lessons import SCRIPTS


class Timers:
    """Seconds and call counts by name."""

    def __init__(self):
        self.seconds = collections.defaultdict(float)
        self.calls = collections.defaultdict(int)
        self.in_rollout = False
        self.first_rollout: float | None = None  # when the first rollout started (perf_counter)
        self.busy = set()  # names being timed right now: a call nested in another of the same name is not

    def wrap(self, name: str, function, only=lambda: True):
        """`function`, timed under `name` whenever `only()` holds at the call (and no call timed under the same
        name is running: get_action_and_value calling get_value counts once)."""

        @functools.wraps(function)
        def timed(*args, **kwargs):
            if name in self.busy or not only():
                return function(*args, **kwargs)
            self.busy.add(name)
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - start
                self.calls[name] += 1
                self.busy.discard(name)

        return timed


def instrument(module, timers: Timers) -> None:
    """Put the timers around the skeleton's functions of `module`."""
    collect = module.collect_rollout

    def collect_rollout(envs, agent, *args, **kwargs):
        # time the environments' steps of this rollout only (evaluation uses envs of its own)
        step = envs.step
        envs.step = timers.wrap("env steps", step)
        timers.in_rollout = True
        timers.first_rollout = timers.first_rollout or time.perf_counter()
        try:
            return collect(envs, agent, *args, **kwargs)
        finally:
            timers.in_rollout = False
            del envs.step  # back to the class's method

    module.collect_rollout = timers.wrap("rollout", collect_rollout)
    module.compute_gae = timers.wrap("GAE", module.compute_gae)
    module.evaluate = timers.wrap("evaluation", module.evaluate)
    module.save_checkpoint = timers.wrap("checkpoints", module.save_checkpoint)
    # Acting: the agent's forward passes during a rollout, which run without gradients.
    acting = lambda: timers.in_rollout and not torch.is_grad_enabled()  # noqa: E731
    for method in ("get_action_and_value", "get_value"):
        setattr(module.Agent, method, timers.wrap("acting", getattr(module.Agent, method), acting))


def report(timers: Timers, total: float, first_rollout: float) -> str:
    """The table: seconds per update and share of the training loop, for each part."""
    updates = max(timers.calls["rollout"], 1)
    loop = total - first_rollout  # from the first rollout's start to the end of main()
    s = timers.seconds
    parts = [
        ("rollout", s["rollout"]), ("  env steps (envs.step)", s["env steps"]),
        ("  acting (forward passes, no grad)", s["acting"]),
        ("  rest (buffers, bootstrap values, episode stats)", s["rollout"] - s["env steps"] - s["acting"]),
        ("GAE", s["GAE"]),
        ("update (minibatch passes, optimizer, logging)",
         loop - s["rollout"] - s["GAE"] - s["evaluation"] - s["checkpoints"]),
        ("evaluation", s["evaluation"]), ("checkpoints", s["checkpoints"]),
    ]
    lines = [f"{updates} updates; start-up (imports excluded, until the first rollout) {first_rollout:.2f} s; "
             f"training loop {loop:.2f} s", "",
             "| part | s per update | share of the loop |", "|---|---|---|"]
    for name, seconds in parts:
        lines.append(f"| {name} | {seconds / updates:.3f} | {100 * seconds / loop:.0f}% |" if loop > 0 else "")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    script = Path(argv[0]).name
    if script not in SCRIPTS:
        print(f"timing.py: {argv[0]} is not one of the library's scripts ({', '.join(SCRIPTS)})", file=sys.stderr)
        return 2
    module = launch.import_lesson(script)  # (by name, as `python <script>` has it: launch.import_lesson says why)
    timers = Timers()
    instrument(module, timers)
    start = time.perf_counter()
    code = launch.run_main(module, argv[1:])
    if code != 0:
        return code if isinstance(code, int) else 1
    total = time.perf_counter() - start
    if timers.first_rollout is None:
        print("timing.py: the script ran no rollout (--play, or nothing to train?)", file=sys.stderr)
        return 1
    print("\n" + report(timers, total, timers.first_rollout - start))
    print("Command: " + " ".join(["python", "-m", "benchmarks.timing", *argv]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
