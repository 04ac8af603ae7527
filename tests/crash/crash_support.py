"""What the crash tests and bench/crash_rounds.py share: a prepared partition, the fetch
runner in a subprocess (run to the end, to a chosen death, or SIGKILLed after a while), and
the invariants every run must leave in the partition."""

import collections
import json
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from dagster import DagsterInstance, materialize
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.defs.assets import frontier_snapshot, seeds
from crawl_assets.storage.layout import fetch_log_file, warc_dir
from support import assert_warcio_check_passes, write_test_settings

DAY = "2026-11-29"
RUNNER = Path(__file__).with_name("fetch_runner.py")
CHECKPOINT_INTERVAL_S = 0.15


def prepared(folder: Path, web) -> tuple[Path, str, Path]:
    """Seeds and the day's frontier under folder; (settings json, shard with most URLs, root)."""
    resource = write_test_settings(folder, web.web, extra=f"checkpoint_interval_s = {CHECKPOINT_INTERVAL_S}\n")
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with DagsterInstance.ephemeral() as instance:
        materialize([seeds], instance=instance, resources={"crawl_settings": resource}, run_config=quiet)
        materialize([frontier_snapshot], instance=instance, resources={"crawl_settings": resource},
                    partition_key=DAY, run_config=quiet)
    root = resource.load().data_root
    sizes = {p.parent.name[6:]: pq.read_metadata(p).num_rows
             for p in (root / "frontier" / f"date={DAY}").glob("shard=*/frontier.parquet")}
    shard = max(sizes, key=sizes.get)
    config = folder / "settings.json"
    config.write_text(json.dumps(resource.model_dump()))
    return config, shard, root


def run(config: Path, shard: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUNNER), str(config), DAY, shard, *extra],
                          capture_output=True, text=True, timeout=300)


def kill_after(config: Path, shard: str, seconds: float) -> bool:
    """Start the runner and SIGKILL it after `seconds`; True if it had finished by then."""
    process = subprocess.Popen([sys.executable, str(RUNNER), str(config), DAY, shard],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        process.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        process.wait()
        return False


def final_state(root: Path, shard: str) -> dict:
    """What the partition holds, checked for the invariants every run must leave."""
    folder = warc_dir(root, DAY, shard)
    assert not list(folder.rglob("*.open")), "an unfinished WARC file was left"
    warcs = sorted(folder.glob("*.warc.gz"))
    assert_warcio_check_passes(*warcs)
    log = pq.read_table(fetch_log_file(root, DAY, shard)).to_pylist()
    urls = collections.Counter(row["url"] for row in log)
    assert max(urls.values()) == 1, [u for u, n in urls.items() if n > 1]
    for row in log:
        if row["warc_file"]:
            with open(folder / row["warc_file"], "rb") as handle:
                handle.seek(row["warc_offset"])
                record = next(iter(ArchiveIterator(handle)))
                assert record.rec_headers.get_header("WARC-Target-URI") == row["url"]
    return {"urls": set(urls), "warcs": warcs}


def page_requests(rows: list[dict], since: float) -> collections.Counter:
    return collections.Counter((r["host"], r["path"]) for r in rows
                               if r["start"] >= since and not r["path"].startswith("/robots.txt"))
