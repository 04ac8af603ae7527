"""Rendered pages in the analyst tools: one fetch step over the demo web's spa-json and
spa-router hosts with the render tier (Debian's chromium, one start), laid out as a data root
with its catalog. `captures list` shows each rendered capture's DOM under it, `show` prints the
DOM and says it is the DOM (`--shell` prints the HTML as sent), `export` writes a capture's DOM
with it and a DOM's capture with it, and the SQL docs/CATALOG.md gives for rendered pages
runs. Loopback only."""

import ipaddress
import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.analyst import captures as captures_cli
from crawl_assets.analyst.captures import Captures
from crawl_assets.crawler.batches.arrow_schemas import FRONTIER_SCHEMA
from crawl_assets.crawler.settings import NetworkException, PROJECT_ROOT
from crawl_assets.pipeline.catalog_step import build_catalog
from crawl_assets.pipeline.fetch_step import FetchInputs, run_fetch_step
from crawl_assets.storage.layout import fetch_log_file, warc_dir, write_parquet_atomic
from crawl_files import settings_for
from demoweb import DemoWebProcess
from demoweb.special_hosts.spa_hosts import spa_hosts

if not Path("/usr/bin/chromium").exists():
    pytest.skip("/usr/bin/chromium is missing (make system-packages installs it)", allow_module_level=True)
pytest.importorskip("playwright.async_api")

DAY = "2026-11-20"
SHELL_TEXT, DOM_LINK = b"This site needs JavaScript.", b'<a href="/articles/1">'


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    root = tmp_path_factory.mktemp("rendered_root")
    with DemoWebProcess(seed=3, hosts=1, pages_per_host=2, spa=True) as server:
        hosts = {h.kind: h for h in spa_hosts(server.web) if h.kind in ("json", "routes")}
        settings = settings_for(
            root, default_delay_s=0.05, shard_count=1, max_pages_per_host=100, response_time_factor=0.0,
            resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=tuple(h.hostname for h in hosts.values()),
            network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),),
            render_hosts=tuple(h.hostname for h in hosts.values()), render_pool_size=2)
        frontier = pa.Table.from_pylist([{"url": h.home, "host": h.hostname, "depth": 0, "priority": 1}
                                         for h in hosts.values()], schema=FRONTIER_SCHEMA)
        result = run_fetch_step(settings, "s00", FetchInputs(frontier), warc_dir(root, DAY, "s00"), "rendered")
    write_parquet_atomic(result.fetch_log, fetch_log_file(root, DAY, "s00"))
    catalog = build_catalog(root, root / "crawl.duckdb").path
    return hosts, catalog


def run(main, argv, capsys) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_list_shows_the_rendered_dom_under_its_capture(rendered, capsys):
    hosts, catalog = rendered
    home = hosts["json"].home
    status, out, _ = run(captures_cli.main, ["--catalog", str(catalog), "list", home], capsys)
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"1 capture(s) of {home}, 1 rendered")
    assert re.search(r"text/html\s+response\s+rendered-", lines[1])
    assert re.search(r"text/html\s+rendered DOM \(conversion\)\s+rendered-\S+\.warc\.gz@\d+$", lines[2])
    with Captures(catalog) as captures:
        (capture,) = captures.captures_of(home)
    assert capture.warc_type == "response" and capture.rendered.warc_type == "conversion"
    assert capture.rendered.source_key == (capture.url, capture.captured_at)  # its refers-to fields
    assert capture.rendered.offset > capture.offset  # written after the page's own records


def test_show_prints_the_dom_and_says_so_and_the_shell_on_request(rendered, capsys):
    hosts, catalog = rendered
    home = hosts["json"].home
    status, out, _ = run(captures_cli.main, ["--catalog", str(catalog), "show", home], capsys)
    assert status == 0
    head, body = out.split("\n\n", 1)
    assert "# the rendered DOM: what a browser built from this capture" in head and "--shell" in head
    assert "Content-Type: text/html; charset=utf-8" in head and "HTTP " not in head
    assert DOM_LINK in body.encode() and b"<h1>Newsroom</h1><p>Newsroom: this text is written by the page's script" in body.encode()
    status, out, _ = run(captures_cli.main, ["--catalog", str(catalog), "show", "--shell", home], capsys)
    head, body = out.split("\n\n", 1)
    assert status == 0 and head.splitlines()[1] == "HTTP 200" and "rendered DOM" not in head
    assert SHELL_TEXT in body.encode() and DOM_LINK not in body.encode()


def test_a_rendered_revisit_shows_its_own_dom(rendered, capsys):
    """spa-router answers every route with one shell: archived once, the other routes are
    revisits, each rendered to its own view."""
    hosts, catalog = rendered
    about = hosts["routes"].home + "app/about"
    with Captures(catalog) as captures:
        (capture,) = captures.captures_of(about)
        dom, shell = captures.capture(about), captures.capture(about, shell=True)
    assert capture.warc_type == "revisit" and capture.rendered is not None
    assert dom.dom and b"<h1>About us</h1>" in dom.body
    assert not shell.dom and shell.payload_from.warc_type == "response" and b"<h1>" not in shell.body


def records_of(path: Path) -> list[tuple[str, str]]:
    with open(path, "rb") as stream:
        return [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(stream)]


def test_export_writes_the_dom_with_its_capture_and_the_capture_with_its_dom(rendered, tmp_path):
    hosts, catalog = rendered
    home, about = hosts["json"].home, hosts["routes"].home + "app/about"
    with Captures(catalog) as captures:
        pages = captures.export(f"SELECT * FROM captures WHERE url = '{home}' AND warc_type = 'response'",
                                tmp_path / "pages.warc.gz")
        doms = captures.export(f"SELECT * FROM captures WHERE url = '{about}' AND warc_type = 'conversion'",
                               tmp_path / "doms.warc.gz")
    assert (pages.selected, pages.renderings_added, pages.captures_added) == (1, 1, 0)
    assert records_of(pages.path)[1:] == [("response", home), ("conversion", home)]
    assert (doms.selected, doms.captures_added, doms.originals_added) == (1, 1, 1)
    kinds = records_of(doms.path)[1:]
    assert ("conversion", about) in kinds and ("revisit", about) in kinds  # its capture, and the
    assert [k for k, _ in kinds].count("response") == 1  # shell archived under another route


def test_the_catalog_docs_sql_finds_every_rendered_page_and_its_dom(rendered):
    """docs/CATALOG.md's question "Which pages were rendered?", run as printed."""
    hosts, catalog = rendered
    blocks = re.findall(r"```sql\n(.*?)```", (PROJECT_ROOT / "docs" / "CATALOG.md").read_text(), flags=re.S)
    (query,) = [b for b in blocks if "dom.warc_type = 'conversion'" in b]
    con = duckdb.connect(str(catalog), read_only=True)
    rows = con.execute(query).fetchall()
    rendered_rows = con.execute("SELECT url FROM fetches WHERE rendered ORDER BY url").fetchall()
    assert sorted(r[1] for r in rows) == [u for (u,) in rendered_rows]
    assert set(hosts["json"].pages) | set(hosts["routes"].pages) <= {r[1] for r in rows}
    with Captures(catalog) as captures:
        for day, url, capture, dom_file, dom_offset, _ in rows:
            (info,) = captures.captures_of(url)
            assert (info.warc_type, info.rendered.path.name, info.rendered.offset) == (capture, dom_file, dom_offset)
