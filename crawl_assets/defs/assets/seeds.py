"""The seed list: every URL in the seed files, normalised, with the bad lines reported."""

import pyarrow as pa
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from ...crawler.url_policy.seed_files import read_seeds
from ...crawler.url_policy.urls import host_of
from ...storage.layout import seeds_file, write_parquet_atomic
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors

MAX_REPORTED_BAD_LINES = 50


@asset(group_name="frontier")
@fails_with_crawl_errors
def seeds(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """URLs from seeds_dir/*.txt (one a line, '#' comments); bad lines, and URLs the fetcher
    would refuse, are skipped and listed."""
    settings = crawl_settings.load()
    found, bad = read_seeds(settings)
    for line in bad:
        context.log.warning(f"skipped seed line {line}")
    table = pa.table({
        "url": [s.url for s in found],
        "host": [host_of(s.url) for s in found],
        "source": [s.source for s in found],
    })
    path = seeds_file(settings.data_root)
    write_parquet_atomic(table, path)
    bad_text = "\n".join(f"- {line}" for line in bad[:MAX_REPORTED_BAD_LINES]) or "none"
    return MaterializeResult(metadata={
        "seeds": len(found),
        "hosts": len(set(table["host"].to_pylist())),
        "bad_lines": len(bad),
        "bad_lines_detail": MetadataValue.md(bad_text),
        "seeds_dir": MetadataValue.path(str(settings.seeds_dir)),
        "path": MetadataValue.path(str(path)),
    })
