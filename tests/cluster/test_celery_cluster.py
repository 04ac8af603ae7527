"""One day of the demo web crawled by a deployment of the distributed pieces, on this machine:
records in PostgreSQL, every run's steps on two Celery workers fed through Redis, runs submitted
by `python -m crawl_assets.cli.cycle` (which starts `dagster dev` for the daemon). Shard s00 is
submitted twice at once, as two clicks in the UI would: the run queue still runs one at a time
with steps on any worker. Every host's requests fall inside a step of its own shard (the demo
web's access log), and the outputs equal those of the same day crawled in one process. The
deployment runs the day per shard (day_per_shard: each shard's frontier in its fetch run;
the close's priorities as each shard's summary, the crawl's price, each shard's plan, on
either worker), and its plan is, row for row, what the one-process step plans from the same
crawl.

The servers are Debian's postgresql and redis-server (`make system-packages`), started by the
test on loopback; the distributed libraries are the cluster extra, in .venv (`make cluster-tools`)."""

import datetime as dt
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawl_assets.crawler.settings import PROJECT_ROOT, SETTINGS_ENV, load_settings
from crawl_assets.crawler.url_policy.sharding import shard_key, shard_keys, shard_of
from crawl_assets.defs.jobs import SHARD_TAG
from crawl_assets.deployment.cluster import CELERY_BROKER_ENV, POSTGRES_URL_ENV, instance_file
from crawl_assets.pipeline.priorities.priorities_step import recrawl_priorities
from crawl_assets.pipeline.priorities.recrawl_plan import next_day, priorities_files
from crawl_assets.pipeline.recrawl_inputs import priorities_inputs
from crawl_assets.storage.layout import (
    fetch_log_file, frontier_file, links_file, shard_priorities_file, url_registry_file,
)
from dagster_deployment import PRELOADED_RUNS_ENV
from services import postgres_bin, postgres_server, redis_server, stop
from support import DEMO_SETTINGS, DemoWebProcess, assert_polite

SHARDS = 2  # s00 twice and s01: two fetch runs at once, so both workers take part
HOSTS = 8
WORKERS = ("fetch1@recrawl-test", "fetch2@recrawl-test")
TWICE = "s00"  # the shard submitted twice at once
DAY = (dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=1)).isoformat()

pytestmark = [
    pytest.mark.timeout(420),
    pytest.mark.skipif(importlib.util.find_spec("dagster_celery") is None,
                       reason="the cluster extra is not installed (make cluster-tools)"),
    pytest.mark.skipif(postgres_bin() is None or shutil.which("redis-server") is None,
                       reason="postgresql or redis-server is missing (make system-packages installs them)"),
]


def write_settings(folder: Path, web, per_shard: bool = False) -> Path:
    """The demo settings, SHARDS shards, outputs and seeds under `folder`; per_shard: the
    recrawl priorities planned per shard."""
    seeds = folder / "seeds"
    seeds.mkdir(parents=True)
    (seeds / "demo.txt").write_text("\n".join(web.seed_urls()) + "\n")
    overlay = folder / "test.toml"
    overlay.write_text(f'[crawl]\ndata_root = "{folder / "data"}"\nseeds_dir = "{seeds}"\n'
                       f"shard_count = {SHARDS}\nmax_parallel_shards = {SHARDS}\n"
                       "default_delay_s = 0.03\nmax_pages_per_host = 40\n"
                       # Two Celery workers, dagster dev, PostgreSQL and the demo web share the
                       # test machine's cores: a robots.txt answered late must not read as unreachable
                       # (the comparison with the one-process day would then fail on a timeout).
                       "connect_timeout_s = 10\nfetch_timeout_s = 30\n"
                       f"day_per_shard = {str(per_shard).lower()}\n")
    return overlay


def crawl_env(overlay: Path, **extra: str) -> dict:
    return os.environ | PRELOADED_RUNS_ENV | {SETTINGS_ENV: f"{DEMO_SETTINGS}:{overlay}", "PYTHONUNBUFFERED": "1"} | extra


def outputs(root: Path) -> dict:
    """What the day produced, without times, run ids and file names: the frontier, every fetch
    (URL, answer, payload digest, record kind) and every link, per shard; the URL registry the
    day closed with."""
    found = {"registry": sorted(pq.read_table(url_registry_file(root, DAY), columns=["url"]).column("url").to_pylist())}
    for shard in shard_keys(SHARDS):
        fetches = pq.read_table(fetch_log_file(root, DAY, shard)).to_pylist()
        links = pq.read_table(links_file(root, DAY, shard)).to_pylist()
        found[shard] = {
            "frontier": sorted(pq.read_table(frontier_file(root, DAY, shard)).column("url").to_pylist()),
            "fetches": sorted((r["url"], r["status"], r["status_class"], r["payload_digest"], r["warc_type"])
                              for r in fetches),
            "links": sorted((r["source"], r["target"], r["dropped_reason"]) for r in links),
        }
    return found


