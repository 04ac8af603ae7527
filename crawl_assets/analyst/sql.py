"""Run SQL against the crawl's catalog, read-only, with the project's own DuckDB (no `duckdb`
command needs installing: the CLI on PyPI lags the Python package and cannot open its files).

    .venv/bin/python -m crawl_assets.analyst.sql "SELECT status_class, count(*) FROM pages GROUP BY ALL"
    .venv/bin/python -m crawl_assets.analyst.sql            # the catalog's views and their row counts
    .venv/bin/python -m crawl_assets.analyst.sql --catalog other/crawl.duckdb "SELECT ..."

Without --catalog: the settings' catalog, or else the demo's (catalog_location.py).
"""

from __future__ import annotations

import argparse
import sys

import duckdb

from ..crawler.crawl_errors import CrawlInputError
from ..crawler.settings import load_settings
from ..pipeline.catalog_step import rebuilt_if_moved
from ..storage.shared_root import connect, is_remote
from .catalog_location import CATALOG_HELP, choose_catalog

MAX_ROWS = 200  # printed rows; the rest is summarised by DuckDB's renderer

VIEWS_SQL = "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawl_assets.analyst.sql", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--catalog", help=CATALOG_HELP)
    parser.add_argument("query", nargs="?", help="one SQL statement; none lists the views")
    args = parser.parse_args(argv)
    try:  # the settings are read with --catalog too: a URL data root's file system is registered for the views
        load_settings()
        choice = choose_catalog(args.catalog)
    except CrawlInputError as exc:  # a settings file or value is wrong, or no catalog: the message says so
        print(f"sql: {exc}", file=sys.stderr)
        return 2
    if choice.note:
        print(f"sql: {choice.note}", file=sys.stderr)
    catalog = choice.path
    try:  # a local root copied or moved elsewhere: its catalog still names the old root's files
        moved = None if is_remote(choice.data_root) else rebuilt_if_moved(catalog)
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
