"""tests/test_torchrun_faults.py's driver, one process per rank under torchrun: the lesson MODULE's main() with ARGV
(through benchmarks.core.launch.run_main), with the faults that the environment names injected into this rank:

- FAULT_SLOW_SAVE=S: rank 0's save_checkpoint sleeps S seconds before it writes (a slow or network disk)
- FAULT_SIGINT_RANK=R: rank R sends itself SIGINT once its first update is over (a Ctrl-C that reached one worker
  only, not torchrun: pressed on another node, or `kill -INT` of one worker)
- FAULT_PERTURB_RANK=R: rank R moves one weight of its agent by a float32 ulp once its first update is over, before
  the checkpoint state is taken (ranks whose weights no longer agree)

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/torchrun_faults_driver.py MODULE [ARGV ...]

(with the repository root on PYTHONPATH: benchmarks.core.launch.environment()). Exits with main()'s code.
"""

import os
import signal
import sys
import time

import torch

from benchmarks.core import launch


def drive(module: str, argv: list[str]) -> int:
    ppo = launch.import_lesson(module)
    rank = int(os.environ["RANK"])
    save_checkpoint, checkpoint_state = ppo.save_checkpoint, ppo.checkpoint_state
    slow = float(os.environ.get("FAULT_SLOW_SAVE", 0))
    if rank == 0 and slow:
        def slow_save(path, state):
            time.sleep(slow)
            save_checkpoint(path, state)

        ppo.save_checkpoint = slow_save

    calls = []

    def faulty_checkpoint_state(args, agent, *rest):
        calls.append(1)
        first_update_over = len(calls) == 2  # (the first call is the state before the first update)
        if first_update_over and os.environ.get("FAULT_PERTURB_RANK") == str(rank):
            with torch.no_grad():
                weight = next(agent.parameters())
                first = (0,) * weight.dim()
                weight[first] = torch.nextafter(weight[first], torch.tensor(float("inf")))
        state = checkpoint_state(args, agent, *rest)
        if first_update_over and os.environ.get("FAULT_SIGINT_RANK") == str(rank):
            signal.raise_signal(signal.SIGINT)
        return state

    ppo.checkpoint_state = faulty_checkpoint_state
    return launch.run_main(ppo, argv)


if __name__ == "__main__":
    sys.exit(drive(sys.argv[1], sys.argv[2:]))
