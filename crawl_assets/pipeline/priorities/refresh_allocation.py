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

Hosts at their cap: at price μ a host takes min(its pages' demand, its cap); the price is the μ
at which the hosts take the budget, and a host over its cap there is held at it by a price
ν_h >= μ of its own (bisection for all such hosts at once). That is the water-filling optimum,
and it splits by host: the crawl's pages may be held in parts (one per shard, AllocationPart),
each answering "what would your hosts take at μ?" from its own pages, and one search over the
parts' answers finds the crawl's price (crawl_log_price), the same as over the whole crawl at
once. Everything is vectorised numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .slices import over_slices

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

    def take(self, index) -> "_Pages":
        if len(index) == len(self.rate):  # every page (index is increasing): no copy
            return self
        part = object.__new__(_Pages)
        part.rate, part.log_ratio = self.rate[index], self.log_ratio[index]
        part.max_per_day, part.curve = self.max_per_day, self.curve
        return part

    def frequencies(self, log_price) -> np.ndarray:
        if np.ndim(log_price):  # a price per page (_fill_hosts_to_cap)
            f = self.rate * self.curve(self.log_ratio + log_price)
            return np.minimum(f, self.max_per_day, out=f)
        f = np.empty(len(self.rate))
        over_slices(len(f), lambda s: self.curve.frequencies_into(
            f[s], self.log_ratio[s], log_price, self.rate[s], self.max_per_day))
        return f


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
    into host_cap (the most fetches a day that host may take). The whole crawl as one part:
    the price is found as for the parts of a crawl split by shard (crawl_log_price)."""
    part = AllocationPart(rate, weight, host, host_cap, max_per_day, objective)
    log_price = crawl_log_price([part], budget)
    frequency, capped = part.frequencies(log_price, edge_share([part], log_price, budget))
    assert frequency.sum() <= budget * (1 + 1e-3) + 1e-9, (frequency.sum(), budget)
    return Allocation(frequency=frequency, price=float(np.exp(log_price)), capped_hosts=capped)


# A part's spend is counted in whole units of 2^-24 fetches a day: integers add up to the same
# total in any order, so the parts of a crawl split by shard find the price the whole crawl
# finds in one process, to the last bit (a sum of floats would depend on the split).
_SPEND_UNIT = float(1 << 24)


class AllocationPart:
    """The pages of some hosts (one shard's, or the whole crawl's): what the search for the
    crawl's one price asks of them, each answer from these pages alone. A host's pages are all
    in one part (its cap binds them together).

    At price μ a host takes min(demand, cap) fetches a day, its demand being the sum of its
    pages' f at μ: the crawl's price is the μ at which the hosts take the budget. That is the
    water-filling optimum (a host over its cap at μ is held at its cap by a price ν_h >= μ of
    its own, found within the part: _fill_hosts_to_cap)."""

    def __init__(self, rate, weight, host, host_cap, max_per_day: float = 1.0, objective: str = FRESHNESS):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, not {objective!r}")
        rate = np.asarray(rate, dtype=np.float64)
        weight = np.asarray(weight, dtype=np.float64)
        host = np.asarray(host, dtype=np.int64)
        self.cap = np.asarray(host_cap, dtype=np.float64)
        assert rate.shape == weight.shape == host.shape
        assert (self.cap >= 0).all()
        self.size = len(rate)
        # Pages with λ > 0 and w > 0 are priced, the others get f = 0 (no copies when that is all).
        positive = (rate > 0) & (weight > 0)
        self.active = None if positive.all() else np.flatnonzero(positive)
        self.pages = _Pages(*((rate, weight) if self.active is None else (rate[self.active], weight[self.active])),
                            max_per_day, objective)
        self.page_host = host if self.active is None else host[self.active]
        self.priced = self.pages.rate.size  # pages with λ > 0 and w > 0
        # A host that could not use its cap even at max_per_day for every page never binds.
        self.binds = self.cap < np.bincount(self.page_host, minlength=len(self.cap)) * max_per_day
        self._spent: dict[float, int] = {}

    def _demand(self, log_price: float) -> tuple[np.ndarray, np.ndarray]:
        """Each page's f at the price (the free price), and each host's sum of them; none at
        an infinite price (a budget of 0: crawl_log_price)."""
        f = self.pages.frequencies(log_price) if log_price != np.inf else np.zeros(len(self.pages.rate))
        return f, np.bincount(self.page_host, weights=f, minlength=len(self.cap))

    def sample(self, step: int) -> _Pages:
        """About one page in `step`, chosen by a hash of the page's own numbers."""
        with np.errstate(over="ignore"):
            hashed = self.pages.log_ratio.view(np.uint64) * _GOLDEN
        return self.pages.take(np.flatnonzero(hashed < np.uint64(np.iinfo(np.uint64).max // step)))

    def spend(self, log_price: float) -> int:
        """Fetches a day the part's hosts take at the price, in _SPEND_UNITs."""
        if log_price not in self._spent:
            _, demand = self._demand(log_price)
            taken = np.where(self.binds, np.minimum(demand, self.cap), demand)
            self._spent[log_price] = int(np.rint(taken * _SPEND_UNIT).astype(np.int64).sum())
        return self._spent[log_price]

    def _at_edge(self, f: np.ndarray, log_price: float, free: np.ndarray) -> np.ndarray:
        """Pages of hosts under their cap at the price's edge (freshness only: _at_the_edge)."""
        if self.pages.curve.u_near == np.inf or not np.isfinite(log_price):
            return np.zeros(len(f), dtype=bool)
        return free & (f == 0) & (np.abs(self.pages.log_ratio + log_price) < _EDGE)

    def edge_hosts(self, log_price: float) -> tuple[np.ndarray, np.ndarray]:
        """Of the hosts with pages at the price's edge: each one's count of them, and the room its
        cap leaves them (inf for a host its cap never binds)."""
        f, demand = self._demand(log_price)
        edge = self._at_edge(f, log_price, ~self._over(demand)[self.page_host])
        count = np.bincount(self.page_host[edge], minlength=len(self.cap))
        hosts = np.flatnonzero(count)
        return count[hosts], self._room(demand)[hosts]

    def _room(self, demand: np.ndarray) -> np.ndarray:
        """What each host's cap leaves beyond its demand (inf where the cap never binds)."""
        return np.where(self.binds, np.maximum(self.cap - demand, 0.0), np.inf)

    def _over(self, demand: np.ndarray) -> np.ndarray:
        return self.binds & (demand > self.cap)

    def frequencies(self, log_price: float, share: float) -> tuple[np.ndarray, np.ndarray]:
        """Each page's f at the crawl's price (every page of the part, in its order), and the
        hosts held at their cap. share: what each page at the price's edge gets of what the
        crawl left unspent (edge_share)."""
        f, demand = self._demand(log_price)
        over = self._over(demand)
        edge = self._at_edge(f, log_price, ~over[self.page_host])
        if edge.any():  # the share, within the host's cap (edge_share), and at most λ / 40
            host = self.page_host[edge]
            per_page = (self._room(demand) / np.maximum(np.bincount(host, minlength=len(self.cap)), 1))[host]
            most = self.pages.rate[edge] * self.pages.curve.inverse_x_near[0]
            f[edge] = np.minimum(np.minimum(share, per_page), most)
        chosen = np.flatnonzero(over[self.page_host])
        if len(chosen):
            f[chosen] = _fill_hosts_to_cap(self.pages.take(chosen), self.page_host[chosen], self.cap, log_price)
        if self.active is None:
            return f, np.flatnonzero(over)
        frequency = np.zeros(self.size)
        frequency[self.active] = f
        return frequency, np.flatnonzero(over)


# The sample the price search brackets on first: about this many pages, each page in it or
# not by a hash of its own numbers, so a page is in it whatever part it is in.
SAMPLE_PAGES = 200_000
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def crawl_log_price(parts: list[AllocationPart], budget: float, sample: int = SAMPLE_PAGES) -> float:
    """log μ, the crawl's one price: the price at which the parts' hosts take the budget (the
    spend falls as the price rises), found by bracketing and regula falsi over the sum of the
    parts' spends, each round one question to every part (on a crawl of more than 4 x
    `sample` pages, bracketed first on a sample of about `sample` of them); -inf when every
    page can have max_per_day within the budget; +inf for a budget of 0 (no page gets any: the
    age curve gives every page a little at any finite price, and the search would never end)."""
    assert budget >= 0
    if budget == 0:
        return np.inf

    def spend(log_price: float) -> float:
        return sum(part.spend(log_price) for part in parts) / _SPEND_UNIT

    pages = sum(part.priced for part in parts)
    if pages == 0 or spend(-np.inf) <= budget:
        return -np.inf
    guess = None
    if pages > 4 * sample:  # bracket on a sample of the pages first (uncapped: a guess only)
        samples = [part.sample(pages // sample) for part in parts]
        sampled = sum(sample.rate.size for sample in samples)
        if sampled:
            guess = _solve(lambda log_price: sum(_units(sample, log_price) for sample in samples) / _SPEND_UNIT,
                           budget * sampled / pages, None)
    return _solve(spend, budget, guess)


def _units(pages: _Pages, log_price: float) -> int:
    """Σ f at the price over the pages, in whole _SPEND_UNITs a page (the same in any order)."""
    return int(np.rint(pages.frequencies(log_price) * _SPEND_UNIT).sum())


def edge_share(parts: list[AllocationPart], log_price: float, budget: float) -> float:
    """What each page at the price's edge gets: the budget the hosts left at the price, shared
    equally, but never past a host's cap: a host with less room than its pages' shares fills it,
    and the others share the rest (water-filling); 0 when none is at the edge."""
    found = [part.edge_hosts(log_price) for part in parts]
    count = np.concatenate([count for count, _ in found] + [np.zeros(0, dtype=np.int64)])
    if len(count) == 0:
        return 0.0
    room = np.concatenate([room for _, room in found])
    left = max(budget - sum(part.spend(log_price) for part in parts) / _SPEND_UNIT, 0.0)
    # Hosts by room a page (the same order, so the same sums, however the hosts are split).
    # With the first k hosts filled, the others' pages share what is left: that share rises
    # with k while it is above the k-th host's room a page, then falls, so the water level is
    # the highest of min(share, room a page) (the last host's room a page if all are filled).
    level = room / count
    order = np.lexsort((room, count, level))
    level, count, room = level[order], count[order], room[order]
    share = (left - np.r_[0.0, np.cumsum(room)[:-1]]) / (count.sum() - np.r_[0, np.cumsum(count)[:-1]])
    return float(np.max(np.minimum(share, level)))


def _solve(spend, budget: float, guess: float | None) -> float:
    """Bracket log μ (around `guess`, if any), then regula falsi (Illinois variant) on
    spend(log μ), which falls as μ rises; a step bisects instead where six steps shrank the
    bracket by less than half (at a jump of the spend, as when many pages alike reach the
    price's edge together, the secant crawls towards the jump: bisection reaches it, within
    _EDGE, where edge_share finds the pages it leaves; on a smooth spend it seldom acts)."""
    width = 0.5 if guess is not None else 5.0
    lo, hi = (guess - width, guess + width) if guess is not None else (-width, width)
    while spend(hi) > budget:
        lo, hi = hi, hi + 2 * width
    while spend(lo) < budget:
        lo, hi = lo - 2 * width, lo
        if lo < -200:
            return lo  # budget beyond what the pages can take: the cheapest price
    a, b = lo, hi
    fa, fb = spend(a) - budget, spend(b) - budget
    c, side, widths = a, 0, [b - a]
    for _ in range(200):
        if len(widths) > 6 and widths[-1] > 0.5 * widths[-7]:
            c = 0.5 * (a + b)
        else:
            c = b - fb * (b - a) / (fb - fa) if fb != fa else 0.5 * (a + b)
        fc = spend(c) - budget
        if -_TOLERANCE * budget <= fc <= 0 or b - a < 1e-12:  # (within the budget: over it, b may be far)
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
        widths.append(b - a)
    if spend(c) > budget:  # end on the affordable side of the root
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
