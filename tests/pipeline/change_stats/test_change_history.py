"""change_history's fold on small hand-made fetch logs, read straight from DuckDB: what each
URL's history counts (visits, intervals, changes, 304s, Last-Modified, the day's revisits),
what counts as a change under each definition, sitemap evidence, and the daily fold equal to
the full rebuild. (test_change_stats.py runs the whole step with the estimators; these run
the fold alone, in a second: mutation testing runs them once a mutant.)"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawl_assets.crawler.batches.arrow_schemas import FETCH_LOG_SCHEMA
from crawl_assets.crawler.settings import ARCHIVE_CHANGES, CONTENT_CHANGES
from crawl_assets.pipeline.change_stats.change_history import (STATE_COLUMNS, STATE_SQL_TYPES, VISIT_TIME,
                                                               VISIT_TIME_IN_DAY, empty_state, every_url_state,
                                                               fold_history, read_fetch_log, sql_literal)

START = datetime(2026, 3, 1, tzinfo=timezone.utc)
T0 = START.timestamp() / 86400  # day 0 in days since the epoch, the fold's unit of time
EVER = float("-inf")
THRESHOLD = 3  # settings.near_dup_threshold's default: SimHash bits a text may move unchanged
FAR = 0xFFF  # a SimHash 12 bits away: the text changed
CLASSES = {200: "ok", 304: "not_modified", 301: "redirect", 404: "http_4xx", 410: "http_4xx", 500: "http_5xx"}


def fetch(url, at, status=200, digest="d", change=None, simhash=0, nbytes=1000, lm=None, day=None):
    """A fetch `at` days after START (in the partition of day `day`, by default the day it
    lies in); lm: its Last-Modified in days after START."""
    ok = status == 200
    return {"url": url, "host": url.split("/")[2], "status": status, "status_class": CLASSES[status],
            "fetched_at": START + timedelta(days=at), "bytes": nbytes if ok else 0,
            "sha256": digest if ok else None, "payload_digest": digest if ok else None,
            "simhash": simhash if ok else None, "change_digest": change if ok else None,
            "last_modified": format_datetime(START + timedelta(days=lm), usegmt=True) if lm is not None else None,
            "_day": int(at) if day is None else day}


def write_log(folder: Path, rows, schema=FETCH_LOG_SCHEMA) -> dict[int, str]:
    """The rows in the crawl's hive layout, one file a day: {day: its file}."""
    files = {}
    for day in sorted({row["_day"] for row in rows}):
        out = folder / "fetch_log" / f"date={(START + timedelta(days=day)).date()}" / "shard=s00"
        out.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pylist([row for row in rows if row["_day"] == day], schema=FETCH_LOG_SCHEMA)
        pq.write_table(table.select(schema.names), out / "fetch_log.parquet")
        files[day] = str(out / "fetch_log.parquet")
    return files


def every_file(folder: Path) -> str:
    return str(folder / "fetch_log" / "*" / "*" / "*.parquet")


def rows_of(con, query: str) -> dict[str, dict]:
    table = con.sql(query).to_arrow_table()
    return {row["url"]: row for row in table.to_pylist()}


def fold(con, glob, end: float, start: float = EVER, evidence=None, definition=ARCHIVE_CHANGES,
         state_before: pa.Table | None = None) -> dict[str, dict]:
    """window_state's rows by URL after folding the fetches in [T0 + start, T0 + end) into
    state_before (none: a full rebuild)."""
    if state_before is None:
        empty_state(con)
    else:
        con.register("state_before", state_before)
    fold_history(con, glob, T0 + start, T0 + end, THRESHOLD, evidence, definition)
    return rows_of(con, "SELECT * FROM window_state")


def state_after(con, with_evidence: bool) -> pa.Table:
    """Every URL's state after the window (the step puts its own rates in `touched` first)."""
    con.execute("CREATE TEMP TABLE touched AS SELECT * FROM window_state")
    every_url_state(con, with_evidence)
    return con.sql("SELECT * FROM state_rows ORDER BY url").to_arrow_table()


def full_state(glob, end: float, evidence=None, definition=ARCHIVE_CHANGES) -> pa.Table:
    with duckdb.connect() as con:
        fold(con, glob, end, evidence=evidence, definition=definition)
        return state_after(con, evidence is not None)


