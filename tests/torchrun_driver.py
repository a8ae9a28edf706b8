"""conftest.two_torchrun_ranks' driver, one process per rank under torchrun: the lesson MODULE's main() with ARGV
(through benchmarks.core.launch.run_main), recording its agent's weights when built and after training and the
torch random states it restored on --resume; each rank saves them to rank<RANK>.pt in the current folder.

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/torchrun_driver.py MODULE [ARGV ...]

(with the repository root on PYTHONPATH: benchmarks.core.launch.environment()).
"""

import os
import sys

import torch

from benchmarks.core import launch


def drive(module: str, argv: list[str]) -> int:
    ppo = launch.import_lesson(module)
    agents, restored = [], []
    restore_rng = getattr(ppo, "restore_rng", None)

    def recording_restore_rng(states, device):  # which random states this rank resumed with
        restored.append(states["torch"].clone())
        restore_rng(states, device)

    ppo.restore_rng = recording_restore_rng

    class Recorded(ppo.Agent):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            agents.append(self)
            self.initial = {k: v.clone() for k, v in self.state_dict().items()}

    ppo.Agent = Recorded
    code = launch.run_main(ppo, argv)
    if code != 0:
        return code
    torch.save({"initial": agents[-1].initial, "final": agents[-1].state_dict(), "restored": restored},
               f"rank{os.environ['RANK']}.pt")
    return 0


if __name__ == "__main__":
    sys.exit(drive(sys.argv[1], sys.argv[2:]))
