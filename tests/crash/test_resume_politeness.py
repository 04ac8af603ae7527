"""Politeness holds across a crash: a fetch batch SIGKILLed while its hosts wait out their delay
resumes with what was left of each host's wait, so the demo web's own access log shows every
host's requests, those of both runs together, at least the delay apart.

Each host has one page and a delay of 6 s: the batch asks robots.txt and is killed with at
least 2.4 s of every host's delay still to wait; the batch run again asks robots.txt afresh
and then the page. The run again is a process started ahead (waiting_runner.py: its imports
done, it reads the partition once told to go), so it resumes in a fraction of the wait left
(0.2 s on a busy machine), and a batch that forgot the waits would ask at once, well inside
the delay."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from dagster import DagsterInstance, materialize

from crash_support import DAY, final_state
from crawl_assets.crawler.batches.checkpoint import STATE_FILE
from crawl_assets.defs.assets import frontier_snapshot, seeds
from crawl_assets.pipeline.fetch_step import CHECKPOINT_DIR
from crawl_assets.storage.layout import warc_dir
from support import DemoWebProcess, assert_polite, write_test_settings
from waiting_runner import READY

DELAY_S = 6.0
WAITING_RUNNER = Path(__file__).with_name("waiting_runner.py")


def prepared(folder, web):
    """Seeds and the day's frontier under a delay of DELAY_S and one page a host: (settings
    json, shard, root, the shard's hosts). The shard with the most hosts."""
    base = write_test_settings(folder, web.web, extra="checkpoint_interval_s = 0.1\n")
    slow = folder / "slow.toml"
    slow.write_text(f"[crawl]\ndefault_delay_s = {DELAY_S}\nmax_pages_per_host = 1\n")
    resource = base.model_copy(update={"settings_files": [*base.settings_files, str(slow)]})
    settings = resource.load()
    assert settings.default_delay_s == DELAY_S and settings.max_pages_per_host == 1
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with DagsterInstance.ephemeral() as instance:
        materialize([seeds], instance=instance, resources={"crawl_settings": resource}, run_config=quiet)
        materialize([frontier_snapshot], instance=instance, resources={"crawl_settings": resource},
                    partition_key=DAY, run_config=quiet)
    root = settings.data_root
    hosts = {p.parent.name[6:]: set(pq.read_table(p)["host"].to_pylist())
             for p in (root / "frontier" / f"date={DAY}").glob("shard=*/frontier.parquet")}
    shard = max(sorted(hosts), key=lambda s: len(hosts[s]))
    config = folder / "settings.json"
    config.write_text(json.dumps(resource.model_dump()))
    return config, shard, root, hosts[shard]


def read_state(folder) -> dict | None:
    try:
        return json.loads((folder / STATE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None


class Runner:
    """A fetch runner started ahead (waiting_runner.py), its imports done once ready() returns."""

    def __init__(self, config, shard):
        self.process = subprocess.Popen([sys.executable, str(WAITING_RUNNER), str(config), DAY, shard],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)

    def ready(self) -> "Runner":
        line = self.process.stdout.readline().strip()
        if line != READY:
            self.kill()
            raise AssertionError(f"the runner did not start: {line!r} {self.process.stderr.read()[-2000:]}")
        return self

    def go(self) -> None:
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def kill_while_every_host_waits(runner: Runner, folder, hosts, at_least_s: float,
                                timeout_s: float = 30.0) -> dict:
    """Read each checkpoint the running batch writes, and SIGKILL it as soon as every host has
    at least `at_least_s` of its delay still to wait (what the checkpoint saved, less the time
    since it was written): then no host has a request in flight. That checkpoint's state."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and runner.process.poll() is None:
        time.sleep(0.02)
        state = read_state(folder)
        if state is None:
            continue
        age = time.time() - state["written_at"]
        waits = [state["hosts"].get(host, {}).get("wait_s", 0.0) - age for host in hosts]
        if not state["finished"] and min(waits) >= at_least_s:
            runner.kill()
            return state
    runner.kill()
    raise AssertionError(f"no checkpoint with every host waiting (exit {runner.process.returncode}): "
                         f"{runner.process.stderr.read()[-2000:]}")


def test_a_batch_killed_while_its_hosts_wait_resumes_with_the_wait_left(tmp_path):
    with DemoWebProcess(hosts=8, pages_per_host=5) as server:
        config, shard, root, hosts = prepared(tmp_path, server)
        assert len(hosts) >= 2, hosts
        folder = warc_dir(root, DAY, shard) / CHECKPOINT_DIR
        first, again = Runner(config, shard), Runner(config, shard)
        try:
            first.ready().go()
            again.ready()
            # Killed with robots.txt asked and much of the delay to wait before each host's page
            # (the hosts' robots.txt are not all asked at the same moment).
            killed = kill_while_every_host_waits(first, folder, hosts, 0.4 * DELAY_S)
            killed_at = time.time()
            assert not killed["finished"] and killed["sequence"] > 0
            again.go()
            _, stderr = again.process.communicate(timeout=120)
            assert again.process.returncode == 0, stderr[-3000:]
        finally:
            first.kill()
            again.kill()
        rows = server.stop()

    ours = [r for r in rows if r["host"] in hosts]
    before = [r for r in ours if r["start"] < killed_at]
    after = [r for r in ours if r["start"] >= killed_at]
    assert {r["host"] for r in before} == {r["host"] for r in after} == hosts
    assert all(r["path"] == "/robots.txt" for r in before)  # the kill came before any page
    assert_polite(ours, DELAY_S)  # both runs' requests, each host's at least the delay apart
    state = final_state(root, shard)  # and the batch run again finished it: one row a URL, WARCs valid
    assert {url.split("/")[2].split(":")[0] for url in state["urls"]} == hosts
