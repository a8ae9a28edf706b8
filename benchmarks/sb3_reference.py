"""SB3's trained PPO agent on Breakout, as a reference curve for ppo_breakout_atari.py: its training curve
recomputed from the 8 Monitor files that the run left in DLR-RM/rl-trained-agents
(ppo/BreakoutNoFrameskip-v4_1/{0..7}.monitor.csv, the agent of rl-baselines3-zoo's benchmark.md), on the
statistic and the x axis of our curves, with ours beside it. Only the repository's data is read.

The statistic: the mean score of the last 100 whole games (all 5 lives, unclipped) that ended at or before X
frames. SB3's zoo wraps the raw NoFrameskip env in Monitor before AtariWrapper (make_vec_env puts Monitor
first, then wrapper_class), so a row's `r` is a whole game's real score, as ours (RecordEpisodeStatistics on
the raw env) logs it.

The x axis. Ours counts agent frames: 4 x the agent steps of all 8 envs together when the game ended
(`charts/episodic_return`'s step is those agent steps). Monitor's `l` counts emulator frames, and that includes
the frames that the wrappers spend inside `reset`, which are no agent steps: 1-30 no-ops a game (15.5 on
average), FireReset's FIRE and RIGHT steps after every reset (2 steps x 4 frames, 5 times a game) and
EpisodicLife's NOOP step after each of the 4 lost lives (4 frames): RESET_FRAMES = 71.5 frames a game. SB3's
DummyVecEnv steps its 8 envs in lockstep, so when a game of env e ends, all 8 have taken as many agent steps as
e: the game's x is 8 x (env e's cumulative `l` - 71.5 per game so far). The check printed first: each file's
`l` less its env's share of the run's 10,000,384 agent steps (SB3_AGENT_STEPS) in frames leaves 61-68 frames a
game, which is 71.5 if each env's unfinished last game (agent frames in no row) ran 3-10k frames, no longer than
the games about it. Beside it, the simplest axis: the cumulative sum of `l` over the 8 files merged by time
(t_start + t), the emulator frames of the games finished so far, reset frames included. It puts a game 2.3%
further along at 10M frames (6% at 1M); at the default marks up to 10M that moves SB3's figure by 0.5-2.2
points, by up to 11 between them where the curve climbs fast (9.3M), and past 10M by up to 32 (26.25M; at the
40M-frame record's marks up to 29, at 16M; the CSV holds both axes every 50k frames).

Usage (--monitors: a git dir of DLR-RM/rl-trained-agents, read at --commit, or a folder holding the 8 files):
    python -m benchmarks.sb3_reference --monitors /path/to/rl-trained-agents.git
    python -m benchmarks.sb3_reference --monitors FOLDER --ours benchmarks/results/ppo_breakout_atari-*-curves.csv
    python -m benchmarks.sb3_reference --monitors FOLDER --marks 1e6 1e7 --out /tmp/curve.csv
    python -m benchmarks.sb3_reference --monitors FOLDER --ours RUN-curves.csv --plot /tmp/curves.png

Prints a markdown table (X frames | SB3 on our axis | SB3 on the emulator-frame axis | each of our runs and the
mean of each label's seeds) and writes the SB3 curve, every 50k frames, to --out; --plot draws SB3's curve and
ours on the same axis, every 50k frames, with CleanRL's final score as one point.
"""

import argparse
import bisect
import csv
import itertools
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.core import plots
from benchmarks.core.launch import ROOT
from benchmarks.core.records import load_points, markdown_table, write_csv

COMMIT = "cd35bde610f4045bf2e0731c8f4c88d22df8fc85"  # DLR-RM/rl-trained-agents, the snapshot this was checked on
FOLDER = "ppo/BreakoutNoFrameskip-v4_1"
N_ENVS = 8  # config.yml's n_envs
FRAME_SKIP = 4
RESET_FRAMES = 15.5 + 5 * 2 * FRAME_SKIP + 4 * FRAME_SKIP  # frames a game in no agent step (the docstring's list)
# SB3 collects whole rollouts of 8 x 128 steps until n_timesteps (1e7) is reached: 9,766 of them.
SB3_AGENT_STEPS = 9_766 * N_ENVS * 128
WINDOW = 100
MARKS = [1e6, 2.5e6, 5e6, 8e6, 10e6, 20e6, 40e6]
GRID = 50_000
OUT = ROOT / "benchmarks" / "results" / "sb3" / "BreakoutNoFrameskip-v4_1-curve.csv"
# CleanRL's ppo_atari.py on BreakoutNoFrameskip-v4 at the end of its 10M steps (40M frames), 3 seeds: its PPO
# documentation's benchmark table (docs/rl-algorithms/ppo.md), drawn as one point on --plot.
CLEANRL_FINAL = (40e6, 414.7, 28.1)


