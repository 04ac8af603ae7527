"""Every bad input gets one sentence that names it and says what to do, at the command line and
as the Dagster run's failure, and nothing already crawled is changed."""

import errno
import importlib
import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster import DagsterEventType, DagsterRunStatus, instance_for_test, materialize

from crawl_assets.cli import cycle
from crawl_assets.crawler.archive.warc import stop_if_disk_full
from crawl_assets.crawler.crawl_errors import CrawlInputError
from crawl_assets.crawler.url_policy.seed_files import read_seed_files
from crawl_assets.crawler.url_policy.url_bloom import build_filter, load_filter, save_filter
from crawl_assets.defs.assets import fetch_batch, frontier_snapshot, seeds
from crawl_assets.defs.partitions import fetch_partition_key
from crawl_assets.defs.run_launcher import CheckRunHealthResult, WorkerStatus, process_gone
from crawl_assets.defs.resources import CrawlSettingsResource
from crawl_assets.pipeline.crawl_history import history_before
from crawl_assets.pipeline.fetch_step import load_seen_filter
from crawl_assets.storage.layout import fetch_log_file, frontier_file, seeds_file, seen_filter_file
from crawl_files import fetch_row, settings_for, write_fetch_log, write_seeds

DAY, DAY_BEFORE = "2026-11-29", "2026-11-28"


def resources_for(tmp_path: Path) -> dict:
    return {"crawl_settings": CrawlSettingsResource(data_root=str(tmp_path / "data"),
                                                    seeds_dir=str(tmp_path / "seeds"), settings_files=[])}


def failure_of(result) -> str:
    (event,) = result.get_step_failure_events()
    data = event.step_failure_data
    return data.user_failure_data.description if data.user_failure_data else data.error.message


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("files", [{}, {"empty.txt": "", "comments.txt": "# nothing yet\n\n"}])
def test_no_seed_at_all_fails_the_command_at_once(files, capsys, tmp_path, monkeypatch):
    seeds_dir = tmp_path / "seeds"
    seeds_dir.mkdir()
    for name, text in files.items():
        (seeds_dir / name).write_text(text)
    overlay = tmp_path / "root.toml"
    overlay.write_text(f'[crawl]\ndata_root = "{tmp_path / "data"}"\nseeds_dir = "{seeds_dir}"\n')
    monkeypatch.setenv("RECRAWL_SETTINGS", str(overlay))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert cycle.main(["--date", DAY]) == 1
    err = capsys.readouterr().err
    assert err == (f"cycle failed: no seed URL for {DAY}, the crawl's first day: {seeds_dir} holds no *.txt file "
                   "with a valid URL: put one URL a line in a .txt file there, then run this day again\n")
    assert not (tmp_path / "home").exists()  # refused before any service started


def test_no_seed_fails_the_first_day_frontier_launched_from_the_ui(tmp_path):
    resources = resources_for(tmp_path)  # the seeds folder does not even exist
    with instance_for_test() as instance:
        result = materialize([seeds, frontier_snapshot], instance=instance, resources=resources,
                             partition_key=DAY, raise_on_error=False)
    assert not result.success
    assert failure_of(result).startswith(f"no seed URL for {DAY}, the crawl's first day: {tmp_path / 'seeds'}")
    assert not frontier_file(tmp_path / "data", DAY, "s00").exists()


def test_bad_seed_lines_are_printed_before_the_runs_and_fail_the_exit_status(tmp_path):
    settings = settings_for(tmp_path / "data")
    settings.seeds_dir.mkdir(parents=True)
    (settings.seeds_dir / "s.txt").write_bytes(b"http://a.example/\nhttp://[::1]/\nhttp://b.example/\xff\n")
    printed = []
    assert cycle.check_seed_files(settings, DAY, printed.append) == 2
    assert [line.split(": ")[0] for line in printed] == [f"skipped seed line {settings.seeds_dir}/s.txt:2",
                                                        f"skipped seed line {settings.seeds_dir}/s.txt:3"]
    assert "::1 is not a public address" in printed[0] and "not UTF-8 text" in printed[1]
    report = cycle.CycleReport(DAY, None, (), None, 1.0, skipped_seed_lines=2)
    assert report.failed and report.summary().endswith(
        "; 2 seed line(s) skipped (listed above): correct or remove them in the seed files")


