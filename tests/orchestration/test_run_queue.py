"""Runs through a real instance: `dagster dev` dequeues them under dagster.yaml's limits, into a
data root of the module's own (the deployment's is the UI test's crawl)."""

from dataclasses import dataclass

import pytest
from dagster import DagsterRunStatus

from crawl_assets.cli.cycle import CycleReport, daily_spec, fetch_spec, submit_cycle
from crawl_assets.defs.jobs import DRIVER_TAG, SHARD_TAG, day_close_job, frontier_job
from crawl_assets.storage.layout import fetch_log_file

DAY1, DAY2 = "2026-11-20", "2026-11-21"
# Whole cycles through a real instance on a loaded machine (the first test also starts the
# session's dagster dev): generous limits, and every wait is on a run's state, never a clock.
pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("run_queue")


@dataclass
class DayOne:
    report: CycleReport
    lines: list[str]  # its progress lines


@pytest.fixture(scope="module")
def day1(deployment, root) -> DayOne:
    """A whole cycle of DAY1 through the deployment's run queue, both tests' first day."""
    lines = []
    report = submit_cycle(DAY1, deployment.queue(root, **{DRIVER_TAG: "test"}), deployment.settings.shard_keys(), 2,
                          lines.append)
    return DayOne(report, lines)


def test_a_cycle_runs_every_stage_as_runs_in_the_instance(deployment, root, day1):
    report, lines = day1.report, day1.lines
    assert report.frontier.succeeded and report.close.succeeded and not report.failed_shards, lines
    assert sorted(run.label for run in report.fetches) == [f"fetch_job[{DAY1}|s00]", f"fetch_job[{DAY1}|s01]"]
    jobs = [deployment.instance.get_run_by_id(run.run_id).job_name
            for run in (report.frontier, *report.fetches, report.close)]
    assert jobs == ["frontier_job", "fetch_job", "fetch_job", "day_close_job"]
    # Progress lines follow every run to its end; the summary compares wall time and shards.
    assert sum("success" in line for line in lines) == 4, lines
    assert report.summary().startswith(f"cycle {DAY1}: wall time ")
    assert report.wall_s >= max(run.seconds for run in report.fetches)
    assert fetch_log_file(root, DAY1, "s01").exists()


def test_two_days_of_one_shard_never_run_at_once(deployment, root, day1):
    queue = deployment.queue(root, **{DRIVER_TAG: "test"})
    lines = []
    # Day 2's frontier is built once day 1 has closed (day order), so day 1 ran whole first.
    assert day1.report.close.succeeded and not day1.report.failed_shards, day1.lines
    (frontier,) = queue.run_all([daily_spec(frontier_job.name, DAY2)], 1, lines.append)
    assert frontier.succeeded, lines

    # Submitted together (day 1's s00 again): without the per-shard limit all three would
    # start at once (a run takes seconds to start), with it s00's two days run one after the other.
    runs = queue.run_all([fetch_spec(DAY1, "s00"), fetch_spec(DAY2, "s00"), fetch_spec(DAY1, "s01")], 3,
                         lines.append)
    assert [run.status for run in runs] == [DagsterRunStatus.SUCCESS] * 3, lines
    by_label = {run.label: run for run in runs}
    first, second = by_label[f"fetch_job[{DAY1}|s00]"], by_label[f"fetch_job[{DAY2}|s00]"]
    assert first.end_time <= second.start_time or second.end_time <= first.start_time, (first, second)

    for run in runs:
        tags = deployment.instance.get_run_by_id(run.run_id).tags
        assert tags[SHARD_TAG] == run.label[-4:-1]  # the key the limit counts
    for day, shard in ((DAY1, "s00"), (DAY2, "s00"), (DAY1, "s01")):
        assert fetch_log_file(root, day, shard).exists()
    # Day 2 closes on what landed, so later days' frontiers can be built.
    (close,) = queue.run_all([daily_spec(day_close_job.name, DAY2)], 1, lines.append)
    assert close.succeeded, lines

