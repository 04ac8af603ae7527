"""Leases: a URL handed to a worker is leased; one that runs out goes back to be fetched."""

import asyncio

import pytest

from crawl_assets.crawler.fetching.clock import ManualClock
from crawl_assets.crawler.fetching.leases import LeaseTable
from crawl_assets.crawler.fetching.workbench import FetchTask, Workbench


def task(n: int, host: str = "a.test") -> FetchTask:
    return FetchTask(f"http://{host}/{n}", host)


def test_a_finished_lease_is_gone_and_an_expired_one_hands_its_task_back_once():
    clock = ManualClock()
    leases = LeaseTable(clock, timeout_s=10)
    first, second = leases.grant(task(1)), leases.grant(task(2))
    clock.advance(5)
    third = leases.grant(task(3))
    assert leases.finish(second) and not leases.finish(second)
    assert leases.outstanding() == [task(1), task(3)]
    clock.advance(4.9)
    assert leases.expired() == []
    clock.advance(0.1)  # the first lease's time is up; the third has 5 s left
    assert leases.expired() == [task(1)] and leases.expired() == []
    assert not leases.finish(first)  # a late answer: its task was handed back already
    assert leases.outstanding() == [task(3)] and len(leases) == 1
    clock.advance(5)
    assert leases.expired() == [task(3)] and len(leases) == 0


def test_a_lease_timeout_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        LeaseTable(ManualClock(), 0)


def test_an_expired_lease_puts_the_url_back_where_a_worker_can_take_it():
    async def scenario():
        clock = ManualClock()
        workbench = Workbench(clock=clock)
        leases = LeaseTable(clock, timeout_s=30)
        workbench.add(task(1, "b.test"))
        state, taken = await workbench.acquire()
        leases.grant(taken)  # the worker holding it is never heard from again
        clock.advance(30)
        for back in leases.expired():
            workbench.add_first(back)
        assert workbench.queued_tasks() == [task(1, "b.test")]
        workbench.release(state, 0.0)  # the host's turn ends (its worker was cancelled)
        again_state, again = await workbench.acquire()
        assert again == task(1, "b.test") and again_state is state

    asyncio.run(scenario())
