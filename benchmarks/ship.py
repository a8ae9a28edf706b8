"""Ship a trained policy: a run's checkpoint cut down to a small policy file that `--play` loads, and a GIF of it.

A checkpoint (runs/<run>/checkpoint.pt) holds everything --resume needs: the weights, the optimizer's state, the
step count, the annealing schedule and every random generator. A policy file holds what --play needs and no more:

    {"script", "args", "agent", "policy": True, "global_step", "source"}

"agent" is the network's state_dict, so the statistics kept as its buffers come with it (ppo_pendulum_continuous.py's
observation normalization, obs_rms); "source" says which run and command it came from. The weights keep their
dtype (float32): the policy file's are the checkpoint's, bit for bit. Each script's load_checkpoint reads a policy
file; --resume refuses it with one line and exit code 2 (it holds no optimizer). The files of the lessons' best
runs are in agents/, beside their GIFs.

Usage, from the repository root:

    python -m benchmarks.ship export runs/<run>/checkpoint.pt agents/cartpole.pt   # the policy file
    python -m benchmarks.ship gif agents/cartpole.pt agents/cartpole.gif         # its first episode, as a GIF
    python -m benchmarks.ship gifs                                                # every agents/*.pt's GIF again
    python -m benchmarks.ship play cartpole breakout    # agents/cartpole.play.txt, agents/breakout.play.txt
    python -m benchmarks.ship readme                    # agents/README.md
    python ppo_cartpole.py --play agents/cartpole.pt --episodes 5 --capture-video  # watch it (MP4s)

`export` writes atomically (a temporary file, then a rename); `--source TEXT` replaces the "source" string it
writes by default (the run folder, the step and the command line that trains the same run). `gif` runs the
script's own `--play` path (its main(), one episode, greedy or sampled as the lesson's --play is) with the frames
taken where the script would record its video: every k-th frame, downscaled to `--width` pixels, at most
`--seconds` of the episode in real time, about `--fps` frames a second, so that a GIF is small; it sets
MUJOCO_GL=egl where no display is set (MuJoCo renders off-screen). `gif --seed N` draws the first episode of
`--play ... --seed N` instead; `gifs` draws each file with its GIF_SETTINGS (the defaults, but for Mario's: seed 6's
episode, to the flag), which the flags given replace. `play NAME ...` plays agents/NAME.pt through its script's
`--play` for PLAY_EPISODES episodes (with the script's default seed) and writes the command and what it printed to
agents/NAME.play.txt; `readme` writes agents/README.md from the policy files' "source" strings, ORIGINS (why each
run) and the play logs (`readme --check`: exit 1 where it is out of date). README's results table
(benchmarks/results.py) and its "Watch" line quote those logs and nothing else.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import math
import os
import sys
import typing
from pathlib import Path
from unittest import mock

import gymnasium as gym
import torch
import tyro
from PIL import Image

from benchmarks.core import launch
from benchmarks.results import pixels, play_log

ROOT = launch.ROOT
AGENTS = ROOT / "agents"
PLAY_EPISODES = 20
# Why each shipped agent is the run it is (the figures are the record's: benchmarks/README.md and its CSVs).
ORIGINS = {
    "cartpole.pt": "The default recipe, seed 1; all five of the benchmark's seeds end at 500 (ppo_cartpole.csv).",
    "lunarlander.pt": "The default recipe with the benchmark's best seed, 2 (last 20 training episodes 280.7, greedy "
                      "281.2 over 100 episodes: ppo_lunarlander_vec.csv), trained again by the same command.",
    "pendulum.pt": "The clipped objective (the default) with --clip-vloss, as the benchmark ran it, and its best seed, "
                   "2 (last 20 training episodes -175.5, greedy -139.6 over 20: ppo_pendulum_continuous-clip.csv), "
                   "trained again by the same command.",
    "hopper.pt": "Table 1's clip0.2 run of Hopper-v5 (benchmarks.mujoco_grid), the best of its three seeds over the "
                 "last 100 training episodes (seed 3: 2737.1; seeds 1 and 2: 2460.1, 2616.8; mujoco/runs.csv).",
    "breakout.pt": "The default recipe (epsilon held at 0.1, CleanRL's: --no-anneal-clip when it ran, the default "
                   "since) at 40M frames, seed 1: 416.2 over its last 100 games (seed 2: 423.6). With --anneal-clip "
                   "(Table 5's annealed epsilon) the runs end at 349.1-369.8: breakout-annealed.pt is its better seed.",
    "breakout-annealed.pt": "--anneal-clip (Table 5's epsilon annealed with the learning rate, the default when it "
                            "ran) at 40M frames, the better of its two seeds over the last 100 games (seed 2: 369.8; "
                            "seed 1: 350.2).",
    "mario.pt": "The run to the flag: run (a) of the settings sweep resumed until --target-flag-rate 0.5, which ended "
                "it at the first evaluation with 10 or more of 20 episodes at the flag (819,200 steps).",
}
# What --play needs of a checkpoint; the rest (optimizer, iteration, schedule, rng, ...) stays behind.
KEPT = ("script", "args", "agent", "global_step")
# Flags of a run that are not part of the command that trains it again.
NOT_TRAINING = {"resume", "play", "episodes"}
# Colours per GIF frame: 64 of GIF's 256 are enough for these scenes, and make Hopper's moving checkerboard half the
# bytes (925 KB -> 486 KB at 240 px).
COLORS = 64
SUPPRESSED = typing.get_args(tyro.conf.Suppress[int])[1]  # the mark of a derived field (not a flag)
GIF_DEFAULTS = {"seconds": 10.0, "fps": 12.0, "width": 240, "seed": None}  # seed None: the run's own
# `gifs`: a file's GIF settings where the defaults do not show the episode to see. Mario's: seed 1's first episode
# dies at x 2,471, seed 6's reaches the flag after 1,237 frames (20.6 s at 60 fps); fewer, smaller frames keep the
# 22 s GIF to 1.1 MB.
GIF_SETTINGS: dict[str, dict] = {"mario.pt": {"seed": 6, "seconds": 22.0, "fps": 8.0, "width": 200}}


def fail(message: str) -> None:
    print(f"ship.py: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def load_script(script: str):
    """The lesson `script` (e.g. "ppo_cartpole.py") as a module, imported from the repository root."""
    if not (ROOT / script).is_file():
        fail(f"{script} is not one of this library's scripts (no {ROOT / script})")
    return launch.import_lesson(script)


def command_line(ppo, args: dict) -> str:
    """The command that trains the run whose Args are `args`: its seed and every flag that differs from the
    script's default (a derived field, or one only --play and --resume read, is left out)."""
    default = ppo.Args()
    types = typing.get_type_hints(ppo.Args, include_extras=True)  # (a lesson's annotations are strings)
    flags = [f"--seed {args['seed']}"]
    for field in dataclasses.fields(default):
        name = field.name
        if (name in NOT_TRAINING or name == "seed" or name not in args or args[name] == getattr(default, name)
                or SUPPRESSED in getattr(types[name], "__metadata__", ())):
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(args[name], bool):
            flags.append(flag if args[name] else "--no-" + flag[2:])
        elif args[name] is not None:
            flags.append(f"{flag} {args[name]}")
    return f"python {ppo.SCRIPT} {' '.join(flags)}"


