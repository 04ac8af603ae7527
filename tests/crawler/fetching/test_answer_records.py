"""What one answer leaves behind (WARC records, fetch-log row) and what a body is (content/body.py);
synthetic answers, no network."""

import gzip
import hashlib
from datetime import datetime, timezone

from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.archive.warc import IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, WarcFileWriter, payload_digest
from crawl_assets.crawler.archive.warc import Exchange
from crawl_assets.crawler.content.body import examine, media_type_of
from crawl_assets.crawler.fetching.answer_policy import OUTCOME, DeadEndRedirect, LeaveHostAlone, Redirect
from crawl_assets.crawler.fetching.answer_records import NO_LINKS, AnswerRecorder, FoundLinks
from crawl_assets.crawler.fetching.fetch_record import FetchRecord
from crawl_assets.crawler.fetching.http_exchange import HopResult
from crawl_assets.crawler.fetching.workbench import FetchTask
from crawl_assets.crawler.url_policy.trap_defences import TrapDefences, TrapLimits
from crawl_assets.crawler.vocabulary import DropReason, StatusClass, WarcRecordKind

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


def test_a_body_is_binary_by_a_nul_byte_or_more_than_one_control_character_in_twenty_of_its_first_kilobyte():
    assert media_type_of("text/plain", b"a" * 999 + b"\x00") == "application/octet-stream"  # one NUL is enough
    assert media_type_of("text/plain", b"a" * 99 + b"\x01") == "text/plain"  # 1 %
    assert media_type_of("text/plain", b"a" * 19 + b"\x01") == "text/plain"  # 5 %: not more
    assert media_type_of("text/plain", b"a" * 18 + b"\x01\x02") == "application/octet-stream"  # 10 %
    assert media_type_of("text/plain", b"a" * 1024 + b"\x00") == "text/plain"  # past the sample
    assert media_type_of("text/html", b"") == "text/html"  # an empty body is not binary
    assert media_type_of("text/html; charset=utf-8; x=y", PAGE) == "text/html"
    assert media_type_of("Text/CSV", b"a,b\x00") == "application/octet-stream"  # any declared text/ type
    assert media_type_of(None, b"plain words") == "text/plain"
    assert media_type_of(None, b"\x00\x01\x02") == "application/octet-stream"


def test_an_html_pages_facts_are_its_links_resources_directives_and_signals_and_a_feeds_its_list():
    page = (b'<html><head><meta name="recrawl" content="nofollow"></head><body><p>Some words.</p>'
            b'<a href="/f">f</a><a href="/n" rel="nofollow">n</a><img src="/i.png"></body></html>')
    facts = examine(page, "text/html", None, "http://a.test/", 10_000, agent="recrawl")
    assert (facts.media_type, facts.outlinks, facts.nofollow_links, facts.resources) == (
        "text/html", ["http://a.test/f"], ["http://a.test/n"], ["http://a.test/i.png"])
    assert facts.directives.nofollow and not facts.directives.noindex  # our agent's <meta>
    assert not examine(page, "text/html", None, "http://a.test/", 10_000).directives.nofollow  # another's
    signals = facts.script_signals
    assert (signals.markup_bytes, signals.links_only_in_scripts) == (len(page), False)
    # Links followed and not both count: a page with one of each has links outside its scripts.
    script = b'<script>go("/x")</script>'
    both = b'<html><body><a href="/f">f</a><a href="/n" rel="nofollow">n</a>' + script + b'</body></html>'
    assert not examine(both, "text/html", None, "http://a.test/", 10_000).script_signals.links_only_in_scripts
    bare = b'<html><body><p>Nothing.</p>' + script + b'</body></html>'
    assert examine(bare, "text/html", None, "http://a.test/", 10_000).script_signals.links_only_in_scripts
    feed = (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b'<url><loc>http://a.test/x</loc></url></urlset>')
    listed = examine(feed, "application/xml", None, "http://a.test/sitemap.xml", 10_000)
    assert (listed.media_type, listed.outlinks, listed.listing) == ("application/xml", ["http://a.test/x"], True)
    assert examine(b"x", "text/plain", None, "http://a.test/a.txt", 10_000).listing is False
    bomb = examine(gzip.compress(b"a" * 50_000), "text/plain", "gzip", "http://a.test/a.txt", 10_000)
    assert bomb.too_large is True and bomb.media_type == "text/plain"
    broken = examine(b"not gzip", "text/html", "gzip", "http://a.test/", 10_000)
    assert (broken.media_type, broken.outlinks) == ("text/html", [])


NOFOLLOW_PAGE = (b'<html><head><meta name="recrawl" content="noindex"></head><body><p>Some words here.</p>'
                 b'<a href="/f">f</a> <a href="/n" rel="nofollow">n</a></body></html>')


