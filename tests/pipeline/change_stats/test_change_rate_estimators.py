"""The bias-reduced change-rate estimator for regular visits (Cho and Garcia-Molina, "Estimating
frequency of change", ACM TOIT 2003) at the small visit counts where its constants matter:
exact values from the paper's formula written out here with math.log, and its near absence of
bias, which is the reason for the 0.5s (the naive -log((n - X) / n) / I is infinite at X = n)."""

import math

import numpy as np
import pytest

from crawl_assets.pipeline.change_stats.change_rate_estimators import bias_reduced_rate


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
