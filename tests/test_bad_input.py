"""Bad input, tried systematically: every flag of every script is fed the values users get wrong for its type,
and each must end in one clear line on stderr and exit code 2, never a traceback.

The flags come from `dataclasses.fields(Args)`, so a flag added to a script without an entry here fails
test_every_flag_has_its_bad_values: it must be given its bad values in BAD_VALUES, or be listed in NOTHING_WRONG
with the reason no value of it is wrong. Fields hidden from the command line (tyro.conf.Suppress: derived at
runtime) must be refused as flags.

Two kinds of refusal, told apart by whether the value has the flag's type:
- a value of the flag's type that the script must refuse (nan, inf, 0, a negative count, a gamma of 1.5, an
  empty --env-id, a zero-byte checkpoint, ...): the script's own check. Required: exit code 2, exactly one line
  on stderr, `<script>: error: ...`, naming the flag (a checkpoint: its path) and the value; no traceback, no
  run folder left behind.
- a value tyro cannot parse as the flag's type ('nan' or '1e6' for an integer, '' for a number, a choice that
  is not one, a flag that does not exist): tyro's own error, a box of several lines with the flag's help text.
  Required: exit code 2, the flag named on stderr, no traceback.

The cases run in this process, each through the script's main() (a subprocess would cost 3 s of `import torch`
per case). A case that wrongly gets past validation cannot start a training: building the agent (what train() and
play() do right after the env is made, which still checks --env-id) raises ValidationPassed instead, and the case
fails saying so. The base command line of each script, which every case changes in one flag, is checked to get
there (test_the_base_command_line_passes_validation), so a refusal is the bad value's doing.
"""

import dataclasses
import errno
import importlib
import os
import shutil
import types
import typing
from pathlib import Path

import pytest
import torch
import tyro

from course import lessons
from conftest import SCHEDULE, run_main

MODULES = [importlib.import_module(name) for name in lessons.MODULES]
TINY_VECTOR = {"--num-envs": "2", "--num-steps": "16", "--minibatch-size": "16", "--total-timesteps": "64"}
# Valid command lines on cheap envs (conftest's counting envs for the MLP scripts); each case changes one flag.
BASE = {
    "ppo_cartpole": {"--env-id": "CountingTest-v0", "--total-timesteps": "64", "--num-steps": "32",
                     "--minibatch-size": "16"},
    "ppo_lunarlander_vec": {"--env-id": "CountingTest-v0", **TINY_VECTOR},
    "ppo_pendulum_continuous": {"--env-id": "CountingContinuousTest-v0", **TINY_VECTOR},
    "ppo_breakout_atari": {**TINY_VECTOR, "--vectorization-mode": "sync", "--no-cuda": None},
    "ppo_mario_cnn": {**TINY_VECTOR, "--vectorization-mode": "sync", "--no-cuda": None},
    "ppo_lstm_memory": {"--env-id": "CountingTest-v0", **TINY_VECTOR},
    "ppo_action_masking": {"--total-timesteps": "64", "--num-steps": "32", "--minibatch-size": "16"},
    "ppo_rlhf_tiny": {"--num-envs": "8", "--minibatch-size": "4", "--total-timesteps": "96"},
    "grpo_rlhf_tiny": {"--num-envs": "8", "--minibatch-size": "4", "--total-timesteps": "96"},
}
# A real env the script cannot train on.
ENV_OF_ANOTHER_KIND = {
    "ppo_cartpole": ["Pendulum-v1"],  # continuous actions
    "ppo_lunarlander_vec": ["Pendulum-v1"],
    "ppo_pendulum_continuous": ["CartPole-v1"],  # discrete actions
    "ppo_breakout_atari": ["CartPole-v1", "ALE/Breakout-v5"],  # not Atari; an Atari id that skips frames itself
    "ppo_mario_cnn": ["CartPole-v1", "SuperMarioBros-1-1-v0"],  # the level is --world and --stage here
    "ppo_lstm_memory": ["Pendulum-v1"],
    "ppo_action_masking": ["CartPole-v1"],  # no action mask in its info
    "ppo_rlhf_tiny": ["CartPole-v1"],  # a Gymnasium env: the language lessons' task is their grammar
    "grpo_rlhf_tiny": ["CartPole-v1"],
}

