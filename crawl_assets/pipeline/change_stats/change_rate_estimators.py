"""Change-rate estimators for pages we only see at visits (Cho and Garcia-Molina, "Estimating
frequency of change", ACM TOIT 2003), vectorised over many URLs at once.

A page changes as a Poisson process with rate λ (changes per day). Between two visits t days
apart we only learn whether it changed (probability 1 - e^{-λt}), never how often. So:

- regular visits (every interval the same length I, n intervals, X saw a change): the
  bias-reduced estimator λ̂ = -log((n - X + 0.5) / (n + 0.5)) / I, finite even when X = n;
- irregular visits: the maximum-likelihood estimate, the root of
  Σ_changed t_i / (e^{λ t_i} - 1) = Σ_unchanged t_j (solved here by bisection on log λ);
- where Last-Modified is trustworthy, the time since the last change is observed, the
  likelihood is λ^X e^{-λT} and the counts go straight into the pooled prior below.

Every estimate is turned into an "effective count of changes" X_eff = λ̂ · T over the
observed days T, so that one gamma-Poisson shrinkage (X_eff + a) / (T + b) serves all of
them: a URL with a long history keeps its own estimate, a URL seen once gets the prior a / b
of its URL pattern or host.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum

import numpy as np

from ...crawler.runtime import NUMPY_THREADS

# Bounds of the rate search, changes per day: once a year at the slowest resolvable end
# (slower is "never" for a daily crawl), 1,000 a day at the fast end (far beyond any revisit).
MIN_RATE = 1e-5
MAX_RATE = 1e3
_BISECTION_STEPS = 40  # halves log(MAX_RATE / MIN_RATE) ≈ 18.4 down to ~2e-11
_PARALLEL_MIN_URLS = 50_000  # URLs each thread must get for the search to be split


class RateEstimator(StrEnum):
    """Which estimator produced a URL's own rate (change_stats.urls.estimator)."""

    PRIOR = "prior"  # no interval yet: the pooled prior alone
    BIAS_REDUCED = "bias_reduced"  # regular intervals (or a change at every visit)
    MLE = "mle"  # irregular intervals
    LAST_MODIFIED = "last_modified"  # honest Last-Modified on this host


def bias_reduced_rate(intervals: np.ndarray, changes: np.ndarray, interval_days: np.ndarray) -> np.ndarray:
    """-log((n - X + 0.5) / (n + 0.5)) / I for n intervals of I days, X of them changed."""
    n = intervals.astype(np.float64)
    x = changes.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = -np.log((n - x + 0.5) / (n + 0.5)) / interval_days
    return np.where((n > 0) & (interval_days > 0), rate, 0.0)


def irregular_mle_rate(changed_intervals: np.ndarray, owner: np.ndarray, unchanged_days: np.ndarray) -> np.ndarray:
    """The root λ of Σ_changed t/(e^{λt} - 1) = Σ_unchanged t per URL (bisection on log λ).

    changed_intervals: the lengths (days) of every interval that saw a change, flattened;
    owner: the index (0..m-1) of the URL each one belongs to; unchanged_days: per URL, the
    total length of its intervals without a change (must be > 0: with none unchanged the
    likelihood grows without bound, and the caller uses the bias-reduced estimate instead).
    The left side falls monotonically in λ, so bisection converges for every URL at once."""
    m = len(unchanged_days)
    assert changed_intervals.shape == owner.shape
    assert m == 0 or unchanged_days.min() > 0, "the MLE needs some unchanged time"
    parts = min(NUMPY_THREADS, m // _PARALLEL_MIN_URLS)
    if parts < 2 or np.any(owner[1:] < owner[:-1]):
        return _bisect(changed_intervals, owner, unchanged_days)
    # Each URL's root is its own: equal parts of the URLs (owner ascending) are solved on
    # threads of their own (numpy releases the GIL in its loops), with the same arithmetic as one pass.
    bounds = [m * i // parts for i in range(parts + 1)]
    cuts = np.searchsorted(owner, bounds)
    with ThreadPoolExecutor(parts) as pool:
        solved = [pool.submit(_bisect, changed_intervals[cuts[i]:cuts[i + 1]], owner[cuts[i]:cuts[i + 1]] - bounds[i],
                              unchanged_days[bounds[i]:bounds[i + 1]]) for i in range(parts)]
        return np.concatenate([part.result() for part in solved])


def _bisect(changed_intervals: np.ndarray, owner: np.ndarray, unchanged_days: np.ndarray) -> np.ndarray:
    m = len(unchanged_days)
    lo = np.full(m, np.log(MIN_RATE))
    hi = np.full(m, np.log(MAX_RATE))
    lam, terms = np.empty(len(owner)), np.empty(len(owner))
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        np.take(np.exp(mid), owner, out=lam)
        # t / (e^{λt} - 1), written with expm1 so short intervals keep their precision.
        np.multiply(lam, changed_intervals, out=terms)
        np.minimum(terms, 700.0, out=terms)
        np.expm1(terms, out=terms)
        np.divide(changed_intervals, terms, out=terms)
        excess = np.bincount(owner, weights=terms, minlength=m) - unchanged_days
        # Positive excess: λ too small (the change side still outweighs), move up.
        lo = np.where(excess > 0, mid, lo)
        hi = np.where(excess > 0, hi, mid)
    return np.exp(0.5 * (lo + hi))


def shrunk_rate(effective_changes, observed_days, prior_changes, prior_days):
    """Posterior mean of a gamma(a, b) prior after X changes in T days: (X + a) / (T + b)."""
    return (effective_changes + prior_changes) / (observed_days + prior_days)


def own_share(observed_days, prior_days):
    """How much of the estimate comes from the URL's own history, T / (T + b), in [0, 1]."""
    return observed_days / (observed_days + prior_days)
