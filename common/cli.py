"""The command line's plumbing that several scripts share word for word:

- fail, how a script refuses bad input: every script
- check_args, the checks of the hyperparameters: the scripts that train in one process (ppo_cartpole.py,
  ppo_lunarlander_vec.py, ppo_pendulum_continuous.py), each flag checked where the script has it
- one_line_help, each Args field's docstring handed to tyro as one line, for --help to wrap: every script
- main, of the scripts that train in one process: ppo_cartpole.py, ppo_lunarlander_vec.py,
  ppo_pendulum_continuous.py (the torchrun scripts' main is common.distributed.main)

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.cli.<name>`, `python -m tools.check_copies` fails when one
drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: SCRIPT, Args, check_args, check_resume, args_from_checkpoint, play, train.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys

import numpy as np
import torch
import tyro


def fail(message: str) -> None:
    """Bad input ends the run with one clear line on stderr and exit code 2, never a traceback."""
    print(f"{SCRIPT}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


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
                             "hidden_size", "frame_stack", "episodes", "eval_episodes", "learning_rate", "clip_coef",
                             "vf_clip_coef", "norm_clip", "kl_target", "kl_beta_init", "target_kl", "max_grad_norm"):
        if value <= 0:
            fail(f"--{name.replace('_', '-')} must be positive, got {value}")
    for name, value in given("ent_coef", "vf_coef", "checkpoint_every", "eval_every"):
        if value < 0:
            fail(f"--{name.replace('_', '-')} must not be negative, got {value}")
    for name, value in given("gamma", "gae_lambda"):
        if not 0.0 <= value <= 1.0:
            fail(f"--{name.replace('_', '-')} must be in [0, 1], got {value}")
    if not 0 <= args.seed <= 2**32 - 1:
        fail(f"--seed must be in [0, {2**32 - 1}] (NumPy's seeds), got {args.seed}")
    if not args.exp_name or "/" in args.exp_name:
        fail(f"--exp-name names one run folder (runs/<env-id>__<exp-name>__<seed>__<time>/): it cannot be empty or "
             f"hold a '/', got {args.exp_name!r}")
    if args.norm_adv and args.minibatch_size < 2:
        fail(f"--minibatch-size must be at least 2 with --norm-adv: the advantages are normalized by their std "
             f"over each minibatch, and one sample has none (got {args.minibatch_size})")
    batch_size = getattr(args, "num_envs", 1) * args.num_steps
    rollout = f"--num-steps {args.num_steps}"
    if hasattr(args, "num_envs"):
        rollout = f"--num-envs {args.num_envs} x --num-steps {args.num_steps} = {batch_size}"
    if args.minibatch_size > batch_size:
        fail(f"--minibatch-size ({args.minibatch_size}) is larger than the rollout ({rollout})")
    if batch_size % args.minibatch_size:
        fail(f"the rollout ({rollout}) must be a multiple of --minibatch-size ({args.minibatch_size})")
    if args.total_timesteps < batch_size:
        fail(f"--total-timesteps ({args.total_timesteps}) is less than one rollout ({rollout})")
    if hasattr(args, "lstm") and args.minibatch_size % args.num_steps:  # (ppo_lstm_memory.py: whole envs)
        fail(f"--minibatch-size ({args.minibatch_size}) must be a multiple of --num-steps ({args.num_steps}): a "
             f"minibatch holds whole envs' rollouts, replayed step by step from the state each started in")


def one_line_help(cls: type) -> type:
    """Hand tyro each field's docstring as one line, which --help wraps to the terminal's width. tyro keeps the
    line breaks of a docstring whose continuation lines are indented (it joins only lines that start with a
    letter), so --help would break its lines where the source does, mid-sentence. It reads a dataclass field's
    "help" metadata before the docstring: that is where the joined text goes. The fields cls inherits (Args's from
    Hyperparameters) are read in their own class's source. Returns cls."""
    if cls.__dict__.get("help_joined"):  # (once per process: reading the source takes tens of milliseconds)
        return cls
    for klass in [k for k in cls.__mro__ if dataclasses.is_dataclass(k)]:
        body = ast.parse(inspect.getsource(klass)).body[0].body
        for node, doc in zip(body, body[1:]):
            if isinstance(node, ast.AnnAssign) and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant):
                field = cls.__dataclass_fields__[node.target.id]
                field.metadata = {**field.metadata, "help": " ".join(doc.value.value.split())}
    cls.help_joined = True
    return cls


def main() -> None:
    args = tyro.cli(one_line_help(Args), description=__doc__)
    if "" in (args.resume, args.play):  # (an empty path would read as not given: a training instead of a play)
        fail(f"--{'resume' if args.resume == '' else 'play'} needs the path of a checkpoint, got ''")
    if args.resume and args.play:
        fail("give either --resume or --play, not both")
    ckpt = None
    if args.resume or args.play:
        args, ckpt = args_from_checkpoint(args)
    check_args(args)
    if args.resume:
        check_resume(args, ckpt)
    # One thread for these small networks: a 64-wide matmul leaves little work to split between threads.
    torch.set_num_threads(1)
    try:
        play(args, ckpt) if args.play else train(args, ckpt)
    except KeyboardInterrupt:
        print(f"{SCRIPT}: interrupted", file=sys.stderr)
        raise SystemExit(130)
