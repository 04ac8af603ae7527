"""The demo web changes like the real web (change_model.py, host_traits.py, truth.py):
Poisson changes per page with skewed rates, validators that follow the versions (or do not,
on the hosts that send none or lie), sitemap lastmod and feeds, boilerplate-only changes
that leave the main text alone, and a truth export a benchmark can score against."""

from __future__ import annotations

import csv
import io
import statistics
import xml.etree.ElementTree as ET
from datetime import datetime
from email.utils import parsedate_to_datetime

import httpx
import pyarrow.parquet as pq
import pytest

from crawl_assets.crawler.content.simhash import page_text, simhash64
from demoweb import HOME_PAGE, DemoWeb, DemoWebThread
from demoweb.ordinary.change_model import moment
from demoweb.ordinary.host_traits import FEED_ENTRIES, feed_path, validator_policy
from demoweb.ordinary.truth import COLUMNS, truth_rows

SITEMAP_NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}


def get(web: DemoWeb, host_index: int, path: str, **headers: str):
    return web.respond(web.hostname(host_index), path, {k.replace("_", "-"): v for k, v in headers.items()})


def distance(a: int, b: int) -> int:
    return bin(a ^ b).count("1")


# ---- rates and histories ------------------------------------------------------------------

def test_rates_are_skewed_like_the_real_web():
    web = DemoWeb(seed=4, hosts=40, pages_per_host=100)
    homes = [web.page_state(h, HOME_PAGE).rate for h in range(40)]
    tops = [web.page_state(h, n).rate for h in range(40) for n in range(3)]
    others = [web.page_state(h, n).rate for h in range(40) for n in range(3, 100)]
    assert all(2.0 <= r <= 8.0 for r in homes)  # several times a day
    assert all(0.5 <= r <= 2.0 for r in tops)  # index pages: about daily
    never = sum(r == 0 for r in others) / len(others)
    rare = sum(0 < r <= 1 / 30 for r in others) / len(others)
    daily = sum(r >= 0.5 for r in others) / len(others)
    assert 0.35 <= never <= 0.45 and 0.40 <= rare <= 0.50 and 0.01 <= daily <= 0.06
    assert rare > never  # most pages change rarely, a large share never
    assert all(web.page_state(h, f"/private/{k}.html").rate == 0 for h in (1, 4) for k in range(5))


def test_histories_are_deterministic_and_grow_by_prefix():
    a, b = DemoWeb(seed=6, hosts=3, pages_per_host=30), DemoWeb(seed=6, hosts=3, pages_per_host=30)
    for page in (HOME_PAGE, 0, 7, 21):
        states = [a.page_state(2, page, t) for t in (0, 0.5, 3, 3.25, 40, 200)]
        assert states == [b.page_state(2, page, t) for t in (0, 0.5, 3, 3.25, 40, 200)]
        assert states[0].versions == states[0].events == 0 and states[0].last_change is None
        for earlier, later in zip(states, states[1:]):
            assert earlier.versions <= later.versions and earlier.events <= later.events
            if earlier.last_change is not None:
                assert later.last_change >= earlier.last_change
        # the state at t is the state seen by a web whose day is t
        assert a.with_day(40).page_state(2, page) == states[4]
    assert DemoWeb(seed=7, hosts=3).page_state(2, HOME_PAGE, 10) != a.page_state(2, HOME_PAGE, 10)


def test_rates_are_recovered_from_the_truth_export(demoweb_cli):
    """Poisson counts over 365 days: versions / days estimates the exported rate."""
    days = 365
    web = DemoWeb(seed=8, hosts=12, pages_per_host=40, day=days)
    out = demoweb_cli("truth", "--day", str(days), "--seed", "8", "--hosts", "12", "--pages-per-host", "40").stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == len(truth_rows(web)) == 12 * 41 + 5 * len([h for h in range(12) if web.private_urls(h)])
    errors = []
    for row in rows:
        rate, versions = float(row["rate_per_day"]), int(row["versions"])
        if rate == 0:
            assert versions == 0 and row["last_change"] == ""
            continue
        if rate * days >= 100:  # enough events for a tight estimate
            errors.append(abs(versions / days - rate) / rate)
    assert len(errors) >= 12 * 4  # every home page and index page, at least
    assert statistics.median(errors) < 0.06 and max(errors) < 0.25