def policy_of(ckpt: dict, checkpoint: str, source: str = None) -> dict:
    """The policy file of checkpoint `ckpt` (read from the path `checkpoint`)."""
    if not isinstance(ckpt, dict) or not set(KEPT) <= ckpt.keys():
        fail(f"{checkpoint} is not a checkpoint of this library (it needs {', '.join(KEPT)})")
    if ckpt.get("policy") is True:
        fail(f"{checkpoint} is already a policy file")
    if source is None:
        run = Path(checkpoint).resolve().parent.name
        command = command_line(load_script(ckpt["script"]), ckpt["args"])
        resumed = " (resumed on the way)" if ckpt["args"].get("resume") else ""
        source = f"{run}, step {ckpt['global_step']:,}; trained by `{command}`{resumed}; exported by benchmarks/ship.py"
    policy = {name: ckpt[name] for name in KEPT}
    policy.update(policy=True, source=source)
    return policy


def export(checkpoint: str, out: str, source: str = None) -> dict:
    """Write the policy file of `checkpoint` to `out`, atomically. Returns what it wrote."""
    if not os.path.isfile(checkpoint):
        fail(f"no checkpoint at {checkpoint}")
    try:
        ckpt = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated, not a torch file, objects that weights_only refuses
        fail(f"{checkpoint} is not a readable checkpoint ({type(e).__name__})")
    policy = policy_of(ckpt, checkpoint, source)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    torch.save(policy, out + ".tmp")
    os.replace(out + ".tmp", out)
    return policy


