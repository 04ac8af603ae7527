"""change_stats' pooled priors and host trust, from sums kept per URL pattern within its host.

A URL with few visits borrows the rate of its pool (its URL pattern within its host), shrunk
towards its host's, shrunk towards everyone's (_PRIORS_SQL); a host's Last-Modified is
trusted when its URLs' checks mostly agreed. Everything these need is a sum over URLs, so
change_stats[D] keeps the sums in a small file (pool_sums.parquet: one row per pool and
Last-Modified variant) and updates them with the URLs the day changed alone: the day
before's sums, less those URLs' old state, plus their new state. The full rebuild runs the
same update from no sums (every URL is new), so both give the same sums, up to the order in
which floating-point additions are made (Kahan sums keep that to the last bits); a day
whose day before has no sums file sums the day before's state once.

A URL's evidence (x changes over t days, url_change_state.EVIDENCE_SQL) depends on whether
its host's Last-Modified is trusted, which only the day's sums decide: each pool keeps both
variants (lm_trusted true and false) and the day takes the one of its host's trust. The two
variants are summed side by side, one row a URL (half the rows of a row per variant). The
spread of the members' rates comes from their count, sum and sum of squares.
"""

from __future__ import annotations

import duckdb

from ...crawler.crawl_errors import CrawlInputError
from .change_history import sql_literal
from .url_change_state import EVIDENCE_SQL, PRIOR_COLUMNS

# Last-Modified is trusted on a host with at least this many comparable visit pairs, of
# which at least this share agree (moved exactly when the content changed, not in the future).
LM_MIN_CHECKS = 5
LM_MIN_AGREEMENT = 0.95
# Pooled prior: a pool's rate is shrunk towards its parent (pattern -> host -> all) with this
# many pseudo-days; its strength b (days) comes from the spread of its members' own rates,
# measured on URLs with at least POOL_MIN_INTERVALS intervals, once a pool has POOL_MIN_URLS.
POOL_PSEUDO_DAYS = 30.0
POOL_MIN_INTERVALS = 3
POOL_MIN_URLS = 5
PRIOR_DAYS_MIN, PRIOR_DAYS_MAX, PRIOR_DAYS_DEFAULT = 1.0, 60.0, 7.0
# Everyone's rate is shrunk towards this (changes a day) with POOL_PSEUDO_DAYS too, so no prior is
# ever 0: days of unchanged revisits lower it, and a rate of 0 would never be revisited again.
DEFAULT_PRIOR_RATE = 1 / 30

# The host table's sums (integers) and the pool's evidence sums (floats); `members` counts
# the URLs with an informative rate r = x / t, r_sum, r_squares and r_over_t sum r, r² and r / t.
_HOST_SUMS = ("visits", "changes", "boilerplate_changes", "not_modified", "bytes_saved", "lm_checks", "lm_agreements")
_EVIDENCE_SUMS = ("x", "t", "r_sum", "r_squares", "r_over_t")
SUMS_COLUMNS = ("url_pattern", "host", "lm_trusted", "urls", *_HOST_SUMS, "members", *_EVIDENCE_SUMS)

# A pool's two Last-Modified variants, as column suffixes while they are summed side by side.
_VARIANTS = (("1", "true"), ("0", "false"))


def _addends(rows: str, sign: int) -> str:
    """Each URL of `rows` once, as signed addends of its pool's sums: the host sums, and the
    evidence sums of both variants side by side (x_1 with its host trusted, x_0 without)."""
    evidence = f"SELECT * FROM {rows}"
    for suffix, trusted in _VARIANTS:
        evidence = (f"SELECT * EXCLUDE (by_lm, x, t), x AS x_{suffix}, t AS t_{suffix} "
                    f"FROM (SELECT *, {EVIDENCE_SQL.format(trusted=trusted)} FROM ({evidence}))")
    rates = ", ".join(f"CASE WHEN intervals >= {int(POOL_MIN_INTERVALS)} AND t_{v} > 0 THEN x_{v} / t_{v} END AS r_{v}"
                      for v, _ in _VARIANTS)
    sums = ", ".join(f"{sign} * (r_{v} IS NOT NULL)::BIGINT AS members_{v}, {sign} * x_{v} AS x_{v}, "
                     f"{sign} * t_{v} AS t_{v}, {sign} * coalesce(r_{v}, 0) AS r_sum_{v}, "
                     f"{sign} * coalesce(r_{v} * r_{v}, 0) AS r_squares_{v}, "
                     f"{sign} * coalesce(r_{v} / t_{v}, 0) AS r_over_t_{v}" for v, _ in _VARIANTS)
    host_sums = ", ".join(f"{sign} * {name} AS {name}" for name in _HOST_SUMS)
    return f"SELECT url_pattern, host, {sign} AS urls, {host_sums}, {sums} FROM (SELECT *, {rates} FROM ({evidence}))"