def test_truth_matches_the_served_pages_and_parquet(tmp_path, demoweb_cli):
    web = DemoWeb(seed=9, hosts=4, pages_per_host=15, day=50)
    target = tmp_path / "truth.parquet"
    demoweb_cli("truth", "--day", "50", "--seed", "9", "--hosts", "4", "--pages-per-host", "15",
                "--output", str(target))
    table = pq.read_table(target).to_pylist()
    rows = truth_rows(web)
    assert [r["url"] for r in table] == [r.url for r in rows]
    for row, truth in zip(table, rows):
        assert row["versions"] == truth.versions and row["rate_per_day"] == truth.rate_per_day
        assert row["last_change"] == truth.last_change
        assert row["validators"] == validator_policy(web.host_index(truth.host))
        if truth.validators == "honest" and truth.boilerplate_changes == 0:
            path = truth.url.split(str(web.port), 1)[1]
            shown = parsedate_to_datetime(web.respond(truth.host, path).header("Last-Modified"))
            assert shown == (truth.last_change or moment(0))


def test_truth_cli_refuses_bad_input(demoweb_cli):
    bad = demoweb_cli("truth", "--format", "parquet", check=False)
    assert bad.returncode == 2 and "needs --output" in bad.stderr and "Traceback" not in bad.stderr
    bad = demoweb_cli("truth", "--day", "-1", check=False)
    assert bad.returncode == 2 and "--day" in bad.stderr


# ---- validators and conditional GET --------------------------------------------------------

def test_unchanged_pages_answer_304_and_changed_ones_200():
    day10 = DemoWeb(seed=3, hosts=4, pages_per_host=60, day=10)
    day20 = day10.with_day(20)
    host = 2
    assert validator_policy(host) == "honest"
    seen = {"same": 0, "changed": 0}
    for n in range(60):
        before, after = day10.page_state(host, n), day20.page_state(host, n)
        old = get(day10, host, f"/p/{n}.html")
        by_etag = get(day20, host, f"/p/{n}.html", if_none_match=old.header("ETag"))
        by_date = get(day20, host, f"/p/{n}.html", if_modified_since=old.header("Last-Modified"))
        if after.events == before.events:
            seen["same"] += 1
            assert by_etag.status == by_date.status == 304 and by_etag.body == b""
            assert by_etag.header("ETag") == old.header("ETag")
        else:
            seen["changed"] += 1
            assert by_etag.status == by_date.status == 200
            assert by_etag.body != old.body
            assert parsedate_to_datetime(by_etag.header("Last-Modified")) == moment(after.last_event)
    assert seen["same"] >= 20 and seen["changed"] >= 5


def test_hosts_without_validators_and_with_a_lying_last_modified():
    web = DemoWeb(seed=3, hosts=10, pages_per_host=20, day=12)
    later = web.with_day(13)
    none, lying = 8, 9
    assert (validator_policy(none), validator_policy(lying)) == ("none", "lying")
    for n in range(20):
        page = get(web, none, f"/p/{n}.html")
        assert page.header("ETag") is None and page.header("Last-Modified") is None
        assert get(later, none, f"/p/{n}.html", if_modified_since=moment(12).strftime(
            "%a, %d %b %Y %H:%M:%S GMT"), if_none_match="*").status == 200
        lie = get(web, lying, f"/p/{n}.html")
        assert lie.header("ETag") is None
        assert parsedate_to_datetime(lie.header("Last-Modified")) == moment(12)  # always "now"
        again = get(later, lying, f"/p/{n}.html", if_modified_since=lie.header("Last-Modified"))
        assert again.status == 200 and parsedate_to_datetime(again.header("Last-Modified")) == moment(13)
    # a never-changing page on the lying host still claims a fresh date every day
    still = next(n for n in range(3, 20) if web.page_state(lying, n).rate == 0)
    assert get(web, lying, f"/p/{still}.html").body == get(later, lying, f"/p/{still}.html").body
    # honest everywhere when asked
    honest = DemoWeb(seed=3, hosts=10, pages_per_host=20, day=12, validators="honest")
    assert get(honest, none, "/p/1.html").header("ETag") is not None
    with pytest.raises(ValueError, match="validators"):
        DemoWeb(validators="sometimes")


# ---- sitemaps and feeds ---------------------------------------------------------------------

