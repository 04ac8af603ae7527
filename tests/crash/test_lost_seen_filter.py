"""A seen-URL filter lost after its day closed (moved away, as a corrupt-filter message once
proposed, or damaged on disk) is rebuilt from the day's URL registry by the next cycle, which
then crawls its day as usual. Before, the day counted as unclosed: the next day waited for it
and was refused, and running the day itself was refused as an earlier day."""

import shutil

import pytest
from dagster import DagsterInstance

from crawl_assets.cli import cycle
from crawl_assets.crawler.crawl_errors import CrawlInputError
from crawl_assets.pipeline.fetch_step import load_seen_filter
from crawl_assets.pipeline.registry_step import load_registry_urls
from crawl_assets.pipeline.seen_filter_files import read_seen_filter
from crawl_assets.storage.layout import seen_filter_file
from support import DemoWebProcess, write_test_settings

DAY1, DAY2, DAY3 = "2026-11-20", "2026-11-21", "2026-11-22"


def test_a_lost_seen_filter_is_rebuilt_from_the_registry_by_the_next_cycle(tmp_path):
    with DemoWebProcess(hosts=2, pages_per_host=6) as server:
        # a frontier waits 2 s for its previous day, not hours: the old code failed here at once
        resource = write_test_settings(tmp_path, server.web, extra="previous_day_wait_s = 2\n")
        root = resource.load().data_root
        with DagsterInstance.ephemeral() as instance:
            cycle.run_cycle(DAY1, instance, resource)
            lost = seen_filter_file(root, DAY1)
            shutil.move(lost, tmp_path / "moved-away.bloom")
            assert cycle.lost_seen_filter(root, DAY2) == DAY1
            cycle.check_previous_day_closed(root, DAY2, rebuilt=("seen_url_filter",))  # what the command does
            with pytest.raises(CrawlInputError, match=f"{DAY1} was started but has not closed"):
                cycle.check_previous_day_closed(root, DAY2)
            lines = []
            cycle.run_cycle(DAY2, instance, resource, progress=lines.append)
    assert f"seen_url_filter {DAY1}: materialised" in lines  # rebuilt first, then the day crawled:
    assert any((root / "fetch_log" / f"date={DAY2}").glob("shard=*/fetch_log.parquet"))
    rebuilt = read_seen_filter(lost)
    assert all(url in rebuilt for url in load_registry_urls(root, DAY1).column("url").to_pylist())

    # Damaged on disk (cut short): named with the command that repairs it, and found lost.
    damaged = seen_filter_file(root, DAY2)
    damaged.write_bytes(damaged.read_bytes()[:-100])
    with pytest.raises(CrawlInputError, match=f"run the cycle command again, which rebuilds it from the URL registry "
                                              f"of {DAY2} first"):
        load_seen_filter(root, DAY3)
    assert cycle.lost_seen_filter(root, DAY3) == DAY2
