"""Host events: pages of one host seen changing together on a day make the host's other pages
due (change_stats' host_events.py, read by recrawl_priorities), from small fetch logs."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq

from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
from crawl_assets.pipeline.change_stats.url_change_state import url_state
from crawl_assets.pipeline.priorities.priorities_step import recrawl_priorities
from crawl_assets.pipeline.report_step import day_report, summary_markdown

from crawl_files import fetch_row, write_fetch_log

DAY0, DAY1, DAY2 = "2026-03-01", "2026-03-02", "2026-03-03"
PAGES = 6
# Two fetches a day: each page's fair share is a visit every six days, none due on day 2 alone.
SETTINGS = replace(CrawlSettings(), daily_fetch_budget=2, discovery_share=0.0)
REBUILT, QUIET = "rebuilt.test", "quiet.test"


def url(host: str, i: int) -> str:
    return f"https://{host}/docs/{i}"


def page(host: str, i: int, when: str, template: int = 0) -> dict:
    """A page's answer: its text's SimHash, one bit flipped by a template rebuild (boilerplate
    under the near-duplicate threshold), and the digest of the whole payload."""
    text = int.from_bytes(hashlib.sha256(url(host, i).encode()).digest()[:8], "big") >> 1
    return fetch_row(url(host, i), when, digest=f"{host}/{i}/{template}", sha256=f"{host}/{i}/{template}",
                     payload_digest=f"{host}/{i}/{template}", simhash=text ^ (template << 63), bytes=5000)


def crawl(root) -> None:
    """Day 0: every page of both hosts; day 1: two pages of each host revisited: the rebuilt
    host's after a template rebuild, the quiet host's unchanged."""
    write_fetch_log(root, DAY0, [page(h, i, f"{DAY0}T02:00:{i:02d}") for h in (REBUILT, QUIET)
                                 for i in range(PAGES)])
    write_fetch_log(root, DAY1, [page(REBUILT, i, f"{DAY1}T02:00:{i:02d}", template=1) for i in range(2)]
                    + [page(QUIET, i, f"{DAY1}T02:00:{i:02d}") for i in range(2)])
    day0 = change_stats(str(root / "fetch_log" / f"date={DAY0}" / "*" / "*.parquet"), DAY0, SETTINGS,
                        state_root=root)
    change_stats(str(root / "fetch_log" / f"date={DAY1}" / "*" / "*.parquet"), DAY1, SETTINGS,
                 previous=day0.state, state_root=root)


def plan_of_day_two(root) -> dict[str, dict]:
    known = [url(h, i) for h in (QUIET, REBUILT) for i in range(PAGES)]
    known_urls = pa.table({"url": known, "host": [u.split("/")[2] for u in known]})
    plan = recrawl_priorities(url_state(root, DAY1), None, None, known_urls, DAY2, SETTINGS)
    return {row["url"]: row for row in plan.urls.to_pylist()}


def test_a_rebuild_seen_on_two_pages_makes_the_hosts_other_pages_due(tmp_path):
    crawl(tmp_path)
    rows = plan_of_day_two(tmp_path)
    others = range(2, PAGES)
    assert all(rows[url(REBUILT, i)]["due"] for i in others)
    assert not any(rows[url(QUIET, i)]["due"] for i in others)
    # the day's two fetches go to pages of the rebuilt host that were not revisited
    planned = sorted(u for u, row in rows.items() if row["planned"])
    assert len(planned) == 2 and all(u.split("/")[2] == REBUILT and int(u.rsplit("/", 1)[1]) >= 2 for u in planned)
    # a page fetched after the event is not raised: the two seen moving are not due again
    assert not any(rows[url(REBUILT, i)]["due"] for i in range(2))


def test_change_stats_and_the_day_report_show_the_event(tmp_path):
    crawl(tmp_path)
    events = {row["host"]: row for row in pq.read_table(url_state(tmp_path, DAY1).host_events).to_pylist()}
    rebuilt, quiet = events[REBUILT], events[QUIET]
    assert (rebuilt["day_event"], rebuilt["events"], rebuilt["last_event_pages"], rebuilt["last_event_revisits"],
            rebuilt["last_event_share"]) == (True, 1, 2, 2, 1.0)
    assert rebuilt["last_event_after"].isoformat().startswith(f"{DAY0}T02:00:01")  # the later of the two
    assert (quiet["day_event"], quiet["events"], quiet["last_event_after"]) == (False, 0, None)
    report = day_report(tmp_path, DAY1, ["s00"])
    assert report.host_events["host"].to_pylist() == [REBUILT]
    assert f"1 host event(s), pages of one host changing together: {REBUILT} (2 of 2 revisited)" \
        in summary_markdown(report)


def test_pages_that_always_change_are_no_host_event(tmp_path):
    """Pages whose every earlier revisit moved (a counter, a feed) say nothing of their host:
    their first moves are news (an event on day 1), their later ones what they always do."""
    host, days = "busy.test", [f"2026-03-0{d + 1}" for d in range(4)]
    write_fetch_log(tmp_path, days[0], [page(host, i, f"{days[0]}T02:00:{i:02d}") for i in range(PAGES)])
    for d, day in enumerate(days[1:], start=1):
        write_fetch_log(tmp_path, day, [page(host, i, f"{day}T02:00:{i:02d}", template=d % 2) for i in range(2)])
    state = None
    for day in days:
        state = change_stats(str(tmp_path / "fetch_log" / f"date={day}" / "*" / "*.parquet"), day, SETTINGS,
                             previous=state, state_root=tmp_path).state
    each_day = [pq.read_table(url_state(tmp_path, day).host_events).to_pylist() for day in days[1:]]
    assert [[(e["events"], e["day_event"]) for e in rows] for rows in each_day] == [[(1, True)], [(1, False)],
                                                                                    [(1, False)]]
