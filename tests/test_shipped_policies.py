"""The trained policies shipped in agents/ (benchmarks/ship.py): each plays through its script's own --play; a
policy file, of any script, can be played but not resumed; and `ship.py export` keeps a checkpoint's weights bit
for bit and nothing that only --resume needs.

The plays run in this process, through each script's main() (a subprocess would add seconds of `import torch`
per file): an MLP lesson's first episode whole, greedy and seeded, so its return is the same every time; a Breakout
game is cut at MAX_FRAMES emulator frames (its time limit, through gym.make) to keep it to seconds; a Mario episode
(one life, sampled with the script's seed) is played whole: it ends at a death or at the flag.
"""

import dataclasses
import functools
import importlib
import os
import re
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import torch
import tyro

from benchmarks import ship
from course.lessons import GYM_MODULES as MODULES  # (a policy file is a Gymnasium agent's: the language lessons' --play needs pi_ref and R too)
from conftest import ROOT, SCHEDULE, run_main

SHIPPED = sorted((ROOT / "agents").glob("*.pt"))
# The least the first --play episode of each shipped file must score, far above a random policy's (CartPole
# about 22, LunarLander about -180, Pendulum about -1,200, Hopper 16.7: benchmarks/README.md; Breakout 0-3 in
# the 1,000 frames a pixel game is cut to here, mean 1.2 over 10 seeds) and below what the file scores (the report
# of the session that shipped them, and `python <script> --play agents/<file>`; Breakout: 8, and 7 and 8 with
# --seed 2 and 3, in 1,000 frames). Mario's return is about the distance run (x position): its long run's first 100k steps
# averaged x 792 (benchmarks/README.md), and mario.pt scores 2,370 (x 2,471, 904 frames) with the default seed;
# over --seed 1 to 6 it dies no earlier than x 1,789 or reaches the flag.
FLOORS = {"cartpole.pt": 475.0, "lunarlander.pt": 200.0, "pendulum.pt": -400.0, "hopper.pt": 1000.0,
          "breakout.pt": 5.0, "mario.pt": 1000.0}
MAX_FRAMES = 1_000  # a Breakout game, cut here (250 agent steps of 4 frames)
# Command lines each script accepts on cheap envs (conftest's counting envs for the MLP scripts).
TINY_VECTOR = ["--num-envs", "2", "--num-steps", "16", "--minibatch-size", "16", "--total-timesteps", "64"]
TINY = {
    "ppo_cartpole": ["--env-id", "CountingTest-v0", "--total-timesteps", "64", "--num-steps", "32",
                     "--minibatch-size", "16"],
    "ppo_lunarlander_vec": ["--env-id", "CountingTest-v0", *TINY_VECTOR],
    "ppo_pendulum_continuous": ["--env-id", "CountingContinuousTest-v0", *TINY_VECTOR],
    "ppo_breakout_atari": [*TINY_VECTOR, "--vectorization-mode", "sync", "--no-cuda"],
    "ppo_mario_cnn": [*TINY_VECTOR, "--vectorization-mode", "sync", "--no-cuda"],
    "ppo_lstm_memory": ["--env-id", "CountingTest-v0", *TINY_VECTOR],
    "ppo_action_masking": ["--total-timesteps", "64", "--num-steps", "32", "--minibatch-size", "16"],
}


def test_every_lesson_ships_a_policy():
    assert set(FLOORS) <= {path.name for path in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.name)
def test_a_shipped_policy_plays_its_first_episode(path, capsys, monkeypatch, scratch):
    policy = torch.load(path, map_location="cpu", weights_only=True)
    assert policy["policy"] is True and {"script", "args", "agent", "global_step", "source"} <= policy.keys()
    assert not {"optimizer", "optimizers", "rng", "schedule", "iteration"} & policy.keys()
    ppo = importlib.import_module(policy["script"][: -len(".py")])
    if policy["script"] == "ppo_breakout_atari.py":  # (Mario's env is not made with gym.make)
        monkeypatch.setattr(gym, "make", functools.partial(gym.make, max_episode_steps=MAX_FRAMES))
    outcome, out, err = run_main(ppo, ["--play", str(path), "--episodes", "1"], capsys)
    assert outcome == "returned", err
    episode = re.search(r"^episode 1/1: return (-?[\d.]+), length (\d+)", out, re.MULTILINE)
    assert episode, out
    assert int(episode[2]) > 0
    if path.name in FLOORS:
        assert float(episode[1]) >= FLOORS[path.name], out


