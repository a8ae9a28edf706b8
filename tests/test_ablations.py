"""benchmarks/patches.py and benchmarks/ablations.py: each patch changes what its name says in the lesson's own
code (and nothing outside it), the effect, its interval and the verdict rule on made-up numbers, the details
map's column from a made-up effects file, and a tiny study run end to end (cells run, recorded, skipped, and
the report written from the CSVs)."""

import ast
import importlib.util
import sys

import numpy as np
import pytest
import torch
from torch import nn

from benchmarks import ablations, patches
from benchmarks.core import grid, inference
from benchmarks.core.records import read_csv, write_csv
from course import lessons
from conftest import ROOT


def fresh(script: str):
    """A copy of the lesson of its own (a patch edits its module): not the one other tests import."""
    spec = importlib.util.spec_from_file_location(f"fresh_{script[:-3]}", ROOT / script)
    module = importlib.util.module_from_spec(spec)
    # (registered before it runs: dataclasses reads a class's module in sys.modules to resolve the string
    # annotations of a lesson that imports annotations from __future__)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def patched(script: str, name: str):
    lesson = fresh(script)
    patches.apply(lesson, [name])
    return lesson


class Env:  # the spaces an Agent is built from
    def __init__(self, obs: int, actions: int, continuous: bool = False):
        import gymnasium as gym

        self.observation_space = gym.spaces.Box(-1, 1, (obs,))
        self.action_space = gym.spaces.Box(-1, 1, (actions,)) if continuous else gym.spaces.Discrete(actions)


def is_orthogonal(weight: torch.Tensor, gain: float) -> bool:
    """Orthogonal rows (or columns) of norm `gain`."""
    w = (weight if weight.shape[0] <= weight.shape[1] else weight.T).detach() / gain
    return torch.allclose(w @ w.T, torch.eye(w.shape[0]), atol=1e-4)


def test_unclipped_objective_is_eq6_where_the_clip_would_hold_r_back():
    ratio, advantages = torch.tensor([1.5, 0.5]), torch.tensor([1.0, -1.0])
    lesson = fresh("ppo_lunarlander_vec.py")
    assert lesson.clipped_surrogate_loss(ratio, advantages, 0.2).item() == pytest.approx(-(1.2 - 0.8) / 2)
    patches.apply(lesson, ["unclipped-objective"])
    assert lesson.clipped_surrogate_loss(ratio, advantages, 0.2).item() == pytest.approx(-(1.5 - 0.5) / 2)


def test_no_grad_clip_leaves_the_gradient_and_torch_as_they_are():
    def gradient_after(lesson):
        layer = nn.Linear(3, 1)
        layer.weight.grad, layer.bias.grad = torch.full((1, 3), 10.0), torch.full((1,), 10.0)
        norm = lesson.nn.utils.clip_grad_norm_(layer.parameters(), 0.5)
        return layer.weight.grad.norm().item(), norm.item()

    assert gradient_after(fresh("ppo_cartpole.py"))[0] == pytest.approx(0.5 * np.sqrt(3 / 4), rel=1e-4)
    grad, norm = gradient_after(patched("ppo_cartpole.py", "no-grad-clip"))
    assert grad == pytest.approx(10 * np.sqrt(3)) and norm == pytest.approx(20.0)
    assert gradient_after(fresh("ppo_cartpole.py"))[0] < 1  # torch's own function is untouched
    assert patched("ppo_cartpole.py", "no-grad-clip").nn.Linear is nn.Linear


def test_default_init_is_pytorchs_not_orthogonal():
    torch.manual_seed(0)
    agent = fresh("ppo_lunarlander_vec.py").Agent(Env(8, 4), 64)
    assert is_orthogonal(agent.actor[2].weight, np.sqrt(2)) and not agent.actor[0].bias.any()
    agent = patched("ppo_lunarlander_vec.py", "default-init").Agent(Env(8, 4), 64)
    assert not is_orthogonal(agent.actor[2].weight, np.sqrt(2)) and agent.actor[0].bias.abs().sum() > 0
    bound = 1 / np.sqrt(64)  # nn.Linear's own: uniform in +-1/sqrt(fan_in)
    assert agent.actor[2].weight.abs().max() <= bound


def test_policy_init_1_scales_only_the_policys_last_layer():
    agent = fresh("ppo_cartpole.py").Agent(Env(4, 2), 64)
    assert is_orthogonal(agent.actor.weight, 0.01)
    agent = patched("ppo_cartpole.py", "policy-init-1").Agent(Env(4, 2), 64)
    assert is_orthogonal(agent.actor.weight, 1.0) and is_orthogonal(agent.critic.weight, 1.0)
    assert is_orthogonal(agent.trunk[0].weight, np.sqrt(2))
    mean_head = patched("ppo_pendulum_continuous.py", "policy-init-1").Agent(Env(3, 1, True), 64).actor_mean[-1]
    assert is_orthogonal(mean_head.weight, 1.0)