def frame_grabber(frames: list, returns: list, seconds: float, gif_fps: float, width: int):
    """A stand-in for gym.wrappers.RecordVideo, for the script to put where it puts its recorder: it keeps every
    k-th rendered frame (k = the env's frame rate / gif_fps, rounded), downscaled to `width` pixels and COLORS colours,
    for the first `seconds` of the episode, in `frames`, and sums the rewards it sees into returns[0]."""

    class FrameGrabber(gym.Wrapper):
        def __init__(self, env, video_folder=None, episode_trigger=None, fps=None, **kwargs):
            super().__init__(env)
            self.rate = fps or env.metadata.get("render_fps", 30)  # frames per step the script records
            self.every = max(1, round(self.rate / gif_fps))
            self.steps, self.limit = 0, math.ceil(seconds * self.rate)
            returns[:] = [0.0, 1000.0 * self.every / self.rate]  # the return so far; ms per GIF frame
            # A MuJoCo task's default camera here stays where it starts (a free camera given a body to track, which
            # only a tracking camera does): Hopper leaves the picture within 2 s. Its model's own "track" camera,
            # where it has one, follows the body.
            renderer = getattr(env.unwrapped, "mujoco_renderer", None)
            if renderer is not None and renderer.camera_id == -1:
                import mujoco

                renderer.camera_id = mujoco.mj_name2id(renderer.model, mujoco.mjtObj.mjOBJ_CAMERA, "track")

        def grab(self) -> None:
            if self.steps % self.every == 0 and self.steps < self.limit:
                image = Image.fromarray(self.env.render())
                if image.width > width:
                    image = image.resize((width, round(image.height * width / image.width)), Image.LANCZOS)
                frames.append(image.quantize(colors=COLORS))

        def reset(self, **kwargs):
            result = self.env.reset(**kwargs)
            self.grab()
            return result

        def step(self, action):
            result = self.env.step(action)
            self.steps += 1
            returns[0] += float(result[1])
            self.grab()
            return result

    return FrameGrabber


def gif(policy_path: str, out: str, seconds: float = GIF_DEFAULTS["seconds"], fps: float = GIF_DEFAULTS["fps"],
        width: int = GIF_DEFAULTS["width"], seed: int = None) -> dict:
    """Play the first --play episode of `policy_path` through its script's main() and write its GIF to `out`
    (atomically); with `seed`, the episode that `--play ... --seed <seed>` plays first (another starting state,
    and for the pixel lessons other sampled actions). Returns {"frames", "return", "bytes", "episode"}."""
    if not os.path.isfile(policy_path):
        fail(f"no policy file at {policy_path}")
    script = torch.load(policy_path, map_location="cpu", weights_only=True).get("script")
    ppo = load_script(script)
    if sys.platform == "linux" and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("MUJOCO_GL", "egl")  # (GLFW, MuJoCo's default, needs a display)
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    frames, returns = [], []
    argv = ["--play", policy_path, "--episodes", "1", "--capture-video"]
    if seed is not None:
        argv += ["--seed", str(seed)]
    printed = io.StringIO()
    with mock.patch.object(gym.wrappers, "RecordVideo", frame_grabber(frames, returns, seconds, fps, width)), \
            contextlib.redirect_stdout(printed):
        code = launch.run_main(ppo, argv)
    if code != 0:  # (the script said why on stderr)
        raise SystemExit(code)
    episode = next((line for line in printed.getvalue().splitlines() if line.startswith("episode 1/1")), "")
    if not frames:
        fail(f"{script} --play {policy_path} drew no frames")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out + ".tmp", "wb") as f:
        frames[0].save(f, format="GIF", save_all=True, append_images=frames[1:], duration=round(returns[1]),
                       loop=0, optimize=True)
    os.replace(out + ".tmp", out)
    return {"frames": len(frames), "return": returns[0], "bytes": os.path.getsize(out), "episode": episode}


def play(name: str, episodes: int = PLAY_EPISODES) -> Path:
    """Play agents/<name>.pt through its script's --play for `episodes` episodes, in a process of its own, and write
    the command and its output to agents/<name>.play.txt (atomically). Returns the log's path."""
    policy = AGENTS / f"{name}.pt"
    if not policy.is_file():
        fail(f"no policy file at {policy}")
    script = torch.load(policy, map_location="cpu", weights_only=True)["script"]
    argv = ["--play", f"agents/{name}.pt", "--episodes", str(episodes)]
    if pixels(script):
        argv.append("--no-cuda")  # (the pixel lessons would take a GPU where there is one: the log is the CPU's)
    result = launch.run(launch.python_command(script, *argv), ROOT)
    if result.returncode != 0:
        fail(f"{script} {' '.join(argv)} exited with status {result.returncode} ({launch.last_line(result.stderr)})")
    log = AGENTS / f"{name}.play.txt"
    log.with_name(log.name + ".tmp").write_text(f"$ python {script} {' '.join(argv)}\n{result.stdout}")
    os.replace(log.with_name(log.name + ".tmp"), log)
    return log


