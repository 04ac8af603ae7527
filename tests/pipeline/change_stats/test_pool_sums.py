"""change_stats' pool sums and pooled priors (pool_sums.py), driven directly on small hand-made
URL states in DuckDB: each pool's sums in both Last-Modified variants, the day's update equal to
a rebuild, a sums file that cannot be read named, a host's Last-Modified trust at its two
thresholds, and each pattern's prior shrunk towards its host's, shrunk towards everyone's."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from crawl_assets.crawler.crawl_errors import CrawlInputError
from crawl_assets.pipeline.change_stats.pool_sums import (
    DEFAULT_PRIOR_RATE, LM_MIN_AGREEMENT, LM_MIN_CHECKS, POOL_MIN_INTERVALS, POOL_MIN_URLS, POOL_PSEUDO_DAYS,
    PRIOR_DAYS_DEFAULT, PRIOR_DAYS_MAX, PRIOR_DAYS_MIN, SUMS_COLUMNS, pool_priors, update_pool_sums)

# What pool_sums reads of a URL's state (change_history.STATE_SQL_TYPES), none of it changed.
STATE = {"url_pattern": pa.string(), "host": pa.string(), "visits": pa.int64(), "intervals": pa.int64(),
         "changes": pa.int64(), "boilerplate_changes": pa.int64(), "not_modified": pa.int64(),
         "bytes_saved": pa.int64(), "lm_checks": pa.int64(), "lm_agreements": pa.int64(), "lm_missing": pa.int64(),
         "lm_changes": pa.int64(), "lm_days": pa.float64(), "interval_rate": pa.float64(), "visit_days": pa.float64()}
HOST_SUMS = ("urls", "visits", "changes", "boilerplate_changes", "not_modified", "bytes_saved", "lm_checks",
             "lm_agreements")
EVIDENCE = ("members", "x", "t", "r_sum", "r_squares", "r_over_t")


def url(pattern="/a/*", host="h.test", **fields) -> dict:
    row = {"url_pattern": pattern, "host": host, "visits": 1, "intervals": 0, "changes": 0, "boilerplate_changes": 0,
           "not_modified": 0, "bytes_saved": 0, "lm_checks": 0, "lm_agreements": 0, "lm_missing": 0,
           "lm_changes": 0, "lm_days": 0.0, "interval_rate": 0.0, "visit_days": 0.0}
    row.update(fields)
    return row


def table(con, name: str, rows: list[dict]) -> None:
    con.register("rows_in", pa.Table.from_pylist(rows, schema=pa.schema(STATE)))
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM rows_in")
    con.unregister("rows_in")


def sums_of(con, changed: list[dict], carry=(), previous_sums=None, before=None) -> dict:
    """update_pool_sums over temp tables changed and carry (and state_before, given `before`):
    (url_pattern, host, lm_trusted) -> that row of pool_sums."""
    table(con, "changed", changed)
    table(con, "carry", list(carry))
    if before is not None:
        table(con, "state_before", before)
    con.execute("DROP TABLE IF EXISTS pool_sums")
    update_pool_sums(con, previous_sums, previous_sums is not None or before is not None)
    rows = con.sql("SELECT * FROM pool_sums").to_arrow_table().to_pylist()
    assert all(set(row) == set(SUMS_COLUMNS) for row in rows)
    return {(r["url_pattern"], r["host"], r["lm_trusted"]): r for r in rows}


def test_each_pool_sums_its_urls_in_both_last_modified_variants():
    assert POOL_MIN_INTERVALS == 3  # a URL's own rate counts towards its pool's spread from 3 intervals
    con = duckdb.connect()
    changed = [
        # by Last-Modified when trusted: x 1 over 8 days; else 0.2 a day over 10 days; a member
        # (POOL_MIN_INTERVALS intervals) both ways
        url(intervals=4, visit_days=10.0, interval_rate=0.2, lm_checks=2, lm_agreements=2, lm_changes=1, lm_days=8.0,
            visits=5, changes=2, boilerplate_changes=1, not_modified=1, bytes_saved=300),
        # too few intervals to be a member; no Last-Modified checks: the same evidence both ways
        url(intervals=POOL_MIN_INTERVALS - 1, visit_days=5.0, interval_rate=0.4, visits=3, changes=2),
        # a Last-Modified missing once: never read by it, even on a trusted host
        url(intervals=POOL_MIN_INTERVALS, visit_days=4.0, interval_rate=0.5, lm_checks=3, lm_agreements=1,
            lm_missing=1, lm_changes=3, lm_days=1.0, visits=4, changes=2, bytes_saved=50),
        # intervals enough but no days of them: no rate, not a member
        url(intervals=3, visits=4),
        url("/b/*", intervals=5, visit_days=20.0, interval_rate=0.1, visits=6, changes=2, not_modified=4),
    ]
    sums = sums_of(con, changed)
    assert set(sums) == {("/a/*", "h.test", True), ("/a/*", "h.test", False), ("/b/*", "h.test", True),
                         ("/b/*", "h.test", False)}
    for trusted in (True, False):
        a = sums[("/a/*", "h.test", trusted)]
        assert {k: a[k] for k in HOST_SUMS} == {"urls": 4, "visits": 16, "changes": 6, "boilerplate_changes": 1,
                                                "not_modified": 1, "bytes_saved": 350, "lm_checks": 5,
                                                "lm_agreements": 3}
    # the members' rates: 1/8 (trusted) or 0.2, and 0.5; r / t summed as 1/64 or 0.02, and 0.125
    rates = {True: [(1.0, 8.0), (2.0, 4.0)], False: [(2.0, 10.0), (2.0, 4.0)]}
    for trusted, x_first in ((True, 1.0), (False, 2.0)):
        a = sums[("/a/*", "h.test", trusted)]
        r = [x / t for x, t in rates[trusted]]
        expected = {"members": 2, "x": x_first + 2.0 + 2.0, "t": (8.0 if trusted else 10.0) + 5.0 + 4.0,
                    "r_sum": sum(r), "r_squares": sum(v * v for v in r),
                    "r_over_t": sum(v / t for v, (_, t) in zip(r, rates[trusted]))}
        assert {k: a[k] for k in EVIDENCE} == pytest.approx(expected), trusted
        b = sums[("/b/*", "h.test", trusted)]
        assert {k: b[k] for k in ("urls", "members", "x", "t", "r_sum", "r_squares", "r_over_t", "not_modified")} == \
            pytest.approx({"urls": 1, "members": 1, "x": 2.0, "t": 20.0, "r_sum": 0.1, "r_squares": 0.01,
                           "r_over_t": 0.005, "not_modified": 4})


def day_before() -> list[dict]:
    """Thirty URLs on three hosts, two patterns each, of varied evidence."""
    rows = []
    for i in range(30):
        rows.append(url(f"/p{i % 2}/*", f"h{i % 3}.test", visits=2 + i % 5, intervals=1 + i % 5,
                        visit_days=1.0 + i, interval_rate=0.05 * (i % 7), changes=i % 4, not_modified=i % 3,
                        bytes_saved=10 * i, lm_checks=i % 6, lm_agreements=i % 6 - (i % 4 == 0 and i % 6 > 0),
                        lm_missing=int(i % 11 == 0), lm_changes=i % 3, lm_days=0.5 * i))
    return rows


def test_the_days_update_gives_the_sums_a_rebuild_gives(tmp_path):
    con = duckdb.connect()
    before = day_before()
    rebuilt_before = sums_of(con, before)
    file = tmp_path / "pool_sums.parquet"
    con.execute(f"COPY pool_sums TO '{file}' (FORMAT parquet)")
    # The day: five URLs visited again (their evidence grew), one new URL in a new pool.
    changed_at = [0, 4, 7, 17, 29]
    after = [dict(row) for row in before]
    for i in changed_at:
        after[i].update(visits=after[i]["visits"] + 1, intervals=after[i]["intervals"] + 1,
                        visit_days=after[i]["visit_days"] + 2.0, interval_rate=0.3, changes=after[i]["changes"] + 1,
                        lm_checks=after[i]["lm_checks"] + 1, lm_agreements=after[i]["lm_agreements"] + 1,
                        lm_changes=after[i]["lm_changes"] + 1, lm_days=after[i]["lm_days"] + 2.0)
    new = url("/new/*", "h9.test", visits=1)
    changed, carry = [after[i] for i in changed_at] + [new], [before[i] for i in changed_at]
    rebuilt = sums_of(con, after + [new])
    assert rebuilt != rebuilt_before
    for updated in (sums_of(con, changed, carry, previous_sums=file),  # from the day before's file
                    sums_of(con, changed, carry, before=before)):  # the day before without one: its state summed
        assert set(updated) == set(rebuilt)
        for key, row in rebuilt.items():
            assert updated[key] == pytest.approx(row), key


def test_a_sums_file_that_cannot_be_read_is_named_with_duckdbs_reason(tmp_path):
    con = duckdb.connect()
    damaged = tmp_path / "pool_sums.parquet"
    damaged.write_text("not a Parquet file, cut short by a full disk")
    for path in (tmp_path / "missing.parquet", damaged):
        with pytest.raises(duckdb.Error) as duckdbs:
            con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')")
        reason = str(duckdbs.value).splitlines()[0]  # (its next lines quote the query)
        assert str(path) in reason
        with pytest.raises(CrawlInputError) as error:
            sums_of(con, [url()], previous_sums=path)
        assert str(error.value) == (f"change_stats pool sums file {path} cannot be read ({reason}): "
                                    "materialise change_stats for its day again")


def test_a_sums_file_of_another_layout_names_the_columns_it_lacks(tmp_path):
    con = duckdb.connect()
    old = tmp_path / "old.parquet"
    con.execute(f"COPY (SELECT 'x' AS url_pattern, 'h.test' AS host, true AS lm_trusted, 1 AS urls) TO '{old}'")
    with pytest.raises(CrawlInputError) as error:
        sums_of(con, [url()], previous_sums=old)
    lacking = sorted(set(SUMS_COLUMNS) - {"url_pattern", "host", "lm_trusted", "urls"})
    assert str(error.value) == (f"change_stats pool sums file {old} lacks columns {lacking}: materialise "
                                "change_stats for its day again")


def pool(pattern, host, lm_checks=0, lm_agreements=0, urls=1, visits=1, **variants) -> list[dict]:
    """A pool's two rows of pool_sums; variants: trusted=(x, t, [(r, t) of members]) and
    untrusted=(...) (each defaults to no evidence)."""
    rows = []
    for trusted in (True, False):
        x, t, members = variants.get("trusted" if trusted else "untrusted", (0.0, 0.0, []))
        rows.append({"url_pattern": pattern, "host": host, "lm_trusted": trusted, "urls": urls, "visits": visits,
                     "changes": 0, "boilerplate_changes": 0, "not_modified": 0, "bytes_saved": 0,
                     "lm_checks": lm_checks, "lm_agreements": lm_agreements, "members": len(members), "x": x, "t": t,
                     "r_sum": sum(r for r, _ in members), "r_squares": sum(r * r for r, _ in members),
                     "r_over_t": sum(r / rt for r, rt in members)})
    return rows


def priors_of(rows: list[dict]):
    con = duckdb.connect()
    types = {"url_pattern": pa.string(), "host": pa.string(), "lm_trusted": pa.bool_(), "members": pa.int64(),
             **{n: pa.int64() for n in HOST_SUMS}, **{n: pa.float64() for n in EVIDENCE if n != "members"}}
    con.register("sums_in", pa.Table.from_pylist(rows, schema=pa.schema([(n, types[n]) for n in SUMS_COLUMNS])))
    con.execute("CREATE TEMP TABLE pool_sums AS SELECT * FROM sums_in")
    pool_priors(con)
    hosts = {r["host"]: r for r in con.sql("SELECT * FROM lm_hosts").to_arrow_table().to_pylist()}
    priors = {(r["url_pattern"], r["host"]): r for r in con.sql("SELECT * FROM priors").to_arrow_table().to_pylist()}
    return hosts, priors


def test_a_hosts_last_modified_is_trusted_from_enough_checks_mostly_agreeing():
    assert (LM_MIN_CHECKS, LM_MIN_AGREEMENT) == (5, 0.95)
    rows = (pool("/a/*", "enough.test", 3, 3, urls=2, visits=5) + pool("/b/*", "enough.test", 2, 2, urls=1, visits=4)
            + pool("/a/*", "few.test", 4, 4) + pool("/a/*", "edge.test", 20, 19) + pool("/a/*", "liar.test", 20, 18)
            + pool("/a/*", "none.test"))
    hosts, priors = priors_of(rows)
    assert {h: r["lm_trusted"] for h, r in hosts.items()} == {
        "enough.test": True, "few.test": False, "edge.test": True, "liar.test": False, "none.test": False}
    # the host's sums over its patterns (the two variants' rows counted once)
    assert {k: hosts["enough.test"][k] for k in ("urls", "visits", "lm_checks", "lm_agreements")} == {
        "urls": 3, "visits": 9, "lm_checks": 5, "lm_agreements": 5}
    assert {key: r["lm_trusted"] for key, r in priors.items()} == {
        ("/a/*", "enough.test"): True, ("/b/*", "enough.test"): True, ("/a/*", "few.test"): False,
        ("/a/*", "edge.test"): True, ("/a/*", "liar.test"): False, ("/a/*", "none.test"): False}


def b_of(m, members, spread, parent_b):
    """A pool's strength in days (pool_sums' rule): the parent's with too few members, else m /
    spread within [PRIOR_DAYS_MIN, PRIOR_DAYS_MAX], the most when the rates do not spread."""
    if members < POOL_MIN_URLS:
        return parent_b
    if spread <= 0:
        return PRIOR_DAYS_MAX
    return min(max(m / spread, PRIOR_DAYS_MIN), PRIOR_DAYS_MAX)


def spread_of(members: list[tuple[float, float]]) -> float:
    """The members' rates' sample variance less their mean r / t (the Poisson noise)."""
    n = len(members)
    mean = sum(r for r, _ in members) / n
    return sum((r - mean) ** 2 for r, _ in members) / (n - 1) - sum(r / t for r, t in members) / n


def test_a_patterns_prior_is_shrunk_towards_its_hosts_shrunk_towards_everyones():
    # the rule's numbers: 30 pseudo-days, 5 members for a spread, days from 1 to 60 (7 without),
    # everyone's rate shrunk towards a change a month
    assert (POOL_PSEUDO_DAYS, POOL_MIN_URLS, PRIOR_DAYS_MIN, PRIOR_DAYS_MAX, PRIOR_DAYS_DEFAULT) == (30.0, 5, 1.0, 60.0, 7.0)
    assert DEFAULT_PRIOR_RATE == 1 / 30
    k = POOL_PSEUDO_DAYS
    within = [(0.05, 500.0), (0.15, 500.0), (0.1, 500.0), (0.2, 500.0), (0.0, 500.0)]  # m / spread about 15
    wide = [(0.0, 50.0), (0.3, 50.0), (0.0, 50.0), (0.35, 50.0), (0.02, 50.0)]  # m / spread under 1
    narrow = [(0.09, 1e4), (0.11, 1e4), (0.1, 1e4), (0.1, 1e4), (0.1, 1e4)]  # m / spread past 60
    same = [(0.2, 500.0)] * 5  # no spread beyond the noise
    read = {("/a/*", "lm.test"): (4.0, 40.0, within), ("/b/*", "lm.test"): (1.0, 10.0, same[:4]),
            ("/d/*", "wide.test"): (1.0, 50.0, wide), ("/f/*", "tiny.test"): (1.0, 30.0, within[:2]),
            ("/a/*", "plain.test"): (2.0, 100.0, same), ("/c/*", "plain.test"): (0.0, 20.0, []),
            ("/e/*", "plain.test"): (5.0, 60.0, narrow)}
    rows = (
        # trusted host: its pools' Last-Modified variant is read (the other variant's evidence
        # would give other rates)
        pool("/a/*", "lm.test", 5, 5, trusted=read[("/a/*", "lm.test")], untrusted=(40.0, 1.0, []))
        + pool("/b/*", "lm.test", 0, 0, trusted=read[("/b/*", "lm.test")], untrusted=(9.0, 1.0, []))
        + pool("/d/*", "wide.test", untrusted=read[("/d/*", "wide.test")])
        + pool("/f/*", "tiny.test", untrusted=read[("/f/*", "tiny.test")])
        # untrusted host: the variant without Last-Modified
        + pool("/a/*", "plain.test", trusted=(50.0, 1.0, []), untrusted=read[("/a/*", "plain.test")])
        + pool("/c/*", "plain.test", untrusted=read[("/c/*", "plain.test")])
        + pool("/e/*", "plain.test", trusted=(1.0, 1.0, wide), untrusted=read[("/e/*", "plain.test")])
    )
    hosts, priors = priors_of(rows)
    assert {h: r["lm_trusted"] for h, r in hosts.items()} == {
        "lm.test": True, "plain.test": False, "wide.test": False, "tiny.test": False}
    # everyone: shrunk towards the default rate, its days from every member's rate
    x_all, t_all = sum(x for x, _, _ in read.values()), sum(t for _, t, _ in read.values())
    everyone = (x_all + DEFAULT_PRIOR_RATE * k) / (t_all + k)
    all_members = [m for _, _, ms in read.values() for m in ms]
    b_everyone = b_of(everyone, len(all_members), spread_of(all_members), PRIOR_DAYS_DEFAULT)
    expected = {}
    for host in ("lm.test", "plain.test", "wide.test", "tiny.test"):
        mine = {p: v for (p, h), v in read.items() if h == host}
        x_h, t_h = sum(x for x, _, _ in mine.values()), sum(t for _, t, _ in mine.values())
        m_h = (x_h + everyone * k) / (t_h + k)
        members_h = [m for _, _, ms in mine.values() for m in ms]
        b_h = b_of(m_h, len(members_h), spread_of(members_h) if len(members_h) > 1 else 0.0, b_everyone)
        for pattern, (x, t, members) in mine.items():
            m = (x + m_h * k) / (t + k)
            expected[(pattern, host)] = (m, b_of(m, len(members), spread_of(members) if len(members) > 1 else 0.0, b_h))
    got = {key: (r["prior_rate"], r["prior_days"]) for key, r in priors.items()}
    assert set(got) == set(expected)
    for key, (rate, days) in expected.items():
        assert got[key] == (pytest.approx(rate, rel=1e-12), pytest.approx(days, rel=1e-12)), key
    # the rules each pool met: m / spread within bounds, under and past them, no spread (the
    # most days), too few members (the host's days; on a host with too few, everyone's)
    days = {key: d for key, (_, d) in got.items()}
    assert PRIOR_DAYS_MIN < days[("/a/*", "lm.test")] < PRIOR_DAYS_MAX
    assert days[("/d/*", "wide.test")] == PRIOR_DAYS_MIN
    assert days[("/e/*", "plain.test")] == days[("/a/*", "plain.test")] == PRIOR_DAYS_MAX
    inside = {days[("/a/*", "lm.test")], days[("/b/*", "lm.test")], days[("/f/*", "tiny.test")]}
    assert len(inside) == 3 and all(PRIOR_DAYS_MIN < d < PRIOR_DAYS_MAX for d in inside), inside
