"""The refresh allocation's maths on small arrays, without the priorities step: the freshness
of a copy, the frequency each page takes at a price (the inverse of its marginal value, both
objectives, both of the curve's tables), and the allocation of a budget under host caps, held
to its optimality conditions (one price for pages of hosts under their cap, a price of its own
at least as high for each capped host, the budget and the caps spent, none exceeded)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crawl_assets.pipeline.priorities.refresh_allocation import (AllocationPart, allocate, crawl_log_price, edge_share,
                                                                 freshness, frequencies_at_price)

# The allocation silences numpy where it divides by 0 on purpose: it must not warn.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def g(x):
    """Freshness's marginal value per w/λ at x = λ/f: 1 - (1 + x)e^{-x}, rising from 0 to 1."""
    return -np.expm1(-x) - x * np.exp(-x)


def h(x):
    """Age's marginal value per w/λ² at x = λ/f: x²/2 - g(x), unbounded."""
    return x * x / 2 - g(x)


def marginal(objective, rate, weight, f):
    """A page's marginal value (of one more fetch a day) at f fetches a day."""
    x = rate / f
    return weight / rate * g(x) if objective == "freshness" else weight / rate ** 2 * h(x)


# The curve is tabulated in steps of u = ln(level) (0.08 % of the level), each level read at
# the step below it: a page gets its exact f or a little more (x = λ/f a little less); above
# level 0.5 (x > 1.68) freshness's table is in steps of ln(1 - level), read at the step below
# it: the exact f or a little less.
NEAR_ONE_X = 1.6783  # g(x) = 0.5


def assert_inverse(f, exact, x, objective="freshness"):
    ratio = f / exact - 1
    near = (x > NEAR_ONE_X) if objective == "freshness" else np.zeros(len(x), dtype=bool)
    assert (ratio[~near] >= -1e-8).all() and (ratio[~near] <= 8e-4).all(), (ratio[~near].min(), ratio[~near].max())
    assert (ratio[near] >= -6e-4).all() and (ratio[near] <= 1e-5).all(), (ratio[near].min(), ratio[near].max())


def test_freshness_is_the_share_of_time_a_fetched_copy_is_fresh():
    # F(λ, f) = (f/λ)(1 - e^{-λ/f}): a page changing once a day fetched once a day is fresh
    # 63 % of the time, fetched twice a day 79 %, once every other day 43 %.
    f = freshness([1.0, 1.0, 1.0, 0.5, 3.0], [1.0, 2.0, 0.5, 1.0, 0.25])
    np.testing.assert_allclose(f, [1 - np.exp(-1), 2 * (1 - np.exp(-0.5)), 0.5 * (1 - np.exp(-2)),
                                   2 * (1 - np.exp(-0.5)), (1 - np.exp(-12)) / 12], rtol=1e-12)
    # a page that never changes is always fresh, fetched or not; a changing page never fetched never
    assert freshness([0, 0, 0.0], [0, 1, 2.0]).tolist() == [1.0, 1.0, 1.0]
    assert freshness([0.2, 5], [0, 0]).tolist() == [0.0, 0.0]
    assert freshness(2, 2).shape == ()


@pytest.mark.parametrize("price_per_page", [False, True])
def test_at_a_price_each_page_takes_the_frequency_whose_marginal_freshness_is_the_price(price_per_page):
    """f = λ / g⁻¹(price λ / w), at one price for every page or a price per page, over both
    of the curve's tables (x = λ/f below and above 1.68, where g = 0.5) and up to max_per_day."""
    rng = np.random.default_rng(1)
    n = 4000
    x = np.exp(rng.uniform(np.log(1e-5), np.log(30.0), n))  # λ/f, from 100,000 fetches a change to 1 in 30
    rate = np.exp(rng.uniform(-8, 4, n))
    price = np.exp(rng.uniform(-6, 3, n)) if price_per_page else 0.37
    weight = price * rate / g(x)  # the weight at which the price is the page's marginal value
    exact = rate / x
    f = frequencies_at_price(price, rate, weight, max_per_day=1e12)
    assert_inverse(f, exact, x)
    # levels price·λ/w from e^-60 to e^-20 (the curve's first steps among them): max_per_day
    level = np.exp(np.linspace(-60, -20, 200_001))
    assert (frequencies_at_price(level, np.ones(len(level)), np.ones(len(level)), max_per_day=1.0) == 1.0).all()
    assert (x < NEAR_ONE_X).sum() > 500 and (x > NEAR_ONE_X).sum() > 500  # both tables
    # at most max_per_day
    capped = frequencies_at_price(price, rate, weight, max_per_day=1.0)
    np.testing.assert_array_equal(capped, np.minimum(f, 1.0))
    assert 500 < (exact > 1).sum() < n - 500
    # The same pages at one price or at that price given per page: the same frequencies.
    each = np.broadcast_to(np.asarray(price, dtype=float), (n,)).copy()
    np.testing.assert_array_equal(frequencies_at_price(each, rate, weight, 1e12), f)
    if not price_per_page:
        np.testing.assert_array_equal(frequencies_at_price(price, rate, weight, 1e12), f)


