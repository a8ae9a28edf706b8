"""Two CPU ranks under torchrun with faults injected (tests/torchrun_faults_driver.py), and two one-rank nodes on
localhost: what a run across machines must not lose or stall on. Rank 0's last checkpoint outlasts a Ctrl-C that
reached one worker only, while rank 0's disk is slow; a --resume that one node cannot make is refused on every node
within seconds; ranks whose weights drift apart are stopped at the next checkpoint."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import torch

from benchmarks.core import launch
from conftest import HERE, SCHEDULE, run_dirs

import ppo_breakout_atari as ppo

STOP_MESSAGE = "Ctrl-C: stopping at the next step and saving the last complete update"
# 2 envs x 64 steps = 128 samples per rank and update (256 for both ranks), 2 minibatches, 1 epoch, on the CPU.
TINY = ["--num-envs", "2", "--num-steps", "64", "--minibatch-size", "64", "--update-epochs", "1", "--no-cuda",
        "--vectorization-mode", "sync", "--eval-every", "0"]


def faulty_run(argv: list[str], cwd: Path, **faults: str) -> subprocess.CompletedProcess:
    """The lesson under torchrun with 2 CPU ranks and `argv`, the driver's faults set (FAULT_...=value)."""
    command = launch.python_command(str(HERE / "torchrun_faults_driver.py"), ppo.__name__, *argv, torchrun=2)
    return launch.run(command, cwd, timeout=300, env=launch.environment(**faults))


def test_rank_0s_last_checkpoint_outlasts_a_ctrl_c_that_reached_one_worker(tmp_path):
    # Rank 1 alone gets SIGINT after update 1 (torchrun does not: it was pressed on another node), and rank 0's disk
    # takes 2 s to save. Once rank 1 exits (130), torchrun sends SIGTERM to rank 0: it must have saved by then.
    result = faulty_run([*TINY, "--checkpoint-every", "0"], tmp_path, FAULT_SIGINT_RANK="1", FAULT_SLOW_SAVE="2")
    assert result.returncode != 0  # (torchrun reports the workers' 130)
    assert STOP_MESSAGE in result.stdout, result.stderr[-3000:]  # said by rank 0, which did not get the signal
    (run_dir,) = run_dirs(tmp_path)
    path = run_dir / "checkpoint.pt"
    assert path.exists(), "rank 0 was stopped before its last checkpoint was written\n" + result.stderr[-3000:]
    ckpt = torch.load(path, weights_only=True)
    assert ckpt["global_step"] == 256 and ckpt["iteration"] == 1 and len(ckpt["rng"]) == 2
    assert f"checkpoint: runs/{run_dir.name}/checkpoint.pt (step 256)" in result.stdout
    # It resumes, on both ranks, and evaluates on the way (rank 0 plays, rank 1 waits for it).
    resumed = launch.run(launch.lesson_command(ppo.SCRIPT, ["--resume", str(path), "--total-timesteps", "512",
                                                            "--eval-every", "1", "--eval-episodes", "1"], torchrun=2),
                         tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "step 512: mean score over 1 games" in resumed.stdout
    assert torch.load(path, weights_only=True)["global_step"] == 512


def test_ranks_whose_weights_differ_are_stopped_at_the_next_checkpoint(tmp_path):
    # Rank 1's weights move by one float32 ulp after update 1: the checksum's all-reduce finds it.
    result = faulty_run([*TINY, "--total-timesteps", "1024", "--checkpoint-every", "1"], tmp_path,
                        FAULT_PERTURB_RANK="1")
    assert result.returncode != 0
    said = [line for line in result.stderr.replace("\r", "\n").splitlines() if "weights differ" in line]
    assert len(said) == 1 and said[0].endswith(
        "error: the ranks' weights differ after update 1: they no longer train one network, so the run stops "
        "without saving (every checkpoint saved before passed this check)"), result.stderr[-3000:]
    (run_dir,) = run_dirs(tmp_path)
    assert not (run_dir / "checkpoint.pt").exists()  # (update 1's would have been the first)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("localhost", port)) == 0


def test_a_resume_that_one_node_cannot_make_is_refused_on_every_node(tmp_path):
    """Two one-rank nodes on localhost, each torchrun launcher in a folder of its own, and the checkpoint in node
    0's alone: node 1 refuses, and node 0 must not wait for it in the process group (30 min)."""
    folders = [tmp_path / "node0", tmp_path / "node1"]
    for folder in folders:
        folder.mkdir()
    # A checkpoint of a 2-rank run after its first update, written by hand.
    args = ppo.Args(num_envs=2, num_steps=64, minibatch_size=64, update_epochs=1, total_timesteps=256, cuda=False,
                    vectorization_mode="sync", eval_every=0)
    with ppo.make_env(args) as env:
        agent = ppo.Agent(env, args.hidden_size)
    state = ppo.checkpoint_state(args, agent, torch.optim.Adam(agent.parameters()), 256, 1, SCHEDULE)
    state["args"]["world_size"], state["rng"] = 2, state["rng"] * 2
    (folders[0] / "runs" / "run").mkdir(parents=True)
    ppo.save_checkpoint(str(folders[0] / "runs" / "run" / "checkpoint.pt"), state)
    port, nodes = free_port(), []
    for rank, folder in enumerate(folders):
        command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node-rank", str(rank),
                   "--nproc_per_node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"localhost:{port}",
                   str(launch.ROOT / ppo.SCRIPT), "--resume", "runs/run/checkpoint.pt", "--total-timesteps", "512"]
        nodes.append(launch.process(command, folder))
        deadline = time.time() + 60
        while rank == 0 and not listening(port) and time.time() < deadline:  # (node 0 hosts the rendezvous)
            time.sleep(0.2)
    try:
        node1_err = nodes[1].communicate(timeout=120)[1]
        refused_at = time.time()
        node0_err = nodes[0].communicate(timeout=30)[1]  # (the target: no rank waits 30 s after another refused)
        waited = time.time() - refused_at
    finally:
        for node in nodes:  # (a launcher still waiting: SIGTERM, which torchrun passes on to its worker)
            if node.poll() is None:
                node.terminate()
                node.wait(timeout=60)
    # Each node says why in one line, the refusing rank named; node 0 left within seconds of node 1.
    line = f"{ppo.SCRIPT}: error: no checkpoint at runs/run/checkpoint.pt (rank 1; every rank stops with it)"
    for node, err in zip(nodes, (node0_err, node1_err)):
        assert node.returncode != 0
        assert [said for said in err.splitlines() if "no checkpoint at" in said] == [line], err[-3000:]
    assert waited < 30
