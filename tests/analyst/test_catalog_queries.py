"""Every SQL block of docs/CATALOG.md runs against a two-day demo crawl's catalog; those
marked `-- expect rows` return rows. Every view the doc lists exists, and every view the
catalog has is documented."""

import re

import duckdb
import pytest

from crawl_assets.crawler.settings import PROJECT_ROOT

DOC = PROJECT_ROOT / "docs" / "CATALOG.md"
BLOCKS = re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_doc_has_the_analyst_questions():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("sql", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_each_sql_block_runs(two_day_crawl, sql):
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    rows = con.execute(sql).fetchall()
    if sql.startswith("-- expect rows"):
        assert rows, sql


def test_every_view_is_documented(two_day_crawl):
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    documented = set(re.findall(r"^### `(\w+)`", DOC.read_text(), flags=re.M))
    assert {"fetches", "pages", "captures", "links", "urls", "near_duplicates"} <= views
    assert views <= documented, views - documented