def test_a_page_whose_marginal_freshness_never_reaches_the_price_gets_nothing():
    """At price pλ/w >= 1 no frequency is worth the price (g < 1); just below it a page
    revisited once in up to about 40 of its changes still gets its share, past that none."""
    rate = np.ones(7)
    level = np.array([1.0, 1.5, 100.0, *(1 - (1 + x) * np.exp(-x) for x in (39.0, 30.0, 20.0)), 0.5])
    f = frequencies_at_price(level, rate, np.ones(7), max_per_day=10.0)
    assert f[:3].tolist() == [0.0, 0.0, 0.0]
    assert (f[3:] > 0).all()
    x = rate[3:] / f[3:]
    np.testing.assert_allclose(x[1:], [30.0, 20.0, 1.6783], rtol=2e-3)
    assert 38 < x[0] < 41  # (its level is within a few float steps of 1: no closer)
    # the same at one price for every page
    for one, expected in zip(level, f):
        assert frequencies_at_price(one, [1.0], [1.0], max_per_day=10.0)[0] == expected


@pytest.mark.parametrize("price_per_page", [False, True])
def test_at_a_price_each_page_takes_the_frequency_whose_marginal_age_is_the_price(price_per_page):
    """Age: f = λ / h⁻¹(price λ² / w), h unbounded: every changing page gets some share."""
    rng = np.random.default_rng(2)
    n = 3000
    x = np.exp(rng.uniform(np.log(2e-3), np.log(1e8), n))
    rate = np.exp(rng.uniform(-6, 3, n))
    price = np.exp(rng.uniform(-6, 3, n)) if price_per_page else 2.5
    weight = price * rate ** 2 / h(x)
    f = frequencies_at_price(price, rate, weight, max_per_day=1e12, objective="age")
    assert_inverse(f, rate / x, x, "age")
    assert (f > 0).all()
    # at any level, up to e^60 (past the curve's table: the f of its last step)
    level = np.exp(np.linspace(0, 60, 1001))
    f = frequencies_at_price(level, np.ones(len(level)), np.ones(len(level)), objective="age")
    assert (f > 0).all() and (np.diff(f) <= 0).all()


def test_at_a_price_of_nothing_pages_take_max_per_day():
    assert (frequencies_at_price(0.0, [0.3, 2.0, 0.0], [1.0, 1.0, 1.0], max_per_day=3.0) == [3.0, 3.0, 0.0]).all()


def test_pages_that_never_change_or_weigh_nothing_get_no_fetch():
    rate = np.array([0.0, 0.3, 0.3, 2.0, 0.3])
    weight = np.array([1.0, 0.0, 2.0, 10.0, 2.0])
    f = frequencies_at_price(0.5, rate, weight)
    assert f[0] == 0 and f[1] == 0
    assert f[2] == f[4] > 0
    np.testing.assert_array_equal(f[2:], frequencies_at_price(0.5, rate[2:], weight[2:]))
    assert (f <= 1.0).all() and f[3] == 1.0  # max_per_day is 1 unless given


