"""benchmarks/core/inference.py, the studies' verdict procedure: each test against SciPy's own and hand-computed
values, Holm's correction on hand-worked p-values, the ceiling and the censored score, the detectable effect, and
the A/A check (benchmarks/aa_check.py): on simulated studies with no effect anywhere, shaped like Hopper's, the
procedure's family-wise error is within its 5%; without the correction it is not."""

import math

import numpy as np
import pytest
from scipy import stats

from benchmarks import aa_check
from benchmarks.core import inference


def scipy_permutation_p(x, y):
    difference = lambda a, b, axis: np.mean(a, axis=axis) - np.mean(b, axis=axis)  # noqa: E731
    return stats.permutation_test((np.asarray(x, float), np.asarray(y, float)), difference, vectorized=True,
                                  permutation_type="independent", n_resamples=np.inf).pvalue


@pytest.mark.parametrize("n,m", [(3, 3), (5, 5), (5, 10), (4, 7)])
def test_the_exact_permutation_p_is_scipys(n, m):
    rng = np.random.default_rng(n * 100 + m)
    for k in range(6):
        x, y = rng.normal(size=n).round(1), rng.normal(size=m).round(1)  # rounded: ties in the null
        if k == 0:
            x[:] = y[0]  # one group constant
        assert inference.permutation_p(x, y) == scipy_permutation_p(x, y)
    rows = rng.normal(size=(4, n)), rng.normal(size=(4, m))
    assert list(inference.permutation_pvalues(*rows)) == [scipy_permutation_p(a, b) for a, b in zip(*rows)]


def test_the_exact_test_by_hand():
    """5 against 5, every setting run above every default run: 1 split of 252 as extreme on each side, p = 2/252;
    10 against 5: 2/3003; the 5 and the 6 swapped: 2 splits of 252 as extreme on each side (this one and the
    separated one), p = 4/252."""
    assert inference.splits(5, 5) == 252 and inference.splits(5, 10) == 3003
    assert inference.permutation_p([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]) == pytest.approx(2 / 252)
    assert inference.permutation_p([11, 12, 13, 14, 15], list(range(1, 11))) == pytest.approx(2 / 3003)
    assert inference.permutation_p([5, 7, 8, 9, 10], [1, 2, 3, 4, 6]) == pytest.approx(2 * 2 / 252)
    assert inference.permutation_p([1, 2, 3], [1, 2, 3]) == 1.0


def test_welch_is_scipys_and_holds_a_constant_group():
    rng = np.random.default_rng(1)
    x, y = rng.normal(3, 2, size=5), rng.normal(0, 1, size=10)
    p, low, high, se, df = (float(v[0]) for v in inference.welch_rows([x], [y]))
    reference = stats.ttest_ind(x, y, equal_var=False)
    interval = reference.confidence_interval(0.95)
    assert (p, low, high, df) == pytest.approx((reference.pvalue, interval.low, interval.high, reference.df))
    assert se == pytest.approx(math.sqrt(x.var(ddof=1) / 5 + y.var(ddof=1) / 10))
    # the default at 500 on every run: the setting's spread alone, with its n - 1 degrees of freedom
    p, low, high, se, df = (float(v[0]) for v in inference.welch_rows([[490.0, 494.0, 500.0]], [[500.0] * 3]))
    assert df == pytest.approx(2) and se == pytest.approx(np.std([490, 494, 500], ddof=1) / math.sqrt(3))
    assert high - low == pytest.approx(2 * stats.t.ppf(0.975, 2) * se)


