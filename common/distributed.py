"""What the scripts that can train under torchrun, ppo_breakout_atari.py and ppo_mario_cnn.py, share word for
word:

- check_args: the checks of the hyperparameters (each flag where the script has it), the rollouts of all
  ranks counted; check_gpus: a GPU for each rank
- every_rank_agrees: under torchrun, the process group joined first and the checks before training agreed by every
  rank (one that refuses stops them all, at once)
- setup_distributed, all_ranks_mean, all_ranks_mean_grads: each rank's device and precision, averaging over the ranks
- step_network: one gradient step of one network, its gradients averaged over the ranks
- seed_everything, restore_run, end_of_run: common.runs' twins for several ranks (each rank seeds and restores its
  own random generators, every rank starts from rank 0's weights, rank 0 saves and speaks)
- Run: common.runs.Run's twin, the few calls by which train() does all of this
- Stopper: common.runs.CtrlC's twin, a Ctrl-C that every rank agrees on, stopping at the next step and saving the
  last complete update
- checkpoint_state: what a checkpoint holds, every rank's random generators gathered, once check_weights_agree has
  found the ranks' weights equal; save_checkpoint: rank 0 writes it
- check_resume: what common.checkpoints.check_resume refuses, and a changed number of ranks
- main: the checks of the command line and the checkpoint, agreed by every rank; the number of ranks comes from
  torchrun's WORLD_SIZE

ppo_mario_cnn.py copies restore_run and checkpoint_state `with optimizer->optimizers, optim.Optimizer->Optimizers`:
its two optimizers, saved and restored together under "optimizers".

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.distributed.<name>`, `python -m tools.check_copies` fails when
one drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: SCRIPT, Args, RunLog, fail, one_line_help, args_from_checkpoint, play, train,
set_cudnn_flags, use_bf16, restore_agent, restore_rng, resumed_schedule, rng_states, run_folder,
videos_folder, evaluate_and_log.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
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
    update's). Every rank calls it, after every update: the ranks' weights are checked equal (check_weights_agree)
    and the random generators of all ranks are gathered (rng[r] is rank r's), so a resumed rank r draws on from
    where rank r stopped."""
    rng = [rng_states(next(agent.parameters()).device)]
    if args.world_size > 1:
        check_weights_agree(agent, args, iteration)
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


def check_weights_agree(agent: nn.Module, args: Args, iteration: int) -> None:
    """Stop the run if the ranks' weights differ. They start from rank 0's and take the same averaged steps, so they
    stay equal bit for bit, but only as long as every rank computes every update the same way; ranks that drifted
    apart would go on training different networks, and rank 0 would save its own. The check is one all-reduce:
    a checksum of the weights (their bits summed as integers, which is exact in any order), whose maximum and
    minimum over the ranks differ if any rank's weights do."""
    weights = torch.cat([tensor.reshape(-1) for tensor in agent.state_dict().values()])
    checksum = weights.view(torch.int32).sum(dtype=torch.int64)
    extremes = torch.stack([checksum, -checksum])  # (one MAX all-reduce: the maximum and minus the minimum)
    dist.all_reduce(extremes, op=dist.ReduceOp.MAX)
    if extremes[0] != -extremes[1]:
        if int(os.environ.get("LOCAL_RANK", 0)) == 0:  # (said once on each machine, above the progress bar)
            tqdm.tqdm.write(f"{SCRIPT}: error: the ranks' weights differ after update {iteration}: they no longer "
                            "train one network, so the run stops without saving (every checkpoint saved before "
                            "passed this check)", file=sys.stderr)
        dist.destroy_process_group()
        raise SystemExit(1)


def save_checkpoint(path: str, state: dict) -> None:
    """Write to a temporary file, then rename: a crash mid-write never leaves a half-written checkpoint."""
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


