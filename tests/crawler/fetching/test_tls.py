"""HTTPS as the web serves it: one batch over the TLS test web (tests/tls_web.py), a private
CA made at test time, every host on loopback's default ports, checked from the server's side
(the SNI it was sent, the bytes it received) and from the fetch log and the WARC file."""

import asyncio
import dataclasses
import threading
import time
from collections import Counter

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.archive.warc import WarcFileWriter
from crawl_assets.crawler.batches.batch import run_fetch_batch
from crawl_assets.crawler.fetching.engine import FetchEngine
from crawl_assets.crawler.fetching.tls import TrustStoreError, client_context
from crawl_assets.crawler.fetching.workbench import FetchTask
from crawl_assets.crawler.settings import load_settings
from crawl_assets.crawler.vocabulary import TLS_FAILURES, StatusClass
from tls_web import TlsWeb, name

CONNECT_TIMEOUT_S = 0.6
FETCH_TIMEOUT_S = 1.5


def tls_settings(web: TlsWeb, trust: bool = True, **overrides):
    base = dict(default_delay_s=0.02, max_pages_per_host=10, max_depth=3, shard_count=1, max_attempts=1,
                connect_timeout_s=CONNECT_TIMEOUT_S, fetch_timeout_s=FETCH_TIMEOUT_S, **web.settings_overrides(trust))
    return dataclasses.replace(load_settings(use_env=False), **(base | overrides))


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with TlsWeb(tmp_path_factory.mktemp("tls_web")) as web:
        yield web


@pytest.fixture(scope="module")
def batch(web, tmp_path_factory):
    """One batch from the valid host's home, which links every other host."""
    folder = tmp_path_factory.mktemp("tls_batch")
    result = run_fetch_batch(tls_settings(web), 0, [FetchTask.for_url("https://valid.tls.test/")], folder, "tls")
    return result, {r.url: r for r in result.output.records}


def test_each_tls_failure_has_its_own_name_and_a_connect_timeout_is_not_a_timeout(batch):
    _, rows = batch
    expected = {
        "https://expired.tls.test/": StatusClass.TLS_CERTIFICATE_EXPIRED,
        "https://wrong-name.tls.test/": StatusClass.TLS_NAME_MISMATCH,
        "https://untrusted.tls.test/": StatusClass.TLS_UNTRUSTED,
        "https://hang.tls.test/": StatusClass.TLS_HANDSHAKE_TIMEOUT,
        "https://plain.tls.test/": StatusClass.TLS_PROTOCOL_ERROR,
        "https://no-accept.tls.test/": StatusClass.CONNECT_TIMEOUT,
        "https://valid.tls.test/never.html": StatusClass.TIMEOUT,  # the server took the request
    }
    assert {url: rows[url].status_class for url in expected} == expected
    assert "certificate has expired" in rows["https://expired.tls.test/"].error
    assert "robots.txt" in rows["https://hang.tls.test/"].error  # its robots.txt could not be asked either
    assert "within fetch_timeout_s" in rows["https://valid.tls.test/never.html"].error
    counts = Counter(r.status_class for r in batch[0].output.records if r.status_class in TLS_FAILURES)
    assert counts == Counter(c for c in expected.values() if c in TLS_FAILURES)


def test_the_hosts_that_pass_are_asked_with_sni_and_http_1_1_over_one_kept_alive_connection(web, batch):
    _, rows = batch
    for url in ("https://valid.tls.test/", "https://valid.tls.test/a.html", "https://valid.tls.test/b.html"):
        assert rows[url].status_class == StatusClass.OK and rows[url].status == 200
    valid = web.hits_of("valid")
    assert {hit.sni for hit in valid} == {name("valid")} and {hit.scheme for hit in valid} == {"https"}
    # HTTP/1.1, said in ALPN, though the server would rather speak h2 (README, "HTTP/2").
    assert {hit.alpn for hit in valid} == {"http/1.1"}
    # Kept alive: robots.txt and the pages over one connection, a second only after the page
    # that was never answered cut the first.
    per_connection = Counter(hit.connection for hit in valid)
    assert len(per_connection) <= 2 and max(per_connection.values()) >= 4
    assert name("untrusted") in web.sni and name("expired") in web.sni  # asked by name, then refused
    assert not web.hits_of("expired") and not web.hits_of("untrusted") and not web.hits_of("wrong-name")


def test_a_zstd_page_is_decoded_and_its_links_followed(batch):
    _, rows = batch
    assert rows["https://valid.tls.test/zstd.html"].outlinks == 1
    assert rows["https://valid.tls.test/from-zstd.html"].status_class == StatusClass.OK


