"""Checkpoints are written atomically, in every script: a writer that dies mid-write (a full disk, a kill) leaves
the previous checkpoint whole and readable, never a half-written file under the checkpoint's name."""

import importlib
import io

import pytest
import torch

from course.lessons import LESSONS, MODULES

PIXELS = {lesson.module for lesson in LESSONS if lesson.pixels}


def save(ppo, path, global_step):
    """Save a small checkpoint at `global_step` through the script's own save_checkpoint."""
    if ppo.__name__ in PIXELS:  # save_checkpoint(path, state): a dict they made
        ppo.save_checkpoint(str(path), {"script": ppo.SCRIPT, "global_step": global_step,
                                        "weights": torch.arange(100_000.0)})
        return
    if ppo.__name__.endswith("_rlhf_tiny"):  # the language lessons: a transformer, pi_ref and R saved beside it
        args = ppo.Args(d_model=8, n_heads=2)
        agent = ppo.Agent(args, 15)
        ppo.save_checkpoint(str(path), args, agent, torch.optim.Adam(agent.parameters()), global_step, 1,
                            {"scale": 1.0, "num_iterations": 4}, reference=agent.state_dict(), reward_model={},
                            reward_accuracy=1.0, kl_coef=0.1)
        return
    continuous = ppo.__name__ == "ppo_pendulum_continuous"
    env_id = "CountingContinuousTest-v0" if continuous else "CountingTest-v0"
    if ppo.__name__ == "ppo_action_masking":  # (its env must report an action mask: its own tic-tac-toe)
        env_id = "TicTacToe-v0"
    args = ppo.Args(env_id=env_id, hidden_size=8)
    agent = ppo.Agent(ppo.make_env(args), args.hidden_size)
    optimizer = torch.optim.Adam(agent.parameters())
    schedule = {"scale": 1.0, "num_iterations": 4}
    extra = (ppo.RewardScaler(args.num_envs, args.gamma), 1.0) if continuous else ()
    ppo.save_checkpoint(str(path), args, agent, optimizer, global_step, 1, schedule, *extra)


@pytest.mark.parametrize("script", MODULES)
def test_a_write_that_dies_midway_leaves_the_last_checkpoint_whole(script, tmp_path, monkeypatch):
    ppo = importlib.import_module(script)
    path = tmp_path / "checkpoint.pt"
    save(ppo, path, global_step=100)
    assert torch.load(path, weights_only=True)["global_step"] == 100
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]  # no temporary file left behind

    real_save = torch.save

    def dies_midway(obj, f, *args, **kwargs):
        """torch.save that has written half the file when the disk fills up."""
        buffer = io.BytesIO()
        real_save(obj, buffer, *args, **kwargs)
        with open(f, "wb") as out:
            out.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", dies_midway)
    with pytest.raises(OSError, match="No space left"):
        save(ppo, path, global_step=200)
    monkeypatch.undo()
    # The checkpoint is still the last complete one, readable through the script's own loader.
    assert torch.load(path, weights_only=True)["global_step"] == 100
    if script not in PIXELS:  # (their test state is not a full checkpoint)
        assert ppo.load_checkpoint(str(path))["global_step"] == 100
