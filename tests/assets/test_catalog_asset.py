"""crawl_catalog[D] through Dagster: a daily partition, and two days' builds at once."""

import sys
import threading
from pathlib import Path

import duckdb
from dagster import instance_for_test, materialize

from crawl_assets.assets import crawl_catalog
from crawl_assets.resources import CrawlSettingsResource

sys.path.insert(0, str(Path(__file__).parents[1] / "pipeline"))
from test_catalog_step import write_outputs  # noqa: E402 (the pipeline tests' small crawl)

DAYS = ["2026-11-28", "2026-11-29"]


def test_two_days_of_the_catalog_built_at_once_both_land_whole(tmp_path):
    write_outputs(tmp_path)
    resource = CrawlSettingsResource(data_root=str(tmp_path), seeds_dir=str(tmp_path / "seeds"))
    results, start = {}, threading.Barrier(len(DAYS))

    def build(day: str) -> None:
        with instance_for_test() as instance:  # one instance each: SQLite takes one writer
            start.wait()
            results[day] = materialize([crawl_catalog], partition_key=day, instance=instance,
                                       resources={"crawl_settings": resource}, raise_on_error=False)

    threads = [threading.Thread(target=build, args=(day,)) for day in DAYS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    for day, result in results.items():
        assert result.success, day
        (event,) = result.get_asset_materialization_events()
        assert event.partition == day and event.materialization.metadata["built_for_day"].value == day
        (check,) = result.get_asset_check_evaluations()
        assert check.passed  # the catalog it built has exactly the files' rows
    with duckdb.connect(str(tmp_path / "crawl.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM fetches").fetchone()[0] == 3
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("crawl.duckdb")] == ["crawl.duckdb"]