def check_optimum(result, rate, weight, host, cap, budget, max_per_day=1.0, objective="freshness", rtol=5e-3,
                  short=1e-4):
    """The allocation's optimality (KKT) conditions: the budget spent unless every page has
    all the caps and max_per_day allow, no host past its cap; pages of hosts under their cap
    strictly between 0 and max_per_day have the marginal value μ (the price), those at 0 at
    most μ, those at max_per_day at least μ; each capped host's pages likewise around a price
    ν_h >= μ of its own, and its pages sum to its cap. Returns each capped host's ν_h."""
    f = result.frequency
    mu = result.price
    active = (rate > 0) & (weight > 0)
    assert (f[~active] == 0).all() and (f >= 0).all() and (f <= max_per_day).all()
    per_host = np.bincount(host, weights=f, minlength=len(cap))
    assert (per_host <= cap * (1 + 1e-9) + 1e-9).all()
    reachable = np.minimum(np.bincount(host[active], minlength=len(cap)) * max_per_day, cap).sum()
    assert f.sum() <= budget * (1 + 1e-6) + 1e-9
    assert f.sum() >= min(budget, reachable) * (1 - short)
    capped = np.zeros(len(cap), dtype=bool)
    capped[result.capped_hosts] = True
    # (a capped host's sum moves in the steps of its pages' f: a little under its cap)
    assert (per_host[capped] >= cap[capped] * (1 - 1e-3)).all()
    prices = {}
    for h_ in range(len(cap)):
        pages = np.flatnonzero((host == h_) & active)
        if len(pages) == 0:
            continue
        fp = f[pages]
        inner = (fp > 0) & (fp < max_per_day)
        value = marginal(objective, rate[pages[inner]], weight[pages[inner]], fp[inner])
        if cap[h_] == 0:
            assert (fp == 0).all()
            continue
        if capped[h_]:
            nu = np.median(value) if len(value) else mu
            assert nu >= mu * (1 - rtol), (h_, nu, mu)
            prices[h_] = nu
        else:
            nu = mu
        np.testing.assert_allclose(value, nu, rtol=rtol)
        at_zero = pages[fp == 0]
        zero_value = weight[at_zero] / rate[at_zero] * (1 if objective == "freshness" else np.inf)
        assert (zero_value <= nu * (1 + rtol)).all(), (h_, zero_value.max(), nu)
        at_max = pages[fp == max_per_day]
        assert (marginal(objective, rate[at_max], weight[at_max], max_per_day) >= nu * (1 - rtol)).all()
    return prices


def random_web(seed, pages=3000, hosts=40):
    rng = np.random.default_rng(seed)
    rate = rng.lognormal(-2, 1.5, pages)
    weight = 1 + rng.zipf(2.0, pages).astype(float)
    host = rng.integers(0, hosts, pages)
    cap = rng.choice([0.5, 3.0, 1e9], hosts)
    return rate, weight, host, cap


@pytest.mark.parametrize("objective", ["freshness", "age"])
@pytest.mark.parametrize("budget", [30, 300])
def test_the_allocation_meets_the_optimality_conditions_under_host_caps(objective, budget):
    rate, weight, host, cap = random_web(3)
    result = allocate(rate, weight, host, cap, budget=budget, objective=objective)
    prices = check_optimum(result, rate, weight, host, cap, budget, objective=objective)
    assert result.frequency.sum() == pytest.approx(budget, rel=1e-4)
    # some hosts bind, at a price of their own above the crawl's (their pages are worth more)
    assert len(result.capped_hosts) >= 3
    assert max(prices.values()) > 1.5 * result.price
    # the capped hosts are those whose pages would take more than their cap at the crawl's price
    demand = np.bincount(host, weights=frequencies_at_price(result.price, rate, weight, objective=objective),
                         minlength=len(cap))
    np.testing.assert_array_equal(result.capped_hosts, np.flatnonzero(demand > cap * (1 + 1e-3)))


def test_the_allocation_spends_on_pages_by_their_worth_not_their_change_rate():
    """Of two pages alike but for their importance, the more important is fetched more; a page
    changing far faster than the budget can follow gets nothing (pλ/w >= 1), unless it weighs
    enough more."""
    rate = np.array([0.05] * 198 + [50.0, 0.05, 50.0])
    weight = np.array([1.0] * 198 + [1.0, 3.0, 5000.0])
    result = allocate(rate, weight, np.zeros(201, int), np.array([1e9]), budget=10)
    # (the 198 pages alike move together, in steps of their level's table: the spend too)
    check_optimum(result, rate, weight, np.zeros(201, int), np.array([1e9]), 10, short=1e-3)
    f = result.frequency
    assert f[198] == 0 and f[199] > f[0] > 0 and f[200] > f[199]
    assert result.price >= 1 / 50