def test_adam_eps_1e8():
    parameters = [nn.Parameter(torch.zeros(2))]
    assert fresh("ppo_cartpole.py").adam(parameters, lr=1e-3, eps=1e-5).defaults["eps"] == 1e-5
    assert patched("ppo_cartpole.py", "adam-eps-1e-8").adam(parameters, lr=1e-3, eps=1e-5).defaults["eps"] == 1e-8


def test_no_bootstrap_gives_the_advantages_of_a_termination():
    """A made-up rollout whose episode is truncated at step 1 with V(final obs) = 5: patched, its advantages are
    those of the same rollout terminated there (V = 0), and differ from the bootstrapped ones."""
    rewards, values = np.array([1.0, 1.0, 1.0]), np.array([0.5, 0.4, 0.3])
    dones, final_values = np.array([0.0, 1.0, 0.0]), np.array([0.0, 5.0, 0.0])
    lesson = fresh("ppo_cartpole.py")
    bootstrapped = lesson.compute_gae(rewards, values, dones, final_values, 0.7, 0.99, 0.95)
    terminated = lesson.compute_gae(rewards, values, dones, np.zeros(3), 0.7, 0.99, 0.95)
    patches.apply(lesson, ["no-bootstrap"])
    assert np.array_equal(lesson.compute_gae(rewards, values, dones, final_values, 0.7, 0.99, 0.95), terminated)
    assert bootstrapped[1] == pytest.approx(1.0 + 0.99 * 5.0 - 0.4) and terminated[1] == pytest.approx(0.6)


def test_no_obs_clip_standardizes_without_clipping():
    for name, expected in ((None, 10.0), ("no-obs-clip", 100.0)):
        lesson = fresh("ppo_pendulum_continuous.py")
        if name:
            patches.apply(lesson, [name])
        agent = lesson.Agent(Env(3, 1, True), 64, norm_clip=10.0)  # obs_rms: mean 0, var 1
        assert agent.normalize(torch.tensor([100.0, -1.0, 0.0]))[0].item() == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize("script,env", [("ppo_lunarlander_vec.py", Env(8, 4)),
                                        ("ppo_pendulum_continuous.py", Env(3, 1, True))])
def test_shared_trunk_shares_the_hidden_layers_and_the_value_loss_reaches_them(script, env):
    agent = fresh(script).Agent(env, 64)
    assert agent.critic[0] is not (agent.actor if hasattr(agent, "actor") else agent.actor_mean)[0]  # split as written
    split = sum(p.numel() for p in agent.parameters())
    agent = patched(script, "shared-trunk").Agent(env, 64)
    actor = agent.actor if hasattr(agent, "actor") else agent.actor_mean
    assert agent.critic[0] is actor[0] and agent.critic[2] is actor[2]
    assert sum(p.numel() for p in agent.parameters()) == split - (env.observation_space.shape[0] * 64 + 64 + 64 * 64 + 64)
    agent.get_value(torch.ones(2, env.observation_space.shape[0])).sum().backward()
    assert actor[0].weight.grad.abs().sum() > 0


def test_split_networks_gives_the_critic_its_own_hidden_layer():
    x = torch.ones(2, 4)
    shared = fresh("ppo_cartpole.py").Agent(Env(4, 2), 64)
    shared.get_value(x).sum().backward()
    assert shared.trunk[0].weight.grad.abs().sum() > 0  # shared: the value loss shapes the policy's features
    agent = patched("ppo_cartpole.py", "split-networks").Agent(Env(4, 2), 64)
    assert type(agent).__name__ == "Agent" and is_orthogonal(agent.critic_trunk[0].weight, np.sqrt(2))
    agent.get_value(x).sum().backward()
    assert agent.trunk[0].weight.grad is None and agent.critic_trunk[0].weight.grad.abs().sum() > 0
    _, _, _, value = agent.get_action_and_value(x)
    assert torch.equal(value, agent.get_value(x))


def test_every_patch_is_used_by_a_study_and_every_setting_patch_exists():
    used = {p for a in ablations.STUDIES.values() for s in a.settings.values() for p in s.patches}
    assert used == set(patches.PATCHES)