def test_sitemap_lastmod_is_the_last_change():
    web = DemoWeb(seed=3, hosts=4, pages_per_host=60, day=45.5)
    r = get(web, 3, "/sitemap.xml")
    assert r.status == 200 and r.header("Content-Type").startswith("application/xml")
    entries = {u.findtext("sm:loc", namespaces=SITEMAP_NS): u.findtext("sm:lastmod", namespaces=SITEMAP_NS)
               for u in ET.fromstring(r.body).findall("sm:url", SITEMAP_NS)}
    assert list(entries) == web.page_urls(3)
    truth = {t.url: t for t in truth_rows(web) if t.host == web.hostname(3)}
    for url, lastmod in entries.items():
        expected = truth[url].last_change or moment(0)
        assert datetime.fromisoformat(lastmod) == expected
    assert len(set(entries.values())) > 5
    assert parsedate_to_datetime(r.header("Last-Modified")) == max(t.last_change for t in truth.values()
                                                                   if t.last_change is not None)


def test_feeds_list_the_most_recently_changed_pages():
    web = DemoWeb(seed=5, hosts=8, pages_per_host=40, day=20)
    rss_host, atom_host = 1, 3
    assert (feed_path(rss_host), feed_path(atom_host), feed_path(0)) == ("/feed.rss", "/feed.atom", None)
    assert f"{web.base_url(rss_host)}/feed.rss" in web.outlinks(rss_host, HOME_PAGE)
    assert 'type="application/rss+xml"' in get(web, rss_host, "/").body.decode()
    assert web.robots_rules(atom_host)["feeds"] == [f"{web.base_url(atom_host)}/feed.atom"]
    assert f"Sitemap: {web.base_url(atom_host)}/feed.atom" in get(web, atom_host, "/robots.txt").body.decode()
    assert get(web, 0, "/feed.rss").status == 404 and get(web, rss_host, "/feed.atom").status == 404

    for host, path in ((rss_host, "/feed.rss"), (atom_host, "/feed.atom")):
        truth = sorted((t for t in truth_rows(web) if t.host == web.hostname(host) and t.last_change),
                       key=lambda t: (-t.last_change_day, t.url))[:FEED_ENTRIES]
        root = ET.fromstring(get(web, host, path).body)
        if path == "/feed.rss":
            items = [(i.findtext("link"), parsedate_to_datetime(i.findtext("pubDate")))
                     for i in root.iter("item")]
        else:
            ns = {"a": "http://www.w3.org/2005/Atom"}
            items = [(e.find("a:link", ns).get("href"), datetime.fromisoformat(e.findtext("a:updated", namespaces=ns)))
                     for e in root.findall("a:entry", ns)]
        assert items == [(t.url, t.last_change) for t in truth]
        assert 10 <= len(items) <= FEED_ENTRIES


# ---- what counts as a change ------------------------------------------------------------------

def test_boilerplate_only_versions_leave_the_main_text_alone():
    web = DemoWeb(seed=2, hosts=6, pages_per_host=30, day=60)
    boiler = content = 0
    for h in range(6):
        for page in (HOME_PAGE, 0, 1, 2):
            state = web.page_state(h, page)
            # walk back through the last few changes: compare the page just before and after each
            times = sorted({t for t in _event_times(web, h, page)})[-6:]
            for t in times:
                before, after = web.page_state(h, page, t - 1e-6), web.page_state(h, page, t)
                old, new = web.render_page(h, page, t - 1e-6), web.render_page(h, page, t)
                assert old != new
                moved = distance(simhash64(page_text(old)), simhash64(page_text(new)))
                if after.versions == before.versions:  # boilerplate only
                    boiler += 1
                    assert page_text(old) == page_text(new) and moved == 0
                else:
                    content += 1
                    assert page_text(old) != page_text(new)
            assert state.boilerplate_changes < state.versions
    assert boiler >= 3 and content >= 50


def _event_times(web: DemoWeb, host: int, page) -> list[float]:
    """Times of the page's last (up to 8) changes up to web.day: the state just before each
    change names the one before it."""
    times, at = [], web.day
    while True:
        state = web.page_state(host, page, at)
        if state.last_event is None or len(times) >= 8:
            return times
        times.append(state.last_event)
        at = state.last_event - 1e-6


def test_server_serves_the_day_it_is_set_to():
    with DemoWebThread(DemoWeb(seed=1, hosts=2, pages_per_host=5), port=0) as demo:
        with httpx.Client(base_url=f"http://127.0.0.1:{demo.port}", trust_env=False, timeout=5) as c:
            host = {"Host": "h0001.demo.test"}
            first = c.get("/", headers=host)
            demo.set_day(3.5)
            later = c.get("/", headers={**host, "If-None-Match": first.headers["etag"]})
            assert later.status_code == 200
            assert later.content == demo.web.respond("h0001.demo.test", "/").body
            assert demo.web.day == 3.5 and demo.web.page_state(1, HOME_PAGE).versions > 0
