"""The scripts behave as they did when tests/fingerprints.json was recorded: every scalar a few tiny same-seed runs
log, and their final checkpoints, are the same to the bit (tests/fingerprint.py says which runs, and how to
re-record after a change that is meant to change behaviour)."""

import pytest

import fingerprint


def test_every_script_logs_what_its_fingerprint_recorded(monkeypatch):
    if not fingerprint.recorded_here():
        pytest.skip(f"no fingerprints recorded for this environment ({fingerprint.environment()}): "
                    "python -m tests.fingerprint --write records them")
    # The drivers start with 1 thread, not the 2 of the recording: the check holds on any number of cores.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    problems = fingerprint.check(list(fingerprint.CONFIGS))
    assert not problems, "\n".join(problems[:40])


def test_a_changed_scalar_or_checkpoint_is_reported():
    recorded = next(iter(fingerprint.load().values()))["ppo_cartpole"]
    changed = {name: dict(run, scalars=[list(s) for s in run["scalars"]]) for name, run in recorded.items()}
    tag, step, value = changed["base"]["scalars"][-1]
    changed["base"]["scalars"][-1][2] = value + 1e-12
    changed["plain"]["checksum"] = "0" * 64
    assert fingerprint.differences("ppo_cartpole", recorded, changed) == [
        f"ppo_cartpole [base]: {tag} at step {step}: {value!r} recorded, {value + 1e-12!r} now",
        "ppo_cartpole [plain]: the final checkpoint's checksum differs (weights, optimizer or random states)",
    ]
    assert fingerprint.differences("ppo_cartpole", recorded, recorded) == []
