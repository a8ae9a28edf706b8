"""benchmarks/core/grid.py: a cell's state read off its run folders' checkpoints and their own args, the command
that takes it on, and the dry run; the grid run end to end (runs, skips, resumes, Ctrl-C) is tests/test_mujoco.py's,
on Table 1's study."""

import shlex

import torch

from benchmarks.core import grid, launch

CELL = grid.Cell("ppo_cartpole.py", "CartPole-v1", "fast", 3)


def study(tmp_path, total=1000):
    return grid.Study("study", {"fast": ["--learning-rate", "1e-3"]}, ["--num-steps", "100"], total, tmp_path)


def checkpoint(tmp_path, name, step, **args):
    folder = tmp_path / "runs" / name
    folder.mkdir(parents=True)
    torch.save({"global_step": step, "args": args}, folder / "checkpoint.pt")
    return folder


def test_a_cells_state_comes_from_its_checkpoint_and_its_args(tmp_path):
    s = study(tmp_path, total=1000)
    assert s.state(CELL) == ("new", None)
    # 2 envs x 200 steps: the last whole update of 1,000 steps ends at 800
    partial = checkpoint(tmp_path, "CartPole-v1__study-fast__3__100", 400, num_envs=2, num_steps=200)
    assert s.state(CELL) == ("partial", partial)
    done = checkpoint(tmp_path, "CartPole-v1__study-fast__3__200", 800, num_envs=2, num_steps=200)
    assert s.state(CELL) == ("done", done)  # of two folders, the one furthest along
    # one env (a lesson without --num-envs) of 300 steps: 900 is the last whole update
    one_env = grid.Cell("ppo_cartpole.py", "CartPole-v1", "fast", 4)
    checkpoint(tmp_path, "CartPole-v1__study-fast__4__100", 600, num_steps=300)
    assert s.state(one_env)[0] == "partial"
    assert study(tmp_path, total=600).state(one_env)[0] == "done"
    # another seed, setting or task is another cell; an unreadable checkpoint counts as none
    (tmp_path / "runs" / "CartPole-v1__study-fast__5__1").mkdir()
    (tmp_path / "runs" / "CartPole-v1__study-fast__5__1" / "checkpoint.pt").write_bytes(b"half a file")
    assert s.state(grid.Cell("ppo_cartpole.py", "CartPole-v1", "fast", 5)) == ("new", None)
    assert s.state(grid.Cell("ppo_cartpole.py", "CartPole-v1", "slow", 3)) == ("new", None)


def test_the_command_that_takes_a_cell_on(tmp_path):
    s = study(tmp_path)
    state, command = s.next_command(CELL, recorded=set())
    assert state == "new" and command == launch.lesson_command("ppo_cartpole.py", [
        "--env-id", "CartPole-v1", "--seed", "3", "--exp-name", "study-fast", "--total-timesteps", "1000",
        "--num-steps", "100", "--learning-rate", "1e-3"])
    assert s.next_command(CELL, recorded={CELL}) == ("done", [])  # recorded, its folder gone: not run again
    folder = checkpoint(tmp_path, "CartPole-v1__study-fast__3__100", 400, num_envs=1, num_steps=100)
    assert s.next_command(CELL, recorded={CELL}) == ("partial", launch.lesson_command(
        "ppo_cartpole.py", ["--resume", str(folder / "checkpoint.pt"), "--total-timesteps", "1000"]))


def test_dry_run_prints_each_cell_and_runs_nothing(tmp_path, capsys):
    cells = grid.cells("ppo_cartpole.py", ["CartPole-v1"], ["fast"], [1, 2])
    assert cells == [grid.Cell("ppo_cartpole.py", "CartPole-v1", "fast", 1),
                     grid.Cell("ppo_cartpole.py", "CartPole-v1", "fast", 2)]
    grid.run(study(tmp_path), cells, jobs=2, recorded={cells[1]}, dry_run=True)
    lines = capsys.readouterr().out.splitlines()
    # one shell line per cell to run (for GNU parallel or a Slurm array), a comment for a cell that is done
    assert lines[1] == "# done CartPole-v1 fast seed 2" and len(lines) == 2
    command, comment = lines[0].split("  # ")
    assert comment == "new CartPole-v1 fast seed 1"
    assert shlex.split(command)[0] == "python" and shlex.split(command)[1].endswith("ppo_cartpole.py")
    assert shlex.split(command)[2:] == study(tmp_path).command(cells[0])[2:]
    assert not (tmp_path / "runs").exists()


def test_a_patched_setting_runs_through_the_patch_runner_fresh_and_resumed(tmp_path):
    s = grid.Study("study", {"fast": [], "plain": []}, ["--num-steps", "100"], 1000, tmp_path,
                   patches={"fast": ["no-grad-clip", "default-init"]})
    fresh = s.command(CELL)
    assert fresh[1:7] == ["-m", "benchmarks.patches", "--patch", "no-grad-clip", "--patch", "default-init"]
    assert fresh[7:10] == ["ppo_cartpole.py", "--env-id", "CartPole-v1"]
    assert s.command(grid.Cell("ppo_cartpole.py", "CartPole-v1", "plain", 3))[1].endswith("ppo_cartpole.py")
    checkpoint(tmp_path, "CartPole-v1__study-fast__3__100", 400, num_envs=1, num_steps=100)
    state, resumed = s.next_command(CELL, recorded=set())
    assert state == "partial" and resumed[1:7] == fresh[1:7] and "--resume" in resumed
