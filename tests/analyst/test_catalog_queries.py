"""Every SQL block of docs/CATALOG.md runs against a two-day demo crawl's catalog and returns
what the crawl holds: each block's rows are compared with the same answer worked out without
the catalog, from the crawl's Parquet files, its WARC files or the demo web's own structure
(so a wrong join, partition or filter in a view or a query shows). Every view the doc lists
exists, and every view the catalog has is documented."""

import re
from collections import Counter, defaultdict
from datetime import date as Date, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.batches.arrow_schemas import LINKS_SCHEMA
from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.crawler.vocabulary import BATCH_LIMITS, TRAP_DEFENCES
from crawl_assets.pipeline.catalog_step import build_catalog
from crawl_assets.storage.layout import links_file, write_parquet_atomic

from conftest import DAY1, DAY2

DOC = PROJECT_ROOT / "docs" / "CATALOG.md"
BLOCKS = re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_doc_has_the_analyst_questions():
    assert len(BLOCKS) >= 5


# ---- the crawl, read without the catalog -------------------------------------------------------

def partitioned_rows(root: Path, output: str) -> list[dict]:
    """Every row of an output's date=D/shard=S/*.parquet files, with its date and shard."""
    rows = []
    for path in sorted(root.glob(f"{output}/date=*/shard=*/*.parquet")):
        day, shard = path.parent.parent.name.removeprefix("date="), path.parent.name.removeprefix("shard=")
        rows += [row | {"date": Date.fromisoformat(day), "shard": shard} for row in pq.read_table(path).to_pylist()]
    return rows


def warc_records(crawl) -> list[dict]:
    """Every response and revisit record of the crawl's WARC files, read with warcio."""
    records = []
    for path in crawl.warcs():
        day, shard = path.parent.parent.name.removeprefix("date="), path.parent.name.removeprefix("shard=")
        with open(path, "rb") as fh:
            it = ArchiveIterator(fh)
            for record in it:
                if record.rec_type not in ("response", "revisit"):
                    continue
                headers = record.rec_headers
                http = record.http_headers
                mime = (http.get_header("Content-Type") or "").split(";")[0].strip() if http else None
                records.append({
                    "url": headers.get_header("WARC-Target-URI"), "warc_type": record.rec_type,
                    "profile": headers.get_header("WARC-Profile"),
                    "timestamp": re.sub(r"\D", "", headers.get_header("WARC-Date"))[:14],
                    "status": int(http.get_statuscode()) if http else None,
                    "mime": "warc/revisit" if record.rec_type == "revisit" else mime,
                    "date": Date.fromisoformat(day), "shard": shard, "filename": path.name,
                    "offset": it.get_record_offset(), "length": it.get_record_length()})
    return records


# ---- each documented question, answered from the files ------------------------------------------

def hosts_changed_this_week(crawl, rows):
    """Per host, the fetches (200/304, last seven days) that had an earlier one of the same URL,
    and those that came back with another payload. The demo web does not change between the
    two days, so only the session-id trap host's pages changed (each view writes a new session
    id into its links); a revisit is every fetch after a URL's first."""
    fetches = [r for r in partitioned_rows(crawl.root, "fetch_log") if r["status"] in (200, 304)
               and r["fetched_at"] >= datetime.now(timezone.utc) - timedelta(days=7)]
    by_url = defaultdict(list)
    for r in fetches:
        by_url[r["url"]].append(r)
    revisited, changed = Counter(), Counter()
    for visits in by_url.values():
        visits.sort(key=lambda r: r["fetched_at"])
        for before, after in zip(visits, visits[1:]):
            if before["payload_digest"] is not None:
                revisited[after["host"]] += 1
                changed[after["host"]] += after["status"] == 200 and after["payload_digest"] != before["payload_digest"]
    expected = sorted(((h, n, changed[h], round(changed[h] / n, 3)) for h, n in revisited.items()),
                      key=lambda r: (-r[2], -r[3], r[0]))
    assert rows == expected
    assert [host for host, _, changed_, _ in rows if changed_] == ["session-ids.demo.test"]
    assert rows[0][2] == rows[0][1] > 5  # every revisit of it changed
    # Every ordinary page seen on day one was fetched again on day two, on every host crawled.
    day_one = Counter(r["host"] for r in fetches if r["date"] == Date.fromisoformat(DAY1) and r["status"] == 200
                      and r["host"].startswith("h00"))
    assert {h: n for h, n, _, _ in rows if h.startswith("h00")} == dict(day_one) and sum(day_one.values()) > 30


