from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from dagster import DagsterInstance, materialize

from crawl_assets.crawler.batches.arrow_schemas import FETCH_LOG_SCHEMA
from crawl_assets.crawler.url_policy.sharding import shard_key, shard_of
from crawl_assets.crawler.vocabulary import StatusClass
from crawl_assets.defs.assets import fetch_batch, frontier_snapshot, seeds
from crawl_assets.defs.assets.fetch import REFETCH_TAG
from crawl_assets.defs.partitions import fetch_partition_key
from crawl_assets.storage.layout import fetch_log_file, links_file, warc_dir
from demoweb import DemoWeb, DemoWebThread
from support import write_test_settings

DAY = "2026-11-29"


def test_a_rerun_replaces_the_partition_but_keeps_the_old_archives(tmp_path):
    with DemoWebThread(DemoWeb(seed=2, hosts=2, pages_per_host=4), port=0) as web:
        resource = write_test_settings(tmp_path, web.web)
        settings = resource.load()
        shard = shard_key(shard_of(web.web.hostname(0), settings.shard_count))
        key = fetch_partition_key(DAY, shard)
        resources = {"crawl_settings": resource}
        with DagsterInstance.ephemeral() as instance:
            materialize([seeds], instance=instance, resources=resources)
            materialize([frontier_snapshot], instance=instance, resources=resources, partition_key=DAY)
            first = materialize([fetch_batch], instance=instance, resources=resources, partition_key=key)
            second = materialize([fetch_batch], instance=instance, resources=resources, partition_key=key,
                                 tags={REFETCH_TAG: "true"})  # a finished partition is fetched again only if asked

    folder = warc_dir(settings.data_root, DAY, shard)
    current = sorted(p.name for p in folder.glob("*.warc.gz"))
    kept = sorted(p.name for p in (folder / "superseded").glob("*.warc.gz"))
    assert current and all(second.run_id[:8] in name for name in current)
    assert kept and all(first.run_id[:8] in name for name in kept)
    log = pq.read_table(fetch_log_file(settings.data_root, DAY, shard)).to_pylist()
    assert {row["warc_file"] for row in log if row["warc_file"]} == set(current)
    # One run lands the five assets of the partition, each with what it holds.
    events = {e.asset_key.to_user_string(): e.materialization for e in second.get_asset_materialization_events()}
    assert sorted(events) == ["change_evidence", "dropped_urls", "fetch_log", "links", "warc_archive"]
    assert {e.partition for e in events.values()} == {str(key)}
    assert sorted(Path(p).name for p in events["warc_archive"].metadata["warc_files"].value) == current
    assert events["links"].metadata["dagster/row_count"].value == pq.read_metadata(
        links_file(settings.data_root, DAY, shard)).num_rows > 0
    # The blocking checks belong to the asset they judge.
    checks = {(c.asset_key.to_user_string(), c.check_name): c.passed for c in second.get_asset_check_evaluations()}
    assert checks == {("fetch_log", "polite_spacing"): True, ("fetch_log", "frontier_accounted_for"): True,
                      ("warc_archive", "warc_offsets_match"): True}
    metadata = events["fetch_log"].metadata
    assert metadata["fetch_log_rows"].value == len(log) > 0
    assert metadata["answered"].value == sum(row["status"] is not None for row in log) > 0
    # Tables the UI renders, read back from the materialisation event.
    by_class = {r.data["status_class"]: r.data["pages"] for r in metadata["status_classes"].records}
    assert by_class == dict(Counter(row["status_class"] for row in log)) and by_class[StatusClass.OK] > 0
    assert metadata["dagster/row_count"].value == len(log)
    columns = [c.name for c in metadata["dagster/column_schema"].schema.columns]
    assert columns == FETCH_LOG_SCHEMA.names
    spacing = metadata["hosts_widest_spacing"].records
    assert {r.data["host"] for r in spacing} == {row["host"] for row in log if row["fetched_at"]}
    assert all(r.data["median_spacing_s"] >= settings.default_delay_s for r in spacing if r.data["requests"] > 1)
