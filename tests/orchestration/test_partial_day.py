"""A shard that keeps failing, through the real instance: a day's frontier launched without a
driver starts every shard's fetch run (sensor), the broken shard's run retries the step (the
fetch retry policy) and fails, and the day-close sensor then closes the day on what landed;
the day report says the day is partial and names the shard and its run. Once the shard is repaired and
run again, the sensor closes the day again, complete. Every figure is read back from the
instance's materialisation events, as the UI shows them.

The day is crawled into a data root of the test's own (run config, which the sensors pass on to
the runs they start): on the deployment's root, the UI test's later day (tests/ui) made this
one an earlier day, refused, whenever it ran first."""

import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterEventType, DagsterRun, DagsterRunStatus, RunsFilter

from crawl_assets.cli.cycle import daily_spec, fetch_spec
from crawl_assets.defs.jobs import SHARD_TAG, day_close_job, fetch_job, frontier_job
from crawl_assets.defs.run_policies import FETCH_RETRIES
from crawl_assets.storage.layout import day_report_dir, fetch_log_file, url_registry_file

DAY = "2026-11-23"
GOOD, BROKEN = "s00", "s01"
# The sensors tick every 5 s here (DAEMON_PACE_ENV); a loaded machine can take minutes to start runs.
SENSOR_TIMEOUT_S = 600


def finished_runs(instance, job_name: str, partition: str) -> list[DagsterRun]:
    """Finished runs of `job_name` for `partition`, oldest first."""
    records = instance.get_run_records(RunsFilter(job_name=job_name, tags={"dagster/partition": partition}))
    return [r.dagster_run for r in reversed(records) if r.dagster_run.is_finished]  # storage: newest first


def wait_for_runs(instance, job_name: str, partition: str, count: int) -> list[DagsterRun]:
    """Wait until `count` runs of `job_name` for `partition` have finished (a sensor starts them)."""
    deadline = time.monotonic() + SENSOR_TIMEOUT_S
    while time.monotonic() < deadline:
        runs = finished_runs(instance, job_name, partition)
        if len(runs) >= count:
            return runs
        time.sleep(2)
    raise AssertionError(f"no {count} finished {job_name} run(s) of {partition} within {SENSOR_TIMEOUT_S} s")


def latest_report(instance, date: str) -> dict:
    result = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("day_report"), asset_partitions=[date]), limit=1)
    return result.records[0].asset_materialization.metadata


def table_rows(value) -> dict:
    return {r.data[value.schema.columns[0].name]: r.data[value.schema.columns[1].name] for r in value.records}


@pytest.mark.timeout(SENSOR_TIMEOUT_S * 4 + 900)  # dagster dev may start for this test first
def test_a_failing_shard_retries_then_the_day_closes_partial(deployment, tmp_path):
    instance, root = deployment.instance, tmp_path / "data"
    # The broken shard's fetch-log folder is a plain file: every attempt fetches the shard and
    # then fails writing its fetch log (as on a full or broken disk).
    blocker = fetch_log_file(root, DAY, BROKEN).parent
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a folder\n")

    # The day's frontier launched without a driver, as from the UI or the nightly schedule:
    # the sensors fetch every shard, then close the day.
    (frontier,) = deployment.queue(root).run_all([daily_spec(frontier_job.name, DAY)], 1)
    assert frontier.succeeded
    runs = {shard: wait_for_runs(instance, fetch_job.name, f"{DAY}|{shard}", 1)[0] for shard in (GOOD, BROKEN)}
    assert {shard: run.tags["dagster/sensor_name"] for shard, run in runs.items()} == {
        GOOD: "fetch_after_frontier", BROKEN: "fetch_after_frontier"}
    assert {shard: run.tags[SHARD_TAG] for shard, run in runs.items()} == {GOOD: GOOD, BROKEN: BROKEN}
    assert runs[GOOD].status == DagsterRunStatus.SUCCESS
    assert runs[BROKEN].status == DagsterRunStatus.FAILURE
    retries = instance.all_logs(runs[BROKEN].run_id, of_type=DagsterEventType.STEP_UP_FOR_RETRY)
    assert len(retries) == FETCH_RETRIES  # tried three times in all

    (close,) = wait_for_runs(instance, day_close_job.name, DAY, 1)
    assert close.status == DagsterRunStatus.SUCCESS and close.tags["crawl/failed_shards"] == BROKEN
    # The day's downstream assets ran on what landed; their tables say how many rows they hold.
    registry = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("url_registry"), asset_partitions=[DAY]), limit=1)
    rows = registry.records[0].asset_materialization.metadata["dagster/row_count"].value
    assert rows == pq.read_metadata(url_registry_file(root, DAY)).num_rows > 0

    report = latest_report(instance, DAY)
    assert report["partial"].value is True and report["shards_landed"].value == 1
    assert report["missing_shards"].value == f"{BROKEN} (run {runs[BROKEN].run_id[:8]}: failure)"
    assert f"missing: {BROKEN} (run {runs[BROKEN].run_id[:8]}: failure)" in report["summary"].value
    landed = pq.read_table(fetch_log_file(root, DAY, GOOD))
    statuses = landed.column("status_class").to_pylist()
    assert table_rows(report["status_classes"]) == {c: statuses.count(c) for c in set(statuses)}
    # its own table: the day in one row, its columns the asset's column schema
    own = pq.read_table(day_report_dir(root, DAY) / "day_report.parquet")
    assert report["dagster/row_count"].value == own.num_rows == 1
    assert [c.name for c in report["dagster/column_schema"].schema.columns] == own.column_names
    assert own.to_pylist()[0]["pages_fetched"] == report["pages_fetched"].value == sum(
        status is not None for status in landed.column("status").to_pylist())
    timed = [row["host"] for row in landed.to_pylist() if row["fetched_at"] is not None]
    spacing = report["hosts_widest_spacing"].records  # hosts asked twice or more have a spacing
    assert {r.data["host"] for r in spacing} == {host for host in timed if timed.count(host) > 1}
    assert all(r.data["median_spacing_s"] >= deployment.settings.default_delay_s for r in spacing)
    png = Path(report["status_mix_png"].value)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert report["status_mix"].value.startswith("![Status mix up to ")
    rates = Path(report["change_rates_png"].value)  # change_stats ran in the close, before the report
    assert rates.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and rates.parent == png.parent

    # Repaired and run again: the sensor closes the day a second time, now complete.
    blocker.unlink()
    (rerun,) = deployment.queue(root).run_all([fetch_spec(DAY, BROKEN)], 1)  # as from the UI
    assert rerun.succeeded
    second = wait_for_runs(instance, day_close_job.name, DAY, 2)[-1]
    assert second.status == DagsterRunStatus.SUCCESS and "crawl/failed_shards" not in second.tags
    report = latest_report(instance, DAY)
    assert report["partial"].value is False and report["missing_shards"].value == "none"
    both = landed.column("status").to_pylist() + pq.read_table(fetch_log_file(root, DAY, BROKEN)).column("status").to_pylist()
    assert report["pages_fetched"].value == sum(status is not None for status in both)