# The host sums and the evidence sums of both variants, from a sums file's rows (a row per
# pool and variant: the host sums are the same in both rows).
_SIDE_BY_SIDE_COLUMNS = ", ".join(
    [f"sum({n}) FILTER (lm_trusted) AS {n}" for n in ("urls", *_HOST_SUMS)]
    + [f"{'fsum' if n in _EVIDENCE_SUMS else 'sum'}({n}) FILTER ({'' if t == 'true' else 'NOT '}lm_trusted) AS {n}_{v}"
       for v, t in _VARIANTS for n in ("members", *_EVIDENCE_SUMS)])


def _side_by_side(long_sums: str) -> str:
    """A sums file (SUMS_COLUMNS, a row per pool and variant) with its variants side by side."""
    return f"SELECT url_pattern, host, {_SIDE_BY_SIDE_COLUMNS} FROM {long_sums} GROUP BY url_pattern, host"


# The pools' sums of the addends (side by side), and the pools back as a row per variant.
_SUMMED_COLUMNS = ", ".join(
    [f"sum({n})::BIGINT AS {n}" for n in ("urls", *_HOST_SUMS)]
    + [f"sum(members_{v})::BIGINT AS members_{v}, " + ", ".join(f"fsum({n}_{v}) AS {n}_{v}" for n in _EVIDENCE_SUMS)
       for v, _ in _VARIANTS])
_POOLS_BY_VARIANT = " UNION ALL ".join(
    f"SELECT url_pattern, host, {trusted} AS lm_trusted, urls, {', '.join(_HOST_SUMS)}, "
    + ", ".join(f"{n}_{v} AS {n}" for n in ("members", *_EVIDENCE_SUMS)) + " FROM pools"
    for v, trusted in _VARIANTS)


def _summed(parts: list[str]) -> str:
    """The pools' sums over the addends `parts` (side by side), in SUMS_COLUMNS: a row per
    pool and variant."""
    addends = " UNION ALL ".join(f"({p})" for p in parts)
    return (f"WITH pools AS MATERIALIZED (SELECT url_pattern, host, {_SUMMED_COLUMNS} FROM ({addends}) "
            f"GROUP BY url_pattern, host) {_POOLS_BY_VARIANT}")


_CREATE_POOL_SUMS = "CREATE TEMP TABLE pool_sums AS "


def update_pool_sums(con, previous_sums, has_previous: bool) -> None:
    """Temp table pool_sums (SUMS_COLUMNS) after the day: the day before's (its file
    `previous_sums`; none for a rebuild, `has_previous` False; summed from view state_before
    when the day before has no file) less the `carry` rows (the old state of the URLs the day
    changed) plus the `changed` rows (change_history.py's temp tables)."""
    parts = [_addends("carry", -1), _addends("changed", 1)]
    if previous_sums is not None:
        parts.append(_side_by_side(_read_sums(con, previous_sums)))
    elif has_previous:
        parts.append(_addends("state_before", 1))
    con.execute(_CREATE_POOL_SUMS + _summed(parts))


def _read_sums(con, path) -> str:
    """A day's sums file as a FROM item; a file DuckDB cannot read, or of another layout, is
    named in the error."""
    scan = f"read_parquet({sql_literal(str(path))})"
    try:
        columns = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {scan}").fetchall()}
    except duckdb.Error as exc:
        raise CrawlInputError(f"change_stats pool sums file {path} cannot be read ({str(exc).splitlines()[0]}): "
                              "materialise change_stats for its day again") from None
    missing = set(SUMS_COLUMNS) - columns
    if missing:
        raise CrawlInputError(f"change_stats pool sums file {path} lacks columns {sorted(missing)}: materialise "
                              "change_stats for its day again")
    return scan


