"""The frame-linked host (demoweb/special_hosts/frame_hosts.py), read from the model without a
server: every page but the home page is reached without any <a href>, and what it serves."""

from urllib.parse import urlsplit

from resiliparse.parse.html import HTMLTree

from demoweb import DemoWeb
from demoweb.special_hosts.frame_hosts import frame_hosts


def served(web, url):
    parts = urlsplit(url)
    return web.respond(parts.hostname, parts.path)


def test_only_home_is_linked_through_an_anchor_and_every_page_is_served():
    web = DemoWeb(hosts=1, pages_per_host=2, frames=True)
    (host,) = frame_hosts(web)
    assert host.pages[0] == host.home and len(set(host.pages)) == 9
    anchored = set()
    for url in host.pages:
        response = served(web, url)
        assert response.status == 200 and dict(response.headers)["Content-Type"].startswith("text/html")
        document = HTMLTree.parse(response.body.decode()).document
        anchored |= {node.getattr("href") for node in document.query_selector_all("a[href]").values()}
    assert anchored == {"/"}  # so a crawl that reads only <a href> finds the home page and no other
    image = served(web, host.resources[0])
    assert image.status == 200 and image.body.startswith(b"\x89PNG")
    assert all(served(web, url).status == 404 for url in host.never_linked)


def test_the_host_is_opt_in():
    assert frame_hosts(DemoWeb(hosts=1, pages_per_host=2)) == []
