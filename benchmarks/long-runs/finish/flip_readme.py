"""Apply the flip's edits (held epsilon the default) to main's benchmarks/README.md and README.md, in place.
python /work/tools/flip_readme.py ROOT"""
import re, sys
from pathlib import Path

root = Path(sys.argv[1])


def edit(path, pairs):
    p = root / path
    s = p.read_text()
    for old, new in pairs:
        assert s.count(old) == 1, (path, old[:100], s.count(old))
        s = s.replace(old, new)
    p.write_text(s)


edit("README.md", [
    ('''- Table 5's hyperparameters (but CleanRL's and baselines' K = 4 epochs and c1 = 0.5) and `--anneal-clip`; async
  workers by default; evaluation samples from pi and plays whole games (all lives).''',
     '''- Table 5's hyperparameters (but CleanRL's and baselines' K = 4 epochs and c1 = 0.5, and epsilon held at 0.1 where
  Table 5 anneals it: `--anneal-clip`); async workers by default; evaluation samples from pi and plays whole games.'''),
])

edit("benchmarks/README.md", [
    # the Breakout section's targets
    ('''frames; figures on a GPU; 400 over the last 100 games at the published 40M frames (met by one `--no-anneal-clip`
seed, 416.2; not by its second, «X40», nor by the default recipe's 349.1-369.8:
[below](#40m-frames-on-2-cpu-cores-the-published-budget)).''',
     '''frames; figures on a GPU; 400 over the last 100 games at the published 40M frames (the default's two seeds, epsilon
held at 0.1: 416.2 and «X40», «TARGET»; Table 5's annealing, `--anneal-clip`: 349.1-369.8:
[below](#40m-frames-on-2-cpu-cores-the-published-budget)).'''),
    ('''The script trains, resumes, plays (MP4 of whole games), stops cleanly on Ctrl-C and runs under torchrun''',
     '''The default holds epsilon at 0.1, CleanRL's recipe, since the 40M-frame runs below; every Breakout figure here but
the held epsilon's own runs anneals it with the learning rate (Table 5, the default then), and is named an
`--anneal-clip` run, its command given with the flag.

The script trains, resumes, plays (MP4 of whole games), stops cleanly on Ctrl-C and runs under torchrun'''),
    ('''python ppo_breakout_atari.py --total-timesteps 500000 --no-cuda                  # 2M frames, one process''',
     '''python ppo_breakout_atari.py --total-timesteps 500000 --no-cuda                  # 2M frames, one process'''),
    # the 40M section
    ('''sessions, sync envs, the CNN in bf16 (`--precision auto` on these CPUs) unless the recipe says otherwise: the
default recipe (epsilon annealed, Table 5) with seeds 1 and 2, the same with `--precision fp32` (seed 1), and
epsilon held at 0.1 (`--no-anneal-clip`, CleanRL's recipe) with seeds 1 and 2. Each run, at 40M frames (the
evaluations: 3 whole games sampled from pi, every 100 updates):''',
     '''sessions, sync envs, the CNN in bf16 (`--precision auto` on these CPUs) unless the recipe says otherwise: epsilon
held at 0.1 (CleanRL's recipe, the default since these runs; they ran with `--no-anneal-clip`) with seeds 1 and 2,
epsilon annealed with the learning rate (Table 5, the default when they ran: `--anneal-clip` now) with seeds 1 and
2, and the same with `--precision fp32` (seed 1). Each run, at 40M frames (the evaluations: 3 whole games sampled
from pi, every 100 updates):'''),
    ('''| default, seed 1 | 350.2 | 396.0 | 8,279 | 451 | 359.7; 407.0 (29.9M) |
| default, seed 2 | 369.8 | 385.8 | 8,239 | 471 | 381.3; 411.0 (37.7M) |
| `--precision fp32`, seed 1 | 349.1 | 351.3 | 8,140 | 547 | 397.0; 405.3 (37.7M) |
| `--no-anneal-clip`, seed 1 | **416.2** | 412.0 | 7,236 | 814 | 429.0; 500.3 (39.7M) |
| `--no-anneal-clip`, seed 2 | **«X40»** | «L20» | «GAMES» | «BEST» | «EVALEND»; «EVALBEST» («EVALBESTAT») |
''',
     '''| default (epsilon held), seed 1 | **416.2** | 412.0 | 7,236 | 814 | 429.0; 500.3 (39.7M) |
| default (epsilon held), seed 2 | **«X40»** | «L20» | «GAMES» | «BEST» | «EVALEND»; «EVALBEST» («EVALBESTAT») |
| `--anneal-clip`, seed 1 | 350.2 | 396.0 | 8,279 | 451 | 359.7; 407.0 (29.9M) |
| `--anneal-clip`, seed 2 | 369.8 | 385.8 | 8,239 | 471 | 381.3; 411.0 (37.7M) |
| `--anneal-clip --precision fp32`, seed 1 | 349.1 | 351.3 | 8,140 | 547 | 397.0; 405.3 (37.7M) |
'''),
    ('''The default recipe's two seeds average **360.0**; SB3's one seed has 390.9 on the same statistic and axis,
CleanRL 414.7 +/- 28.1 over 3 seeds, the paper 274.8. The constant epsilon's two seeds end at 416.2 and «X40»
(«MEANHELD» on average, «DIFF» above the default's): seed 2 ends at or below the best annealed run (369.8), so the
lead seed 1 opened was not the recipe's alone. By the rule written down before seed 2 ended ([its
section](#the-second-constant-epsilon-seed)), the default stays Table 5's annealing, the paper's recipe that the
lesson teaches and that every other Breakout figure here was made with; `--no-anneal-clip` (CleanRL's
`ppo_atari.py`) is the flag, and `--help` gives both of its seeds. The target of 400 is met by its seed 1 alone.
Two seeds a recipe are too few for an interval ([the study](#breakoutnoframeskip-v4-ppo_breakout_ataripy-40m-frames-2-seeds)).
bf16 is not the cause of the gap:''',
     '''The default's two seeds, epsilon held, average **«MEANHELD»**; SB3's one seed has 390.9 on the same statistic and
axis, CleanRL 414.7 +/- 28.1 over 3 seeds, the paper 274.8; Table 5's annealing (`--anneal-clip`), 350.2 and 369.8,
360.0 on average. Both held seeds end above all three annealed runs: by the rule written down before seed 2 ended
([its section](#the-second-constant-epsilon-seed)), the held epsilon of CleanRL's `ppo_atari.py` became the
default, and Table 5's annealing the flag `--anneal-clip`; `--help` gives both recipes' seeds. The target of 400 is
«TARGET». Two seeds a recipe are too few for an interval ([the
study](#breakoutnoframeskip-v4-ppo_breakout_ataripy-40m-frames-2-seeds)): were the recipes the same, two runs would
end above the other three 1 time in 10. bf16 is not the cause of the gap:'''),
    ('''python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --exp-name long40m  # seed 1
python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --seed 2 --exp-name long40m-seed2
python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --precision fp32 --exp-name long40m-fp32
python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --no-anneal-clip --exp-name long40m-constclip
python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --no-anneal-clip --seed 2 --exp-name long40m-constclip-seed2''',
     '''python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --exp-name long40m-constclip  # seed 1
python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --seed 2 --exp-name long40m-constclip-seed2
python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --anneal-clip --exp-name long40m
python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --anneal-clip --seed 2 --exp-name long40m-seed2
python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --anneal-clip --precision fp32 --exp-name long40m-fp32'''),
    ('''| constant epsilon, seed 1 | 28.6 | 61.4 | 100.6 | 197.1 | 238.9 | 292.8 | 307.4 | 366.6 | 391.3 | **416.2** |
| constant epsilon, seed 2 | «MARKS» |
| annealed: bf16 seed 1 / seed 2, fp32 seed 1 |''',
     '''| default (epsilon held), seed 1 | 28.6 | 61.4 | 100.6 | 197.1 | 238.9 | 292.8 | 307.4 | 366.6 | 391.3 | **416.2** |
| default (epsilon held), seed 2 | «MARKS» |
| `--anneal-clip`: bf16 seed 1 / seed 2, fp32 seed 1 |'''),
    ('''The shipped Breakout agents are two of these runs' last updates: `agents/breakout.pt` the `--no-anneal-clip` seed 1's,
the best of the five over the last 100 games, and `agents/breakout-annealed.pt` seed 2's, the default recipe's;''',
     '''The shipped Breakout agents are two of these runs' last updates: `agents/breakout.pt` the default's seed 1 (epsilon
held), and `agents/breakout-annealed.pt` the better seed of `--anneal-clip`, seed 2;'''),
    # the 2M and 10M sections, and the healthy run's command
    ('''**2M frames on 2 CPU cores** (500k agent steps, the defaults: 8 async envs x 128 steps, the paper's Table 5''',
     '''**2M frames on 2 CPU cores**, with `--anneal-clip` (the default then) (500k agent steps, the defaults: 8 async envs x 128 steps, the paper's Table 5'''),
    ('''**10M frames on 2 CPU cores** (the script's default length, 2.5M agent steps; sync envs, which are faster on''',
     '''**10M frames on 2 CPU cores**, with `--anneal-clip` (the default then) (the script's default length, 2.5M agent steps; sync envs, which are faster on'''),
    ('''    --csv benchmarks/results/diagnostics/ppo_breakout_atari-bf16.csv -- --total-timesteps 500000 --no-cuda''',
     '''    --csv benchmarks/results/diagnostics/ppo_breakout_atari-bf16.csv -- --total-timesteps 500000 --no-cuda --anneal-clip'''),
    ('''The recipes, for the items that differ or that the issue names. Ours: `ppo_breakout_atari.py`'s defaults. SB3:''',
     '''The recipes, for the items that differ or that the issue names. Ours: `ppo_breakout_atari.py`'s defaults when these runs
were made (epsilon annealed: `--anneal-clip` since the 40M-frame runs). SB3:'''),
    ("    -- --total-timesteps 500000 --no-cuda\npython -m benchmarks.benchmark --script ppo_breakout_atari.py --seeds 1 2 --label fp32 \\\n    -- --total-timesteps 500000 --no-cuda --precision fp32",
     "    -- --total-timesteps 500000 --no-cuda --anneal-clip\npython -m benchmarks.benchmark --script ppo_breakout_atari.py --seeds 1 2 --label fp32 \\\n    -- --total-timesteps 500000 --no-cuda --anneal-clip --precision fp32"),
    ("    -- --no-cuda --vectorization-mode sync --eval-every 500",
     "    -- --no-cuda --vectorization-mode sync --eval-every 500 --anneal-clip"),
    ("python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --exp-name long40m\n",
     "python ppo_breakout_atari.py --total-timesteps 10000000 --no-cuda --vectorization-mode sync --exp-name long40m  # --anneal-clip now\n"),
])
print("flip edits applied")
