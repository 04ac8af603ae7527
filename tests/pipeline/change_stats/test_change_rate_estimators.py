"""The bias-reduced change-rate estimator for regular visits (Cho and Garcia-Molina, "Estimating
frequency of change", ACM TOIT 2003) at the small visit counts where its constants matter:
exact values from the paper's formula written out here with math.log, and its near absence of
bias, which is the reason for the 0.5s (the naive -log((n - X) / n) / I is infinite at X = n)."""

import math
import warnings

import numpy as np
import pytest

from crawl_assets.pipeline.change_stats import change_rate_estimators
from crawl_assets.pipeline.change_stats.change_rate_estimators import (
    bias_reduced_rate, irregular_mle_rate, own_share, shrunk_rate)


def paper(n: int, x: int, interval_days: float) -> float:
    """λ̂ = -log((n - X + 0.5) / (n + 0.5)) / I, as printed in the paper."""
    return -math.log((n - x + 0.5) / (n + 0.5)) / interval_days


def rates(cases: list[tuple[int, int, float]]) -> list[float]:
    n, x, interval = zip(*cases)
    got = bias_reduced_rate(np.array(n, dtype=np.int64), np.array(x, dtype=np.int64),
                            np.array(interval, dtype=np.float64))
    assert got.shape == (len(cases),)
    return got.tolist()


CASES = [
    (10, 3, 1.0),  # ten daily visits, three saw a change
    (10, 1, 1.0),
    (10, 9, 1.0),
    (4, 1, 7.0),  # weekly visits: the rate is per day
    (6, 2, 0.5),  # twice a day
    (3, 2, 2.5),
    (1, 1, 1.0),  # one interval, changed: finite, log(3)
    (2, 1, 3.0),
    (25, 7, 1.0),
]


@pytest.mark.parametrize("n, x, interval", CASES)
def test_small_visit_counts_give_the_papers_value(n, x, interval):
    (got,) = rates([(n, x, interval)])
    assert math.isclose(got, paper(n, x, interval), rel_tol=1e-12, abs_tol=0.0), (got, paper(n, x, interval))


def test_a_vector_of_urls_gives_each_its_own_value():
    got = rates(CASES)
    for (n, x, interval), rate in zip(CASES, got):
        assert math.isclose(rate, paper(n, x, interval), rel_tol=1e-12, abs_tol=0.0), (n, x, interval, rate)


def test_no_change_seen_is_a_rate_of_zero():
    for n, interval in ((1, 1.0), (10, 1.0), (10, 7.0), (120, 0.5)):
        (got,) = rates([(n, 0, interval)])
        assert got == 0.0, (n, interval, got)


def test_a_change_at_every_visit_is_finite_log_2n_plus_1_over_the_interval():
    for n, interval in ((1, 1.0), (3, 1.0), (10, 1.0), (10, 7.0), (5, 0.25)):
        (got,) = rates([(n, n, interval)])
        want = math.log(2 * n + 1) / interval
        assert math.isfinite(got) and math.isclose(got, want, rel_tol=1e-12, abs_tol=0.0), (n, interval, got)


def test_no_interval_or_no_length_gives_zero():
    assert rates([(0, 0, 1.0), (5, 2, 0.0)]) == [0.0, 0.0]


