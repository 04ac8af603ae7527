"""crawl_catalog[D] through Dagster: a daily partition, and two days' builds at once."""

import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import duckdb
from dagster import instance_for_test, materialize

from crawl_assets.defs.assets import crawl_catalog
from crawl_assets.defs.resources import CrawlSettingsResource

sys.path.insert(0, str(Path(__file__).parents[1] / "pipeline"))
from test_catalog_step import write_outputs  # noqa: E402 (the pipeline tests' small crawl)

DAYS = ["2026-11-28", "2026-11-29"]


def build(day: str, data_root: str, start) -> tuple:
    """One day's catalog in a process of its own, as two runs of a deployment would build it
    (Dagster's logging set-up is process-wide: two runs in threads of one process deadlock)."""
    resource = CrawlSettingsResource(data_root=data_root, seeds_dir=str(Path(data_root) / "seeds"))
    with instance_for_test() as instance:  # one instance each: SQLite takes one writer
        start.wait()
        result = materialize([crawl_catalog], partition_key=day, instance=instance,
                             resources={"crawl_settings": resource}, raise_on_error=False)
        events = result.get_asset_materialization_events()
        return (result.success, [(e.partition, e.materialization.metadata["built_for_day"].value)
                                 for e in events],
                [check.passed for check in result.get_asset_check_evaluations()])


def test_two_days_of_the_catalog_built_at_once_both_land_whole(tmp_path):
    write_outputs(tmp_path)
    spawn = multiprocessing.get_context("spawn")
    with spawn.Manager() as manager, ProcessPoolExecutor(len(DAYS), mp_context=spawn) as pool:
        start = manager.Barrier(len(DAYS))
        results = dict(zip(DAYS, pool.map(build, DAYS, [str(tmp_path)] * len(DAYS), [start] * len(DAYS))))

    for day, (success, materialized, checks) in results.items():
        assert success, day
        assert materialized == [(day, day)]
        assert checks == [True, True]  # the catalog it built has exactly the files' rows, whole WARC files
    with duckdb.connect(str(tmp_path / "crawl.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM fetches").fetchone()[0] == 3
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("crawl.duckdb")] == ["crawl.duckdb"]
