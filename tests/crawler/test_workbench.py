import asyncio
import random
from collections import Counter

from crawl_assets.crawler.workbench import FetchTask, Workbench


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def task(host: str, n: int, priority: int = 3) -> FetchTask:
    return FetchTask(f"http://{host}/{n}", host, priority=priority)


def test_front_queues_favour_high_priority_without_starving_low():
    # One back queue at a time, so the front-queue choice alone decides the order.
    frontier = Workbench(weights=(16, 8, 4, 2, 1), max_back_queues=1, rng=random.Random(1))
    for n in range(2000):
        frontier.add(task(f"h{n}", n, priority=1 + n % 5))

    async def first_fetches(count):
        order = []
        for _ in range(count):
            state, t = await frontier.acquire()
            order.append(t.priority)
            frontier.release(state, 0.0)
        return order

    order = asyncio.run(first_fetches(300))
    counts = Counter(order)
    assert counts[1] > 2.5 * counts[3] > 0
    assert counts[5] > 0  # the lowest level still moves


def test_a_host_is_handed_to_one_worker_at_a_time_and_waits_its_delay():
    clock = FakeClock()
    frontier = Workbench(clock=clock)
    for n in range(3):
        frontier.add(task("a.test", n))
    frontier.add(task("b.test", 0))

    async def scenario():
        state_a, t1 = await frontier.acquire()
        state_b, t2 = await frontier.acquire()
        assert {state_a.host, state_b.host} == {"a.test", "b.test"}
        # a.test is checked out: nobody else may get it, even though it has queued URLs.
        frontier.release(state_b, 5.0)
        waiter = asyncio.create_task(frontier.acquire())
        await asyncio.sleep(0.01)
        assert not waiter.done()
        frontier.release(state_a, 2.0)  # next_allowed = now + 2
        await asyncio.sleep(0.01)
        assert not waiter.done()  # the clock has not moved: still waiting
        clock.now = 2.0
        frontier._changed.set()  # a real clock moves on its own; the fake one needs a nudge
        state, t = await asyncio.wait_for(waiter, 1)
        assert state.host == "a.test" and t.url == "http://a.test/1"
        frontier.release(state, 1.0)
        clock.now = 3.0
        rest = []
        while (turn := await frontier.acquire()) is not None:
            rest.append(turn[1].url)
            frontier.release(turn[0], 0.0)
        return rest

    assert asyncio.run(scenario()) == ["http://a.test/2"]


def test_links_added_to_a_checked_out_host_join_its_back_queue():
    frontier = Workbench()
    frontier.add(task("a.test", 0))

    async def scenario():
        state, _ = await frontier.acquire()
        frontier.add(task("a.test", 1))  # found on the page being fetched
        assert list(state.back_queue) == [task("a.test", 1)]
        frontier.release(state, 0.0)
        state, t = await frontier.acquire()
        frontier.release(state, 0.0)
        return t, await frontier.acquire()

    t, done = asyncio.run(scenario())
    assert t.url == "http://a.test/1" and done is None