# ---------------------------------------------------------------------------------------------------------
# Effects, intervals, verdicts
# ---------------------------------------------------------------------------------------------------------
def test_the_verdicts_sides_on_each_kind_of_score():
    """A clear effect (10 against 5 runs, every setting run beyond every default run) in a family of one: on a
    score where higher is better, above the default helps and below hurts; on steps to solve, the other way."""
    low, high = [0.0, 1.0, 2.0, 3.0, 4.0], [float(v) for v in range(10, 20)]
    for setting, default, higher_is_better, expected in ((high[:5], low * 2, True, "helps"),
                                                         (low, high, True, "hurts"),
                                                         (high[:5], low * 2, False, "hurts"),
                                                         (low, high, False, "helps")):
        found = inference.family([inference.compare_means(setting, default, higher_is_better)])
        assert found[0].verdict == expected
    solve = inference.family([inference.compare_censored(low, high, higher_is_better=False)])
    assert solve[0].verdict == "helps"  # solved sooner


def made_up(ablation, values: dict[str, list[float]], unsolved: set = frozenset()):
    rows, curves = [], []
    for setting, finals in values.items():
        for seed, final in enumerate(finals, start=1):
            solved = "" if (setting, seed) in unsolved else 10_000 * final
            rows.append({"task": ablation.task, "setting": setting, "seed": seed, "final_return": final,
                         "steps_to_solve": solved, "eval_return": "", "steps": 99_840, "wall_seconds": 60.0})
            curves += [{"task": ablation.task, "setting": setting, "seed": seed, "step": step, "mean_return": final / k}
                       for k, step in ((2, 5000), (1, 10000))]
    return rows, curves


def test_scores_count_an_unsolved_run_as_the_budget_and_auc_is_the_curves_mean():
    ablation = ablations.STUDIES["cartpole"]
    rows, curves = made_up(ablation, {"default": [1.0, 2.0, 3.0], "no-norm-adv": [3.0, 4.0, 5.0]},
                           {("no-norm-adv", 2)})
    assert ablations.scores(ablation, rows, curves, ablations.SOLVE) == {
        "default": [10_000.0, 20_000.0, 30_000.0], "no-norm-adv": [30_000.0, 99_840.0, 50_000.0]}
    assert ablations.scores(ablation, rows, curves, ablations.AUC) == {
        "default": [0.75, 1.5, 2.25], "no-norm-adv": [2.25, 3.0, 3.75]}
    found = ablations.effects(ablation, rows, curves)
    solve = next(e for e in found if e["metric"] == "steps_to_solve")
    # censored: the medians' difference (50,000 - 20,000), how many solved, and the rank test
    assert solve["setting"] == "no-norm-adv" and solve["effect"] == 30_000.0 and solve["solved"] == "2/3"
    assert solve["test"] == "rank permutation, exact" and solve["low"] is None
    # two seeds are too few for an interval: no effect until each side has MIN_SEEDS (3)
    assert ablations.effects(ablation, *made_up(ablation, {"default": [1.0, 2.0], "no-norm-adv": [3.0, 4.0]})) == []


def test_the_maps_column_from_a_made_up_effects_file(tmp_path):
    ablation = ablations.STUDIES["cartpole"]
    rows, curves = made_up(ablation, {"default": [400.0, 410.0, 420.0], "no-norm-adv": [300.0, 310.0, 305.0],
                                      "default-init": [405.0, 395.0, 430.0]})
    write_csv(tmp_path / "effects.csv", ablations.effects(ablation, rows, curves), ablations.EFFECT_FIELDS)
    found = ablations.read_effects(tmp_path)
    column = ablations.map_column("7. advantage normalization", "core", found)
    # the AUC (CartPole's leading score): the made-up curves' mean, 0.75 x the final return; 3 against 3 runs
    # have 20 splits, so a p no lower than 0.1: nothing detectable, however large
    assert column.startswith("`no-norm-adv` CartPole AUC: -78.8 [")  # 0.75 x (305 - 410)
    assert column.endswith("] not detected (nothing detectable: 3 against 3 runs) (3 of 20 seeds); "
                           "`no-norm-adv` not run yet on LunarLander, Hopper")
    init = ablations.map_column("2. orthogonal init, constant bias", "core", found)
    assert "`default-init` CartPole AUC: " in init and "not detected" in init
    assert "`policy-init-1` not run yet on CartPole, LunarLander, Hopper" in init
    assert ablations.map_column("5. grayscale 84 x 84 (WarpFrame)", "Atari", found) == ablations.ATARI
    assert ablations.map_column("12. debug variables (approx_kl, clipfrac, ...)", "core", found).startswith("logging")