def daily_states(files: dict[int, str], days: int, evidence=None, definition=ARCHIVE_CHANGES):
    """Each day's fold into the day before's state: (day, that day's window_state rows, the
    state after it), day after day."""
    state = None
    for day in range(days):
        with duckdb.connect() as con:
            glob = [files[day]] if day in files else []
            if not glob:  # a day without fetches: an empty log of the day
                continue
            window = fold(con, glob, day + 1, start=day, evidence=evidence, definition=definition,
                          state_before=state)
            state = state_after(con, evidence is not None)
            yield day, window, state


def test_a_urls_history_counts_its_visits_intervals_changes_and_304s(tmp_path):
    """Errors are not visits, 304s are unchanged visits that saved the last full answer's size,
    a change is a visit whose content moved, and the day's own revisits are counted apart."""
    u = "https://a.test/page"
    rows = [fetch(u, 0.5, digest="v1", change="c1", nbytes=5000), fetch(u, 1.5, status=304),
            fetch(u, 2.5, status=500), fetch(u, 3.5, status=304),
            fetch(u, 4.5, digest="v1", change="c1", nbytes=5000),
            fetch(u, 6.5, digest="v2", change="c2", simhash=FAR, nbytes=6000),
            fetch("https://a.test/new", 6.25, nbytes=700)]
    write_log(tmp_path, rows)
    with duckdb.connect() as con:
        got = fold(con, every_file(tmp_path), 7)
        digests = con.execute("SELECT hash('v2'), hash('c2')").fetchone()
    page = got[u]
    assert {k: page[k] for k in ("visits", "intervals", "changes", "boilerplate_changes", "not_modified",
                                 "last_status", "last_status_class", "gone_streak", "bytes_saved",
                                 "last_body_bytes", "lm_checks", "lm_changes", "lm_missing")} == {
        "visits": 5, "intervals": 4, "changes": 1, "boilerplate_changes": 0, "not_modified": 2, "last_status": 200,
        "last_status_class": "ok", "gone_streak": 0, "bytes_saved": 10_000, "last_body_bytes": 6000,
        "lm_checks": 0, "lm_changes": 0, "lm_missing": 1}
    # Intervals between visits, 1, 2, 1 and 2 days (the 500 between is none); the last changed.
    assert page["visit_days"] == pytest.approx(6) and page["unchanged_days"] == pytest.approx(4)
    assert (page["shortest_interval"], page["longest_interval"]) == pytest.approx((1, 2))
    assert page["changed_intervals"] == pytest.approx([2])
    assert (page["last_visit_t"], page["last_fetch_t"]) == pytest.approx((T0 + 6.5, T0 + 6.5))
    assert (page["last_digest"], page["last_change_key"]) == digests
    assert page["last_visit_lm"] is None
    # Day 6 (the window's last day): one revisit, which moved and changed, after 2 days.
    assert {k: page[k] for k in ("day_visits", "day_not_modified", "day_bytes_saved", "day_revisits",
                                 "day_moved", "day_changed")} == {
        "day_visits": 1, "day_not_modified": 0, "day_bytes_saved": 0, "day_revisits": 1, "day_moved": 1,
        "day_changed": 1}
    assert (page["moved_after_t"], page["moved_by_t"], page["day_interval"]) == pytest.approx((T0 + 4.5, T0 + 6.5, 2))
    # A URL fetched once: a visit of the day, no interval, no revisit, nothing before it.
    new = got["https://a.test/new"]
    assert {k: new[k] for k in ("visits", "intervals", "changes", "visit_days", "shortest_interval",
                                "changed_intervals", "day_visits", "day_revisits", "moved_by_t", "last_body_bytes",
                                "moves_before", "days_before", "intervals_before")} == {
        "visits": 1, "intervals": 0, "changes": 0, "visit_days": 0, "shortest_interval": None,
        "changed_intervals": None, "day_visits": 1, "day_revisits": 0, "moved_by_t": None, "last_body_bytes": 700,
        "moves_before": 0, "days_before": 0, "intervals_before": 0}
    assert (new["url"], new["host"]) == ("https://a.test/new", "a.test")