POSITIVE_INT = ["0", "-1"]
NON_NEGATIVE_INT = ["-1"]  # 0 means never (--checkpoint-every 0: only at the end; --eval-every 0: no evaluation)
POSITIVE_FLOAT = ["nan", "inf", "-inf", "0", "-0.5"]
NON_NEGATIVE_FLOAT = ["nan", "inf", "-inf", "-0.5"]  # 0 switches the term off
UNIT_FLOAT = ["nan", "inf", "-inf", "-0.1", "1.5"]  # in [0, 1]
NOT_A_CHOICE = ["fast", ""]
# What a user gives --resume or --play by mistake; the files are made in checkpoint_files().
CHECKPOINTS = ["", "missing", "empty", "folder", "unreadable", "another script's", "truncated", "one byte short",
               "not a torch file"]
BAD_VALUES = {
    "env_id": ["", "NoSuchEnv-v0", "<another kind>"],
    "world": ["0", "-1", "9"],  # SuperMarioBros-v0 has worlds 1-8
    "stage": ["0", "-1", "5"],  # and stages 1-4
    "action_type": NOT_A_CHOICE,
    "total_timesteps": POSITIVE_INT,
    "num_envs": POSITIVE_INT,
    "vectorization_mode": NOT_A_CHOICE,
    "learning_rate": POSITIVE_FLOAT,
    "vf_learning_rate": POSITIVE_FLOAT,
    "num_steps": POSITIVE_INT,
    "gamma": UNIT_FLOAT,
    "gae_lambda": UNIT_FLOAT,
    "minibatch_size": POSITIVE_INT,
    "update_epochs": POSITIVE_INT,
    "train_pi_iters": POSITIVE_INT,
    "train_v_iters": POSITIVE_INT,
    "norm_clip": POSITIVE_FLOAT,
    "objective": NOT_A_CHOICE,
    "clip_coef": POSITIVE_FLOAT,
    "kl_target": POSITIVE_FLOAT,
    "kl_beta_init": POSITIVE_FLOAT,
    "vf_clip_coef": POSITIVE_FLOAT,
    "ent_coef": NON_NEGATIVE_FLOAT,
    "vf_coef": NON_NEGATIVE_FLOAT,
    "max_grad_norm": POSITIVE_FLOAT,  # 0 would scale every gradient to 0: no step at all
    "target_kl": POSITIVE_FLOAT,  # (not given: no early stop)
    "hidden_size": POSITIVE_INT,
    "frame_stack": POSITIVE_INT,
    "invalid_action": NOT_A_CHOICE,
    "exp_name": ["", "a/b"],  # it names one run folder: runs/<env-id>__<exp-name>__<seed>__<time>/
    "seed": ["-1", str(2**32)],  # NumPy takes seeds in [0, 2**32 - 1]
    "precision": NOT_A_CHOICE,
    "checkpoint_every": NON_NEGATIVE_INT,
    "resume": CHECKPOINTS,
    "play": CHECKPOINTS,
    "episodes": POSITIVE_INT,
    "eval_every": NON_NEGATIVE_INT,
    "eval_episodes": POSITIVE_INT,
    "target_flag_rate": [*POSITIVE_FLOAT, "1.5"],  # a share of the evaluation episodes, in (0, 1]
    # the language lessons' (the base has --num-envs 8, the default --d-model 64 and --n-heads 4)
    "pretrain_steps": POSITIVE_INT,
    "reward_pairs": [*POSITIVE_INT, "15"],  # an eighth held out: at least 16
    "reward_epochs": POSITIVE_INT,
    "temperature": POSITIVE_FLOAT,
    "group_size": ["0", "1", "3"],  # a group of one has no baseline; 3 does not divide 8 responses
    "kl_coef": NON_NEGATIVE_FLOAT,
    "kl_horizon": POSITIVE_INT,
    "no_end_penalty": ["nan", "inf", "-inf"],  # any finite score, positive or negative, is a choice
    "d_model": [*POSITIVE_INT, "30"],  # 30 is no multiple of 4 heads
    "n_layers": POSITIVE_INT,
    "n_heads": [*POSITIVE_INT, "3"],
}
SWITCH = "a switch (--flag / --no-flag) takes no value: there is none to get wrong"
NOTHING_WRONG = {name: SWITCH for name in ("anneal_lr", "norm_adv", "clip_vloss", "anneal_clip", "norm_obs",
                                           "norm_reward", "kl_adaptive", "adaptive_kl", "torch_deterministic", "cuda",
                                           "capture_video", "lstm", "mask_actions")}
