"""What the scripts that can train under torchrun, ppo_breakout_atari.py and ppo_mario_cnn.py, share word for
word:

- setup_distributed, all_ranks_mean: joining the process group, averaging over the ranks
- Silent: the SummaryWriter of every rank but 0
- Stopper: a Ctrl-C that every rank agrees on, stopping at the next step and saving the last complete update
- save_checkpoint: rank 0 writes the state that every rank took part in (each script's own checkpoint_state)
- check_resume: what common.checkpoints.check_resume refuses, and a changed number of ranks
- main: the number of ranks comes from torchrun's WORLD_SIZE

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.distributed.<name>`, `python -m common.check_copies` fails when
one drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: SCRIPT, Args, fail, check_args, args_from_checkpoint, play, train.
"""

from __future__ import annotations

import os
import signal
import sys

import torch
import torch.distributed as dist
import tqdm
import tyro


def save_checkpoint(path: str, state: dict) -> None:
    """Write to a temporary file, then rename: a crash mid-write never leaves a half-written checkpoint."""
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


def check_resume(args: Args, ckpt: dict) -> None:
    """--resume goes on update by update, so the shape of an update cannot change; and there must be steps left."""
    for name in ("num_envs", "num_steps", "world_size"):
        if getattr(args, name) != ckpt["args"][name]:
            flag = "the number of torchrun ranks" if name == "world_size" else "--" + name.replace("_", "-")
            fail(f"{flag} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, {getattr(args, name)} "
                 "now): the step count, the buffers and the annealing go update by update")
    if ckpt["global_step"] + args.num_envs * args.num_steps * args.world_size > args.total_timesteps:
        fail(f"{args.resume} has already trained {ckpt['global_step']} steps; "
             f"give a larger --total-timesteps to train longer")


def setup_distributed(args: Args) -> tuple[int, torch.device]:
    """Under torchrun (which sets RANK, LOCAL_RANK and WORLD_SIZE), join the process group: gloo between CPU
    processes, nccl between GPUs. Returns this process's rank and its device. Without torchrun: rank 0 of 1."""
    use_cuda = torch.cuda.is_available() and args.cuda
    if "RANK" not in os.environ:
        return 0, torch.device("cuda" if use_cuda else "cpu")
    dist.init_process_group("nccl" if use_cuda else "gloo")
    if use_cuda:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    return dist.get_rank(), torch.device(f"cuda:{os.environ['LOCAL_RANK']}" if use_cuda else "cpu")


def all_ranks_mean(value: torch.Tensor, args: Args) -> torch.Tensor:
    """The mean of `value` over the ranks (in place): every rank then holds the same number."""
    if args.world_size > 1:
        dist.all_reduce(value)
        value /= args.world_size
    return value


class Silent:
    """Stands in for the SummaryWriter on ranks other than 0: only rank 0 logs."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class Stopper:
    """Ctrl-C: stop at the next rollout step or minibatch and save the last complete update (`snapshot`, taken
    after every update), rather than finish the update first as the MLP scripts do. torchrun forwards Ctrl-C to
    its workers and kills them 30 s later (its default), sooner than a CNN update can end on a CPU. The ranks
    meet in collective calls, so they must stop at the same step: they agree on it through an all-reduce."""

    def __init__(self, args: Args, rank: int, device: torch.device):
        self.args, self.rank, self.device = args, rank, device
        self.requested, self.stopped, self.snapshot = False, False, None
        signal.signal(signal.SIGINT, self.request)

    def request(self, signum, frame):
        self.requested = True
        if "RANK" not in os.environ:  # (torchrun sends Ctrl-C again on its way out: its SIGKILL is the hard stop)
            signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C quits at once
        if self.rank == 0:
            tqdm.tqdm.write("Ctrl-C: stopping at the next step and saving the last complete update "
                            "(press again to quit without saving)")

    def check(self) -> bool:
        """Whether to stop now: a Ctrl-C reached this rank, or any other (all ranks call this at the same step)."""
        stop = self.requested
        if self.args.world_size > 1:
            stop = all_ranks_mean(torch.tensor(float(stop), device=self.device), self.args).item() > 0
        self.stopped = self.stopped or stop
        return self.stopped


def main() -> None:
    args = tyro.cli(Args, description=__doc__)
    if args.resume and args.play:
        fail("give either --resume or --play, not both")
    ckpt = None
    if args.resume or args.play:
        args, ckpt = args_from_checkpoint(args)
    args.world_size = int(os.environ.get("WORLD_SIZE", 1))
    check_args(args)
    if args.resume:
        check_resume(args, ckpt)
    try:
        play(args, ckpt) if args.play else train(args, ckpt)
    except KeyboardInterrupt:
        print(f"{SCRIPT}: interrupted", file=sys.stderr)
        raise SystemExit(130)
