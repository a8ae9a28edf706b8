"""Figures in the lessons' docstrings held to the committed record they come from (benchmarks/results/ and the
agents' play logs), as README's tables are: a figure changes only with the data, or this fails."""

import ast
import inspect
import re
import statistics
from importlib import metadata

import gymnasium as gym
from gymnasium.utils.save_video import capped_cubic_video_schedule

import ppo_breakout_atari
import ppo_cartpole
import ppo_lunarlander_vec
import ppo_mario_cnn
import ppo_pendulum_continuous
from benchmarks import results
from benchmarks.core.records import curves_path, load_diagnostics, load_points, read_csv, read_rows
from benchmarks.core.stats import active_seconds, curve_at, diagnostic_ranges

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
    for name in ("ppo_breakout_atari-long40m-constclip", "ppo_breakout_atari-long40m-constclip-seed2"):
        points = load_points(curves_path(RESULTS / f"{name}.csv"))
        hours.append(active_seconds([p["wall_seconds"] for p in points], results.LONGEST_SILENCE) / 3600)
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


def test_breakout_healthy_update():
    """The docstring's healthy update: the 2M-frame default runs' diagnostics as `benchmarks.diagnostics` reads
    them (the lowest 5th and the highest 95th percentile of the seeds, the median of their medians), to 2 digits,
    over the whole run and over its second half."""
    text = doc(ppo_breakout_atari)
    ranges = {(r["tag"], r["part"]): r
              for r in diagnostic_ranges(load_diagnostics(RESULTS / "ppo_breakout_atari-constclip-diagnostics.csv"))}

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


def at(name: str, step: int, window: int = 20) -> list[float]:
    """Each seed's rolling mean of its last `window` training episodes at `step`, from the committed curves CSV
    (what `python -m benchmarks.summary ... --at-steps` prints; with 100, what benchmarks.sb3_reference's table
    reads)."""
    points = load_points(curves_path(RESULTS / f"{name}.csv"))
    return [mean for mean, _ in curve_at(points, "charts/episodic_return", window, step).values()]


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


# The --help texts: each figure a flag's help states, held to the record or to the package it comes from.

def help_text(module, field: str) -> str:
    """The help --help prints for `field` of the script's Args: its docstring, joined into one line."""
    tree = ast.parse(inspect.getsource(module))
    (args,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Args"]
    (doc,) = [doc for node, doc in zip(args.body, args.body[1:])
              if isinstance(node, ast.AnnAssign) and node.target.id == field]
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


# The "Try this" paragraphs: a header saying what the figures are, then one `<command>  # <what it did>` line per
# experiment, each figure recomputed here from the committed CSVs of the run the command stands for.

def try_this(module) -> tuple[str, dict[str, str]]:
    """The module docstring's "Try this" paragraph, placed right after "What you should see": its header line and
    each experiment's command -> what it did (the text after `  # `)."""
    lines = ast.get_docstring(ast.parse(inspect.getsource(module))).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Try this ("))
    headers = [line for line in lines[:start] if line and not line.startswith(" ")]
    assert headers[-1] == "What you should see" and lines[start - 1] == ""
    experiments = {}
    for line in lines[start + 1:lines.index("", start)]:
        assert line.startswith("    python ") and len(line) <= 120, line
        command, did = line.strip().split("  # ")
        experiments[command] = did
    assert lines[lines.index("", start) + 1].startswith("Differs from ")
    return lines[start], experiments


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
    (the last 100 whole games; seed 1 both, annealed), and at 2M frames (the last 20, 2 seeds each, annealed)."""
    header, experiments = try_this(ppo_breakout_atari)

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
    assert header == (f"Try this (mean of the last 100 whole games at {frames[long] // 1_000_000}M frames, last 20 at "
                      f"{frames[two_m] // 1_000_000}M on 2 CPU cores; 1-2 seeds: too few to be sure)")


def test_mario_try_this():
    """The settings sweep's three 250k-step runs, one seed each: the defaults, lambda 1.0 and the 5 right-moving
    actions; the mean x of the last 100 training episodes, and the episodes at the flag of all the run's."""
    header, experiments = try_this(ppo_mario_cnn)
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
    assert header == (f"Try this (mean x of the last 100 training episodes at {total:,} steps, seed 1: one seed each, "
                      "too few for significance)")


def test_pendulum_clip_vloss_comment_quotes_hoppers_study():
    """The comment above --clip-vloss: "all 2440 of Hopper's study", the updates of the study's clip-vloss runs, in
    none of which losses/vf_clipfrac was above 0 (their `acted` counts in hopper-runs.csv)."""
    from benchmarks import ablations
    runs = [r for r in read_csv(ablations.RESULTS / "hopper-runs.csv") if r["setting"] == "clip-vloss"]
    k, n = ablations.acted_total(runs).split("/")
    assert k == "0" and len(runs) == 5
    assert f"all {n} of Hopper's study" in " ".join(inspect.getsource(ppo_pendulum_continuous.Args).split())