@dataclass(frozen=True)
class Game:
    end_time: float  # t_start + t: seconds since the epoch when the game ended
    env: int
    score: float  # Monitor's r
    length: int  # Monitor's l, emulator frames


# ---------------------------------------------------------------------------------------------------------
# Monitor files: parse, merge, put on an x axis
# ---------------------------------------------------------------------------------------------------------
def parse_monitor(text: str) -> tuple[float, list[tuple[float, int, float]]]:
    """A Monitor file's t_start (its '#{json}' first line) and its rows (r, l, t), in file order."""
    header, _, body = text.partition("\n")
    if not header.startswith("#"):
        raise ValueError("not a Monitor file: the first line is not '#{...}'")
    t_start = float(json.loads(header[1:])["t_start"])
    rows = [(float(row["r"]), int(row["l"]), float(row["t"])) for row in csv.DictReader(body.splitlines())]
    return t_start, rows


def merge_monitors(texts: list[str]) -> list[Game]:
    """The games of every Monitor file (texts[i] is env i), in the order they ended: by t_start + t, where
    t_start is each file's own (the envs were made one after the other). Ties keep env order, then file order."""
    games = []
    for env, text in enumerate(texts):
        t_start, rows = parse_monitor(text)
        games += [Game(t_start + t, env, r, length) for r, length, t in rows]
    return sorted(games, key=lambda game: game.end_time)  # stable: ties stay by env, then file order


def emulator_frames(games: list[Game]) -> list[float]:
    """Each game's x as the cumulative sum of `l` over the merged games: the emulator frames of all games
    finished when it ended (the simplest axis: reset frames in, the frames of unfinished games out)."""
    return list(itertools.accumulate(float(game.length) for game in games))


def agent_frames(games: list[Game], n_envs: int, reset_frames: float = RESET_FRAMES) -> list[float]:
    """Each game's x on our axis: n_envs x its env's own agent frames so far (cumulative `l`, less
    `reset_frames` a game), the agent frames of all envs together when envs step in lockstep."""
    own = [0.0] * n_envs
    xs = []
    for game in games:  # in time order, so each env's games come in its own order
        own[game.env] += game.length - reset_frames
        xs.append(n_envs * own[game.env])
    return xs


def mean_last(frames: list[float], scores: list[float], marks: list[float], window: int = WINDOW
              ) -> list[tuple[float | None, int]]:
    """For each mark X: (mean score of the last `window` games with frames <= X, ordered by frames; how many
    games that mean is over: fewer than `window` early on, 0 and None before the first game)."""
    pairs = sorted(zip(frames, scores), key=lambda pair: pair[0])
    xs = [x for x, _ in pairs]
    prefix = list(itertools.accumulate((score for _, score in pairs), initial=0.0))
    out = []
    for mark in marks:
        n = bisect.bisect_right(xs, mark)
        k = min(n, window)
        out.append(((prefix[n] - prefix[n - k]) / k if k else None, k))
    return out


# ---------------------------------------------------------------------------------------------------------
# Our curves (benchmark.py's <name>-curves.csv)
# ---------------------------------------------------------------------------------------------------------
@dataclass
class Run:
    frames: list[float]  # 4 x env_steps of each training game
    scores: list[float]
    end_frames: float  # 4 x the largest env_steps of any row (the final evaluation's, where there is one)


def read_ours(paths: list[Path]) -> dict[tuple[str, int], Run]:
    """(label, seed) -> that run's training games (charts/episodic_return rows), in frames, from curves CSVs."""
    runs: dict[tuple[str, int], Run] = {}
    for path in paths:
        for row in load_points(path):
            run = runs.setdefault((row["label"], int(row["seed"])), Run([], [], 0.0))
            frames = FRAME_SKIP * float(row["env_steps"])
            run.end_frames = max(run.end_frames, frames)
            if row["kind"] == "training" and row["tag"] == "charts/episodic_return":
                run.frames.append(frames)
                run.scores.append(row["value"])
    return runs


def reached(end_frames: float, mark: float) -> bool:
    """Whether a run went to `mark` frames: to within 0.1% of it, since a budget rounds down to whole rollouts
    (2.5M steps in rollouts of 8 x 128 are 2,499,584)."""
    return end_frames >= 0.999 * mark


