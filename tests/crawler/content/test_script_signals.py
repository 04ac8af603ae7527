"""The signs of a script-built page (content/script_signals.py), on small HTML snippets and on
the demo web's own pages: the SPA shells show them, an ordinary page and a plain item page do
not. No network."""

import pytest

from crawl_assets.crawler.content.body import examine
from crawl_assets.crawler.content.html_tree import parse_html
from crawl_assets.crawler.content.script_signals import script_signals
from demoweb import DemoWeb

SHELL = """<!doctype html><html><head><title>App</title></head><body>
<div id="app"></div>
<noscript>You need to enable JavaScript to run this app.</noscript>
<script src="/static/js/main.js"></script>
</body></html>"""
ARTICLE = """<html><body><header><a href="/">Home</a></header><main><h1>News</h1>
<p>""" + "A paragraph of server-rendered text. " * 20 + """</p><a href="/next">Next</a></main>
<script src="/analytics.js"></script><noscript><img src="/pixel.gif"></noscript></body></html>"""


def signals_of(html: str, links: int):
    return script_signals(parse_html(html), len(html.encode()), links)


def test_an_spa_shell_shows_every_signal():
    signals = signals_of(SHELL, links=0)
    assert (signals.little_text, signals.empty_mount, signals.noscript_asks, signals.links_only_in_scripts) == \
        (True, True, True, True)
    assert signals.text_chars == 0 and signals.needs_script


def test_a_server_rendered_page_with_scripts_shows_none():
    signals = signals_of(ARTICLE, links=2)
    assert signals.count == 0 and not signals.needs_script
    assert signals.text_chars is None  # not measured: no other signal held


@pytest.mark.parametrize(("html", "links", "expected"), [
    # a mount with server-rendered content in it is not empty
    ('<body><div id="root"><p>Rendered on the server</p></div><script src="a.js"></script></body>', 0,
     (False, False, False, True)),
    # two content elements: no single mount (but still little text: a shell with a footer)
    ('<body><div id="app"></div><footer>(c)</footer><script src="a.js"></script></body>', 0,
     (True, False, False, True)),
    # a <noscript> that does not ask for scripts, no scripts at all: nothing
    ("<body><p>Short.</p><noscript>Tracking pixel</noscript></body>", 0, (False, False, False, False)),
    # an empty mount and links only in the script; the text of the script is not visible text
    ('<body><div id="app"></div><script>var routes = ["/a", "/b"]; render(routes);</script></body>', 0,
     (True, True, False, True)),
])
def test_each_signal_on_its_own(html, links, expected):
    signals = signals_of(html, links)
    assert (signals.little_text, signals.empty_mount, signals.noscript_asks, signals.links_only_in_scripts) == expected
    assert signals.needs_script == (sum(expected) >= 2)


def test_examine_reports_the_signals_of_html_only():
    shell = examine(SHELL.encode(), "text/html", None, "http://a.demo.test/", 10**6)
    assert shell.script_signals.needs_script
    web = DemoWeb(seed=1, hosts=1, pages_per_host=3, port=0)
    page = examine(web.render_page(0, 1), "text/html", None, web.page_url(0, 1), 10**6)
    assert page.script_signals.count == 0
    assert examine(b'{"a": 1}', "application/json", None, "http://a.demo.test/x", 10**6).script_signals is None


@pytest.mark.parametrize("html", [
    "<html><body><noscript>Please enable JavaScript</noscript><div id=app></div></body></html>",
    "<html><head><noscript>enable js</noscript></head><body><div id=root></div><script src=a.js></script></body></html>",
    "<html><body><template><noscript>enable JS</noscript></template><div id=app></div></body></html>",
    "<html><body><svg><noscript>javascript needed</noscript></svg><div id=app></div></body></html>",
    "<html><body><NOSCRIPT>JavaScript</NOSCRIPT><NoScript>x</NoScript><a href=/x>x</a></body></html>",
    "<html><body><noframes><noscript>javascript</noscript></noframes><div id=app></div></body></html>",
    "<html><body><noscript><a href=/y>y</a> enable js</noscript><noscript>second: javascript</noscript></body></html>",
    SHELL, ARTICLE,
])
def test_the_noscript_texts_the_link_scan_meets_give_the_signals_a_walk_of_their_own_gives(html):
    from crawl_assets.crawler.content.links import scan_page

    tree = parse_html(html)
    scan = scan_page(tree, "http://a.test/", "recrawl")
    walked = [node.text for node in tree.document.get_elements_by_tag_name("noscript")]
    assert scan.noscript_texts == walked
    for links in (0, 2):
        assert script_signals(tree, len(html), links, scan.noscript_texts) == signals_of(html, links)


def test_an_empty_mount_alone_has_the_pages_visible_text_counted():
    """A page whose one content element is an empty mount, with links and no <noscript>: the
    mount alone is reason to count the visible text, which is then little."""
    signals = signals_of("<html><body><div id=app></div></body></html>", links=2)
    assert (signals.empty_mount, signals.noscript_asks, signals.links_only_in_scripts) == (True, False, False)
    assert signals.text_chars == 0 and signals.little_text