def test_a_day_on_two_celery_workers_equals_the_day_in_one_process(tmp_path):
    with DemoWebProcess(hosts=HOSTS, pages_per_host=6) as web, postgres_server() as pg, redis_server() as broker:
        cluster, single = tmp_path / "cluster", tmp_path / "single"
        home = cluster / "dagster_home"
        home.mkdir(parents=True)
        (home / "dagster.yaml").write_text(instance_file(postgres=True))
        overlay = write_settings(cluster, web.web, per_shard=True)
        env = crawl_env(overlay, DAGSTER_HOME=str(home),
                        **{POSTGRES_URL_ENV: pg, CELERY_BROKER_ENV: broker})
        logs = [open(cluster / f"{name.split('@')[0]}.log", "wb") for name in WORKERS]
        workers = [subprocess.Popen([sys.executable, "-m", "crawl_assets.deployment.cluster", "worker", "--name", name,
                                     "--pool", "solo"], cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
                   for name, log in zip(WORKERS, logs)]
        try:
            shards = ",".join([TWICE, *shard_keys(SHARDS)])
            cycle = subprocess.run([sys.executable, "-m", "crawl_assets.cli.cycle", "--date", DAY, "--shards", shards],
                                   cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
            assert cycle.returncode == 0, cycle.stdout[-3000:] + cycle.stderr[-3000:]
            records = subprocess.run([sys.executable, Path(__file__).parent / "run_records.py"], env=env,
                                     capture_output=True, text=True, check=True).stdout
        finally:
            for worker, log in zip(workers, logs):
                stop(worker, signal.SIGTERM)
                log.close()
        cluster_done = dt.datetime.now().timestamp()

        # The same day in one process, SQLite records and in-process steps (make crawl's way).
        baseline = subprocess.run(
            [sys.executable, "-c", "import sys; from dagster import DagsterInstance; "
             "from crawl_assets.cli.cycle import run_cycle; from crawl_assets.defs.resources import CrawlSettingsResource; "
             "run_cycle(sys.argv[1], DagsterInstance.ephemeral(), CrawlSettingsResource())", DAY],
            cwd=PROJECT_ROOT, env=crawl_env(write_settings(single, web.web)), capture_output=True, text=True)
        assert baseline.returncode == 0, baseline.stderr[-3000:]
        access = [row for row in web.stop() if row["end"] <= cluster_done]

    runs = [json.loads(line) for line in records.splitlines()]
    assert runs and all(run["status"] == "SUCCESS" for run in runs), [(r["job"], r["status"]) for r in runs]
    # Every step of every run went to a Celery worker, and both workers took part (which worker
    # takes a step is Celery's choice: an idle one; the runs of a day keep both busy).
    assert all(step.get("worker") in WORKERS for run in runs for step in run["steps"].values())
    assert {step["worker"] for run in runs for step in run["steps"].values()} == set(WORKERS)
    jobs = sorted(run["job"] for run in runs)
    assert [job for job in jobs if job not in ("fetch_job", "frontier_job", "day_close_job")] == [
        "crawl_price_job", *["shard_close_job"] * SHARDS, *["shard_priorities_job"] * SHARDS]
    fetch_steps = {}  # shard -> its fetch steps, one a run (after the step building its frontier)
    for run in runs:
        if run["job"] == "fetch_job":
            assert set(run["steps"]) == {"shard_frontier", "fetch_batch"}
            fetch_steps.setdefault(run["tags"][SHARD_TAG], []).append(run["steps"]["fetch_batch"])
    assert {shard: len(steps) for shard, steps in fetch_steps.items()} == {
        shard: 2 if shard == TWICE else 1 for shard in shard_keys(SHARDS)}
    first, second = sorted(fetch_steps[TWICE], key=lambda step: step["start"])
    assert first["end"] <= second["start"]  # the queue held the second run of the shard back

    # Per-shard exclusivity: every request to a host came while a fetch step of its own shard ran,
    # and never two at once to one host.
    hosts = {row["host"] for row in access if row["host"]}
    assert hosts == {web.web.hostname(i) for i in range(HOSTS)}
    for row in access:
        steps = fetch_steps[shard_key(shard_of(row["host"], SHARDS))]
        assert any(step["start"] <= row["start"] and row["end"] <= step["end"] for step in steps), row
    assert_polite(access, 0.03)

    assert outputs(cluster / "data") == outputs(single / "data")
    assert_planned_as_in_one_process(load_settings(DEMO_SETTINGS, overlay))


def assert_planned_as_in_one_process(settings) -> None:
    """The deployment's plan, a file a shard, is the one-process step's over the same crawl."""
    root = settings.data_root
    files = priorities_files(root, DAY)
    assert files == [shard_priorities_file(root, DAY, shard) for shard in shard_keys(SHARDS)]
    per_shard = pa.concat_tables([pq.read_table(f) for f in files]).sort_by("url")
    inputs = priorities_inputs(root, DAY, settings)
    whole = recrawl_priorities(inputs.change_stats, None, inputs.hosts, inputs.known_urls, next_day(DAY), settings)
    assert per_shard.to_pylist() == whole.urls.to_pylist()
    assert 0 < sum(per_shard["planned"].to_pylist()) < per_shard.num_rows