@pytest.mark.parametrize("max_per_day", [0.25, 2.0])
def test_no_page_gets_more_than_max_per_day(max_per_day):
    rate, weight, host, cap = random_web(4, pages=500, hosts=10)
    rate[:50] = 20.0  # pages changing many times a day, worth fetching as often as allowed
    weight[:50] = 1000.0
    result = allocate(rate, weight, host, cap, budget=60, max_per_day=max_per_day)
    check_optimum(result, rate, weight, host, cap, 60, max_per_day=max_per_day)
    assert (result.frequency[:50] == max_per_day).sum() > 10


def test_a_budget_the_pages_cannot_use_gives_each_all_its_host_and_max_per_day_allow():
    rate = np.array([0.5, 0.1, 2.0, 0.0, 1.0, 1.0, 1.0])
    host = np.array([0, 0, 0, 0, 1, 1, 1])
    cap = np.array([10.0, 1.5])
    result = allocate(rate, np.ones(7), host, cap, budget=100)
    assert result.price == 0.0  # any fetch is worth having
    assert result.frequency[:4].tolist() == [1.0, 1.0, 1.0, 0.0]
    # the capped host's three pages share its cap, the fastest-changing... all alike: equally
    assert (result.frequency[4:] == result.frequency[4]).all() and 0.5 * (1 - 1e-3) <= result.frequency[4] <= 0.5
    assert result.capped_hosts.tolist() == [1]
    # exactly what the pages can take: the same
    exact = allocate(rate, np.ones(7), host, cap, budget=4.5)
    np.testing.assert_allclose(exact.frequency, result.frequency, rtol=1e-3)
    assert exact.price == 0.0


def test_a_host_with_a_cap_of_nothing_gets_nothing_and_a_host_without_pages_no_room():
    rate, weight = np.array([0.3, 0.3, 0.2, 0.5]), np.array([1.0, 1.0, 2.0, 2.0])
    host = np.array([0, 0, 1, 1])
    cap = np.array([0.0, 10.0, 5.0])  # host 0 may take nothing; host 2 has no page here
    result = allocate(rate, weight, host, cap, budget=1.0)
    assert result.frequency[:2].tolist() == [0.0, 0.0]
    assert result.frequency.sum() == pytest.approx(1.0, rel=1e-3)  # (two pages alike: the spend moves in steps)
    check_optimum(result, rate, weight, host, cap, 1.0, short=1e-3)


def test_a_host_binds_at_its_cap_whatever_max_per_day_allows():
    # ten pages worth much more than the others, max_per_day 2: they would take 20, their host's cap is 15
    rate = np.r_[np.full(10, 5.0), np.full(50, 0.1)]
    weight = np.r_[np.full(10, 1000.0), np.full(50, 1.0)]
    host = np.r_[np.zeros(10, dtype=int), np.ones(50, dtype=int)]
    result = allocate(rate, weight, host, np.array([15.0, 1e9]), budget=30, max_per_day=2.0)
    assert result.capped_hosts.tolist() == [0]
    assert result.frequency[:10].sum() == pytest.approx(15.0, rel=1e-3) and result.frequency[:10].sum() <= 15.0
    check_optimum(result, rate, weight, host, np.array([15.0, 1e9]), 30, max_per_day=2.0, short=1e-3)


@pytest.mark.parametrize("objective", ["freshness", "age"])
def test_a_budget_of_nothing_gives_no_page_a_fetch(objective):
    rate, weight, host, cap = random_web(5, pages=200, hosts=5)
    result = allocate(rate, weight, host, cap, budget=0.0, objective=objective)
    assert (result.frequency == 0).all() and result.price == np.inf and len(result.capped_hosts) == 0
    with pytest.raises(AssertionError):
        allocate(rate, weight, host, cap, budget=-1.0)