def test_holm_by_hand():
    """p = 0.01, 0.02, 0.03, 0.5 at 5%: 0.01 x 4 = 0.04 rejects; 0.02 x 3 = 0.06 does not, and Holm stops there.
    Adjusted: 0.04, 0.06, 0.06 (held at least the one before), 0.5."""
    found = [inference.Comparison(-1.0, None, None, p, "t", better, runs=(5, 5))
             for p, better in ((0.01, False), (0.02, True), (0.03, True), (0.5, True))]
    inference.family(found)
    assert [c.verdict for c in found] == ["hurts", "not detected", "not detected", "not detected"]
    assert [c.p_holm for c in found] == pytest.approx([0.04, 0.06, 0.06, 0.5])
    helps = [inference.Comparison(1.0, None, None, 0.001, "t", True, runs=(5, 5))]
    assert inference.family(helps)[0].verdict == "helps"


def test_a_ceiling_is_no_test_and_leaves_the_family():
    at_ceiling = inference.compare_means([500.0] * 10, [500.0] * 10)
    assert at_ceiling.verdict == "at the ceiling" and at_ceiling.p is None and at_ceiling.low is None
    # one real comparison beside it: a family of one, so p = 0.04 alone rejects (with two it would not)
    real = inference.Comparison(-5.0, -9.0, -1.0, 0.04, "t", False, 1.0, 8.0, (5, 5))
    inference.family([at_ceiling, real])
    assert real.verdict == "hurts" and real.p_holm == pytest.approx(0.04) and at_ceiling.verdict == "at the ceiling"


def test_the_censored_score_is_ranked():
    """Three runs that never solved (the budget) against 1, 2, 3: they rank 5, 5, 5 (tied at 4-6), above every
    solved run, and of the 20 splits of 3 against 3 one is as extreme on each side: p = 2/20; the effect is the
    difference of the medians, with no interval."""
    c = inference.compare_censored([100.0, 100.0, 100.0], [1.0, 2.0, 3.0])
    assert c.p == pytest.approx(0.1) and c.effect == 98.0 and c.low is None and c.better is False
    assert c.test == "rank permutation, exact"
    # a single unsolved run among solved ones moves the rank test as any slowest run would, not by its value
    slow = inference.compare_censored([4.0, 5.0, 100.0], [1.0, 2.0, 3.0])
    slower = inference.compare_censored([4.0, 5.0, 6.0], [1.0, 2.0, 3.0])
    assert slow.p == slower.p == pytest.approx(0.1)
    big = inference.compare_censored(list(range(20, 40)), list(range(0, 20)))  # 20 v 20: too many
    assert big.test == "Mann-Whitney, normal" and big.p == pytest.approx(
        stats.mannwhitneyu(list(range(20, 40)), list(range(0, 20)), method="asymptotic").pvalue)


def test_means_use_the_exact_test_up_to_its_limit_then_welch():
    rng = np.random.default_rng(2)
    small = inference.compare_means(list(rng.normal(size=5)), list(rng.normal(size=10)))
    assert small.test == "permutation, exact" and small.runs == (5, 10)
    x, y = list(rng.normal(size=20)), list(rng.normal(size=20))
    large = inference.compare_means(x, y)
    assert large.test == "Welch t" and large.p == pytest.approx(stats.ttest_ind(x, y, equal_var=False).pvalue)


def test_the_detectable_effect():
    """(z at 1 - 0.05 / 2m + z at 0.8) standard errors, with t's quantiles: 2.80 SE for one test on many degrees
    of freedom; larger in a family; none at all where the exact test cannot reach Holm's strictest level."""
    assert inference.detectable(1.0, 1e6, 1) == pytest.approx(1.95996 + 0.84162, abs=1e-3)
    assert inference.detectable(1.0, 1e6, 19) > inference.detectable(1.0, 1e6, 1)
    five = [inference.compare_means([float(i), i + 0.5, i + 1.0, i + 2.0, i + 3.0], [0.0, 1.0, 2.0, 3.0, 4.0])
            for i in range(19)]
    inference.family(five)
    assert all(c.verdict == "not detected" and c.detectable == math.inf for c in five)  # 2/252 > 0.05/19
    ten = [inference.compare_means([0.0, 1.0, 2.0, 3.0, 4.0], [float(i) for i in range(10)])] * 19
    inference.family(ten)
    assert math.isfinite(ten[0].detectable) and ten[0].detectable > 0  # 2/3003 < 0.05/19


