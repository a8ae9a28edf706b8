"""Figures in the lessons' docstrings held to the committed record they come from (benchmarks/results/ and the
agents' play logs), as README's tables are: a figure changes only with the data, or this fails."""

import statistics

import ppo_breakout_atari
import ppo_cartpole
import ppo_lunarlander_vec
import ppo_mario_cnn
import ppo_pendulum_continuous
from benchmarks import results
from benchmarks.core.records import curves_path, load_diagnostics, load_points, read_rows
from benchmarks.core.stats import active_seconds, curve_at

RESULTS = results.RESULTS


def doc(module) -> str:
    return " ".join(module.__doc__.split())


def test_mario_what_you_should_see():
    text = doc(ppo_mario_cnn)
    (stop,) = [row for row in load_diagnostics(RESULTS / "ppo_mario_cnn-sweep-simple-lam095-diagnostics.csv")
               if row["tag"] == "losses/stop_iter" and row["part"] == "all"]
    assert (stop["count"], stop["min"], stop["median"], stop["max"]) == (61, 3, 51, 160)
    assert "the 249,856-step run's 61 updates" in text and "3 to 160 of 160 taken, median 51" in text
    (row,) = [row for row in results.ROWS if row.agent == "mario"]
    csv = RESULTS / row.csvs[0]
    seconds, sps, _ = results.training_time([{**r, "csv": csv} for r in read_rows(csv)])
    assert f"({seconds / 60:.0f} min of training in all, {sps:.0f} SPS, on two machines)" in text
    flags = results.play_log("mario")["flags"]
    assert f"whose `--play` reaches it in {flags[0]} of {flags[1]} (agents/mario.play.txt)" in text


def test_breakout_what_you_should_see():
    text = doc(ppo_breakout_atari)
    hours = []
    for name in ("ppo_breakout_atari-long40m", "ppo_breakout_atari-long40m-seed2"):
        points = load_points(curves_path(RESULTS / f"{name}.csv"))
        hours.append(active_seconds([p["wall_seconds"] for p in points], results.LONGEST_SILENCE) / 3600)
    assert f"seeds 1 and 2, {hours[0]:.1f} and {hours[1]:.1f} h of training across sessions" in text
    for name, budget in (("bf16", "(`--total-timesteps 500000 --no-cuda`, {} min a seed)"),
                         ("bf16-10M", "(39-60; {} min a seed)")):
        rows = read_rows(RESULTS / f"ppo_breakout_atari-{name}.csv")
        minutes = statistics.fmean(float(r["wall_seconds"]) for r in rows)
        assert budget.format(round(minutes / 60)) in text, name


def at(name: str, step: int) -> list[float]:
    """Each seed's rolling mean of its last 20 training episodes at `step`, from the committed curves CSV (what
    `python -m benchmarks.summary ... --at-steps` prints)."""
    points = load_points(curves_path(RESULTS / f"{name}.csv"))
    return [mean for mean, _ in curve_at(points, "charts/episodic_return", 20, step).values()]


def test_the_mlp_lessons_returns_by_step():
    cartpole = doc(ppo_cartpole)
    ten, twenty_five = at("ppo_cartpole", 10_000), at("ppo_cartpole", 25_000)
    assert (f"{statistics.fmean(ten):.0f} at 10k steps, {statistics.fmean(twenty_five):.0f} at 25k "
            f"({min(twenty_five):.0f}-{max(twenty_five):.0f}), 500 on every seed at 50k and at the end") in cartpole
    assert at("ppo_cartpole", 50_000) == at("ppo_cartpole", 100_000) == [500.0] * 5
    dips = {step: min(at("ppo_cartpole", step)) for step in range(50_000, 100_001, 10_000)}
    assert f"seed 3 dipped to {min(dips.values()):.0f} at {min(dips, key=dips.get) // 1000}k" in cartpole
    lunar = doc(ppo_lunarlander_vec)
    figures = [statistics.fmean(at("ppo_lunarlander_vec", step)) for step in (10_000, 100_000, 200_000, 500_000)]
    spread = at("ppo_lunarlander_vec", 200_000)
    assert (f"{figures[0]:.0f} at 10k steps, {figures[1]:.0f} at 100k, {figures[2]:.0f} at 200k "
            f"({min(spread):.0f}-{max(spread):.0f}), {figures[3]:.0f} at 500k") in lunar
    pendulum = doc(ppo_pendulum_continuous)
    pairs = [" / ".join(f"{statistics.fmean(at(f'ppo_pendulum_continuous-{o}', step)):.0f}" for o in ("clip", "kl"))
             for step in (10_000, 50_000, 100_000)]
    assert f"{pairs[0]} at 10k steps, {pairs[1]} at 50k, {pairs[2]} at 100k" in pendulum