def test_a_partial_day_names_its_failed_runs_and_the_command_that_retries_them(tmp_path):
    from dagster import DagsterRunStatus

    from crawl_assets.cli.launcher import RunOutcome

    def outcome(shard, status):
        return RunOutcome(f"run-of-{shard}-and-more", cycle.fetch_spec(DAY, shard).label, status, 1.0, 2.0)

    fetches = (outcome("s00", DagsterRunStatus.FAILURE), outcome("s01", DagsterRunStatus.SUCCESS),
               outcome("s02", DagsterRunStatus.CANCELED))
    report = cycle.CycleReport(DAY, None, fetches, None, 3.0)
    assert report.failed_shards == ["s00", "s02"]
    assert report.summary().endswith(
        "; PARTIAL, shards that failed: s00 (run run-of-s), s02 (run run-of-s) (their sentences are above); "
        f"retry them: python -m crawl_assets.cli.cycle --date {DAY} --shards s00,s02")


class FakeQueue:
    """A run queue whose runs end as `outcomes` say (a status a shard), recorded in a test instance
    as the fetch runs of those partitions; the frontier succeeds, a close must not be asked for."""

    def __init__(self, instance, outcomes):
        from crawl_assets.definitions import defs

        self.instance, self.outcomes, self.job = instance, outcomes, defs.resolve_job_def("fetch_job")

    def run_all(self, specs, parallel, progress):
        from crawl_assets.cli.launcher import RunOutcome

        done = []
        for spec in specs:
            assert not spec.label.startswith("day_close_job"), "a day where no shard landed was closed"
            status = self.outcomes.get(spec.tags.get("dagster/partition/shard"), DagsterRunStatus.SUCCESS)
            run = self.instance.create_run_for_job(self.job, tags=spec.tags)
            if status == DagsterRunStatus.FAILURE:  # as run monitoring marks a run whose process died
                health = CheckRunHealthResult(WorkerStatus.FAILED, process_gone(4242))
                self.instance.report_run_failed(run, f"Detected run worker status {health}. Marking run "
                                                     f"{run.run_id} as failed.")
            else:
                self.instance.report_run_canceled(run) if status == DagsterRunStatus.CANCELED else None
            done.append(RunOutcome(run.run_id, spec.label, status, 1.0, 2.0))
        return done


def test_a_day_whose_every_shard_failed_is_not_closed_and_names_the_runs_and_the_retry_command():
    """It closed, and the close failed with "no fetch log up to D: materialise fetch_log for D
    first", the wrong remedy; a killed run's line said only "see it in the UI"."""
    lines = []
    with instance_for_test() as instance:
        queue = FakeQueue(instance, {"s00": DagsterRunStatus.FAILURE, "s01": DagsterRunStatus.CANCELED})
        with pytest.raises(cycle.CycleFailed) as failed:
            cycle.submit_cycle(DAY, queue, ["s00", "s01"], 2, lines.append)
        runs = {r.dagster_run.tags["dagster/partition/shard"]: r.dagster_run.run_id[:8]
                for r in instance.get_run_records() if "dagster/partition/shard" in r.dagster_run.tags}
    assert lines == [f"fetch_job[{DAY}|s00] failed (run {runs['s00']}): {process_gone(4242)}",
                     f"fetch_job[{DAY}|s01] failed (run {runs['s01']}): terminated (Ctrl-C of a cycle command, "
                     "or Terminate in the UI) before it finished"]
    assert str(failed.value) == (
        f"no shard of {DAY} landed, every fetch run failed: s00 (run {runs['s00']}: failure), s01 (run {runs['s01']}: "
        "canceled); the day is not closed on nothing: fix what their failures say, then retry them: "
        f"python -m crawl_assets.cli.cycle --date {DAY} --shards s00,s01 (or launch their fetch_job runs again in "
        "the UI: the day closes after them)")


