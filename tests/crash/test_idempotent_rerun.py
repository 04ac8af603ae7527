"""Materialising a finished fetch partition again fetches nothing and changes nothing; with the
refetch tag it starts over, replaces the outputs and keeps the older WARC files aside."""

import time
from pathlib import Path

import pyarrow.parquet as pq
from dagster import DagsterInstance, materialize

from crawl_assets.cli import cycle
from crawl_assets.crawler.url_policy.sharding import shard_key, shard_of
from crawl_assets.defs.assets import fetch_batch, frontier_snapshot, seeds
from crawl_assets.defs.assets.fetch import REFETCH_TAG
from crawl_assets.defs.partitions import fetch_partition_key
from crawl_assets.storage.layout import fetch_log_file, links_file, warc_dir
from support import DemoWebProcess, write_test_settings

DAY = "2026-11-29"


def archive_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.warc.gz"))}


class ReplayQueue:
    """A run queue that runs nothing: each spec's outcome is the given run of its job, as if the
    command's runs had been those."""

    def __init__(self, instance, runs: dict[str, str]):
        self.instance, self.runs = instance, runs

    def run_all(self, specs, parallel, progress):
        from dagster import DagsterRunStatus

        from crawl_assets.cli.launcher import RunOutcome

        return [RunOutcome(self.runs[spec.job_name], spec.label, DagsterRunStatus.SUCCESS, 1.0, 2.0) for spec in specs]


def test_a_finished_partition_is_a_no_op_unless_a_refetch_is_asked_for(tmp_path):
    with DemoWebProcess(hosts=2, pages_per_host=6) as server:
        resource = write_test_settings(tmp_path, server.web)
        settings = resource.load()
        root = settings.data_root
        shard = shard_key(shard_of(server.web.hostname(0), settings.shard_count))
        key = fetch_partition_key(DAY, shard)
        resources = {"crawl_settings": resource}
        folder = warc_dir(root, DAY, shard)
        with DagsterInstance.ephemeral() as instance:
            materialize([seeds], instance=instance, resources=resources)
            materialize([frontier_snapshot], instance=instance, resources=resources, partition_key=DAY)
            first = materialize([fetch_batch], instance=instance, resources=resources, partition_key=key)
            # The day run again (a cycle command, the nightly schedule): its frontier is kept, and the
            # command says so at the terminal, with how to refetch the day.
            rerun = materialize([frontier_snapshot], instance=instance, resources=resources, partition_key=DAY)
            kept = cycle.kept_because(instance, rerun.run_id)
            assert kept.startswith(f"the frontier of {DAY} is kept as it was: the fetch of shard(s) {shard} began")
            assert f"python -m crawl_assets.cli.cycle --date {DAY} --refetch" in kept
            assert cycle.kept_because(instance, first.run_id) is None
            lines = []  # the cycle command's lines at the terminal, with those runs
            cycle.submit_cycle(DAY, ReplayQueue(instance, {"frontier_job": rerun.run_id, "fetch_job": first.run_id,
                                                           "day_close_job": first.run_id}), [shard], 1, lines.append)
            assert lines == [f"{DAY} was crawled before: {kept}"]
            log, links, archives = (pq.read_table(fetch_log_file(root, DAY, shard)),
                                    pq.read_table(links_file(root, DAY, shard)), archive_bytes(folder))
            between = time.time()
            again = materialize([fetch_batch], instance=instance, resources=resources, partition_key=key)
            after_again = time.time()
            assert pq.read_table(fetch_log_file(root, DAY, shard)).equals(log)
            assert pq.read_table(links_file(root, DAY, shard)).equals(links)
            assert archive_bytes(folder) == archives and not (folder / "superseded").exists()
            said = [e.user_message for e in instance.all_logs(again.run_id) if "nothing fetched" in e.user_message]
            forced = materialize([fetch_batch], instance=instance, resources=resources, partition_key=key,
                                 tags={REFETCH_TAG: "true"})
        rows = server.stop()
    # The no-op says so in its run log and its metadata, and counts what it did: nothing.
    first_meta, again_meta, forced_meta = (fetch_log_metadata(run) for run in (first, again, forced))
    sentence = (f"nothing fetched: the batch of {DAY}|{shard} had finished in an earlier run, and its fetch log "
                f"({log.num_rows:,} rows)")
    assert len(said) == 1 and said[0].startswith(sentence)
    assert f"--date {DAY} --shards {shard} --refetch" in said[0]
    assert again_meta["nothing_fetched"].value == said[0] and "nothing_fetched" not in first_meta
    assert (first_meta["fetch_log_rows"].value, again_meta["fetch_log_rows"].value,
            forced_meta["fetch_log_rows"].value) == (log.num_rows, 0, log.num_rows)
    assert again_meta["answered"].value == 0 < first_meta["answered"].value
    assert again_meta["bytes"].value == 0 and again_meta["frontier_urls"].value == first_meta["frontier_urls"].value
    assert again_meta["dagster/row_count"].value == log.num_rows  # the table as it stands

    assert again.success and forced.success and log.num_rows > 0
    assert not [r for r in rows if between <= r["start"] <= after_again]  # the no-op asked nothing
    pages = lambda selected: sorted((r["host"], r["path"]) for r in selected if r["path"] != "/robots.txt")
    assert pages(r for r in rows if r["start"] > after_again) == pages(r for r in rows if r["start"] < between)
    current = archive_bytes(folder)
    assert current and all(forced.run_id[:8] in name for name in current)
    assert archive_bytes(folder / "superseded") == archives  # the older archives, kept aside whole
    assert all(first.run_id[:8] in name for name in archives)
    refetched = pq.read_table(fetch_log_file(root, DAY, shard)).to_pylist()
    assert {r["url"] for r in refetched} == set(log["url"].to_pylist())
    assert {r["warc_file"] for r in refetched if r["warc_file"]} <= set(current)


def fetch_log_metadata(result) -> dict:
    (materialization,) = [m for m in result.asset_materializations_for_node("fetch_batch")
                          if m.asset_key.path == ["fetch_log"]]
    return materialization.metadata


def test_the_command_line_asks_for_a_refetch_with_the_tag_the_asset_reads(monkeypatch):
    assert cycle.fetch_spec(DAY, "s00", refetch=True).tags[REFETCH_TAG] == "true"
    assert REFETCH_TAG not in cycle.fetch_spec(DAY, "s00").tags
    asked = []
    monkeypatch.setattr(cycle, "run_days", lambda days, shards, progress, refetch, quarantine: asked.append(refetch) or [])
    assert cycle.main(["--refetch"]) == 0 and cycle.main([]) == 0
    assert asked == [True, False]
