"""Negative binomial fits (Appendix J): recovery of known parameters, truncation, the LRT, humans."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2, nbinom

from wikigame_spark.evaluation import fits


def truncated_sample(n, p, games, max_steps, seed):
    """Successful games as the engine produces them: optimum d, extra x ~ NB(n, p), and only
    games with d + x ≤ max_steps succeed (so are seen)."""
    rng = np.random.default_rng(seed)
    extra, limit = [], []
    while len(extra) < games:
        d = rng.integers(2, 7, size=games)
        x = rng.negative_binomial(n, p, size=games)
        ok = x <= max_steps - d
        extra.extend(x[ok])
        limit.extend(max_steps - d[ok])
    return np.array(extra[:games]), np.array(limit[:games])


def within(fit_value, se, true_value, k=3.0):
    return abs(fit_value - true_value) <= k * se


@pytest.mark.parametrize(
    ("n", "p", "max_steps", "seed"),
    [(3.0, 0.12, 40, 1), (1.0, 0.05, 30, 2), (0.6, 0.08, 100, 3)],
)
def test_fit_recovers_known_parameters_within_its_standard_errors(n, p, max_steps, seed):
    extra, limit = truncated_sample(n, p, 3000, max_steps, seed)
    fit = fits.fit_negative_binomial(extra, limit)
    assert math.isfinite(fit.n_se) and math.isfinite(fit.p_se) and not fit.at_bound, fit
    assert within(fit.n, fit.n_se, n) and within(fit.p, fit.p_se, p), (fit, n, p)
    assert fit.games == 3000 and not fit.fixed_n


def test_truncation_matters_when_the_limit_cuts_the_tail():
    """The same data fitted as if untruncated is biased far beyond its errors (towards short games)."""
    extra, _ = truncated_sample(3.0, 0.12, 3000, 40, 1)
    naive = fits.fit_negative_binomial(extra)
    mean_true = 3.0 * (1 - 0.12) / 0.12
    mean_naive = naive.n * (1 - naive.p) / naive.p
    assert mean_naive < 0.9 * mean_true
    assert not within(naive.p, naive.p_se, 0.12)


def test_counts_are_the_same_as_repeated_rows():
    extra, limit = truncated_sample(2.0, 0.2, 400, 30, 4)
    table = pd.DataFrame({"x": extra, "limit": limit}).value_counts().reset_index(name="games")
    grouped = fits.fit_negative_binomial(table["x"], table["limit"], table["games"])
    rows = fits.fit_negative_binomial(extra, limit)
    assert grouped.nll == pytest.approx(rows.nll, rel=1e-9)
    assert grouped.n == pytest.approx(rows.n, rel=1e-4) and grouped.p == pytest.approx(rows.p, rel=1e-4)


def test_geometric_fit_matches_the_closed_form():
    """Without truncation the n = 1 MLE is p = N/(N + Σx), and its Fisher information N/(p²(1−p))."""
    x = np.array([0, 0, 1, 2, 2, 3, 5, 8, 13, 1, 0, 4])
    fit = fits.fit_negative_binomial(x, fix_n=1.0)
    p = len(x) / (len(x) + x.sum())
    assert fit.p == pytest.approx(p, rel=1e-6)
    assert fit.p_se == pytest.approx(math.sqrt(p * p * (1 - p) / len(x)), rel=1e-3)
    assert fit.nll == pytest.approx(-nbinom.logpmf(x, 1, p).sum(), rel=1e-9)
    assert fit.fixed_n and math.isnan(fit.n_se)


def test_truncated_likelihood_is_a_distribution():
    """Each game's term pmf(x)/CDF(limit) sums to one over x = 0…limit."""
    for limit in (0, 3, 17):
        total = sum(math.exp(-fits.negative_log_likelihood(2.3, 0.3, [x], limit=limit)) for x in range(limit + 1))
        assert total == pytest.approx(1.0, rel=1e-10)


def test_lrt_matches_a_hand_computation():
    extra, limit = truncated_sample(4.0, 0.3, 300, 25, 5)
    result = fits.fit_steps(extra, limit)
    free, geo = result.free, result.geometric

    def nll(n, p):  # written out from the definition, with scipy's distribution
        return -(nbinom.logpmf(extra, n, p) - nbinom.logcdf(limit, n, p)).sum()

    assert free.nll == pytest.approx(nll(free.n, free.p), rel=1e-9)
    assert geo.nll == pytest.approx(nll(1.0, geo.p), rel=1e-9)
    statistic = 2 * (nll(1.0, geo.p) - nll(free.n, free.p))
    assert result.lrt.statistic == pytest.approx(statistic, rel=1e-6)
    assert result.lrt.delta_nll == pytest.approx(statistic / 2, rel=1e-6)
    assert result.lrt.p_value == pytest.approx(chi2.sf(statistic, 1), rel=1e-6)
    assert result.lrt.p_value < 1e-6  # n = 4 data: the geometric is rejected
    # the free fit is the maximum: no point of a grid around it does better
    for dn in (-0.3, 0, 0.3):
        for dp in (-0.02, 0, 0.02):
            assert nll(free.n + dn, free.p + dp) >= free.nll - 1e-9


def test_lrt_keeps_the_geometric_for_geometric_data():
    extra, limit = truncated_sample(1.0, 0.1, 2000, 100, 6)
    result = fits.fit_steps(extra, limit)
    assert within(result.free.n, result.free.n_se, 1.0)
    assert result.lrt.p_value > 0.01