def near_duplicates_of_a_url(crawl, rows):
    """The other crawled pages of the demo web's near-duplicate group holding the smallest URL
    of a group of two or more (the demo web knows which pages carry the same article)."""
    crawled = {r["url"] for r in partitioned_rows(crawl.root, "fetch_log") if r["status"] == 200}
    groups = [sorted(set(g.urls) & crawled) for g in crawl.web.near_duplicate_groups()]
    groups = [g for g in groups if len(g) > 1]
    mine = min(url for g in groups for url in g)
    (group,) = [g for g in groups if mine in g]
    assert [url for url, *_ in rows] == [url for url in group if url != mine]
    assert [(host, size) for _, host, _, size in rows] == [(urlsplit(url).hostname, len(group))
                                                           for url in group if url != mine]
    representatives = {rep for _, _, rep, _ in rows}
    assert len(representatives) == 1 and representatives <= set(group)


def bandwidth_saved_by_304s(crawl, rows):
    """Per day, the 304 answers and the bytes of each URL's latest 200 before it."""
    fetches = partitioned_rows(crawl.root, "fetch_log")
    full = defaultdict(list)
    for r in fetches:
        if r["status"] == 200:
            full[r["url"]].append(r)
    answers, saved = Counter(), Counter()
    for r in fetches:
        if r["status"] == 304:
            earlier = [f for f in full[r["url"]] if f["fetched_at"] <= r["fetched_at"]]
            answers[r["date"]] += 1
            saved[r["date"]] += max(earlier, key=lambda f: f["fetched_at"])["bytes"] if earlier else 0
    assert rows == [(day, answers[day], saved[day], round(saved[day] / 1e6, 2)) for day in sorted(answers)]
    # Day two answered 304 for every ordinary page day one fetched whole: it saved their bytes at least.
    ordinary = sum(r["bytes"] for r in fetches if r["date"] == Date.fromisoformat(DAY1) and r["status"] == 200
                   and r["host"].startswith("h00"))
    ((day, _, saved_, _),) = rows
    assert day == Date.fromisoformat(DAY2) and saved_ >= ordinary > 100_000


REFUSED_AT_FETCH = ("robots_disallowed", "robots_unavailable", "blocked_address", "deferred_crawl_delay",
                    "deferred_retry_after")


def refused_urls_counted(crawl, rows):
    """The trap defences' counts (dropped_urls) and the fetch log's refusals, per host and reason."""
    trap = Counter()
    for r in partitioned_rows(crawl.root, "dropped_urls"):
        trap[("trap defence", r["reason"], r["host"])] += r["urls"]
    fetch = Counter(("fetch", r["status_class"], r["host"]) for r in partitioned_rows(crawl.root, "fetch_log")
                    if r["status_class"] in REFUSED_AT_FETCH)
    expected = sorted(((*key, n) for key, n in (trap + fetch).items()), key=lambda r: (-r[3], r[0], r[1], r[2]))
    assert rows == expected
    # robots.txt's refusals, on hosts whose robots.txt disallows a path; the trap hosts' URLs,
    # refused by the trap defences (and over the host budget) on the trap hosts only.
    disallowing = {crawl.web.hostname(i) for i in range(crawl.web.hosts) if crawl.web.robots_rules(i)["disallow"]}
    traps = {t.hostname for t in crawl.web.trap_hosts()}
    assert {host for _, reason, host, _ in rows if reason == "robots_disallowed"} <= disallowing
    assert {host for stage, _, host, _ in rows if stage == "trap defence"} <= traps
    assert {reason for stage, reason, _, _ in rows if stage == "trap defence"} & TRAP_DEFENCES
    assert sum(n for stage, _, _, n in rows if stage == "trap defence") > 50


def refused_urls_listed(crawl, rows):
    """The links a rule refused, newest day first (ties in any order of source): the trap hosts'
    links the trap defences refused. A batch limit is no refusal of the URL: links over the
    depth or a host's budget keep a NULL reason, and dropped_urls counts them (as the doc says)."""
    links = partitioned_rows(crawl.root, "links")
    dropped = sorted(((r["date"], r["dropped_reason"], r["target"], r["source"]) for r in links
                      if r["dropped_reason"] is not None), key=lambda r: (-r[0].toordinal(), r[1], r[2]))
    assert [r[:3] for r in rows] == [r[:3] for r in dropped[:50]] and set(rows) <= set(dropped)
    assert {reason for _, reason, _, _ in dropped} <= TRAP_DEFENCES and len(rows) == 50
    assert {urlsplit(target).hostname for _, _, target, _ in dropped} <= {t.hostname for t in crawl.web.trap_hosts()}
    assert not {r["dropped_reason"] for r in links} & BATCH_LIMITS
    counted = {r["reason"] for r in partitioned_rows(crawl.root, "dropped_urls")}
    assert counted & BATCH_LIMITS and counted & TRAP_DEFENCES


