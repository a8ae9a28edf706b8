"""The debugging guide's generated parts, from the committed records: `python -m course.debugging [--check]`.

For each symptom of course/when-ppo-does-not-learn.md (course.diagnose.SYMPTOMS), between its markers
<!-- symptom:<anchor>:begin --> and <!-- symptom:<anchor>:end -->:
- the healthy range of its diagnostic for each lesson, as course.diagnose judges it (the limits a run's median must
  stay in, over the whole run and over its second half), from the committed healthy records;
- its figure, course/figures/debugging/<anchor>.svg: the diagnostic at every update (or the return) of the broken run
  that shows it most, beside a healthy run of the same recipe, and the healthy limits;
- the causes ranked: each recorded broken run (benchmarks/debugging.py: a study's setting, a learning rate ten
  times the default, a planted silent bug) that course.diagnose flags with this symptom, most extreme first, with
  its measured value against the range, its final return against the healthy run's, and the study's corrected
  verdict where a study measured the setting (benchmarks/results/ablations/effects.csv).
The same records give the same bytes; tests/test_debugging.py redraws them and compares.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import textwrap
from dataclasses import dataclass

from benchmarks import debugging
from course import diagnose
from course.figures import BLUE, GREY, ROOT, between, plt, shown, svg

GUIDE = ROOT / diagnose.GUIDE
FIGURES = ROOT / "course" / "figures" / "debugging"
RED = "#d62728"
HEALTHY = {  # a recipe (its lesson and flags) -> the recorded healthy run of it that the figures draw
    ("ppo_cartpole.py", ()): "healthy-cartpole",
    ("ppo_lunarlander_vec.py", (("total_timesteps", 500_000),)): "healthy-lunarlander-500k",
    ("ppo_pendulum_continuous.py", ()): "healthy-pendulum",
    ("ppo_pendulum_continuous.py", (("clip_vloss", True),)): "healthy-pendulum-clip-vloss",
}
TAG_OF = {  # the diagnostic a symptom's figure and range table show
    "approx_kl-above-the-healthy-range": "losses/approx_kl", "approx_kl-or-clipfrac-below-the-healthy-range": "losses/approx_kl",
    "clipfrac-high": "losses/clipfrac", "entropy-collapses-early": "losses/entropy",
    "entropy-never-falls": "losses/entropy", "explained-variance-below-the-healthy-range": "losses/explained_variance",
    "the-value-loss-above-the-healthy-range": "losses/value_loss", "the-value-loss-far-below-the-healthy-runs": "losses/value_loss",
}
RETURN_SYMPTOMS = ("the-return-stays-flat", "the-return-ends-below-the-healthy-runs", "the-return-rises-then-collapses")


def key(recipe: diagnose.Recipe) -> tuple:
    return recipe.lesson, tuple(sorted(recipe.flags.items()))


@dataclass
class Judged:
    """A recorded run as course.diagnose judges it."""
    name: str
    run: debugging.Recorded
    row: dict  # runs.csv's
    assessed: diagnose.Assessment
    series: dict
    returns: list

    @property
    def recipe(self) -> diagnose.Recipe:
        return self.assessed.recipe

    @property
    def findings(self) -> list[diagnose.Finding]:
        return self.assessed.findings

    @property
    def verdict(self) -> diagnose.ReturnVerdict | None:
        return self.assessed.verdict

    @property
    def symptoms(self) -> list[str]:
        return self.assessed.symptoms()

    def severity(self, anchor: str) -> float:
        """How far outside its range the run's worst finding for `anchor` is, in widths of the range (on the
        range's scale); for the return's symptoms, the share of the gain it lacks or lost."""
        v = self.verdict
        if anchor in ("the-return-stays-flat", "the-return-ends-below-the-healthy-runs"):  # the share of the slowest healthy seed's gain it lacks
            return (v.healthy_gain - (v.final - v.first)) / v.healthy_gain
        if anchor == "the-return-rises-then-collapses":  # the share of its best gain it lost
            return (v.best - v.final) / (v.best - v.first)
        return self.assessed.worst(anchor)


def judged_runs() -> dict[str, Judged]:
    """Every recorded run, judged."""
    out = {}
    for name, row in debugging.recorded_runs().items():
        series, returns = debugging.series(name)
        out[name] = Judged(name, debugging.BY_NAME[name], row, diagnose.assess(row["lesson"], row["args"], series,
                                                                              returns), series, returns)
    return out


def causes(anchor: str, runs: dict[str, Judged]) -> list[Judged]:
    """The broken runs that show the symptom, the most extreme first."""
    shown_by = [j for j in runs.values() if not j.name.startswith("healthy") and anchor in j.symptoms]
    return sorted(shown_by, key=lambda j: -j.severity(anchor))


def unmeasured(runs: dict[str, Judged] | None = None) -> list[str]:
    """The symptoms no recorded run shows (their sections have no figure)."""
    runs = runs or judged_runs()
    return [anchor for anchor in diagnose.SYMPTOMS if not causes(anchor, runs)]


def study_verdict(run: debugging.Recorded) -> str:
    """The study's corrected verdict on the run's setting, on the study's leading score, as effects.csv records it
    ("" where none)."""
    from benchmarks.ablations import STUDIES, read_effects

    if not run.study:
        return ""
    leading = STUDIES[run.study[0]].metrics[0].name
    r = next((r for r in read_effects() if (r["study"], r["setting"], r["metric"]) == (*run.study, leading)), None)
    if r is None:
        return ""
    interval = f" [{float(r['low']):.4g}, {float(r['high']):.4g}]" if r["low"] else ""
    verdict = r["verdict"] + (f", Holm p {float(r['p_holm']):.2g}" if r["p_holm"] else "")
    metric = {"auc": "the mean training return over the run", "final_return": "the final return"}.get(
        r["metric"], r["metric"].replace("_", " "))
    return (f"the {r['study']} study ({r['task']}, {r['runs']} seeds against the default's {r['default_runs']}): "
            f"{metric}, {float(r['effect']):+.4g}{interval}, {verdict}")


def what(j: Judged) -> str:
    if j.run.bug:
        from exercises import bugs

        return f"silent bug {j.run.bug}: {bugs.BUGS[j.run.bug - 1].mistake}"
    return j.run.what


def final(returns: list) -> float | None:
    return statistics.fmean(v for _, v in returns[-diagnose.EPISODES:]) if returns else None


def cause_lines(anchor: str, runs: dict[str, Judged]) -> list[str]:
    lines = []
    for rank, j in enumerate(causes(anchor, runs), start=1):
        healthy = runs.get(HEALTHY.get(key(j.recipe), ""))
        if anchor in RETURN_SYMPTOMS:
            v = j.verdict
            evidence = (f"return (mean of {diagnose.EPISODES} episodes) first {v.first:.4g}, best {v.best:.4g}, "
                        f"last {v.final:.4g}; the slowest healthy seed gained {v.healthy_gain:+.4g} by then")
        else:
            f = max((f for f in j.findings if f.symptom and f.symptom.anchor == anchor), key=diagnose.Finding.severity)
            evidence = (f"{f.tag} median {f.median:.3g} over {diagnose.PART_NAMES[f.part]}, healthy "
                        f"{f.limits[0]:.3g} to {f.limits[1]:.3g}")
        if anchor not in RETURN_SYMPTOMS:
            mine, theirs = final(j.returns), final(healthy.returns) if healthy else None
            evidence += f"; final return {mine:.4g}" + (f" (the healthy run's {theirs:.4g})" if theirs is not None else "")
        study = study_verdict(j.run)
        lines.append(f"{rank}. **{what(j)}** ({j.row['lesson']}, `{j.row['command']}`): {evidence}."
                     + (f" Measured over seeds by {study}." if study else ""))
    return lines or ["No recorded run shows it: the causes below are what the field reports, not measured here."]


def range_table(anchor: str) -> list[str]:
    """The healthy limits of the symptom's diagnostic for each recipe with a record, both parts."""
    if anchor in RETURN_SYMPTOMS:
        lines = ["| healthy recipe | seeds | return of the first 20 episodes | of the last 20 |", "|---|---|---|---|"]
        for recipe in diagnose.RECIPES:
            seeds = diagnose.healthy_returns(recipe)
            if not seeds:
                continue
            firsts = [diagnose.rolling_means(s)[0][1] for s in seeds.values() if len(s) >= 2 * diagnose.EPISODES]
            lasts = [diagnose.rolling_means(s)[-1][1] for s in seeds.values() if len(s) >= 2 * diagnose.EPISODES]
            lines.append(f"| {recipe.describe()} | {len(firsts)} | {min(firsts):.4g} to {max(firsts):.4g} | "
                         f"{min(lasts):.4g} to {max(lasts):.4g} |")
        return lines
    tag = TAG_OF[anchor]
    lines = [f"| healthy recipe | seeds | {tag}: the whole run | its second half |", "|---|---|---|---|"]
    for recipe in diagnose.RECIPES:
        healthy = diagnose.ranges(diagnose.healthy_rows(recipe))
        cells = []
        for part in diagnose.PARTS:
            low, high = healthy[(tag, part)].limits(tag)
            cells.append(f"{low:.3g} to {high:.3g}")
        seeds = len(healthy[(tag, "all")].medians)
        lines.append(f"| {recipe.describe()} | {seeds} | {cells[0]} | {cells[1]} |")
    return lines


