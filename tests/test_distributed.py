"""The torchrun plumbing of the two pixel scripts, checked in one process with the collectives faked: ranks
refused where a machine has fewer GPUs than ranks, a check that one rank refuses refused by every rank, --precision
auto decided by rank 0, the gradients of every parameter averaged in one all-reduce per step, the Ctrl-C agreement
made at every Stopper.AGREE_EVERY-th check only and said by rank 0 whichever rank got it, the other ranks meeting
rank 0 while it evaluates, and the logged KL the one the ranks agree on. (tests/test_breakout.py, tests/test_mario.py
and tests/test_torchrun_faults.py run real torchrun ranks on the CPU.)"""

import importlib
import sys

import pytest
import torch
import torch.nn as nn

from conftest import run_dirs, run_main, scalars

MODULES = ["ppo_breakout_atari", "ppo_mario_cnn"]
STOP_MESSAGE = "Ctrl-C: stopping at the next step and saving the last complete update"


class FakeCollectives:
    """dist.all_reduce as if every other rank held `others` times this rank's tensor: the sum over the ranks is
    then (1 + others) times it; or, with `other`, as if the other rank held those values. Counts the calls and
    keeps the sizes of the tensors reduced and what this rank sent."""

    def __init__(self, others: float = 0.0, other=None):
        self.others, self.other, self.calls, self.sizes, self.sent = others, other, 0, [], []

    def all_reduce(self, tensor, op=None):
        self.calls += 1
        self.sizes.append(tensor.numel())
        self.sent.append(tensor.tolist())
        if self.other is not None:
            tensor.add_(torch.tensor(self.other(), dtype=tensor.dtype))
        else:
            tensor.mul_(1.0 + self.others)


def under_torchrun(monkeypatch, rank: int, local_rank: int = None, world_size: int = 2) -> None:
    local = rank if local_rank is None else local_rank
    for name, value in {"RANK": rank, "LOCAL_RANK": local, "LOCAL_WORLD_SIZE": world_size,
                        "WORLD_SIZE": world_size}.items():
        monkeypatch.setenv(name, str(value))


@pytest.mark.parametrize("module", MODULES)
def test_more_ranks_than_gpus_are_refused(module, monkeypatch, capsys):
    ppo = importlib.import_module(module)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    for rank in (0, 1):  # torchrun --nproc_per_node 2 on a machine with one GPU: both ranks refuse
        under_torchrun(monkeypatch, rank)
        with pytest.raises(SystemExit) as exit_info:
            ppo.check_gpus(ppo.Args())
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "2 ranks on this machine and it has 1 GPU(s)" in err, err
    ppo.check_gpus(ppo.Args(cuda=False))  # --no-cuda: the ranks train on the CPU


@pytest.mark.parametrize("module", MODULES)
def test_one_rank_per_gpu_takes_its_own_gpu(module, monkeypatch):
    ppo = importlib.import_module(module)
    chosen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    monkeypatch.setattr(ppo.dist, "get_rank", lambda: 1)
    under_torchrun(monkeypatch, 1)
    assert ppo.setup_distributed(ppo.Args(precision="fp32")) == (1, torch.device("cuda:1"))
    assert chosen == [torch.device("cuda:1")]
    # --no-cuda: every rank on the CPU, whatever the GPUs
    assert ppo.setup_distributed(ppo.Args(cuda=False, precision="fp32")) == (1, torch.device("cpu"))
    assert chosen == [torch.device("cuda:1")]


@pytest.mark.parametrize("module", MODULES)
def test_precision_auto_is_rank_0s_on_every_rank(module, monkeypatch):
    """Rank 1's CPU has no native bfloat16, rank 0's has: rank 1 trains in bf16 too, as rank 0 decided."""
    ppo = importlib.import_module(module)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    broadcasts = []

    def rank_0s(objects, src):
        broadcasts.append(list(objects))
        objects[0] = "bf16"

    monkeypatch.setattr(ppo.dist, "broadcast_object_list", rank_0s)
    monkeypatch.setattr(ppo.dist, "get_rank", lambda: 1)
    under_torchrun(monkeypatch, 1)
    args = ppo.Args(cuda=False)
    rank, device = ppo.setup_distributed(args)
    assert broadcasts == [["fp32"]] and args.precision == "bf16" and ppo.use_bf16(args, device)
    # A precision given on the command line is every rank's already: nothing to decide.
    args = ppo.Args(cuda=False, precision="fp32")
    ppo.setup_distributed(args)
    assert len(broadcasts) == 1 and args.precision == "fp32"


class FakeGroup:
    """init_process_group, all_gather_object and destroy_process_group, as if the other ranks' verdicts (None: it
    passed; (code, line): it refused) were `others`, {rank: verdict}."""

    def __init__(self, monkeypatch, ppo, others: dict):
        self.others, self.backends, self.destroyed, self.gathered = others, [], 0, []
        monkeypatch.setattr(ppo.dist, "init_process_group", self.backends.append)
        monkeypatch.setattr(ppo.dist, "all_gather_object", self.all_gather_object)
        monkeypatch.setattr(ppo.dist, "destroy_process_group", self.destroy)

    def all_gather_object(self, out, obj):
        self.gathered.append(obj)
        for rank in range(len(out)):
            out[rank] = self.others.get(rank, obj)

    def destroy(self):
        self.destroyed += 1


