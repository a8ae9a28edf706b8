"""The torchrun plumbing of the two pixel scripts, checked in one process with the collectives faked: ranks
refused where a machine has fewer GPUs than ranks, the gradients averaged in one all-reduce per step, and the
Ctrl-C agreement made at every Stopper.AGREE_EVERY-th check only. (tests/test_breakout.py and tests/test_mario.py
run two real torchrun ranks on the CPU.)"""

import importlib

import pytest
import torch
import torch.nn as nn

MODULES = ["ppo_breakout_atari", "ppo_mario_cnn"]


class FakeCollectives:
    """dist.all_reduce as if every other rank held `others` times this rank's tensor: the sum over the ranks is
    then (1 + others) times it. Counts the calls."""

    def __init__(self, others: float):
        self.others, self.calls = others, 0

    def all_reduce(self, tensor, op=None):
        self.calls += 1
        tensor.mul_(1.0 + self.others)


@pytest.mark.parametrize("module", MODULES)
def test_more_ranks_than_gpus_are_refused_before_the_process_group_starts(module, monkeypatch, capsys):
    ppo = importlib.import_module(module)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(ppo.dist, "init_process_group", lambda *a, **k: pytest.fail("the process group started"))
    for rank in ("0", "1"):  # torchrun --nproc_per_node 2 on a machine with one GPU: both ranks refuse
        monkeypatch.setenv("RANK", rank)
        monkeypatch.setenv("LOCAL_RANK", rank)
        monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
        monkeypatch.setenv("WORLD_SIZE", "2")
        with pytest.raises(SystemExit) as exit_info:
            ppo.setup_distributed(ppo.Args())
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "2 ranks on this machine and it has 1 GPU(s)" in err, err


@pytest.mark.parametrize("module", MODULES)
def test_one_rank_per_gpu_takes_its_own_gpu(module, monkeypatch):
    ppo = importlib.import_module(module)
    started, chosen = [], []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    monkeypatch.setattr(ppo.dist, "init_process_group", started.append)
    monkeypatch.setattr(ppo.dist, "get_rank", lambda: 1)
    for name, value in {"RANK": "1", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(name, value)
    assert ppo.setup_distributed(ppo.Args()) == (1, torch.device("cuda:1"))
    assert started == ["nccl"] and chosen == [1]
    # --no-cuda: every rank on the CPU, with gloo, whatever the GPUs
    started.clear()
    assert ppo.setup_distributed(ppo.Args(cuda=False)) == (1, torch.device("cpu"))
    assert started == ["gloo"]


@pytest.mark.parametrize("module", MODULES)
def test_gradients_are_averaged_in_one_all_reduce(module, monkeypatch):
    ppo = importlib.import_module(module)
    collectives = FakeCollectives(others=3.0)  # a second rank whose gradients are 3x this one's
    monkeypatch.setattr(ppo.dist, "all_reduce", collectives.all_reduce)
    net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Flatten(), nn.Linear(12, 2)).to(memory_format=torch.channels_last)
    net(torch.randn(4, 2, 4, 4)).square().sum().backward()
    before = [p.grad.clone() for p in net.parameters()]
    ppo.all_ranks_mean_grads(net.parameters(), ppo.Args(world_size=2))
    assert collectives.calls == 1  # one collective for the 4 parameter tensors
    for grad, old in zip((p.grad for p in net.parameters()), before):
        assert torch.allclose(grad, 2.0 * old)  # (g + 3 g) / 2
    ppo.all_ranks_mean_grads(net.parameters(), ppo.Args(world_size=1))  # one process: nothing to average
    assert collectives.calls == 1


@pytest.mark.parametrize("module", MODULES)
def test_ranks_agree_on_ctrl_c_every_few_checks(module, monkeypatch):
    ppo = importlib.import_module(module)
    collectives = FakeCollectives(others=0.0)  # the other rank saw no Ctrl-C
    monkeypatch.setattr(ppo.dist, "all_reduce", collectives.all_reduce)
    monkeypatch.setattr(ppo.signal, "signal", lambda *a: None)
    stopper = ppo.Stopper(ppo.Args(world_size=2), rank=1, device=torch.device("cpu"))
    every = stopper.AGREE_EVERY
    assert not any(stopper.check() for _ in range(3 * every)) and collectives.calls == 3
    stopper.requested = True  # Ctrl-C reaches this rank: it stops at the next agreement, not before
    assert [stopper.check() for _ in range(every)] == [False] * (every - 1) + [True]
    assert collectives.calls == 4 and stopper.check() and stopper.stopped
    # One process stops at the very next check, with no collective.
    single = ppo.Stopper(ppo.Args(world_size=1), rank=0, device=torch.device("cpu"))
    assert not single.check()
    single.requested = True
    assert single.check() and collectives.calls == 4