def tiny_checkpoint(ppo) -> dict:
    """A checkpoint as the script writes one (tiny stand-in weights), for its TINY command line."""
    optimizer_key = "optimizers" if ppo.__name__ == "ppo_mario_cnn" else "optimizer"
    args = dataclasses.asdict(tyro.cli(ppo.Args, args=TINY[ppo.__name__]))
    ckpt = {"script": ppo.SCRIPT, "args": args, "agent": {"weight": torch.arange(2000.0)}, optimizer_key: {"s": 1},
            "global_step": 64, "iteration": 1, "schedule": SCHEDULE, "rng": {}}
    if ppo.__name__ == "ppo_pendulum_continuous":  # its reward statistics and the KL penalty's beta too
        ckpt.update(reward_scaler={}, kl_beta=1.0)
    return ckpt


@pytest.mark.parametrize("script", MODULES)
def test_a_policy_file_plays_but_does_not_resume(script, tmp_path, capsys, monkeypatch, scratch):
    ppo = importlib.import_module(script)
    torch.save(tiny_checkpoint(ppo), tmp_path / "checkpoint.pt")
    policy = str(tmp_path / "policy.pt")
    ship.export(str(tmp_path / "checkpoint.pt"), policy)

    outcome, out, err = run_main(ppo, ["--resume", policy, *TINY[script]], capsys)
    assert outcome == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"{ppo.SCRIPT}: error: {policy} is a policy file") and "can only be played" in err
    assert not (tmp_path / "runs").exists()
    # --play reads it (the stand-in weights then do not fit the network: a real file plays, test above)
    outcome, out, err = run_main(ppo, ["--play", policy], capsys)
    assert outcome == 2 and len(err.splitlines()) == 1, err
    assert "does not fit this one" in err
    # ...where a checkpoint cut down by hand, without "policy": True, is still refused as incomplete
    torch.save({**torch.load(policy, weights_only=True), "policy": False}, tmp_path / "cut.pt")
    outcome, out, err = run_main(ppo, ["--play", str(tmp_path / "cut.pt")], capsys)
    assert outcome == 2 and "is an incomplete checkpoint" in err


def test_export_keeps_the_weights_and_nothing_for_resume(tmp_path, capsys):
    """A real (tiny) CartPole run's checkpoint, exported through ship.py's command line."""
    import ppo_cartpole

    args = ppo_cartpole.Args(env_id="CountingTest-v0", hidden_size=8)
    agent = ppo_cartpole.Agent(ppo_cartpole.make_env(args), args.hidden_size)
    optimizer = torch.optim.Adam(agent.parameters())
    checkpoint = tmp_path / "run" / "checkpoint.pt"
    checkpoint.parent.mkdir()
    ppo_cartpole.save_checkpoint(str(checkpoint), args, agent, optimizer, 512, 2, SCHEDULE)
    out = tmp_path / "agents" / "cartpole.pt"
    sys_argv = sys.argv
    try:
        sys.argv = ["ship.py", "export", str(checkpoint), str(out)]
        ship.main()
    finally:
        sys.argv = sys_argv
    assert str(out) in capsys.readouterr().out
    assert [p.name for p in out.parent.iterdir()] == ["cartpole.pt"]  # no temporary file left
    ckpt = torch.load(checkpoint, weights_only=True)
    policy = torch.load(out, weights_only=True)
    assert set(policy) == {"script", "args", "agent", "policy", "global_step", "source"}
    assert policy["policy"] is True and policy["global_step"] == 512 and policy["args"] == ckpt["args"]
    assert policy["agent"].keys() == ckpt["agent"].keys()
    for name, tensor in ckpt["agent"].items():
        assert policy["agent"][name].dtype == tensor.dtype and torch.equal(policy["agent"][name], tensor), name
    assert "run, step 512" in policy["source"] and "python ppo_cartpole.py --seed 1 --env-id CountingTest-v0" \
        " --hidden-size 8" in policy["source"]
    assert out.stat().st_size < checkpoint.stat().st_size


