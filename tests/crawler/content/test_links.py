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


def test_hrefs_resolved_once_per_directory_give_each_page_its_own_answer():
    """A page's hrefs are resolved once for every page of its directory (links._SHARED): pages
    of other directories, hosts, schemes and queries, read one after the other, each get what
    normalize_url gives for their own base, the base document's own references ("", "?q",
    "#f", "http:?q") included."""
    from crawl_assets.crawler.content.links import scan_page
    from crawl_assets.crawler.url_policy.urls import UrlError, normalize_url

    hrefs = ["x.html", "../up.html", "./x.html", ".", "..", "/root.html", "//cdn.test/c.js", "sub/y?q=1",
             "", "?page=2", "#top", "http:?q=3", "http:z.html", "https:w.html", " x.html", "x.html ", "\tx.html",
             "a:b", "~t/", "-x", "_y", "p%20q.html", "\\\\evil.test/"]
    body = "".join(f'<a href="{h}">l</a>' for h in hrefs)
    bases = ["http://a.test/d/p.html", "http://a.test/d/q.html?x=/e/f", "http://a.test/e/p.html",
             "https://a.test/d/p.html", "http://b.test:81/d/p.html", "http://a.test/", "http://a.test/d/p.html?y=1",
             "http://a.test/d/p.html"]
    for base in bases:
        expected = []
        for href in hrefs:
            try:
                url = normalize_url(href.split("#")[0], base) if href.strip() and not href.startswith("#") else None
            except UrlError:
                url = None
            if url is not None and url not in expected:
                expected.append(url)
        assert scan_page(f"<html><body>{body}</body></html>", base).links == expected, base


def test_rel_says_which_links_are_not_followed_on_a_an_area_and_a_page_link_and_another_rel_changes_nothing():
    from crawl_assets.crawler.content.links import scan_page

    html = (b'<html><head><link rel="next nofollow" href="/n2"><link rel="prev" href="/p0"></head><body>'
            b'<a rel="noopener" href="/kept">k</a><map><area rel="nofollow" href="/area-nf">'
            b'<area href="/area"></map><a rel="ugc" href="/ugc">u</a></body></html>')
    scan = scan_page(html, "http://a.test/d/1")
    assert scan.links == ["http://a.test/p0", "http://a.test/kept", "http://a.test/area"]
    assert scan.nofollow_links == ["http://a.test/n2", "http://a.test/area-nf", "http://a.test/ugc"]


def test_an_href_met_again_on_the_page_keeps_its_url_however_it_was_linked_first():
    """The page's memo of resolved hrefs: a nofollow link met first, then a followed one, gives
    a followed link; an image with the same URL as a nofollow link is still a resource."""
    from crawl_assets.crawler.content.links import scan_page

    html = (b'<html><body><a rel="nofollow" href="x.html">x</a><a href="x.html">x again</a>'
            b'<a rel="nofollow" href="y.png">y</a><img src="y.png"><img src="my photo.png"></body></html>')
    scan = scan_page(html, "http://a.test/d/1")
    assert scan.links == ["http://a.test/d/x.html"]
    assert scan.nofollow_links == ["http://a.test/d/y.png"]
    # a src is one URL (a srcset's spaces part candidates, a src's do not)
    assert scan.resources == ["http://a.test/d/y.png", "http://a.test/d/my%20photo.png"]


def test_a_robots_meta_for_our_agent_applies_and_one_for_another_does_not():
    from crawl_assets.crawler.content.links import scan_page

    html = b'<html><head><meta name="recrawl" content="noindex"><meta name="otherbot" content="nofollow"></head></html>'
    directives = scan_page(html, "http://a.test/", agent="recrawl").directives
    assert (directives.noindex, directives.nofollow) == (True, False)
    assert not scan_page(html, "http://a.test/").directives.noindex


def test_a_base_without_a_path_shares_its_resolved_hrefs_with_no_other_host():
    """extract_links may be given a page URL that names no path ("http://a.test"): its hrefs
    are resolved for it alone, not shared as if "http://" were a directory."""
    html = b'<html><body><a href="x.html">x</a><a href="d/y.html">y</a></body></html>'
    assert extract_links(html, "http://a.test") == ["http://a.test/x.html", "http://a.test/d/y.html"]
    assert extract_links(html, "http://b.test") == ["http://b.test/x.html", "http://b.test/d/y.html"]
    assert extract_links(html, "https://a.test") == ["https://a.test/x.html", "https://a.test/d/y.html"]


def test_the_scan_selects_only_the_meta_names_that_can_be_robots_or_the_agents():
    """selector_for narrows SELECTOR's every named <meta> to those whose name can hold "robots"
    or the agent's token (matched case-insensitively); an empty agent, or one with a character
    whose lower case is not plain ASCII's (a "k": the Kelvin sign lowers to it) or outside a
    product token's letters, keeps every named <meta>. (scan_page reads it through a cache, so
    it is asked here directly.)"""
    from crawl_assets.crawler.content.link_sources import SELECTOR, selector_for

    assert "meta[name]" in SELECTOR.split(", ")
    narrowed = selector_for("recrawl").split(", ")
    assert "meta[name]" not in narrowed
    assert 'meta[name*="robots" i]' in narrowed and 'meta[name*="recrawl" i]' in narrowed
    assert [s for s in narrowed if not s.startswith("meta[name")] == [s for s in SELECTOR.split(", ") if s != "meta[name]"]
    for agent in ("", "spiderkit", "re/crawl", "Recrawl", 'a"b'):
        assert selector_for(agent) == SELECTOR, agent
