"""Figures in the lessons' docstrings held to the committed record they come from (benchmarks/results/ and the
agents' play logs), as README's tables are: a figure changes only with the data, or this fails."""

import ast
import inspect
import math
import re
import statistics
from importlib import metadata

import gymnasium as gym
import torch
from gymnasium.utils.save_video import capped_cubic_video_schedule

import ppo_breakout_atari
import ppo_cartpole
import ppo_lunarlander_vec
import ppo_mario_cnn
import ppo_pendulum_continuous
from benchmarks import results
from benchmarks.core.records import curves_path, load_diagnostics, load_points, read_csv, read_rows
from benchmarks.core.stats import active_seconds, curve_at, diagnostic_ranges
from course import lessons
from course.lessons import LESSONS, cli_fields

RESULTS = results.RESULTS


def doc(module) -> str:
    return " ".join(module.__doc__.split())


MARIO_IN_FULL = "### `ppo_mario_cnn.py`: what you should see, in full"
MARIO_LONG = "ppo_mario_cnn-long"  # run (a) of the settings' sweep, resumed to the flag: the lesson's figure


def mario_in_full() -> str:
    """benchmarks/README.md's subsection that holds what ppo_mario_cnn.py's docstring once said in full (every
    figure, where each default comes from, the commands), joined into one line, up to the next heading."""
    text = (RESULTS.parent / "README.md").read_text()
    start = text.index(MARIO_IN_FULL + "\n")
    end = re.compile(r"^#{2,3} ", re.M).search(text, start + len(MARIO_IN_FULL)).start()
    return " ".join(text[start:end].split())


def mario_long_run() -> dict:
    """The run to the flag as the docstring rounds it: its mean x (the last 100 training episodes) at 250k and 500k
    steps, its steps and training time, its flags at the end (the last 100 training episodes, the last evaluation),
    the x of the flag, and its diagnostics (one seed: each range is that seed's)."""
    points = load_points(curves_path(RESULTS / f"{MARIO_LONG}.csv"))
    x = {step: curve_at(points, "charts/x_pos", 100, step)["1"][0] for step in (250_000, 500_000)}
    (row,) = [row for row in results.ROWS if row.agent == "mario"]
    assert row.csvs == (f"{MARIO_LONG}.csv",)
    csv = RESULTS / row.csvs[0]
    (run,) = read_rows(csv)
    seconds, _, _ = results.training_time([{**run, "csv": csv}])
    episodes = read_csv(RESULTS / f"{MARIO_LONG}-episodes.csv", {"x_pos": int, "flag": int}, "episodes CSV")
    evaluations = read_csv(RESULTS / f"{MARIO_LONG}-evaluations.csv", {"step": int, "flag_rate": float}, "evaluations")
    (flag_x,) = {e["x_pos"] for e in episodes if e["flag"]}
    ranges = {(r["tag"], r["part"]): r
              for r in diagnostic_ranges(load_diagnostics(RESULTS / f"{MARIO_LONG}-diagnostics.csv"))}
    return {"x": x, "steps": int(run["total_steps"]), "seconds": seconds, "flag_x": flag_x,
            "last_100_flags": sum(e["flag"] for e in episodes[-100:]), "last_evaluation": evaluations[-1],
            "stop_iter": ranges["losses/stop_iter", "all"], "entropy": ranges["losses/entropy", "second half"]}


def test_mario_what_you_should_see_in_full():
    """The figures that moved from the docstring into benchmarks/README.md's subsection (the 249,856-step run's
    diagnostics, the run to the flag's time, the shipped policy's play), and those behind the docstring's rounding."""
    text = mario_in_full()
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
    run = mario_long_run()
    x, evaluation, stop_iter = run["x"], run["last_evaluation"], run["stop_iter"]
    assert (f"about 1,000 at 250,000 steps ({x[250_000]:,.0f} at 249,856) and about 2,000 at 500,000 "
            f"({x[500_000]:,.0f}); by about 820,000 steps (the run's end, {run['steps']:,}), after about 2.5 hours of "
            f"training (the {seconds / 60:.0f} min above)") in text
    assert (f"({run['last_100_flags']} of the last 100 training episodes, {evaluation['flag_rate'] * 20:.0f} of the "
            "last 20 evaluation episodes)") in text
    assert (f"(a median of {stop_iter['median']:.0f} steps taken over the run's {stop_iter['counts'][0]} updates)"
            in text)
    assert f"toward about 0.4 (its median over the second half, {run['entropy']['median']:.2f})" in text


