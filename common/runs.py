"""The plumbing of a training run that the scripts share word for word, so that train() can hold PPO and little else:

- RunLog: the run folder, TensorBoard (CleanRL's tag names), the progress bar and the steps per second: every
  script (only rank 0 writes under torchrun)
- explained_variance: the critic's diagnostic logged after every update: every script
- Run, the few calls by which train() seeds, resumes, logs, checkpoints and stops on Ctrl-C, and what it calls
  (seed_everything, restore_run, CtrlC, end_of_run): the scripts that train in one process (ppo_cartpole.py,
  ppo_lunarlander_vec.py, ppo_pendulum_continuous.py); the torchrun scripts have twins in common.distributed
- run_folder, videos_folder: every script
- adam, torch's Adam with its update batched over the parameter tensors: every script

Like wrappers.py and resume.py, this module holds the originals of checked copies and no script imports it: each copy sits in
its script under `# Copied from common.runs.<name>`, `python -m tools.check_copies` fails when one drifts and
`--fix` rewrites it from here. The names used below but neither defined nor imported here are the carrying script's
own: SCRIPT, Args, restore_agent, resumed_schedule, restore_rng, save_checkpoint.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random
import signal
import time
from typing import Optional

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
import tqdm
from torch.utils.tensorboard import SummaryWriter


def run_folder(args: Args) -> str:
    """runs/<env-id>__<exp-name>__<seed>__<unix time>/ for a new run; a resumed run keeps writing into its own
    folder, and TensorBoard continues its curves."""
    if args.resume:
        return os.path.dirname(os.path.abspath(args.resume))
    return os.path.join("runs", f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}")



def videos_folder(args: Args, run_dir: str) -> str:
    """Where --capture-video records: the run folder's videos/, and for a resumed run a folder of its own in it
    (videos/resume-<unix time>/): RecordVideo numbers the episodes from 0 again, and in videos/ itself it would
    overwrite what the run recorded before it stopped."""
    videos = os.path.join(run_dir, "videos")
    return os.path.join(videos, f"resume-{int(time.time())}") if args.resume else videos

def seed_everything(args: Args) -> torch.device:
    """Seed Python, NumPy and torch (--seed), deterministic algorithms if asked; return the device to train on."""
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(args.torch_deterministic)
    return torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")


def restore_run(args: Args, ckpt: Optional[dict], agent: nn.Module, optimizer: optim.Optimizer,
                device: torch.device) -> tuple[int, int, dict]:
    """(global_step, first update, annealing schedule) of a new run; resuming, the checkpoint's, with the weights,
    the optimizer's state and the random generators restored from it."""
    if ckpt is None:
        return 0, 1, {"scale": 1.0, "num_iterations": args.num_iterations}
    restore_agent(agent, ckpt, args.resume)
    optimizer.load_state_dict(ckpt["optimizer"])
    restore_rng(ckpt["rng"], device)
    schedule = resumed_schedule(ckpt["schedule"], ckpt["iteration"], args.num_iterations)
    return ckpt["global_step"], ckpt["iteration"] + 1, schedule


class RunLog:
    """What a run reports: scalars to TensorBoard in the run folder, the progress bar with the mean return of the
    last 20 episodes, and the steps per second. The folder is made here, once the env and the checkpoint have been
    accepted, so that a refused run leaves nothing behind. Under torchrun only rank 0 writes."""

    def __init__(self, args: Args, run_dir: str, device: torch.device, global_step: int, rank: int = 0):
        self.writer = None
        if rank == 0:
            os.makedirs(run_dir, exist_ok=True)
            # A resumed run goes on from its checkpoint's step G. What an earlier process logged past G (the episodes
            # of a rollout that a Ctrl-C gave up, or everything after the last checkpoint before a crash) is not in
            # this run's history: purge_step has TensorBoard drop the earlier events from step G + 1 on.
            self.writer = SummaryWriter(run_dir, purge_step=global_step + 1 if args.resume else None)
            self.writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(
                f"|{k}|{v}|" for k, v in dataclasses.asdict(args).items()))
            print(f"run folder {run_dir}, training on {device} (curves: tensorboard --logdir {os.path.dirname(run_dir)})")
        self.recent_returns = collections.deque(maxlen=20)
        self.progress = tqdm.tqdm(total=args.total_timesteps, initial=global_step, unit="step", dynamic_ncols=True,
                                  disable=rank != 0)
        self.start_time, self.start_step = time.time(), global_step

    def scalar(self, tag: str, value: float, step: int) -> None:
        if self.writer is not None:
            self.writer.add_scalar(tag, value, step)

    def episode(self, episodic_return: float, length: int, step: int) -> None:
        self.recent_returns.append(episodic_return)
        self.scalar("charts/episodic_return", episodic_return, step)
        self.scalar("charts/episodic_length", length, step)

    def update(self, global_step: int, steps: int, scalars: dict) -> None:
        """After an update: its scalars, the steps per second, and the progress bar moved on by `steps`."""
        sps = int((global_step - self.start_step) / (time.time() - self.start_time))
        for tag, value in {**scalars, "charts/SPS": sps}.items():
            self.scalar(tag, value, global_step)
        self.progress.update(steps)
        if self.recent_returns:
            self.progress.set_postfix_str(
                f"return(last {len(self.recent_returns)}) {np.mean(self.recent_returns):.1f}, SPS {sps}")

    def close(self) -> None:
        self.progress.close()
        if self.writer is not None:
            self.writer.close()


