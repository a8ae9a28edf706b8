"""Checkpoints, written atomically and read with weights_only=True, and what --resume and --play take from them,
where several scripts do it word for word:

- save_checkpoint, a one-process run's whole state: ppo_cartpole.py, ppo_lunarlander_vec.py (Pendulum saves its
  reward statistics and beta too; the torchrun scripts gather every rank's state first: common.distributed)
- load_checkpoint: ppo_cartpole.py, ppo_lunarlander_vec.py, ppo_breakout_atari.py, and ppo_mario_cnn.py with its
  two optimizers (`with "optimizer"->"optimizers"`)
- check_resume, for the scripts that train in one process: ppo_cartpole.py, ppo_lunarlander_vec.py,
  ppo_pendulum_continuous.py
- restore_agent, args_from_checkpoint: every script

A policy file (`python -m benchmarks.ship export`) is a checkpoint cut down to what --play needs: "script", "args",
"agent" (the weights and the statistics kept as buffers), "global_step", "source" and "policy": True.
load_checkpoint reads it; args_from_checkpoint refuses to --resume it.

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.checkpoints.<name>`, `python -m tools.check_copies` fails when
one drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: SCRIPT, Args, fail, rng_states.
"""

from __future__ import annotations

import dataclasses
import os

import torch
import tyro


def save_checkpoint(path: str, args: Args, agent: nn.Module, optimizer: optim.Optimizer, global_step: int,
                    iteration: int, schedule: dict, **extra) -> None:
    """Write to a temporary file, then rename: a crash mid-write never leaves a half-written checkpoint. `extra`:
    what a lesson keeps besides (the language lessons' pi_ref, reward model and beta)."""
    state = {
        "script": SCRIPT,
        "args": dataclasses.asdict(args),
        "agent": agent.state_dict(),
        "optimizer": optimizer.state_dict(),
        "global_step": global_step,
        "iteration": iteration,
        "schedule": schedule,
        "rng": rng_states(next(agent.parameters()).device),
        **extra,
    }
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


def load_checkpoint(path: str) -> dict:
    """Read a checkpoint of this script, or fail with one line that says what is wrong with the file."""
    if os.path.isdir(path):
        fail(f"{path} is a folder, not a checkpoint (a run's is runs/<run>/checkpoint.pt)")
    if not os.path.isfile(path):
        fail(f"no checkpoint at {path}")
    if os.path.getsize(path) == 0:
        fail(f"{path} is empty (0 bytes), not a checkpoint")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated, unreadable, not a torch file, or holding objects that weights_only refuses
        reason = next((line.strip() for line in str(e).splitlines() if line.strip()), "")[:120]  # (can be empty)
        fail(f"{path} is not a readable checkpoint ({type(e).__name__}{': ' if reason else ''}{reason})")
    if not isinstance(ckpt, dict) or not {"script", "args", "agent"} <= ckpt.keys():
        fail(f"{path} is not a checkpoint of this library")
    if ckpt["script"] != SCRIPT:
        fail(f"{path} was written by {ckpt['script']}, not {SCRIPT}")
    missing = {"optimizer", "global_step", "iteration", "schedule", "rng"} - ckpt.keys()
    if missing and ckpt.get("policy") is not True:  # (a policy file holds the weights alone: benchmarks/ship.py)
        fail(f"{path} is an incomplete checkpoint (no {', '.join(sorted(missing))})")
    return ckpt


def check_resume(args: Args, ckpt: dict) -> None:
    """--resume goes on update by update, so the shape of an update and the learning rate's schedule cannot change;
    and there must be steps left."""
    for name in ("num_envs", "num_steps"):  # each where the script has it (ppo_cartpole.py has one env)
        if hasattr(args, name) and getattr(args, name) != ckpt["args"][name]:
            fail(f"--{name.replace('_', '-')} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, "
                 f"{getattr(args, name)} now): the step count, the buffers and the annealing go update by update")
    # The learning rate goes on from the optimizer's state (--no-anneal-lr: Adam's saved rate) and the annealing
    # schedule, so the flags that set it cannot change: they would be ignored, or raise the rate.
    for name in ("learning_rate", "vf_learning_rate", "anneal_lr", "anneal_clip", "clip_coef"):
        if name == "clip_coef" and not getattr(args, "anneal_clip", False):  # (applied as given where not annealed)
            continue
        if hasattr(args, name) and getattr(args, name) != ckpt["args"][name]:
            fail(f"--{name.replace('_', '-')} cannot change on --resume ({ckpt['args'][name]} in {args.resume}, "
                 f"{getattr(args, name)} now): a resumed run goes on with the step size and annealing it started "
                 "with; start a new run to change them")
    if ckpt["global_step"] + getattr(args, "num_envs", 1) * args.num_steps > args.total_timesteps:
        fail(f"{args.resume} has already trained {ckpt['global_step']} steps; "
             f"give a larger --total-timesteps to train longer")


def restore_agent(agent: nn.Module, ckpt: dict, path: str) -> None:
    try:
        agent.load_state_dict(ckpt["agent"])
    except RuntimeError as e:
        fail(f"the network in {path} does not fit this one ({str(e).splitlines()[-1].strip()})")


def args_from_checkpoint(args: Args) -> tuple[Args, dict]:
    """--resume / --play: the checkpoint's Args become the defaults, and the flags given override them."""
    path = args.resume or args.play
    ckpt = load_checkpoint(path)
    if args.resume and ckpt.get("policy") is True:
        fail(f"{path} is a policy file: it holds no optimizer, annealing schedule or random generators, so it can "
             f"only be played (--play {path}), not resumed")
    saved = {k: v for k, v in ckpt["args"].items() if k in {f.name for f in dataclasses.fields(Args)}}
    defaults = dataclasses.replace(Args(**saved), resume=args.resume, play=args.play)
    args = tyro.cli(Args, default=defaults, description=__doc__)
    if args.env_id != ckpt["args"]["env_id"]:
        fail(f"{path} holds a policy for {ckpt['args']['env_id']}, not for --env-id {args.env_id}")
    return args, ckpt
