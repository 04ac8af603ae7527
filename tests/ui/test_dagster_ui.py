"""The real Dagster UI in headless Chromium (Debian's chromium driven by Playwright; a browser is
never downloaded): open the asset graph, open the fetch log (one of the four assets the
fetch_batch step writes), launch one partition from the UI's own dialog, see the run succeed,
save a screenshot under data/; close the day and see day_report's own columns, described, and
its plots. And the README's daily path: Jobs, frontier_job, Materialize
all…, Latest, Launch 1 run starts frontier_job for today's partition.

Every wait is on a state (an element shown or hidden, a run finished), with generous limits: a
loaded machine can take a minute to render the graph or start a run."""

import contextlib
import datetime as dt
import json
import os
import re
import time
import urllib.request
from pathlib import Path

import pytest
from dagster import DagsterRunStatus, RunsFilter

from crawl_assets.cli.cycle import daily_spec
from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.defs.assets.fetch import FETCH_LOG
from crawl_assets.defs.column_glossary import COLUMNS
from crawl_assets.defs.jobs import DRIVER_TAG, SHARD_TAG, day_close_job, frontier_job

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOT = PROJECT_ROOT / "data" / "ui_fetch_batch_run.png"
PLOTS_SCREENSHOT = PROJECT_ROOT / "data" / "ui_fetch_log_plots.png"
REPORT_SCREENSHOT = PROJECT_ROOT / "data" / "ui_day_report_columns.png"
FAILURE_SCREENSHOT = PROJECT_ROOT / "data" / "ui_test_failure.png"
DAY, SHARD = "2026-11-25", "s00"
RUN_TIMEOUT_S = 600
UI_TIMEOUT_MS = 120_000

if not CHROMIUM.exists() and not os.environ.get("CI"):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; `make test` installs it)",
                allow_module_level=True)
sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright


@contextlib.contextmanager
def ui_page():
    """A page of Debian's chromium with the UI's generous timeouts; on a failure, a screenshot
    of what the browser showed (FAILURE_SCREENSHOT)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        try:
            page.set_default_timeout(UI_TIMEOUT_MS)
            page.set_default_navigation_timeout(UI_TIMEOUT_MS)
            yield page
        except Exception:
            page.screenshot(path=str(FAILURE_SCREENSHOT), full_page=True)
            raise
        finally:
            browser.close()


def ui_shows_first_visit_dialog(url: str) -> bool:
    """What the UI asks the server before it opens the newsletter dialog on a loopback visit."""
    request = urllib.request.Request(f"{url}/graphql", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"query": "query { shouldShowNux }"}).encode())
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())["data"]["shouldShowNux"]


def graphql(url: str, query: str, variables: dict) -> dict:
    request = urllib.request.Request(f"{url}/graphql", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"query": query, "variables": variables}).encode())
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())["data"]


def frontier_run_ids(instance) -> set[str]:
    return {record.dagster_run.run_id for record in instance.get_run_records(RunsFilter(job_name=frontier_job.name))}


def launched_run(instance, before: set[str], timeout_s: float = 60):
    """The one frontier_job run recorded since `before` was taken, finished or not."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        new = frontier_run_ids(instance) - before
        if new:
            assert len(new) == 1, new
            return instance.get_run_by_id(new.pop())
        time.sleep(0.5)
    raise AssertionError(f"no new run of {frontier_job.name} within {timeout_s} s")


def wait_for_run(instance, partition_key: str):
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        records = instance.get_run_records(RunsFilter(tags={"dagster/partition": partition_key}), limit=1)
        if records and records[0].dagster_run.is_finished:
            return records[0].dagster_run
        time.sleep(1)
    raise AssertionError(f"no finished run of {partition_key} within {RUN_TIMEOUT_S} s")