# Values tyro cannot parse as the type, tried on every flag of that type besides BAD_VALUES.
UNPARSABLE = {int: ["nan", "1e6"], float: [""]}
SUPPRESSED = typing.get_args(tyro.conf.Suppress[int])[1]


class ValidationPassed(SystemExit):
    """Raised in place of building the agent: the command line got past every check (run_main's outcome is then
    "validation passed", its exit code)."""

    def __init__(self):
        super().__init__("validation passed")


def refuse_to_build(*args, **kwargs):
    raise ValidationPassed


def field_type(cls: type, field: dataclasses.Field):
    """The field's type, resolved (a lesson's annotations are strings: it imports `annotations` from __future__)."""
    return typing.get_type_hints(cls, include_extras=True)[field.name]


def is_flag(field: dataclasses.Field, cls: type) -> bool:
    return SUPPRESSED not in getattr(field_type(cls, field), "__metadata__", ())


def parses(value: str, annotation) -> bool:
    """Whether tyro reads `value` as `annotation` (int, float, str, a Literal, Optional of one)."""
    options = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Literal:
        return value in typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(parses(value, option) for option in options)
    try:
        annotation(value)
        return True
    except ValueError:
        return False


def cases(ppo) -> list[tuple[str, str, bool]]:
    """(flag, value, whether the script's own check must refuse it rather than tyro) for every flag of `ppo`."""
    out = []
    for field in dataclasses.fields(ppo.Args):
        flag = "--" + field.name.replace("_", "-")
        if not is_flag(field, ppo.Args):
            out.append((flag, "1", False))
            continue
        values = list(BAD_VALUES.get(field.name, []))
        if "<another kind>" in values:
            i = values.index("<another kind>")
            values[i:i + 1] = ENV_OF_ANOTHER_KIND[ppo.__name__]
        annotation = field_type(ppo.Args, field)
        base_type = next(a for a in (typing.get_args(annotation) or (annotation,)) if a is not type(None))
        values += [v for v in UNPARSABLE.get(base_type, []) if v not in values]
        out += [(flag, value, parses(value, annotation)) for value in values]
    return out


def checkpoint(ppo, script: str = None) -> dict:
    """A checkpoint of `ppo` (tiny weights) that its base command line can --resume or --play, claiming to be
    `script`'s if given."""
    optimizer_key = "optimizers" if ppo.__name__ == "ppo_mario_cnn" else "optimizer"
    ckpt = {"script": script or ppo.SCRIPT, "args": dataclasses.asdict(tyro.cli(ppo.Args, args=command_line(ppo, {}))),
            "agent": {"weight": torch.zeros(2000)}, optimizer_key: {}, "global_step": 0, "iteration": 0,
            "schedule": SCHEDULE, "rng": {}}
    if ppo.__name__ == "ppo_pendulum_continuous":  # its reward statistics and KL penalty's beta too
        ckpt.update(reward_scaler={}, kl_beta=1.0)
    if ppo.__name__.endswith("_rlhf_tiny"):  # pi_ref, the reward model and beta too
        ckpt.update(reference={}, reward_model={}, reward_accuracy=1.0, kl_coef=0.1)
    return ckpt


