"""README's results table (and benchmarks/README.md's, with every row and the published figures), written from the
committed record: the benchmark CSVs under benchmarks/results/ and the shipped agents' play logs (agents/*.play.txt,
which README's "Watch" paragraph quotes too), so that README and the record cannot disagree, and a figure changes
only when the data does.

    python -m benchmarks.results            # print the table
    python -m benchmarks.results --write    # write it into README.md and benchmarks/README.md (results-table markers)
    python -m benchmarks.results --check    # exit 1 if either is not what the record gives

Each cell says its statistic. The final training score is the mean of each seed's last `window` training
episodes (the benchmark's --window; the episodes are played by the exploring, sampled policy), and the +/- the
sample standard deviation of those per-seed means over the seeds. The final policy is `--play` of the final
checkpoint: the benchmark's --play-episodes where it ran them (greedy, +/- over the seeds), or the committed play
log of the agent shipped from that run (agents/README.md: +/- over its episodes; the MLP lessons play greedily,
the pixel lessons sample from pi). Training time: for a run timed from its launch to its exit, those seconds;
for a run stopped and resumed across sessions, its curves CSV's logged points, every interval between two of
them of at most 10 minutes summed (stats.active_seconds: a stop before a resume and a longer pause are left
out); SPS is the env steps over that time. The processor is the record's, where it says; a run on several
machines names them all, and its SPS is no machine's own. Each lesson's default recipe leads its rows; a row
with a changed flag names the flags that change what is learned (against today's defaults) and its seeds.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass

from benchmarks.core.launch import ROOT
from benchmarks.core.records import PLAY_LINE, curves_path, load_points, markdown_table, read_rows
from benchmarks.core.stats import active_seconds, mean_std
from tools.diff_matrix import between_markers
from course.lessons import LESSONS

RESULTS = ROOT / "benchmarks" / "results"
AGENTS = ROOT / "agents"
README = ROOT / "README.md"
RECORD = ROOT / "benchmarks" / "README.md"
MARKER = "results-table"
LONGEST_SILENCE = 600.0  # seconds: a longer gap between a run's logged points is a stop or a pause

# The processors the record names (benchmarks/README.md, at the anchor given), by a short key.
MACHINES = {
    "unrecorded": "not recorded",
    "amx": "a CPU with AMX (model not recorded)",
    "xeon-amx": "an Intel Xeon with AMX",
    "epyc": "AMD EPYC, AVX512-BF16, no AMX",
    "epyc-then-amx": "AMD EPYC (no AMX) to 294,912 steps, then an Intel Xeon with AMX",
    "epyc-family26-then-amx": "seed 1: not recorded for its first 4.3M steps, its last 5.7M on an AMD EPYC of CPU "
                              "family 26 (AVX512-BF16, no AMX); seed 2: an Intel Xeon with AMX",
}


@dataclass(frozen=True)
class Row:
    """One row: the benchmark CSVs of one recipe (their seeds together), where the record explains them, the
    flags that differ from the lesson's defaults today ("" for the default; the budget, --total-timesteps, is its
    own column, and how the envs were stepped, --vectorization-mode, and --no-cuda are left to the record), what
    the budget and an episode are, the processor (a key of MACHINES) and the agent shipped from this run, if one
    was."""

    csvs: tuple[str, ...]
    anchor: str
    flags: str
    budget: str
    episode: str
    machine: str
    agent: str | None = None
    published: str = "as above"  # benchmarks/README.md's column: the published figure for the same env ([n]: there)
    readme: bool = True  # in README's table too (benchmarks/README.md's holds every row)


BREAKOUT = ("414.7 +/- 28.1 at 10M steps = 40M frames, CleanRL `ppo_atari.py` [1]; 398.0 +/- 33.3 at 10M steps, "
            "SB3 zoo PPO [2]; 274.8 at 40M frames, the PPO paper (Table 6)")
ROWS = [
    Row(("ppo_cartpole.csv",), "cartpole-v1-with-ppo_cartpolepy", "", "steps", "episodes", "unrecorded",
        published="490.0 +/- 6.1 at 500k steps, CleanRL `ppo.py` [1]; 500 +/- 0 at 100k steps, SB3 zoo PPO [2]"),
    Row(("ppo_lunarlander_vec.csv",), "lunarlander-v3-with-ppo_lunarlander_vecpy", "", "steps", "episodes",
        "unrecorded", published="242.1 +/- 31.8 at 1M steps (v2, deterministic), SB3 zoo PPO [2]"),
    Row(("ppo_pendulum_continuous-clip.csv",), "pendulum-v1-with-ppo_pendulum_continuouspy", "--clip-vloss",
        "steps", "episodes", "unrecorded",
        published="-172.2 +/- 104.2 at 100k steps (gSDE, deterministic), SB3 zoo PPO [2]"),
    Row(("ppo_pendulum_continuous-kl.csv",), "pendulum-v1-with-ppo_pendulum_continuouspy",
        "--objective kl --clip-vloss", "steps", "episodes", "unrecorded",
        published="as above (no published adaptive-KL figure for Pendulum)"),
    Row(("ppo_breakout_atari-long40m-constclip.csv", "ppo_breakout_atari-long40m-constclip-seed2.csv"),
        "40m-frames-on-2-cpu-cores-the-published-budget", "", "agent steps (40M frames)", "whole games",
        "epyc-family26-then-amx", agent="breakout", published=BREAKOUT + " (their budget)"),
    Row(("ppo_breakout_atari-long40m.csv", "ppo_breakout_atari-long40m-seed2.csv"),
        "40m-frames-on-2-cpu-cores-the-published-budget", "--anneal-clip", "agent steps (40M frames)",
        "whole games", "epyc", agent="breakout-annealed"),
    Row(("ppo_breakout_atari-long40m-fp32.csv",), "bf16-and-fp32-at-the-end-of-training",
        "--anneal-clip --precision fp32", "agent steps (40M frames)", "whole games", "unrecorded"),
    Row(("ppo_breakout_atari-constclip.csv",), "2m-frames-on-2-cpu-cores-bf16-and-fp32", "",
        "agent steps (2M frames)", "whole games", "xeon-amx"),
    Row(("ppo_breakout_atari-bf16.csv",), "2m-frames-on-2-cpu-cores-bf16-and-fp32", "--anneal-clip",
        "agent steps (2M frames)", "whole games", "amx"),
    Row(("ppo_breakout_atari-fp32.csv",), "2m-frames-on-2-cpu-cores-bf16-and-fp32",
        "--anneal-clip --precision fp32", "agent steps (2M frames)", "whole games", "unrecorded", readme=False),
    Row(("ppo_breakout_atari-bf16-10M.csv",), "10m-frames-on-2-cpu-cores",
        "--anneal-clip --eval-every 500", "agent steps (10M frames)", "whole games", "amx",
        published="as above (a quarter of their 40M frames)"),
    Row(("ppo_mario_cnn-long.csv",), "to-the-flag-run-a-resumed",
        "--eval-every 20 --eval-episodes 20 --target-flag-rate 0.5", "steps", "episodes: x position", "epyc-then-amx",
        agent="mario", published="no standard benchmark (the flag is at x 3,161); SB3 PPO agents with setups of their "
                                 "own: flag in 100/100 episodes at 4.5M steps [3], first flag at ~7M env steps [4]"),
    Row(("ppo_mario_cnn-simple.csv",), "a-short-run-on-2-cpu-cores", "--anneal-lr --eval-every 5", "steps",
        "episodes: x position", "unrecorded", readme=False),
    Row(("ppo_mario_cnn-right.csv",), "a-short-run-on-2-cpu-cores", "--anneal-lr --eval-every 5 --action-type right",
        "steps", "episodes: x position", "unrecorded", readme=False),
]

EPISODE = re.compile(r"^episode (\d+)/(\d+): return (-?[\d.]+)", re.MULTILINE)
FLAGS = re.compile(r"flag reached in (\d+)/(\d+)")


def pixels(script: str) -> bool:
    """Whether the lesson learns from frames: its --play samples from pi (the MLP lessons' plays greedily)."""
    return next(lesson.pixels for lesson in LESSONS if lesson.script == script)


def play_log(name: str) -> dict:
    """The committed play log of agents/<name>.pt (agents/<name>.play.txt): its command (the first line, after
    "$ "), the returns of its episodes, --play's own summary (the mean and the std of those returns, as it prints
    them: numpy's std, over the episodes), how it plays ("greedy" or "sampled", by its lesson), and the flags
    reached where the lesson counts them, also as the text every quote of the log appends ("flags")."""
    text = (AGENTS / f"{name}.play.txt").read_text()
    command = text.splitlines()[0].removeprefix("$ ")
    returns = [float(match[3]) for match in EPISODE.finditer(text)]
    summary, flags = PLAY_LINE.search(text), FLAGS.search(text)
    if summary is None or int(summary[1]) != len(returns):
        raise ValueError(f"agents/{name}.play.txt: no summary line for its {len(returns)} episodes")
    return {"command": command, "returns": returns, "summary": f"{summary[2]} +/- {summary[3]}",
            "how": "sampled" if pixels(command.split()[1]) else "greedy",
            "flags": (int(flags[1]), int(flags[2])) if flags else None,
            "flags_text": f", the flag in {flags[1]} of {flags[2]}" if flags else ""}


def final_policy(row: Row, rows: list[dict]) -> str:
    """The final-policy cell: the benchmark's greedy play, or the shipped agent's play log."""
    played = [float(r["play_return"]) for r in rows if r.get("play_return")]
    if played:
        spread = f"; +/- over {len(played)} seeds" if len(played) > 1 else ""
        return f"{mean_std(played)} (greedy, {rows[0]['play_episodes']} episodes a seed{spread})"
    if row.agent is None:
        return "-"
    log = play_log(row.agent)
    return (f"{log['summary']}{log['flags_text']} ([`{row.agent}.pt`](agents/README.md), {log['how']}, "
            f"{len(log['returns'])} episodes; +/- over them)")


def training_time(rows: list[dict]) -> tuple[float, float, str]:
    """Mean seconds and SPS over the seeds, and how they were timed."""
    seconds = []
    for r in rows:
        if r["timed_from"] == "launch":
            seconds.append(float(r["wall_seconds"]))
        else:
            points = load_points(curves_path(r["csv"]))
            seconds.append(active_seconds([p["wall_seconds"] for p in points if p["seed"] == r["seed"]],
                                          LONGEST_SILENCE))
    sps = statistics.fmean(int(r["total_steps"]) / s for r, s in zip(rows, seconds))
    timed = "launch to exit" if all(r["timed_from"] == "launch" for r in rows) else "resumed; gaps over 10 min out"
    return statistics.fmean(seconds), sps, timed


def row_line(row: Row) -> list[str]:
    rows = [{**r, "csv": RESULTS / name} for name in row.csvs for r in read_rows(RESULTS / name)]
    script, env = rows[0]["script"], rows[0]["env_id"]
    seeds = [r["seed"] for r in rows]
    finals = [float(r["final_return"]) for r in rows]
    window = {int(r["window"]) for r in rows}.pop()
    measure = "x position, " if row.episode.startswith("episodes: x") else ""
    unit = "episodes" if row.episode.startswith("episodes") else row.episode
    spread = f"; +/- over {len(seeds)} seeds" if len(seeds) > 1 else ""
    seconds, sps, timed = training_time(rows)
    return [
        f"[`{script}`](benchmarks/README.md#{row.anchor})",
        f"`{row.flags}`" if row.flags else "default",
        env,
        f"{statistics.fmean(int(r['total_steps']) for r in rows):,.0f} {row.budget}",
        f"{len(seeds)} ({' '.join(seeds)})",
        f"{mean_std(finals)} ({measure}last {window} {unit} in training, sampled{spread})",
        final_policy(row, rows),
        f"{seconds:,.0f} s, {sps:,.0f} SPS ({timed})",
        MACHINES[row.machine],
    ]


def table(record: bool = False) -> str:
    """README's table; with `record`, benchmarks/README.md's: every row, with the published figure beside each
    (its links relative to benchmarks/)."""
    header = ["script", "recipe", "env", "env steps", "seeds", "final training score", "final policy (`--play`)",
              "training time", "processor"] + ["published, the same env"] * record
    text = markdown_table(header, [row_line(row) + [row.published] * record for row in ROWS if record or row.readme])
    return text.replace("](benchmarks/README.md#", "](#").replace("](agents/", "](../agents/") if record else text


WATCHED = ["cartpole", "lunarlander", "pendulum", "hopper", "breakout", "breakout-annealed", "mario"]


def watch() -> str:
    """README's "Watch the trained agents" paragraph: what each shipped agent's play log says."""
    logs = {name: play_log(name) for name in WATCHED}
    parts = [f"`{name}` {log['summary']}{log['flags_text']}" for name, log in logs.items()]
    return ("**Watch the trained agents.** [`agents/`](agents/README.md): policy files (weights and statistics, no "
            "optimizer), each with its run, why that run and the log of its `--play` over 20 episodes (greedy for the "
            "MLP lessons, sampled for the pixel ones; mean +/- std over the episodes): " + "; ".join(parts) + ". "
            "E.g. `python ppo_cartpole.py --play agents/cartpole.pt --capture-video`; `python -m benchmarks.ship "
            "gifs` draws the GIFs below (Mario's is `--seed 6`'s first episode).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write the table into README.md")
    mode.add_argument("--check", action="store_true", help="exit 1 if README.md's table differs from the record's")
    args = parser.parse_args(argv)
    begin, end = f"<!-- {MARKER}:begin -->", f"<!-- {MARKER}:end -->"
    try:
        parts = {README: table() + "\n\n" + watch(), RECORD: table(record=True)}
        texts = {path: path.read_text() for path in parts}
        new = {path: between_markers(texts[path], begin, end, body) for path, body in parts.items()}
        if None in new.values():
            raise ValueError(f"README.md and benchmarks/README.md each need {begin} ... {end}")
    except (FileNotFoundError, ValueError, KeyError) as error:
        print(f"results: {error}", file=sys.stderr)
        return 2
    stale = [path.name if path == README else "benchmarks/README.md" for path in parts if new[path] != texts[path]]
    if args.check and stale:
        print(f"results: the results table in {', '.join(map(str, stale))} is not the record's: run python -m "
              "benchmarks.results --write", file=sys.stderr)
        return 1
    if args.write:
        for path in parts:
            path.write_text(new[path])
        print(f"README.md and benchmarks/README.md: the results tables ({', '.join(map(str, stale)) or 'unchanged'})")
    elif not args.check:
        print(parts[README])
    return 0


if __name__ == "__main__":
    sys.exit(main())
