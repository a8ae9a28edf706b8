"""How a study turns runs into a verdict: one procedure, its error controlled over the study's family of
comparisons (benchmarks/README, "The statistics"; the A/A check, python -m benchmarks.aa_check, measures it).

A study compares each of its settings with one default, on each of its scores. For one score the settings form a
*family*: up to 19 comparisons that share the default's runs. Each comparison gets

- an **effect**: the setting's mean minus the default's (for a censored score, steps to solve, the difference of
  the medians), and for a mean, its **95% Welch t interval** (the studentized interval: its width follows the two
  groups' own spreads and the t distribution's tails, so it keeps its coverage at 3 to 20 seeds, where the
  percentile bootstrap that the studies used before covered about 88% at 5 seeds a side);
- a **p-value** from a test suited to few seeds: a two-sided permutation test of the difference of means, exact
  (every split of the pooled runs into two groups of the same sizes: 252 at 5 against 5, 3003 at 10 against 5)
  where there are at most EXACT_SPLITS splits (the same p as SciPy's stats.permutation_test), and Welch's t test
  where there are more (20 against 20);
  for steps to solve, the same permutation test on the runs' ranks (the Wilcoxon-Mann-Whitney test, exact), or
  Mann-Whitney's normal approximation with its tie correction where the splits are too many. A run that never
  solves is censored at the budget: it ranks above every run that solved, tied with the other unsolved ones,
  which is its true order, so the rank test stays exact where a mean would treat the budget as a measurement;
- a **verdict** from Holm's step-down correction over the family (Holm 1979; as statsmodels' `multipletests`):
  "helps" or "hurts" (by the effect's sign) only where the corrected test rejects at ALPHA, else "not detected".
  Holm controls the family-wise error, the chance of even one false verdict among the family's comparisons, at
  ALPHA under any dependence between them (here: every comparison shares the default's runs). The lessons quote
  verdicts one at a time as facts, so the chance that any quoted one is false is what is held at 5%, rather than
  the share of false ones among the verdicts (Benjamini-Hochberg's false discovery rate, a looser promise);
- where not detected, the **smallest effect it could have detected**: the true difference that Welch's test at
  Holm's strictest level (ALPHA / the family's size) would detect 4 times in 5 (POWER) at these spreads and seed
  counts, so "not detected" reads "smaller than about this, if any"; none at all where the exact test's smallest
  possible p (2 / its splits) is above that level (5 against 5 runs in a family of 19).

A score that is the same on every run of both groups (CartPole's 500 at the ceiling) is no measurement of a
difference: it gets no test, interval or verdict, is said to be at the ceiling, and is left out of the family.
Every figure is a function of the scores alone: no random state, so the same CSVs give the same verdicts.
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
from dataclasses import dataclass

ALPHA = 0.05  # the family-wise error rate a study's verdicts on one score are held to
LEVEL = 0.95  # the intervals' confidence
POWER = 0.80  # the power at which the detectable effect is stated
EXACT_SPLITS = 200_000  # an exact permutation test up to this many splits (10 against 10: 184,756)


@dataclass
class Comparison:
    """One setting against the default on one score: the effect, its interval (None: none), the raw p-value and
    the test that gave it, and the detectable effect; `verdict` and `p_holm` are the family's (family())."""

    effect: float
    low: float | None
    high: float | None
    p: float | None
    test: str
    better: bool | None  # the effect lies on the score's better side (None: no test)
    se: float | None = None  # Welch's standard error of the difference and its degrees of freedom (means only)
    df: float | None = None
    runs: tuple[int, int] = (0, 0)  # the setting's runs and the default's
    p_holm: float | None = None
    verdict: str = "not detected"
    detectable: float | None = None  # set by family() where not detected (means only)


def ceiling(setting: list[float], default: list[float]) -> bool:
    """Every run of both groups at one value: no difference can be measured."""
    return len(set(setting) | set(default)) == 1


def at_ceiling(effect: float, value: float, runs: tuple[int, int]) -> Comparison:
    """The comparison of two groups whose every run holds `value`: no test, interval or verdict."""
    return Comparison(effect, None, None, None, f"ceiling: {value:g} on every run", None, verdict="at the ceiling",
                      runs=runs)


