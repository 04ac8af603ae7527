"""frontier_snapshot as Dagster runs it: a re-run of a fetched day keeps its frontier and says
why, a refetch of the day builds it again, and a day before the crawl's newest is refused."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance, materialize

from crawl_assets.defs.assets import frontier_snapshot
from crawl_assets.defs.assets.fetch import REFETCH_TAG
from crawl_assets.defs.assets.frontier import KEPT_METADATA
from crawl_assets.defs.resources import CrawlSettingsResource
from crawl_assets.storage.layout import frontier_file, write_parquet_atomic

from crawl_files import fetch_row, shard_for, write_fetch_log, write_seeds

DAY, LATER = "2026-11-29", "2026-12-02"


@pytest.fixture
def crawl(tmp_path):
    overlay = tmp_path / "test.toml"
    overlay.write_text("[crawl]\nshard_count = 8\n")
    resource = CrawlSettingsResource(settings_files=[str(overlay)], data_root=str(tmp_path / "data"),
                                     seeds_dir=str(tmp_path / "seeds"))
    with DagsterInstance.ephemeral() as instance:
        yield resource, instance


def run_frontier(crawl, day, **tags):
    resource, instance = crawl
    return materialize([frontier_snapshot], instance=instance, resources={"crawl_settings": resource},
                       partition_key=day, tags=tags, raise_on_error=False)


def test_a_rerun_of_a_fetched_day_keeps_its_frontier_and_a_refetch_builds_it_again(crawl):
    settings = crawl[0].load()
    root = settings.data_root
    write_seeds(root, ["http://a.test/"])
    assert run_frontier(crawl, DAY).success
    shard = shard_for("a.test", settings)
    before = frontier_file(root, DAY, shard).read_bytes()
    write_fetch_log(root, DAY, [fetch_row("http://a.test/", f"{DAY}T03:00:00")], shard=shard)  # the fetch landed

    write_seeds(root, ["http://a.test/", "http://a.test/added-since"])  # a rebuild would differ
    rerun = run_frontier(crawl, DAY)
    assert rerun.success and frontier_file(root, DAY, shard).read_bytes() == before
    (event,) = rerun.get_asset_materialization_events()
    metadata = event.materialization.metadata
    assert metadata[KEPT_METADATA].value is True
    assert metadata["kept_because"].value.startswith(
        f"the frontier of {DAY} is kept as it was: the fetch of shard(s) {shard} began from it")
    assert f"--date {DAY} --refetch" in metadata["kept_because"].value

    assert run_frontier(crawl, DAY, **{REFETCH_TAG: "true"}).success
    rebuilt = pq.read_table(frontier_file(root, DAY, shard)).column("url").to_pylist()
    assert rebuilt == ["http://a.test/", "http://a.test/added-since"]


def test_a_day_before_the_newest_is_refused_with_what_to_do(crawl):
    root = crawl[0].load().data_root
    write_seeds(root, ["http://a.test/"])
    write_parquet_atomic(pa.table({"url": ["http://a.test/"]}), frontier_file(root, LATER, "s00"))
    result = run_frontier(crawl, DAY)
    assert not result.success
    (failure,) = result.get_step_failure_events()
    assert failure.step_failure_data.user_failure_data.description == (
        f"{DAY} is before {LATER}, the newest day this crawl has started, and each day's statistics fold into "
        f"the next: crawl {LATER} or a later day, or start a new data root (data_root in the settings) to "
        f"crawl {DAY}")
    assert not frontier_file(root, DAY, "s00").exists()
    assert not list((root / "frontier").glob(f"date={DAY}/*"))
