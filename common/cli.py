"""The command line's plumbing that several scripts share word for word:

- fail, how a script refuses bad input: every script
- main, of the scripts that train in one process: ppo_cartpole.py, ppo_lunarlander_vec.py,
  ppo_pendulum_continuous.py (the torchrun scripts' main is common.distributed.main)

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.cli.<name>`, `python -m common.check_copies` fails when one
drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: SCRIPT, Args, check_args, check_resume, args_from_checkpoint, play, train.
"""

from __future__ import annotations

import sys

import torch
import tyro


def fail(message: str) -> None:
    """Bad input ends the run with one clear line on stderr and exit code 2, never a traceback."""
    print(f"{SCRIPT}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main() -> None:
    args = tyro.cli(Args, description=__doc__)
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