def test_a_change_that_never_acted_is_named_as_such_in_the_table_and_the_map():
    """Hopper's clip-vloss checks losses/vf_clipfrac: where it was 0 in every update of every run, the change ran
    the default's algorithm, and the table and the map say that its interval compares two samples of one recipe;
    where it acted in one update, neither says so."""
    ablation = ablations.STUDIES["hopper"]
    rows, curves = made_up(ablation, {"clip0.2-here": [2500.0, 2600.0, 2700.0], "clip-vloss": [2900.0, 3000.0, 3100.0]})
    for row in rows:
        row["acted"] = "0/488" if row["setting"] == "clip-vloss" else ""
    found = ablations.effects(ablation, rows, curves)
    assert {e["acted"] for e in found} == {"0/1464"}
    note = "it never acted (losses/vf_clipfrac 0 in all 1464 updates)"
    assert f"`clip-vloss`: {note}" in ablations.report(ablation, rows, curves, found)
    column = ablations.map_column("9. value-loss clipping", "core", found)
    assert f"`clip-vloss` Hopper final return: +400.0 [" in column and f"runs) (3 of 5 seeds), but {note}" in column
    rows[-1]["acted"] = "1/488"
    found = ablations.effects(ablation, rows, curves)
    assert {e["acted"] for e in found} == {"1/1464"}
    assert "never acted" not in ablations.report(ablation, rows, curves, found) + ablations.map_column(
        "9. value-loss clipping", "core", found)
    rows[-1]["acted"] = ""  # a run that predates the check: nothing is claimed
    assert ablations.acted_total([r for r in rows if r["setting"] == "clip-vloss"]) is None


def test_acted_counts_the_updates_where_the_logged_check_was_above_0(tmp_path):
    """From a run folder's TensorBoard events, as summarize_run and collect read them: collect fills the row of a
    run recorded before the check existed."""
    from torch.utils.tensorboard import SummaryWriter

    run = tmp_path / "runs" / "Hopper-v5__table1-clip-vloss__1__1"
    writer = SummaryWriter(run)
    for step, fraction in enumerate([0.0, 0.0, 0.25, 0.0]):
        writer.add_scalar("losses/vf_clipfrac", fraction, step)
    writer.close()
    from benchmarks.core import runs

    assert ablations.acted(runs.read_scalars(run)[0], "losses/vf_clipfrac") == "1/4"
    assert ablations.acted(runs.read_scalars(run)[0], "losses/no-such") == "0/0"
    ablation = ablations.STUDIES["hopper"]
    results = tmp_path / "results"
    row = {"task": "Hopper-v5", "setting": "clip-vloss", "seed": 1, "final_return": 1.0, "run_dir": grid.relative(run)}
    write_csv(results / "hopper-runs.csv", [row, {**row, "setting": "no-norm-adv"}], ablations.RUNS_FIELDS)
    write_csv(results / "hopper-curves.csv", [], ablations.CURVE_FIELDS)
    assert ablations.collect(ablation, ablation.study(tmp_path), [], results, set()) == 0  # no run added
    assert [r["acted"] for r in read_csv(results / "hopper-runs.csv")] == ["1/4", ""]  # no check on no-norm-adv


def test_the_committed_effects_are_the_ones_the_committed_runs_give():
    """effects.csv holds an effect for every setting and score that has runs, and every figure of it (the effect,
    the interval, the test's p, Holm's p, the verdict, the detectable effect) is the one the committed runs and
    curves CSVs give: recomputed here for every study."""
    committed = read_csv(ablations.RESULTS / "effects.csv")
    cartpole = ablations.STUDIES["cartpole"]
    assert {(e["setting"], e["metric"]) for e in committed if e["study"] == "cartpole"} == {
        (s, m.name) for s in list(cartpole.settings)[1:] for m in cartpole.metrics}
    again = []
    for ablation in ablations.STUDIES.values():
        again += ablations.effects(ablation, *ablations.recorded(ablation, ablations.RESULTS))
    assert len(again) == len(committed)
    for row, mine in zip(committed, again):
        assert {k: row[k] for k in ("study", "setting", "metric", "verdict", "test", "p", "p_holm", "family")} == \
            {k: "" if mine[k] is None else str(mine[k]) for k in ("study", "setting", "metric", "verdict", "test",
                                                                  "p", "p_holm", "family")}
        for k in ("effect", "low", "high", "detectable"):
            assert (float(row[k]) if row[k] else None) == (None if mine[k] is None else pytest.approx(mine[k]))


def test_no_verdict_rests_on_a_random_state():
    """The verdicts are functions of the scores alone (exact tests, Welch, Holm): NumPy's global generator in
    any state gives the same effects."""
    ablation = ablations.STUDIES["lunarlander"]
    rows, curves = ablations.recorded(ablation, ablations.RESULTS)
    np.random.seed(1)
    first = ablations.effects(ablation, rows, curves)
    np.random.seed(2)
    assert ablations.effects(ablation, rows, curves) == first