def play_summary(name: str) -> str:
    """What agents/<name>.play.txt says: the mean return +/- its std over the episodes, how many, greedy or
    sampled, and for Mario how many reached the flag."""
    log = play_log(name)
    episodes = len(log["returns"])
    return f"{log['summary']} over {episodes} episodes ({log['how']}; +/- over the episodes){log['flags_text']}"


def readme() -> str:
    """agents/README.md: each policy file's run, step and command (its "source"), why that run, its play log."""
    lines = ["# The shipped agents", "",
             "Policy files of trained runs (`python -m benchmarks.ship export`), each with its GIF and the log of its "
             f"`--play` over {PLAY_EPISODES} episodes (`python -m benchmarks.ship play NAME`: greedy for the MLP "
             "lessons, sampled from pi for the pixel ones, the script's default seed, on the CPU). This page is "
             "written by `python -m benchmarks.ship readme`; README's results table and its \"Watch\" line quote "
             "these logs.", ""]
    for path in sorted(AGENTS.glob("*.pt")):
        policy = torch.load(path, map_location="cpu", weights_only=True)
        name = path.stem
        lines += [f"## `{path.name}`", "",
                  f"- lesson: `{policy['script']}`, {policy['args']['env_id']}, {policy['global_step']:,} steps",
                  f"- run: {policy['source']}",
                  f"- why this run: {ORIGINS[path.name]}",
                  f"- `--play`: {play_summary(name)}; the log: [`{name}.play.txt`]({name}.play.txt)", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("export", help="write the policy file of a run's checkpoint")
    p.add_argument("checkpoint", help="runs/<run>/checkpoint.pt")
    p.add_argument("out", help="the policy file to write, e.g. agents/cartpole.pt")
    p.add_argument("--source", help='the "source" string (default: the run folder, step and command)')
    p = commands.add_parser("play", help=f"write agents/NAME.play.txt: --play over {PLAY_EPISODES} episodes")
    p.add_argument("names", nargs="+", help="agents/NAME.pt, e.g. cartpole")
    p = commands.add_parser("readme", help="write agents/README.md")
    p.add_argument("--check", action="store_true", help="exit 1 where agents/README.md is out of date")
    for name, about in (("gif", "write the GIF of a policy file's first --play episode"),
                        ("gifs", "write the GIF of every agents/*.pt, beside it")):
        p = commands.add_parser(name, help=about)
        if name == "gif":
            p.add_argument("policy", help="a policy file (or a checkpoint)")
            p.add_argument("out", help="the GIF to write")
        settings = "" if name == "gif" else ", or the file's GIF_SETTINGS"
        for flag, kind, about in (("seconds", float, "how much of the episode, in real time"),
                                  ("fps", float, "about this many GIF frames per second"),
                                  ("width", int, "frames wider than this are scaled down to it"),
                                  ("seed", int, "play the first episode of this seed")):
            default = GIF_DEFAULTS[flag] if flag != "seed" else "the run's seed"
            p.add_argument(f"--{flag}", type=kind, help=f"{about} (default: {default}{settings})")
    args = parser.parse_args()
    if args.command == "export":
        policy = export(args.checkpoint, args.out, args.source)
        print(f"{args.out}: {os.path.getsize(args.out):,} bytes, {policy['source']}")
    elif args.command == "play":
        for name in args.names:
            print(f"{play(name)}: {play_summary(name)}")
    elif args.command == "readme":
        text, path = readme() + "\n", AGENTS / "README.md"
        if args.check and (not path.is_file() or path.read_text() != text):
            print("agents/README.md is out of date: run python -m benchmarks.ship readme", file=sys.stderr)
            raise SystemExit(1)
        if not args.check:
            path.write_text(text)
            print(f"{path}: {len(list(AGENTS.glob('*.pt')))} agents")
    else:  # gif, gifs
        jobs = [(args.policy, args.out, {})] if args.command == "gif" else [
            (str(path), str(path.with_suffix(".gif")), GIF_SETTINGS.get(path.name, {}))
            for path in sorted(AGENTS.glob("*.pt"))]
        given = {name: getattr(args, name) for name in GIF_DEFAULTS if getattr(args, name) is not None}
        for policy, out, settings in jobs:
            made = gif(policy, out, **{**GIF_DEFAULTS, **settings, **given})
            print(f"{out}: {made['bytes']:,} bytes, {made['frames']} frames; "
                  f"{made['episode'] or 'return ' + str(made['return'])}")


if __name__ == "__main__":
    main()
