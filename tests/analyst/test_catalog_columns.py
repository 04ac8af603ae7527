"""docs/CATALOG.md names exactly the columns each catalog view has (DuckDB's DESCRIBE of a
two-day demo crawl's catalog): every column is documented, no documented column is gone."""

import re

import duckdb

from crawl_assets.crawler.batches.arrow_schemas import render_decisions_table
from crawl_assets.crawler.rendering.render_decision import Decision, HostEvidence
from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.pipeline.catalog_step import build_catalog
from crawl_assets.storage.layout import render_decisions_file, write_parquet_atomic

DOC = (PROJECT_ROOT / "docs" / "CATALOG.md").read_text()
# Views over date x shard files get these two from the doc's general paragraph, not their own.
DATE_SHARD = {"date", "shard"}


def documented_columns() -> dict[str, set[str]]:
    """view -> the column names its section gives: a table's first cells, or else the
    backticked names of the section's first paragraph (`pages` says "the columns of `fetches`
    plus ...")."""
    sections = re.split(r"^### `(\w+)`.*$", DOC.split("## Questions answered in SQL")[0], flags=re.M)
    columns = {}
    for view, body in zip(sections[1::2], sections[2::2]):
        rows = re.findall(r"^\| (.+?) \|", body, flags=re.M)
        cells = [row for row in rows if row not in ("column", "---")]
        text = " ".join(cells) if cells else body.strip().split("\n\n")[0]
        columns[view] = set(re.findall(r"`(\w+)`", text))
    fetches = columns["fetches"]
    columns["pages"] = (columns["pages"] - {"fetches"}) | fetches
    return columns


def test_the_doc_lists_each_views_columns(two_day_crawl):
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    documented = documented_columns()
    views = [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]
    assert {"fetches", "pages", "captures", "links", "change_evidence", "frontier", "urls"} <= set(views)
    for view in views:
        actual = {r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()}
        listed = documented[view] | (DATE_SHARD & actual)
        assert listed == actual, (view, "undocumented:", actual - listed, "not in the view:", listed - actual)


def test_the_render_decisions_view_has_the_documented_columns(tmp_path):
    """render_decisions exists only in crawls with a render tier (the two-day crawl has none):
    a catalog over one day's file of it."""
    evidence = HostEvidence(signal_pages=5, decision=Decision.RENDER)
    evidence.add_sample(0, 3, 0, 720)
    write_parquet_atomic(render_decisions_table({"spa-json.demo.test": evidence}),
                         render_decisions_file(tmp_path, "2026-11-28", "s00"))
    con = duckdb.connect(str(build_catalog(tmp_path, tmp_path / "crawl.duckdb").path), read_only=True)
    actual = {r[0] for r in con.execute("DESCRIBE render_decisions").fetchall()}
    assert documented_columns()["render_decisions"] | DATE_SHARD == actual
    assert con.execute("SELECT host, decision, rendered_links, shard FROM render_decisions").fetchall() == \
        [("spa-json.demo.test", "render", 3, "s00")]