@pytest.mark.parametrize("module", MODULES)
def test_a_check_that_one_rank_refuses_every_rank_refuses(module, monkeypatch, capsys):
    ppo = importlib.import_module(module)
    missing = f"{ppo.SCRIPT}: error: no checkpoint at runs/x/checkpoint.pt"
    # Rank 0 passes its checks, rank 1 refused: rank 0 refuses too, at once, saying rank 1's line.
    under_torchrun(monkeypatch, 0)
    group = FakeGroup(monkeypatch, ppo, {1: (2, missing)})
    with pytest.raises(SystemExit) as exit_info:
        with ppo.every_rank_agrees():
            print("a warning of the checks", file=sys.stderr)
    assert exit_info.value.code == 2 and group.backends == ["gloo"] and group.destroyed == 1
    assert group.gathered == [None]  # (what this rank's checks said goes on to stderr: it did not refuse)
    assert capsys.readouterr().err.splitlines() == ["a warning of the checks",
                                                    f"{missing} (rank 1; every rank stops with it)"]
    # Rank 1 refuses (fail): its line is held back, then said once on the machine, by local rank 0 (here rank 1 is
    # local rank 0 of the second machine).
    under_torchrun(monkeypatch, 1, local_rank=0)
    group = FakeGroup(monkeypatch, ppo, {0: None})
    with pytest.raises(SystemExit) as exit_info:
        with ppo.every_rank_agrees():
            ppo.fail("no checkpoint at runs/x/checkpoint.pt")
    assert exit_info.value.code == 2 and group.gathered == [(2, missing)]
    assert capsys.readouterr().err.splitlines() == [f"{missing} (rank 1; every rank stops with it)"]
    # Every rank refused alike (a bad flag on every node): the line as it is, said by local rank 0 alone.
    for local_rank, said in ((0, [missing]), (1, [])):
        under_torchrun(monkeypatch, 1, local_rank=local_rank)
        FakeGroup(monkeypatch, ppo, {0: (2, missing)})
        with pytest.raises(SystemExit):
            with ppo.every_rank_agrees():
                ppo.fail("no checkpoint at runs/x/checkpoint.pt")
        assert capsys.readouterr().err.splitlines() == said
    # No rank refused: the run goes on, and what the checks said reaches stderr.
    under_torchrun(monkeypatch, 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # (gloo for the CPU, NCCL for the GPUs)
    group = FakeGroup(monkeypatch, ppo, {1: None})
    with ppo.every_rank_agrees():
        print("a warning of the checks", file=sys.stderr)
    assert group.backends == ["cpu:gloo,cuda:nccl"] and group.destroyed == 0
    assert capsys.readouterr().err == "a warning of the checks\n"


@pytest.mark.parametrize("module", MODULES)
def test_gradients_of_every_parameter_are_averaged_in_one_all_reduce(module, monkeypatch):
    ppo = importlib.import_module(module)
    collectives = FakeCollectives(others=3.0)  # a second rank whose gradients are 3x this one's
    monkeypatch.setattr(ppo.dist, "all_reduce", collectives.all_reduce)
    net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Flatten(), nn.Linear(12, 2)).to(memory_format=torch.channels_last)
    unused = nn.Parameter(torch.ones(5))  # a parameter this rank's loss did not reach (no gradient)
    net(torch.randn(4, 2, 4, 4)).square().sum().backward()
    before = [p.grad.clone() for p in net.parameters()]
    ppo.all_ranks_mean_grads([*net.parameters(), unused], ppo.Args(world_size=2))
    # One collective for the 5 parameter tensors, the unused one's zeros included: a buffer of the same size on
    # every rank, whichever parameters its loss reached.
    assert collectives.calls == 1 and collectives.sizes == [sum(p.numel() for p in net.parameters()) + 5]
    for grad, old in zip((p.grad for p in net.parameters()), before):
        assert torch.allclose(grad, 2.0 * old)  # (g + 3 g) / 2
    assert torch.equal(unused.grad, torch.zeros(5))
    ppo.all_ranks_mean_grads(net.parameters(), ppo.Args(world_size=1))  # one process: nothing to average
    assert collectives.calls == 1


