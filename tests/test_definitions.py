import shutil

from dagster import (
    AssetKey, DagsterInstance, DailyPartitionsDefinition, DefaultScheduleStatus, DefaultSensorStatus, Definitions,
    MultiPartitionsDefinition,
)

from crawl_assets.crawler.settings import PROJECT_ROOT

from crawl_assets.definitions import defs
from crawl_assets.defs.partitions import SHARD_KEYS
from crawl_assets.defs.resources import CrawlSettingsResource


DAILY_ASSETS = {"frontier_snapshot", "url_registry", "seen_url_filter", "simhash_index", "near_duplicate_clusters",
                "change_stats", "recrawl_priorities", "crawl_catalog", "day_report"}
FETCH_ASSETS = {"fetch_log", "warc_archive", "links", "dropped_urls", "change_evidence"}


def test_definitions_load_and_validate():
    Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    # Every asset, and only these: the seeds (unpartitioned), the day's assets (one partition a
    # day, from the crawl's start_date, today's included) and the fetch step's five outputs
    # (day x shard).
    partitions = {key.to_user_string(): graph.get(key).partitions_def for key in graph.get_all_asset_keys()}
    assert set(partitions) == {"seeds"} | DAILY_ASSETS | FETCH_ASSETS
    assert partitions["seeds"] is None
    for name in DAILY_ASSETS:
        daily = partitions[name]
        assert isinstance(daily, DailyPartitionsDefinition), name
        assert (daily.start.strftime("%Y-%m-%d"), daily.end_offset, daily.timezone) == ("2026-11-01", 1, "UTC"), name
    for name in FETCH_ASSETS:
        fetch = partitions[name]
        assert isinstance(fetch, MultiPartitionsDefinition), name
        dims = {d.name: d.partitions_def for d in fetch.partitions_defs}
        assert dims["date"] == partitions["frontier_snapshot"] and dims["shard"].get_partition_keys() == SHARD_KEYS
    # The checks that guard a day's outputs.
    assert {(c.asset_key.to_user_string(), c.name) for c in graph.asset_check_keys} == {
        ("fetch_log", "frontier_accounted_for"), ("fetch_log", "polite_spacing"),
        ("warc_archive", "warc_offsets_match"), ("seen_url_filter", "fp_rate_within_target"),
        ("crawl_catalog", "row_counts_match_files"), ("crawl_catalog", "warc_files_whole")}
    # The jobs (and Dagster's implicit asset job), the nightly schedule starting a day's
    # frontier_job from 02:00 UTC (it looks again each hour while a person drives days), and the
    # sensors chaining a day's stages after it.
    assert {job.name for job in defs.resolve_all_job_defs()} == {
        "__ASSET_JOB", "seeds_job", "frontier_job", "fetch_job", "day_close_job", "seen_job", "seen_filter_job", "dedup_job",
        "catalog_job"}
    (schedule,) = defs.schedules
    assert (schedule.name, schedule.job_name, schedule.cron_schedule, schedule.execution_timezone,
            schedule.default_status) == ("nightly_cycle", "frontier_job", "0 2-23 * * *", "UTC",
                                         DefaultScheduleStatus.RUNNING)
    assert {(s.name, s.job_name, s.default_status) for s in defs.sensors} == {
        ("seed_files_changed", "frontier_job", DefaultSensorStatus.RUNNING),
        ("fetch_after_frontier", "fetch_job", DefaultSensorStatus.RUNNING),
        ("close_day_after_fetch", "day_close_job", DefaultSensorStatus.RUNNING)}
    assert set(defs.resources) == {"crawl_settings"}
    assert isinstance(defs.resources["crawl_settings"], CrawlSettingsResource)


def test_assets_partitions_and_jobs_are_present():
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert {"seeds", "frontier_snapshot", "fetch_log", "warc_archive", "links", "dropped_urls", "url_registry",
            "seen_url_filter", "simhash_index", "near_duplicate_clusters", "crawl_catalog"} <= keys
    assert "fetch_batch" not in keys  # the fetch is one step writing five assets

    fetch = graph.get(AssetKey("fetch_log")).partitions_def
    assert isinstance(fetch, MultiPartitionsDefinition)
    assert {d.name for d in fetch.partitions_defs} == {"date", "shard"}
    assert SHARD_KEYS == [f"s{i:02d}" for i in range(8)]
    # The first partition is the crawl's own start_date (recrawl.toml), not a date in the code.
    assert graph.get(AssetKey("frontier_snapshot")).partitions_def.get_partition_keys()[0] == "2026-11-01"
    # The five fetch outputs come from one step, on the same partitions, each reading the day's frontier.
    fetch_outputs = ["fetch_log", "warc_archive", "links", "dropped_urls", "change_evidence"]
    assert {graph.get(AssetKey(key)).assets_def.node_def.name for key in fetch_outputs} == {"fetch_batch"}
    for key in fetch_outputs:
        assert graph.get(AssetKey(key)).partitions_def == fetch
        assert AssetKey("frontier_snapshot") in graph.get(AssetKey(key)).parent_keys
    # What is built from the archives and the links shows in the lineage.
    assert AssetKey("warc_archive") in graph.get(AssetKey("near_duplicate_clusters")).parent_keys
    assert AssetKey("change_evidence") in graph.get(AssetKey("change_stats")).parent_keys
    assert AssetKey("links") in graph.get(AssetKey("url_registry")).parent_keys


