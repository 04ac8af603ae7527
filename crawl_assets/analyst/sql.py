"""Run SQL against the crawl's catalog, read-only, with the project's own DuckDB (no `duckdb`
command needs installing: the CLI on PyPI lags the Python package and cannot open its files).

    .venv/bin/python -m crawl_assets.analyst.sql "SELECT status_class, count(*) FROM pages GROUP BY ALL"
    .venv/bin/python -m crawl_assets.analyst.sql            # the catalog's views and their row counts
    .venv/bin/python -m crawl_assets.analyst.sql --catalog other/crawl.duckdb "SELECT ..."
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb

from ..crawler.crawl_errors import CrawlInputError
from ..pipeline.catalog_step import rebuilt_if_moved
from ..storage.shared_root import connect

MAX_ROWS = 200  # printed rows; the rest is summarised by DuckDB's renderer

VIEWS_SQL = "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name"


def default_catalog() -> tuple[Path, str]:
    """The settings' catalog, and where else to find it when it is missing: under a URL data
    root the catalog is built in the work_dir of the machine that built it, a copy on the root."""
    from ..crawler.settings import load_settings

    settings = load_settings()
    if settings.catalog_path.parent == settings.data_root:
        return settings.catalog_path, ""
    return settings.catalog_path, f", copy the data root's {settings.data_root / 'crawl.duckdb'} there"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawl_assets.analyst.sql", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--catalog", help="the DuckDB catalog (default: data/crawl.duckdb of the settings)")
    parser.add_argument("query", nargs="?", help="one SQL statement; none lists the views")
    args = parser.parse_args(argv)
    try:  # read with --catalog too: a URL data root's file system is registered for the views
        catalog, elsewhere = default_catalog()
    except CrawlInputError as exc:  # a settings file or value is wrong: the message names it
        print(f"sql: {exc}", file=sys.stderr)
        return 2
    if args.catalog:
        catalog, elsewhere = Path(args.catalog), ""
    if not catalog.exists():
        print(f"sql: no catalog at {catalog}: run `make demo` or a crawl first{elsewhere}, or pass --catalog PATH",
              file=sys.stderr)
        return 2
    try:  # a local root copied or moved elsewhere: its catalog still names the old root's files
        moved = None if elsewhere else rebuilt_if_moved(catalog)
    except duckdb.Error as exc:
        print(f"sql: {catalog} cannot be opened as a DuckDB catalog ({exc})", file=sys.stderr)
        return 2
    if moved:
        print(f"sql: {catalog} was built over {moved}: rebuilt it over its own folder", file=sys.stderr)
    with connect(str(catalog), read_only=True) as con:  # a URL data root's file system registered
        try:
            if not args.query:
                for (view,) in con.execute(VIEWS_SQL).fetchall():
                    print(f"{view:>20}  {con.execute(f'SELECT count(*) FROM {view}').fetchone()[0]:,} rows")
                return 0
            result = con.sql(args.query)
            if result is not None:
                result.show(max_rows=MAX_ROWS, max_width=200)
        except duckdb.Error as exc:
            print(f"sql: the query failed: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
