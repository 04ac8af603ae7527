"""What one answer leaves behind (WARC records, fetch-log row) and what a body is (content/body.py);
synthetic answers, no network."""

import gzip
from datetime import datetime, timezone

from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.archive.warc import WarcFileWriter
from crawl_assets.crawler.archive.warc import Exchange
from crawl_assets.crawler.content.body import examine, media_type_of
from crawl_assets.crawler.fetching.answer_policy import OUTCOME, DeadEndRedirect, Redirect
from crawl_assets.crawler.fetching.answer_records import AnswerRecorder
from crawl_assets.crawler.fetching.http_exchange import HopResult
from crawl_assets.crawler.fetching.workbench import FetchTask
from crawl_assets.crawler.url_policy.trap_defences import TrapDefences
from crawl_assets.crawler.vocabulary import StatusClass, WarcRecordKind

PAGE = b'<html><head><title>t</title></head><body><p>Some words here.</p><a href="/b">b</a> <a href="c#x">c</a></body></html>'
WHEN = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def answer(url: str, status: int = 200, body: bytes = PAGE, headers=(("Content-Type", "text/html"),),
           truncated: bool = False) -> HopResult:
    exchange = Exchange(url, "192.0.2.1", WHEN, "GET", "/", [("Host", "a.test")], "HTTP/1.1", status, "OK",
                        list(headers), body, truncated)
    return HopResult(url, WHEN, 0.0123, "192.0.2.1", True, exchange, {k.lower(): v for k, v in headers},
                     truncated)


def records_in(path):
    with open(path, "rb") as fh:
        return [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(fh)]


def test_a_page_is_archived_examined_and_a_copy_of_it_becomes_a_revisit(tmp_path):
    traps = TrapDefences()
    with WarcFileWriter(tmp_path, "t", "test") as warc:
        capture = AnswerRecorder(warc, 10_000, traps)
        first, (links, *_) = capture.record(FetchTask("http://a.test/", "a.test"), answer("http://a.test/"), OUTCOME)
        copy, _ = capture.record(FetchTask("http://a.test/copy", "a.test", attempt=2),
                                 answer("http://a.test/copy"), OUTCOME)
    assert first.status_class == StatusClass.OK and first.warc_type == WarcRecordKind.RESPONSE
    assert links == ["http://a.test/b", "http://a.test/c"] and first.outlinks == 2
    assert first.sha256 and first.simhash is not None and first.payload_digest.startswith("sha1:")
    # the archive definition's digest travels to the fetch log (nothing volatile here: the same)
    assert first.change_digest == first.sha256 and copy.change_digest == first.change_digest
    assert (first.bytes, first.duration_ms, first.ip, first.content_type) == (len(PAGE), 12.3, "192.0.2.1", "text/html")
    assert copy.warc_type == WarcRecordKind.REVISIT and copy.refers_to == "http://a.test/" and copy.attempts == 2
    assert copy.payload_digest == first.payload_digest
    (path,) = warc.closed_files
    assert records_in(path) == [("warcinfo", None), ("response", "http://a.test/"), ("request", "http://a.test/"),
                                ("revisit", "http://a.test/copy"), ("request", "http://a.test/copy")]
    assert traps.new_url_estimate("a.test") == 0  # counting new URLs is admission's job, not the recorder's


