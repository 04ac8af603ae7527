from crawl_assets.crawler.content.links import extract_links

PAGE = b"""<!doctype html><html><head><title>t</title></head><body>
<a href="/p/2.html">two</a> <a href="3.html#top">three</a> <a href="#only-fragment">x</a>
<a href="http://Other.test:8471/p/1.html?utm_medium=x">other</a>
<a href="mailto:a@b.c">mail</a> <a href="javascript:void(0)">js</a> <a href="ftp://x/">ftp</a>
<area href="/map.html"> <a>no href</a> <a href="/p/2.html">dup</a>
</body></html>"""


def test_links_are_resolved_normalised_and_distinct_in_document_order():
    assert extract_links(PAGE, "http://h0001.demo.test:8471/p/1.html") == [
        "http://h0001.demo.test:8471/p/2.html",
        "http://h0001.demo.test:8471/p/3.html",
        "http://other.test:8471/p/1.html",
        "http://h0001.demo.test:8471/map.html",
    ]


def test_base_href_changes_resolution():
    html = b'<html><head><base href="http://cdn.test/dir/"></head><body><a href="x.html">x</a></body></html>'
    assert extract_links(html, "http://site.test/") == ["http://cdn.test/dir/x.html"]


def test_the_first_base_counts_wherever_it_stands_and_tags_after_the_links_still_apply():
    """<base> and robots <meta> are read in the same walk of the document as the links: a
    base or meta written after the links still applies, and only the first base counts."""
    from crawl_assets.crawler.content.links import scan_page

    html = (b'<html><body><a href="x.html">x</a> <a href="../y.html" rel="nofollow">y</a>'
            b'<a href="x.html">again</a><base href="http://cdn.test/a/b/"><base href="http://other.test/">'
            b'<meta name="robots" content="noindex"></body></html>')
    scan = scan_page(html, "http://site.test/p/1.html")
    assert scan.links == ["http://cdn.test/a/b/x.html"]
    assert scan.nofollow_links == ["http://cdn.test/a/y.html"]
    assert scan.directives.noindex and not scan.directives.nofollow
