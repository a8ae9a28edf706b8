"""What the scripts that can train under torchrun, ppo_breakout_atari.py and ppo_mario_cnn.py, share word for
word:

- check_args: the checks of the hyperparameters (each flag where the script has it), the rollouts of all
  ranks counted
- setup_distributed, all_ranks_mean: joining the process group, averaging over the ranks
- seed_everything, restore_run, end_of_run: common.runs' twins for several ranks (each rank seeds and restores its
  own random generators, every rank starts from rank 0's weights, rank 0 saves and speaks)
- Stopper: common.runs.CtrlC's twin, a Ctrl-C that every rank agrees on, stopping at the next step and saving the
  last complete update
- checkpoint_state: what a checkpoint holds, every rank's random generators gathered; save_checkpoint: rank 0
  writes it
- check_resume: what common.checkpoints.check_resume refuses, and a changed number of ranks
- main: the number of ranks comes from torchrun's WORLD_SIZE

ppo_mario_cnn.py copies restore_run and checkpoint_state `with optimizer->optimizers, optim.Optimizer->Optimizers`:
its two optimizers, saved and restored together under "optimizers".

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.distributed.<name>`, `python -m common.check_copies` fails when
one drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: SCRIPT, Args, RunLog, fail, args_from_checkpoint, play, train, set_cudnn_flags,
restore_agent, restore_rng, resumed_schedule, rng_states.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import random
import signal
import sys
from typing import Optional

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
import tqdm
import tyro


def checkpoint_state(args: Args, agent: nn.Module, optimizer: optim.Optimizer, global_step: int,
                     iteration: int, schedule: dict) -> dict:
    """What a checkpoint holds, copied: it can be kept while training goes on (Stopper keeps the last complete
    update's). Every rank calls it: the random generators of all ranks are gathered (rng[r] is rank r's), so a
    resumed rank r draws on from where rank r stopped."""
    rng = [rng_states(next(agent.parameters()).device)]
    if args.world_size > 1:
        rng = [None] * args.world_size
        dist.all_gather_object(rng, rng_states(next(agent.parameters()).device))
    return {
        "script": SCRIPT,
        "args": dataclasses.asdict(args),
        "agent": copy.deepcopy(agent.state_dict()),
        "optimizer": copy.deepcopy(optimizer.state_dict()),
        "global_step": global_step,
        "iteration": iteration,
        "schedule": dict(schedule),
        "rng": rng,
    }


def save_checkpoint(path: str, state: dict) -> None:
    """Write to a temporary file, then rename: a crash mid-write never leaves a half-written checkpoint."""
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


def check_args(args: Args) -> None:
    """Refuse hyperparameters that cannot work together, before anything is built. Each check applies where the
    script has the flag (and, for an optional one such as --target-kl, where it is set)."""

    def given(*names: str) -> list[tuple[str, float]]:
        return [(name, getattr(args, name)) for name in names if getattr(args, name, None) is not None]

    for name, value in given("total_timesteps", "num_envs", "num_steps", "minibatch_size", "update_epochs",
                             "train_pi_iters", "train_v_iters", "hidden_size", "episodes", "eval_episodes",
                             "learning_rate", "vf_learning_rate", "clip_coef", "vf_clip_coef", "target_kl"):
        if value <= 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {value}")
    for name, value in given("ent_coef", "vf_coef", "max_grad_norm", "checkpoint_every", "eval_every"):
        if value < 0:
            fail(f"--{name.replace('_', '-')} must not be negative, got {value}")
    for name, value in given("gamma", "gae_lambda"):
        if not 0.0 <= value <= 1.0:
            fail(f"--{name.replace('_', '-')} must be in [0, 1], got {value}")
    if args.norm_adv and args.minibatch_size < 2:
        fail(f"--minibatch-size must be at least 2 with --norm-adv: the advantages are normalized by their std "
             f"over each minibatch, and one sample has none (got {args.minibatch_size})")
    batch_size = args.num_envs * args.num_steps
    rollout = f"--num-envs {args.num_envs} x --num-steps {args.num_steps} = {batch_size}"
    if args.minibatch_size > batch_size:
        fail(f"--minibatch-size ({args.minibatch_size}) is larger than the rollout ({rollout})")
    if batch_size % args.minibatch_size:
        fail(f"the rollout ({rollout}) must be a multiple of --minibatch-size ({args.minibatch_size})")
    if args.total_timesteps < batch_size * args.world_size:
        fail(f"--total-timesteps ({args.total_timesteps}) is less than one rollout of every rank (--num-envs "
             f"{args.num_envs} x --num-steps {args.num_steps} x {args.world_size} ranks = "
             f"{batch_size * args.world_size})")


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


def seed_everything(args: Args, rank: int, device: torch.device) -> None:
    """Seed Python, NumPy and torch with seed + rank: the same seed gives the same run on the CPU, and each rank
    samples and explores with its own seed. Deterministic algorithms if asked, cuDNN's too on a GPU."""
    random.seed(args.seed + rank)
    np.random.seed(args.seed + rank)
    torch.manual_seed(args.seed + rank)
    torch.use_deterministic_algorithms(args.torch_deterministic)
    # ...but without also filling every fresh tensor with NaN first (a debugging aid that comes with it: it
    # takes time and does not change the results).
    torch.utils.deterministic.fill_uninitialized_memory = False
    if device.type == "cuda":
        set_cudnn_flags(args)


def restore_run(args: Args, ckpt: Optional[dict], agent: nn.Module, optimizer: optim.Optimizer,
                device: torch.device, rank: int) -> tuple[int, int, dict]:
    """(global_step, first update, annealing schedule) of a new run; resuming, the checkpoint's, with the weights,
    Adam's state and this rank's random generators restored from it. Under torchrun every rank then starts from
    rank 0's weights."""
    global_step, start_iteration = 0, 1
    schedule = {"start": 1.0, "from_iteration": 1, "num_iterations": args.num_iterations}
    if ckpt is not None:
        restore_agent(agent, ckpt, args.resume)
        optimizer.load_state_dict(ckpt["optimizer"])
        global_step, start_iteration = ckpt["global_step"], ckpt["iteration"] + 1
        schedule = resumed_schedule(ckpt["schedule"], ckpt["iteration"], args.num_iterations)
        restore_rng(ckpt["rng"][rank], device)  # this rank's own generators (check_resume: same ranks)
    if args.world_size > 1:  # (each rank drew its own weights at construction)
        for tensor in agent.state_dict().values():
            dist.broadcast(tensor, src=0)
    return global_step, start_iteration, schedule


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


def end_of_run(log: RunLog, envs, checkpoint_path: str, stopper: Stopper) -> None:
    """A run stopped by Ctrl-C saves the last complete update (rank 0 writes the snapshot every rank took part
    in). Close the log and the envs, leave the process group; rank 0 says where the checkpoint is and how to
    watch it; a run stopped by Ctrl-C exits 130, the convention."""
    if stopper.stopped and stopper.rank == 0:
        save_checkpoint(checkpoint_path, stopper.snapshot)
    log.close()
    envs.close()
    if stopper.args.world_size > 1:
        dist.destroy_process_group()
    if stopper.rank == 0:
        print(f"checkpoint: {checkpoint_path} (step {stopper.snapshot['global_step']})")
        print(f"watch it: python {SCRIPT} --play {checkpoint_path} --capture-video")
    if stopper.stopped:
        raise SystemExit(130)


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