def figure(anchor: str, runs: dict[str, Judged]) -> bytes | None:
    """The symptom's figure: its most extreme broken run beside the healthy run of its recipe."""
    found = causes(anchor, runs)
    if not found:
        return None
    broken = found[0]
    healthy = runs[HEALTHY[key(broken.recipe)]]
    fig, ax = plt.subplots(figsize=(7.2, 3.0), layout="constrained")
    if anchor in RETURN_SYMPTOMS:
        for j, color, label in ((healthy, GREY, "a healthy run of the same recipe"), (broken, RED, what(broken))):
            rolled = diagnose.rolling_means(j.returns)
            ax.plot([s for s, _ in rolled], [v for _, v in rolled], color=color, lw=1.2, label=textwrap.fill(label, 60))
        ax.set_ylabel(f"training return\n(mean of {diagnose.EPISODES} episodes)")
        statistic = f"each point the mean of the last {diagnose.EPISODES} training episodes (sampled actions)"
    else:
        tag = TAG_OF[anchor]
        low, high = diagnose.ranges(diagnose.healthy_rows(broken.recipe))[(tag, "all")].limits(tag)
        ax.axhspan(low, high, color=BLUE, alpha=0.12, label="healthy limits (whole run)")
        for j, color, label in ((healthy, GREY, "a healthy run of the same recipe"), (broken, RED, what(broken))):
            points = j.series[tag]
            ax.plot([s for s, _ in points], [v for _, v in points], color=color, lw=0.9, label=textwrap.fill(label, 60))
        if tag in diagnose.LOG_SCALE:
            ax.set_yscale("log")
        ax.set_ylabel(tag.split("/")[1])
        statistic = "each point one update's value"
    ax.set_xlabel("env steps")
    fig.legend(frameon=False, fontsize=7, loc="outside lower center", ncol=3)
    ax.set_title(f"{broken.row['lesson']}, seed 1, one run each: {statistic}; CPU", fontsize=7.5)
    return svg(fig)


