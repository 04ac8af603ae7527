"""A real Dagster deployment for the orchestration tests: `dagster dev` (webserver and daemon)
on a free loopback port with a temporary DAGSTER_HOME holding the project's dagster.yaml, a
small demo web in its own process, and settings with two shards. Started once per session, by
the first test that asks for it, and stopped after the last: starting `dagster dev` costs
seconds, and one instance per session keeps SQLite to one writer process tree."""

import contextlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import DagsterInstance

from crawl_assets.cli.launcher import DagsterService, RunQueue, open_instance
from crawl_assets.crawler.settings import PROJECT_ROOT, CrawlSettings, load_settings
from crawl_assets.defs.schedules import nightly_cycle

from support import DEMO_SETTINGS, DemoWebProcess

HOSTS = 4
PAGES_PER_HOST = 8
DELAY_S = 0.05
RETRY_DELAY_S = 1.0
PREVIOUS_DAY_WAIT_S = 300.0


@dataclass
class Deployment:
    service: DagsterService
    instance: DagsterInstance
    settings: CrawlSettings
    settings_files: list[str]
    web: DemoWebProcess

    def queue(self, data_root: Path | None = None, **tags) -> RunQueue:
        """Submits runs to the deployment; with `data_root`, runs read and write there (run
        config, which the day-chain sensors pass on to the runs they start) instead of the
        deployment's root, so a test's days are its own: in a shared root each day must come
        after the crawl's newest, and the tests would depend on their order. Only tests/ui
        crawls in the deployment's root (the UI launches runs with the settings' root)."""
        return RunQueue(self.service.url, self.instance, data_root and self.run_config(data_root), tags)

    def run_config(self, data_root: Path) -> dict:
        """Run config of this deployment's settings over another data root."""
        return {"resources": {"crawl_settings": {"config": {"data_root": str(data_root),
                                                            "seeds_dir": str(self.settings.seeds_dir)}}}}


def write_settings(folder: Path, web: DemoWebProcess) -> list[str]:
    """Settings files only (the code server reads them from RECRAWL_SETTINGS): two shards,
    a short delay, outputs and seeds under `folder`."""
    seeds_dir = folder / "seeds"
    seeds_dir.mkdir(parents=True)
    (seeds_dir / "demo.txt").write_text("\n".join(web.web.seed_urls()[:HOSTS]) + "\n")
    overlay = folder / "orchestration.toml"
    overlay.write_text(f'[crawl]\ndata_root = "{folder / "data"}"\nseeds_dir = "{seeds_dir}"\n'
                       f"shard_count = 2\ndefault_delay_s = {DELAY_S}\nmax_pages_per_host = {PAGES_PER_HOST}\n"
                       f'start_date = "2026-11-01"\nmax_parallel_shards = 2\n'
                       # A failing shard's two retries come 1 s and 2 s later, not 1 and 2 minutes.
                       f"fetch_retry_delay_s = {RETRY_DELAY_S}\n"
                       # a frontier whose previous day never closes fails in minutes, not hours
                       f"previous_day_wait_s = {PREVIOUS_DAY_WAIT_S}\n")
    return [str(DEMO_SETTINGS), str(overlay)]


# Each run's process is forked from a code server that has imported the definitions, pyplot
# (the day report's charts) and datasketch (the trap defences' HyperLogLog; its package imports
# scipy, a second of CPU), instead of a fresh interpreter importing them again
# (tests/daemon_pace/sitecustomize.py); for any `dagster dev` a test starts, its own or a cycle
# command's.
PRELOADED_RUNS_ENV = {
    "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent / "daemon_pace"),
                                                os.environ.get("PYTHONPATH")])),
    "RECRAWL_TEST_PRELOAD_RUNS": "crawl_assets.definitions,matplotlib.pyplot,datasketch",
    "MPLBACKEND": "Agg",  # the backend the charts choose, so pyplot imported first picks it too
}
# The deployment's daemon also looks at backfills every 2 s instead of 30 (same file), and the
# day-chain sensors every 5 s instead of 30 (sensors/pace.py).
DAEMON_PACE_ENV = PRELOADED_RUNS_ENV | {
    "RECRAWL_TEST_BACKFILL_INTERVAL_S": "2",
    "RECRAWL_SENSOR_INTERVAL_S": "5",
}


def stop_nightly_schedule(home: Path, env: dict[str, str]) -> None:
    """The tests launch every run themselves: a session that spans 02:00 UTC must not also get
    today's nightly cycle (a real crawl of today holding the shards' run slots)."""
    subprocess.run([str(Path(sys.executable).parent / "dagster"), "schedule", "stop", nightly_cycle.name,
                    "-m", "crawl_assets.definitions"], cwd=PROJECT_ROOT, check=True, capture_output=True,
                   env=os.environ | env | {"DAGSTER_HOME": str(home)}, timeout=300)


# The running deployment's services, stopped as soon as the last test using it has run: its
# sensors and daemon would otherwise keep a third of a core busy until the session ends.
RUNNING: list[contextlib.ExitStack] = []


@pytest.fixture(scope="session")
def deployment(tmp_path_factory):
    assert not RUNNING, "one deployment at a time"
    folder = tmp_path_factory.mktemp("deployment")
    home = folder / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    with contextlib.ExitStack() as services:
        RUNNING.append(services)
        web = services.enter_context(DemoWebProcess(seed=5, hosts=HOSTS, pages_per_host=PAGES_PER_HOST))
        files = write_settings(folder, web)
        env = {"RECRAWL_SETTINGS": ":".join(files)} | DAEMON_PACE_ENV
        stop_nightly_schedule(home, env)
        service = services.enter_context(DagsterService(home, with_daemon=True, env=env,
                                                        log_file=folder / "dagster_dev.log"))
        instance = open_instance(home)
        services.callback(instance.dispose)
        yield Deployment(service, instance, load_settings(*files, use_env=False), files, web)


def stop_deployment() -> None:
    while RUNNING:
        RUNNING.pop().close()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """The deployment's tests run one after another on one worker (xdist_schedule): after the
    last of them, its services stop; a later test asking for it fails on the stopped service."""
    if "deployment" in item.fixturenames and (nextitem is None or "deployment" not in nextitem.fixturenames):
        stop_deployment()
