"""How often to refetch each page: the freshness-optimal split of a daily fetch budget.

Cho and Garcia-Molina, "Effective page refresh policies for Web crawlers" (ACM TODS 2003): a
page changing at rate λ (a day) and fetched every 1/f days is fresh on average
F(λ, f) = (f/λ)(1 - e^{-λ/f}) of the time. We maximise Σ w_i F(λ_i, f_i) under

    Σ f_i <= budget                    (the crawl's daily fetches)
    Σ_{i on host h} f_i <= cap_h       (politeness: 86,400 / delay, and the host's budget)
    0 <= f_i <= max_per_day            (a daily batch fetches a URL at most once)

F is concave in f, so the optimum is where every page's marginal value w_i ∂F/∂f_i equals
one price: μ for pages of hosts under their cap, μ + ν_h for a host at its cap (the KKT
conditions; Kolobov et al., SIGIR 2019, "PoliteBinaryLambdaCrawl", solve the same problem by
nested binary search on the two kinds of multiplier). With x = λ/f,

    w ∂F/∂f = (w/λ) g(x),   g(x) = 1 - (1 + x) e^{-x}   rising from 0 to 1,

so at price p a page gets f = λ / g⁻¹(pλ/w), and nothing at all when pλ/w >= 1: a page that
changes far faster than we can afford to revisit it is not worth chasing. The age objective
(mean time a copy has been stale) has marginal value (w/λ²) h(x) with h(x) = x²/2 - g(x),
unbounded, so every changing page gets some share there.

Hosts at their cap are found by water-filling: solve μ over the free hosts, fix every host
whose demand exceeds its cap at exactly its cap (its own price, found by bisection for all
such hosts at once), and repeat with the budget left; μ only falls as hosts are fixed, so a
fixed host never needs to be released. Everything is vectorised numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...crawler.runtime import NUMPY_THREADS
from .slices import SLICE, over_slices

FRESHNESS = "freshness"
AGE = "age"
OBJECTIVES = (FRESHNESS, AGE)

_TOLERANCE = 1e-6  # relative error of the budget (and of each capped host's sum)


@dataclass(frozen=True)
class Allocation:
    frequency: np.ndarray  # fetches a day, per page
    price: float  # μ: the marginal value of one more fetch a day at the optimum
    capped_hosts: np.ndarray  # indices of hosts held at their cap


def freshness(rate, frequency):
    """F(λ, f): the expected share of time the copy is fresh (1 for a page that never changes)."""
    rate = np.asarray(rate, dtype=np.float64)
    frequency = np.asarray(frequency, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = -frequency / rate * np.expm1(-rate / frequency)
    return np.where(rate <= 0, 1.0, np.where(frequency > 0, value, 0.0))


class _InverseCurve:
    """1/x as a function of u = log(level), where level = g(x) (freshness) or h(x) (age),
    tabulated on a uniform grid of u so a lookup is one multiply and one take (pricing every
    page is a few passes over its arrays; the grid step is 0.1 % in level).

    Freshness's g rises to 1, and near 1 a step of u spans many x: a page revisited far less
    often than it changes (x = λ/f beyond about 7, as when the budget is a tenth of the pages)
    would get nothing at any price the grid tells apart, and the budget would go unspent. So
    above level NEAR_ONE the table is over v = ln(1 - level) instead (1 - g(x) = (1 + x)e^{-x},
    taken from u as ln(-expm1(u)) without cancelling), to x of about 40 (v = V_MIN): past
    that, as before, the marginal value never reaches the price."""

    STEPS = 1 << 16
    NEAR_ONE = 0.5
    V_MIN = -38.0

    def __init__(self, objective: str):
        self.u_near = np.inf  # (the age objective's h is unbounded: one table)
        if objective == FRESHNESS:
            x = np.logspace(-12, np.log10(36.0), 200_000)
            level = -np.expm1(-x) - x * np.exp(-x)  # g(x) = 1 - (1 + x)e^{-x}, from 0 to 1
            self.u0, u1 = -50.0, 0.0
            self.u_near = float(np.log(self.NEAR_ONE))
            far = np.linspace(0.5, 50.0, 200_000)
            v = np.log1p(far) - far  # ln(1 - g(x)), falling
            grid = np.linspace(self.V_MIN, np.log(1 - self.NEAR_ONE), self.STEPS)
            self.inv_dv = (self.STEPS - 1) / (np.log(1 - self.NEAR_ONE) - self.V_MIN)
            self.inverse_x_near = 1.0 / np.interp(grid, v[::-1], far[::-1])
        else:
            x = np.logspace(-3, 9, 200_000)  # below 1e-3, h(x) cancels to noise
            level = x * x / 2 - (-np.expm1(-x) - x * np.exp(-x))  # h(x) = x²/2 - g(x), unbounded
            self.u0, u1 = -60.0, 40.0
        keep = np.concatenate([[True], np.diff(level) > 0])  # strictly increasing for interp
        u = np.linspace(self.u0, u1, self.STEPS)
        self.inv_du = (self.STEPS - 1) / (u1 - self.u0)
        self.inverse_x = 1.0 / np.exp(np.interp(u, np.log(level[keep]), np.log(x[keep])))
        if objective == FRESHNESS:
            self.inverse_x[-1] = 0.0  # level >= 1: the marginal value never reaches the price

    def __call__(self, log_level: np.ndarray) -> np.ndarray:
        index = (log_level - self.u0) * self.inv_du
        np.clip(index, 0, self.STEPS - 1, out=index)
        inverse = self.inverse_x[index.astype(np.intp)]
        self._near_one(np.asarray(log_level), inverse)
        return inverse

    def _near_one(self, log_level: np.ndarray, inverse: np.ndarray) -> None:
        """1/x from the second table where the level is above NEAR_ONE (in place)."""
        near = np.flatnonzero(log_level > self.u_near)
        if len(near) == 0:
            return
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.log(-np.expm1(log_level[near]))  # ln(1 - level); NaN or -inf at level >= 1
        index = (v - self.V_MIN) * self.inv_dv
        within = index >= 0  # (False for NaN: level >= 1)
        index = np.clip(np.nan_to_num(index, nan=0.0), 0, self.STEPS - 1).astype(np.intp)
        inverse[near] = np.where(within, self.inverse_x_near[index], 0.0)

    def frequencies_into(self, out: np.ndarray, log_ratio: np.ndarray, log_price: float, rate: np.ndarray,
                         max_per_day: float) -> np.ndarray:
        """min(rate / x, max_per_day) at level ratio·price, written into `out` (the same values
        as rate * self(log_ratio + log_price), without more temporaries than the pages near
        level 1 need)."""
        np.add(log_ratio, log_price, out=out)
        near = np.flatnonzero(out > self.u_near)
        log_near = out[near]
        np.subtract(out, self.u0, out=out)
        np.multiply(out, self.inv_du, out=out)
        np.clip(out, 0, self.STEPS - 1, out=out)
        np.take(self.inverse_x, out.astype(np.intp), out=out)
        if len(near):
            part = out[near]
            self._near_one(log_near, part)
            out[near] = part
        np.multiply(out, rate, out=out)
        return np.minimum(out, max_per_day, out=out)


_CURVES = {objective: None for objective in OBJECTIVES}


def _curve(objective: str) -> _InverseCurve:
    if _CURVES[objective] is None:
        _CURVES[objective] = _InverseCurve(objective)
    return _CURVES[objective]


class _Pages:
    """Pages with λ > 0 and w > 0 (the others get f = 0), ready to be priced."""

    def __init__(self, rate, weight, max_per_day, objective):
        self.rate = rate
        # level = price·λ/w (freshness) or price·λ²/w (age); only its log is needed.
        power = 1.0 if objective == FRESHNESS else 2.0
        self.log_ratio = np.empty(len(rate))

        def log_ratio(s):
            out = np.log(rate[s], out=self.log_ratio[s])
            np.multiply(out, power, out=out)
            np.subtract(out, np.log(weight[s]), out=out)

        over_slices(len(rate), log_ratio)
        self.max_per_day = max_per_day
        self.curve = _curve(objective)
        self.spent = {}  # log price -> spend: the price search asks for some more than once

    def take(self, index) -> "_Pages":
        if len(index) == len(self.rate):  # every page (index is increasing): no copy
            return self
        part = object.__new__(_Pages)
        part.rate, part.log_ratio = self.rate[index], self.log_ratio[index]
        part.max_per_day, part.curve, part.spent = self.max_per_day, self.curve, {}
        return part

    def frequencies(self, log_price) -> np.ndarray:
        if np.ndim(log_price):  # a price per page (_fill_hosts_to_cap)
            f = self.rate * self.curve(self.log_ratio + log_price)
            return np.minimum(f, self.max_per_day, out=f)
        f = np.empty(len(self.rate))
        over_slices(len(f), lambda s: self.curve.frequencies_into(
            f[s], self.log_ratio[s], log_price, self.rate[s], self.max_per_day))
        return f

    def spend(self, log_price: float) -> float:
        """Σ f at the price, one full pass over the pages (in slices, on every core)."""
        if log_price == -np.inf and len(self.rate) and \
                self.rate.min() * self.curve.inverse_x[0] >= self.max_per_day:
            return float(len(self.rate) * self.max_per_day)  # every page at max_per_day
        if log_price not in self.spent:
            buffers = [np.empty(min(SLICE, len(self.rate))) for _ in range(NUMPY_THREADS)]
            sums = over_slices(len(self.rate), lambda s, i: float(self.curve.frequencies_into(
                buffers[i][:s.stop - s.start], self.log_ratio[s], log_price, self.rate[s],
                self.max_per_day).sum()), with_worker=True)
            self.spent[log_price] = float(sum(sums))
        return self.spent[log_price]


def frequencies_at_price(price, rate, weight, max_per_day=1.0, objective=FRESHNESS):
    """The f that makes each page's marginal value equal `price` (array or scalar)."""
    rate = np.asarray(rate, dtype=np.float64)
    weight = np.asarray(weight, dtype=np.float64)
    active = (rate > 0) & (weight > 0)
    f = np.zeros(rate.shape)
    pages = _Pages(rate[active], weight[active], max_per_day, objective)
    price = np.broadcast_to(np.asarray(price, dtype=np.float64), rate.shape)[active]
    with np.errstate(divide="ignore"):
        f[active] = pages.frequencies(np.log(price))
    return f


