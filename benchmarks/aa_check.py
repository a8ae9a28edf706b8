"""The A/A check: the studies' verdict procedure (benchmarks/core/inference.py) run where there is nothing to
find, to measure how often it finds something anyway.

    python -m benchmarks.aa_check                   # both parts, every study, 1,000 simulated studies each
    python -m benchmarks.aa_check --studies 200     # quicker
    python -m benchmarks.aa_check --csv benchmarks/results/ablations/aa-check.csv   # the record's figures

1. **Same-recipe splits.** Each study's default runs are runs of one recipe: split them into two halves (every
   split, or SPLIT_SAMPLE of them drawn with a fixed seed where there are more) and compare one half with the
   other as if it were a setting, on each score. A verdict there is false by construction. Printed: how often a
   single comparison's test rejects at 5% before any correction (it should be near 5%), and how often the 95%
   Welch interval misses 0 (its real miss rate: near 5% if the label is true). Hopper adds its `clip-vloss` runs,
   which never clipped (the same algorithm as the default, floats' rounding apart): 15 runs of one recipe, split 5
   against 10 as the study compares a setting with the default.
2. **Simulated null studies shaped like the real ones**: the study's number of settings, the settings' seeds and
   the default's seeds, one shared default, every run drawn from one distribution, so that no setting has an
   effect: (a) drawn with replacement from the study's own default runs on its leading score (their real shape:
   skew, ties, outliers), (b) from a normal. Printed: the false verdicts per study and the share of studies with
   at least one (the family-wise error), with each comparison at 5% alone ("uncorrected", the rule the studies used
   before) and with Holm's correction (the procedure), and the Welch interval's miss rate over all comparisons.

The procedure is held to a family-wise error of at most 5% (inference.ALPHA); tests/test_inference.py runs part 2
on 1,000 studies of each study's shape and fails above it.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

from benchmarks.core import inference
from benchmarks.core.launch import ROOT
from benchmarks.core.records import write_csv

RESULTS = ROOT / "benchmarks" / "results" / "ablations"

RECORD = RESULTS / "aa-check.csv"  # the committed figures: python -m benchmarks.aa_check --csv <this>
SPLIT_SAMPLE = 300  # same-recipe splits compared per study and score, where there are more (10 runs: all 252)
FIELDS = ["part", "study", "score", "source", "shape", "comparisons", "studies", "rejected_uncorrected",
          "interval_missed", "false_per_study_uncorrected", "fwer_uncorrected", "false_per_study_holm", "fwer_holm"]


def shape(name: str) -> tuple[int, int, int]:
    """(settings, a setting's seeds, the default's seeds) of a study of benchmarks.ablations."""
    from benchmarks import ablations

    ablation = ablations.STUDIES[name]
    return len(ablation.settings) - 1, len(ablation.seeds), len(ablation.seeds_of(ablation.default))


def study_scores(name: str, results_dir: Path | None = None) -> dict[str, dict[str, list[float]]]:
    """{score: {setting: its runs}} of a committed study, as benchmarks.ablations scores them (steps to solve: the
    budget where a run never solved), read from its CSVs once."""
    from benchmarks import ablations

    ablation = ablations.STUDIES[name]
    rows, curves = ablations.recorded(ablation, results_dir or ablations.RESULTS)
    return {m.name: ablations.scores(ablation, rows, curves, m) for m in ablation.metrics}


def halves(n: int, rng, first: int | None = None) -> list[tuple[int, ...]]:
    """Index sets of the first group of each split of n runs (into `first` and n - first; half by default):
    every split where there are at most SPLIT_SAMPLE, else SPLIT_SAMPLE drawn without repeats."""
    first = first or n // 2
    if inference.splits(first, n - first) <= SPLIT_SAMPLE:
        return list(itertools.combinations(range(n), first))
    chosen: set[tuple[int, ...]] = set()
    while len(chosen) < SPLIT_SAMPLE:
        chosen.add(tuple(sorted(rng.choice(n, first, replace=False).tolist())))
    return sorted(chosen)


def split_rates(values: list[float], censored: bool, rng, first: int | None = None) -> dict | None:
    """Part 1 on one score's runs of one recipe: the share of splits whose test rejects at ALPHA uncorrected and
    (mean scores) whose interval misses 0; None where every run has one value (a ceiling: nothing to test)."""
    import numpy as np

    if inference.ceiling(values, []):
        return None
    values = np.asarray(values, float)
    rejected = missed = 0
    chosen = halves(len(values), rng, first)
    for index in chosen:
        mask = np.zeros(len(values), bool)
        mask[list(index)] = True
        a, b = values[mask].tolist(), values[~mask].tolist()
        if censored:
            c = inference.compare_censored(a, b)
        else:
            c = inference.compare_means(a, b)
            missed += c.low > 0 or c.high < 0
        rejected += c.p is not None and c.p <= inference.ALPHA
    return {"comparisons": len(chosen), "rejected_uncorrected": rejected / len(chosen),
            "interval_missed": None if censored else missed / len(chosen)}


def simulate(settings: int, seeds: int, default_seeds: int, draw, studies: int, rng) -> dict:
    """Part 2: `studies` null studies of `settings` settings x `seeds` runs against one default of `default_seeds`
    runs, every run drawn by draw(rng, size); each study's family through inference.family, as the studies' are."""
    import numpy as np

    false_uncorrected, false_holm, missed, compared = [], [], 0, 0
    for _ in range(studies):
        default = draw(rng, default_seeds)
        found = inference.compare_rows(draw(rng, (settings, seeds)), np.tile(default, (settings, 1)))
        uncorrected = sum(1 for c in found if c.p is not None and c.p <= inference.ALPHA)
        inference.family(found)
        false_uncorrected.append(uncorrected)
        false_holm.append(sum(1 for c in found if c.verdict in ("helps", "hurts")))
        missed += sum(1 for c in found if c.low is not None and (c.low > 0 or c.high < 0))
        compared += sum(1 for c in found if c.low is not None)
    return {"studies": studies, "comparisons": compared, "interval_missed": missed / max(compared, 1),
            "false_per_study_uncorrected": float(np.mean(false_uncorrected)),
            "fwer_uncorrected": float(np.mean([k > 0 for k in false_uncorrected])),
            "false_per_study_holm": float(np.mean(false_holm)),
            "fwer_holm": float(np.mean([k > 0 for k in false_holm]))}


def resampled(values: list[float]):
    """A draw(rng, size) that resamples `values` with replacement."""
    import numpy as np

    pool = np.asarray(values, float)
    return lambda rng, size: rng.choice(pool, size=size, replace=True)


def normal(rng, size):
    return rng.normal(size=size)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.aa_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--studies", type=int, default=1000, help="simulated null studies per study shape")
    parser.add_argument("--seed", type=int, default=0, help="the random state of the splits and the simulation")
    parser.add_argument("--only", nargs="+", choices=["cartpole", "lunarlander", "hopper", "pendulum"],
                        help="these studies only (default: the three with tests)")
    parser.add_argument("--csv", type=Path, help="also write every figure to this CSV")
    parser.add_argument("--results-dir", type=Path, help="the studies' CSVs (default: the committed ones)")
    args = parser.parse_args(argv)
    if args.studies < 1:
        parser.error("--studies must be at least 1")
    return args


def main(argv=None) -> int:
    import numpy as np

    from benchmarks import ablations

    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rows = []
    names = args.only or ["cartpole", "lunarlander", "hopper", "pendulum"]  # (pendulum last: the others keep their draws)
    print(f"1. Same-recipe splits: one half of a study's default runs against the other, each test at "
          f"{inference.ALPHA:.0%} alone (should reject about {inference.ALPHA:.0%}), the 95% Welch interval's misses")
    scores = {name: study_scores(name, args.results_dir) for name in names}
    for name in names:
        ablation = ablations.STUDIES[name]
        for metric in ablation.metrics:
            score, values = metric.name, scores[name][metric.name][ablation.default]
            sources = [(f"the default's {len(values)} runs", values, None)]
            if name == "hopper":
                vloss = scores[name][score]["clip-vloss"]
                sources.append((f"the default's {len(values)} and clip-vloss's {len(vloss)}", values + vloss,
                                len(vloss)))
            for source, runs, first in sources:
                found = split_rates(runs, metric is ablations.SOLVE, rng, first)
                if found is None:
                    print(f"  {name} {metric.label}: {source}: one value on every run, nothing to test")
                    continue
                first = first or len(runs) // 2
                miss = "" if found["interval_missed"] is None else \
                    f", interval missed 0 in {found['interval_missed']:.1%}"
                print(f"  {name} {metric.label}: {source}, {found['comparisons']} splits of {first} against "
                      f"{len(runs) - first}: rejected {found['rejected_uncorrected']:.1%}{miss}")
                rows.append({"part": "splits", "study": name, "score": score, "source": source,
                             "shape": f"{first} v {len(runs) - first}", **found})
    print(f"\n2. Simulated null studies shaped like each study ({args.studies} each; no setting has an effect)")
    for name in names:
        settings, seeds, default_seeds = shape(name)
        ablation = ablations.STUDIES[name]
        leading = ablation.metrics[0]
        pool = scores[name][leading.name][ablation.default]
        for source, draw in ((f"resampled from the default's {leading.label}", resampled(pool)), ("normal", normal)):
            found = simulate(settings, seeds, default_seeds, draw, args.studies, rng)
            print(f"  {name} ({settings} settings x {seeds} seeds, default {default_seeds}), {source}: "
                  f"uncorrected {found['false_per_study_uncorrected']:.2f} false verdicts a study, "
                  f"{found['fwer_uncorrected']:.1%} with one or more; Holm {found['false_per_study_holm']:.3f} a "
                  f"study, {found['fwer_holm']:.1%} with one or more; the interval missed 0 in "
                  f"{found['interval_missed']:.1%} of {found['comparisons']:,}")
            rows.append({"part": "simulated", "study": name, "score": leading.name, "source": source,
                         "shape": f"{settings} x {seeds} v {default_seeds}", **found})
    if args.csv:
        write_csv(args.csv, rows, FIELDS, floats="decimals")
        print(f"\nwritten: {args.csv}")
    worst = max((r["fwer_holm"] for r in rows if r["part"] == "simulated"), default=0.0)
    print(f"\nThe procedure's family-wise error, at most: {worst:.1%} (held to {inference.ALPHA:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