def test_a_304_on_the_day_saves_the_last_full_answers_size(tmp_path):
    u = "https://a.test/p"
    rows = [fetch(u, 0.5, nbytes=4000), fetch(u, 1.5, status=304), fetch(u, 2.5, status=304),
            fetch("https://a.test/q", 2.25, nbytes=900), fetch("https://a.test/q", 2.75, status=304)]
    write_log(tmp_path, rows)
    with duckdb.connect() as con:
        got = fold(con, every_file(tmp_path), 3)
    assert {k: got[u][k] for k in ("not_modified", "bytes_saved", "day_visits", "day_not_modified",
                                   "day_bytes_saved", "day_revisits", "day_moved", "day_changed")} == {
        "not_modified": 2, "bytes_saved": 8000, "day_visits": 1, "day_not_modified": 1, "day_bytes_saved": 4000,
        "day_revisits": 1, "day_moved": 0, "day_changed": 0}
    assert got[u]["day_interval"] == pytest.approx(1)
    # Fetched twice on the day: a 304 after its first answer.
    q = got["https://a.test/q"]
    assert (q["day_visits"], q["day_not_modified"], q["day_bytes_saved"], q["day_revisits"]) == (2, 1, 900, 1)


def test_trailing_404s_and_410s_make_a_gone_streak_that_a_day_carries_on(tmp_path):
    u, dead = "https://a.test/gone", "https://a.test/dead"
    rows = [fetch(u, 0.5), fetch(u, 1.5, status=404), fetch(u, 1.75, status=410), fetch(u, 2.5, status=404),
            fetch(dead, 0.5, status=404), fetch(dead, 1.5, status=404), fetch(dead, 2.5, status=410),
            fetch(dead, 2.75, status=404)]
    files = write_log(tmp_path, rows)
    rebuilt = {row["url"]: row for row in full_state(every_file(tmp_path), 3).to_pylist()}
    assert (rebuilt[u]["last_status"], rebuilt[u]["gone_streak"], rebuilt[u]["visits"]) == (404, 3, 1)
    assert (rebuilt[dead]["gone_streak"], rebuilt[dead]["visits"]) == (4, 0)
    *_, (_, window, daily) = daily_states(files, 3)
    by_url = {row["url"]: row for row in daily.to_pylist()}
    assert (by_url[u]["gone_streak"], by_url[dead]["gone_streak"]) == (3, 4)
    # Any other answer ends the streak: a 200, and a 500 too (the page is not known gone).
    rows += [fetch(u, 3.5), fetch(dead, 3.5, status=500)]
    state = {row["url"]: row for row in full_state([*write_log(tmp_path, rows).values()], 4).to_pylist()}
    assert (state[u]["gone_streak"], state[u]["last_status"]) == (0, 200)
    assert (state[dead]["gone_streak"], state[dead]["last_status"], state[dead]["last_status_class"]) == (0, 500, "http_5xx")


def test_what_moved_and_what_is_a_change_under_each_definition(tmp_path):
    """archive: the payload less its per-request values (change_digest) moved; content: that,
    and the SimHash of the text by more than the threshold. Boilerplate-only: the first
    without the second. Without change digests (logs before them, or one side of a pair) the
    payload digest is compared."""
    base = 0x5555_AAAA_5555_AAAA
    rows = []
    for day in range(3):
        at = day + 0.5
        rows += [fetch("https://a.test/token", at, digest=f"t{day}", change="same", simhash=base),
                 fetch("https://a.test/footer", at, digest=f"f{day}", change=f"f{day}", simhash=base ^ day),
                 fetch("https://a.test/edited", at, digest=f"e{day}", change=f"e{day}", simhash=base ^ FAR * (day % 2)),
                 fetch("https://a.test/legacy", at, digest=f"l{day}", simhash=base ^ (day % 2)),
                 fetch("https://a.test/steady", at, digest="s", change="s", simhash=base),
                 # the change digest only from day 1 on: day 1 is compared by the payload digest
                 fetch("https://a.test/upgraded", at, digest=f"u{day}", change="u" if day else None, simhash=base)]
    write_log(tmp_path, rows)
    counts = {}
    for definition in (ARCHIVE_CHANGES, CONTENT_CHANGES):
        with duckdb.connect() as con:
            got = fold(con, every_file(tmp_path), 3, definition=definition)
        counts[definition] = {url.split("/")[-1]: (row["changes"], row["boilerplate_changes"], row["day_moved"],
                                                   row["day_changed"]) for url, row in got.items()}
    assert counts[ARCHIVE_CHANGES] == {"token": (0, 0, 0, 0), "footer": (2, 2, 1, 0), "edited": (2, 0, 1, 1),
                                       "legacy": (2, 2, 1, 0), "steady": (0, 0, 0, 0), "upgraded": (1, 1, 0, 0)}
    assert counts[CONTENT_CHANGES] == {"token": (0, 0, 0, 0), "footer": (0, 2, 1, 0), "edited": (2, 0, 1, 1),
                                       "legacy": (0, 2, 1, 0), "steady": (0, 0, 0, 0), "upgraded": (0, 1, 0, 0)}
    # The default is archive.
    with duckdb.connect() as con:
        empty_state(con)
        fold_history(con, every_file(tmp_path), EVER, T0 + 3, THRESHOLD, None)
        default = dict(con.execute("SELECT url, changes FROM window_state").fetchall())
    assert default["https://a.test/footer"] == 2