def allocate(rate, weight, host, host_cap, budget: float, max_per_day: float = 1.0,
             objective: str = FRESHNESS) -> Allocation:
    """The optimal fetch frequencies; see the module docstring.

    rate, weight: per page (λ in changes a day, importance w); host: each page's host index
    into host_cap (the most fetches a day that host may take)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, not {objective!r}")
    rate = np.asarray(rate, dtype=np.float64)
    weight = np.asarray(weight, dtype=np.float64)
    host = np.asarray(host, dtype=np.int64)
    host_cap = np.asarray(host_cap, dtype=np.float64)
    assert rate.shape == weight.shape == host.shape
    assert budget >= 0 and (host_cap >= 0).all()
    n_hosts = len(host_cap)
    # Pages with λ > 0 and w > 0 are priced, the others get f = 0 (no copies when that is all).
    positive = (rate > 0) & (weight > 0)
    active = None if positive.all() else np.flatnonzero(positive)
    pages = _Pages(*((rate, weight) if active is None else (rate[active], weight[active])), max_per_day, objective)
    page_host = host if active is None else host[active]
    capped = np.zeros(n_hosts, dtype=bool)
    # A host that could not use its cap even at max_per_day for every page never binds.
    reachable = np.bincount(page_host, minlength=n_hosts) * max_per_day
    f = np.zeros(len(page_host))
    left = float(budget)
    log_price = -np.inf
    while True:
        if capped.any():  # price the pages of the hosts not yet at their cap
            free = np.flatnonzero(~capped[page_host])
            part = pages.take(free)
            log_price = _log_price_for_budget(part, left)
            f[free] = _at_the_edge(part, part.frequencies(log_price), log_price, np.zeros(len(free), np.int64),
                                   np.array([left]))
        else:
            log_price = _log_price_for_budget(pages, left)
            f = _at_the_edge(pages, pages.frequencies(log_price), log_price, np.zeros(len(page_host), np.int64),
                             np.array([left]))
        # (every page's f: a capped host's sum is not looked at, the others' are as summed alone)
        demand = np.bincount(page_host, weights=f, minlength=n_hosts)
        over = (~capped) & (host_cap < reachable) & (demand > host_cap * (1 + _TOLERANCE))
        if not over.any():
            break
        chosen = np.flatnonzero(over[page_host])
        f[chosen] = _fill_hosts_to_cap(pages.take(chosen), page_host[chosen], host_cap, log_price)
        capped |= over
        left = max(0.0, budget - host_cap[capped].sum())
    if active is None:
        frequency = f
    else:
        frequency = np.zeros(len(rate))
        frequency[active] = f
    assert frequency.sum() <= budget * (1 + 1e-3) + 1e-9, (frequency.sum(), budget)
    return Allocation(frequency=frequency, price=float(np.exp(log_price)), capped_hosts=np.flatnonzero(capped))


def _log_price_for_budget(pages: _Pages, budget: float, sample: int = 200_000) -> float:
    """log μ with Σ f(μ) = budget (the spend falls as μ rises)."""
    if len(pages.rate) == 0 or pages.spend(-np.inf) <= budget:
        return -np.inf  # every page at max_per_day: nothing to ration
    guess = None
    if len(pages.rate) > 4 * sample:  # bracket on an evenly spaced subsample first
        step = len(pages.rate) // sample
        part = pages.take(np.arange(0, len(pages.rate), step))
        guess = _solve(part, budget * len(part.rate) / len(pages.rate), None)
    return _solve(pages, budget, guess)


def _solve(pages: _Pages, budget: float, guess: float | None) -> float:
    """Bracket log μ (around `guess`, if any), then regula falsi (Illinois variant)."""
    width = 0.5 if guess is not None else 5.0
    lo, hi = (guess - width, guess + width) if guess is not None else (-width, width)
    while pages.spend(hi) > budget:
        lo, hi = hi, hi + 2 * width
    while pages.spend(lo) < budget:
        lo, hi = lo - 2 * width, lo
        if lo < -200:
            return lo  # budget beyond what the pages can take: the cheapest price
    a, b = lo, hi
    fa, fb = pages.spend(a) - budget, pages.spend(b) - budget
    c, side = a, 0
    for _ in range(100):
        c = b - fb * (b - a) / (fb - fa) if fb != fa else 0.5 * (a + b)
        fc = pages.spend(c) - budget
        if abs(fc) <= _TOLERANCE * budget or b - a < 1e-12:
            break
        if fc > 0:  # still over budget: price too low
            a, fa = c, fc
            if side == -1:
                fb /= 2
            side = -1
        else:
            b, fb = c, fc
            if side == 1:
                fa /= 2
            side = 1
    if pages.spend(c) > budget:  # end on the affordable side of the root
        c = b
    return c


def _fill_hosts_to_cap(pages: _Pages, host, host_cap, floor_log_price: float) -> np.ndarray:
    """Per host, the price ν >= μ at which its pages sum to exactly its cap (bisection on
    log ν for all such hosts at once)."""
    hosts, local = np.unique(host, return_inverse=True)
    cap = host_cap[hosts]
    spend = lambda log_price: np.bincount(local, pages.frequencies(log_price[local]), minlength=len(hosts))  # noqa: E731
    lo = np.full(len(hosts), floor_log_price if np.isfinite(floor_log_price) else -200.0)
    hi = lo + 1.0
    for _ in range(200):  # widen until every host's demand is within its cap
        over = spend(hi) > cap
        if not over.any():
            break
        hi = np.where(over, hi + 4.0, hi)
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        over = spend(mid) > cap
        lo = np.where(over, mid, lo)
        hi = np.where(over, hi, mid)
    return _at_the_edge(pages, pages.frequencies(hi[local]), hi[local], local, cap)


# A page whose w/λ equals the price to this relative precision is at the price's edge (its
# marginal value has reached w/λ, where F is f/λ: any frequency is as good as another).
_EDGE = 1e-9


def _at_the_edge(pages: _Pages, f: np.ndarray, log_price, group: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """f with what each group left unspent of its limit shared among its pages at the edge of
    the price (freshness only): pages alike in rate and weight fall to f = 0 together once the
    price nears w/λ, a step the grid cannot split (x = λ/f beyond about 40: the curve's table),
    so the budget would go unspent; each gets at most λ / 40 (below the table's smallest f).
    group: each page's group (a host, or one for all), limit: each group's budget or cap."""
    if pages.curve.u_near == np.inf or len(f) == 0:
        return f
    level = pages.log_ratio + log_price
    edge = (f == 0) & (np.abs(level) < _EDGE)
    if not edge.any():
        return f
    left = np.maximum(limit - np.bincount(group, weights=f, minlength=len(limit)), 0.0)
    count = np.bincount(group[edge], minlength=len(limit))
    share = left[group[edge]] / count[group[edge]]
    f = f.copy()
    f[edge] = np.minimum(share, pages.rate[edge] * pages.curve.inverse_x_near[0])
    return f