class Run:
    """What train() needs that is not PPO, behind a few calls: the seeds and the device, the run folder, its log,
    what --resume restores, the annealing schedule, the checkpoints and Ctrl-C. train() makes one first, calls
    start() once the agent and the optimizer exist, first_observation() once, alpha() at each update,
    after_update() at the end of each, and close() when the loop is done."""

    def __init__(self, args: Args, ckpt: Optional[dict]):
        self.args, self.ckpt = args, ckpt
        self.device = seed_everything(args)  # Python's, NumPy's and torch's generators seeded; the device
        self.dir = run_folder(args)  # runs/<env-id>__<exp-name>__<seed>__<time>/, or the resumed run's own
        # where --capture-video records (a resumed run: a folder of its own); None without it
        self.videos = videos_folder(args, self.dir) if args.capture_video else None

    def start(self, agent: nn.Module, optimizer: optim.Optimizer, **modules: nn.Module) -> tuple[int, int, RunLog]:
        """(global_step, first update, log): 0 and 1 for a new run; for a resumed one the checkpoint's, with the
        weights, the optimizer's state, the random generators, the annealing schedule and each of `modules` (by its
        name in the checkpoint) restored. Opens the log (TensorBoard, the progress bar); from here on Ctrl-C asks
        for a clean stop: the update finishes, a checkpoint is saved, the script exits."""
        self.agent, self.optimizer = agent, optimizer
        global_step, start_iteration, self.schedule = restore_run(self.args, self.ckpt, agent, optimizer, self.device)
        for name, module in modules.items():
            if self.ckpt:
                module.load_state_dict(self.ckpt[name])
        self.log = RunLog(self.args, self.dir, self.device, global_step)
        self.checkpoint_path = os.path.join(self.dir, "checkpoint.pt")
        self.ctrl_c = CtrlC()
        self.global_step = global_step
        return global_step, start_iteration, self.log

    def first_observation(self, envs) -> np.ndarray:
        """Reset the env(s) for the first rollout, seeded from --seed (a vector env's env i from seed + i) and the
        step count: a resumed run starts fresh episodes, not the ones it started with."""
        self.vector_env = envs  # (closed by close())
        obs, _ = envs.reset(seed=self.args.seed + self.global_step)
        return obs

    def state(self, name: str, default):
        """The checkpoint's `name` in a resumed run, `default` in a new one."""
        return self.ckpt[name] if self.ckpt else default

    def alpha(self, iteration: int) -> float:
        """Table 5's alpha for update `iteration`: 1 - (i - 1) / num_iterations, falling from 1 toward 0. In a run
        resumed with a larger --total-timesteps the schedule's scale makes it go on from its last value over the
        added updates, never up (resumed_schedule); in every other run the scale is 1."""
        return self.schedule["scale"] * (1.0 - (iteration - 1) / self.schedule["num_iterations"])

    def after_update(self, iteration: int, global_step: int, **state) -> bool:
        """The end of update `iteration`: a checkpoint every --checkpoint-every updates, after the last and after a
        Ctrl-C (with `state`, what else this script's checkpoint keeps). True when the run must stop (Ctrl-C)."""
        stop, self.global_step = self.ctrl_c.requested, global_step
        every = self.args.checkpoint_every
        if stop or iteration == self.args.num_iterations or (every and iteration % every == 0):
            save_checkpoint(self.checkpoint_path, self.args, self.agent, self.optimizer, global_step, iteration,
                            self.schedule, **state)
        return stop

    def close(self) -> None:
        """Close the log and the env(s), say where the checkpoint is; exit 130 after a Ctrl-C."""
        end_of_run(self.log, self.vector_env, self.checkpoint_path, self.global_step, self.ctrl_c.requested)


def explained_variance(returns: np.ndarray, values: np.ndarray) -> float:
    """How much of the value targets' variance V explains: 1 is a perfect critic, 0 no better than a constant."""
    var_returns = np.var(returns)
    return 1 - np.var(returns - values) / var_returns if var_returns > 0 else float("nan")


class CtrlC:
    """Ctrl-C asks for a clean stop: the current update finishes, a checkpoint is saved, the script exits (130).
    A second Ctrl-C quits at once."""

    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGINT, self.request)

    def request(self, signum, frame) -> None:
        self.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)
        tqdm.tqdm.write("Ctrl-C: saving a checkpoint after this update (press again to quit without saving)")


def end_of_run(log: RunLog, envs, checkpoint_path: str, global_step: int, stopped: bool) -> None:
    """Close the log and the env(s), say where the checkpoint is and how to watch it; a run stopped by Ctrl-C
    exits 130, the convention."""
    log.close()
    envs.close()
    print(f"checkpoint: {checkpoint_path} (step {global_step})")
    print(f"watch it: python {SCRIPT} --play {checkpoint_path} --capture-video")
    if stopped:
        raise SystemExit(130)


def adam(parameters, lr: float, eps: float) -> optim.Adam:
    """torch's Adam, its update done in a few batched operations over all the parameter tensors together (foreach)
    instead of a Python loop over them."""
    return optim.Adam(parameters, lr=lr, eps=eps, foreach=True)
