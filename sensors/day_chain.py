"""The day's chain when no driver submits it: a landed frontier starts the fetch batch of every
shard; once every shard of a day has finished (landed, or failed after its retries), the day
closes on what landed (day_close_job). Runs tagged by a driver (`make crawl`) and runs of a
backfill are left alone: the driver, or the backfill, launches their next stage itself.

A run launched over another data root than the settings' (run config of crawl_settings, as a
backfill or a test passes it) passes that config on to the runs it starts, so the day's fetch and
close read and write where its frontier was built, not in the settings' root.

Both sensors read the instance's event log from a cursor (the last storage id seen), so each
materialisation is acted on once; run keys make a repeated request harmless.
"""

from __future__ import annotations

import json

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterInstance,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from crawl_assets.defs.assets.fetch import FETCH_LOG, REFETCH_TAG
from crawl_assets.defs.assets.frontier import KEPT_METADATA
from crawl_assets.defs.jobs import DRIVER_TAG, day_close_job, fetch_job
from crawl_assets.defs.partitions import (
    SHARD_KEYS, fetch_partition_key, fetch_partitions, partition_tags, split_fetch_key,
)
from crawl_assets.defs.run_status import failed_fetch_runs, landed_shards, latest_fetch_run, no_shard_landed

from .pace import DAY_CHAIN_INTERVAL_S

BATCH = 100  # event records read per tick
BACKFILL_TAG = "dagster/backfill"  # on every run a backfill launches (UI, `dagster asset backfill`)


def _new_materialisations(instance: DagsterInstance, asset: str, cursor: int | None):
    """([(record, its run or None)] of runs nobody else follows up, the last storage id read)."""
    result = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(asset), after_storage_id=cursor), limit=BATCH, ascending=True)
    undriven = []
    for record in result.records:
        run = instance.get_run_by_id(record.run_id) if record.run_id else None
        if run is None or not {DRIVER_TAG, BACKFILL_TAG} & set(run.tags):
            undriven.append((record, run))
    last = result.records[-1].storage_id if result.records else cursor
    return undriven, last


def settings_config(run_config: dict) -> dict:
    """The crawl_settings part of a run's config (its data root, seeds), to run the day's next
    stage with; {} for a run on the settings' own."""
    settings = (run_config or {}).get("resources", {}).get("crawl_settings")
    return {"resources": {"crawl_settings": settings}} if settings else {}


def _kept(record) -> bool:
    """A re-run that kept a fetched day's frontier (defs/assets/frontier.py): nothing to fetch."""
    value = record.asset_materialization.metadata.get(KEPT_METADATA)
    return bool(value is not None and value.value)


@sensor(job=fetch_job, default_status=DefaultSensorStatus.RUNNING, minimum_interval_seconds=DAY_CHAIN_INTERVAL_S)
def fetch_after_frontier(context: SensorEvaluationContext):
    """frontier_snapshot[D] landed: fetch_job[D|s] for every shard s (each run carries its
    shard tag, so dagster.yaml's one-run-per-shard limit holds). A frontier kept by a re-run
    starts nothing; one built by a refetch of the day passes the refetch on to every shard."""
    cursor = int(context.cursor) if context.cursor else None
    records, last = _new_materialisations(context.instance, "frontier_snapshot", cursor)
    requests = []
    for record, run in records:
        if _kept(record):
            continue
        refetch = {REFETCH_TAG: "true"} if run is not None and run.tags.get(REFETCH_TAG) == "true" else {}
        config = settings_config(run.run_config) if run is not None else {}
        for shard in SHARD_KEYS:
            key = str(fetch_partition_key(record.partition_key, shard))
            requests.append(RunRequest(run_key=f"fetch-{key}-after-{record.storage_id}", partition_key=key,
                                       tags=partition_tags(fetch_partitions, key) | refetch, run_config=config))
    return SensorResult(run_requests=requests, cursor=str(last) if last is not None else None)


@sensor(job=day_close_job, default_status=DefaultSensorStatus.RUNNING, minimum_interval_seconds=DAY_CHAIN_INTERVAL_S)
def close_day_after_fetch(context: SensorEvaluationContext):
    """A day with a landed fetch batch stays open until every shard's latest fetch run has
    finished; then day_close_job[D] runs on what landed (its day_report says which shards
    are missing: a partial day). A day where no shard landed (every run failed) stays open, and
    the tick says which runs failed and how to retry them; a shard landing later closes it."""
    state = json.loads(context.cursor) if context.cursor else {"after": None, "open": []}
    records, state["after"] = _new_materialisations(context.instance, "fetch_log", state["after"])
    open_days = sorted(set(state["open"]) | {split_fetch_key(r.partition_key)[0] for r, _ in records})
    requests, still_open, nothing_landed = [], [], []
    for date in open_days:
        runs = [latest_fetch_run(context.instance, date, shard) for shard in SHARD_KEYS]
        if not all(run is not None and run.is_finished for run in runs):
            still_open.append(date)
            continue
        failed = failed_fetch_runs(context.instance, date, SHARD_KEYS)
        landed = landed_shards(context.instance, date, SHARD_KEYS)
        if not landed:
            still_open.append(date)
            nothing_landed.append(no_shard_landed(date, failed))
            continue
        landed_run = next(run for shard, run in zip(SHARD_KEYS, runs) if shard == landed[0])
        requests.append(RunRequest(run_key=f"close-{date}-{state['after']}", partition_key=date,
                                   tags={"crawl/failed_shards": ",".join(sorted(failed))} if failed else {},
                                   run_config=settings_config(landed_run.run_config)))  # where it was fetched
    state["open"] = still_open
    for sentence in nothing_landed:
        context.log.info(sentence)
    return SensorResult(run_requests=requests, cursor=json.dumps(state),
                        skip_reason=" ".join(nothing_landed) if nothing_landed and not requests else None)