@pytest.mark.timeout(RUN_TIMEOUT_S + 1200)  # dagster dev may start for this test first
def test_launch_one_fetch_partition_from_the_ui(deployment):
    frontier = deployment.queue(**{DRIVER_TAG: "test"}).run_all([daily_spec(frontier_job.name, DAY)], 1)
    assert frontier[0].succeeded
    assert not ui_shows_first_visit_dialog(deployment.service.url)

    with ui_page() as page:
        # No first-visit newsletter dialog: dagster.yaml turns it off (`nux: enabled: false`),
        # because it could open over the launch dialog at any moment and hide its fields.
        page.goto(f"{deployment.service.url}/asset-groups")
        page.get_by_text("fetch", exact=True).first.dblclick()  # the graph's fetch group opens
        page.get_by_text(FETCH_LOG, exact=True).first.wait_for()

        page.goto(f"{deployment.service.url}/assets/{FETCH_LOG}")
        page.get_by_role("button", name="Materialize…").click()
        # fetch_log is one of the assets one step writes: the UI says so and asks first.
        page.get_by_role("dialog").get_by_text("Additional assets will be materialized").wait_for()
        page.get_by_role("button", name="Confirm").click()
        dialog = page.get_by_role("dialog").first
        date = dialog.get_by_placeholder("ex: 2026-11-01", exact=False)
        date.fill(DAY)
        date.press("Enter")
        page.get_by_text("Select a partition or create one").click()
        # the option's own label, the key alone: the asset page behind the dialog shows
        # partitions such as 2026-11-21|s00, and a tooltip's span may hold the key too
        page.locator("span:visible:not([data-tooltip-style])", has_text=re.compile(f"^{SHARD}$")).first.click()
        page.keyboard.press("Escape")
        dialog.get_by_role("button", name="Launch 1 run").click()

        run = wait_for_run(deployment.instance, f"{DAY}|{SHARD}")
        assert run.status == DagsterRunStatus.SUCCESS, run.run_id
        assert run.tags[SHARD_TAG] == SHARD  # the UI's run carries the key the limit counts
        page.goto(f"{deployment.service.url}/runs/{run.run_id}")
        page.get_by_text("Success").first.wait_for()
        page.get_by_text("Loading run logs").wait_for(state="hidden")
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        # The batch's figures are numbers: on the asset's page, the Metadata section's Plots
        # draw one chart each across the partitions (README, "What a data team reads").
        page.goto(f"{deployment.service.url}/assets/{FETCH_LOG}")
        page.get_by_text("Plots", exact=True).click()
        for figure in ("answered", "fetch_log_rows", "frontier_urls", "bytes"):
            page.get_by_text(figure, exact=True).first.wait_for()
        page.screenshot(path=str(PLOTS_SCREENSHOT), full_page=True)

        # The day closed on the shard that landed: day_report's page shows the report's own
        # columns (the day in one row), each with its description, and plots its figures.
        close = deployment.queue(**{DRIVER_TAG: "test"}).run_all([daily_spec(day_close_job.name, DAY)], 1)
        assert close[0].succeeded
        page.goto(f"{deployment.service.url}/assets/day_report")
        for column in ("pages_fetched", "not_modified", "missing_shards"):
            page.get_by_text(column, exact=True).first.wait_for()
            page.get_by_text(COLUMNS[column], exact=True).first.wait_for()  # its description beside it
        assert page.get_by_text("warc_offset", exact=True).count() == 0  # not the fetch log's columns
        page.screenshot(path=str(REPORT_SCREENSHOT), full_page=True)
        page.get_by_text("Plots", exact=True).click()
        page.get_by_text("pages_fetched", exact=True).first.wait_for()  # a chart's title
        page.locator("canvas").first.wait_for()  # and the chart
    assert SCREENSHOT.stat().st_size > 10_000
    assert (deployment.settings.data_root / "fetch_log" / f"date={DAY}" / f"shard={SHARD}" / "fetch_log.parquet").exists()


TERMINATE = "mutation($runId: String!) { terminateRun(runId: $runId) { __typename } }"


@pytest.mark.timeout(600)
def test_run_todays_cycle_from_the_job_page(deployment):
    """The README's daily path, click for click: the dialog opens with no partition chosen, and
    Latest is today's (the daily partitions end today). The run's outcome is the crawl's business
    (the orchestration tests'): the test checks what was launched, then stops it, so no day
    starts in the shared deployment after its last test."""
    days = {dt.datetime.now(dt.timezone.utc).date().isoformat()}  # today, either side of midnight
    before = frontier_run_ids(deployment.instance)
    with ui_page() as page:
        page.goto(f"{deployment.service.url}/jobs")
        page.get_by_text(frontier_job.name, exact=True).first.click()
        page.get_by_text("To run today's cycle: Materialize all…").first.wait_for()  # the Info panel
        page.get_by_role("button", name="Materialize all…").click()
        dialog = page.get_by_role("dialog").first
        # no partition is chosen until one clicks Latest: a greyed "Launch backfill" till then
        assert dialog.get_by_role("button", name="Launch backfill").is_disabled()
        dialog.get_by_role("button", name="Latest", exact=True).click()
        dialog.get_by_role("button", name="Launch 1 run").click()
        days.add(dt.datetime.now(dt.timezone.utc).date().isoformat())
        run = launched_run(deployment.instance, before)
    assert run.tags["dagster/partition"] in days
    assert DRIVER_TAG not in run.tags  # a UI run: the sensors fetch its shards and close its day
    # Terminated once its process runs: a run still being launched would miss the cancel and
    # wait out previous_day_wait_s for the day before, which no test closes.
    deadline = time.monotonic() + 120
    while deployment.instance.get_run_by_id(run.run_id).status in (DagsterRunStatus.QUEUED,
                                                                    DagsterRunStatus.STARTING):
        assert time.monotonic() < deadline, f"run {run.run_id} did not start within 120 s"
        time.sleep(0.5)
    graphql(deployment.service.url, TERMINATE, {"runId": run.run_id})
    deadline = time.monotonic() + 120  # stopped (or, on a first day, already done) before the next test
    while not deployment.instance.get_run_by_id(run.run_id).is_finished:
        assert time.monotonic() < deadline, f"run {run.run_id} still going 120 s after it was terminated"
        time.sleep(0.5)