def checkpoint_files(ppo, folder: Path) -> dict[str, str]:
    """The files behind CHECKPOINTS, in `folder`. The unreadable and the cut ones are sound checkpoints but for
    that: test_the_base_command_line_passes_validation plays and resumes the same checkpoint whole."""
    files = {"": "", "missing": str(folder / "missing.pt")}
    (folder / "empty.pt").touch()
    files["empty"] = str(folder / "empty.pt")
    (folder / "a-run").mkdir()
    files["folder"] = str(folder / "a-run")
    torch.save(checkpoint(ppo), folder / "unreadable.pt")
    files["unreadable"] = str(folder / "unreadable.pt")
    other = MODULES[(MODULES.index(ppo) + 1) % len(MODULES)]
    torch.save(checkpoint(other), folder / "other.pt")
    files["another script's"] = str(folder / "other.pt")
    data = (folder / "unreadable.pt").read_bytes()
    (folder / "truncated.pt").write_bytes(data[: len(data) // 2])
    files["truncated"] = str(folder / "truncated.pt")
    (folder / "short.pt").write_bytes(data[:-1])
    files["one byte short"] = str(folder / "short.pt")
    (folder / "notes.txt").write_text("hyperparameters: lr 3e-4\n")
    files["not a torch file"] = str(folder / "notes.txt")
    return files


def command_line(ppo, changes: dict) -> list[str]:
    argv = []
    for flag, value in {**BASE[ppo.__name__], **changes}.items():
        argv += [flag] if value is None else [flag, value]
    return argv


def forms(value: str) -> set[str]:
    """How a message may quote `value`: as given, as the number it parses to, or repr'd ('')."""
    out = {value, repr(value)}
    for kind in (int, float):
        try:
            out.add(str(kind(value)))
        except ValueError:
            pass
    return out - {""}


def problem(ppo, flag: str, value: str, ours: bool, shown: str, outcome, out: str, err: str, cwd: Path):
    """What is wrong with how `ppo` refused `flag value`, or None."""
    if outcome == "validation passed":
        return "got past validation (the agent was about to be built)"
    if isinstance(outcome, str):
        return f"raised instead of refusing:\n{outcome}"
    if "Traceback" in out + err:
        return f"printed a traceback:\n{out}{err}"
    if outcome != 2:
        return f"exit code {outcome}, not 2; stderr: {err!r}"
    if not ours:
        return None if flag in err else f"tyro's error does not name {flag}:\n{err}"
    lines = err.strip().splitlines()
    if len(lines) != 1 or not lines[0].startswith(f"{ppo.SCRIPT}: error: "):
        return f"not one line `{ppo.SCRIPT}: error: ...` on stderr:\n{err}"
    names = [shown] if flag in ("--resume", "--play") and value else [flag]
    if not all(name in lines[0] for name in names) or not any(form in lines[0] for form in forms(shown)):
        return f"the message does not name {' and '.join(names)} and {shown!r}: {lines[0]}"
    if (cwd / "runs").exists():
        return "a refused run left a run folder behind"
    return None


@pytest.mark.parametrize("ppo", MODULES, ids=lambda m: m.__name__)
def test_every_flag_has_its_bad_values(ppo):
    unlisted = [f.name for f in dataclasses.fields(ppo.Args)
                if is_flag(f, ppo.Args) and f.name not in BAD_VALUES and f.name not in NOTHING_WRONG]
    assert not unlisted, (f"{ppo.SCRIPT}: give these flags their bad values in BAD_VALUES, or list them in "
                          f"NOTHING_WRONG with the reason no value of them is wrong: {unlisted}")


@pytest.mark.parametrize("ppo", MODULES, ids=lambda m: m.__name__)
def test_the_base_command_line_passes_validation(ppo, scratch, capsys, monkeypatch):
    """The base command line alone, and with a sound checkpoint to --resume or --play, gets as far as building
    the agent: what a case refuses, its one changed flag made wrong."""
    monkeypatch.setattr(ppo, "Agent", refuse_to_build)
    torch.save(checkpoint(ppo), scratch / "sound.pt")
    for changes in ({}, {"--resume": str(scratch / "sound.pt")}, {"--play": str(scratch / "sound.pt")}):
        outcome, out, err = run_main(ppo, command_line(ppo, changes), capsys)
        assert outcome == "validation passed", (changes, outcome, out, err)


@pytest.mark.parametrize("ppo", MODULES, ids=lambda m: m.__name__)
def test_bad_values_end_in_one_line_and_exit_code_2(ppo, scratch, capsys, monkeypatch):
    monkeypatch.setattr(ppo, "Agent", refuse_to_build)
    (scratch / "files").mkdir()
    files = checkpoint_files(ppo, scratch / "files")
    if os.geteuid() == 0:  # root reads a file whatever its mode: the refusal to read it is simulated
        load = torch.load

        def unreadable_load(f, *args, **kwargs):
            if str(f) == files["unreadable"]:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(f))
            return load(f, *args, **kwargs)

        monkeypatch.setattr(torch, "load", unreadable_load)
    else:
        os.chmod(files["unreadable"], 0)
    failures, count = [], 0
    try:
        for flag, value, ours in cases(ppo):
            shown = files[value] if flag in ("--resume", "--play") else value
            outcome, out, err = run_main(ppo, command_line(ppo, {flag: shown}), capsys)
            count += 1
            found = problem(ppo, flag, value, ours, shown, outcome, out, err, scratch)
            if found:
                failures.append(f"{flag} {shown!r}: {found}")
            shutil.rmtree(scratch / "runs", ignore_errors=True)
    finally:
        os.chmod(files["unreadable"], 0o644)
    assert not failures, f"{len(failures)} of {count} bad values of {ppo.SCRIPT} not refused cleanly:\n" + \
        "\n".join(failures)