def warc_records(path) -> list:
    """(type, target URI, headers, offset, length) of each record but the warcinfo."""
    out = []
    with open(path, "rb") as fh:
        iterator = ArchiveIterator(fh)
        for record in iterator:
            headers = dict(record.rec_headers.headers)
            record.content_stream().read()
            out.append((record.rec_type, headers.get("WARC-Target-URI"), headers,
                        iterator.get_record_offset(), iterator.get_record_length()))
    return out[1:]


def test_a_pages_row_holds_every_fact_of_its_answer_and_where_its_record_landed(tmp_path):
    """Every field of the row: the task's, the answer's headers, the decoded body's digests and
    links (one followed, one rel=nofollow: both counted), our agent's <meta> noindex, the
    payload digest of the body as received, the response record's file, offset and length."""
    body = gzip.compress(NOFOLLOW_PAGE)
    headers = (("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip"), ("ETag", '"v1"'),
               ("Last-Modified", "Mon, 30 Nov 2026 10:00:00 GMT"))
    hop = answer("http://a.test/p", body=body, headers=headers)
    hop = HopResult(hop.url, WHEN, 0.0123456, "192.0.2.7", True, hop.exchange, hop.headers)
    with WarcFileWriter(tmp_path, "t", "test") as warc:
        capture = AnswerRecorder(warc, 10_000, TrapDefences(), agent="recrawl")
        record, found = capture.record(FetchTask("http://a.test/p", "a.test", depth=2, attempt=3), hop, OUTCOME)
    (path,) = warc.closed_files
    (response, request) = warc_records(path)
    sha256 = hashlib.sha256(NOFOLLOW_PAGE).hexdigest()
    assert response[2]["WARC-Payload-Digest"] == payload_digest(body)
    assert record == FetchRecord(
        "http://a.test/p", "a.test", 2, StatusClass.OK, fetched_at=WHEN, status=200, duration_ms=12.346,
        bytes=len(body), content_type="text/html; charset=utf-8", sha256=sha256, etag='"v1"',
        last_modified="Mon, 30 Nov 2026 10:00:00 GMT", error=None, ip="192.0.2.7", attempts=3, redirect_to=None,
        payload_digest=payload_digest(body), simhash=examine(NOFOLLOW_PAGE, "text/html", None, "http://a.test/p",
                                                              10_000).simhash,
        warc_type=WarcRecordKind.RESPONSE, refers_to=None, warc_file=path.name, warc_offset=response[3],
        warc_length=response[4], outlinks=2, noindex=True, nofollow=False, change_digest=sha256)
    assert found == FoundLinks(["http://a.test/f"], ["http://a.test/n"], DropReason.NOFOLLOW_LINK)


def test_x_robots_tag_lines_for_every_crawler_or_ours_add_to_the_pages_own_and_nofollow_leaves_every_link(tmp_path):
    headers = (("Content-Type", "text/html"), ("X-Robots-Tag", "otherbot: noindex"), ("x-robots-tag", "recrawl: nofollow"))
    hop = answer("http://a.test/p", body=NOFOLLOW_PAGE, headers=headers)
    # the hop's header map joins repeated headers (http_exchange.header_map)
    hop = HopResult(hop.url, WHEN, 0.01, "192.0.2.1", True, hop.exchange,
                    {"content-type": "text/html", "x-robots-tag": "otherbot: noindex, recrawl: nofollow"})
    with WarcFileWriter(tmp_path, "t", "test") as warc:
        ours = AnswerRecorder(warc, 10_000, TrapDefences(), agent="recrawl")
        record, found = ours.record(FetchTask("http://a.test/p", "a.test"), hop, OUTCOME)
        other, other_found = AnswerRecorder(warc, 10_000, TrapDefences(), agent="otherbot").record(
            FetchTask("http://a.test/p", "a.test"), hop, OUTCOME)
    assert (record.noindex, record.nofollow, record.outlinks) == (True, True, 2)  # the <meta> noindex kept
    assert found == FoundLinks([], ["http://a.test/f", "http://a.test/n"], DropReason.PAGE_NOFOLLOW)
    assert (other.noindex, other.nofollow) == (True, False)  # its header line only; not our <meta>
    assert other_found == FoundLinks(["http://a.test/f"], ["http://a.test/n"], DropReason.NOFOLLOW_LINK)


