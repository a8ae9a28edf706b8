"""The number formats of the CNN lessons, ppo_breakout_atari.py and ppo_mario_cnn.py, word for word in both:
use_bf16, where the CNNs compute in bfloat16, and set_cudnn_flags, which keeps float32 convolutions float32 on a
GPU (no TF32) and deterministic when asked.

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.precision.<name>`, `python -m tools.check_copies` fails when
one drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: Args.
"""

from __future__ import annotations

import torch


def use_bf16(args: Args, device: torch.device) -> bool:
    """--precision auto: bf16 on a CPU with native bfloat16 arithmetic (AVX512-BF16 or AMX), where it pays (the
    Breakout update 1.64x faster on 2 cores, benchmarks/README.md); fp32 elsewhere: on CPUs without it, which
    emulate bfloat16 slower than float32, and on CUDA, where the H200 check's three runs found bf16 faster in one
    (Breakout's SPS at the last of 8 updates: 1,359 against 1,225 in fp32, then 1,189 against 1,244 and 1,536
    against 1,603) and Breakout's ratio r_t starting 1.1e-3 away from 1 in bf16 (1.2e-6 in fp32)."""
    if args.precision != "auto":
        return args.precision == "bf16"
    if device.type != "cpu":
        return False
    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


def set_cudnn_flags(args: Args) -> None:
    """On a GPU, cuDNN picks the fastest convolution algorithm, or a deterministic one if asked. And float32 is
    computed as float32: by default cuDNN runs float32 convolutions in TF32 (10 mantissa bits) on Ampere and
    later GPUs, where log pi_old of the rollout (batches of N envs) and of the update (minibatches) then differ
    by ~1e-3 and the ratio r_t no longer starts at 1 (benchmarks/gpu_check.py measures it)."""
    torch.backends.cudnn.deterministic = args.torch_deterministic
    torch.backends.cudnn.benchmark = not args.torch_deterministic
    torch.backends.cudnn.allow_tf32 = False