def check_args(args: Args) -> None:
    """Refuse hyperparameters that cannot work together, before anything is built. Each check applies where the
    script has the flag (and, for an optional one such as --target-kl, where it is set)."""

    def given(*names: str) -> list[tuple[str, float]]:
        return [(name, getattr(args, name)) for name in names if getattr(args, name, None) is not None]

    # Every float first: nan would pass the checks below (nan <= 0 is False), and Adam would then raise.
    for field in dataclasses.fields(args):
        value = getattr(args, field.name)
        if isinstance(value, float) and not np.isfinite(value):
            fail(f"--{field.name.replace('_', '-')} must be a finite number, got {value}")
    for name, value in given("total_timesteps", "num_envs", "num_steps", "minibatch_size", "update_epochs",
                             "train_pi_iters", "train_v_iters", "hidden_size", "episodes", "eval_episodes",
                             "learning_rate", "vf_learning_rate", "clip_coef", "vf_clip_coef", "target_kl",
                             "max_grad_norm"):
        if value <= 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {value}")
    for name, value in given("ent_coef", "vf_coef", "checkpoint_every", "eval_every"):
        if value < 0:
            fail(f"--{name.replace('_', '-')} must not be negative, got {value}")
    for name, value in given("gamma", "gae_lambda"):
        if not 0.0 <= value <= 1.0:
            fail(f"--{name.replace('_', '-')} must be in [0, 1], got {value}")
    if not 0 <= args.seed <= 2**32 - args.world_size:
        fail(f"--seed must be in [0, {2**32 - args.world_size}] (NumPy seeds rank r with seed + r), got {args.seed}")
    if not args.exp_name or "/" in args.exp_name:
        fail(f"--exp-name names one run folder (runs/<env-id>__<exp-name>__<seed>__<time>/): it cannot be empty or "
             f"hold a '/', got {args.exp_name!r}")
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
    for name, value in given("target_flag_rate"):  # (Mario's: a share of the evaluation episodes)
        if not 0.0 < value <= 1.0:
            fail(f"--target-flag-rate is a share of the evaluation episodes, in (0, 1]; got {value}")
        if not args.eval_every:
            fail("--target-flag-rate ends the run after an evaluation, and --eval-every 0 evaluates never: give "
                 "--eval-every N")


def check_gpus(args: Args) -> None:
    """Under torchrun on GPUs, each rank needs a GPU of its own (NCCL refuses two ranks on one GPU): more ranks on a
    machine than it has GPUs are refused before training starts."""
    local_rank, ranks_here = int(os.environ.get("LOCAL_RANK", 0)), int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    if "RANK" in os.environ and torch.cuda.is_available() and args.cuda and \
            max(ranks_here, local_rank + 1) > torch.cuda.device_count():
        fail(f"torchrun starts {max(ranks_here, local_rank + 1)} ranks on this machine and it has "
             f"{torch.cuda.device_count()} GPU(s): each rank needs a GPU of its own; give --nproc_per_node "
             f"{torch.cuda.device_count()} or fewer, or --no-cuda to train the ranks on the CPU")


def check_resume(args: Args, ckpt: dict) -> None:
    """--resume goes on update by update, so the shape of an update and the learning rate's schedule cannot change;
    and there must be steps left."""
    for name in ("num_envs", "num_steps", "world_size"):
        if getattr(args, name) != ckpt["args"][name]:
            flag = "the number of torchrun ranks" if name == "world_size" else "--" + name.replace("_", "-")
            fail(f"{flag} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, {getattr(args, name)} "
                 "now): the step count, the buffers and the annealing go update by update")
    # The learning rate goes on from the optimizer's state (--no-anneal-lr: Adam's saved rate) and the annealing
    # schedule, so the flags that set it cannot change: they would be ignored, or raise the rate.
    for name in ("learning_rate", "vf_learning_rate", "anneal_lr", "anneal_clip", "clip_coef"):
        if name == "clip_coef" and not getattr(args, "anneal_clip", False):  # (applied as given where not annealed)
            continue
        if hasattr(args, name) and getattr(args, name) != ckpt["args"][name]:
            fail(f"--{name.replace('_', '-')} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, "
                 f"{getattr(args, name)} now): a resumed run goes on with the step size and annealing it started "
                 "with; start a new run to change them")
    if ckpt["global_step"] + args.num_envs * args.num_steps * args.world_size > args.total_timesteps:
        fail(f"{args.resume} has already trained {ckpt['global_step']} steps; "
             f"give a larger --total-timesteps to train longer")


@contextlib.contextmanager
def every_rank_agrees():
    """Under torchrun, the checks made in the `with` block are agreed by every rank. A rank that refused alone (a
    --resume checkpoint missing on its node, too few GPUs on its machine) would leave the others waiting for it in
    the process group until its timeout (30 min with gloo). So every rank joins the process group first, makes the
    checks, and tells the others whether it refused (fail's line, held back meanwhile): if any did, every rank
    refuses with the first refusal's line, said once on each machine, within seconds. Without torchrun: the block
    alone, as in the other scripts."""
    if "RANK" not in os.environ:
        yield
        return
    # gloo for the tensors on the CPU (the verdicts below), NCCL for those on a GPU where there are GPUs: which
    # device a rank trains on is known only once the checks have read the command line and the checkpoint.
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")
    said, refusal = io.StringIO(), None
    try:
        with contextlib.redirect_stderr(said):
            yield
    except SystemExit as exit_:
        refusal = (exit_.code, said.getvalue().strip())
    else:
        sys.stderr.write(said.getvalue())
    refusals = [None] * int(os.environ["WORLD_SIZE"])
    dist.all_gather_object(refusals, refusal)
    refused = [(rank, r) for rank, r in enumerate(refusals) if r is not None]
    if refused:
        rank, (code, line) = refused[0]
        if line and int(os.environ["LOCAL_RANK"]) == 0:
            alone = "" if len(refused) == len(refusals) else f" (rank {rank}; every rank stops with it)"
            print(line + alone, file=sys.stderr)
        dist.destroy_process_group()
        raise SystemExit(code)