def test_lrt_p_value_of_the_papers_human_delta_nll():
    free = fits.NegBinomFit(4.45, 1.0, 0.5, 0.1, 100.0, 68, False)
    geo = fits.NegBinomFit(1.0, math.nan, 0.08, 0.03, 106.58, 68, True)
    lrt = fits.likelihood_ratio_test(free, geo)
    assert lrt.statistic == pytest.approx(13.16) and lrt.p_value == pytest.approx(2.86e-4, rel=0.01)


def test_human_variant_truncated_leaves_out_games_above_the_cutoff():
    extra = np.array([0, 1, 1, 2, 3, 3, 4, 5, 6, 7, 9, 10, 11, 14, 21])
    result = fits.fit_human(extra, games=25, cutoff=10)
    assert result.variant == "human_cutoff" and result.mode == "truncated"
    assert result.successes == 15 and result.unknown == 3 and result.free.games == 12
    seen = extra[extra <= 10]
    same = fits.fit_negative_binomial(seen, limit=10)
    assert result.free.nll == pytest.approx(same.nll) and result.free.n == pytest.approx(same.n, rel=1e-4)
    # implied success rate = seen / (games × CDF(cutoff))
    rate = 12 / (25 * nbinom.cdf(10, result.free.n, result.free.p))
    assert result.implied_success_rate == pytest.approx(rate, rel=1e-9)
    assert result.implied_success_rate_se > 0


def test_human_variant_censored_adds_the_tail_probability():
    extra = np.array([0, 1, 1, 2, 3, 3, 4, 5, 6, 7, 9, 10, 11, 14, 21])
    result = fits.fit_human(extra, cutoff=10, mode="censored")
    f = result.free
    seen = extra[extra <= 10]
    hand = -(nbinom.logpmf(seen, f.n, f.p).sum() + 3 * nbinom.logsf(10, f.n, f.p))
    assert f.nll == pytest.approx(hand, rel=1e-9) and f.games == 15
    with pytest.raises(ValueError, match="mode"):
        fits.fit_human(extra, mode="dropped")


def test_cases_without_a_fit_say_why():
    one = fits.fit_negative_binomial([3])
    assert math.isnan(one.n) and "fewer than 2" in one.note
    same = fits.fit_negative_binomial([2, 2, 2])
    assert math.isnan(same.p) and "same steps" in same.note
    zeros = fits.fit_negative_binomial([0, 0, 0, 0], fix_n=1.0)  # p → 1: on the edge, no errors
    assert zeros.at_bound and zeros.p > 0.999 and math.isnan(zeros.p_se)


def test_bad_data_is_refused():
    with pytest.raises(ValueError, match="beyond the step limit"):
        fits.fit_negative_binomial([1, 5], limit=[3, 3])
    with pytest.raises(ValueError, match="whole numbers"):
        fits.fit_negative_binomial([1, -1])


def test_expected_fractions_sum_to_one_per_limit():
    fit = fits.NegBinomFit(2.0, 0.1, 0.3, 0.01, 0.0, 10, False)
    xs = np.arange(0, 60)
    assert fits.expected_fractions(fit, xs, [5, 20, 20], [1, 1, 2]).sum() == pytest.approx(1.0)
    assert fits.expected_fractions(fit, xs, None).sum() == pytest.approx(nbinom.cdf(59, 2.0, 0.3))


def test_fit_groups_and_table():
    extra = pd.DataFrame(
        {
            "label": ["a"] * 4 + ["human"] * 4,
            "graph": ["g"] * 8,
            "extra_steps": [0, 1, 3, 7, 0, 2, 5, 12],
            "limit": [10.0, 10.0, 20.0, 20.0] + [math.nan] * 4,
            "games": [5, 3, 2, 1, 4, 4, 2, 1],
        }
    )
    out = fits.fit_groups(extra, {("a", "g"): 20, ("human", "g"): 15}, {"human"})
    variants = [(a, f.variant) for a, _, f in out]
    assert variants == [("a", "step_limit"), ("human", "untruncated"), ("human", "human_cutoff")]
    table = fits.fit_table(out)
    assert list(table["successes"]) == [11, 11, 11] and list(table["fitted"]) == [11, 11, 10]
    assert table.loc[2, "variant"] == "human_cutoff (truncated, > 10 unknown)"


def test_too_few_games_are_shown_not_fitted():
    """Two successful games once gave n = 9992: under MIN_FIT_GAMES there is no fit, and the note says why."""
    extra = pd.DataFrame({"label": ["a", "a"], "graph": ["g", "g"], "extra_steps": [0, 3], "limit": 50.0, "games": 1})
    [(_, _, f)] = fits.fit_groups(extra, {("a", "g"): 5})
    assert math.isnan(f.free.n) and math.isnan(f.free.p) and math.isnan(f.lrt.p_value)
    assert f.free.note == f"not fitted: 2 successful games (fewer than {fits.MIN_FIT_GAMES})"
    row = fits.fit_table([("a", "g", f)]).iloc[0]
    assert row["successes"] == 2 and "not fitted" in row["note"]
    [(_, _, f)] = fits.fit_groups(extra.assign(games=5), {("a", "g"): 20})  # 10 games: fitted
    assert math.isfinite(f.free.p)