def test_a_304_is_a_revisit_of_the_record_holding_its_payload_or_of_its_own_last_capture(tmp_path):
    earlier = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)
    known = {"sha1:KNOWN": ("http://a.test/first", "2026-11-01T00:00:00.000000Z")}
    with WarcFileWriter(tmp_path, "t", "test") as warc:
        capture = AnswerRecorder(warc, 10_000, TrapDefences(), known_payloads=known)
        page, _ = capture.record(FetchTask("http://a.test/p", "a.test"), answer("http://a.test/p"), OUTCOME)
        copy, _ = capture.record(FetchTask("http://a.test/c", "a.test"), answer("http://a.test/c"), OUTCOME)
        rows = [capture.record(FetchTask(url, "a.test", last_payload_digest=digest, last_captured_at=at),
                               answer(url, 304, b""), OUTCOME)[0]
                for url, digest, at in [("http://a.test/k", "sha1:KNOWN", earlier),
                                        ("http://a.test/b", page.payload_digest, None),
                                        ("http://a.test/u", "sha1:UNKNOWN", earlier),
                                        ("http://a.test/n", None, None)]]
        multiple, _ = capture.record(FetchTask("http://a.test/m", "a.test"), answer("http://a.test/m", 300), OUTCOME)
        cut, _ = capture.record(FetchTask("http://a.test/t", "a.test"), answer("http://a.test/t", truncated=True), OUTCOME)
    assert [(r.status_class, r.warc_type, r.refers_to, r.payload_digest) for r in rows] == [
        (StatusClass.NOT_MODIFIED, WarcRecordKind.REVISIT, "http://a.test/first", "sha1:KNOWN"),
        (StatusClass.NOT_MODIFIED, WarcRecordKind.REVISIT, "http://a.test/p", page.payload_digest),
        (StatusClass.NOT_MODIFIED, WarcRecordKind.REVISIT, "http://a.test/u", None),
        (StatusClass.NOT_MODIFIED, WarcRecordKind.REVISIT, None, None)]
    (path,) = warc.closed_files
    written = {uri: headers for kind, uri, headers, _, _ in warc_records(path) if kind != "request"}
    fields = ("WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Payload-Digest")
    assert {uri: tuple(written[uri].get(f) for f in fields) for uri in written if uri != "http://a.test/p"} == {
        "http://a.test/c": (IDENTICAL_PAYLOAD, "http://a.test/p", "2026-12-01T12:00:00.000000Z", page.payload_digest),
        "http://a.test/k": (SERVER_NOT_MODIFIED, "http://a.test/first", "2026-11-01T00:00:00.000000Z", "sha1:KNOWN"),
        "http://a.test/b": (SERVER_NOT_MODIFIED, "http://a.test/p", "2026-12-01T12:00:00.000000Z", page.payload_digest),
        "http://a.test/u": (SERVER_NOT_MODIFIED, "http://a.test/u", "2026-11-20T08:00:00.000000Z", None),
        "http://a.test/n": (SERVER_NOT_MODIFIED, None, None, None),
        # a 300 and a cut body: responses (the writer digests what it holds), no digest in their rows
        "http://a.test/m": (None, None, None, payload_digest(PAGE)),
        "http://a.test/t": (None, None, None, payload_digest(PAGE))}
    assert (copy.warc_type, multiple.payload_digest, cut.payload_digest) == (WarcRecordKind.REVISIT, None, None)


def test_a_network_failure_a_host_asking_to_be_left_alone_and_a_throttle_are_recorded_as_such(tmp_path):
    with WarcFileWriter(tmp_path, "t", "test") as warc:
        capture = AnswerRecorder(warc, 10_000, TrapDefences())
        failed, found = capture.record(FetchTask("http://a.test/x", "a.test", depth=1, attempt=2),
                                       HopResult("http://a.test/x", WHEN, 0.5, error_class=StatusClass.DNS_ERROR,
                                                 error="no such host"), OUTCOME)
        alone, _ = capture.record(FetchTask("http://a.test/a", "a.test"),
                                  answer("http://a.test/a", 503, b"", (("Retry-After", "86400"),)),
                                  LeaveHostAlone(86400.0, "503 with Retry-After '86400': left alone"))
        unavailable, _ = capture.record(FetchTask("http://a.test/u", "a.test"), answer("http://a.test/u", 503, b""),
                                        OUTCOME)
        moved, _ = capture.record(FetchTask("http://a.test/old", "a.test"),
                                  answer("http://a.test/old", 301, b"", (("Location", "/new"),)),
                                  Redirect("http://a.test/new", ("http://a.test/old",)))
    assert (failed, found) == (FetchRecord("http://a.test/x", "a.test", 1, StatusClass.DNS_ERROR, fetched_at=WHEN,
                                           duration_ms=500.0, error="no such host", attempts=2), NO_LINKS)
    assert (alone.status_class, alone.error) == (StatusClass.THROTTLED, "503 with Retry-After '86400': left alone")
    assert (unavailable.status_class, unavailable.error) == (StatusClass.HTTP_5XX, None)
    assert (moved.sha256, moved.simhash, moved.change_digest, moved.error) == (None, None, None, None)


