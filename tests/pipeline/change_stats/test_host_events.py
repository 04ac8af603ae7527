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
from crawl_assets.pipeline.report.report_step import day_report, summary_markdown

from crawl_files import fetch_row, write_fetch_log

DAYS = ("2026-03-01", "2026-03-02", "2026-03-03")
PLAN_DAY = "2026-03-04"
PAGES = 6
# Two fetches a day: each page's fair share is a visit every six days, none due by then alone.
SETTINGS = replace(CrawlSettings(), daily_fetch_budget=2, discovery_share=0.0)
REBUILT, QUIET = "rebuilt.test", "quiet.test"


def url(host: str, i: int) -> str:
    return f"https://{host}/docs/{i}"


def page(host: str, i: int, day: str, template: int = 0) -> dict:
    """A page's answer: its text's SimHash, one bit flipped by a template rebuild (boilerplate
    under the near-duplicate threshold), and the digest of the whole payload."""
    text = int.from_bytes(hashlib.sha256(url(host, i).encode()).digest()[:8], "big") >> 1
    digest = f"{host}/{i}/{template}"
    return fetch_row(url(host, i), f"{day}T02:00:{i:02d}", digest=digest, sha256=digest, payload_digest=digest,
                     simhash=text ^ (template << 63), bytes=5000)


def step(root, day: str, rows: list[dict], previous):
    """The day's fetch log written and the change_stats daily step run on it."""
    write_fetch_log(root, day, rows)
    return change_stats(str(root / "fetch_log" / f"date={day}" / "*" / "*.parquet"), day, SETTINGS,
                        previous=previous, state_root=root).state


def crawl(root) -> None:
    """Day 0: every page of both hosts; days 1 and 2: two pages of each host revisited,
    unchanged on day 1; on day 2 the rebuilt host's after a template rebuild."""
    state = step(root, DAYS[0], [page(h, i, DAYS[0]) for h in (REBUILT, QUIET) for i in range(PAGES)], None)
    state = step(root, DAYS[1], [page(h, i, DAYS[1]) for h in (REBUILT, QUIET) for i in range(2)], state)
    step(root, DAYS[2], [page(REBUILT, i, DAYS[2], template=1) for i in range(2)]
         + [page(QUIET, i, DAYS[2]) for i in range(2)], state)


def plan_of_the_next_day(root) -> dict[str, dict]:
    known = [url(h, i) for h in (QUIET, REBUILT) for i in range(PAGES)]
    known_urls = pa.table({"url": known, "host": [u.split("/")[2] for u in known]})
    plan = recrawl_priorities(url_state(root, DAYS[2]), None, None, known_urls, PLAN_DAY, SETTINGS)
    return {row["url"]: row for row in plan.urls.to_pylist()}


def test_a_rebuild_seen_on_two_pages_makes_the_hosts_other_pages_due(tmp_path):
    crawl(tmp_path)
    rows = plan_of_the_next_day(tmp_path)
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
    events = {row["host"]: row for row in pq.read_table(url_state(tmp_path, DAYS[2]).host_events).to_pylist()}
    rebuilt, quiet = events[REBUILT], events[QUIET]
    assert (rebuilt["day_event"], rebuilt["events"], rebuilt["last_event_pages"], rebuilt["last_event_revisits"],
            rebuilt["last_event_share"]) == (True, 1, 2, 2, 1.0)
    # after the later of the two pages' previous visits, before the first that saw it
    assert (rebuilt["last_event_after"].isoformat(), rebuilt["last_event_before"].isoformat()) == \
        (f"{DAYS[1]}T02:00:01+00:00", f"{DAYS[2]}T02:00:00+00:00")
    assert (quiet["day_event"], quiet["events"], quiet["last_event_after"]) == (False, 0, None)
    report = day_report(tmp_path, DAYS[2], ["s00"])
    assert report.host_events["host"].to_pylist() == [REBUILT]
    assert f"1 host event(s), pages of one host changing together: {REBUILT} (2 of 2 revisited)" \
        in summary_markdown(report)


def test_pages_that_always_change_are_no_host_event(tmp_path):
    """Pages whose payload moves on every fetch (a counter) say nothing of their host, and a
    payload that moved on a page's first revisit is no news (it may be the counter)."""
    host, days = "busy.test", [f"2026-03-0{d + 1}" for d in range(4)]
    state = step(tmp_path, days[0], [page(host, i, days[0]) for i in range(PAGES)], None)
    for d, day in enumerate(days[1:], start=1):
        state = step(tmp_path, day, [page(host, i, day, template=d % 2) for i in range(PAGES)], state)
    events = pq.read_table(url_state(tmp_path, days[-1]).host_events).to_pylist()
    assert [(e["host"], e["events"]) for e in events] == [(host, 0)]


def test_a_few_of_many_revisited_pages_moving_is_no_host_event(tmp_path):
    """Ten pages of a host revisited the day after their first visit, unchanged; the next day
    four of ten move on one host (under EVENT_MIN_SHARE of its revisits: no event) and five of
    ten on another (half of them: an event)."""
    few, half, many = "few.test", "half.test", 10
    hosts = {few: 4, half: 5}
    state = step(tmp_path, DAYS[0], [page(h, i, DAYS[0]) for h in hosts for i in range(many)], None)
    state = step(tmp_path, DAYS[1], [page(h, i, DAYS[1]) for h in hosts for i in range(many)], state)
    step(tmp_path, DAYS[2], [page(h, i, DAYS[2], template=int(i < moved)) for h, moved in hosts.items()
                             for i in range(many)], state)
    events = {row["host"]: row for row in pq.read_table(url_state(tmp_path, DAYS[2]).host_events).to_pylist()}
    assert (events[few]["day_event"], events[few]["events"], events[few]["last_event_share"]) == (False, 0, None)
    assert (events[half]["day_event"], events[half]["last_event_pages"], events[half]["last_event_revisits"],
            events[half]["last_event_share"]) == (True, 5, many, 0.5)


def test_a_state_written_before_host_events_starts_them_empty(tmp_path):
    """A data root whose last state has rates but no host events table (written before them):
    the next day reads none before, and a template rebuild that day is that day's event."""
    state = step(tmp_path, DAYS[0], [page(REBUILT, i, DAYS[0]) for i in range(PAGES)], None)
    state = step(tmp_path, DAYS[1], [page(REBUILT, i, DAYS[1]) for i in range(PAGES)], state)
    older = replace(state, host_events=None)
    step(tmp_path, DAYS[2], [page(REBUILT, i, DAYS[2], template=1) for i in range(PAGES)], older)
    events = pq.read_table(url_state(tmp_path, DAYS[2]).host_events).to_pylist()
    assert [(e["host"], e["day_event"], e["events"]) for e in events] == [(REBUILT, True, 1)]
