"""pywb replays a two-day crawl: an ordinary page, a day-two 304 revisit and an
identical-payload revisit all come back as the archived page (200 and its bytes).

pywb lives in a venv of its own (`make replay-tools`, see the Makefile for why). Two
collections are served by one `wayback` on loopback: one indexed by pywb itself
(`wb-manager add`), one holding our own CDXJ files, so both indexes are shown to resolve.
"""

import shlex
import shutil
import subprocess
import time
from urllib.parse import urlsplit

import duckdb
import httpx
import pytest

from conftest import DAY1, DAY2
from pywb_support import PYWB_BIN, free_port, require_pywb, running_wayback

REQUEST_TIMEOUT_S = 15


@pytest.fixture(scope="module")
def wayback(two_day_crawl, tmp_path_factory):
    require_pywb()
    folder = tmp_path_factory.mktemp("pywb")
    run = lambda *args: subprocess.run([str(PYWB_BIN / "wb-manager"), *args], cwd=folder,  # noqa: E731
                                       check=True, capture_output=True, timeout=120)
    warcs = two_day_crawl.warcs()
    run("init", "indexed-by-pywb")
    run("add", "indexed-by-pywb", *map(str, warcs))
    run("init", "our-index")
    ours = folder / "collections" / "our-index"
    for warc in warcs:
        shutil.copy(warc, ours / "archive" / warc.name)
        cdxj = warc.with_name(warc.name.removesuffix(".warc.gz") + ".cdxj")
        shutil.copy(cdxj, ours / "indexes" / cdxj.name)
    port = free_port()
    command = shlex.join([str(PYWB_BIN / "wayback"), "-b", "127.0.0.1", "-p", str(port)])
    with running_wayback(command, folder, port) as base:
        with httpx.Client(base_url=base, timeout=REQUEST_TIMEOUT_S) as client:
            yield client


def captures(crawl, sql, *params):
    con = duckdb.connect(str(crawl.settings.catalog_path), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def archived_page(crawl, url):
    """The page as the demo web serves it (it did not change between the two days)."""
    parts = urlsplit(url)
    return crawl.web.respond(parts.hostname, parts.path or "/").body


def replay(client, collection, timestamp, url):
    """The raw archived answer (id_: no rewriting), as pywb serves it at that timestamp."""
    return client.get(f"/{collection}/{timestamp}id_/{url}")


COLLECTIONS = ["indexed-by-pywb", "our-index"]

# A page fetched whole on day one and answered 304 on day two.
NOT_MODIFIED_SQL = """
SELECT first.url, first.timestamp, second.timestamp FROM captures AS first
JOIN captures AS second ON first.url = second.url
WHERE first.date = ? AND first.warc_type = 'response' AND first.mime = 'text/html'
  AND second.date = ? AND second.profile LIKE '%/server-not-modified'
ORDER BY first.url LIMIT 1
"""
IDENTICAL_SQL = """
SELECT url, timestamp, refers_to_uri FROM captures
WHERE profile LIKE '%/identical-payload-digest' ORDER BY date, url LIMIT 1
"""


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_an_ordinary_page_replays(two_day_crawl, wayback, collection):
    url, day1, _ = captures(two_day_crawl, NOT_MODIFIED_SQL, DAY1, DAY2)[0]
    answer = replay(wayback, collection, day1, url)
    assert answer.status_code == 200
    assert answer.content == archived_page(two_day_crawl, url)


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_a_day_two_304_revisit_replays_the_archived_page(two_day_crawl, wayback, collection):
    url, _, day2 = captures(two_day_crawl, NOT_MODIFIED_SQL, DAY1, DAY2)[0]
    answer = replay(wayback, collection, day2, url)
    # pywb chose the day-two capture (the revisit), and served the day-one payload with it.
    assert answer.headers["Memento-Datetime"] == time.strftime(
        "%a, %d %b %Y %H:%M:%S GMT", time.strptime(day2, "%Y%m%d%H%M%S"))
    assert answer.status_code == 200
    page = archived_page(two_day_crawl, url)
    assert len(page) > 1000 and answer.content == page


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_an_identical_payload_revisit_replays_the_original_payload(two_day_crawl, wayback, collection):
    url, timestamp, original = captures(two_day_crawl, IDENTICAL_SQL)[0]
    assert original != url  # a copy under another URL
    answer = replay(wayback, collection, timestamp, url)
    assert answer.status_code == 200
    assert answer.content == archived_page(two_day_crawl, url) == archived_page(two_day_crawl, original)