def test_a_threshold_of_zero_makes_every_text_move_count(tmp_path):
    rows = [fetch("https://a.test/p", day + 0.5, digest=f"p{day}", change=f"p{day}", simhash=day) for day in range(3)]
    write_log(tmp_path, rows)
    for threshold, changes in ((0, 2), (1, 1), (2, 0)):  # SimHashes 0, 1, 2: one bit, then two
        with duckdb.connect() as con:
            empty_state(con)
            fold_history(con, every_file(tmp_path), EVER, T0 + 3, threshold, None, CONTENT_CHANGES)
            assert con.execute("SELECT changes FROM window_state").fetchone()[0] == changes, threshold


def test_a_moves_before_the_day_count_its_boilerplate_only_under_content(tmp_path):
    """host_events reads a URL's moves before the day: its changes, and under content its
    boilerplate-only moves too (under archive they are changes already)."""
    # a text change on day 1, then footer edits (one SimHash bit each)
    simhashes = [0, FAR, FAR ^ 1, FAR ^ 3]
    rows = [fetch("https://a.test/footer", day + 0.5, digest=f"f{day}", change=f"f{day}", simhash=simhashes[day])
            for day in range(4)]
    files = write_log(tmp_path, rows)
    for definition in (ARCHIVE_CHANGES, CONTENT_CHANGES):
        *_, (day, window, _) = daily_states(files, 4, definition=definition)
        row = window["https://a.test/footer"]
        assert (row["moves_before"], row["intervals_before"], row["days_before"]) == (2, 2, pytest.approx(2))
        assert (row["changes"], row["boilerplate_changes"]) == ((3, 2) if definition == ARCHIVE_CHANGES else (1, 2))


def test_last_modified_pairs_say_whether_it_told_the_truth(tmp_path):
    """A pair of visits that both carry Last-Modified is a check; it agrees when it moved
    exactly when the content did and is not later than the fetch (a minute of clock skew
    allowed). A changed visit with it is a change dated by it."""
    honest, liar, future, skewed, none = (f"https://{h}.test/p" for h in ("honest", "liar", "future", "skewed", "none"))
    rows = [fetch(honest, 0.5, digest="a", lm=0.25), fetch(honest, 2.5, digest="a", lm=0.25),
            fetch(honest, 4.5, digest="b", change="b", simhash=FAR, lm=3.0),
            # a Last-Modified of the fetch's own time, whatever the content
            *(fetch(liar, at, digest="same", lm=at) for at in (0.5, 2.5, 4.5)),
            fetch(future, 0.5, digest="a", lm=0.25), fetch(future, 2.5, digest="b", simhash=FAR, lm=2.5 + 2 / 1440),
            fetch(skewed, 0.5, digest="a", lm=0.25), fetch(skewed, 2.5, digest="b", simhash=FAR, lm=2.5 + 0.5 / 1440),
            fetch(none, 0.5, digest="a"), fetch(none, 2.5, digest="b", simhash=FAR)]
    write_log(tmp_path, rows)
    with duckdb.connect() as con:
        got = fold(con, every_file(tmp_path), 5)
    lm = {url.split("/")[2]: (row["lm_checks"], row["lm_agreements"], row["lm_changes"], row["lm_missing"])
          for url, row in got.items()}
    assert lm == {"honest.test": (2, 2, 1, 0), "liar.test": (2, 0, 0, 0), "future.test": (1, 0, 1, 0),
                  "skewed.test": (1, 1, 1, 0), "none.test": (0, 0, 0, 1)}
    # The honest page: 2 unchanged days, then a change dated 1.5 days before the visit.
    assert got[honest]["lm_days"] == pytest.approx(2 + 1.5)
    assert got[honest]["last_visit_lm"] == pytest.approx(T0 + 3.0)
    assert got[liar]["lm_days"] == pytest.approx(4)