def test_a_failed_close_prints_the_underlying_sentence(tmp_path):
    from dagster import AssetKey

    from crawl_assets.defs.assets import ALL_ASSETS

    with instance_for_test() as instance:  # no fetch log at all: change_stats cannot run
        result = materialize(ALL_ASSETS, selection=[AssetKey("change_stats")], partition_key=DAY,
                             instance=instance, resources=resources_for(tmp_path), raise_on_error=False)
        reason = cycle.failure_reason(instance, result.run_id)
    assert reason == (f"no fetch log up to {DAY} under {tmp_path / 'data' / 'fetch_log'}: "
                      f"materialise fetch_log for {DAY} first")


def test_an_unreadable_seed_file_is_named_and_the_seed_table_is_kept(tmp_path):
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "good.txt").write_text("http://a.example/\n")
    resources = resources_for(tmp_path)
    with instance_for_test() as instance:
        assert materialize([seeds], instance=instance, resources=resources).success
        before = tree_bytes(tmp_path / "data")
        (tmp_path / "seeds" / "broken.txt").mkdir()  # unreadable as a file, even for root
        result = materialize([seeds], instance=instance, resources=resources, raise_on_error=False)
    message = failure_of(result)
    assert "seed file" in message and "broken.txt" in message and "make it readable" in message
    assert tree_bytes(tmp_path / "data") == before
    with pytest.raises(CrawlInputError, match="broken.txt"):
        read_seed_files(tmp_path / "seeds")


