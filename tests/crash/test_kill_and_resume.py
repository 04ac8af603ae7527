"""A fetch batch SIGKILLed at chosen and at random points, then run again, ends with what an
uninterrupted run of the same partition has: the same URLs, each with exactly one final row,
every WARC file valid (warcio check) and every row's record where the row says, no
"*.open" file left, and no URL fetched twice beyond those in flight at a kill."""

import json
import os
import random
import signal
import time

import pyarrow.parquet as pq
import pytest

from crash_support import (CHECKPOINT_INTERVAL_S, DAY, final_state, kill_after, page_requests, prepared,
                           run)
from crawl_assets.crawler.batches.checkpoint import STATE_FILE
from crawl_assets.pipeline.fetch_step import CHECKPOINT_DIR
from crawl_assets.storage.layout import fetch_log_file, frontier_file, warc_dir
from support import TEST_DELAY_S, DemoWebProcess

ROUNDS = int(os.environ.get("RECRAWL_CRASH_ROUNDS", "6"))  # random kill points


def test_killed_at_each_kind_of_point_and_at_random_the_rerun_loses_nothing(tmp_path):
    with DemoWebProcess(hosts=4, pages_per_host=50) as server:
        config, shard, root = prepared(tmp_path / "killed", server)
        baseline_config, _, baseline_root = prepared(tmp_path / "baseline", server)
        frontier_urls = set(pq.read_table(frontier_file(root, DAY, shard))["url"].to_pylist())
        assert run(baseline_config, shard).returncode == 0

        started = time.time()
        kills = 0
        # The points needing most work first: a faster machine writes fewer checkpoints in what
        # is left of the batch (the sixth checkpoint after four kills was past its end on CI).
        for point in ("warc:5", "checkpoint:6", "checkpoint:2", "parquet:3", "warc:40"):
            died = run(config, shard, "--die-at", point)
            assert died.returncode == -signal.SIGKILL, (point, died.stderr[-2000:])
            kills += 1
        state_file = warc_dir(root, DAY, shard) / CHECKPOINT_DIR / STATE_FILE
        assert json.loads(state_file.read_text())["sequence"] > 1  # the kills left checkpoints behind
        rng = random.Random(11)
        for _ in range(ROUNDS):
            if json.loads(state_file.read_text())["finished"]:
                break  # a round ran to the end before its kill
            kill_after(config, shard, rng.uniform(1.0, 3.0))
            kills += 1
        finished = run(config, shard)
        assert finished.returncode == 0, finished.stderr[-3000:]
        rows = server.stop()

    baseline, resumed = final_state(baseline_root, shard), final_state(root, shard)
    assert frontier_urls <= baseline["urls"] and len(baseline["urls"]) > len(frontier_urls)
    assert resumed["urls"] == baseline["urls"]
    # Fetched twice: only pages in flight at a kill or finished after the last checkpoint
    # before it (one checkpoint interval of work per host at most).
    twice = sum(n - 1 for n in page_requests(rows, started).values() if n > 1)
    hosts = len({url.split("/")[2] for url in resumed["urls"]})
    per_interval = int(CHECKPOINT_INTERVAL_S / TEST_DELAY_S) + 2
    print(f"crash rounds: kills={kills} urls={len(resumed['urls'])} fetched_again={twice}")
    assert twice <= kills * hosts * per_interval


def test_a_full_disk_stops_the_batch_cleanly_and_a_rerun_resumes(tmp_path, monkeypatch):
    """The WARC writer's file fails with ENOSPC at a chosen byte: the batch raises BatchStopped
    with the sentence, keeps its last checkpoint, and a rerun (space freed) completes it."""
    import errno
    import io

    from crawl_assets.crawler.archive import warc as warc_module
    from crawl_assets.crawler.crawl_errors import BatchStopped
    from crawl_assets.pipeline.fetch_step import fetch_inputs, run_fetch_step

    limit = {"bytes": 60_000}

    class FillingFile(io.FileIO):
        def write(self, data):
            if checkpoint_holds_records():  # the disk fills once a checkpoint holds progress
                limit["bytes"] -= len(data)
            if limit["bytes"] < 0:
                raise OSError(errno.ENOSPC, "No space left on device")
            return super().write(data)

    real_open = open

    def checkpoint_holds_records() -> bool:
        # A quiet machine writes 60 KB before the first checkpoint (every 0.15 s) is taken.
        state_file = folder / CHECKPOINT_DIR / STATE_FILE
        return state_file.exists() and bool(json.loads(state_file.read_text())["record_parts"])

    def open_on_a_small_disk(path, mode="r", *args, **kwargs):
        if "w" in mode and str(path).endswith(".open"):
            return io.BufferedWriter(FillingFile(path, "w"))
        return real_open(path, mode, *args, **kwargs)

    with DemoWebProcess(hosts=3, pages_per_host=30) as server:
        config, shard, root = prepared(tmp_path, server)
        from crawl_assets.defs.resources import CrawlSettingsResource

        settings = CrawlSettingsResource(**json.loads(config.read_text())).load()
        folder = warc_dir(root, DAY, shard)
        monkeypatch.setattr(warc_module, "open", open_on_a_small_disk, raising=False)
        with pytest.raises(BatchStopped, match=r"is full .*free some space and run it again to resume"):
            run_fetch_step(settings, shard, fetch_inputs(root, DAY, shard, settings), folder, "full")
        state = json.loads((folder / CHECKPOINT_DIR / STATE_FILE).read_text())
        assert state["record_parts"] and not state["finished"]
        assert list(folder.glob("*.open"))  # left for the resume to cut back

        monkeypatch.undo()  # space freed
        result = run_fetch_step(settings, shard, fetch_inputs(root, DAY, shard, settings), folder, "after")
        server.stop()
    from crawl_assets.storage.layout import write_parquet_atomic

    write_parquet_atomic(result.fetch_log, fetch_log_file(root, DAY, shard))
    after = final_state(root, shard)
    assert any(p.name.startswith("full") for p in after["warcs"])  # the first attempt's records kept
    assert result.counts.fetched == len(after["urls"]) > 60


def test_a_truncated_warc_file_of_an_earlier_attempt_is_set_aside_and_its_urls_fetched_again(tmp_path):
    with DemoWebProcess(hosts=3, pages_per_host=30) as server:
        config, shard, root = prepared(tmp_path, server)
        assert run(config, shard, "--die-at", "checkpoint:5").returncode == -signal.SIGKILL
        folder = warc_dir(root, DAY, shard)
        state = json.loads((folder / CHECKPOINT_DIR / STATE_FILE).read_text())
        (name, length), *_ = state["warc_lengths"].items()
        damaged = folder / name if (folder / name).exists() else folder / (name + ".open")
        damaged.write_bytes(damaged.read_bytes()[: length // 2])  # something cut it short
        finished = run(config, shard)
        assert finished.returncode == 0, finished.stderr[-3000:]
        server.stop()
    after = final_state(root, shard)
    assert (folder / "damaged" / (name + ".damaged")).exists()  # kept for a person, out of the day's files
    log = pq.read_table(fetch_log_file(root, DAY, shard)).to_pylist()
    assert name not in {row["warc_file"] for row in log}
    assert len(after["urls"]) > 60