# Per host: the sums of the host table and whether its Last-Modified told the truth.
_LM_HOSTS_SQL = """
CREATE TEMP TABLE lm_hosts AS
SELECT host, sum(urls)::BIGINT AS urls, {host_sums},
       sum(lm_checks) >= $lm_min_checks AND sum(lm_agreements) >= $lm_min_agreement * sum(lm_checks) AS lm_trusted
FROM pool_sums WHERE lm_trusted GROUP BY host
""".format(host_sums=", ".join(f"sum({n})::BIGINT AS {n}" for n in _HOST_SUMS))
_LM_HOSTS_PARAMETERS = {"lm_min_checks": LM_MIN_CHECKS, "lm_min_agreement": LM_MIN_AGREEMENT}

# The pooled prior of each URL pattern (within its host), shrunk towards its host's, shrunk
# towards everyone's; each pool's sums in its host's Last-Modified variant.
_PRIORS_SQL = """
WITH pools AS (
    SELECT p.* FROM pool_sums p JOIN lm_hosts h ON p.host = h.host AND p.lm_trusted = h.lm_trusted
),
added AS (
    SELECT url_pattern, host, grouping(url_pattern, host) AS level, fsum(x) AS x, fsum(t) AS t,
           coalesce(sum(members), 0) AS members, fsum(r_sum) AS r_sum, fsum(r_squares) AS r_squares,
           fsum(r_over_t) AS r_over_t
    FROM pools GROUP BY GROUPING SETS ((), (host), (url_pattern, host))
),
sums AS (
    -- spread: the members' rates' sample variance less their mean r / t
    SELECT url_pattern, host, level, x, t, members,
           CASE WHEN members > 1 THEN (r_squares - r_sum * r_sum / members) / (members - 1) END
             - r_over_t / nullif(members, 0) AS spread
    FROM added
),
everyone AS (  -- shrunk towards the default rate: seeing no change yet is not a web that never changes
    SELECT (coalesce(x, 0) + $default_rate * $k) / (coalesce(t, 0) + $k) AS m, members, spread
    FROM sums WHERE level = 3
),
everyone_b AS (
    SELECT m, CASE WHEN members < $min_urls THEN $b_default WHEN spread <= 0 THEN $b_max
                   ELSE least(greatest(m / spread, $b_min), $b_max) END AS b
    FROM everyone
),
host_pool AS (
    SELECT host, (x + g.m * $k) / (t + $k) AS m, members, spread, g.b AS parent_b
    FROM sums, everyone_b g WHERE level = 2  -- grouping(): 1 bits mark the columns not grouped by
),
host_b AS (
    SELECT host, m, CASE WHEN members < $min_urls THEN parent_b WHEN spread <= 0 THEN $b_max
                         ELSE least(greatest(m / spread, $b_min), $b_max) END AS b
    FROM host_pool
),
pattern_pool AS (
    SELECT url_pattern, host, (x + h.m * $k) / (t + $k) AS m, members, spread, h.b AS parent_b
    FROM sums JOIN host_b h USING (host) WHERE level = 0
)
SELECT url_pattern, host, m AS prior_rate,
       CASE WHEN members < $min_urls THEN parent_b WHEN spread <= 0 THEN $b_max
            ELSE least(greatest(m / spread, $b_min), $b_max) END AS prior_days
FROM pattern_pool
"""
_PRIORS_PARAMETERS = {"default_rate": DEFAULT_PRIOR_RATE, "min_urls": POOL_MIN_URLS, "b_default": PRIOR_DAYS_DEFAULT,
                      "b_min": PRIOR_DAYS_MIN, "b_max": PRIOR_DAYS_MAX, "k": POOL_PSEUDO_DAYS}
# Each pattern's prior, for the hosts the day's sums know (with their Last-Modified trust).
_CREATE_PRIORS = (f"CREATE TEMP TABLE priors AS SELECT {', '.join(PRIOR_COLUMNS)} FROM ({_PRIORS_SQL}) "
                  "JOIN (SELECT host, lm_trusted FROM lm_hosts) USING (host)")


def pool_priors(con) -> None:
    """Temp tables lm_hosts (the host table's sums and Last-Modified trust) and priors
    (PRIOR_COLUMNS) from temp table pool_sums."""
    con.execute(_LM_HOSTS_SQL, _LM_HOSTS_PARAMETERS)
    con.execute(_CREATE_PRIORS, _PRIORS_PARAMETERS)