def block(anchor: str, runs: dict[str, Judged]) -> str:
    lines = []
    if causes(anchor, runs):
        lines += [f"![{diagnose.SYMPTOMS[anchor].title}: a broken run beside a healthy one]"
                  f"(figures/debugging/{anchor}.svg)", ""]
    lines += ["The healthy runs' return, by recipe (each the mean of 20 training episodes, sampled actions):"
              if anchor in RETURN_SYMPTOMS else
              "The healthy limits (what `python -m course.diagnose` holds a run's median to), by recipe:", "",
              *range_table(anchor), "", "The causes measured here, the most extreme first:", "",
              *cause_lines(anchor, runs)]
    return "\n".join(lines)


RECORD = ROOT / "benchmarks" / "README.md"
MARGINS = (0.25, 0.5, 1.0, 1.5, 2.0)  # the held-out check's margins, the rule's among them


def recipes_block() -> str:
    """benchmarks/README.md's table of the healthy records course.diagnose compares a run with."""
    lines = ["| lesson and flags | healthy seeds | updates per run | records (benchmarks/results/) |", "|---|---|---|---|"]
    for recipe in diagnose.RECIPES:
        rows = diagnose.healthy_rows(recipe)
        seeds = diagnose.seeds(rows)
        counts = sorted({row["count"] for row in rows if row["part"] == "all"})
        count = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        records = ", ".join(f"[`{r}`](results/{r}-diagnostics.csv)" for r in recipe.records)
        lines.append(f"| {recipe.describe()} | {len(seeds)} | {count} | {records} |")
    return "\n".join(lines)