def test_an_unknown_objective_is_named_in_the_error():
    with pytest.raises(ValueError, match=r"objective must be one of \('freshness', 'age'\), not 'speed'"):
        allocate([1.0], [1.0], [0], [1.0], budget=1, objective="speed")


def test_pages_that_never_change_or_weigh_nothing_leave_the_others_allocation_as_it_was():
    rate, weight, host, cap = random_web(6, pages=1000, hosts=12)
    result = allocate(rate, weight, host, cap, budget=120)
    # the same pages with others that never change or weigh nothing among them
    more = 1000 + 300
    at = np.sort(np.random.default_rng(7).choice(more, 1000, replace=False))
    rate2, weight2, host2 = np.zeros(more), np.ones(more), np.zeros(more, dtype=int)
    rate2[at], weight2[at], host2[at] = rate, weight, host
    others = np.setdiff1d(np.arange(more), at)
    weight2[others[::2]] = 0.0
    rate2[others[::2]] = 3.0
    host2[others] = np.arange(len(others)) % 12
    with_idle = allocate(rate2, weight2, host2, cap, budget=120)
    assert with_idle.price == result.price
    np.testing.assert_array_equal(with_idle.frequency[at], result.frequency)
    assert (with_idle.frequency[others] == 0).all()
    np.testing.assert_array_equal(with_idle.capped_hosts, result.capped_hosts)


def test_pages_alike_changing_faster_than_the_budget_follows_share_it_equally():
    """100 pages alike, each changing 50 times a day, 10 fetches: the optimum's price is w/λ
    (every split is as good: F is then f/λ), where the curve gives each nothing; the budget is
    shared equally instead of left unspent. On a host at its cap, the cap is shared alike."""
    rate, weight, host = np.full(100, 50.0), np.ones(100), np.zeros(100, dtype=int)
    result = allocate(rate, weight, host, np.array([1e9]), budget=10)
    np.testing.assert_allclose(result.frequency, 0.1, rtol=1e-9)
    assert result.price == pytest.approx(1 / 50, rel=1e-9)
    # beside ten slow pages that take 4.97 of a budget of 5.2: the fast ones share the 0.23 left
    rate2, weight2 = np.r_[rate, np.full(10, 0.01)], np.r_[weight, np.ones(10)]
    result = allocate(rate2, weight2, np.zeros(110, dtype=int), np.array([1e9]), budget=5.2)
    left = 5.2 - result.frequency[100:].sum()
    assert 0.2 < left < 0.3
    np.testing.assert_allclose(result.frequency[:100], left / 100, rtol=1e-6)
    # Two hosts of such pages, the first capped at 4: it takes its 4, the other the 26 left.
    rate, weight, host = np.r_[rate, rate], np.r_[weight, weight], np.r_[host, np.ones(100, dtype=int)]
    result = allocate(rate, weight, host, np.array([4.0, 1e9]), budget=30)
    np.testing.assert_allclose(result.frequency[:100], 0.04, rtol=1e-9)
    np.testing.assert_allclose(result.frequency[100:], 0.26, rtol=1e-9)
    # both capped, at 4 and 5: each at its cap, the rest of the budget unspent
    result = allocate(rate, weight, host, np.array([4.0, 5.0]), budget=30)
    np.testing.assert_allclose(np.bincount(host, weights=result.frequency), [4.0, 5.0], rtol=1e-9)
    # over shards: the same
    split = split_by_host(rate, weight, host, np.array([4.0, 1e9]), 2, seed=1)
    assert len({len(rows) for rows, _ in split}) == 1  # one host each
    parts = [part for _, part in split]
    log_price = crawl_log_price(parts, 30)
    share = edge_share(parts, log_price, 30)
    frequency = np.zeros(200)
    for rows, part in split:
        frequency[rows] = part.frequencies(log_price, share)[0]
    np.testing.assert_array_equal(frequency, allocate(rate, weight, host, np.array([4.0, 1e9]), budget=30).frequency)


# The curve's table ends where 1 - g(x) = (1 + x)e^{-x} is e^-38: x of about 41.7 (a page
# fetched once in 41.7 of its changes); a page at the price's edge gets at most λ / X_MAX.
X_MAX = 41.0
for _ in range(50):
    X_MAX -= (math.log1p(X_MAX) - X_MAX + 38.0) / (1 / (1 + X_MAX) - 1)