def test_gif_draws_the_first_episode_of_the_seed_asked_for(tmp_path, monkeypatch, scratch):
    """`ship.py gif` (CartPole's shipped file: greedy, so an episode is its seed's): the frames it keeps, the
    same GIF for the same seed, another for --seed 7 (another starting state)."""
    from PIL import Image, ImageSequence

    for name, value in (("MUJOCO_GL", "egl"), ("SDL_VIDEODRIVER", "dummy")):  # (gif sets them where unset)
        monkeypatch.setenv(name, os.environ.get(name, value))
    policy = str(ROOT / "agents" / "cartpole.pt")
    made = {}
    for label, seed in (("own", None), ("again", None), ("seed7", 7)):
        out = tmp_path / f"{label}.gif"
        made[label] = ship.gif(policy, str(out), seconds=0.5, seed=seed)
        assert out.exists() and not (tmp_path / f"{label}.gif.tmp").exists()
    # CartPole renders 50 frames a second; 12 a second keeps every 4th: the reset's and steps 4, 8, ..., 24, each
    # shown 80 ms (a frame equal to the one before is merged into it, their durations added)
    assert made["own"]["frames"] == 7
    durations = [frame.info["duration"] for frame in ImageSequence.Iterator(Image.open(tmp_path / "own.gif"))]
    assert sum(durations) == 7 * 80 and set(durations) <= {80, 160, 240, 320, 400, 480, 560}
    assert made["own"]["episode"].startswith("episode 1/1: return 500.0")
    own, again, seed7 = ((tmp_path / f"{label}.gif").read_bytes() for label in ("own", "again", "seed7"))
    assert own == again and own != seed7


def test_gifs_draws_each_file_with_its_settings_and_the_flags_replace_them(tmp_path, monkeypatch):
    """`ship.py gifs`: every agents/*.pt to the GIF beside it, with the defaults but where GIF_SETTINGS gives a
    file its own (Mario's: the seed whose episode reaches the flag, and the seconds it takes); a flag given on the
    command line replaces both."""
    for name in ("cartpole.pt", "mario.pt"):
        (tmp_path / name).write_bytes(b"")
    calls = {}

    def gif(policy, out, **settings):  # (records what it was asked to draw)
        calls[(Path(policy).name, Path(out).name)] = settings
        return {"bytes": 1, "frames": 1, "episode": "episode 1/1", "return": 0.0}

    monkeypatch.setattr(ship, "AGENTS", tmp_path)
    monkeypatch.setattr(ship, "gif", gif)
    monkeypatch.setattr(sys, "argv", ["ship.py", "gifs"])
    ship.main()
    assert calls == {("cartpole.pt", "cartpole.gif"): ship.GIF_DEFAULTS,
                     ("mario.pt", "mario.gif"): {**ship.GIF_DEFAULTS, **ship.GIF_SETTINGS["mario.pt"]}}
    assert calls[("mario.pt", "mario.gif")]["seed"] == 6 and ship.GIF_DEFAULTS["seed"] is None
    calls.clear()
    monkeypatch.setattr(sys, "argv", ["ship.py", "gifs", "--fps", "5", "--seed", "2"])
    ship.main()
    assert calls[("cartpole.pt", "cartpole.gif")] == {**ship.GIF_DEFAULTS, "fps": 5.0, "seed": 2}
    assert calls[("mario.pt", "mario.gif")] == {**ship.GIF_DEFAULTS, **ship.GIF_SETTINGS["mario.pt"], "fps": 5.0,
                                                 "seed": 2}