def test_a_page_too_large_once_decoded_is_recorded_so_and_pages_count_towards_their_hosts_growth(tmp_path):
    traps = TrapDefences(TrapLimits(growth_ratio=20, growth_min_urls=1))
    bomb = gzip.compress(b"<html><body>" + b"a" * 50_000)
    with WarcFileWriter(tmp_path, "t", "test") as warc:
        capture = AnswerRecorder(warc, 10_000, traps)
        big, _ = capture.record(FetchTask("http://a.test/big", "a.test"),
                                answer("http://a.test/big", body=bomb,
                                       headers=(("Content-Type", "text/html"), ("Content-Encoding", "gzip"))), OUTCOME)
        for i in range(3):
            capture.record(FetchTask(f"http://a.test/{i}", "a.test"), answer(f"http://a.test/{i}"), OUTCOME)
    assert (big.status_class, big.error) == (StatusClass.TOO_LARGE, "decoded body is larger than the size cap")
    # Four pages fetched allow 80 new URLs at a ratio of 20: 64 leave the host uncapped.
    for i in range(64):
        traps.observe_new_url("a.test", f"http://a.test/new/{i}")
    assert "a.test" not in traps.capped_hosts


def test_the_pages_the_render_tier_asks_for_are_kept_with_their_record_and_row(tmp_path):
    asked = []

    def keep_pages(host, signals):
        asked.append((host, signals.links_only_in_scripts))
        return host == "a.test"

    with WarcFileWriter(tmp_path, "t", "test") as warc:
        capture = AnswerRecorder(warc, 10_000, TrapDefences())
        capture.keep_pages = keep_pages
        hop = answer("http://a.test/")
        kept, _ = capture.record(FetchTask("http://a.test/", "a.test"), hop, OUTCOME)
        record_id = warc.last_record_id
        capture.record(FetchTask("http://b.test/", "b.test"), answer("http://b.test/"), OUTCOME)
        capture.record(FetchTask("http://a.test/cut", "a.test"), answer("http://a.test/cut", truncated=True), OUTCOME)
        capture.record(FetchTask("http://a.test/gone", "a.test"), answer("http://a.test/gone", 404), OUTCOME)
    assert capture.kept == {"http://a.test/": (hop, record_id, kept)}  # not b.test's, nor a cut body
    assert asked == [("a.test", False), ("b.test", False), ("a.test", False)]


def test_an_exchange_made_by_the_browser_is_archived_as_the_engines_are(tmp_path):
    """archive(): a payload first seen is a response, the same payload again a revisit of it,
    a 304 a revisit of the capture it confirms; each returns the payload digest."""
    earlier = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)

    def exchange(url, status=200, body=b"<html>same</html>"):
        return Exchange(url, "192.0.2.1", WHEN, "GET", "/", [("Host", "a.test")], "HTTP/1.1", status, "OK",
                        [("Content-Type", "text/html")], body, False)

    with WarcFileWriter(tmp_path, "t", "test") as warc:
        capture = AnswerRecorder(warc, 10_000, TrapDefences())
        first = capture.archive(exchange("http://a.test/s.js"), False)
        again = capture.archive(exchange("http://a.test/t.js"), False)
        confirmed = capture.archive(exchange("http://a.test/u.js", 304, b""), False, first, earlier)
        unknown = capture.archive(exchange("http://a.test/v.js", 304, b""), False, "sha1:OTHER", earlier)
        cut = capture.archive(exchange("http://a.test/w.js", body=b"cut"), True)
    assert (first, again, confirmed, unknown, cut) == (
        payload_digest(b"<html>same</html>"),) * 3 + (None, None)  # (a 304 of a payload not archived here: none)
    (path,) = warc.closed_files
    fields = ("WARC-Profile", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Payload-Digest")
    assert [(kind, uri, *(headers.get(f) for f in fields)) for kind, uri, headers, _, _ in warc_records(path)
            if kind != "request"] == [
        ("response", "http://a.test/s.js", None, None, None, first),
        ("revisit", "http://a.test/t.js", IDENTICAL_PAYLOAD, "http://a.test/s.js", "2026-12-01T12:00:00.000000Z", first),
        # the 304 of a payload archived here carries that payload's digest
        ("revisit", "http://a.test/u.js", SERVER_NOT_MODIFIED, "http://a.test/s.js", "2026-12-01T12:00:00.000000Z", first),
        ("revisit", "http://a.test/v.js", SERVER_NOT_MODIFIED, "http://a.test/v.js", "2026-11-20T08:00:00.000000Z", None),
        ("response", "http://a.test/w.js", None, None, None, payload_digest(b"cut"))]