def test_mario_what_you_should_see():
    """The docstring's few figures, rounded, each recomputed from the record: the run to the flag (seed 1), its
    curve, episodes, evaluations, training time and diagnostics, and the action set's size; at most 3 sentences and
    12 numerals."""
    lines = ppo_mario_cnn.__doc__.splitlines()
    start = lines.index("What you should see") + 1
    text = " ".join(" ".join(lines[start:lines.index("", start)]).split())
    assert len(re.findall(r"\d+(?:[.,]\d+)*", text)) <= 12 and len(re.findall(r"[.?!](?:\s|$)", text)) <= 3
    run = mario_long_run()
    assert all(abs(run["x"][step] - target) <= 0.05 * target for step, target in ((250_000, 1000), (500_000, 2000)))
    assert round(run["steps"], -4) == 820_000 and round(run["seconds"] / 3600 * 2) / 2 == 2.5
    last = run["last_evaluation"]
    assert run["last_100_flags"] > 50 and last["step"] == run["steps"] and last["flag_rate"] > 0.5
    assert (f"Mario's x position, averaged over the recent episodes (the flag stands at x {run['flag_x']:,}), climbs "
            "to about 1,000 by 250,000 steps and about 2,000 by 500,000, and by about 820,000 steps, some 2.5 hours "
            "on 2 CPU cores, he reaches the flag in over half of his episodes.") in text
    args = ppo_mario_cnn.Args()
    actions = len(ppo_mario_cnn.ACTION_SETS[args.action_type])
    assert run["stop_iter"]["median"] <= args.train_pi_iters / 2  # most updates stop early, well before the last step
    assert round(run["entropy"]["median"], 1) == 0.4
    assert (f"the KL stop ends most of the policy's updates well before their {args.train_pi_iters} steps, while the "
            f"entropy falls from ln {actions} = {math.log(actions):.2f} (a uniform pick among the actions) toward "
            "about 0.4.") in text
    (figure,) = [lesson.figures for lesson in LESSONS if lesson.script == "ppo_mario_cnn.py"][0]
    assert figure.path == f"benchmarks/results/{MARIO_LONG}.png" and f"The curve is {figure.path};" in text


BREAKOUT_IN_FULL = "### `ppo_breakout_atari.py`: what you should see, in full"


def breakout_in_full() -> str:
    """benchmarks/README.md's subsection that holds what ppo_breakout_atari.py's docstring once said in full (every
    figure, where each default comes from, the commands), joined into one line, up to the next heading."""
    text = (RESULTS.parent / "README.md").read_text()
    start = text.index(BREAKOUT_IN_FULL + "\n")
    end = re.compile(r"^#{2,3} ", re.M).search(text, start + len(BREAKOUT_IN_FULL)).start()
    return " ".join(text[start:end].split())


def breakout_hours() -> list[float]:
    """The training hours of the default's two 40M-frame runs (seeds 1 and 2), stops and pauses left out."""
    hours = []
    for name in ("ppo_breakout_atari-long40m-constclip", "ppo_breakout_atari-long40m-constclip-seed2"):
        points = load_points(curves_path(RESULTS / f"{name}.csv"))
        hours.append(active_seconds([p["wall_seconds"] for p in points], results.LONGEST_SILENCE) / 3600)
    return hours


def breakout_ranges() -> dict:
    """{(tag, part): range} of the 2M-frame default runs' diagnostics, as `benchmarks.diagnostics` reads them (the
    lowest 5th and the highest 95th percentile of the seeds, the median of their medians)."""
    return {(r["tag"], r["part"]): r
            for r in diagnostic_ranges(load_diagnostics(RESULTS / "ppo_breakout_atari-constclip-diagnostics.csv"))}


def test_breakout_what_you_should_see():
    """The docstring's few figures, rounded, each recomputed from the record: the 2M-frame default runs' rows,
    curves and diagnostics (2 seeds), and the 40M-frame default runs' training time and final scores; at most 3
    sentences and 12 numerals."""
    lines = ppo_breakout_atari.__doc__.splitlines()
    start = lines.index("What you should see") + 1
    text = " ".join(" ".join(lines[start:lines.index("", start)]).split())
    assert len(re.findall(r"\d+(?:[.,]\d+)*", text)) <= 12 and len(re.findall(r"[.?!](?:\s|$)", text)) <= 3
    args = ppo_breakout_atari.Args()
    frames = inspect.signature(ppo_breakout_atari.MaxAndSkip).parameters["skip"].default
    rows = read_rows(RESULTS / "ppo_breakout_atari-constclip.csv")
    (steps,) = {int(r["total_steps"]) for r in rows}
    batch = args.num_envs * args.num_steps
    assert len(rows) == 2 and steps == 500_000 // batch * batch and round(steps * frames / 1e6) == 2
    minutes = statistics.fmean(float(r["wall_seconds"]) for r in rows) / 60
    start_score, end_score = (statistics.fmean(at("ppo_breakout_atari-constclip", s)) for s in (10_000, 500_000))
    assert round(start_score) == 1 and round(end_score) == 13
    held = [last_episodes(name, seed, 100) for name, seed in (("ppo_breakout_atari-long40m-constclip", "1"),
                                                              ("ppo_breakout_atari-long40m-constclip-seed2", "2"))]
    assert max(breakout_hours()) < 5 and min(held) > 400
    assert (f"On the CPU as in Usage (2M frames, about {round(minutes)} minutes on 2 CPU cores) the score, the mean "
            f"of the last 20 whole games, climbs from about 1 to about 13; the published 40M frames took under 5 "
            f"hours a seed and ended above 400.") in text
    assert "python ppo_breakout_atari.py --total-timesteps 500000 --no-cuda" in ppo_breakout_atari.__doc__  # Usage
    ranges = breakout_ranges()
    kl, clip = ranges["losses/approx_kl", "all"], ranges["losses/clipfrac", "all"]
    assert kl["p95"] < 0.004 and round(kl["p95"], 3) == 0.004 and clip["p95"] < 0.14 and round(clip["p95"], 2) == 0.14
    for tag in ("losses/approx_kl", "losses/clipfrac"):  # smaller over the second half: its median and its top
        assert all(ranges[tag, "second half"][key] < ranges[tag, "all"][key] for key in ("median", "p95")), tag
    assert ("In a healthy update pi moves little: approx_kl below about 0.004 and clipfrac below about 0.14, both "
            "smaller in the second half as the learning rate falls.") in text
    figure = [lesson.figures for lesson in LESSONS if lesson.script == "ppo_breakout_atari.py"][0][0]
    assert f"Curves: {figure.path} and the longer runs' beside it;" in text


