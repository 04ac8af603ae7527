"""Sitemaps and feeds: the URLs they list and the dates of those URLs' last changes."""

from datetime import datetime, timezone

from crawl_assets.crawler.content.body import examine
from crawl_assets.crawler.content.change_feeds import ListKind, listed_urls, parse_when

BASE = "http://example.test/"
UTC = timezone.utc


def test_a_sitemap_gives_each_loc_with_its_lastmod():
    body = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> http://example.test/a?x=1&amp;y=2 </loc><lastmod>2026-01-05T13:04:11+01:00</lastmod></url>
  <url>
    <loc>http://example.test/b</loc>
    <lastmod>2026-01-06</lastmod>
    <changefreq>daily</changefreq>
  </url>
  <url><loc>http://example.test/c</loc></url>
  <url><loc>http://example.test/d</loc><lastmod>last tuesday</lastmod></url>
  <url><loc>javascript:alert(1)</loc><lastmod>2026-01-06</lastmod></url>
</urlset>"""
    kind, entries = listed_urls(body, BASE)
    assert kind is ListKind.SITEMAP
    assert entries == [("http://example.test/a?x=1&y=2", datetime(2026, 1, 5, 12, 4, 11, tzinfo=UTC)),
                       ("http://example.test/b", datetime(2026, 1, 6, tzinfo=UTC)),
                       ("http://example.test/c", None), ("http://example.test/d", None)]


def test_a_sitemap_index_lists_sitemaps_without_dating_pages():
    body = b"""<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://example.test/s1.xml</loc><lastmod>2026-01-06</lastmod></sitemap>
<sitemap><loc>http://example.test/s2.xml</loc></sitemap></sitemapindex>"""
    kind, entries = listed_urls(body, BASE)
    assert kind is ListKind.SITEMAP_INDEX
    assert entries == [("http://example.test/s1.xml", None), ("http://example.test/s2.xml", None)]


def test_an_rss_feed_gives_item_links_and_pub_dates():
    body = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>