def test_the_request_record_is_the_request_the_server_received(web, batch):
    result, _ = batch
    received = {head.split(b" ", 2)[1]: head for host, head in web.received if host == name("valid")}
    requests = {}
    for path in result.warc_files:
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh, no_record_parse=True):  # the block as stored
                if record.rec_type == "request" and record.rec_headers.get_header("WARC-Target-URI").startswith(
                        "https://valid.tls.test/"):
                    requests[record.rec_headers.get_header("WARC-Target-URI")] = record.raw_stream.read()
    assert len(requests) >= 5
    for url, block in requests.items():
        target = url.removeprefix("https://valid.tls.test").encode()
        assert block == received[target], url
        assert block.startswith(b"GET " + target + b" HTTP/1.1\r\nHost: valid.tls.test\r\n")


def test_without_the_ca_in_the_trust_store_the_valid_host_is_untrusted(web, tmp_path):
    result = run_fetch_batch(tls_settings(web, trust=False), 0, [FetchTask.for_url("https://valid.tls.test/")],
                             tmp_path, "t")
    (row,) = result.output.records
    assert row.status_class == StatusClass.TLS_UNTRUSTED


@pytest.mark.parametrize("how", ["add", "replace", "SSL_CERT_FILE"])
def test_the_trust_store_takes_the_ca_from_the_setting_or_ssl_cert_file(web, tmp_path, monkeypatch, how):
    overrides = dict(ca_bundle_mode=how) if how != "SSL_CERT_FILE" else dict(ca_bundle=None)
    if how == "SSL_CERT_FILE":
        monkeypatch.setenv("SSL_CERT_FILE", str(web.ca_file))
    result = run_fetch_batch(tls_settings(web, max_depth=0, **overrides), 0,
                             [FetchTask.for_url("https://valid.tls.test/a.html")], tmp_path, "t")
    (row,) = result.output.records
    assert row.status_class == StatusClass.OK
    # Replacing certifi's bundle leaves only the test CA: a public CA is no longer trusted.
    stats = client_context(web.ca_file, how if how != "SSL_CERT_FILE" else "add").cert_store_stats()
    assert (stats["x509_ca"] == 1) == (how == "replace")


def test_a_ca_bundle_that_cannot_be_read_is_a_clear_error_before_any_request(web, tmp_path, monkeypatch):
    with pytest.raises(TrustStoreError, match="missing.pem .the setting ca_bundle"):
        run_fetch_batch(tls_settings(web, ca_bundle=tmp_path / "missing.pem"), 0,
                        [FetchTask.for_url("https://valid.tls.test/")], tmp_path, "t")
    (tmp_path / "empty.pem").write_text("no certificate here\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "empty.pem"))
    with pytest.raises(TrustStoreError, match="empty.pem .the environment variable SSL_CERT_FILE"):
        client_context(None)
    assert not web.hits_of("valid") or all(hit.path for hit in web.hits_of("valid"))


STALL_S = 1.5  # three times the time limit below


def test_an_answer_that_came_while_the_event_loop_was_blocked_is_read_not_timed_out(tmp_path):
    """The crawler's event loop is blocked on purpose (as a lazy import or a large file loaded
    at batch start blocked it) while the server answers robots.txt at once: the answer is read
    when the loop runs again, and the host's page is fetched, not disallowed for the day."""
    crawler = {}
    blocked = threading.Event()

    def stall():
        blocked.set()
        time.sleep(STALL_S)

    def block_the_crawler(host, path):  # in the server's thread, before it answers
        if path == "/robots.txt":
            crawler["loop"].call_soon_threadsafe(stall)
            assert blocked.wait(10)  # the answer goes out while the crawler is stuck

    with TlsWeb(tmp_path, before_answer=block_the_crawler) as web:
        settings = tls_settings(web, fetch_timeout_s=STALL_S / 3, max_depth=0)
        with WarcFileWriter(tmp_path / "warc", "t", "test") as warc:
            engine = FetchEngine(settings, warc, lambda host: True)

            async def crawl():
                crawler["loop"] = asyncio.get_running_loop()
                return await engine.run([FetchTask.for_url("https://valid.tls.test/a.html")])

            output = asyncio.run(crawl())
        hits = [(hit.path, hit.status) for hit in web.hits_of("valid")]
    assert blocked.is_set() and engine.stalls.total_s >= STALL_S * 0.9  # the loop did stall
    (row,) = output.records
    assert (row.status_class, row.status) == (StatusClass.OK, 200), row.error
    assert hits == [("/robots.txt", 200), ("/a.html", 200)]