def test_breakout_figures_in_full():
    """The figures that moved from the docstring into benchmarks/README.md's subsection, and the ones behind the
    docstring's rounding of them."""
    text = breakout_in_full()
    hours = breakout_hours()
    assert f"seeds 1 and 2, {hours[0]:.1f} and {hours[1]:.1f} h of training across sessions" in text
    # each run's last 100 whole games at 10M, 20M and 40M frames (one seed a run), held and annealed (--anneal-clip)
    figures = {name: [f"{at(f'ppo_breakout_atari-{name}', frames // 4, window=100)[0]:.0f}"
                      for frames in (10_000_000, 20_000_000, 40_000_000)]
               for name in ("long40m-constclip", "long40m-constclip-seed2", "long40m", "long40m-seed2")}
    held = [f"{a} / {b}" for a, b in zip(figures["long40m-constclip"], figures["long40m-constclip-seed2"])]
    annealed = ", ".join(f"{a} / {b}" for a, b in zip(figures["long40m"], figures["long40m-seed2"]))
    assert f"{held[0]} at 10M frames, {held[1]} at 20M, {held[2]} at 40M; with `--anneal-clip` {annealed}" in text
    for name, budget in (("constclip", "(`--total-timesteps 500000 --no-cuda`, {} min a seed;"),
                         ("bf16-10M", "(39-60; {} min a seed)")):
        rows = read_rows(RESULTS / f"ppo_breakout_atari-{name}.csv")
        minutes = statistics.fmean(float(r["wall_seconds"]) for r in rows)
        assert budget.format(round(minutes / 60)) in text, name
    # at 2M frames: the default's two seeds by step (the mean of their last 20 whole games), the annealed at the end
    short = [statistics.fmean(at("ppo_breakout_atari-constclip", step))
             for step in (50_000, 100_000, 200_000, 300_000, 500_000)]
    annealed = statistics.fmean(at("ppo_breakout_atari-bf16", 500_000))
    assert (f"{short[0]:.1f} at 50k steps, {short[1]:.1f} at 100k, {short[2]:.1f} at 200k, {short[3]:.1f} at 300k, "
            f"{short[4]:.1f} at 500k (`--anneal-clip`: {annealed:.1f})") in text
    # the docstring's rounding: the 2M-frame runs' wall time and scores, the 40M-frame runs' hours and final scores
    seconds = [float(r["wall_seconds"]) for r in read_rows(RESULTS / "ppo_breakout_atari-constclip.csv")]
    start = statistics.fmean(at("ppo_breakout_atari-constclip", 10_000))
    assert (f"(2M frames, the default's two seeds, {seconds[0]:.0f} and {seconds[1]:.0f} s of wall time: about "
            f"{statistics.fmean(seconds) / 60:.0f} minutes) the score climbs from about 1 ({start:.1f} at 10k steps) "
            f"to about 13 ({short[4]:.1f} at 500k); the 40M-frame runs of the default took {hours[0]:.1f} and "
            f"{hours[1]:.1f} h of training (under 5 hours a seed) and ended at "
            f"{last_episodes('ppo_breakout_atari-long40m-constclip', '1', 100):.1f} and "
            f"{last_episodes('ppo_breakout_atari-long40m-constclip-seed2', '2', 100):.1f} (above 400)") in text
    # the speed of bf16 against fp32 behind --precision auto: each share is the seconds quoted beside it, and those
    # are the speed table's (AMX) and the 40M-frame runs' history's (session 2, an AMD EPYC without AMX)
    shares = re.findall(r"(\d+)% (?:of fp32's time with AMX|on an AMD EPYC without it) \(([\d.]+) s against ([\d.]+) s",
                        text)
    assert [share for share, _, _ in shares] == ["61", "69"]
    assert all(round(100 * float(bf16) / float(fp32)) == int(share) for share, bf16, fp32 in shares)
    record = " ".join((RESULTS.parent / "README.md").read_text().split())
    assert "| update (16 minibatches of 256, forward and backward, Adam, logging) | 0.698 | 1.146 |" in record
    assert "took 2.16 s per update (0.93 rollout, 1.24 update), `--precision fp32` 2.76 s (0.97, 1.79)" in record


def test_breakout_healthy_update():
    """The healthy update that moved from the docstring into benchmarks/README.md's subsection: the 2M-frame default
    runs' diagnostics as `benchmarks.diagnostics` reads them (the lowest 5th and the highest 95th percentile of the
    seeds, the median of their medians), to 2 digits, over the whole run and over its second half; and the
    docstring's rounding of approx_kl and clipfrac."""
    text = breakout_in_full()
    ranges = breakout_ranges()

    def spread(tag: str, part: str = "all") -> tuple[str, str, str]:
        found = ranges[f"losses/{tag}", part]
        assert found["counts"] == ([488] * 2 if part == "all" else [244] * 2)
        return tuple(f"{found[key]:.2g}" for key in ("p5", "median", "p95"))

    kl, kl_late = spread("approx_kl"), spread("approx_kl", "second half")
    clip, clip_late = spread("clipfrac"), spread("clipfrac", "second half")
    assert (f"of each seed's 488 updates, the lowest and the highest of 2 seeds; the median of their medians): "
            f"approx_kl {kl[0]}-{kl[2]} (median {kl[1]}; {kl_late[1]} in the second half") in text
    assert f"clipfrac {clip[0]}-{clip[2]} (median {clip[1]}; {clip_late[1]} in the second half" in text
    variance, entropy, value = spread("explained_variance"), spread("entropy", "second half"), spread("value_loss")
    assert (f"explained_variance {variance[0]}-{variance[2]}, entropy from ln 4 = 1.39 down to {entropy[0]}-"
            f"{entropy[2]} in the second half, value_loss {value[0]}-{value[2]} (on sign-clipped rewards)") in text
    assert (f"approx_kl stays below about 0.004 and clipfrac below about 0.14 (their highest 95th percentiles, {kl[2]} "
            f"and {clip[2]}), both smaller over the second half (95th percentiles {kl_late[2]} and {clip_late[2]}; "
            f"medians {kl_late[1]} and {clip_late[1]})") in text