def test_each_committed_table_prints_the_interval_effects_csv_holds():
    """The table (from the effects in memory) and the map and "Try this" (from effects.csv) print one figure for
    one interval: each effect is rounded to the CSV's 3 decimals before either formats it (an interval end of
    -1815.8504 once read -1815.9 in the table and -1815.8 from the CSV)."""
    for e in read_csv(ablations.RESULTS / "effects.csv"):
        ablation = ablations.STUDIES[e["study"]]
        metric = next(m for m in ablation.metrics if m.name == e["metric"])
        value = ablations.effect_values(e)
        row = next(line for line in (ablations.RESULTS / f"{e['study']}.md").read_text().splitlines()
                   if line.startswith(f"| `{e['setting']}` |"))
        assert f"| {ablations.interval_text(value, metric)} | {ablations.verdict_text(e, metric)} |" in row, \
            (e["study"], e["setting"], metric.name)


def test_an_interval_end_on_a_rounding_edge_prints_as_the_csv_gives_it(tmp_path, monkeypatch):
    """What the test above checks on the record, on a made-up interval whose end -1815.8504 rounds to -1815.9 at
    1 decimal but is -1815.85 in the CSV (and -1815.8 from there): the table, effects.csv and the map agree."""
    made = lambda values, default, higher_is_better: inference.Comparison(  # noqa: E731
        -1093.4561, -1815.8504, -423.9371, 0.0001, "permutation, exact", False, 300.0, 8.0, (3, 3))
    monkeypatch.setattr(ablations.inference, "compare_means", made)
    ablation = ablations.STUDIES["hopper"]
    rows, curves = made_up(ablation, {"clip0.2-here": [2500.0, 2600.0, 2700.0], "shared-trunk": [1.0, 2.0, 3.0]})
    found = ablations.effects(ablation, rows, curves)
    write_csv(tmp_path / "effects.csv", found, ablations.EFFECT_FIELDS, floats="decimals")
    from_csv = next(e for e in read_csv(tmp_path / "effects.csv") if e["metric"] == "final_return")
    text = ablations.interval_text({k: float(from_csv[k]) for k in ("effect", "low", "high")}, ablations.FINAL)
    assert text == "-1093.5 [-1815.8, -423.9]"
    assert f"| {text} | hurts (Holm p 0.0001) |" in ablations.report(ablation, rows, curves, found)
    assert f"Hopper final return: {text} hurts (Holm p 0.0001)" in ablations.map_column(
        "13. shared or separate networks", "core", [from_csv])


def test_collect_refuses_rows_of_a_setting_the_study_no_longer_has(tmp_path, capsys):
    """Hopper's Table 1 rows left the study when its default was run again: a CSV that still holds such rows is
    refused in one line (exit 2), not sorted into a traceback."""
    ablation = ablations.STUDIES["hopper"]
    row = {"task": "Hopper-v5", "setting": "clip0.2", "seed": 4, "final_return": 1.0}
    write_csv(tmp_path / "hopper-runs.csv", [row, {**row, "setting": "clip-vloss"}], ablations.RUNS_FIELDS)
    write_csv(tmp_path / "hopper-curves.csv", [], ablations.CURVE_FIELDS)
    with pytest.raises(SystemExit) as stop:
        ablations.collect(ablation, ablation.study(tmp_path), [], tmp_path, set())
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().endswith(
        "has rows of settings the hopper study does not have (clip0.2): remove them, or put the settings back")


# ---------------------------------------------------------------------------------------------------------
# A study of long runs: Breakout's, read from the records of its 40M-frame runs
# ---------------------------------------------------------------------------------------------------------
def test_a_recorded_cell_is_read_from_its_runs_results_csv_and_curves(monkeypatch):
    """Breakout's --anneal-clip seed 1 is the run `long40m`: its row and curve come from the committed
    ppo_breakout_atari-long40m.csv and its -curves.csv (the final return is the record's own, its last 100 whole
    games); an unfinished record, or one not written yet, is no cell."""
    ablation = ablations.STUDIES["breakout"]
    row, curve = ablations.summarize_record(ablation, "anneal-clip", 1)
    record = read_csv(ablations.record_csv(ablation, "anneal-clip", 1))[0]
    assert record["label"] == "long40m" and record["seed"] == "1"
    assert round(row["final_return"], 2) == float(record["final_return"])
    assert row["episodes"] == int(record["episodes"]) and row["steps"] == 9_999_360
    assert row["run_dir"] == "benchmarks/results/ppo_breakout_atari-long40m.csv"
    assert [p["step"] for p in curve] == [250_000 * k for k in range(1, 41)]  # 40 bins of 1M frames
    assert 0 < curve[0]["mean_return"] < 20 < 300 < curve[-1]["mean_return"]
    # the training seconds leave the stops between sessions out, as README's results table times a resumed run
    from benchmarks import results

    path = ablations.record_csv(ablation, "anneal-clip", 1)
    assert row["wall_seconds"] == pytest.approx(results.training_time([{**record, "csv": path}])[0], abs=0.1)
    assert 3 * 3600 < row["wall_seconds"] < float(record["wall_seconds"]) - 3600
    monkeypatch.setattr(ablation, "finished_steps", 10_000_000)
    assert ablations.summarize_record(ablation, "anneal-clip", 1) is None
    monkeypatch.setattr(ablation, "records", {"anneal-clip": {1: "no-such-label"}})
    assert ablations.summarize_record(ablation, "anneal-clip", 1) is None