def test_redirects_failures_and_truncated_answers_are_recorded_as_such(tmp_path):
    with WarcFileWriter(tmp_path, "t", "test") as warc:
        capture = AnswerRecorder(warc, 10_000, TrapDefences())
        moved, (links, *_) = capture.record(FetchTask("http://a.test/old", "a.test"),
                                      answer("http://a.test/old", 301, b"", (("Location", "/new"),)),
                                      Redirect("http://a.test/new", ("http://a.test/old",)))
        loop, _ = capture.record(FetchTask("http://a.test/l", "a.test"), answer("http://a.test/l", 302, b""),
                                 DeadEndRedirect(StatusClass.REDIRECT_LOOP, "redirects back", "http://a.test/l"))
        cut, _ = capture.record(FetchTask("http://a.test/big", "a.test"),
                                answer("http://a.test/big", truncated=True), OUTCOME)
        failed, _ = capture.record(FetchTask("http://a.test/x", "a.test"),
                                   HopResult("http://a.test/x", WHEN, error_class=StatusClass.DNS_ERROR,
                                             error="no such host"), OUTCOME)
    assert (moved.status_class, moved.redirect_to, links) == (StatusClass.REDIRECT, "http://a.test/new", [])
    assert moved.payload_digest is None  # only complete 2xx bodies are digested
    assert (loop.status_class, loop.error, loop.redirect_to) == (StatusClass.REDIRECT_LOOP, "redirects back", "http://a.test/l")
    assert cut.status_class == StatusClass.TOO_LARGE and cut.warc_type == WarcRecordKind.RESPONSE
    assert (failed.status_class, failed.error, failed.warc_file) == (StatusClass.DNS_ERROR, "no such host", None)


def test_content_is_typed_by_header_then_sniffing_and_decoded_before_parsing():
    assert media_type_of(None, b"  <!DOCTYPE html><html>") == "text/html"
    assert media_type_of("text/html; charset=utf-8", b"\x00\x01binary") == "application/octet-stream"
    assert media_type_of("image/png", PAGE) == "image/png"  # the header wins over the body
    facts = examine(gzip.compress(PAGE), "text/html", "gzip", "http://a.test/", 10_000)
    assert facts.outlinks == ["http://a.test/b", "http://a.test/c"] and not facts.too_large
    assert facts.sha256 == examine(PAGE, "text/html", None, "http://a.test/", 10_000).sha256  # of the decoded body
    not_parsed = examine(PAGE, "text/plain", None, "http://a.test/", 10_000)
    assert not_parsed.outlinks == [] and not_parsed.simhash is None
    sitemap = b'<?xml version="1.0"?><urlset xmlns="x"><url><loc>http://a.test/s?b=2&amp;a=1</loc></url></urlset>'
    assert examine(sitemap, "application/xml", None, "http://a.test/sitemap.xml", 10_000).outlinks == [
        "http://a.test/s?a=1&b=2"]
    bomb = examine(gzip.compress(b"a" * 50_000), "text/html", "gzip", "http://a.test/", 10_000)
    assert bomb.too_large
    broken = examine(b"not gzip", "text/html", "gzip", "http://a.test/", 10_000)
    assert broken.error.startswith("cannot decode gzip body") and broken.sha256 is None


def test_a_sitemaps_answer_says_its_links_are_a_list_and_a_pages_answer_does_not(tmp_path):
    """The sitemap's URLs go to admission marked `listed` (they do not count towards the host's
    growth cap: admission.links_found); an HTML page's links are not."""
    sitemap = (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
               b'<url><loc>http://a.test/x</loc></url><url><loc>http://a.test/y</loc>'
               b'<lastmod>2026-11-30</lastmod></url></urlset>')
    with WarcFileWriter(tmp_path, "t", "test") as warc:
        capture = AnswerRecorder(warc, 10_000, TrapDefences())
        _, listed = capture.record(FetchTask("http://a.test/sitemap.xml", "a.test"),
                                   answer("http://a.test/sitemap.xml", body=sitemap,
                                          headers=(("Content-Type", "application/xml"),)), OUTCOME)
        _, page = capture.record(FetchTask("http://a.test/", "a.test"), answer("http://a.test/"), OUTCOME)
    assert listed.follow == ["http://a.test/x", "http://a.test/y"] and listed.listed
    assert [url for url, _ in listed.dated] == ["http://a.test/y"]
    assert page.follow == ["http://a.test/b", "http://a.test/c"] and not page.listed