def at(name: str, step: int, window: int = 20) -> list[float]:
    """Each seed's rolling mean of its last `window` training episodes at `step`, from the committed curves CSV
    (what `python -m benchmarks.summary ... --at-steps` prints; with 100, what benchmarks.sb3_reference's table
    reads)."""
    points = load_points(curves_path(RESULTS / f"{name}.csv"))
    return [mean for mean, _ in curve_at(points, "charts/episodic_return", window, step).values()]


CARTPOLE_IN_FULL = "### `ppo_cartpole.py`: what you should see, in full"


def in_full(heading: str) -> str:
    """benchmarks/README.md's subsection under `heading`, joined into one line, up to the next heading."""
    text = (RESULTS.parent / "README.md").read_text()
    start = text.index(heading + "\n")
    end = re.compile(r"^#{2,3} ", re.M).search(text, start + len(heading)).start()
    return " ".join(text[start:end].split())


def numerals(text: str) -> list[str]:
    """The numerals of `text`: maximal runs of digits, with , or . inside (0.69, 50,000, the 2 of ln 2)."""
    return re.findall(r"\d+(?:[.,]\d+)*", text)


def should_see(module) -> str:
    """The docstring's "What you should see" text, joined into one line."""
    lines = module.__doc__.split("What you should see\n", 1)[1].split("\n\n", 1)[0]
    return " ".join(lines.split())


def test_cartpole_returns_by_step_in_full():
    """The returns by step that moved from the docstring into benchmarks/README.md's subsection."""
    cartpole = in_full(CARTPOLE_IN_FULL)
    ten, twenty_five = at("ppo_cartpole", 10_000), at("ppo_cartpole", 25_000)
    assert (f"{statistics.fmean(ten):.0f} at 10k steps, {statistics.fmean(twenty_five):.0f} at 25k "
            f"({min(twenty_five):.0f}-{max(twenty_five):.0f}), 500 on every seed at 50k and at the end") in cartpole
    assert at("ppo_cartpole", 50_000) == at("ppo_cartpole", 100_000) == [500.0] * 5
    dips = {step: min(at("ppo_cartpole", step)) for step in range(50_000, 100_001, 10_000)}
    assert f"seed 3 dipped to {min(dips.values()):.0f} at {min(dips, key=dips.get) // 1000}k" in cartpole


def test_cartpole_what_you_should_see():
    """Three sentences, at most 12 numerals, each figure the record's: 500 on every seed by 50k steps, about 17 s a
    run (the benchmark's wall times round to it), approx_kl and clipfrac under their highest 95th percentiles
    rounded up, the entropy's second-half median."""
    text = should_see(ppo_cartpole)
    assert len(re.findall(r"[.;] [A-Z]|\.$", text)) <= 3 and len(numerals(text)) <= 12
    assert "reaches CartPole's maximum, 500, within about 50,000 steps" in text
    assert at("ppo_cartpole", 50_000) == [500.0] * 5 and ppo_cartpole.Args().total_timesteps == 100_000
    walls = [float(r["wall_seconds"]) for r in read_rows(RESULTS / "ppo_cartpole.csv")]
    assert round(statistics.fmean(walls)) == 17 and "about 17 seconds on 2 CPU cores" in text
    ranges = {(r["tag"], r["part"]): r for r in diagnostic_ranges(
        load_diagnostics(RESULTS / "diagnostics" / "ppo_cartpole-diagnostics.csv"))}
    kl, clipfrac = ranges["losses/approx_kl", "all"]["p95"], ranges["losses/clipfrac", "all"]["p95"]
    assert 0.05 < kl <= 0.06 and 0.3 < clipfrac <= 0.4
    assert "approx_kl below about 0.06, clipfrac below 0.4" in text
    assert round(ranges["losses/entropy", "second half"]["median"], 1) == 0.3
    assert f"ln 2 = {math.log(2):.2f} toward 0.3" in text
    assert f"Curves of {len(walls)} seeds: {LESSONS[0].figures[0].path}" in text


LUNARLANDER_IN_FULL = "### `ppo_lunarlander_vec.py`: what you should see, in full"


def lunarlander_in_full() -> str:
    """benchmarks/README.md's subsection that holds what ppo_lunarlander_vec.py's docstring once said in full (every
    figure, where each default comes from, the commands), joined into one line, up to the next heading."""
    text = (RESULTS.parent / "README.md").read_text()
    start = text.index(LUNARLANDER_IN_FULL + "\n")
    end = re.compile(r"^#{2,3} ", re.M).search(text, start + len(LUNARLANDER_IN_FULL)).start()
    return " ".join(text[start:end].split())