def test_a_study_of_two_seeds_gives_the_difference_alone_once_all_are_in():
    """Two seeds a setting are under the 3 an interval needs (MIN_SEEDS): with both in, the effect is the
    difference of the means with no interval and no verdict, in the table and effects.csv; with one, nothing."""
    ablation = ablations.STUDIES["breakout"]
    rows, curves = made_up(ablation, {"default": [416.0, 400.0], "anneal-clip": [350.0, 370.0]})
    found = ablations.effects(ablation, rows, curves)
    final = next(e for e in found if e["metric"] == "final_return")
    assert (final["effect"], final["low"], final["high"]) == (-48.0, None, None)
    assert final["verdict"] == "none: 2 seeds a side, a test needs 3"
    assert "| 360.0 +/- 14.1 | -48.0 (no interval) | none: 2 seeds a side, a test needs 3 |" in \
        ablations.report(ablation, rows, curves, found)
    assert ablations.effects(ablation, *made_up(ablation, {"default": [416.0, 400.0], "anneal-clip": [350.0]})) == []
    cartpole = ablations.STUDIES["cartpole"]  # a study of 10 seeds with 2 in: still nothing (the rule above)
    assert ablations.effects(cartpole, *made_up(cartpole, {"default": [1.0, 2.0], "no-norm-adv": [3.0, 4.0]})) == []