def test_a_sitemap_date_between_two_visits_is_a_change_and_one_after_the_last_is_pending(tmp_path):
    listed, later, unlisted = "https://a.test/listed", "https://a.test/later", "https://a.test/unlisted"
    rows = [fetch(u, at) for u in (listed, later, unlisted) for at in (0.5, 10.5, 20.5)]
    write_log(tmp_path, rows)
    evidence = pa.table({
        "url": [listed, listed, later, "https://a.test/never-fetched"],
        "lastmod": [START + timedelta(days=5), START + timedelta(days=25), START + timedelta(days=35),
                    START + timedelta(days=1)],
        "source": ["sitemap"] * 4})  # more columns than the fold needs
    state = {row["url"]: row for row in full_state(every_file(tmp_path), 30, evidence).to_pylist()}
    assert {u: (state[u]["changes"], state[u]["pending_change"]) for u in (listed, later, unlisted)} == {
        listed: (1, True), later: (0, False), unlisted: (0, False)}
    assert state[listed]["changed_intervals"] == pytest.approx([10])
    # Without the evidence nothing changed and nothing is pending.
    plain = {row["url"]: row for row in full_state(every_file(tmp_path), 30).to_pylist()}
    assert {u: (plain[u]["changes"], plain[u]["pending_change"]) for u in (listed, later, unlisted)} == {
        listed: (0, False), later: (0, False), unlisted: (0, False)}
    # A lastmod in nanoseconds and another zone is read as the same instant.
    local = pa.table({"url": [listed], "lastmod": pa.array([START + timedelta(days=5)], pa.timestamp("ns", "UTC"))
                      .cast(pa.timestamp("ns", "Europe/Paris"))})
    assert {row["url"]: row["changes"] for row in full_state(every_file(tmp_path), 30, local).to_pylist()}[listed] == 1


def test_a_pending_change_flips_without_a_fetch_in_the_daily_fold(tmp_path):
    """A URL the day does not fetch changes state when a listed date after its last visit
    appears (with evidence), or its evidence goes away (a day without it)."""
    quiet, busy = "https://a.test/quiet", "https://a.test/busy"
    rows = [fetch(quiet, 0.5), *(fetch(busy, day + 0.5) for day in range(4))]
    files = write_log(tmp_path, rows)
    evidence = pa.table({"url": [quiet], "lastmod": [START + timedelta(days=2)]})
    states = []
    for day in range(4):
        with duckdb.connect() as con:
            fold(con, [files[day]], day + 1, start=day, evidence=None if day == 3 else evidence,
                 state_before=states[-1] if states else None)
            after = state_after(con, day != 3)
            changed = {row["url"]: row["pending_change"] for row in con.sql("SELECT * FROM changed").to_arrow_table().to_pylist()}
        states.append(after)
        pending = {row["url"]: row["pending_change"] for row in after.to_pylist()}
        assert pending == {quiet: day == 2, busy: False}, day
        # The day changed the busy URL (fetched) and the quiet one when its pending change flipped.
        assert changed == ({busy: False, quiet: day == 2} if day in (0, 2, 3) else {busy: False}), day
    quiet_row = {row["url"]: row for row in states[-1].to_pylist()}[quiet]
    assert (quiet_row["visits"], quiet_row["last_visit_t"]) == (1, pytest.approx(T0 + 0.5))


