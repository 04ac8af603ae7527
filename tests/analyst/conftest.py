"""A two-day demo crawl shared by the analyst-output tests (indexes, look-ups, replay, catalog)."""

from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import DagsterInstance

from crawl_assets.cli.cycle import run_cycle
from crawl_assets.crawler.settings import CrawlSettings

from support import DemoWebProcess, write_test_settings

DAY1, DAY2 = "2026-11-28", "2026-11-29"


@dataclass(frozen=True)
class TwoDayCrawl:
    settings: CrawlSettings
    web: object  # the DemoWeb that was crawled
    access_log: Path  # the demo web's log of both days' requests
    metadata: dict  # asset key ("fetch_log", ...) -> the metadata of its latest materialization

    @property
    def root(self) -> Path:
        return self.settings.data_root

    def warcs(self, date: str | None = None) -> list[Path]:
        pattern = f"warc/date={date or '*'}/shard=*/*.warc.gz"
        return sorted(self.root.glob(pattern))


@pytest.fixture(scope="session")
def two_day_crawl(tmp_path_factory) -> TwoDayCrawl:
    """Two recrawl cycles of a small demo web that does not change between them,
    so day two answers 304 for every page it saw on day one; the near-duplicate hosts serve
    byte-identical mirrors, archived as identical-payload revisits."""
    folder = tmp_path_factory.mktemp("analyst")
    with DemoWebProcess(seed=7, hosts=6, pages_per_host=12, near_duplicates=True, traps=True,
                        access_log=folder / "access_log.parquet") as server:
        resource = write_test_settings(folder, server.web, seed_hosts=3)
        with DagsterInstance.ephemeral() as instance:
            run_cycle(DAY1, instance, resource)
            run_cycle(DAY2, instance, resource)
            metadata = latest_metadata(instance)
        web = server.web
    return TwoDayCrawl(resource.load(), web, folder / "access_log.parquet", metadata)


def latest_metadata(instance) -> dict:
    """Each asset's latest materialization's metadata, by the asset key's name."""
    found = {}
    for key in instance.get_asset_keys():
        event = instance.get_latest_materialization_event(key)
        if event is not None:
            found["/".join(key.path)] = event.asset_materialization.metadata
    return found