@functools.lru_cache(maxsize=8)
def split_matrix(n: int, m: int):
    """Every split of n + m runs into a group of n and one of m, as a (splits, n + m) matrix of 1 where a run
    goes to the first group (itertools.combinations' order)."""
    import numpy as np

    chosen = np.array(list(itertools.combinations(range(n + m), n)))
    matrix = np.zeros((len(chosen), n + m))
    matrix[np.arange(len(chosen))[:, None], chosen] = 1.0
    return matrix


def permutation_pvalues(x, y):
    """Two-sided p of mean(x) - mean(y) by an exact permutation test, for each row of x (k, n) and y (k, m): the
    difference of means over every split of the row's pooled runs into groups of n and m; twice the smaller tail,
    at most 1, values within 100 float epsilons of the observed one counted as equal. The same p as SciPy's
    stats.permutation_test(..., n_resamples=np.inf) (tests/test_inference.py checks), in one matrix product, so
    that the A/A check can run tens of thousands."""
    import numpy as np

    x, y = np.atleast_2d(np.asarray(x, float)), np.atleast_2d(np.asarray(y, float))
    n, m = x.shape[1], y.shape[1]
    pooled = np.concatenate([x, y], axis=1)
    first = pooled @ split_matrix(n, m).T  # (k, splits): the first group's sum in every split
    null = first / n - (pooled.sum(axis=1, keepdims=True) - first) / m
    observed = (x.mean(axis=1) - y.mean(axis=1))[:, None]
    gamma = np.abs(np.finfo(float).eps * 100 * observed)
    less, greater = (null <= observed + gamma).mean(axis=1), (null >= observed - gamma).mean(axis=1)
    return np.minimum(2 * np.minimum(less, greater), 1.0)


def permutation_p(x: list[float], y: list[float]) -> float:
    """permutation_pvalues of one pair of groups."""
    return float(permutation_pvalues([x], [y])[0])


def splits(n: int, m: int) -> int:
    """How many ways there are to split n + m runs into groups of n and m."""
    return math.comb(n + m, n)


def welch_rows(x, y):
    """Welch's t test of mean(x) - mean(y) for each row of x (k, n) and y (k, m): arrays of p, the interval's
    low and high ends at LEVEL, the standard error and the degrees of freedom (Welch-Satterthwaite). Where one
    group is constant, the other's spread alone (its n - 1 degrees of freedom)."""
    import numpy as np
    from scipy import stats

    x, y = np.atleast_2d(np.asarray(x, float)), np.atleast_2d(np.asarray(y, float))
    n, m = x.shape[1], y.shape[1]
    vx, vy = x.var(axis=1, ddof=1) / n, y.var(axis=1, ddof=1) / m
    se = np.sqrt(vx + vy)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (vx + vy) ** 2 / (vx ** 2 / (n - 1) + vy ** 2 / (m - 1))
        effect = x.mean(axis=1) - y.mean(axis=1)
        p = np.where(se > 0, 2 * stats.t.sf(np.abs(effect) / se, df), np.where(effect == 0, 1.0, 0.0))
        half = np.where(se > 0, stats.t.ppf(0.5 + LEVEL / 2, df) * se, 0.0)
    return p, effect - half, effect + half, se, df


def compare_rows(x, y, higher_is_better: bool = True) -> list[Comparison]:
    """compare_means for each row of x (k, n) and y (k, m), in one pass (the A/A check's simulated studies)."""
    import numpy as np

    x, y = np.atleast_2d(np.asarray(x, float)), np.atleast_2d(np.asarray(y, float))
    n, m = x.shape[1], y.shape[1]
    welch_p, low, high, se, df = welch_rows(x, y)
    exact = splits(n, m) <= EXACT_SPLITS
    p = permutation_pvalues(x, y) if exact else welch_p
    found = []
    for i in range(len(x)):
        effect = float(x[i].mean() - y[i].mean())
        if ceiling(x[i].tolist(), y[i].tolist()):
            found.append(at_ceiling(effect, float(x[i, 0]), (n, m)))
            continue
        found.append(Comparison(effect, float(low[i]), float(high[i]), float(p[i]),
                                "permutation, exact" if exact else "Welch t",
                                effect > 0 if higher_is_better else effect < 0, float(se[i]), float(df[i]), (n, m)))
    return found


