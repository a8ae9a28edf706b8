#!/bin/bash
# Finish Breakout's second constant-epsilon seed (issue 46, item 6) once its run has ended, from the repository root:
#     S3MACHINE="an Intel Xeon with AMX (2026-12-06, 09:00 to 09:25 UTC); to itself" bash benchmarks/long-runs/finish/finish.sh keep|flip
# keep: seed 2 ended at or below 369.8 over its last 100 games; flip: above it (the rule: benchmarks/README, 4fc5bc5).
# MONITORS: a git dir of DLR-RM/rl-trained-agents (fetch github:DLR-RM/rl-trained-agents gives one).
set -e
F=benchmarks/long-runs/finish
V=$1
[ "$V" = keep ] || [ "$V" = flip ] || { echo "usage: finish.sh keep|flip" >&2; exit 2; }
[ -n "$S3MACHINE" ] || { echo "give S3MACHINE: the last stretch's machine, for the stretch table" >&2; exit 2; }
MON=${MONITORS:-/work/.mirror/DLR-RM+rl-trained-agents/repo}
RUN=$(ls -d benchmarks/long-runs/BreakoutNoFrameskip-v4__long40m-constclip-seed2__*)
python -m benchmarks.benchmark --script ppo_breakout_atari.py --window 100 --label long40m-constclip-seed2 \
    --csv benchmarks/results/ppo_breakout_atari-long40m-constclip-seed2.csv --from-logs "$RUN" | tail -3
mv benchmarks/results/ppo_breakout_atari-long40m-constclip-seed2-diagnostics.csv benchmarks/results/diagnostics/
git apply $F/common.patch
FLIP=
if [ "$V" = flip ]; then
  git apply $F/flip.patch
  python $F/flip_readme.py .
  rm benchmarks/results/ablations/breakout-runs.csv benchmarks/results/ablations/breakout-curves.csv
  FLIP=--flip
else
  git apply $F/keep-code.patch
fi
python -m benchmarks.ablations breakout | tail -2
FILLROOT=. python $F/fill.py $FLIP --print README.md benchmarks/README.md ppo_breakout_atari.py benchmarks/ship.py
if grep -rn '«' --include=*.py --include=*.md . | grep -v '^./.venv' | grep -v '^./benchmarks/long-runs/' | grep -v FOLDERSHA; then
  echo "PLACEHOLDERS LEFT"; exit 1
fi
python -m benchmarks.results --write
python -m benchmarks.ship readme
python -m benchmarks.sb3_reference --monitors "$MON" --ours benchmarks/results/ppo_breakout_atari-long40m-curves.csv \
    benchmarks/results/ppo_breakout_atari-long40m-seed2-curves.csv benchmarks/results/ppo_breakout_atari-long40m-fp32-curves.csv \
    benchmarks/results/ppo_breakout_atari-long40m-constclip-curves.csv benchmarks/results/ppo_breakout_atari-long40m-constclip-seed2-curves.csv \
    --marks 1e6 2.5e6 4e6 5e6 8e6 10e6 12e6 14e6 16e6 18e6 20e6 22e6 24e6 26e6 28e6 30e6 32e6 34e6 36e6 38e6 40e6 \
    --plot benchmarks/results/ppo_breakout_atari-40M.png > /tmp/sb3_table.txt
if [ "$V" = flip ]; then python -m tests.fingerprint --write ppo_breakout_atari | tail -2; fi
python -m common.diff_matrix --write > /tmp/dm.out
python $F/headings.py README.md < /tmp/dm.out
python -m common.details_map --write | tail -1
python $F/fill.py $FLIP $F/note.md > /dev/null
echo "FINISHED: read the diff; commit the run folder and the new CSVs first, put that commit's hash for «FOLDERSHA» in"
echo "benchmarks/README.md, git rm -r benchmarks/long-runs, commit, run the suite, file $F/note.md (CHECKS filled)"