def exact_frequency(price, rate, weight):
    """λ / g⁻¹(price λ / w) by bisection on x."""
    lo, hi = 1e-12, 1e3
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if g(np.array(mid)) < price * rate / weight else (lo, mid)
    return rate / hi


def test_the_budget_left_at_the_edge_fills_hosts_to_their_caps_and_the_rest_equally():
    """Pages changing 50 times a day (w/λ = 0.02) on five hosts beside slow pages: the price is
    their w/λ, where the curve gives them nothing; what the slow pages leave of the budget is
    shared among them, each host within its cap (the capped ones filled first), each page at
    most λ / X_MAX. Host 4's pages are worth more (w/λ = 0.2): over its cap at the crawl's
    price, its own price reaches their edge, and its cap is shared the same way."""
    rows = [(0, 10, 0.01, 1.0), (0, 100, 50.0, 1.0),  # uncapped: slow and fast pages
            (1, 7, 0.01, 1.0), (1, 100, 50.0, 1.0),  # cap 4: the slow pages leave it 0.52
            (2, 100, 50.0, 1.0), (2, 10, 0.5, 0.01),  # cap 20, more than it takes; pages whose λ/X_MAX < the share
            (3, 6, 0.01, 1.0), (3, 1, 50.0, 1.0),  # cap 3: the slow pages leave it 0.02
            (4, 100, 50.0, 10.0), (4, 10, 0.1, 0.02),  # cap 1, over it at the crawl's price
            (5, 1, 50.0, 1.0)]  # cap 0.3: more than the share
    host = np.concatenate([np.full(n, h) for h, n, _, _ in rows])
    rate = np.concatenate([np.full(n, r) for _, n, r, _ in rows])
    weight = np.concatenate([np.full(n, w) for _, n, _, w in rows])
    group = np.concatenate([np.full(n, i) for i, (_, n, _, _) in enumerate(rows)])
    cap = np.array([1e9, 4.0, 20.0, 3.0, 1.0, 0.3])
    result = allocate(rate, weight, host, cap, budget=30)
    f = result.frequency
    assert result.price == pytest.approx(0.02, rel=1e-9)
    assert result.capped_hosts.tolist() == [4]
    for i in range(len(rows)):  # pages alike get the same
        assert (f[group == i] == f[group == i][0]).all()
    each = [f[group == i][0] for i in range(len(rows))]
    slow = exact_frequency(0.02, 0.01, 1.0)
    np.testing.assert_allclose([each[0], each[2], each[6]], slow, rtol=8e-4)
    per_host = np.bincount(host, weights=f)
    np.testing.assert_allclose(per_host[[1, 3]], [4.0, 3.0], rtol=1e-9)  # filled to their caps
    assert each[3] == pytest.approx((4.0 - 7 * each[2]) / 100, rel=1e-9)
    assert each[7] == pytest.approx(3.0 - 6 * each[6], rel=1e-9)
    share = each[1]
    assert each[4] == share == each[10] and share > 0.05
    np.testing.assert_allclose([each[5], each[9]], [0.5 / X_MAX, 0.1 / X_MAX], rtol=1e-7)  # bound
    # host 4: its cap shared by its 110 pages, the ten bound at λ / X_MAX
    assert each[8] == pytest.approx(1 / 110, rel=1e-9)
    # the budget spent, but what the bound keeps from the edge pages of hosts 2 and 4
    assert f.sum() == pytest.approx(30 - 10 * (share - 0.5 / X_MAX) - 10 * (1 / 110 - 0.1 / X_MAX), rel=1e-7)
    # the same over shards, the crawl's share found from their answers
    split = split_by_host(rate, weight, host, cap, 3, seed=1)
    assert len(split) == 3 and min(len(rows_) for rows_, _ in split) > 0
    parts = [part for _, part in split]
    log_price = crawl_log_price(parts, 30)
    frequency = np.zeros(len(rate))
    for rows_, part in split:
        frequency[rows_] = part.frequencies(log_price, edge_share(parts, log_price, 30))[0]
    np.testing.assert_array_equal(frequency, f)


