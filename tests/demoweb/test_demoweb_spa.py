"""The single-page-application hosts (demoweb/special_hosts/spa_hosts.py), read from the model
without a server: a plain fetch of any page but spa-more's items sees a shell with no link, and
the links a browser would see come from the JSON endpoints and the router's script."""

import json
import re
from urllib.parse import urlsplit

from crawl_assets.crawler.content.links import scan_page
from demoweb import DemoWeb
from demoweb.special_hosts.spa_hosts import DAILY_ARTICLE, daily_edition, spa_hosts


def served(web, url):
    parts = urlsplit(url)
    return web.respond(parts.hostname, parts.path + (f"?{parts.query}" if parts.query else ""))


def test_a_plain_fetch_finds_no_page_link_on_any_shell():
    web = DemoWeb(hosts=1, pages_per_host=2, spa=True)
    hosts = {h.kind: h for h in spa_hosts(web)}
    assert sorted(hosts) == ["json", "load_more", "routes"]
    for host in hosts.values():
        shells = host.pages if host.kind != "load_more" else host.pages[:1]
        for url in shells:
            answer = served(web, url)
            assert answer.status == 200, url
            scan = scan_page(answer.body, url)
            assert scan.links == [] and "This site needs JavaScript" in answer.body.decode()
            assert any(r.endswith("/static/app.js") for r in scan.resources)
        assert set(host.js_only) == set(host.pages) - {host.home}


def test_the_links_a_browser_sees_come_from_json_and_scripts():
    web = DemoWeb(hosts=1, pages_per_host=2, spa=True)
    hosts = {h.kind: h for h in spa_hosts(web)}
    articles = hosts["json"]
    base = articles.home.rstrip("/")
    linked = {articles.home}
    for url in articles.pages:
        path = urlsplit(url).path
        view = json.loads(served(web, f"{base}/api/pages{'/index' if path == '/' else path}.json").body)
        assert view["text"].startswith(view["title"])
        linked |= {base + href for href in view["links"]}
    assert linked == set(articles.pages)
    assert articles.disallowed == (base + "/tracking/beacon.js",)
    assert "Disallow: /tracking/beacon.js" in served(web, base + "/robots.txt").body.decode()

    router = hosts["routes"]
    script = served(web, router.home + "static/app.js").body.decode()
    routes = json.loads(re.search(r"var ROUTES = (\{.*\});", script).group(1))
    assert {router.home.rstrip("/") + p for p in routes} == set(router.pages)

    more = hosts["load_more"]
    items, page = [], 0
    while page is not None:
        answer = json.loads(served(web, f"{more.home}api/items?page={page}").body)
        items += [more.home.rstrip("/") + item["href"] for item in answer["items"]]
        page = answer["next"]
    assert items == list(more.js_only) and len(items) == 6
    assert all(served(web, url).status == 200 for url in items)


def test_the_hosts_are_opt_in():
    assert spa_hosts(DemoWeb(hosts=1, pages_per_host=2)) == []


def test_the_daily_article_changes_only_in_what_its_script_loads():
    """A new edition of spa-json's daily article each day, behind the same shell, which answers
    its ETag with a 304 as a static host would: only a crawler that renders sees the change."""
    days = [DemoWeb(hosts=1, pages_per_host=2, spa=True, day=day) for day in (3, 3.9, 4)]
    article = next(h for h in spa_hosts(days[0]) if h.kind == "json").home + DAILY_ARTICLE.lstrip("/")
    shells = [served(web, article) for web in days]
    assert shells[0].body == shells[1].body == shells[2].body
    etag = shells[0].header("etag")
    assert etag and days[2].respond(urlsplit(article).hostname, DAILY_ARTICLE, {"if-none-match": etag}).status == 304
    api = article.replace(DAILY_ARTICLE, f"/api/pages{DAILY_ARTICLE}.json")
    texts = [json.loads(served(web, api).body)["text"] for web in days]
    assert texts[0] == texts[1] != texts[2]
    assert texts[2].endswith(daily_edition(4))


def test_the_magazine_sites_build_every_page_by_script_and_load_media_besides():
    """spa_sites=True (bench/render.py): ten hosts of twenty pages, each page a shell whose
    script writes its text and links from JSON; the script is the same bytes on every host, the
    static files may be reused for an hour, the JSON must be revalidated."""
    from demoweb.special_hosts.spa_sites import spa_sites

    web = DemoWeb(hosts=1, pages_per_host=2, spa_sites=True)
    sites = spa_sites(web)
    assert len(sites) == 10 and sum(len(s.pages) for s in sites) == 200
    scripts = set()
    for site in sites:
        linked = {site.home}
        for url in site.pages:
            shell = served(web, url)
            assert scan_page(shell.body, url).links == [] and shell.header("ETag")
            api = site.home.rstrip("/") + ("/api/index.json" if url == site.home else "/api" + urlsplit(url).path + ".json")
            view = served(web, api)
            assert view.header("Cache-Control") == "no-cache" and view.header("ETag")
            linked |= {site.home.rstrip("/") + link["href"] for link in json.loads(view.body)["links"]}
        assert linked == set(site.pages) and set(site.js_only) == set(site.pages) - {site.home}
        app = served(web, site.home + "static/app.js")
        assert app.header("Cache-Control") == "max-age=3600" and app.header("ETag")
        scripts.add(app.body)
        for media in site.media:
            answer = served(web, media)
            assert answer.status == 200 and answer.header("Content-Type").startswith(("image/", "font/", "video/"))
    assert len(scripts) == 1