# ---------------------------------------------------------------------------------------------------------
# Reading the repository, the table, the CSV
# ---------------------------------------------------------------------------------------------------------
def read_monitor_texts(path: Path, commit: str) -> tuple[list[str], str]:
    """The 8 Monitor files' texts and where they came from: a folder holding {0..7}.monitor.csv (or a checkout
    holding ppo/BreakoutNoFrameskip-v4_1/), or a git dir, read at `commit`."""
    for folder in (path, path / FOLDER):
        files = [folder / f"{env}.monitor.csv" for env in range(N_ENVS)]
        if all(file.is_file() for file in files):
            return [file.read_text() for file in files], str(folder)
    git = ["git", f"--git-dir={path}"]
    found = subprocess.run([*git, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        raise ValueError(f"{path} holds neither {{0..{N_ENVS - 1}}}.monitor.csv nor a git repository with "
                         f"commit {commit} (DLR-RM/rl-trained-agents)")
    full = found.stdout.strip()
    texts = [subprocess.run([*git, "show", f"{full}:{FOLDER}/{env}.monitor.csv"], check=True, capture_output=True,
                            text=True).stdout for env in range(N_ENVS)]
    return texts, f"DLR-RM/rl-trained-agents @ {full}, {FOLDER}/"


def cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(games: list[Game], runs: dict[tuple[str, int], Run], marks: list[float], window: int) -> str:
    """The markdown table: X frames | SB3 (our axis) | SB3 (sum of l) | each run | each label's mean."""
    scores = [game.score for game in games]
    sb3_c = mean_last(agent_frames(games, N_ENVS), scores, marks, window)
    sb3_a = mean_last(emulator_frames(games), scores, marks, window)
    columns, cells = [], []
    for label in sorted({label for label, _ in runs}):
        seeds = sorted(seed for lab, seed in runs if lab == label)
        per_seed = [[value if reached(run.end_frames, mark) else None
                     for mark, (value, _) in zip(marks, mean_last(run.frames, run.scores, marks, window))]
                    for run in (runs[(label, seed)] for seed in seeds)]
        columns += [f"{label} seed {seed}" for seed in seeds]
        cells += per_seed
        if len(seeds) > 1:
            columns.append(f"{label} mean")
            cells.append([sum(v) / len(v) if None not in v else None for v in zip(*per_seed)])
    return markdown_table(["X frames", "SB3, agent frames (ours)", "SB3, sum of l", *columns],
                          [[f"{mark / 1e6:g}M", cell(sb3_c[i][0]), cell(sb3_a[i][0]), *(cell(v[i]) for v in cells)]
                           for i, mark in enumerate(marks)])


def curves(games: list[Game], runs: dict[tuple[str, int], Run], window: int = WINDOW, step: int = GRID
           ) -> dict[str, tuple[list[float], list[float]]]:
    """The curves --plot draws, every `step` frames: SB3's on our axis ("SB3") to its last game, and each of our
    runs ("<label> seed <seed>") to as far as it went; a point wherever at least one game has ended."""
    sb3 = agent_frames(games, N_ENVS)
    out = {}
    for name, run in [("SB3", Run(sb3, [game.score for game in games], max(sb3, default=0.0))),
                      *((f"{label} seed {seed}", run) for (label, seed), run in sorted(runs.items()))]:
        if not run.frames:
            continue
        grid = [float(x) for x in range(step, int(run.end_frames) + 1, step)]
        points = [(x, value) for x, (value, _) in zip(grid, mean_last(run.frames, run.scores, grid, window))
                  if value is not None]
        out[name] = ([x for x, _ in points], [value for _, value in points])
    return out


def plot(series: dict[str, tuple[list[float], list[float]]], path: Path, window: int = WINDOW) -> None:
    """A PNG of the curves by frames, with CleanRL's final score (mean +/- std of 3 seeds) as one point."""
    fig, ax = plots.pyplot().subplots(figsize=(8, 4.5))
    for name, (xs, ys) in series.items():
        ax.plot([x / 1e6 for x in xs], ys, label=name + (" (rl-trained-agents, 1 seed)" if name == "SB3" else ""),
                color="tab:gray" if name == "SB3" else None, linewidth=1.2)
    x, mean, std = CLEANRL_FINAL
    ax.errorbar([x / 1e6], [mean], yerr=[std], fmt="o", color="tab:red", capsize=4,
                label="CleanRL ppo_atari.py at 40M frames (3 seeds)")
    ax.set_xlabel("frames (millions; 4 per agent step)")
    ax.set_ylabel(f"score, mean of the last {window} whole games")
    ax.set_title("BreakoutNoFrameskip-v4: training curves by frames")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    plots.save(fig, path)


def write_curve(games: list[Game], path: Path, window: int = WINDOW, step: int = GRID) -> int:
    """SB3's curve every `step` frames to the last game's: the last-`window` mean on our axis (and over how
    many games) and on the sum-of-l axis. Returns the number of rows."""
    scores = [game.score for game in games]
    x_c, x_a = agent_frames(games, N_ENVS), emulator_frames(games)
    grid = list(range(step, int(max(max(x_c), max(x_a))) + step, step))
    on_c, on_a = mean_last(x_c, scores, grid, window), mean_last(x_a, scores, grid, window)
    fields = ["frames", f"mean_last_{window}", "games", f"mean_last_{window}_sum_of_l"]
    write_csv(path, [dict(zip(fields, (x, "" if c is None else f"{c:.2f}", n, "" if a is None else f"{a:.2f}")))
                     for x, (c, n), (a, _) in zip(grid, on_c, on_a)], fields)
    return len(grid)


def report(games: list[Game], source: str) -> str:
    """What was read, and the check of the reset-frame model against the run's known agent steps: each env's
    sum of l less its agent frames, a game, should be RESET_FRAMES less its unfinished last game (agent frames
    that are in no row's l) spread over its games, and that unfinished game no longer than the games about it."""
    per_env = [[game for game in games if game.env == env] for env in range(N_ENVS)]
    own_frames = FRAME_SKIP * SB3_AGENT_STEPS / N_ENVS
    implied = [(sum(game.length for game in g) - own_frames) / len(g) for g in per_env]
    unfinished = [(RESET_FRAMES - v) * len(g) for v, g in zip(implied, per_env)]
    late = [sum(game.length for game in g[-20:]) / len(g[-20:]) for g in per_env]
    hours = (max(game.end_time for game in games) - min(game.end_time for game in games)) / 3600
    return (f"SB3's trained agent: {source}{{0..{N_ENVS - 1}}}.monitor.csv\n"
            f"{len(games)} games ({', '.join(str(len(g)) for g in per_env)} per env), sum of l "
            f"{sum(game.length for game in games):,} emulator frames, {hours:.1f} h of training\n"
            f"check of RESET_FRAMES ({RESET_FRAMES} a game): each env's sum of l less its {own_frames:,.0f} agent "
            f"frames ({SB3_AGENT_STEPS:,} agent steps / {N_ENVS}) leaves {' '.join(f'{v:.1f}' for v in implied)} "
            f"a game,\n  as if each env's unfinished last game had run {min(unfinished):,.0f}-{max(unfinished):,.0f} "
            f"frames (its last 20 games: {min(late):,.0f}-{max(late):,.0f} frames on average)")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--monitors", type=Path, required=True,
                        help="a git dir of DLR-RM/rl-trained-agents (read at --commit), a checkout of it, or a "
                             "folder holding 0.monitor.csv ... 7.monitor.csv")
    parser.add_argument("--commit", default=COMMIT, help="the commit to read from a git dir (default: %(default)s)")
    parser.add_argument("--ours", type=Path, nargs="*", default=[],
                        help="our curves CSVs (benchmark.py's <name>-curves.csv), shown beside SB3's")
    parser.add_argument("--marks", type=float, nargs="+", default=MARKS, help="the X frames of the table")
    parser.add_argument("--window", type=int, default=WINDOW, help="games in the mean (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT, help="SB3's curve CSV (default: %(default)s)")
    parser.add_argument("--plot", type=Path, default=None,
                        help="also draw SB3's curve and ours by frames, with CleanRL's final, into this PNG")
    args = parser.parse_args(argv)
    if args.window < 1 or min(args.marks) <= 0:
        parser.error("--window and --marks must be positive")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        texts, source = read_monitor_texts(args.monitors, args.commit)
        games = merge_monitors(texts)
        if any(not any(game.env == env for game in games) for env in range(N_ENVS)):
            raise ValueError("every Monitor file must hold at least one game")
        runs = read_ours(args.ours)
    except (ValueError, KeyError, OSError, subprocess.CalledProcessError) as e:
        print(f"sb3_reference.py: {e}", file=sys.stderr)
        return 2
    print(report(games, source) + "\n")
    print(f"Mean score of the last {args.window} whole games at X frames:")
    print(table(games, runs, args.marks, args.window))
    rows = write_curve(games, args.out, args.window)
    print(f"\nwrote {args.out} ({rows} rows, every {GRID:,} frames)")
    if args.plot:
        plot(curves(games, runs, args.window), args.plot, args.window)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