def test_no_interval_or_no_length_gives_zero_without_a_warning():
    """0 / 0 and x / 0 are computed and thrown away: no RuntimeWarning for each day's step log."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rates([(0, 0, 0.0), (5, 2, 0.0), (3, 1, 0.0)]) == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("n", [5, 10, 20])
@pytest.mark.parametrize("changes_per_interval", [0.1, 0.3, 0.5, 1.0])
def test_the_estimate_is_nearly_unbiased_at_small_visit_counts(n, changes_per_interval):
    """E[λ̂] over X ~ Binomial(n, 1 - e^{-λI}), summed exactly: within 1 % of λ while λI <= 1
    (the paper's regime; at worst 0.7 % here). A wrong constant shows most at few visits."""
    interval = 2.0
    lam = changes_per_interval / interval
    q = 1.0 - math.exp(-lam * interval)
    xs = np.arange(n + 1)
    estimates = bias_reduced_rate(np.full(n + 1, n), xs, np.full(n + 1, interval))
    expected = sum(math.comb(n, int(x)) * q ** x * (1 - q) ** (n - x) * est for x, est in zip(xs, estimates))
    assert abs(expected / lam - 1.0) <= 0.01, (n, lam, expected)


# The irregular-visit MLE: the root λ of Σ_changed t / (e^{λt} - 1) = Σ_unchanged t.
def mle(changed: list[list[float]], unchanged_days: list[float]) -> list[float]:
    owner = np.repeat(np.arange(len(changed)), [len(c) for c in changed])
    flat = np.array([t for c in changed for t in c], dtype=np.float64)
    return irregular_mle_rate(flat, owner, np.array(unchanged_days, dtype=np.float64)).tolist()


def test_equal_intervals_give_the_mle_in_closed_form():
    """With every interval t days long, X of n changed: X t / (e^{λt} - 1) = (n - X) t, so
    λ = log(n / (n - X)) / t (not the bias-reduced value: no 0.5s)."""
    for n, x, t in ((10, 3, 1.0), (10, 9, 1.0), (4, 1, 7.0), (6, 5, 0.5), (2, 1, 3.0)):
        (got,) = mle([[t] * x], [(n - x) * t])
        want = math.log(n / (n - x)) / t
        assert math.isclose(got, want, rel_tol=1e-9), (n, x, t, got, want)


def test_irregular_intervals_give_each_url_the_root_of_its_own_equation():
    """Three URLs at once, their changed intervals given out of order: each λ makes its own
    two sides equal (written out with math.exp), to the bisection's precision."""
    changed = [[0.5, 2.0, 1.0], [7.0], [0.25, 0.25, 3.0, 1.5]]
    unchanged = [4.0, 30.0, 0.75]
    owner = [2, 0, 1, 2, 0, 2, 0, 2]  # the URL each flattened interval belongs to
    flat = [changed[u].pop(0) for u in owner]
    got = irregular_mle_rate(np.array(flat), np.array(owner), np.array(unchanged)).tolist()
    for url, lam in enumerate(got):
        mine = [t for t, o in zip(flat, owner) if o == url]
        changed_side = sum(t / math.expm1(lam * t) for t in mine)
        assert math.isclose(changed_side, unchanged[url], rel_tol=1e-8), (url, lam, changed_side)
    assert got[2] > got[0] > got[1]  # most change in least unchanged time: the fastest


def test_the_mle_stops_at_once_a_year_and_a_thousand_a_day():
    """A change in one day against ten thousand years unchanged is as slow as the search goes
    (1e-5 a day), and so is a URL none of whose intervals changed; a change in a millisecond
    against a microsecond unchanged is as fast (1e3)."""
    slow, fast, none = mle([[1.0], [0.001], []], [3.65e6, 1e-6, 5.0])
    assert math.isclose(slow, 1e-5, rel_tol=1e-9) and math.isclose(fast, 1e3, rel_tol=1e-9), (slow, fast)
    assert math.isclose(none, 1e-5, rel_tol=1e-9), none


def test_a_rate_tried_far_above_the_root_overflows_nothing():
    """A change over 1,000 days against almost no unchanged time: the search tries λ t up to
    10,000 on its way down to the root (λ = log(1 + 1000 / 1e-300) / 1000), with no overflow."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (got,) = mle([[1000.0]], [1e-300])
    assert math.isclose(got, math.log1p(1000 / 1e-300) / 1000, rel_tol=1e-9), got


def test_an_mle_with_no_unchanged_time_is_refused():
    with pytest.raises(AssertionError, match="^the MLE needs some unchanged time$"):
        mle([[1.0], [1.0]], [2.0, 0.0])


def test_no_url_no_root():
    assert mle([], []) == []


def test_shrinkage_is_the_gamma_posterior_mean_and_the_own_share_its_weight():
    """(X + a) / (T + b): 3 changes in 10 days under a prior of 1 change in 20 days is
    4 / 30; the URL's own share of that is T / (T + b) = 10 / 30."""
    assert math.isclose(shrunk_rate(3.0, 10.0, 1.0, 20.0), 4 / 30)
    assert math.isclose(own_share(10.0, 20.0), 1 / 3)
    assert own_share(0.0, 20.0) == 0.0 and shrunk_rate(0.0, 0.0, 1.0, 20.0) == 1 / 20


def test_the_mle_split_over_threads_finds_the_same_roots(monkeypatch):
    """irregular_mle_rate solves large batches in equal parts of the URLs, one a thread (at most
    NUMPY_THREADS, each of at least _PARALLEL_MIN_URLS): the same roots, bit for bit, as one
    pass, and each near the rate the intervals were drawn from. Intervals not grouped by URL
    are solved in one pass."""
    rng = np.random.default_rng(3)
    urls = 2_000
    rates = rng.uniform(0.05, 2.0, urls)
    visits = rng.uniform(0.2, 3.0, (urls, 30))  # irregular intervals (days)
    changed = rng.random((urls, 30)) < -np.expm1(-rates[:, None] * visits)
    changed[:, 0] = True  # some changed and some unchanged time: the MLE has a root
    changed[:, 1] = False
    owner = np.repeat(np.arange(urls), changed.sum(axis=1))
    unchanged = np.where(changed, 0.0, visits).sum(axis=1)
    solve = change_rate_estimators._bisect
    parts: list[int] = []  # the URLs of each pass

    def counted(changed_intervals, owner, unchanged_days):
        parts.append(len(unchanged_days))
        return solve(changed_intervals, owner, unchanged_days)

    monkeypatch.setattr(change_rate_estimators, "_bisect", counted)
    monkeypatch.setattr(change_rate_estimators, "_PARALLEL_MIN_URLS", 10**9)
    whole = change_rate_estimators.irregular_mle_rate(visits[changed], owner, unchanged)
    assert parts == [urls]
    for threads, least, expected in ((4, 600, [666, 667, 667]), (2, 1000, [1000, 1000]), (4, 1001, [urls])):
        parts.clear()
        monkeypatch.setattr(change_rate_estimators, "NUMPY_THREADS", threads)
        monkeypatch.setattr(change_rate_estimators, "_PARALLEL_MIN_URLS", least)
        split = change_rate_estimators.irregular_mle_rate(visits[changed], owner, unchanged)
        assert sorted(parts) == expected, (threads, least, parts)
        assert np.array_equal(split, whole)
    assert np.median(np.abs(whole / rates - 1)) < 0.3
    # The same intervals, the first left where it is and the rest in reverse: one pass.
    order = np.r_[0, np.arange(len(owner) - 1, 0, -1)]
    parts.clear()
    monkeypatch.setattr(change_rate_estimators, "NUMPY_THREADS", 2)
    monkeypatch.setattr(change_rate_estimators, "_PARALLEL_MIN_URLS", 1000)  # two parts, were they grouped
    shuffled = change_rate_estimators.irregular_mle_rate(visits[changed][order], owner[order], unchanged)
    assert parts == [urls] and np.allclose(shuffled, whole, rtol=1e-9, atol=0)