def setup_distributed(args: Args) -> tuple[int, torch.device]:
    """Under torchrun (which sets RANK, LOCAL_RANK and WORLD_SIZE; main has joined the process group): this process's
    rank and its device, one GPU per rank (check_gpus) or the CPU; and --precision auto decided once, by rank 0, for
    every rank (each machine deciding for itself, a cluster of mixed CPUs would train some ranks in bf16 and others
    in fp32). Without torchrun: rank 0 of 1."""
    use_cuda = torch.cuda.is_available() and args.cuda
    if "RANK" not in os.environ:
        return 0, torch.device("cuda" if use_cuda else "cpu")
    device = torch.device(f"cuda:{os.environ['LOCAL_RANK']}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if args.precision == "auto":
        precision = ["bf16" if use_bf16(args, device) else "fp32"]
        dist.broadcast_object_list(precision, src=0)
        args.precision = precision[0]  # (and so in the checkpoint: a resumed run keeps it)
    return dist.get_rank(), device


def all_ranks_mean(value: torch.Tensor, args: Args) -> torch.Tensor:
    """The mean of `value` over the ranks (in place): every rank then holds the same number."""
    if args.world_size > 1:
        dist.all_reduce(value)
        value /= args.world_size
    return value


def all_ranks_mean_grads(parameters, args: Args) -> None:
    """Average the gradients over the ranks, so that every rank takes the same step: flattened into one tensor,
    they go through one all-reduce per step rather than one per parameter tensor (as in CleanRL's
    ppo_atari_multigpu.py). Every parameter's, zeros where this rank's loss has none, as DDP does: every rank
    then all-reduces a tensor of the same size."""
    if args.world_size == 1:
        return
    for param in parameters:
        if param.grad is None:
            param.grad = torch.zeros_like(param)
    grads = [param.grad for param in parameters]
    flat = all_ranks_mean(torch.cat([grad.reshape(-1) for grad in grads]), args)
    for grad, mean in zip(grads, flat.split([grad.numel() for grad in grads])):
        grad.copy_(mean.view_as(grad))


def step_network(optimizer: optim.Optimizer, loss: torch.Tensor, parameters, args: Args) -> None:
    """One gradient step of one network (its `parameters`) on `loss`."""
    parameters = list(parameters)  # (read twice below: a generator such as agent.parameters() would run dry)
    optimizer.zero_grad()
    loss.backward()
    all_ranks_mean_grads(parameters, args)  # (torchrun: every process takes the same step, the mean one)
    # Global gradient clipping ([37] detail 11): all gradients scaled down together to a norm of at most
    # max_grad_norm, so one unlucky minibatch cannot take a huge step.
    nn.utils.clip_grad_norm_(parameters, args.max_grad_norm)
    optimizer.step()


def seed_everything(args: Args, rank: int, device: torch.device) -> None:
    """Seed Python, NumPy and torch with seed + rank (--seed), so that each rank samples and explores with a seed of
    its own. Deterministic algorithms if asked, cuDNN's too on a GPU."""
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
    schedule = {"scale": 1.0, "num_iterations": args.num_iterations}
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
    meet in collective calls, so they must stop at the same step: they agree on it through an all-reduce, at
    every AGREE_EVERY-th check only (a collective and a wait for its result each time), and rank 0 says so,
    whichever rank the Ctrl-C reached (pressed on another machine, it reaches that machine's ranks only). On 2 CPU
    cores 16 checks are about a second of training (a minibatch step takes 44-72 ms, benchmarks/README.md), far
    inside the 30 s. While rank 0 evaluates, the others wait for it (wait_for_rank_0)."""

    AGREE_EVERY = 16

    def __init__(self, args: Args, rank: int, device: torch.device):
        self.args, self.rank, self.device = args, rank, device
        self.requested, self.stopped, self.snapshot, self.checks, self.eval_steps = False, False, None, 0, 0
        signal.signal(signal.SIGINT, self.request)

    def request(self, signum, frame):
        self.requested = True
        if "RANK" not in os.environ:  # (torchrun sends Ctrl-C again on its way out: its SIGKILL is the hard stop)
            signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C quits at once
            tqdm.tqdm.write("Ctrl-C: stopping at the next step and saving the last complete update "
                            "(press again to quit without saving)")

    def check(self) -> bool:
        """Whether to stop now: in one process, whether Ctrl-C was pressed; under torchrun, whether it reached any
        rank, as they found at their last agreement (all ranks call this at the same steps)."""
        self.checks += 1
        if "RANK" not in os.environ:
            self.stopped = self.stopped or self.requested
        elif self.checks % self.AGREE_EVERY == 0 and not self.stopped:
            self.meet(evaluating=False)
        return self.stopped

    def meet(self, evaluating: bool) -> bool:
        """The ranks' agreement, one all-reduce: whether Ctrl-C reached any rank (then they all stop), and whether
        rank 0 is still evaluating (`evaluating` is rank 0's word; the other ranks say False)."""
        flags = torch.tensor([float(self.requested), float(evaluating)], device=self.device)
        requested, evaluating = all_ranks_mean(flags, self.args).tolist()
        if requested > 0 and not self.stopped and self.rank == 0:
            tqdm.tqdm.write("Ctrl-C: stopping at the next step and saving the last complete update")
        self.stopped = self.stopped or requested > 0
        return evaluating > 0

    def evaluating(self) -> bool:
        """evaluate()'s should_stop on rank 0, at every step of its episodes: whether to give them up (a Ctrl-C).
        Under torchrun the other ranks meet it at every AGREE_EVERY-th step (wait_for_rank_0), so that no rank waits
        inside one collective for a whole evaluation (it would end at the process group's timeout, 30 min with
        gloo and 10 with NCCL, which a long one with --capture-video can reach) and a Ctrl-C on any rank ends it."""
        self.eval_steps += 1
        if "RANK" in os.environ and self.eval_steps % self.AGREE_EVERY == 0:
            self.meet(evaluating=True)
        return self.requested or self.stopped

    def evaluated(self) -> bool:
        """Rank 0, its episodes over or given up: the other ranks wait no more. Whether they were played to the end
        (not given up)."""
        if "RANK" in os.environ:
            self.meet(evaluating=False)
        return not (self.requested or self.stopped)

    def wait_for_rank_0(self) -> None:
        """The ranks but 0, while rank 0 evaluates: they meet it until it says it is done. Returns None (what the
        evaluation found is rank 0's alone)."""
        while self.meet(evaluating=False):
            pass


class Run:
    """common.runs.Run's twin for the scripts that can train under torchrun: what train() needs that is not PPO,
    behind a few calls. Here it also holds the processes (ranks, one a GPU or a share of the CPU) that torchrun
    starts, each running N envs and averaging its gradients with the others, and Ctrl-C stops mid-update: check(),
    called at every rollout step and before every gradient step, saves the last complete update and ends the run."""

    def __init__(self, args: Args, ckpt: Optional[dict]):
        self.args, self.ckpt = args, ckpt
        self.rank, self.device = setup_distributed(args)  # under torchrun: this process's rank and its device
        # the envs stepped together, N on each rank: global_step counts the steps of them all
        self.parallel_envs = args.num_envs * args.world_size
        seed_everything(args, self.rank, self.device)  # each rank's generators seeded with seed + rank
        self.dir = run_folder(args)  # runs/<env-id>__<exp-name>__<seed>__<time>/, or the resumed run's own
        # where --capture-video records (a resumed run: a folder of its own); None without it
        self.videos = videos_folder(args, self.dir) if args.capture_video else None

    def start(self, agent: nn.Module, optimizer: optim.Optimizer) -> tuple[int, int, RunLog]:
        """(global_step, first update, log): 0 and 1 for a new run; for a resumed one the checkpoint's, with the
        weights, the optimizer's state, this rank's random generators and the annealing schedule restored. Every
        rank takes rank 0's weights. Opens the log (rank 0 writes it) and takes the first snapshot for Ctrl-C."""
        self.agent, self.optimizer = agent, optimizer
        global_step, start_iteration, self.schedule = restore_run(self.args, self.ckpt, agent, optimizer, self.device,
                                                                  self.rank)
        self.log = RunLog(self.args, self.dir, self.device, global_step, self.rank)
        self.checkpoint_path = os.path.join(self.dir, "checkpoint.pt")
        self.stopper = Stopper(self.args, self.rank, self.device)
        self.stopper.snapshot = checkpoint_state(self.args, agent, optimizer, global_step, start_iteration - 1,
                                                 self.schedule)
        self.global_step = global_step
        return global_step, start_iteration, self.log

    def first_observation(self, envs) -> np.ndarray:
        """Reset the envs for the first rollout: env i of rank r seeded from seed + r N + i and the step count (a
        resumed run starts fresh episodes, not the ones it started with)."""
        self.vector_env = envs  # (closed by close())
        obs, _ = envs.reset(seed=self.args.seed + self.rank * self.args.num_envs + self.global_step)
        return obs

    def alpha(self, iteration: int) -> float:
        """Table 5's alpha for update `iteration`: 1 - (i - 1) / num_iterations, falling from 1 toward 0. In a run
        resumed with a larger --total-timesteps the schedule's scale makes it go on from its last value over the
        added updates, never up (resumed_schedule); in every other run the scale is 1."""
        return self.schedule["scale"] * (1.0 - (iteration - 1) / self.schedule["num_iterations"])

    def check(self) -> None:
        """Ctrl-C, under torchrun on any rank (the ranks agree on it: Stopper): save the last complete update and
        end the run now (exit 130). Called between rollout steps and before gradient steps."""
        if self.stopper.check():
            self.close()

    def evaluate(self, agent: nn.Module, global_step: int):
        """evaluate_and_log on rank 0 (what it returns), while the other ranks wait for it (None)."""
        if self.rank == 0:
            return evaluate_and_log(self.args, agent, self.log, self.videos, global_step, self.stopper)
        return self.stopper.wait_for_rank_0()

    def after_update(self, iteration: int, global_step: int, last: bool = False) -> None:
        """The end of update `iteration` (`last`: the run ends after it): the snapshot a Ctrl-C would save, taken on
        every rank; rank 0 saves it every --checkpoint-every updates and after the last."""
        self.global_step = global_step
        self.stopper.snapshot = checkpoint_state(self.args, self.agent, self.optimizer, global_step, iteration,
                                                 self.schedule)
        every = self.args.checkpoint_every
        if self.rank == 0 and (last or iteration == self.args.num_iterations or (every and iteration % every == 0)):
            save_checkpoint(self.checkpoint_path, self.stopper.snapshot)

    def close(self) -> None:
        """End the run: end_of_run (a Ctrl-C's checkpoint, the log and the envs closed, the process group left; exit
        130 after a Ctrl-C)."""
        end_of_run(self.log, self.vector_env, self.checkpoint_path, self.stopper)


def end_of_run(log: RunLog, envs, checkpoint_path: str, stopper: Stopper) -> None:
    """A run stopped by Ctrl-C saves the last complete update (rank 0 writes the snapshot every rank took part
    in). Close the log and the envs; rank 0 says where the checkpoint is and how to watch it; leave the process
    group; a run stopped by Ctrl-C exits 130, the convention."""
    if stopper.stopped and stopper.rank == 0:
        save_checkpoint(checkpoint_path, stopper.snapshot)
    log.close()
    envs.close()
    if stopper.rank == 0:
        print(f"checkpoint: {checkpoint_path} (step {stopper.snapshot['global_step']})")
        print(f"watch it: python {SCRIPT} --play {checkpoint_path} --capture-video", flush=True)
    if stopper.args.world_size > 1:
        # No rank leaves before rank 0 has saved: torchrun answers the first worker that exits with a failure (130)
        # by sending SIGTERM to the others, rank 0 mid-save included, when the Ctrl-C did not reach torchrun itself
        # (pressed on another machine, or sent to one worker).
        dist.barrier()  # (rank 0 comes once its last checkpoint is written, whichever path saved it)
        dist.destroy_process_group()
    if stopper.stopped:
        raise SystemExit(130)


def main() -> None:
    with every_rank_agrees():  # under torchrun: a check that one rank refuses, every rank refuses
        args = tyro.cli(one_line_help(Args), description=__doc__)
        if "" in (args.resume, args.play):  # (an empty path would read as not given: a training instead of a play)
            fail(f"--{'resume' if args.resume == '' else 'play'} needs the path of a checkpoint, got ''")
        if args.resume and args.play:
            fail("give either --resume or --play, not both")
        ckpt = None
        if args.resume or args.play:
            args, ckpt = args_from_checkpoint(args)
        args.world_size = int(os.environ.get("WORLD_SIZE", 1))
        check_args(args)
        if args.resume:
            check_resume(args, ckpt)
        if not args.play:
            check_gpus(args)
    try:
        play(args, ckpt) if args.play else train(args, ckpt)
    except KeyboardInterrupt:
        print(f"{SCRIPT}: interrupted", file=sys.stderr)
        raise SystemExit(130)
