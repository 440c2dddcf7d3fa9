"""Appendix J: maximum-likelihood negative binomial fits of the steps above optimal.

The steps above optimal ``x`` of a successful game are modelled as negative binomial,

    Pr(x) = C(x+n−1, x) (1−p)^x p^n,    x = 0, 1, 2, …

(``scipy.stats.nbinom(n, p)``; n = 1 is the geometric distribution: one hard step that succeeds
with probability p each try). Only games that succeeded are seen, and a game with optimum d can
only succeed within the step limit, with x ≤ max_steps − d; so each game's term is its pmf divided
by the CDF at its own limit (a truncated likelihood). Without it, agents' long successful games
would be under-counted and the fit biased towards short games.

Fits are made with n free and with n fixed at 1; the likelihood-ratio statistic 2 (NLL₁ − NLL_free)
is compared with χ² on one degree of freedom (n = 1 lies inside the parameter space n > 0).
Standard errors come from the inverse of a numerical Hessian of the negative log-likelihood.

Human games (time-limited, no step limit) use the paper's reading of "more than 10 steps above
optimal are treated as unknown": those games are left out and the likelihood of the others is
truncated at the cutoff, pmf(x) / CDF(10) — the fit then says nothing about the tail beyond 10
except through the shape below it. Why not the censored reading, where a long game contributes
Pr(X > 10)? A human who wanders far off the optimum usually runs out of the ten minutes, so the
long games that were seen to succeed are a time-filtered remnant of the tail: counting them as
"more than 10" would still weigh the tail by how many humans were fast enough. Truncation uses only
the short games, where the time limit rarely binds, and it is what reproduces the paper's figures.
The censored reading is available as ``mode="censored"`` for comparison.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit, gammaln, logit
from scipy.stats import chi2, nbinom

HUMAN_CUTOFF = 10
# Fewer successful games than this are shown, not fitted: two parameters from a handful of
# values give estimates (e.g. n = 9992 from two games) that only look like findings.
MIN_FIT_GAMES = 10
HUMAN_MODES = ("truncated", "censored")

# Search box, in the fit's own coordinates (log n, logit p): wide enough never to bind on data a
# negative binomial can describe; a fit that ends on it is reported as such (under-dispersed data
# sends n → ∞, all-zero data sends p → 1).
_LOG_N = (math.log(1e-3), math.log(1e4))
_LOGIT_P = (-25.0, 25.0)
_LOG_N_GRID = np.log([0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0])
_HESSIAN_STEP = 1e-3


@dataclass(frozen=True)
class NegBinomFit:
    """One maximum-likelihood fit: estimates, their standard errors, the minimised NLL."""

    n: float
    n_se: float  # NaN when n is fixed or the Hessian is not usable
    p: float
    p_se: float
    nll: float
    games: int  # observations in the likelihood (censored ones included)
    fixed_n: bool
    at_bound: bool = False
    note: str = ""
    cov: tuple[tuple[float, ...], ...] | None = None  # covariance of the free parameters, (n, p) order

    def pmf(self, x: np.ndarray) -> np.ndarray:
        return nbinom.pmf(x, self.n, self.p)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class LikelihoodRatio:
    """2 ΔNLL between the free fit and the fit with n fixed, with its χ² (1 df) p-value."""

    statistic: float
    delta_nll: float
    p_value: float
    df: int = 1

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class StepFits:
    """What the report shows for one agent on one graph."""

    variant: str  # "step_limit" (truncated at max_steps − d), "untruncated" (no limit) or "human_cutoff"
    free: NegBinomFit
    geometric: NegBinomFit
    lrt: LikelihoodRatio
    successes: int  # successful games in the data
    unknown: int = 0  # human variant: successes above the cutoff (left out, or censored)
    cutoff: int | None = None
    mode: str = ""
    implied_success_rate: float = math.nan  # human variant: seen successes / (games × CDF(cutoff))
    implied_success_rate_se: float = math.nan

    def to_dict(self) -> dict:
        d = asdict(self)
        d["free"], d["geometric"], d["lrt"] = self.free.to_dict(), self.geometric.to_dict(), self.lrt.to_dict()
        return d


def _as_data(extra, limit, counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.asarray(extra, dtype=float).reshape(-1)
    w = np.ones_like(x) if counts is None else np.asarray(counts, dtype=float).reshape(-1)
    if limit is None:
        lim = np.full_like(x, np.inf)
    else:
        lim = np.broadcast_to(np.asarray(limit, dtype=float), x.shape).astype(float)
        lim = np.where(np.isnan(lim), np.inf, lim)
    if w.shape != x.shape:
        raise ValueError(f"counts has {w.size} values for {x.size} observations")
    if np.any(x < 0) or np.any(x != np.round(x)):
        raise ValueError(f"steps above optimal must be whole numbers ≥ 0; got {sorted(set(x[x < 0]))[:5]}")
    if np.any(x > lim):
        bad = np.flatnonzero(x > lim)[:3]
        raise ValueError(
            f"steps above optimal beyond the step limit: x={x[bad].tolist()} with limits {lim[bad].tolist()}"
        )
    if np.any(w < 0):
        raise ValueError("counts must be ≥ 0")
    keep = w > 0
    return x[keep], lim[keep], w[keep]


def negative_log_likelihood(
    n: float,
    p: float,
    extra,
    limit=None,
    counts=None,
    censored: float = 0,
    cutoff: int | None = None,
) -> float:
    """−log L of truncated negative binomial data.

    Args:
        n, p: the distribution's parameters (n > 0, 0 < p < 1).
        extra: steps above optimal of the observed games.
        limit: per game (or one for all), the largest x it could have succeeded with
            (max_steps − optimal_steps); None or NaN/inf for no limit.
        counts: how many games have each (extra, limit); default one each.
        censored, cutoff: games known only to have x > cutoff, each contributing Pr(X > cutoff).
    """
    x, lim, w = _as_data(extra, limit, counts)
    return _nll(n, p, x, lim, w, censored, cutoff)


def _logpmf(x: np.ndarray, n: float, p: float) -> np.ndarray:
    return gammaln(x + n) - gammaln(n) - gammaln(x + 1) + n * math.log(p) + x * math.log1p(-p)


def _logcdf(limits: np.ndarray, n: float, p: float) -> np.ndarray:
    """log CDF at whole-number limits, summed from the pmf in log space: scipy's ``logcdf``
    underflows to −inf where the CDF is tiny (large n, small p), which the optimiser visits."""
    top = int(limits.max())
    if top > 1_000_000:
        return nbinom.logcdf(limits, n, p)
    cumulative = np.logaddexp.accumulate(_logpmf(np.arange(top + 1, dtype=float), n, p))
    return np.minimum(cumulative[limits.astype(int)], 0.0)


def _logsf(cutoff: int, n: float, p: float) -> float:
    value = float(nbinom.logsf(cutoff, n, p))
    if math.isfinite(value):
        return value
    cdf = float(_logcdf(np.array([float(cutoff)]), n, p)[0])
    return math.log(-math.expm1(cdf)) if cdf < 0 else -math.inf


def _nll(n, p, x, lim, w, censored, cutoff) -> float:
    total = float(np.dot(w, _logpmf(x, n, p)))
    finite = np.isfinite(lim)
    if finite.any():
        limits, index = np.unique(lim[finite], return_inverse=True)
        total -= float(np.dot(np.bincount(index, weights=w[finite]), _logcdf(limits, n, p)))
    if censored:
        total += censored * _logsf(cutoff, n, p)
    return -total


def _hessian(f: Callable[[np.ndarray], float], at: np.ndarray, h: float = _HESSIAN_STEP) -> np.ndarray:
    """Central-difference Hessian."""
    k = at.size
    out = np.empty((k, k))
    f0 = f(at)
    for i in range(k):
        e_i = np.eye(k)[i] * h
        out[i, i] = (f(at + e_i) - 2 * f0 + f(at - e_i)) / h**2
        for j in range(i):
            e_j = np.eye(k)[j] * h
            out[i, j] = out[j, i] = (f(at + e_i + e_j) - f(at + e_i - e_j) - f(at - e_i + e_j) + f(at - e_i - e_j)) / (
                4 * h * h
            )
    return out


def _starts(x: np.ndarray, w: np.ndarray) -> list[tuple[float, float]]:
    mean = float(np.dot(w, x) / w.sum())
    var = float(np.dot(w, (x - mean) ** 2) / max(w.sum() - 1, 1))
    starts = [(1.0, 1.0 / (1.0 + mean)), (4.0, 4.0 / (4.0 + mean))]
    if var > mean > 0:  # method of moments, when over-dispersed
        p0 = mean / var
        starts.insert(0, (mean * p0 / (1 - p0), p0))
    return starts


def fit_negative_binomial(
    extra,
    limit=None,
    counts=None,
    fix_n: float | None = None,
    censored: float = 0,
    cutoff: int | None = None,
) -> NegBinomFit:
    """Maximum-likelihood (n, p), or p alone with ``n = fix_n``; arguments as in
    :func:`negative_log_likelihood`. Needs at least two games, not all with the same x when n
    is free; otherwise the estimates are NaN and ``note`` says why."""
    x, lim, w = _as_data(extra, limit, counts)
    games = round(float(w.sum()) + censored)
    fixed = fix_n is not None
    if w.sum() < 2 or (not fixed and np.unique(x).size < 2 and not censored):
        why = "fewer than 2 games" if w.sum() < 2 else "every game has the same steps above optimal"
        return NegBinomFit(math.nan, math.nan, math.nan, math.nan, math.nan, games, fixed, note=f"no fit: {why}")
    if censored and cutoff is None:
        raise ValueError("censored games need the cutoff they are censored at")

    def unpack(theta: np.ndarray) -> tuple[float, float]:
        if fixed:
            return float(fix_n), float(expit(theta[0]))
        return float(math.exp(theta[0])), float(expit(theta[1]))

    def objective(theta: np.ndarray) -> float:
        n, p = unpack(theta)
        if not 0 < p < 1:
            return math.inf
        value = _nll(n, p, x, lim, w, censored, cutoff)
        return value if math.isfinite(value) else 1e300

    bounds = [_LOGIT_P] if fixed else [_LOG_N, _LOGIT_P]
    # The likelihood can be nearly flat far from the optimum (p → 0 makes a truncated
    # distribution uniform), where a gradient method stalls: start from the best points of a
    # coarse grid plus the moment estimates, then polish with Nelder–Mead.
    logit_grid = np.linspace(-8.0, 8.0, 33)
    grid = [np.array([t]) for t in logit_grid] if fixed else [np.array([a, b]) for a in _LOG_N_GRID for b in logit_grid]
    for n0, p0 in _starts(x, w):
        q = logit(min(max(p0, 1e-6), 1 - 1e-6))
        grid.append(np.array([q]) if fixed else np.array([math.log(min(max(n0, 2e-3), 5e3)), q]))
    grid.sort(key=objective)
    best = None
    for theta0 in grid[:3]:
        result = minimize(objective, theta0, method="L-BFGS-B", bounds=bounds)
        if best is None or result.fun < best.fun:
            best = result
    polished = minimize(objective, best.x, method="Nelder-Mead", bounds=bounds, options={"xatol": 1e-8, "fatol": 1e-10})
    if polished.fun < best.fun:
        best = polished
    theta = best.x
    n, p = unpack(theta)
    at_bound = any(min(abs(t - lo), abs(t - hi)) < 1e-3 for t, (lo, hi) in zip(theta, bounds))
    note = ""
    n_se = p_se = math.nan
    if at_bound:
        note = "estimate at the edge of the search range (n → ∞ or p → 0/1): no standard errors"
    else:
        # Errors in (log n, logit p), then to (n, p) by the Jacobian: at the optimum this equals
        # inverting the Hessian in (n, p) itself, and differences in log/logit space are better scaled.
        hess = _hessian(objective, theta)
        try:
            cov = np.linalg.inv(hess)
        except np.linalg.LinAlgError:
            cov = None
        if cov is None or np.any(np.diag(cov) <= 0) or not np.all(np.isfinite(cov)):
            note = "Hessian not positive definite: no standard errors"
        else:
            jac = np.diag([p * (1 - p)] if fixed else [n, p * (1 - p)])
            cov_np = jac @ cov @ jac
            se = np.sqrt(np.diag(cov_np))
            p_se = float(se[-1])
            n_se = math.nan if fixed else float(se[0])
            cov_out = tuple(tuple(float(v) for v in row) for row in cov_np)
            return NegBinomFit(n, n_se, p, p_se, float(best.fun), games, fixed, at_bound, note, cov_out)
    return NegBinomFit(n, n_se, p, p_se, float(best.fun), games, fixed, at_bound, note)


def likelihood_ratio_test(free: NegBinomFit, restricted: NegBinomFit) -> LikelihoodRatio:
    """2 (NLL_restricted − NLL_free) against χ² with one degree of freedom."""
    delta = restricted.nll - free.nll
    if not (math.isfinite(delta)):
        return LikelihoodRatio(math.nan, math.nan, math.nan)
    # the free fit can only be better; a tiny negative difference is the optimiser's tolerance
    statistic = max(2.0 * delta, 0.0)
    return LikelihoodRatio(statistic, delta, float(chi2.sf(statistic, 1)))


def fit_steps(extra, limit=None, counts=None) -> StepFits:
    """Agents: n free and n = 1, each truncated at the step limit, and the LRT between them
    (``untruncated`` when no game has a limit, as for human games)."""
    free = fit_negative_binomial(extra, limit, counts)
    geometric = fit_negative_binomial(extra, limit, counts, fix_n=1.0)
    successes = int(np.sum(counts)) if counts is not None else int(np.size(extra))
    limited = limit is not None and np.isfinite(np.asarray(limit, dtype=float)).any()
    variant = "step_limit" if limited else "untruncated"
    return StepFits(variant, free, geometric, likelihood_ratio_test(free, geometric), successes)


def fit_human(
    extra,
    counts=None,
    games: int | None = None,
    cutoff: int = HUMAN_CUTOFF,
    mode: str = "truncated",
) -> StepFits:
    """Time-limited human games: successes more than ``cutoff`` steps above optimal are unknown.

    ``mode="truncated"`` (the paper's): they are left out and the rest are fitted with the
    likelihood truncated at ``cutoff``. ``mode="censored"``: each contributes Pr(X > cutoff).
    With ``games`` (all games, failures included), the success rate the fit implies without the
    time limit, seen / (games × CDF(cutoff)), and its error from the seen count (Poisson) and the
    fit's covariance (delta method), as the paper's human analysis does.
    """
    if mode not in HUMAN_MODES:
        raise ValueError(f"mode: {mode!r} is not one of {', '.join(HUMAN_MODES)}")
    x = np.asarray(extra, dtype=float).reshape(-1)
    w = np.ones_like(x) if counts is None else np.asarray(counts, dtype=float).reshape(-1)
    seen = x <= cutoff
    unknown = float(w[~seen].sum())
    if mode == "truncated":
        args = {"limit": cutoff, "censored": 0, "cutoff": None}
    else:
        args = {"limit": None, "censored": unknown, "cutoff": cutoff}
    free = fit_negative_binomial(x[seen], counts=w[seen], **args)
    geometric = fit_negative_binomial(x[seen], counts=w[seen], fix_n=1.0, **args)
    rate, rate_se = math.nan, math.nan
    n_seen = float(w[seen].sum())
    if games and mode == "truncated" and math.isfinite(free.n) and n_seen > 0:
        rate, rate_se = _implied_rate(free, n_seen, games, cutoff)
    return StepFits(
        "human_cutoff",
        free,
        geometric,
        likelihood_ratio_test(free, geometric),
        round(float(w.sum())),
        round(unknown),
        cutoff,
        mode,
        rate,
        rate_se,
    )


def _implied_rate(fit: NegBinomFit, seen: float, games: int, cutoff: int) -> tuple[float, float]:
    rate = seen / (games * float(nbinom.cdf(cutoff, fit.n, fit.p)))
    if fit.cov is None:
        return rate, math.nan
    grad = np.empty(2)
    for i, value in enumerate((fit.n, fit.p)):
        h = max(abs(value), 1e-3) * 1e-5
        hi, lo = [fit.n, fit.p], [fit.n, fit.p]
        hi[i], lo[i] = value + h, value - h
        grad[i] = (nbinom.logcdf(cutoff, *hi) - nbinom.logcdf(cutoff, *lo)) / (2 * h)
    return rate, rate * math.sqrt(1 / seen + float(grad @ np.array(fit.cov) @ grad))


def expected_fractions(fit: NegBinomFit, xs: np.ndarray, limit=None, counts=None) -> np.ndarray:
    """The fraction of the observed games the fit expects at each x in ``xs``, each game's
    distribution truncated at its own limit (what a histogram of the data should look like)."""
    xs = np.asarray(xs, dtype=float)
    if not math.isfinite(fit.n):
        return np.full(xs.shape, np.nan)
    lim = np.full(1, np.inf) if limit is None else np.asarray(limit, dtype=float).reshape(-1)
    lim = np.where(np.isnan(lim), np.inf, lim)
    w = np.ones_like(lim) if counts is None else np.asarray(counts, dtype=float).reshape(-1)
    limits, index = np.unique(lim, return_inverse=True)
    weights = np.bincount(index, weights=w) / w.sum()
    pmf = nbinom.pmf(xs, fit.n, fit.p)
    out = np.zeros_like(xs)
    for L, share in zip(limits, weights):
        out += share * np.where(xs <= L, pmf / nbinom.cdf(L, fit.n, fit.p), 0.0)
    return out


def not_fitted(successes: int, min_games: int, variant: str = "step_limit") -> StepFits:
    """What the report shows instead of a fit on too few games: no estimates, and why."""
    note = f"not fitted: {successes} successful game{'' if successes == 1 else 's'} (fewer than {min_games})"
    nan = math.nan
    free = NegBinomFit(nan, nan, nan, nan, nan, successes, False, note=note)
    geometric = NegBinomFit(1.0, nan, nan, nan, nan, successes, True, note=note)
    return StepFits(variant, free, geometric, LikelihoodRatio(nan, nan, nan), successes)


def fit_groups(
    extra: pd.DataFrame,
    games: dict[tuple[str, str], int],
    human_labels: set[str] = frozenset(),
    cutoff: int = HUMAN_CUTOFF,
    mode: str = "truncated",
    min_games: int = MIN_FIT_GAMES,
) -> list[tuple[str, str, StepFits]]:
    """Fits for every (label, graph) of a table of counts (columns label, graph, extra_steps,
    limit, games; see :func:`wikigame_spark.evaluation.tables.aggregate`): the step-limit fit
    for each, and the human variant too for the labels in ``human_labels``; a group with fewer
    than ``min_games`` successful games gets :func:`not_fitted` instead."""
    out = []
    for (label, graph), g in extra.groupby(["label", "graph"], sort=True):
        x, lim, w = g["extra_steps"].to_numpy(), g["limit"].to_numpy(float), g["games"].to_numpy()
        successes = int(w.sum())
        if successes < min_games:
            out.append((label, graph, not_fitted(successes, min_games)))
            continue
        out.append((label, graph, fit_steps(x, lim, w)))
        if label in human_labels:
            out.append((label, graph, fit_human(x, w, games.get((label, graph)), cutoff, mode)))
    return out


def fit_table(fits: list[tuple[str, str, StepFits]]) -> pd.DataFrame:
    """One row per fit: estimates ± SE with n free and n = 1, NLLs, the likelihood-ratio test."""
    rows = []
    for label, graph, f in fits:
        rows.append(
            {
                "agent": label,
                "graph": graph,
                "variant": f.variant if f.cutoff is None else f"{f.variant} ({f.mode}, > {f.cutoff} unknown)",
                "successes": f.successes,
                "fitted": f.free.games,
                "n": f.free.n,
                "n_se": f.free.n_se,
                "p": f.free.p,
                "p_se": f.free.p_se,
                "nll": f.free.nll,
                "geometric_p": f.geometric.p,
                "geometric_p_se": f.geometric.p_se,
                "geometric_nll": f.geometric.nll,
                "lrt_statistic": f.lrt.statistic,
                "lrt_p_value": f.lrt.p_value,
                "implied_success_rate": f.implied_success_rate,
                "implied_success_rate_se": f.implied_success_rate_se,
                "note": "; ".join(n for n in (f.free.note, f.geometric.note) if n),
            }
        )
    return pd.DataFrame(rows)