def revisit_share_per_day(crawl, rows):
    """Per day, the WARC files' response and revisit records, by revisit profile."""
    per_day = defaultdict(Counter)
    for r in warc_records(crawl):
        kind = {None: "response", SERVER_NOT_MODIFIED: "304", IDENTICAL_PAYLOAD: "copy"}[r["profile"]]
        per_day[r["date"]][kind] += 1
    expected = []
    for day in sorted(per_day):
        counts = per_day[day]
        total = sum(counts.values())
        expected.append((day, total, counts["304"], counts["copy"], round((counts["304"] + counts["copy"]) / total, 3)))
    assert rows == expected
    # Day one: the byte-identical mirrors are copies; day two: a 304 for every ordinary page of day one.
    (day1, day2) = rows
    ordinary = sum(1 for r in warc_records(crawl) if r["date"] == day1[0] and urlsplit(r["url"]).hostname.startswith("h00"))
    assert day1[3] > 0 and day1[2] == 0 and day2[2] >= ordinary > 30


def captures_of_a_page(crawl, rows):
    """Every record of the smallest seed URL (of the seed file the crawl read) in the WARC
    files, where warcio finds it."""
    seed = min((crawl.settings.seeds_dir / "demo.txt").read_text().split())
    found = sorted((r for r in warc_records(crawl) if r["url"] == seed), key=lambda r: r["timestamp"])
    assert rows == [(r["timestamp"], r["status"], r["mime"], r["warc_type"], r["date"], r["shard"], r["filename"],
                     r["offset"], r["length"]) for r in found]
    # Archived whole on day one, a 304 revisit on day two.
    assert [(r[3], r[4]) for r in rows] == [("response", Date.fromisoformat(DAY1)), ("revisit", Date.fromisoformat(DAY2))]


def rendered_pages_with_their_dom(crawl, rows):
    """The demo crawl renders nothing (tests/analyst/test_rendered_captures.py runs the block
    on a rendered crawl): no row, and the view holds no conversion record."""
    assert rows == []
    for path in crawl.warcs():
        with open(path, "rb") as fh:
            assert not any(record.rec_type == "conversion" for record in ArchiveIterator(fh))


SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL_PAYLOAD = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"

# Each block's answer, found by a phrase of its SQL; every block must have exactly one.
CHECKS = {
    "lag(payload_digest)": hosts_changed_this_week,
    "FROM near_duplicates AS mine": near_duplicates_of_a_url,
    "ASOF JOIN": bandwidth_saved_by_304s,
    "'trap defence' AS stage": refused_urls_counted,
    "WHERE dropped_reason IS NOT NULL": refused_urls_listed,
    "AS revisits_copy": revisit_share_per_day,
    "(SELECT min(url) FROM seeds)": captures_of_a_page,
    "dom.warc_type = 'conversion'": rendered_pages_with_their_dom,
}


def check_of(sql: str):
    (check,) = [check for phrase, check in CHECKS.items() if phrase in sql]
    return check


def test_every_block_has_one_check():
    assert sorted(check_of(sql).__name__ for sql in BLOCKS) == sorted(c.__name__ for c in CHECKS.values())


@pytest.mark.parametrize("sql", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_each_sql_block_returns_what_the_crawl_holds(two_day_crawl, sql):
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    rows = con.execute(sql).fetchall()
    if sql.startswith("-- expect rows"):
        assert rows, sql
    check_of(sql)(two_day_crawl, rows)


def test_the_refused_links_are_listed_newest_first(tmp_path):
    """The block listing refused links, on a catalog whose links files hold refusals (the demo
    crawl has none): newest day first, then by reason and target, at most 50, none unrefused."""
    sql = next(sql for sql in BLOCKS if "WHERE dropped_reason IS NOT NULL" in sql)
    reasons = ["url_too_long", "host_budget", "page_nofollow", None]
    days = {"2026-11-28": [], "2026-11-29": []}
    for d, day in enumerate(days):
        for i in range(40):
            days[day].append({"source": f"http://s{d}.test/p{i % 3}", "target": f"http://t{i % 7}.test/{d}/{i:02d}",
                              "target_host": f"t{i % 7}.test", "depth": 2, "is_new": True,
                              "dropped_reason": reasons[i % 4]})
        write_parquet_atomic(pa.Table.from_pylist(days[day], schema=LINKS_SCHEMA), links_file(tmp_path, day, "s00"))
    build_catalog(tmp_path, tmp_path / "crawl.duckdb")
    rows = duckdb.connect(str(tmp_path / "crawl.duckdb"), read_only=True).execute(sql).fetchall()
    refused = sorted(((Date.fromisoformat(day), r["dropped_reason"], r["target"], r["source"])
                      for day, links in days.items() for r in links if r["dropped_reason"]),
                     key=lambda r: (-r[0].toordinal(), r[1], r[2]))
    assert len(refused) == 60 and rows == refused[:50]
    assert {r[0] for r in rows} == {Date(2026, 11, 29), Date(2026, 11, 28)}


def test_every_view_is_documented(two_day_crawl):
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    documented = set(re.findall(r"^### `(\w+)`", DOC.read_text(), flags=re.M))
    assert {"fetches", "pages", "captures", "links", "urls", "near_duplicates"} <= views
    assert views <= documented, views - documented