@pytest.mark.parametrize("argv, words", [
    (["--date", "2099-01-01"], ["2099-01-01 is after today's partition", "once it has begun"]),
    (["--date", "2026-13-40"], ["--date '2026-13-40' is not a date", "YYYY-MM-DD"]),
    (["--date", "2000-01-01"], ["2000-01-01 is before the crawl's start_date", "recrawl.toml"]),
    (["--date", "2026-11-20", "--until", "2026-11-10"], ["--until 2026-11-10 is before --date"]),
])
def test_a_date_outside_the_partitions_is_one_sentence_and_exit_status_1(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert cycle.main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert all(word in err for word in words), err
    assert not (tmp_path / "home").exists()  # refused before any service started


def test_a_day_after_one_that_never_closed_is_refused_at_once(capsys, tmp_path, monkeypatch):
    overlay = tmp_path / "root.toml"
    overlay.write_text(f'[crawl]\ndata_root = "{tmp_path / "data"}"\n')
    monkeypatch.setenv("RECRAWL_SETTINGS", str(overlay))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    frontier = frontier_file(tmp_path / "data", "2026-11-19", "s00")  # started, never closed
    frontier.parent.mkdir(parents=True)
    pq.write_table(pa.table({"url": ["http://a.example/"]}), frontier)
    assert cycle.main(["--date", "2026-11-20"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "2026-11-19 was started but has not closed" in err and "--date 2026-11-19" in err, err
    assert not (tmp_path / "home").exists()  # refused before any service started


def test_a_day_before_the_crawls_newest_is_refused_at_once(capsys, tmp_path, monkeypatch):
    overlay = tmp_path / "root.toml"
    overlay.write_text(f'[crawl]\ndata_root = "{tmp_path / "data"}"\n')
    monkeypatch.setenv("RECRAWL_SETTINGS", str(overlay))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    frontier = frontier_file(tmp_path / "data", "2026-12-02", "s00")  # the crawl has reached 2026-12-02
    frontier.parent.mkdir(parents=True)
    pq.write_table(pa.table({"url": ["http://a.example/"]}), frontier)
    for argv in (["--date", "2026-11-28"], ["--date", "2026-11-28", "--refetch"]):
        assert cycle.main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert "2026-11-28 is before 2026-12-02, the newest day this crawl has started" in err, err
        assert "start a new data root" in err, err
    assert not (tmp_path / "home").exists()  # refused before any service started
    assert not (tmp_path / "data" / "frontier" / "date=2026-11-28").exists()


def test_a_truncated_or_corrupt_seen_filter_is_named(tmp_path):
    path = seen_filter_file(tmp_path, DAY_BEFORE)
    save_filter(build_filter([f"http://a.example/{n}" for n in range(100)], 100), path)
    assert "http://a.example/7" in load_seen_filter(tmp_path, DAY)
    whole = path.read_bytes()
    for broken in (whole[:-1], whole[:50], b"\xff" * 8 + whole[8:]):
        path.write_bytes(broken)
        with pytest.raises(CrawlInputError, match="seen-URL filter .*seen_urls.bloom.*seen_url_filter for 2026-11-28"):
            load_seen_filter(tmp_path, DAY)
    path.with_name(path.name + ".sha256").unlink()  # a filter saved before checksums: rbloom's own check
    path.write_bytes(b"")
    with pytest.raises(CrawlInputError, match="cannot be read"):
        load_filter(path)


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_corrupt_parquet_file_of_an_earlier_day_fails_the_run_once_and_names_it(tmp_path, damage):
    root = tmp_path / "data"
    write_seeds(root, ["http://a.example/"])
    write_fetch_log(root, DAY_BEFORE, [fetch_row("http://a.example/", "2026-11-28T10:00:00")])
    log = fetch_log_file(root, DAY_BEFORE, "s00")
    whole = log.read_bytes()
    log.write_bytes(whole[: len(whole) // 2] if damage == "truncated" else b"not parquet at all" * 10)
    before = tree_bytes(root)
    with pytest.raises(CrawlInputError, match=r"fetch_log.parquet is corrupt or truncated .*fetch_log 2026-11-28\|s00 again"):
        history_before(root, DAY)
    with instance_for_test() as instance:
        result = materialize([frontier_snapshot], instance=instance, resources=resources_for(tmp_path),
                             partition_key=DAY, raise_on_error=False)
    assert not result.success and "fetch_log.parquet is corrupt or truncated" in failure_of(result)
    assert tree_bytes(root) == before  # no frontier written, the damaged file left for a person


def test_a_fetch_log_truncated_after_its_day_closed_is_named_as_damaged(capsys, tmp_path, monkeypatch):
    import os

    from crawl_assets.pipeline.day_order import CLOSE_OUTPUTS

    root = tmp_path / "data"
    write_fetch_log(root, DAY_BEFORE, [fetch_row("http://a.example/", "2026-11-28T10:00:00")])
    frontier = frontier_file(root, DAY_BEFORE, "s00")
    frontier.parent.mkdir(parents=True)
    pq.write_table(pa.table({"url": ["http://a.example/"]}), frontier)
    log = fetch_log_file(root, DAY_BEFORE, "s00")
    closed_at = log.stat().st_mtime + 1
    for file_of in CLOSE_OUTPUTS.values():  # the day closed after its fetch
        file_of(root, DAY_BEFORE).parent.mkdir(parents=True, exist_ok=True)
        file_of(root, DAY_BEFORE).write_bytes(b"closed")
        os.utime(file_of(root, DAY_BEFORE), (closed_at, closed_at))
    log.write_bytes(log.read_bytes()[:100])  # then the log was cut short
    os.utime(log, (closed_at + 1, closed_at + 1))
    overlay = tmp_path / "root.toml"
    overlay.write_text(f'[crawl]\ndata_root = "{root}"\n')
    monkeypatch.setenv("RECRAWL_SETTINGS", str(overlay))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert cycle.main(["--date", DAY]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cycle failed: {log} is corrupt or truncated (") and err.count("\n") == 1, err
    assert "materialise fetch_log 2026-11-28|s00 again" in err and "has not closed" not in err, err
    assert not (tmp_path / "home").exists()


def test_a_data_root_moved_elsewhere_has_its_catalog_rebuilt_over_the_new_folder(capsys, tmp_path):
    import shutil

    from crawl_assets.analyst import sql
    from crawl_assets.pipeline.catalog_step import build_catalog

    old, new = tmp_path / "old" / "data", tmp_path / "new" / "data"
    write_seeds(old, ["http://a.example/"])
    write_fetch_log(old, DAY, [fetch_row("http://a.example/", "2026-11-29T10:00:00")])
    build_catalog(old, old / "crawl.duckdb")
    shutil.copytree(old, new)
    write_fetch_log(new, DAY, [fetch_row("http://b.example/", "2026-11-29T11:00:00")], shard="s01")
    shutil.rmtree(old)  # moved, not copied
    query = "SELECT string_agg(url, ' ' ORDER BY url) AS urls FROM fetches"
    assert sql.main(["--catalog", str(new / "crawl.duckdb"), query]) == 0
    out, err = capsys.readouterr()
    assert "http://a.example/ http://b.example/" in out, out  # the new folder's files, both of them
    assert err == f"sql: {new / 'crawl.duckdb'} was built over {old}: rebuilt it over its own folder\n"
    assert sql.main(["--catalog", str(new / "crawl.duckdb"), query]) == 0
    assert capsys.readouterr().err == ""  # rebuilt once


def test_a_missing_frontier_fails_the_fetch_batch_once_without_retries(tmp_path):
    settings = settings_for(tmp_path / "data")
    write_seeds(settings.data_root, ["http://a.example/"])
    key = fetch_partition_key(DAY, "s00")
    with instance_for_test() as instance:
        result = materialize([fetch_batch], instance=instance, resources=resources_for(tmp_path),
                             partition_key=key, raise_on_error=False)
        events = instance.all_logs(result.run_id)
    assert "frontier.parquet is missing: materialise frontier_snapshot for 2026-11-29 first" in failure_of(result)
    kinds = [e.dagster_event.event_type for e in events if e.dagster_event]
    assert DagsterEventType.STEP_UP_FOR_RETRY not in kinds and kinds.count(DagsterEventType.STEP_START) == 1


def test_an_unreadable_checkpoint_is_named_with_what_to_do(tmp_path):
    from crawl_assets.crawler.batches.arrow_schemas import FRONTIER_SCHEMA
    from crawl_assets.pipeline.fetch_step import CHECKPOINT_DIR, FetchInputs, run_fetch_step

    folder = tmp_path / "warc"
    (folder / CHECKPOINT_DIR).mkdir(parents=True)
    (folder / CHECKPOINT_DIR / "state.json").write_text('{"sequence": 3, "finis')  # cut short by hand
    with pytest.raises(CrawlInputError, match=r"checkpoint .*state.json cannot be read .*delete the folder"):
        run_fetch_step(settings_for(tmp_path), "s00", FetchInputs(FRONTIER_SCHEMA.empty_table()), folder, "t")


def run_events(instance, run_id) -> list:
    return [e.dagster_event.event_type for e in instance.all_logs(run_id) if e.dagster_event]


def raw_enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def warc_writer_enospc(settings, shard, inputs, folder, *args, **kwargs):
    stop_if_disk_full(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), folder)


@pytest.mark.parametrize("patched, failing", [("write_parquet_atomic", raw_enospc),
                                              ("run_fetch_step", warc_writer_enospc)])
def test_a_full_disk_fails_the_fetch_batch_at_once_with_its_sentence(tmp_path, monkeypatch, patched, failing):
    from crawl_assets.crawler.batches.arrow_schemas import FRONTIER_SCHEMA
    from crawl_assets.defs.assets import fetch as fetch_module

    root = tmp_path / "data"
    frontier = frontier_file(root, DAY, "s00")
    frontier.parent.mkdir(parents=True)
    pq.write_table(FRONTIER_SCHEMA.empty_table(), frontier)  # nothing to fetch: no network
    monkeypatch.setattr(fetch_module, patched, failing)
    with instance_for_test() as instance:
        result = materialize([fetch_batch], instance=instance, resources=resources_for(tmp_path),
                             partition_key=fetch_partition_key(DAY, "s00"), raise_on_error=False)
        reason = cycle.failure_reason(instance, result.run_id)
        kinds = run_events(instance, result.run_id)
    assert reason.startswith("the disk holding ") and " is full (No space left on device): " in reason, reason
    assert ("free some space there, then materialise fetch_batch for 2026-11-29|s00 again" in reason
            or "the fetch batch stopped at its last checkpoint; free some space and run it again" in reason), reason
    assert DagsterEventType.STEP_UP_FOR_RETRY not in kinds and kinds.count(DagsterEventType.STEP_START) == 1


def test_a_full_disk_in_the_close_prints_the_disk_full_sentence(tmp_path, monkeypatch):
    from dagster import AssetKey

    from crawl_assets.defs.assets import ALL_ASSETS

    change_stats_module = importlib.import_module("crawl_assets.defs.assets.change_stats")  # not the asset

    def full(*args, **kwargs):  # as DuckDB says it (an OSError is the fetch test's)
        raise duckdb.IOException('IO Error: Could not write file "x.tmp": No space left on device')

    monkeypatch.setattr(change_stats_module, "estimate_changes", full)  # DuckDB spills, then writes
    write_fetch_log(tmp_path / "data", DAY, [fetch_row("http://a.example/", "2026-11-29T10:00:00")])
    with instance_for_test() as instance:
        result = materialize(ALL_ASSETS, selection=[AssetKey("change_stats")], partition_key=DAY,
                             instance=instance, resources=resources_for(tmp_path), raise_on_error=False)
        reason = cycle.failure_reason(instance, result.run_id)
    assert reason == (f"the disk holding {tmp_path / 'data'} is full (No space left on device): "
                      f"free some space there, then materialise change_stats for {DAY} again")


@pytest.mark.parametrize("refused", ["an OSError naming its file", "DuckDB naming no file"])
def test_a_full_disk_names_the_folder_when_the_data_root_comes_from_the_settings_files(tmp_path, monkeypatch,
                                                                                         refused):
    """The resource left at its default (make ui, the nightly schedule) has no data_root of its
    own: the sentence named "the disk holding None"."""
    from dagster import AssetKey

    from crawl_assets.defs.assets import ALL_ASSETS

    folder = tmp_path / "data" / "change_stats" / f"date={DAY}"

    def full(*args, **kwargs):
        if refused == "an OSError naming its file":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder / "url_state_base.parquet"))
        raise duckdb.IOException("IO Error: No space left on device")

    monkeypatch.setattr(importlib.import_module("crawl_assets.defs.assets.change_stats"), "estimate_changes", full)
    write_fetch_log(tmp_path / "data", DAY, [fetch_row("http://a.example/", "2026-11-29T10:00:00")])
    overlay = tmp_path / "root.toml"
    overlay.write_text(f'[crawl]\ndata_root = "{tmp_path / "data"}"\n')
    resources = {"crawl_settings": CrawlSettingsResource(settings_files=[str(overlay)])}
    with instance_for_test() as instance:
        result = materialize(ALL_ASSETS, selection=[AssetKey("change_stats")], partition_key=DAY,
                             instance=instance, resources=resources, raise_on_error=False)
        reason = cycle.failure_reason(instance, result.run_id)
    where = folder if refused == "an OSError naming its file" else tmp_path / "data"
    assert reason == (f"the disk holding {where} is full (No space left on device): "
                      f"free some space there, then materialise change_stats for {DAY} again")


def test_dedup_without_fetch_logs_names_what_to_materialise_first(tmp_path):
    from dagster import AssetKey

    from crawl_assets.defs.assets import ALL_ASSETS

    with instance_for_test() as instance:
        result = materialize(ALL_ASSETS, selection=[AssetKey("simhash_index")], partition_key=DAY,
                             instance=instance, resources=resources_for(tmp_path), raise_on_error=False)
        reason = cycle.failure_reason(instance, result.run_id)
    assert reason == (f"no fetch logs under {tmp_path / 'data' / 'fetch_log'} up to {DAY}: "
                      "materialise fetch_log first")


def test_every_asset_fails_with_its_crawl_error_sentence():
    from crawl_assets.defs.assets import ALL_ASSETS
    from crawl_assets.defs.assets.failures import fails_with_crawl_errors

    wrapper = fails_with_crawl_errors(lambda: None).__code__
    unwrapped = [a.op.name for a in ALL_ASSETS if a.op.compute_fn.decorated_fn.__code__ is not wrapper]
    assert unwrapped == []