def detectable(se, df, family_size: int):
    """The true difference that Welch's test at ALPHA / family_size (Holm's strictest step), two-sided, detects
    with probability POWER: (t at 1 - alpha / 2m + t at POWER) standard errors. For an exact permutation test this
    is an approximation (family() gives infinity where no split could reach that level: 5 against 5 runs give 252
    splits, so a p no lower than 2 / 252 = 0.0079, above 0.05 / 19)."""
    from scipy import stats

    return (stats.t.ppf(1 - ALPHA / (2 * family_size), df) + stats.t.ppf(POWER, df)) * se  # arrays too


def compare_means(setting: list[float], default: list[float], higher_is_better: bool = True) -> Comparison:
    """The effect on a mean score: the difference of means with its Welch interval, and the permutation test's
    exact p (Welch's p where the splits are more than EXACT_SPLITS); at the ceiling, none."""
    return compare_rows([setting], [default], higher_is_better)[0]


def compare_censored(setting: list[float], default: list[float], higher_is_better: bool = False) -> Comparison:
    """The effect on a score censored at the budget (steps to solve; a run that never solved holds the budget, so
    it ranks above every run that did): the difference of the medians, no interval, a rank test's p (exact
    permutation of the ranks, or Mann-Whitney's normal approximation with ties)."""
    from scipy import stats

    effect = statistics.median(setting) - statistics.median(default)
    if ceiling(setting, default):
        return at_ceiling(effect, setting[0], (len(setting), len(default)))
    ranks = stats.rankdata(list(setting) + list(default))
    mine, theirs = list(ranks[: len(setting)]), list(ranks[len(setting):])
    if splits(len(setting), len(default)) <= EXACT_SPLITS:
        p, test = permutation_p(mine, theirs), "rank permutation, exact"
    else:
        p, test = float(stats.mannwhitneyu(setting, default, method="asymptotic").pvalue), "Mann-Whitney, normal"
    shift = statistics.fmean(mine) - statistics.fmean(theirs)  # the direction the ranks moved
    return Comparison(effect, None, None, p, test, shift > 0 if higher_is_better else shift < 0,
                      runs=(len(setting), len(default)))


def holm(pvalues: list[float]) -> tuple[list[bool], list[float]]:
    """Holm's step-down procedure at ALPHA: which of the p-values are rejected, and each one's Holm-adjusted p.
    Sorted ascending, the k-th smallest (k from 0) is compared with ALPHA / (m - k) until one is not below it;
    those before it are rejected. The adjusted p: (m - k) p, raised to the largest before it, at most 1.
    The same as statsmodels' multipletests(method="holm") (tests/test_inference.py checks), which calls
    gc.collect() on every call: too slow for the A/A check's thousands of studies."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    reject, adjusted, stopped, running = [False] * m, [1.0] * m, False, 0.0
    for k, i in enumerate(order):
        stopped = stopped or pvalues[i] > ALPHA / (m - k)
        reject[i] = not stopped
        running = max(running, min(1.0, (m - k) * pvalues[i]))
        adjusted[i] = running
    return reject, adjusted


def family(comparisons: list[Comparison]) -> list[Comparison]:
    """Holm's correction over the comparisons that have a test (holm()): each one's Holm-adjusted p and verdict,
    and where not detected (a mean) the detectable effect at the family's size, in place; returns them."""
    import numpy as np

    tested = [c for c in comparisons if c.p is not None]
    if not tested:
        return comparisons
    reject, adjusted = holm([c.p for c in tested])
    for c, rejected, p_holm in zip(tested, reject, adjusted):
        c.p_holm = float(p_holm)
        c.verdict = ("helps" if c.better else "hurts") if rejected else "not detected"
    means = [c for c in tested if c.verdict == "not detected" and c.se is not None]
    if means:  # one call for the family: the A/A check's simulated studies make thousands
        sizes = detectable(np.array([c.se for c in means]), np.array([c.df for c in means]), len(tested))
        for c, size in zip(means, sizes):
            c.detectable = float(size)
            if c.test.endswith("exact") and 2 / splits(*c.runs) > ALPHA / len(tested):
                c.detectable = math.inf  # no split is extreme enough: nothing is detectable at these seed counts
    return comparisons
