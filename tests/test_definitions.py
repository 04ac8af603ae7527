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
    # The first partition is the crawl's own start_date (recrawl.toml), not a date in the code.
    assert graph.get(AssetKey("frontier_snapshot")).partitions_def.get_partition_keys()[0] == "2026-11-01"
    # Fetch batches depend on the same day's frontier.
    assert AssetKey("frontier_snapshot") in graph.get(AssetKey("fetch_batch")).parent_keys



def selected(job_name: str) -> set[str]:
    return {key.to_user_string() for key in defs.resolve_job_def(job_name).asset_layer.executable_asset_keys}


def test_each_job_selects_its_assets_over_its_partitions():
    from crawl_assets.partitions import daily_partitions, fetch_partitions

    expected = {  # job -> (assets it materialises, its partitions)
        "seeds_job": ({"seeds"}, None),
        "frontier_job": ({"seeds", "frontier_snapshot"}, daily_partitions),
        "fetch_job": ({"fetch_batch"}, fetch_partitions),
        "seen_job": ({"url_registry", "seen_url_filter"}, daily_partitions),
        "dedup_job": ({"simhash_index", "near_duplicate_clusters"}, daily_partitions),
        "catalog_job": ({"crawl_catalog"}, None),
    }
    for name, (assets, partitions) in expected.items():
        assert selected(name) == assets, name
        assert defs.resolve_job_def(name).partitions_def == partitions, name
    # The day closes with everything that reads the fetch batches, never the fetch itself.
    closing = selected("day_close_job")
    assert {"url_registry", "seen_url_filter", "simhash_index", "near_duplicate_clusters"} <= closing
    assert not closing & {"seeds", "frontier_snapshot", "fetch_batch"}
    shards = fetch_partitions.get_partitions_def_for_dimension("shard").get_partition_keys()
    assert shards == SHARD_KEYS


def test_every_fetch_run_is_tagged_with_its_shard():
    job = defs.resolve_job_def("fetch_job")
    tags = job.get_tags_for_partition_key("2026-11-29|s03", None)
    assert tags["dagster/partition/shard"] == "s03"


def test_dagster_yaml_loads_and_allows_one_run_per_shard(tmp_path):
    shutil.copy(PROJECT_ROOT / "dagster.yaml", tmp_path)
    instance = DagsterInstance.from_config(str(tmp_path))
    (limit,) = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert limit == {"key": "dagster/partition/shard", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
