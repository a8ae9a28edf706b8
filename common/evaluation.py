"""Evaluation of the greedy policy during training, and --play, as the discrete-action MLP lessons do it word for
word: evaluate and play in ppo_cartpole.py and ppo_lunarlander_vec.py (Pendulum's steps its env with a continuous
action and builds its agent with the normalization's clip; the pixel lessons' sample from pi and report more
than the return).

Like wrappers.py and resume.py, this module holds the originals of checked copies, and no script imports it: each
copy sits in its script under `# Copied from common.evaluation.<name>`, `python -m tools.check_copies` fails when
one drifts and `--fix` rewrites it from here. The names used below but neither defined nor imported here are the
carrying script's own: Args, Agent, RunLog, make_env, restore_agent.
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch
import tqdm


def evaluate(args: Args, agent: Agent, episodes: int, video_folder: Optional[str] = None, verbose: bool = False):
    """Run `episodes` episodes of the greedy policy (argmax pi) on an env of its own, episode i seeded with
    seed + i, so every evaluation sees the same starts. Returns the episodic returns and lengths."""
    env = make_env(args, video_folder, video_trigger=lambda episode: True)
    device = next(agent.parameters()).device
    returns, lengths = [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=args.seed + episode)
        while True:
            with torch.inference_mode():
                action, _, _, _ = agent.get_action_and_value(torch.as_tensor(obs, device=device), greedy=True)
            obs, _, terminated, truncated, info = env.step(action.item())
            if terminated or truncated:
                break
        returns.append(float(info["episode"]["r"]))
        lengths.append(int(info["episode"]["l"]))
        if verbose:
            print(f"episode {episode + 1}/{episodes}: return {returns[-1]:.1f}, length {lengths[-1]}")
    env.close()
    return returns, lengths


def play(args: Args, ckpt: dict) -> None:
    # A folder of its own for each --play, so that no earlier video is overwritten.
    video_folder = os.path.join(os.path.dirname(os.path.abspath(args.play)), "videos", f"play-{int(time.time())}")
    with make_env(args) as env:  # one env to read the spaces off
        agent = Agent(env, args.hidden_size)
    restore_agent(agent, ckpt, args.play)
    returns, _ = evaluate(args, agent, args.episodes, video_folder if args.capture_video else None, verbose=True)
    print(f"mean return over {args.episodes} episodes: {np.mean(returns):.1f} +/- {np.std(returns):.1f}")
    if args.capture_video:
        print(f"videos: {video_folder}")


def evaluate_and_log(args: Args, agent: Agent, log: RunLog, videos: str, global_step: int) -> None:
    """Evaluate the greedy policy for --eval-episodes episodes (recorded under videos/eval-<step>/ with
    --capture-video), log the mean return and length, and say it above the progress bar."""
    video_folder = os.path.join(videos, f"eval-{global_step}") if args.capture_video else None
    eval_returns, eval_lengths = evaluate(args, agent, args.eval_episodes, video_folder)
    log.scalar("eval/mean_return", np.mean(eval_returns), global_step)
    log.scalar("eval/mean_length", np.mean(eval_lengths), global_step)
    tqdm.tqdm.write(f"step {global_step}: greedy policy, mean return over {args.eval_episodes} episodes "
                    f"{np.mean(eval_returns):.1f}")