def test_lunarlander_returns_by_step_in_full():
    """The returns by step that moved from the docstring into benchmarks/README.md's subsection."""
    lunar = lunarlander_in_full()
    figures = [statistics.fmean(at("ppo_lunarlander_vec", step)) for step in (10_000, 100_000, 200_000, 500_000)]
    spread = at("ppo_lunarlander_vec", 200_000)
    assert (f"{figures[0]:.0f} at 10k steps, {figures[1]:.0f} at 100k, {figures[2]:.0f} at 200k "
            f"({min(spread):.0f}-{max(spread):.0f}), {figures[3]:.0f} at 500k") in lunar


def test_lunarlander_what_you_should_see():
    """The docstring's few figures, rounded, each recomputed from the record: the committed 3-seed benchmark's rows
    and curves, and the rerun's diagnostics (the lowest 5th / highest 95th percentile of the seeds, the median of
    their medians, as `benchmarks.diagnostics` prints them); at most 3 sentences and 12 numerals."""
    lines = ppo_lunarlander_vec.__doc__.splitlines()
    start = lines.index("What you should see") + 1
    text = " ".join(" ".join(lines[start:lines.index("", start)]).split())
    assert len(re.findall(r"\d+(?:[.,]\d+)*", text)) <= 12 and len(re.findall(r"[.?!](?:\s|$)", text)) <= 3
    name = "ppo_lunarlander_vec"
    rows = read_rows(RESULTS / f"{name}.csv")
    threshold = gym.spec(ppo_lunarlander_vec.Args.env_id).reward_threshold
    assert [float(r["threshold"]) for r in rows] == [threshold] * 3 and {r["window"] for r in rows} == {"20"}
    solved = max(int(r["steps_to_threshold"]) for r in rows)  # every seed's first step past the threshold
    args = ppo_lunarlander_vec.Args()
    total, batch = args.total_timesteps, args.num_envs * args.num_steps
    assert {int(r["total_steps"]) for r in rows} == {total // batch * batch}
    final = statistics.fmean(float(r["final_return"]) for r in rows)
    minutes = statistics.fmean(float(r["wall_seconds"]) for r in rows) / 60
    assert (f"the mean of the last 20 episodes) climbs from about "
            f"{round(statistics.fmean(at(name, 10_000)), -2):.0f} past {threshold:.0f}, gymnasium's \"solved\", "
            f"within about {round(solved / 50_000) * 50_000:,} steps and ends near {round(final, -1):.0f} at "
            f"{total:,} steps, about {round(minutes)} minutes on 2 CPU cores") in text
    ranges = {(r["tag"], r["part"]): r for r in diagnostic_ranges(
        load_diagnostics(RESULTS / "diagnostics" / f"{name}-diagnostics.csv"))}
    assert all(r["counts"] == [488] * 3 for (_, part), r in ranges.items() if part == "all")
    kl, clip = ranges["losses/approx_kl", "all"]["p95"], ranges["losses/clipfrac", "all"]["p95"]
    variance = ranges["losses/explained_variance", "second half"]["median"]
    assert kl < 0.02 == round(kl, 2) and round(clip, 1) == 0.1 and round(variance, 2) == 0.99
    assert ("(approx_kl below about 0.02, clipfrac below about 0.1) while the critic learns: explained_variance "
            "rises to about 0.99") in text
    (figure,) = [lesson.figures for lesson in LESSONS if lesson.script == "ppo_lunarlander_vec.py"][0]
    assert f"Curves of {len(rows)} seeds: {figure.path};" in text


PENDULUM_IN_FULL = "### `ppo_pendulum_continuous.py`: what you should see, in full"
PENDULUM = [f"ppo_pendulum_continuous-{objective}" for objective in ("clip", "kl")]


def pendulum_in_full() -> str:
    """benchmarks/README.md's subsection that holds what ppo_pendulum_continuous.py's docstring once said in full
    (every figure, where each default comes from, the commands), joined into one line, up to the next heading."""
    text = (RESULTS.parent / "README.md").read_text()
    start = text.index(PENDULUM_IN_FULL + "\n")
    end = re.compile(r"^#{2,3} ", re.M).search(text, start + len(PENDULUM_IN_FULL)).start()
    return " ".join(text[start:end].split())


def pendulum_diagnostics(name: str) -> dict:
    """{(tag, part): range} of the rerun's diagnostics, as `benchmarks.diagnostics` prints them (the lowest 5th and
    the highest 95th percentile of the seeds, the median of their medians)."""
    ranges = {(r["tag"], r["part"]): r
              for r in diagnostic_ranges(load_diagnostics(RESULTS / "diagnostics" / f"{name}-diagnostics.csv"))}
    assert all(r["counts"] == ([146] * 3 if part == "all" else [73] * 3) for (_, part), r in ranges.items())
    return ranges


def test_pendulum_returns_by_step_in_full():
    """The returns by step that moved from the docstring into benchmarks/README.md's subsection, and the figures
    behind the docstring's rounding of them."""
    pendulum = pendulum_in_full()
    pairs = [" / ".join(f"{statistics.fmean(at(f'ppo_pendulum_continuous-{o}', step)):.0f}" for o in ("clip", "kl"))
             for step in (10_000, 50_000, 100_000, 200_000, 299_008)]
    assert f"{pairs[0]} at 10k steps, {pairs[1]} at 50k, {pairs[2]} at 100k" in pendulum
    assert f"to about -180 by 100,000 steps ({pairs[2]}) and stays there ({pairs[3]} at 200k, {pairs[4]} at the end)" \
        in pendulum
    seconds = [float(r["wall_seconds"]) for name in PENDULUM for r in read_rows(RESULTS / f"{name}.csv")]
    assert f"({min(seconds):.1f} to {max(seconds):.1f} s a seed)" in pendulum
    clip, kl = (pendulum_diagnostics(name) for name in PENDULUM)
    assert f"(its highest 95th percentile, {clip['losses/approx_kl', 'all']['p95']:.3g})" in pendulum
    assert f"its median is {kl['losses/approx_kl', 'all']['median']:.3g} against d_targ 0.01" in pendulum
    late = " / ".join(f"{ranges['losses/entropy', 'second half']['p95']:.3g}" for ranges in (clip, kl))
    assert f"(the highest 95th percentile over the second half: {late})" in pendulum


def test_pendulum_what_you_should_see():
    """The docstring's few figures, rounded, each recomputed from the record: the committed benchmark's rows and
    curves (3 seeds of each objective; the count itself now in benchmarks/README.md), the rerun's diagnostics, and
    the Agent's own entropy at the start; at most 3 sentences and 12 numerals."""
    lines = ppo_pendulum_continuous.__doc__.splitlines()
    start = lines.index("What you should see") + 1
    text = " ".join(" ".join(lines[start:lines.index("", start)]).split())
    assert len(re.findall(r"\d+(?:[.,]\d+)*", text)) <= 12 and len(re.findall(r"[.?!](?:\s|$)", text)) <= 3
    args = ppo_pendulum_continuous.Args()
    total, batch = args.total_timesteps, args.num_envs * args.num_steps
    rows = {name: read_rows(RESULTS / f"{name}.csv") for name in PENDULUM}
    for name, runs in rows.items():
        assert len(runs) == 3 and {r["window"] for r in runs} == {"20"}, name
        assert {int(r["total_steps"]) for r in runs} == {total // batch * batch}, name
        assert round(statistics.fmean(at(name, 10_000)), -2) == -1200, name
        assert all(abs(statistics.fmean(at(name, step)) + 180) < 10 for step in (100_000, 200_000, total)), name
        assert {round(float(r["wall_seconds"]), -1) for r in runs} == {40}, name
    assert (f"(the mean of the last 20 episodes) climbs from about -1200 to about -180 by 100,000 steps with either "
            f"objective and stays there; the {total:,}-step run takes about 40 seconds on 2 CPU cores.") in text
    clip, kl = (pendulum_diagnostics(name) for name in PENDULUM)
    assert f"{clip['losses/approx_kl', 'all']['p95']:.2g}" == "0.015"
    assert round(kl["losses/approx_kl", "all"]["median"], 3) == args.kl_target == 0.01
    with gym.make(args.env_id) as env:  # the entropy of the untrained policy: log sigma = 0, sigma = 1
        agent = ppo_pendulum_continuous.Agent(env, args.hidden_size)
        entropy = agent.get_action_and_value(torch.zeros(1, *env.observation_space.shape))[2].item()
    assert f"{entropy:.2f}" == "1.42" and torch.all(agent.actor_logstd == 0)
    assert all(ranges["losses/entropy", "second half"]["p95"] < entropy for ranges in (clip, kl))
    from benchmarks import debugging

    last = [by_tag["losses/entropy"][-1][1] for by_tag in debugging.healthy_series("ppo_pendulum_continuous.py").values()]
    assert len(last) >= 5 and round(statistics.median(last), 1) == 0.4  # the healthy seeds' last update, the clip's
    # a Gaussian's (differential) entropy, 0.5 ln(2 pi e sigma^2), is below 0 for a narrow one: sigma = 0.2
    assert 0.5 * math.log(2 * math.pi * math.e * 0.2 ** 2) < 0 < 0.5 * math.log(2 * math.pi * math.e * 0.25 ** 2)
    assert ("A healthy update moves pi a little: approx_kl below about 0.015 with the clip, its median at d_targ = "
            "0.01 with the penalty; the entropy falls from 1.42 (sigma = 1) to about 0.4 with the clip (a narrow "
            "Gaussian's is negative).") in text
    (figure,) = [lesson.figures for lesson in LESSONS if lesson.script == "ppo_pendulum_continuous.py"][0]
    assert f"Curves: {figure.path};" in text


# The --help texts: each figure a flag's help states, held to the record or to the package it comes from.

def help_text(module, field: str) -> str:
    """The help --help prints for `field` of the script's command line: its docstring, joined into one line."""
    (doc,) = [doc for node, doc in cli_fields(ast.parse(inspect.getsource(module))) if node.target.id == field]
    return " ".join(doc.value.value.split())


def test_anneal_clip_help_quotes_the_40m_frame_runs():
    """--anneal-clip's "held 416.2 and ..., annealed 350.2 and 369.8": the last 100 whole games of the 2 x 2 at 40M
    frames (bf16 seeds 1 and 2), and the default it names is the lesson's."""
    def final(name: str) -> float:
        (row,) = read_rows(RESULTS / f"ppo_breakout_atari-{name}.csv")
        return float(row["final_return"])

    held, annealed = [[final(name + seed) for seed in ("", "-seed2")] for name in ("long40m-constclip", "long40m")]
    assert ppo_breakout_atari.Args().anneal_clip is False
    assert (f"off (the default), it stays at --clip-coef as in CleanRL's ppo_atari.py. At 40M frames, the last 100 "
            f"games: held {held[0]:.1f} and {held[1]:.1f}, annealed {annealed[0]:.1f} and {annealed[1]:.1f} (seeds 1 "
            "and 2: too few for an interval") in help_text(ppo_breakout_atari, "anneal_clip")


def test_precision_help_quotes_the_gpu_check():
    """--precision's "bf16 was faster in one of the GPU check's three runs and started Breakout's ratio r_t 1.1e-3
    from 1": the three runs' committed logs (Breakout's SPS at the end of training, fp32 and bf16; bf16's ratio)."""
    logs = [(RESULTS / "gpu" / f"gpu_check-{run}.log").read_text() for run in ("first", "second", "third")]
    sps = [{precision: int(re.search(rf"^breakout {precision}: train .* SPS (\d+)", log, re.M)[1])
            for precision in ("fp32", "bf16")} for log in logs]
    faster = sum(run["bf16"] > run["fp32"] for run in sps)
    (ratio,) = {re.search(r"^breakout bf16: ratio .* max \|r - 1\| = ([\d.e+-]+)", log, re.M)[1] for log in logs}
    number = {1: "one", 2: "two", 3: "three"}
    quoted = (f"where bf16 was faster in {number[faster]} of the GPU check's {number[len(logs)]} runs and started "
              f"Breakout's ratio r_t {float(ratio):.1e} from 1").replace("e-03 ", "e-3 ")
    for script in (ppo_breakout_atari, ppo_mario_cnn):
        assert quoted in help_text(script, "precision"), script.__name__


def test_breakout_help_quotes_the_ale_registration():
    """An evaluation game lasts at most ale-py's 108,000 frames of a NoFrameskip-v4 id, at 4 frames an agent step;
    v4 repeats no action by chance (no sticky actions)."""
    spec = gym.spec(ppo_breakout_atari.Args.env_id)
    skip = inspect.signature(ppo_breakout_atari.MaxAndSkip).parameters["skip"].default
    steps = spec.kwargs["max_num_frames_per_episode"] // skip
    assert f"(each up to {steps // 1000}k steps)" in help_text(ppo_breakout_atari, "eval_episodes")
    assert f"(one step = {skip} frames)" in help_text(ppo_breakout_atari, "total_timesteps")
    assert spec.kwargs["repeat_action_probability"] == 0
    assert "v4 has no sticky actions" in help_text(ppo_breakout_atari, "env_id")


def test_cartpole_video_help_quotes_gymnasiums_schedule():
    """Training records the episodes RecordVideo's default trigger picks: the cubes, 0, 1, 8, 27, ..."""
    first = [episode for episode in range(30) if capped_cubic_video_schedule(episode)]
    assert f"(training: episodes {', '.join(map(str, first))}, ..." in help_text(ppo_cartpole, "capture_video")


def test_mario_help_counts():
    """The action sets' sizes, the policy's gradient steps as passes over the rollout, and the worlds
    gym-super-mario-bros 7.x starts at."""
    sizes = {name: len(buttons) for name, buttons in ppo_mario_cnn.ACTION_SETS.items()}
    assert ppo_mario_cnn.ACTION_SETS["simple"][sizes["right"]:] == [["A"], ["left"]]
    assert (f"right ({sizes['right']} combinations of right, A, B, and NOOP), simple ({sizes['simple']}: adds A and "
            f"left) or complex ({sizes['complex']})") in help_text(ppo_mario_cnn, "action_type")
    args = ppo_mario_cnn.Args()
    passes = args.train_pi_iters * args.minibatch_size / (args.num_envs * args.num_steps)
    assert (f"({args.train_pi_iters} x {args.minibatch_size} = {passes:.0f} passes over it, [UV]'s 10 epochs)"
            in help_text(ppo_mario_cnn, "train_pi_iters"))
    if metadata.version("gym-super-mario-bros").startswith("7."):
        from gym_super_mario_bros._roms.decode_target import decode_target

        def starts(world: int, lost_levels: bool) -> bool:
            try:
                return decode_target((world, 1), lost_levels) is not None
            except ValueError:
                return False

        worlds = [w for w in range(1, 13) if starts(w, False)], [w for w in range(1, 13) if starts(w, True)]
        assert worlds == (list(range(1, 9)), list(range(1, 5)))
        assert "(1-8; the Lost Levels: those gym-super-mario-bros can start at, 1-4 in its 7.x releases)" in \
            help_text(ppo_mario_cnn, "world")


# The "Try this" paragraphs (course.lessons.try_this's layout): a header saying what the figures are, then each
# experiment's command, question, answer and measurement, each figure recomputed here from the committed CSVs of the
# run the command stands for.

def last_episodes(name: str, seed: str, window: int) -> float:
    """The mean of one seed's last `window` training episodes (whole games; Mario: x positions) in the committed
    curves CSV, in the order they were logged; checked against the benchmark row's final_return too."""
    csv = RESULTS / f"{name}.csv"
    values = [p["value"] for p in load_points(curves_path(csv)) if p["kind"] == "training" and p["seed"] == seed]
    (row,) = [r for r in read_rows(csv) if r["seed"] == seed]
    assert int(row["window"]) == window and len(values) >= window
    mean = statistics.fmean(values[-window:])
    assert round(mean, 2) == float(row["final_return"]), (name, seed)
    return mean


def budget(command: str, name: str, batch: int) -> int:
    """The command's --total-timesteps, held to the run's recorded agent steps (whole rollouts of `batch`)."""
    steps = int(command.split("--total-timesteps ")[1].split()[0])
    (total,) = {int(r["total_steps"]) for r in read_rows(RESULTS / f"{name}.csv")}
    assert steps // batch * batch == total, (command, name)
    return steps


def test_breakout_try_this():
    """Epsilon annealed (two seeds) against the default's held epsilon (two seeds), fp32 against bf16 at 40M frames
    (the last 100 whole games; seed 1 both, annealed), and at 2M frames (the last 20, 2 seeds each, annealed): each
    experiment's "Measured" line, laid out as course.lessons.try_this parses it, under its question and answer."""
    header, parsed = lessons.try_this(ast.get_docstring(ast.parse(inspect.getsource(ppo_breakout_atari))))
    assert all(e.predict.endswith("?") and e.answer for e in parsed)
    experiments = {e.command: e.measured for e in parsed}

    def score(name: str, seed: str, window: int) -> float:
        return last_episodes(f"ppo_breakout_atari-{name}", seed, window)

    annealed = [score("long40m", "1", 100), score("long40m-seed2", "2", 100)]
    held = [score("long40m-constclip", "1", 100), score("long40m-constclip-seed2", "2", 100)]
    short = {name: statistics.fmean(score(name, seed, 20) for seed in ("1", "2")) for name in ("bf16", "fp32")}
    long = "python ppo_breakout_atari.py --total-timesteps 10000000 --anneal-clip"
    two_m = "python ppo_breakout_atari.py --total-timesteps 500000 --anneal-clip"
    assert experiments == {
        long: f"{statistics.fmean(annealed):.1f}; the default {statistics.fmean(held):.1f}",
        f"{long} --precision fp32": f"{score('long40m-fp32', '1', 100):.1f}; bf16 {annealed[0]:.1f} (seed 1)",
        f"{two_m} --precision fp32": f"{short['fp32']:.1f}; bf16 {short['bf16']:.1f}",
    }
    args = ppo_breakout_atari.Args()
    skip = inspect.signature(ppo_breakout_atari.MaxAndSkip).parameters["skip"].default
    frames = {}  # each budget in frames, as the header says it, held to the agent steps of the runs it stands for
    for command, names in ((long, ("long40m", "long40m-seed2", "long40m-fp32", "long40m-constclip",
                                   "long40m-constclip-seed2")),
                           (two_m, ("bf16", "fp32"))):
        (frames[command],) = {budget(command, f"ppo_breakout_atari-{name}", args.num_envs * args.num_steps) * skip
                              for name in names}
    assert header == (f"Try this (predict, then run; \"Measured\": the mean of the last 100 whole games at "
                      f"{frames[long] // 1_000_000}M frames, last 20 at {frames[two_m] // 1_000_000}M on 2 CPU cores; "
                      f"1-2 seeds)")
    # the 2M-frame answer's speeds: each recipe's two seeds' overall steps a second, as their rows record them
    sps = {name: sorted(round(float(r["sps"])) for r in read_rows(RESULTS / f"ppo_breakout_atari-{name}.csv"))
           for name in ("bf16", "fp32")}
    (answer,) = [e.answer for e in parsed if e.command == f"{two_m} --precision fp32"]
    assert (f"ran faster, {sps['bf16'][0]}-{sps['bf16'][-1]} steps a second against {sps['fp32'][0]}-{sps['fp32'][-1]}"
            in answer)


def test_mario_try_this():
    """The settings sweep's three 250k-step runs, one seed each: the defaults, lambda 1.0 and the 5 right-moving
    actions; the mean x of the last 100 training episodes, and the episodes at the flag of all the run's. Each
    experiment asks its question (Predict, a question) and answers it before its measurement."""
    header, found = lessons.try_this(ppo_mario_cnn.__doc__)
    assert all(e.predict.endswith("?") and e.answer for e in found)
    experiments = {e.command: e.measured for e in found}
    assert len(experiments) == len(found)
    args = ppo_mario_cnn.Args()
    assert (args.gae_lambda, args.action_type, args.anneal_lr) == (0.95, "simple", False)  # run (a)'s settings
    runs = {"": ("simple-lam095", "the defaults: "), " --gae-lambda 1.0": ("simple-lam100", ""),
            " --action-type right": ("right-lam095", "")}
    expected, steps = {}, set()
    for flags, (run, prefix) in runs.items():
        name = f"ppo_mario_cnn-sweep-{run}"
        command = f"python ppo_mario_cnn.py --total-timesteps 249856{flags}"
        steps.add(budget(command, name, args.num_envs * args.num_steps))
        assert [r["seed"] for r in read_rows(RESULTS / f"{name}.csv")] == ["1"]
        flags_at = [row["flag"] for row in read_csv(RESULTS / f"{name}-episodes.csv", {"flag": int}, "episodes CSV")]
        expected[command] = (f"{prefix}{last_episodes(name, '1', 100):,.0f}; the flag in {sum(flags_at)} of "
                             f"{len(flags_at):,} episodes")
    assert experiments == expected
    (total,) = steps
    assert header == ("Try this (predict first, then run; each \"Measured\" is the run's mean x over its last 100 "
                      f"training episodes at {total:,} steps, then its episodes at the flag; seed 1, one run each: too "
                      "few to be sure of any difference)")


def test_pendulum_clip_vloss_note_quotes_hoppers_study():
    """Why --clip-vloss is off (once the comment above it, now benchmarks/README.md's subsection): "all 2440 of
    Hopper's study", the updates of the study's clip-vloss runs, in none of which losses/vf_clipfrac was above 0
    (their `acted` counts in hopper-runs.csv)."""
    from benchmarks import ablations
    runs = [r for r in read_csv(ablations.RESULTS / "hopper-runs.csv") if r["setting"] == "clip-vloss"]
    k, n = ablations.acted_total(runs).split("/")
    assert k == "0" and len(runs) == 5
    assert f"all {n} of Hopper's study" in pendulum_in_full()