def parents_of(asset: str, partition: str) -> set[tuple[str, str]]:
    """(asset, partition) of every upstream partition Dagster waits for before this one."""
    parents = defs.resolve_asset_graph().get_parents_partitions(AssetKey(asset), partition).parent_partitions
    return {(p.asset_key.to_user_string(), p.partition_key) for p in parents}


def test_days_are_declared_in_order():
    # warc_archive[D|s] reads every shard's capture indexes of the day before (payloads archived
    # before, the render tier's subresources among them); the fetch log no longer waits on its own.
    assert {("warc_archive", f"2026-11-28|{s}") for s in SHARD_KEYS} <= parents_of("warc_archive", "2026-11-29|s03")
    assert not {p for p in parents_of("fetch_log", "2026-11-29|s03") if p[0] == "fetch_log"}
    assert ("frontier_snapshot", "2026-11-29") in parents_of("fetch_log", "2026-11-29|s03")
    # frontier_snapshot[D] follows frontier_snapshot[D-1]; the crawl's first day has no day before.
    assert ("frontier_snapshot", "2026-11-28") in parents_of("frontier_snapshot", "2026-11-29")
    assert {p for p in parents_of("frontier_snapshot", "2026-11-01") if p[0] == "frontier_snapshot"} == set()
    assert not {p for p in parents_of("warc_archive", "2026-11-01|s00") if p[0] == "warc_archive"}
    # The catalog of a day waits for that day's outputs only, so it never looks stale.
    catalog = parents_of("crawl_catalog", "2026-11-29")
    assert {("fetch_log", f"2026-11-29|{s}") for s in SHARD_KEYS} <= catalog
    assert ("url_registry", "2026-11-29") in catalog
    assert not {p for p in catalog if p[1] and "2026-11-28" in p[1]}



def selected(job_name: str) -> set[str]:
    return {key.to_user_string() for key in defs.resolve_job_def(job_name).asset_layer.executable_asset_keys}


def test_each_job_selects_its_assets_over_its_partitions():
    from crawl_assets.defs.partitions import daily_partitions, fetch_partitions

    expected = {  # job -> (assets it materialises, its partitions)
        "seeds_job": ({"seeds"}, None),
        "frontier_job": ({"seeds", "frontier_snapshot"}, daily_partitions),
        "fetch_job": ({"fetch_log", "warc_archive", "links", "dropped_urls", "change_evidence"}, fetch_partitions),
        "seen_job": ({"url_registry", "seen_url_filter"}, daily_partitions),
        "seen_filter_job": ({"seen_url_filter"}, daily_partitions),
        "dedup_job": ({"simhash_index", "near_duplicate_clusters"}, daily_partitions),
        "catalog_job": ({"crawl_catalog"}, daily_partitions),
    }
    for name, (assets, partitions) in expected.items():
        assert selected(name) == assets, name
        assert defs.resolve_job_def(name).partitions_def == partitions, name
    # The day closes with everything that reads the fetch batches, never the fetch itself.
    closing = selected("day_close_job")
    assert {"url_registry", "seen_url_filter", "simhash_index", "near_duplicate_clusters"} <= closing
    assert not closing & {"seeds", "frontier_snapshot", "fetch_log", "warc_archive", "links", "dropped_urls"}
    shards = fetch_partitions.get_partitions_def_for_dimension("shard").get_partition_keys()
    assert shards == SHARD_KEYS


def test_every_fetch_run_is_tagged_with_its_shard():
    job = defs.resolve_job_def("fetch_job")
    tags = job.get_tags_for_partition_key("2026-11-29|s03", None)
    assert tags["dagster/partition/shard"] == "s03"
    # Runs launched from the asset graph, backfills and automation run the implicit asset job:
    # they carry the same tag, the key of dagster.yaml's one-run-per-shard limit.
    fetch_outputs = [AssetKey(k) for k in ("fetch_log", "warc_archive", "links", "dropped_urls")]
    for selected_keys in (fetch_outputs, fetch_outputs[1:2]):
        implicit = defs.resolve_implicit_job_def_def_for_assets(selected_keys)
        assert implicit.name.startswith("__ASSET_JOB")
        tags = implicit.get_tags_for_partition_key("2026-11-29|s03", set(selected_keys))
        assert tags["dagster/partition/shard"] == "s03"