@pytest.mark.parametrize("study", ["cartpole", "lunarlander", "hopper", "pendulum"])
def test_the_aa_check_holds_the_family_wise_error(study):
    """Part 2 of the A/A check on 1,000 simulated studies shaped like each real one (its settings, their seeds and
    the default's, read from benchmarks.ablations: Hopper's 19 settings x 5 seeds against a default of 10), every
    run from one normal: with Holm's correction the share of studies with a false verdict is consistent with at
    most 5% (a one-sided binomial test at 1%); each test alone, it is far above, and the interval misses 0 about
    5% of the time."""
    settings, seeds, default_seeds = aa_check.shape(study)
    found = aa_check.simulate(settings, seeds, default_seeds, aa_check.normal, 1000, np.random.default_rng(0))
    false = round(found["fwer_holm"] * 1000)
    assert stats.binomtest(false, 1000, inference.ALPHA, alternative="greater").pvalue > 0.01, found
    # each test alone, a family of k shows a false verdict far more often than 5% (1 - 0.95^k apart from the shared
    # default's correlation: 19% for Pendulum's 4, 51% for CartPole's 14)
    assert found["fwer_uncorrected"] > min(0.25, 0.6 * (1 - (1 - inference.ALPHA) ** settings)), found
    assert 0.035 < found["interval_missed"] < 0.065, found


def test_the_committed_aa_check():
    """The record's A/A figures (benchmarks/results/ablations/aa-check.csv, python -m benchmarks.aa_check --csv):
    every simulated study shape's family-wise error within 5% (the binomial test above), and the splits of the
    defaults' own runs rejecting at most about 5% of the time (10% allows for the splits' overlap)."""
    from benchmarks.core.records import read_csv

    rows = read_csv(aa_check.RECORD)
    simulated = [r for r in rows if r["part"] == "simulated"]
    assert {r["study"] for r in simulated} == {"cartpole", "lunarlander", "hopper", "pendulum"} and len(simulated) == 8
    for r in simulated:
        studies = int(r["studies"])
        false = round(float(r["fwer_holm"]) * studies)
        assert stats.binomtest(false, studies, inference.ALPHA, alternative="greater").pvalue > 0.01, r
    assert all(float(r["rejected_uncorrected"]) <= 0.10 for r in rows if r["part"] == "splits"), rows


def test_the_aa_splits_of_one_recipe():
    """Part 1 on made-up runs of one recipe: all 252 splits of 10 runs 5 against 5, 300 of the 3003 of 15 runs 5
    against 10 (no split twice), and a constant score is nothing to test."""
    rng = np.random.default_rng(0)
    assert len(aa_check.halves(10, rng)) == 252 and len(set(aa_check.halves(15, rng, 5))) == 300
    assert aa_check.split_rates([500.0] * 10, False, rng) is None
    found = aa_check.split_rates(list(np.random.default_rng(3).normal(size=10)), False, rng)
    assert found["comparisons"] == 252 and 0 <= found["rejected_uncorrected"] <= 0.15


def test_holm_is_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(4)
    for size in (1, 2, 5, 14, 19):  # statsmodels' holm calls gc.collect(): a few calls only
        for _ in range(3):
            pvalues = list(rng.choice([0.0005, 0.002, 0.004, 0.01, 0.03, 0.2, 0.9], size) * rng.uniform(0.5, 1.5, size))
            pvalues[0] = pvalues[-1]  # a tie
            reject, adjusted, _, _ = multipletests(pvalues, alpha=inference.ALPHA, method="holm")
            mine = inference.holm(pvalues)
            assert mine[0] == list(reject) and mine[1] == pytest.approx(list(adjusted))
