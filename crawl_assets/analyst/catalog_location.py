"""Which catalog the analyst tools (sql, captures) open.

--catalog PATH when given. Otherwise the catalog of the current settings (data/crawl.duckdb
under recrawl.toml alone); when that is missing and no RECRAWL_SETTINGS is set, the demo's
(data/demo/crawl.duckdb, which `make demo` writes), with a note on stderr saying so: the
commands README prints then work as printed after `make demo` and after a crawl of your own.
When no catalog is found, the error names every place looked at and how to point at a root."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..crawler.crawl_errors import CrawlInputError
from ..crawler.settings import PROJECT_ROOT, SETTINGS_ENV, load_settings
from ..storage.shared_root import is_remote

DEMO_SETTINGS_FILE = PROJECT_ROOT / "settings" / "demo.toml"
CATALOG_HELP = ("the DuckDB catalog (default: the settings' data_root/crawl.duckdb, data/crawl.duckdb; "
                "without it and without RECRAWL_SETTINGS, the demo's data/demo/crawl.duckdb)")
HOW_TO_POINT = ("pass --catalog ROOT/crawl.duckdb, or name a settings file whose data_root is the root "
                "in RECRAWL_SETTINGS")


class CatalogNotFound(CrawlInputError):
    """No catalog where the tools looked; the message says where that was and what to do."""


@dataclass(frozen=True)
class CatalogChoice:
    path: Path
    data_root: object  # the folder (or URL) the WARC files lie under: a Path, or a UPath
    note: str = ""  # a sentence for stderr when the choice was not the settings' own catalog


def demo_catalog() -> Path:
    """Where `make demo` writes its catalog (settings/demo.toml's data_root)."""
    return load_settings(DEMO_SETTINGS_FILE, use_env=False).catalog_path


def choose_catalog(given: str | os.PathLike | None) -> CatalogChoice:
    """The catalog to open (see the module's docstring); CatalogNotFound when there is none."""
    if given:
        path = Path(given)
        if not path.exists():
            raise CatalogNotFound(f"no catalog at {path} (given with --catalog): give the crawl.duckdb "
                                  f"of a data root, such as {demo_catalog()} after `make demo`")
        return CatalogChoice(path, path.parent)
    settings = load_settings()
    own = settings.catalog_path
    if own.exists():
        return CatalogChoice(own, settings.data_root)
    layers = os.environ.get(SETTINGS_ENV, "")
    looked = [f"{own} (the catalog of the settings: recrawl.toml{' and ' + layers if layers else ''})"]
    if not layers:
        demo = demo_catalog()
        if demo.exists():
            return CatalogChoice(demo, demo.parent, f"no catalog at {own}: reading the demo's {demo} "
                                                    f"(`make demo` wrote it); {HOW_TO_POINT} to read another")
        looked.append(f"{demo} (the demo's)")
    copy = (f"; under a URL data root the catalog is built in one machine's work_dir: copy the data root's "
            f"{settings.data_root / 'crawl.duckdb'} to {own}") if is_remote(settings.data_root) else ""
    raise CatalogNotFound(f"no catalog at {' nor at '.join(looked)}: run `make demo` or a crawl (materialise "
                          f"crawl_catalog) first, or {HOW_TO_POINT}{copy}")
