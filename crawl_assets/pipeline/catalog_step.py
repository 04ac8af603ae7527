"""The catalog step: data/crawl.duckdb, views over every Parquet output for analysts.

The catalog holds views, not copies, so it is small and always reads the latest files. It is
built under a temporary name of its own and renamed, so an analyst never opens a half-built
catalog and two builds at once do not collide; partitioned assets never open it, so DuckDB's
one-writer rule holds.

Under a URL data root the views read s3://... (or another fsspec URL): the database file is
built in work_dir (settings.catalog_path) and a copy is uploaded to the root's crawl.duckdb for
other machines; whoever opens it registers the root's file system on the connection
(storage/shared_root.connect) to query it.

A view names its files by absolute path (DuckDB resolves a relative one against the reader's
working folder, not the database's), so the catalog records the root it was built over: a local
data root copied or moved elsewhere is seen by the tools that open it, which rebuild it over
the root it now lies in (rebuilt_if_moved) instead of reading the old root's files or failing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..crawler.vocabulary import StatusClass
from ..storage.layout import glob_of, seeds_file
from ..storage.shared_root import connect, is_remote, make_local_folder, put_file
from .change_stats.url_change_state import has_url_state, register_change_stats, url_state


def sql_text(value: str) -> str:
    """A SQL string literal. View definitions cannot take parameters, so vocabulary values
    are quoted into them from the enum here, never spelt in the SQL."""
    return "'" + str(value).replace("'", "''") + "'"


# pages: each URL's latest full answer (a 304 carries no content, so it only updates
# last_checked_at and last_status_class).
PAGES_SQL = f"""
SELECT src.*, checked.last_checked_at, checked.last_status_class
FROM src JOIN (
    SELECT url, max(fetched_at) AS last_checked_at, arg_max(status_class, fetched_at) AS last_status_class
    FROM src GROUP BY url
) AS checked USING (url)
WHERE src.status_class <> {sql_text(StatusClass.NOT_MODIFIED)}
QUALIFY row_number() OVER (PARTITION BY url ORDER BY fetched_at DESC) = 1
"""

# view name -> (hive table folder of date x shard files, SQL over `src`)
PARTITIONED_VIEWS = {
    "fetches": ("fetch_log", "SELECT * FROM src"),
    "pages": ("fetch_log", PAGES_SQL),
    "links": ("links", "SELECT * FROM src"),
    "frontier": ("frontier", "SELECT * FROM src"),
    "dropped_urls": ("dropped_urls", "SELECT * FROM src"),
    "change_evidence": ("change_evidence", "SELECT * FROM src"),  # sitemap and feed dates
    "render_decisions": ("render_decisions", "SELECT * FROM src"),  # the render tier's, per host and day
    "captures": ("warc", "SELECT * FROM src"),  # the WARC files' capture indexes (warc_index.py)
    "lost_captures": ("lost_captures", "SELECT * FROM src"),  # records of quarantined files (warc_quarantine.py)
}

# Daily full snapshots (view name -> table folder): each view shows the newest day.
LATEST_SNAPSHOT_VIEWS = {
    "urls": "url_registry",
    "near_duplicates": "near_duplicates",
    "host_near_dup_ratio": "host_quality",
    "url_aliases": "url_aliases",  # the URL aliases each host's answers taught (alias_learning.py)
}
LATEST_SQL = """
CREATE VIEW {view} AS
SELECT * EXCLUDE (date) FROM read_parquet('{glob}', hive_partitioning = true)
WHERE date = (SELECT max(date) FROM read_parquet('{glob}', hive_partitioning = true))
"""

VIEWS_SQL = "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name"
ROOT_TABLE = "catalog_data_root"  # one row: the data root the views read


@dataclass(frozen=True)
class CatalogResult:
    path: Path
    rows: Mapping[str, int]  # view name -> row count


def build_catalog(root: Path, catalog_path: Path) -> CatalogResult:
    """(Re)build the catalog over the outputs under `root`; counts every view's rows."""
    make_local_folder(catalog_path.parent)
    handle, name = tempfile.mkstemp(prefix=catalog_path.name + ".", suffix=".tmp", dir=catalog_path.parent)
    os.close(handle)
    tmp = Path(name)
    tmp.unlink()  # DuckDB creates the file itself; the unique name is what we wanted
    try:
        counts: dict[str, int] = {}
        with connect(str(tmp)) as con:
            for view, (table, body) in PARTITIONED_VIEWS.items():
                if not any((root / table).glob("date=*/shard=*/*.parquet")):
                    continue
                source = f"read_parquet('{glob_of(root, table)}', hive_partitioning = true, union_by_name = true)"
                con.execute(f"CREATE VIEW {view} AS WITH src AS (SELECT * FROM {source}) {body}")
            for view, table in LATEST_SNAPSHOT_VIEWS.items():
                if any((root / table).glob("date=*/*.parquet")):
                    con.execute(LATEST_SQL.format(view=view, glob=root / table / "date=*" / "*.parquet"))
            change_day = newest_change_stats_day(root)
            if change_day is not None:  # every URL's change statistics, newest day
                register_change_stats(con, url_state(root, change_day), "change_stats")
            if seeds_file(root).exists():
                con.execute(f"CREATE VIEW seeds AS SELECT * FROM read_parquet('{seeds_file(root)}')")
            con.execute(f"CREATE TABLE {ROOT_TABLE} AS SELECT $root AS data_root", {"root": str(root)})
            for (view,) in con.execute(VIEWS_SQL).fetchall():
                counts[view] = con.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
        os.replace(tmp, catalog_path)
        if is_remote(root):
            put_file(catalog_path, root / catalog_path.name)
    finally:
        tmp.unlink(missing_ok=True)
    return CatalogResult(catalog_path, counts)


def newest_change_stats_day(root: Path) -> str | None:
    """The newest day change_stats wrote its state for (its view is computed from the state)."""
    days = sorted((p.name.removeprefix("date=") for p in (root / "change_stats").glob("date=*")), reverse=True)
    return next((day for day in days if has_url_state(root, day)), None)


def built_over(catalog: Path) -> str | None:
    """The data root a catalog's views read; None for a catalog built before it was recorded."""
    import duckdb  # noqa: PLC0415 - as in storage/shared_root.connect

    with connect(str(catalog), read_only=True) as con:
        try:
            return con.execute(f"SELECT data_root FROM {ROOT_TABLE}").fetchone()[0]
        except duckdb.CatalogException:
            return None


def rebuilt_if_moved(catalog: Path) -> str | None:
    """A local catalog reads the data root it lies in; when it was built over another folder
    (the root was copied or moved) or before it recorded one, it is rebuilt over its own folder.
    Returns what it was built over when it was rebuilt, else None. A catalog built over a URL
    root (a copy in work_dir) is left alone: URLs do not move with a folder."""
    root = catalog.resolve().parent
    before = built_over(catalog)
    if before is not None and ("://" in before or Path(before).resolve() == root):
        return None
    build_catalog(root, catalog)
    return before or "an unrecorded data root"