def varied_rows():
    """Nine days of every kind of fetch the fold tells apart."""
    base = 0x5555_AAAA_5555_AAAA
    rows = []
    for day in range(9):
        rows += [fetch("https://a.test/daily", day + 0.3, digest=f"d{day // 3}", change=f"d{day // 3}",
                       simhash=base ^ FAR * (day // 3), lm=3 * (day // 3) + 0.1),
                 fetch("https://a.test/token", day + 0.4, digest=f"t{day}", change=f"t{day // 4}",
                       simhash=base ^ (day // 4)),
                 fetch("https://a.test/twice", day + 0.2, digest=f"w{day // 2}", simhash=base ^ FAR * (day // 2)),
                 fetch("https://a.test/twice", day + 0.7, status=304 if day % 2 else 200, digest=f"w{day // 2}",
                       simhash=base ^ FAR * (day // 2)),
                 fetch("https://b.test/gone", day + 0.5, status=404 if day in (2, 3) or day >= 6 else 200),
                 fetch("https://b.test/liar", day + 0.6, digest="same", lm=day + 0.6)]
        if day % 3 == 1:
            rows.append(fetch("https://b.test/flaky", day + 0.1, status=500))
        if day % 2:
            rows.append(fetch("https://b.test/flaky", day + 0.8, digest=f"f{day // 5}", simhash=FAR * (day // 5)))
    rows.append(fetch("https://c.test/once", 1.5, digest="o"))
    return rows


def test_the_daily_fold_equals_the_full_rebuild(tmp_path):
    """Day D's fetches folded into the state of day D-1 (most URLs fetched once: the one-row
    form), day after day, equal every fetch up to D folded into nothing (the grouped form)."""
    files = write_log(tmp_path, varied_rows())
    evidence = pa.table({"url": ["https://a.test/token", "https://c.test/once", "https://a.test/daily"],
                         "lastmod": [START + timedelta(days=d) for d in (2.45, 4.5, 7.95)]})
    for with_evidence in (None, evidence):
        for day, _, daily in daily_states(files, 9, with_evidence):
            if day not in (1, 4, 8):  # (a rebuild a day would double the test's time)
                continue
            rebuilt = full_state([files[d] for d in range(day + 1)], day + 1, with_evidence)
            assert daily.column_names == rebuilt.column_names
            for a, b in zip(daily.to_pylist(), rebuilt.to_pylist(), strict=True):
                for column, value in b.items():
                    if isinstance(value, float):
                        assert a[column] == pytest.approx(value, rel=1e-12), (day, a["url"], column)
                    elif isinstance(value, list):
                        assert sorted(a[column]) == pytest.approx(sorted(value)), (day, a["url"], column)
                    else:
                        assert a[column] == value, (day, a["url"], column)
    last = {row["url"]: row for row in daily.to_pylist()}
    # two new payloads each, and one listed date inside an interval each
    assert (last["https://a.test/daily"]["changes"], last["https://a.test/token"]["changes"]) == (3, 3)
    assert last["https://c.test/once"]["pending_change"] and not last["https://a.test/daily"]["pending_change"]
    assert (last["https://b.test/gone"]["gone_streak"], last["https://a.test/twice"]["visits"]) == (3, 18)


def test_the_state_has_the_state_columns_and_a_rebuild_starts_from_none():
    with duckdb.connect() as con:
        empty_state(con)
        described = con.execute("DESCRIBE state_before").fetchall()
        assert con.execute("SELECT count(*) FROM state_before").fetchone()[0] == 0
    assert [(name, sql_type) for name, sql_type, *_ in described] == [
        *STATE_SQL_TYPES.items(), ("pending_change", "BOOLEAN")]


def test_the_state_after_a_window_has_the_state_columns_in_order(tmp_path):
    write_log(tmp_path, [fetch("https://a.test/p", 0.5)])
    state = full_state(every_file(tmp_path), 1)
    assert state.column_names == [*STATE_COLUMNS, "pending_change"]
    assert state.num_rows == 1


def test_a_visit_outside_its_partitions_day_counts_at_the_start_of_that_day(tmp_path):
    """A backfill fetches day 3's batch on day 5: in the hive layout its visits stand for day
    3; a log outside that layout (no date column) is taken at its fetch times."""
    rows = [fetch("https://a.test/p", 5.5, day=3), fetch("https://a.test/q", 3.25, day=3)]
    hive = write_log(tmp_path / "hive", rows)
    with duckdb.connect() as con:
        got = fold(con, hive[3], 4, start=3)
    with duckdb.connect() as con:
        assert read_fetch_log(con, hive[3]) == VISIT_TIME_IN_DAY
    assert (got["https://a.test/p"]["last_visit_t"], got["https://a.test/q"]["last_visit_t"]) == pytest.approx(
        (T0 + 3, T0 + 3.25))
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.Table.from_pylist([{k: v for k, v in row.items() if k != "_day"} for row in rows],
                                        schema=FETCH_LOG_SCHEMA), plain)
    with duckdb.connect() as con:
        got = fold(con, str(plain), 6)
    with duckdb.connect() as con:
        assert read_fetch_log(con, str(plain)) == VISIT_TIME
    assert got["https://a.test/p"]["last_visit_t"] == pytest.approx(T0 + 5.5)
    # The window is on those times: [5, 6) holds the late fetch alone.
    with duckdb.connect() as con:
        assert set(fold(con, str(plain), 6, start=5)) == {"https://a.test/p"}


def test_only_fetches_inside_the_window_count(tmp_path):
    u = "https://a.test/p"
    files = write_log(tmp_path, [fetch(u, day + 0.5, digest=f"v{day}", change=f"v{day}", simhash=FAR * day)
                                 for day in range(6)])
    with duckdb.connect() as con:
        got = fold(con, every_file(tmp_path), 3)
    assert (got[u]["visits"], got[u]["changes"], got[u]["last_visit_t"]) == (3, 2, pytest.approx(T0 + 2.5))
    with duckdb.connect() as con:
        got = fold(con, list(files.values()), 4, start=2)
    assert (got[u]["visits"], got[u]["intervals"]) == (2, 1)


def test_a_log_written_before_change_digest_is_compared_by_its_payload_digest(tmp_path):
    old = pa.schema([field for field in FETCH_LOG_SCHEMA if field.name not in ("change_digest", "rendered", "hsts")])
    rows = [fetch("https://a.test/p", day + 0.5, digest=f"p{day // 2}", simhash=FAR * (day // 2)) for day in range(4)]
    write_log(tmp_path, rows, schema=old)
    with duckdb.connect() as con:
        got = fold(con, every_file(tmp_path), 4)
    assert (got["https://a.test/p"]["changes"], got["https://a.test/p"]["last_change_key"]) == (1, None)
    # ... and in a newer log, a payload that moved under the same change digest is no move.
    rows = [fetch("https://a.test/p", day + 0.5, digest=f"p{day}", change="same") for day in range(4)]
    write_log(tmp_path / "new", rows)
    with duckdb.connect() as con:
        got = fold(con, every_file(tmp_path / "new"), 4)
    assert (got["https://a.test/p"]["changes"], got["https://a.test/p"]["boilerplate_changes"]) == (0, 0)


def test_a_data_root_whose_path_holds_a_quote_is_read(tmp_path):
    folder = tmp_path / "bob's crawl"
    files = write_log(folder, [fetch("https://a.test/p", 0.5), fetch("https://a.test/p", 1.5, status=304)])
    with duckdb.connect() as con:
        assert fold(con, every_file(folder), 2)["https://a.test/p"]["visits"] == 2
    with duckdb.connect() as con:
        assert fold(con, list(files.values()), 2)["https://a.test/p"]["not_modified"] == 1


def test_sql_literal_quotes_a_path_or_a_list_of_paths():
    assert sql_literal("/data/bob's/*.parquet") == "'/data/bob''s/*.parquet'"
    assert sql_literal([Path("/a/x.parquet"), "/b/it's.parquet"]) == "['/a/x.parquet', '/b/it''s.parquet']"
    assert sql_literal(()) == "[]"


def test_unreadable_input_is_a_clear_error(tmp_path):
    with duckdb.connect() as con:
        empty_state(con)
        with pytest.raises(ValueError, match=r"^fetch log '.*nowhere/\*\.parquet' cannot be read as the crawl's "
                                             r"fetch-log Parquet \(run the fetch step first, or check the path\): "):
            fold_history(con, str(tmp_path / "nowhere" / "*.parquet"), EVER, T0 + 1, THRESHOLD, None)
    # A Parquet file without the fetch log's columns.
    pq.write_table(pa.table({"url": ["https://a.test/"], "status": [200]}), tmp_path / "links.parquet")
    with duckdb.connect() as con:
        empty_state(con)
        with pytest.raises(ValueError, match="cannot be read as the crawl's fetch-log Parquet"):
            fold_history(con, str(tmp_path / "links.parquet"), EVER, T0 + 1, THRESHOLD, None)
    write_log(tmp_path, [fetch("https://a.test/p", 0.5)])
    with duckdb.connect() as con:
        empty_state(con)
        with pytest.raises(ValueError, match=r"^setting change_definition must be one of \('archive', 'content'\), "
                                             r"not 'counts'$"):
            fold_history(con, every_file(tmp_path), EVER, T0 + 1, THRESHOLD, None, "counts")
    with duckdb.connect() as con:
        empty_state(con)
        with pytest.raises(ValueError, match=r"^lastmod evidence needs columns url and lastmod; missing \['lastmod'\]$"):
            fold_history(con, every_file(tmp_path), EVER, T0 + 1, THRESHOLD, pa.table({"url": ["https://a.test/p"]}))