def split_by_host(rate, weight, host, cap, parts, seed, objective="freshness"):
    part_of = np.random.default_rng(seed).integers(0, parts, len(cap))
    split = []
    for p in range(parts):
        mine = np.flatnonzero(part_of == p)
        rows = np.flatnonzero(np.isin(host, mine))
        split.append((rows, AllocationPart(rate[rows], weight[rows], np.searchsorted(mine, host[rows]), cap[mine],
                                                 objective=objective)))
    return split


@pytest.mark.parametrize("objective", ["freshness", "age"])
def test_the_crawls_price_from_its_parts_is_the_one_process_price(objective):
    rate, weight, host, cap = random_web(8, pages=4000, hosts=60)
    whole = allocate(rate, weight, host, cap, budget=400, objective=objective)
    for parts in (3, 8):
        split = split_by_host(rate, weight, host, cap, parts, parts, objective)
        log_price = crawl_log_price([part for _, part in split], 400)
        assert np.exp(log_price) == whole.price
        frequency = np.zeros(len(rate))
        for rows, part in split:
            frequency[rows] = part.frequencies(log_price, 0.0)[0]
        np.testing.assert_array_equal(frequency, whole.frequency)


def test_a_large_crawl_brackets_its_price_on_a_sample_and_finds_the_same_price():
    rate, weight, host, cap = random_web(9, pages=20_000, hosts=200)
    whole = [AllocationPart(rate, weight, host, cap)]
    full = crawl_log_price(whole, 2_000)
    sampled = crawl_log_price(whole, 2_000, sample=1_000)
    assert sampled == pytest.approx(full, abs=1e-4)
    spend = sum(part.spend(sampled) for part in whole) / float(1 << 24)
    assert 2_000 * (1 - 1e-6) <= spend <= 2_000
    for parts in (2, 5):
        split = [part for _, part in split_by_host(rate, weight, host, cap, parts, seed=parts)]
        assert crawl_log_price(split, 2_000, sample=1_000) == sampled


def test_the_price_search_ends_affordable_for_budgets_small_and_large():
    """The search brackets the price wherever it lies (its first bracket is log μ in [-5, 5])."""
    rate, weight, host, cap = random_web(10, pages=2000, hosts=30)
    cap[:] = 1e9
    for budget in (0.5, 40, 1500, 1990):
        part = AllocationPart(rate, weight, host, cap)
        log_price = crawl_log_price([part], budget)
        spend = part.spend(log_price) / float(1 << 24)
        # (within 10^-6 of it, or of what a few pages at a high price can come to)
        assert budget * (1 - (1e-4 if budget < 1 else 1e-6)) <= spend <= budget, (budget, spend)
    # weights spread far: prices outside the first bracket, both ways
    for scale, budget in ((1e-6, 50), (1e6, 50), (1e-9, 1999.9)):
        part = AllocationPart(rate, weight * scale, host, cap)
        log_price = crawl_log_price([part], budget)
        spend = part.spend(log_price) / float(1 << 24)
        assert budget * (1 - 1e-6) <= spend <= budget, (scale, budget, spend)


class CountedPart(AllocationPart):
    """A part that counts the prices it is asked its spend at (each a pass over its pages)."""

    def spend(self, log_price: float) -> int:
        self.asked = getattr(self, "asked", set()) | {log_price}
        return super().spend(log_price)


@pytest.mark.parametrize("objective", ["freshness", "age"])
def test_the_price_search_asks_the_parts_few_questions(objective):
    """Each question is a pass over every part's pages (10 million of them on a large crawl):
    regula falsi on a smooth spend finds the price in about a dozen."""
    for seed, pages, hosts in ((3, 3000, 40), (8, 4000, 60), (10, 2000, 30)):
        rate, weight, host, cap = random_web(seed, pages, hosts)
        for budget in (100, 300):
            part = CountedPart(rate, weight, host, cap, objective=objective)
            log_price = crawl_log_price([part], budget)
            assert budget * (1 - 1e-6) <= part.spend(log_price) / float(1 << 24) <= budget
            assert len(part.asked) <= 20, (seed, budget, len(part.asked))