def held_out_block() -> str:
    """benchmarks/README.md's table of the rule's false alarms on held-out healthy seeds, by margin: in every recipe,
    in the recipes of five seeds or more of the lessons the margin was chosen on (course.diagnose.CHOSEN_ON), and in
    the other lessons' recipes of five seeds or more (held out after it was chosen)."""
    lines = ["| margin | held-out seeds | false alarms | in the recipes it was chosen on (5 seeds or more) | "
             "in the later lessons' recipes (10 to 15 seeds) | seeds flagged there |", "|---|---|---|---|---|---|"]
    for margin in MARGINS:
        judged, alarms = debugging.held_out(margin)
        chosen, later = chosen_and_later(alarms)
        mark = " (the rule's)" if margin == diagnose.MARGIN else ""
        flagged = len({(recipe, record, seed) for recipe, record, seed, *_ in later})
        lines.append(f"| {margin:g}{mark} | {judged} | {len(alarms)} | {len(chosen)} | {len(later)} | "
                     f"{flagged} of {later_seeds()} |")
    return "\n".join(lines)


def larger_recipes() -> list:
    """The recipes of five seeds or more."""
    return [r for r in diagnose.RECIPES if len(diagnose.seeds(diagnose.healthy_rows(r))) >= diagnose.FEW]


def chosen_and_later(alarms: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    """benchmarks.debugging.held_out's alarms in the larger recipes: those of the lessons the margin was chosen on,
    and those of the later lessons."""
    larger = {r.describe(): r.lesson in diagnose.CHOSEN_ON for r in larger_recipes()}
    return ([a for a in alarms if larger.get(a[0]) is True], [a for a in alarms if larger.get(a[0]) is False])


def later_seeds() -> int:
    """The healthy seeds of the later lessons' larger recipes."""
    return sum(len(diagnose.seeds(diagnose.healthy_rows(r))) for r in larger_recipes()
               if r.lesson not in diagnose.CHOSEN_ON)


def record_text(text: str) -> str:
    """benchmarks/README.md with its debugging blocks as the records give them."""
    text = between(text, "diagnose-recipes", recipes_block(), RECORD.name)
    return between(text, "diagnose-held-out", held_out_block(), RECORD.name)


def drawn(runs: dict[str, Judged] | None = None) -> tuple[dict[str, bytes], str]:
    """The figures by file name, and the guide with its blocks as the records give them today."""
    runs = runs or judged_runs()
    text = GUIDE.read_text()
    figures = {}
    for anchor in diagnose.SYMPTOMS:
        data = figure(anchor, runs)
        if data is not None:
            figures[f"{anchor}.svg"] = data
        text = between(text, f"symptom:{anchor}", block(anchor, runs), GUIDE.name)
    return figures, text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.debugging", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 where a committed figure or block differs")
    args = parser.parse_args(argv)
    figures, text = drawn()
    stale = [shown(FIGURES / name) for name, data in figures.items()
             if not (FIGURES / name).is_file() or (FIGURES / name).read_bytes() != data]
    stale += [shown(GUIDE)] if GUIDE.read_text() != text else []
    record = record_text(RECORD.read_text())
    stale += [shown(RECORD)] if RECORD.read_text() != record else []
    if args.check:
        print("\n".join(f"stale: {s}" for s in stale) or "the guide's figures and blocks: as the records give them")
        return 1 if stale else 0
    FIGURES.mkdir(parents=True, exist_ok=True)
    for name, data in figures.items():
        (FIGURES / name).write_bytes(data)
    GUIDE.write_text(text)
    RECORD.write_text(record)
    print(f"wrote {len(figures)} figures in {shown(FIGURES)}/" + (f"; rewrote {', '.join(stale)}" if stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
