import shutil

from dagster import AssetKey, DagsterInstance, Definitions, MultiPartitionsDefinition

from crawl_assets.crawler.settings import PROJECT_ROOT

from crawl_assets.definitions import defs
from crawl_assets.partitions import SHARD_KEYS


def test_definitions_load_and_validate():
    Definitions.validate_loadable(defs)


def test_assets_partitions_and_jobs_are_present():
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert keys == {"seeds", "frontier_snapshot", "fetch_batch", "url_registry", "seen_url_filter",
                    "simhash_index", "near_duplicate_clusters", "crawl_catalog"}

    fetch = graph.get(AssetKey("fetch_batch")).partitions_def
    assert isinstance(fetch, MultiPartitionsDefinition)
    assert {d.name for d in fetch.partitions_defs} == {"date", "shard"}
    assert SHARD_KEYS == [f"s{i:02d}" for i in range(8)]
    assert graph.get(AssetKey("frontier_snapshot")).partitions_def.get_partition_keys()[0] == "2026-01-01"
    # Fetch batches depend on the same day's frontier.
    assert AssetKey("frontier_snapshot") in graph.get(AssetKey("fetch_batch")).parent_keys

    for name in ("seeds_job", "frontier_job", "fetch_job", "seen_job", "dedup_job", "catalog_job"):
        assert defs.resolve_job_def(name) is not None


def test_every_fetch_run_is_tagged_with_its_shard():
    job = defs.resolve_job_def("fetch_job")
    tags = job.get_tags_for_partition_key("2026-11-29|s03", None)
    assert tags["dagster/partition/shard"] == "s03"


def test_dagster_yaml_loads_and_allows_one_run_per_shard(tmp_path):
    shutil.copy(PROJECT_ROOT / "dagster.yaml", tmp_path)
    instance = DagsterInstance.from_config(str(tmp_path))
    (limit,) = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert limit == {"key": "dagster/partition/shard", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