<link>http://example.test/</link>
<item><title>one</title><link><![CDATA[http://example.test/one]]></link>
<pubDate>Mon, 05 Jan 2026 13:04:11 GMT</pubDate></item>
<item><title>two</title><link>/two</link><dc:date>2026-01-04T10:00:00Z</dc:date></item>
<item><title>no link</title><pubDate>Mon, 05 Jan 2026 13:04:11 GMT</pubDate></item>
</channel></rss>"""
    kind, entries = listed_urls(body, "http://example.test/feed.rss")
    assert kind is ListKind.RSS
    assert entries == [("http://example.test/one", datetime(2026, 1, 5, 13, 4, 11, tzinfo=UTC)),
                       ("http://example.test/two", datetime(2026, 1, 4, 10, tzinfo=UTC))]


def test_an_atom_feed_gives_the_alternate_link_and_updated():
    body = b"""<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title><link href="http://example.test/"/>
<entry><link rel="edit" href="http://example.test/edit/1"/><link rel="alternate" href="http://example.test/1"/>
  <published>2025-12-01T00:00:00Z</published><updated>2026-01-02T03:04:05Z</updated></entry>
<entry><link href='http://example.test/2'/><published>2025-12-02T00:00:00Z</published></entry>
</feed>"""
    kind, entries = listed_urls(body, BASE)
    assert kind is ListKind.ATOM
    assert entries == [("http://example.test/1", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
                       ("http://example.test/2", datetime(2025, 12, 2, tzinfo=UTC))]


def test_other_xml_is_no_list_and_a_long_list_is_cut_at_the_limit():
    assert listed_urls(b"<?xml version='1.0'?><catalog><loc>http://example.test/</loc></catalog>", BASE) is None
    many = b"<urlset>" + b"".join(b"<url><loc>http://example.test/%d</loc></url>" % i for i in range(30)) + b"</urlset>"
    assert [e.url for e in listed_urls(many, BASE, limit=10)[1]] == [f"http://example.test/{i}" for i in range(10)]


def test_dates_of_every_form_become_utc():
    assert parse_when("2026-01-05T13:04:11Z") == datetime(2026, 1, 5, 13, 4, 11, tzinfo=UTC)
    assert parse_when("2026-01-05T13:04:11.5-02:00") == datetime(2026, 1, 5, 15, 4, 11, 500000, tzinfo=UTC)
    assert parse_when("Mon, 05 Jan 2026 13:04:11 +0100") == datetime(2026, 1, 5, 12, 4, 11, tzinfo=UTC)
    assert parse_when("") is None and parse_when("soon") is None


def test_feeds_and_sitemaps_are_followed_as_links():
    rss = b"<rss version='2.0'><channel><item><link>http://example.test/new</link></item></channel></rss>"
    facts = examine(rss, "application/rss+xml; charset=utf-8", None, "http://example.test/feed.rss", 1 << 20)
    assert facts.outlinks == ["http://example.test/new"]
    sitemap = b"<urlset><url><loc>http://example.test/a</loc></url><url><loc>http://example.test/a</loc></url></urlset>"
    assert examine(sitemap, "text/xml", None, BASE + "sitemap.xml", 1 << 20).outlinks == ["http://example.test/a"]


def test_a_gzipped_sitemap_is_unpacked_within_the_size_cap():
    import gzip

    from crawl_assets.crawler.content.change_feeds import listing_of

    sitemap = b"<urlset>" + b"".join(b"<url><loc>http://example.test/%d</loc><lastmod>2026-01-0%d</lastmod></url>"
                                     % (i, i + 1) for i in range(3)) + b"</urlset>"
    packed = gzip.compress(sitemap)
    kind, entries = listing_of(packed, "application/x-gzip", BASE + "sitemap.xml.gz", 1 << 20)
    assert kind is ListKind.SITEMAP and [e.lastmod.day for e in entries] == [1, 2, 3]
    assert examine(packed, "application/gzip", None, BASE + "sitemap.xml.gz", 1 << 20).outlinks == [
        f"http://example.test/{i}" for i in range(3)]
    # Cut at the cap: what came before the cut is read, nothing beyond it.
    assert len(listing_of(packed, "application/gzip", BASE, 100)[1]) == 1
    assert listing_of(b"not gzip", "application/gzip", BASE, 1 << 20) is None
    assert listing_of(sitemap, "text/html", BASE, 1 << 20) is None  # only listing media types


def test_a_gzipped_download_that_is_no_sitemap_is_not_unpacked_whole(monkeypatch):
    import gzip

    from crawl_assets.crawler.content import change_feeds

    unpacked = []

    def recording(body, coding, limit):
        content = real(body, coding, limit)
        unpacked.append(len(content[0]))
        return content

    real = change_feeds.decode_body
    monkeypatch.setattr(change_feeds, "decode_body", recording)
    archive = gzip.compress(b"\x00" * 10_000_000)  # 10 MB of zeros, as a .tar.gz might be
    assert change_feeds.listing_of(archive, "application/gzip", BASE, 50 << 20) is None
    assert max(unpacked) <= 4096
    sitemap = gzip.compress(b"<urlset>" + b"<url><loc>http://example.test/</loc></url>" * 200 + b"</urlset>")
    assert len(change_feeds.listing_of(sitemap, "application/gzip", BASE, 50 << 20)[1]) == 200
    assert max(unpacked) > 4096  # a sitemap is unpacked whole


def test_a_broken_document_gives_the_entries_before_the_break_in_one_pass():
    dated = b"<url><loc>http://example.test/a</loc><lastmod>2026-01-05</lastmod></url>"
    # A body-cap's worth of tags left open: `<url>(.*?)</url>` read the rest of the document
    # again from each of them (hours of CPU for the fetch batch); each is looked at once now.
    for tail in (b"<url>" * 1_000_000, b"<url><loc>" * 500_000, b"<url " * 1_000_000, b"<url><loc>x</loc>" * 300_000):
        kind, entries = listed_urls(b"<urlset>" + dated + tail, BASE)
        assert kind is ListKind.SITEMAP
        assert entries == [(f"{BASE}a", datetime(2026, 1, 5, tzinfo=UTC))]
    feed = b"<feed><entry><link href='/p'/><updated>2026-01-05T00:00:00Z</updated></entry>" + b"<entry><link " * 500_000
    assert listed_urls(feed, BASE)[1] == [(f"{BASE}p", datetime(2026, 1, 5, tzinfo=UTC))]


def test_a_date_out_of_range_in_utc_is_no_date_and_its_url_is_still_listed():
    for when in ("9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "Fri, 31 Dec 9999 23:59:59 -1200"):
        assert parse_when(when) is None
    sitemap = (b"<urlset><url><loc>/a</loc><lastmod>9999-12-31T23:59:59-14:00</lastmod></url>"
               b"<url><loc>/b</loc><lastmod>2026-01-05</lastmod></url></urlset>")
    assert listed_urls(sitemap, BASE)[1] == [(f"{BASE}a", None), (f"{BASE}b", datetime(2026, 1, 5, tzinfo=UTC))]
    facts = examine(sitemap, "application/xml", None, f"{BASE}sitemap.xml", 1 << 20)
    assert facts.error is None and facts.outlinks == [f"{BASE}a", f"{BASE}b"]
