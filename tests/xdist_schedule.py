"""How `make test` spreads the suite over pytest-xdist's workers (`-n 3 --dist loadgroup
--no-loadscope-reorder`).

- Tests that share an expensive fixture run on one worker, so it is built once: the modules
  that use the `deployment` fixture (one `dagster dev`) are grouped by
  DEPLOYMENT_GROUPS, tests/analyst shares one two-day crawl ("analyst"), and any other test is
  grouped with its module (its module-scoped crawls and servers).
- The groups that take longest start first, so none of them ends the run alone.
- A worker that still has a long group's test to run takes short groups only: xdist hands a
  worker more work when two or fewer of its tests are left, and a long single test would
  otherwise have the next long group queued behind it on the same worker.

The groups are worked out from each test's file here, in the scheduler: xdist's own
`xdist_group` marks travel as a suffix of the test id, which pytest 9.2 no longer lets a plugin
change (pytest-xdist#1386), so they would be ignored.
"""

import pytest
from xdist.scheduler import LoadScopeScheduling

# Modules whose tests use the `deployment` fixture, and the group (so the worker, so the
# `dagster dev`) each runs in: one for all, so its five processes start once (it stops after
# the group's last test: tests/dagster_deployment.py).
DEPLOYMENT_GROUPS = {
    "tests/orchestration/test_backfill_days.py": "deployment",
    "tests/orchestration/test_partial_day.py": "deployment",
    "tests/orchestration/test_run_queue.py": "deployment",
    "tests/ui/test_dagster_ui.py": "deployment",
}

# Longest first (about 100-300 s each on a loaded 2-core machine, measured 2026-12-02): each
# is a chain of crawl days or Dagster runs.
LONG_GROUPS = (
    "deployment",  # a two-day backfill beside two nightly cycles, the run queue, the partial day, the UI
    "tests/cli/test_commands.py",  # make ui and three small days, then Ctrl-C, a crash and its rerun: four dagster devs
    "tests/cluster/test_celery_cluster.py",  # PostgreSQL, Redis, two Celery workers, a day twice
    "tests/storage/test_shared_root.py",  # two days crawled twice, one root on S3
    "analyst",  # a two-day crawl, pywb, cdxj-indexer
    "tests/crash/test_kill_and_resume.py",
    "tests/test_end_to_end.py",
    "tests/test_traps_over_cycles.py",
    "tests/test_recrawl_over_days.py",
    "tests/test_near_duplicates.py",
)


def group_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    if path in DEPLOYMENT_GROUPS:
        return DEPLOYMENT_GROUPS[path]
    return "analyst" if path.startswith("tests/analyst/") else path


def rank(group: str) -> int:
    return LONG_GROUPS.index(group) if group in LONG_GROUPS else len(LONG_GROUPS)


def pytest_itemcollected(item: pytest.Item) -> None:
    """A module that starts using the deployment must say which one it shares."""
    if "deployment" in getattr(item, "fixturenames", ()) and group_of(item.nodeid) not in DEPLOYMENT_GROUPS.values():
        raise pytest.UsageError(f"{item.nodeid} uses the `deployment` fixture: add its module to "
                                "DEPLOYMENT_GROUPS in tests/xdist_schedule.py, so it shares a worker's dagster dev")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: rank(group_of(item.nodeid)))  # stable: a module's tests stay together


class GroupsLongestFirst(LoadScopeScheduling):
    """One work unit a group, handed out in collection order (longest first); a worker with a
    long group's test still to run is given the shortest group waiting, never the next long one."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)

    def _reschedule(self, node) -> None:
        if not node.shutting_down and self.workqueue and self._pending_of(self.assigned_work[node]) <= 2:
            busy_with_long = any(scope in LONG_GROUPS and not all(unit.values())
                                 for scope, unit in self.assigned_work[node].items())
            if busy_with_long:  # the queue's last group (a short one) goes first
                self.workqueue.move_to_end(next(reversed(self.workqueue)), last=False)
        super()._reschedule(node)


@pytest.hookimpl(optionalhook=True)  # `-p no:xdist` runs the suite in one process
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") == "loadgroup":
        return GroupsLongestFirst(config, log)
    return None