@pytest.mark.parametrize("module", MODULES)
def test_ranks_agree_on_ctrl_c_every_few_checks(module, monkeypatch):
    ppo = importlib.import_module(module)
    collectives = FakeCollectives(others=0.0)  # the other rank saw no Ctrl-C
    monkeypatch.setattr(ppo.dist, "all_reduce", collectives.all_reduce)
    monkeypatch.setattr(ppo.signal, "signal", lambda *a: None)
    under_torchrun(monkeypatch, 1)
    stopper = ppo.Stopper(ppo.Args(world_size=2), rank=1, device=torch.device("cpu"))
    every = stopper.AGREE_EVERY
    assert not any(stopper.check() for _ in range(3 * every)) and collectives.calls == 3
    stopper.requested = True  # Ctrl-C reaches this rank: it stops at the next agreement, not before
    assert [stopper.check() for _ in range(every)] == [False] * (every - 1) + [True]
    assert collectives.calls == 4 and stopper.check() and stopper.stopped
    # One process stops at the very next check, with no collective.
    for name in ("RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "WORLD_SIZE"):
        monkeypatch.delenv(name)
    single = ppo.Stopper(ppo.Args(world_size=1), rank=0, device=torch.device("cpu"))
    assert not single.check()
    single.requested = True
    assert single.check() and collectives.calls == 4


@pytest.mark.parametrize("module", MODULES)
def test_rank_0_says_stop_when_the_ctrl_c_reached_another_rank(module, monkeypatch, capsys):
    ppo = importlib.import_module(module)
    collectives = FakeCollectives(other=lambda: [1.0, 0.0])  # rank 1 got the Ctrl-C, rank 0 did not
    monkeypatch.setattr(ppo.dist, "all_reduce", collectives.all_reduce)
    monkeypatch.setattr(ppo.signal, "signal", lambda *a: None)
    under_torchrun(monkeypatch, 0)
    stopper = ppo.Stopper(ppo.Args(world_size=2), rank=0, device=torch.device("cpu"))
    assert [stopper.check() for _ in range(stopper.AGREE_EVERY)][-1] and not stopper.requested
    assert capsys.readouterr().out.splitlines() == [STOP_MESSAGE]


@pytest.mark.parametrize("module", MODULES)
def test_the_other_ranks_meet_rank_0_while_it_evaluates(module, monkeypatch):
    """No rank waits inside one collective for a whole evaluation: rank 0 meets the others at every AGREE_EVERY-th
    step of its episodes, and once more when they are over; the others meet it until then."""
    ppo = importlib.import_module(module)
    monkeypatch.setattr(ppo.signal, "signal", lambda *a: None)
    under_torchrun(monkeypatch, 0)
    collectives = FakeCollectives(other=lambda: [0.0, 0.0])
    monkeypatch.setattr(ppo.dist, "all_reduce", collectives.all_reduce)
    rank0 = ppo.Stopper(ppo.Args(world_size=2), rank=0, device=torch.device("cpu"))
    every = rank0.AGREE_EVERY
    assert not any(rank0.evaluating() for _ in range(2 * every + 3))
    assert rank0.evaluated() and collectives.sent == [[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]]
    assert rank0.checks == 0  # (the training's agreements count on as before)
    # Rank 1 waits: rank 0 says it is evaluating twice, then done.
    under_torchrun(monkeypatch, 1)
    said = iter([[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]])
    collectives = FakeCollectives(other=lambda: next(said))
    monkeypatch.setattr(ppo.dist, "all_reduce", collectives.all_reduce)
    rank1 = ppo.Stopper(ppo.Args(world_size=2), rank=1, device=torch.device("cpu"))
    assert rank1.wait_for_rank_0() is None and collectives.calls == 3 and not rank1.stopped
    # A Ctrl-C on rank 1 during the evaluation gives rank 0's episodes up at their next meeting, and nothing is
    # logged of them.
    under_torchrun(monkeypatch, 0)
    collectives = FakeCollectives(other=lambda: [1.0, 0.0])
    monkeypatch.setattr(ppo.dist, "all_reduce", collectives.all_reduce)
    rank0 = ppo.Stopper(ppo.Args(world_size=2), rank=0, device=torch.device("cpu"))
    assert [rank0.evaluating() for _ in range(every)] == [False] * (every - 1) + [True]
    assert not rank0.evaluated() and rank0.stopped


def test_breakouts_logged_kl_is_the_one_the_ranks_agree_on(scratch, monkeypatch, capsys):
    """losses/approx_kl and old_approx_kl are what all_ranks_mean returns (the ranks' mean), with --target-kl or
    without it; here all_ranks_mean is a stand-in that returns 0.125 for whatever it is given."""
    ppo = importlib.import_module("ppo_breakout_atari")
    monkeypatch.setattr(ppo, "all_ranks_mean", lambda value, args: torch.full_like(value, 0.125))
    argv = ["--total-timesteps", "256", "--num-envs", "2", "--num-steps", "64", "--minibatch-size", "64",
            "--update-epochs", "2", "--no-cuda", "--vectorization-mode", "sync", "--eval-every", "0"]
    for target_kl in ([], ["--target-kl", "1000", "--exp-name", "kl"]):
        outcome, _, err = run_main(ppo, argv + target_kl, capsys)
        assert outcome == "returned", err
    for run_dir in run_dirs(scratch):
        logged = scalars(run_dir)
        assert [v for _, v in logged["losses/approx_kl"]] == [0.125] * 2, run_dir.name
        assert [v for _, v in logged["losses/old_approx_kl"]] == [0.125] * 2, run_dir.name
