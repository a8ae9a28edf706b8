"""The scripts behave as they did when tests/fingerprints.json was recorded: the same few tiny same-seed runs end
with the same exit status and log the same (tag, step) pairs, each value within fingerprint.TOLERANCE of the
recorded one, on other processors than the recording one too (tests/fingerprint.py says which runs, why not to
the bit, what the tolerance was measured on, and how to re-record after a change meant to change behaviour).
The exact comparison, on one machine, is `python -m tests.fingerprint --against REV`; its comparison is tested
here without a second tree."""

import fingerprint


def test_every_script_logs_what_its_fingerprint_recorded():
    problems, _ = fingerprint.check(list(fingerprint.CONFIGS))
    assert not problems, "\n".join(problems[:40])


def changed_copy(runs: dict) -> dict:
    return {name: dict(run, scalars=[list(s) for s in run["scalars"]]) for name, run in runs.items()}


def test_a_value_beyond_the_tolerance_is_reported_and_rounding_is_not():
    recorded = fingerprint.recorded()["ppo_cartpole"]
    tolerance = fingerprint.TOLERANCE
    changed = changed_copy(recorded)
    # (a value the relative tolerance governs, not the absolute one)
    i = next(i for i, (_, _, value) in enumerate(changed["base"]["scalars"]) if abs(value) > 0.01)
    tag, step, value = changed["base"]["scalars"][i]
    changed["base"]["scalars"][i][2] = value * 1.01  # 1 % off
    changed["plain"]["checksums"] = dict(changed["plain"]["checksums"], agent="0" * 64)
    assert fingerprint.differences("ppo_cartpole", recorded, changed, tolerance) == [
        f"ppo_cartpole [base]: {tag} at step {step}: {value!r} recorded, {value * 1.01!r} now"]
    # A rounding-sized change (and any checksum) passes the tolerant check; the exact one reports both.
    changed["base"]["scalars"][i][2] = value * (1 + 1e-6)
    assert fingerprint.differences("ppo_cartpole", recorded, changed, tolerance) == []
    assert fingerprint.differences("ppo_cartpole", recorded, changed) == [
        f"ppo_cartpole [base]: {tag} at step {step}: {value!r} recorded, {value * (1 + 1e-6)!r} now",
        "ppo_cartpole [plain]: the final checkpoint's agent differs",
    ]
    assert fingerprint.differences("ppo_cartpole", recorded, recorded) == []


def test_the_structure_must_match_exactly_in_both_comparisons():
    recorded = fingerprint.recorded()["ppo_cartpole"]
    changed = changed_copy(recorded)
    changed["base"]["exit"] = 2
    pairs = [(tag, step) for tag, step, _ in changed["plain"]["scalars"]]
    i = next(i for i, pair in enumerate(pairs) if pairs.count(pair) == 1)  # (a pair logged once)
    tag, step, _ = changed["plain"]["scalars"].pop(i)
    del changed["resumed"]
    for tolerance in (fingerprint.TOLERANCE, None):
        assert fingerprint.differences("ppo_cartpole", recorded, changed, tolerance) == [
            "ppo_cartpole: runs ['base', 'plain', 'resumed'] recorded, ['base', 'plain'] now",
            "ppo_cartpole [base]: exit status 0 recorded, 2 now",
            f"ppo_cartpole [plain]: logged (tag, step) pairs differ: no longer logged {[(tag, step)]}, newly logged []",
        ]


def test_a_value_near_zero_is_held_to_the_absolute_tolerance():
    close = fingerprint.TOLERANCE["absolute"]
    assert fingerprint.agree(3.4769e-07, 3.5763e-07, fingerprint.TOLERANCE)  # one processor's approx_kl, another's
    assert fingerprint.agree(0.0, 0.9 * close, fingerprint.TOLERANCE)
    assert not fingerprint.agree(0.0, 1.1 * close, fingerprint.TOLERANCE)
    assert not fingerprint.agree(0.0, float("nan"), fingerprint.TOLERANCE)
    assert fingerprint.agree(float("nan"), float("nan"), None)


def test_against_compares_the_two_trees_exactly(monkeypatch, capsys):
    """--against REV: REV's files in a folder of their own, each script fingerprinted there and in the working
    tree, compared to the bit (here with stand-ins for git and the driver)."""
    recorded = fingerprint.recorded()["ppo_cartpole"]
    changed = changed_copy(recorded)
    tag, step, value = changed["base"]["scalars"][0]
    changed["base"]["scalars"][0][2] = value + 1e-9  # within the tolerance, not exact
    folders = []
    monkeypatch.setattr(fingerprint, "checkout", lambda rev, folder: folders.append(folder) or "ab" * 20)
    monkeypatch.setattr(fingerprint, "fingerprint", lambda module, root=fingerprint.ROOT, threads=None:
                        changed if root == fingerprint.ROOT else recorded)
    assert fingerprint.main(["--against", "HEAD~1", "ppo_cartpole"]) == 1
    out = capsys.readouterr().out
    assert f"ppo_cartpole [base]: {tag} at step {step}: {value!r} at HEAD~1, {value + 1e-9!r} in the working tree" \
        in out
    assert "the final checkpoint's" not in out and not folders[0].exists()  # (the temporary folder: gone)
    monkeypatch.setattr(fingerprint, "fingerprint", lambda module, root=fingerprint.ROOT, threads=None: recorded)
    assert fingerprint.main(["--against", "HEAD~1", "ppo_cartpole"]) == 0
    assert "ppo_cartpole: every scalar and checkpoint the same as at HEAD~1" in capsys.readouterr().out