def test_dagster_yaml_loads_and_allows_one_run_per_shard(tmp_path):
    shutil.copy(PROJECT_ROOT / "dagster.yaml", tmp_path)
    instance = DagsterInstance.from_config(str(tmp_path))
    (limit,) = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert limit == {"key": "dagster/partition/shard", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}


def test_the_first_partition_is_the_settings_start_date(tmp_path):
    """"Materialize all" offers the days since the crawl's own start_date: a crawl that starts
    later offers fewer days, whatever date the code was written on."""
    import os
    import subprocess
    import sys

    overlay = tmp_path / "later.toml"
    overlay.write_text('[crawl]\nstart_date = "2026-11-27"\n')
    show = ("from crawl_assets.definitions import defs; from dagster import AssetKey; "
            "g = defs.resolve_asset_graph(); "
            "print(g.get(AssetKey('frontier_snapshot')).partitions_def.get_first_partition_key(), "
            "g.get(AssetKey('fetch_log')).partitions_def.get_first_partition_key())")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", show], capture_output=True, text=True, check=True,
                         cwd=PROJECT_ROOT, env=os.environ | {"RECRAWL_SETTINGS": str(overlay)}).stdout.split()
    assert out == ["2026-11-27", "2026-11-27|s00"]


# A day per shard's definitions, as a process loading them with day_per_shard = true sees them.
PER_SHARD_DEFINITIONS = """
import json
from dagster import AssetKey, Definitions
from crawl_assets.definitions import defs
Definitions.validate_loadable(defs)
graph = defs.resolve_asset_graph()
print(json.dumps({
    "assets": sorted(k.to_user_string() for k in graph.get_all_asset_keys()),
    "partitioned_like_fetches": sorted(k.to_user_string() for k in graph.get_all_asset_keys()
                                       if graph.get(k).partitions_def == graph.get(AssetKey("fetch_log")).partitions_def),
    "jobs": {j.name: sorted(k.to_user_string() for k in j.asset_layer.executable_asset_keys)
             for j in defs.resolve_all_job_defs() if j.name != "__ASSET_JOB"},
    "sensors": sorted((s.name, s.job_name) for s in defs.sensors),
    "fetch_parents": sorted(k.to_user_string() for k in graph.get(AssetKey("fetch_log")).parent_keys),
}))
"""


def test_a_day_per_shard_has_its_frontier_in_each_fetch_run_and_its_close_in_three_stages_more(tmp_path):
    import json
    import os
    import subprocess
    import sys

    overlay = tmp_path / "per_shard.toml"
    overlay.write_text("[crawl]\nday_per_shard = true\n")
    shown = json.loads(subprocess.run(
        [sys.executable, "-W", "ignore", "-c", PER_SHARD_DEFINITIONS], capture_output=True, text=True, check=True,
        cwd=PROJECT_ROOT, env=os.environ | {"RECRAWL_SETTINGS": str(overlay)}).stdout)
    one_process = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    per_shard = {"shard_frontier", "shard_seen_filter", "priority_part", "crawl_price", "shard_priorities"}
    assert set(shown["assets"]) == one_process - {"recrawl_priorities"} | per_shard
    assert not per_shard & one_process
    assert set(shown["partitioned_like_fetches"]) == {"fetch_log", "warc_archive", "links", "dropped_urls",
                                                      "change_evidence", "shard_frontier", "shard_seen_filter",
                                                      "priority_part", "shard_priorities"}
    jobs = shown["jobs"]
    # the shard's frontier is built in its fetch run, before the batch (a parent of its outputs)
    assert jobs["fetch_job"] == ["change_evidence", "dropped_urls", "fetch_log", "links", "shard_frontier",
                                 "warc_archive"]
    assert "shard_frontier" in shown["fetch_parents"]
    assert jobs["frontier_job"] == ["frontier_snapshot", "seeds"]
    assert not set(jobs["day_close_job"]) & per_shard
    assert (jobs["shard_close_job"], jobs["crawl_price_job"], jobs["shard_priorities_job"]) == (
        ["priority_part", "shard_seen_filter"], ["crawl_price"], ["shard_priorities"])
    assert {("shard_close_after_day_close", "shard_close_job"), ("crawl_price_after_parts", "crawl_price_job"),
            ("shard_priorities_after_price", "shard_priorities_job")} < set(map(tuple, shown["sensors"]))


def test_a_run_cannot_change_the_shape_of_the_day(tmp_path):
    import pytest

    from crawl_assets.crawler.settings import SettingsError

    overlay = tmp_path / "per_shard.toml"
    overlay.write_text("[crawl]\nday_per_shard = true\n")
    with pytest.raises(SettingsError, match="day_per_shard is true in this run's settings"):
        CrawlSettingsResource(settings_files=[str(overlay)]).load()