def test_a_recorded_study_runs_nothing_and_its_dry_run_prints_the_missing_runs_commands(tmp_path, capsys,
                                                                                          monkeypatch):
    ablation = ablations.STUDIES["breakout"]
    monkeypatch.setitem(ablation.records, "default", {1: "long40m-constclip", 2: "no-such-label"})
    monkeypatch.setattr(ablations.grid, "run", lambda *a, **k: pytest.fail("the grid ran a 40M-frame cell"))
    results = tmp_path / "results"
    assert ablations.main(["breakout", "--dry-run", "--results-dir", str(results)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] + lines[3:] == [f"# done BreakoutNoFrameskip-v4 {s} seed {seed}"
                                     for s, seed in (("default", 1), ("anneal-clip", 1), ("anneal-clip", 2))]
    assert lines[2] == (
        "python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync "
        "--seed 2 --exp-name no-such-label && python -m benchmarks.benchmark --script ppo_breakout_atari.py --window "
        "100 --label no-such-label --csv benchmarks/results/ppo_breakout_atari-no-such-label.csv --from-logs "
        "'runs/BreakoutNoFrameskip-v4__no-such-label__*'  # not recorded BreakoutNoFrameskip-v4 default seed 2")
    assert not results.exists()
    monkeypatch.setattr(ablations, "write_reports", lambda *a, **k: [])  # the other studies' intervals: not here
    assert ablations.main(["breakout", "--results-dir", str(results)]) == 0
    rows = read_csv(results / "breakout-runs.csv")
    assert [(r["setting"], r["seed"]) for r in rows] == [("default", "1"), ("anneal-clip", "1"), ("anneal-clip", "2")]
    assert ablations.main(["breakout", "--results-dir", str(results)]) == 0  # recorded rows are not added twice
    assert len(read_csv(results / "breakout-runs.csv")) == 3
    with pytest.raises(SystemExit) as stop:
        ablations.main(["breakout", "--seeds", "3"])
    assert stop.value.code == 2 and "breakout has no seed 3: its cells are the runs of seeds 1, 2" in \
        capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------
# A tiny study, end to end
# ---------------------------------------------------------------------------------------------------------
def test_a_tiny_study_runs_records_skips_and_reports(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(ablations, "MIN_SEEDS", 2)  # 2 seeds a setting, to keep it short
    argv = ["cartpole", "--settings", "default", "split-networks", "--seeds", "1", "2", "--total-timesteps", "512",
            "--runs-dir", str(tmp_path), "--results-dir", str(tmp_path / "results")]
    assert ablations.main(argv) == 0
    rows = read_csv(tmp_path / "results" / "cartpole-runs.csv")
    assert [(r["setting"], r["seed"]) for r in rows] == [("default", "1"), ("default", "2"),
                                                           ("split-networks", "1"), ("split-networks", "2")]
    assert all(int(r["steps"]) == 512 for r in rows)
    log = (tmp_path / "runs" / "ablation-cartpole-logs" / "CartPole-v1-split-networks-1.log").read_text()
    assert "Traceback" not in log
    table = (tmp_path / "results" / "cartpole.md").read_text()
    assert "| `split-networks` | split actor and critic" in table and "(`--patch split-networks`) | 2 |" in table
    effects = read_csv(tmp_path / "results" / "effects.csv")
    assert {(e["setting"], e["metric"]) for e in effects if e["study"] == "cartpole"} == {
        ("split-networks", m) for m in ("steps_to_solve", "final_return", "auc")}
    assert (tmp_path / "results" / "cartpole.png").stat().st_size > 5_000
    capsys.readouterr()
    # Done cells are skipped: by their checkpoints, and on a fresh checkout (no run folders) by their rows.
    (tmp_path / "runs").rename(tmp_path / "gone")
    assert ablations.main([*argv, "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"# done CartPole-v1 {s} seed {seed}" for seed in (1, 2) for s in ("default", "split-networks")]


def test_a_study_cell_is_one_runnable_command_per_line(capsys):
    assert ablations.main(["lunarlander", "--seeds", "99", "--dry-run"]) == 0  # a seed no record holds
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(ablations.STUDIES["lunarlander"].settings)
    shared = next(line for line in lines if "shared-trunk seed 99" in line)
    assert shared.startswith("python -m benchmarks.patches --patch shared-trunk ppo_lunarlander_vec.py ")
    one_env = next(line for line in lines if "one-env seed 99" in line)
    assert "--num-envs 1 --num-steps 2048" in one_env


def test_bad_arguments_are_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        ablations.main(["cartpole", "--settings", "no-such"])
    assert exit_.value.code == 2 and "cartpole has no setting no-such" in capsys.readouterr().err


def test_cells_are_the_studys_settings_and_seeds():
    ablation = ablations.STUDIES["cartpole"]
    cells = ablations.cells_of(ablation, None, None)
    assert len(cells) == 20 * len(ablation.settings) and cells[0] == grid.Cell("ppo_cartpole.py", "CartPole-v1",
                                                                              "default", 1)
    hopper = ablations.STUDIES["hopper"]  # the default runs 10 seeds, each setting 5
    cells = ablations.cells_of(hopper, None, None)
    assert len(cells) == 10 + 5 * (len(hopper.settings) - 1)
    assert sorted(c.seed for c in cells if c.setting == "clip0.2-here") == list(range(1, 11))
    assert sorted(c.seed for c in cells if c.setting == "none-here") == list(range(1, 6))
    assert len(ablations.cells_of(hopper, ["none-here"], [7])) == 1  # seeds asked for are run as asked


@pytest.mark.parametrize("script", sorted(ablations.TRY_THIS))
def test_each_try_this_measurement_is_what_the_committed_study_gives(script):
    """A lesson's "Try this" quotes its study: each command with the effect, interval and verdict that the
    committed effects.csv gives (python -m benchmarks.ablations --try-this prints them), under each experiment's
    own question and answer."""
    _, experiments = lessons.try_this(ast.get_docstring(ast.parse((ROOT / script).read_text())))
    assert [(e.command, e.measured) for e in experiments] == ablations.try_this(script, ablations.read_effects())
    assert all(e.predict.endswith("?") and e.answer for e in experiments)


@pytest.mark.parametrize("script", sorted(ablations.TRY_THIS))
def test_each_try_this_runs_the_lessons_own_command_at_its_own_scale(script):
    """A learner runs a "Try this" as the docstring gives it: the lesson itself, with the setting's flag or patch
    and nothing else. So its study must be that command's run: the lesson's own task and length, no flags of its
    own (Hopper at Table 1's 1M steps once stood for Pendulum's, a study of 6-minute runs where the lesson's are
    one), and each setting's recorded runs as long as the lesson's (within one rollout)."""
    study, settings = ablations.TRY_THIS[script]
    ablation = ablations.STUDIES[study]
    args = __import__(script[:-3]).Args()
    assert (ablation.script, ablation.task, ablation.total_timesteps, ablation.flags) == \
        (script, args.env_id, args.total_timesteps, [])
    rollout = getattr(args, "num_envs", 1) * args.num_steps  # CartPole: one env
    rows, _ = ablations.recorded(ablation, ablations.RESULTS)
    for name, (command, _) in zip(settings, ablations.try_this(script, ablations.read_effects())):
        setting = ablation.settings[name]
        assert command == " ".join(["python", *(f"-m benchmarks.patches --patch {p}" for p in setting.patches),
                                    script, *setting.flags])
        steps = {int(r["steps"]) for r in rows if r["setting"] in (name, ablation.default)}
        assert steps and all(args.total_timesteps - rollout < s <= args.total_timesteps for s in steps), (name, steps)


# What an Answer's first claim says (its first word of these), and the verdicts that claim agrees with.
CLAIMS = {"hurts": ("worse", "slower", "lower", "below"), "helps": ("better", "faster", "higher", "above"),
          "not detected": ("not detect", "no difference", "not detectably")}


@pytest.mark.parametrize("script", sorted(ablations.TRY_THIS))
def test_each_try_this_answer_says_what_its_verdict_says(script):
    """An Answer says first what its Measured line's verdict says: "worse" or "slower" where the study found
    hurts, "faster" where helps, "not detected" or "no difference detected" where it could not tell."""
    _, experiments = lessons.try_this(ast.get_docstring(ast.parse((ROOT / script).read_text())))
    for e in experiments:
        verdict = next(v for v in CLAIMS if v in e.measured)
        found = [(e.answer.find(word), claim) for claim, words in CLAIMS.items() for word in words if word in e.answer]
        assert found and min(found)[1] == verdict, (e.command, e.answer, e.measured)


def test_write_try_this_refuses_other_commands_in_one_line_and_writes_no_lesson(tmp_path, monkeypatch, capsys):
    """A lesson whose Try this commands are not its study's: one line on stderr, exit 2, and no lesson written
    (not even those before it, which were in order)."""
    for script in ablations.TRY_THIS:
        (tmp_path / script).write_text((ROOT / script).read_text())
    last = tmp_path / list(ablations.TRY_THIS)[-1]
    last.write_text(last.read_text().replace(f"    python {last.name} --", f"    python {last.name} --seed 3 --", 1))
    first = tmp_path / list(ablations.TRY_THIS)[0]
    first.write_text(first.read_text().replace("        Measured: ", "        Measured: stale ", 1))
    before = {path.name: path.read_text() for path in tmp_path.iterdir()}
    monkeypatch.setattr(ablations, "ROOT", tmp_path)
    assert ablations.main(["--write-try-this"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"{last.name}: its Try this commands" in err
    assert {path.name: path.read_text() for path in tmp_path.iterdir()} == before


LESSON = '''"""Doc.

Try this (what the figures
are)
    python a.py
        Predict: will it?
        Answer: no, because.
        Measured: +1
    python b.py --x
        Predict: and this,
        over two lines?
        Answer: yes.
        Measured: -2

Differs from x in:
    - y
"""
'''


def test_write_try_this_rewrites_the_measured_lines_only(tmp_path):
    """The measurements are rewritten in place; the questions, the answers and the next paragraph stay. Commands
    that are not the study's, in its order, are refused."""
    script = tmp_path / "lesson.py"
    script.write_text(LESSON)
    ablations.write_try_this(script, [("python a.py", "+1.5 [0.1, 2.9], helps"), ("python b.py --x", "0")])
    assert script.read_text() == LESSON.replace("Measured: +1", "Measured: +1.5 [0.1, 2.9], helps").replace(
        "Measured: -2", "Measured: 0")
    header, experiments = lessons.try_this(ast.get_docstring(ast.parse(script.read_text())))
    assert header == "Try this (what the figures are)"
    assert experiments[1].predict == "and this, over two lines?" and experiments[1].measured == "0"
    with pytest.raises(ValueError, match="not the study's"):
        ablations.write_try_this(script, [("python b.py --x", "0"), ("python a.py", "+1")])


@pytest.mark.parametrize("old, new, message", [
    ("        Measured: +1\n", "        Answer: again.\n        Measured: +1\n", "out of the order"),
    ("        Measured: +1\n", "", "needs Predict, Answer, Measured"),
    ("        Answer: no, because.\n        Measured: +1\n", "        Measured: +1\n        Answer: no, because.\n",
     "out of the order"),
    ("    python b.py --x\n", "python b.py --x\n", "not an experiment's line"),
])
def test_try_this_layout_refuses_what_is_out_of_order(old, new, message):
    with pytest.raises(ValueError, match=message):
        lessons.try_this(LESSON.replace(old, new, 1))
