"""The workbench (the batch's two-level frontier) under a manual clock: who gets which host when."""

import asyncio
import random
from collections import Counter

import pytest

from crawl_assets.crawler.fetching.clock import ManualClock, MonotonicClock, wake
from crawl_assets.crawler.fetching.workbench import FetchTask, InvariantError, Workbench


def task(host: str, n: int, priority: int = 3, **fields) -> FetchTask:
    return FetchTask(f"http://{host}/{n}", host, priority=priority, **fields)


async def settle() -> None:
    """Let every runnable coroutine run until it waits again (no real time passes)."""
    for _ in range(20):
        await asyncio.sleep(0)


def test_front_queues_favour_high_priority_without_starving_low():
    # One back queue at a time, so the front-queue choice alone decides the order.
    workbench = Workbench(weights=(16, 8, 4, 2, 1), max_back_queues=1, rng=random.Random(1))
    for n in range(2000):
        workbench.add(task(f"h{n}", n, priority=1 + n % 5))

    async def first_fetches(count):
        order = []
        for _ in range(count):
            state, t = await workbench.acquire()
            order.append(t.priority)
            workbench.release(state, 0.0)
        return order

    order = asyncio.run(first_fetches(300))
    counts = Counter(order)
    assert counts[1] > 2.5 * counts[3] > 0
    assert counts[5] > 0  # the lowest level still moves


def run_workers(workbench: Workbench, clock: ManualClock, delays: dict[str, float], workers: int = 3,
                step: float = 0.5) -> list[tuple[float, str]]:
    """Workers fetch (instantly) and release each host with its delay while the clock moves
    in steps; returns (clock time, URL) of every turn, in order."""
    turns = []

    async def worker():
        while (turn := await workbench.acquire()) is not None:
            state, t = turn
            turns.append((clock.now(), t.url))
            await asyncio.sleep(0)  # the request
            workbench.release(state, delays[state.host])

    async def scenario():
        running = [asyncio.create_task(worker()) for _ in range(workers)]
        await settle()
        while not all(w.done() for w in running):
            clock.advance(step)
            await settle()
        await asyncio.gather(*running)

    asyncio.run(scenario())
    return turns


def test_a_host_is_handed_out_only_when_its_delay_has_passed_on_the_clock():
    clock = ManualClock()
    workbench = Workbench(clock=clock)
    for n in range(3):
        workbench.add(task("a.test", n))
    workbench.add(task("b.test", 0))

    turns = run_workers(workbench, clock, {"a.test": 2.0, "b.test": 5.0})

    # Three workers, two hosts: a.test waits for its own delay each time, never for a worker.
    assert turns == [(0.0, "http://a.test/0"), (0.0, "http://b.test/0"),
                     (2.0, "http://a.test/1"), (4.0, "http://a.test/2")]


def test_a_host_waiting_for_its_time_is_not_handed_to_an_idle_worker_early():
    clock = ManualClock()
    workbench = Workbench(clock=clock)
    workbench.add(task("a.test", 0))
    workbench.add(task("a.test", 1))

    async def scenario():
        state, _ = await workbench.acquire()
        workbench.release(state, 3.0)
        waiter = asyncio.create_task(workbench.acquire())
        clock.advance(2.9)
        await settle()
        early = waiter.done()
        clock.advance(0.1)
        await settle()
        return early, waiter.done(), waiter.result()[1].url if waiter.done() else None

    assert asyncio.run(scenario()) == (False, True, "http://a.test/1")


def test_links_added_to_a_checked_out_host_join_its_back_queue():
    workbench = Workbench()
    workbench.add(task("a.test", 0))

    async def scenario():
        state, _ = await workbench.acquire()
        workbench.add(task("a.test", 1))  # found on the page being fetched
        assert list(state.back_queue) == [task("a.test", 1)]
        workbench.release(state, 0.0)
        state, t = await workbench.acquire()
        workbench.release(state, 0.0)
        return t, await workbench.acquire()

    t, done = asyncio.run(scenario())
    assert t.url == "http://a.test/1" and done is None


def test_release_of_a_host_that_was_not_checked_out_fails_loudly():
    workbench = Workbench()
    workbench.add(task("a.test", 0))
    workbench.add(task("a.test", 1))

    async def scenario():
        state, _ = await workbench.acquire()
        workbench.release(state, 0.0)
        with pytest.raises(InvariantError, match="a.test, which is not checked out"):
            workbench.release(state, 0.0)  # released twice: a second worker would fetch it at once
        with pytest.raises(InvariantError, match="drop_host of a.test"):
            workbench.drop_host(state)
        return await workbench.acquire()

    # The failed calls changed nothing: the host is handed out once more, with its next URL.
    state, t = asyncio.run(scenario())
    assert t.url == "http://a.test/1" and state.checked_out


def test_a_release_that_breaks_the_rules_says_which():
    """A negative delay, a host's state from another workbench, a park with nothing queued to
    wait for: each refused with a sentence naming the host."""
    workbench, other = Workbench(), Workbench()
    workbench.add(task("a.test", 0))
    other.add(task("a.test", 0))

    async def scenario():
        state, _ = await workbench.acquire()
        stranger, _ = await other.acquire()
        with pytest.raises(InvariantError, match=r"^negative delay -1\.0 for a\.test$"):
            workbench.release(state, -1.0)
        with pytest.raises(InvariantError, match=r"^release of an unknown state for a\.test$"):
            workbench.release(stranger, 0.0)
        with pytest.raises(InvariantError, match=r"^a\.test parked with nothing to wait for$"):
            workbench.release(state, 0.0, park=True)

    asyncio.run(scenario())


def test_the_batch_is_busy_while_any_host_is_checked_out_or_parked():
    """busy() counts every host checked out and every host parked, however they came and
    went: the batch ends only when the last is done."""
    workbench = Workbench(clock=ManualClock())
    for host in ("a.test", "b.test"):
        workbench.add(task(host, 0))

    async def scenario():
        first, _ = await workbench.acquire()
        second, _ = await workbench.acquire()
        workbench.release(second, 0.0)  # done; the other is still out
        assert workbench.busy()
        workbench.release(first, 0.0)
        assert not workbench.busy()
        for n, host in enumerate(("a.test", "b.test", "c.test"), 1):
            workbench.add(task(host, n))
        held = {}
        for _ in range(3):
            state, _ = await workbench.acquire()
            held[state.host] = state
        for host in ("a.test", "b.test", "c.test"):  # each waits for a request elsewhere
            held[host].back_queue.append(task(host, 9))
            workbench.release(held[host], 0.0, park=True)
        workbench.unpark(held["a.test"])  # its request is done
        workbench.add_first(task("b.test", 8, robots_for="http://b.test"))  # a hop back to b wakes it
        for _ in range(3):  # a's page, b's hop, b's page
            state, _ = await workbench.acquire()
            workbench.release(state, 0.0)
        assert workbench.busy()  # c is still parked
        workbench.unpark(held["c.test"])
        state, _ = await workbench.acquire()
        workbench.release(state, 0.0)
        assert not workbench.busy()

    asyncio.run(scenario())


def test_a_parked_host_takes_no_turns_until_unparked_and_its_own_hop_wakes_it():
    clock = ManualClock()
    workbench = Workbench(clock=clock)
    workbench.add(task("a.test", 0))
    workbench.add(task("b.test", 0))
    workbench.add(task("b.test", 1))

    async def scenario():
        first, _ = await workbench.acquire()
        second, _ = await workbench.acquire()
        a = first if first.host == "a.test" else second
        b = second if a is first else first
        a.back_queue.appendleft(task("a.test", 0))  # the page waits for a robots.txt hop at b
        workbench.release(a, 0.0, park=True)
        workbench.release(b, 1.0)
        clock.advance(5.0)
        await settle()
        with pytest.raises(InvariantError, match="not checked out"):
            workbench.release(a, 0.0)  # parked is not checked out
        assert workbench.busy()  # a parked host is work still to do
        state, _ = await workbench.acquire()
        assert state is b  # a is parked: only b comes, although a's time has long come
        workbench.release(b, 1.0)
        workbench.add_first(task("a.test", 99, robots_for="http://a.test"))  # a hop back to a
        state, t = await workbench.acquire()
        return state is a, t.url

    assert asyncio.run(scenario()) == (True, "http://a.test/99")


class CountingClock(ManualClock):
    """A manual clock that counts how often a worker went to sleep on it, with which timeout
    (None: no alarm), and how often a sleeper woke (by its alarm or by the workbench)."""

    def __init__(self):
        super().__init__()
        self.sleeps = 0
        self.timeouts: list[float | None] = []
        self.wakes = 0

    async def wait(self, event, timeout):
        self.sleeps += 1
        self.timeouts.append(timeout)
        await super().wait(event, timeout)
        self.wakes += 1


def test_a_change_wakes_one_idle_worker_not_all_of_them():
    """Fifty workers, three hosts: every host is still handed out at its delay, and the idle
    workers sleep at most twice per turn, not fifty times (a shared wake-up woke them all on
    every release: ~20 wake-ups a page with 512 workers)."""
    clock = CountingClock()
    workbench = Workbench(clock=clock)
    for host in ("a.test", "b.test", "c.test"):
        for n in range(6):
            workbench.add(task(host, n))
    turns = run_workers(workbench, clock, {"a.test": 1.0, "b.test": 1.5, "c.test": 2.0}, workers=50)
    assert len(turns) == 18
    for host, delay in (("a.test", 1.0), ("b.test", 1.5), ("c.test", 2.0)):
        times = [when for when, url in turns if f"//{host}/" in url]
        assert times == [pytest.approx(max(0.0, delay * n + (0.5 - delay * n % 0.5) % 0.5)) for n in range(6)]
    # Each worker sleeps once at the start; after that, a turn wakes at most a watcher or
    # two (waking one worker per change, whether or not it had anything to do, slept 104).
    assert clock.sleeps <= 50 + 2 * len(turns), clock.sleeps


def test_links_to_new_hosts_found_while_every_host_is_held_each_wake_one_idle_worker():
    """a.test held, two workers idle: a link to b.test wakes one of them, which takes it (not
    both: the other would only sleep again), and a link to c.test then wakes the other. The
    workbench counts the workers it woke until they have looked; a count left wrong by the
    first wake-up would leave the second worker asleep with c.test due."""
    clock = CountingClock()
    workbench = Workbench(weights=(1.0,), clock=clock)
    workbench.add(task("a.test", 0, priority=1))

    async def scenario():
        await workbench.acquire()  # a.test, held from here on
        idle = [asyncio.create_task(workbench.acquire()) for _ in range(2)]
        await settle()
        woken = []
        for host in ("b.test", "c.test"):
            workbench.add(task(host, 0, priority=1))
            await settle()
            woken.append((clock.wakes, sorted(t.result()[1].url for t in idle if t.done())))
        return clock.timeouts, woken

    timeouts, woken = asyncio.run(scenario())
    assert timeouts == [None, None]  # nothing due later: nobody sets an alarm
    assert woken == [(1, ["http://b.test/0"]), (2, ["http://b.test/0", "http://c.test/0"])]


def test_one_idle_worker_watches_the_time_the_next_host_is_due_and_wakes_alone():
    """a.test is due again at 1 s, x.test at 2 s. Of two idle workers the first sleeps with an
    alarm at 1 s, the second without one (two alarms for one time: two wake-ups, one of them
    for nothing); x.test released meanwhile wakes nobody, as the alarm rings before it is due.
    At 1 s the alarm's worker takes a.test and wakes the other to watch x.test's time, and at
    2 s that one takes x.test."""
    clock = CountingClock()
    workbench = Workbench(weights=(1.0,), clock=clock)
    for host in ("a.test", "x.test"):
        for n in range(2):
            workbench.add(task(host, n, priority=1))

    async def scenario():
        a, _ = await workbench.acquire()
        x, _ = await workbench.acquire()
        workbench.release(a, 1.0)
        first = asyncio.create_task(workbench.acquire())
        await settle()
        second = asyncio.create_task(workbench.acquire())
        await settle()
        workbench.release(x, 2.0)
        await settle()
        seen = [(list(clock.timeouts), clock.wakes)]
        clock.advance(1.0)
        await settle()
        seen.append((list(clock.timeouts), clock.wakes, first.done() and first.result()[1].url, second.done()))
        clock.advance(1.0)
        await settle()
        seen.append(second.done() and second.result()[1].url)
        return seen

    assert asyncio.run(scenario()) == [([1.0, None], 0),
                                       ([1.0, None, 1.0], 2, "http://a.test/1", False),
                                       "http://x.test/1"]


def test_a_new_host_due_now_is_taken_at_once_while_an_idle_worker_sleeps_until_a_later_host_is_due():
    """a.test is due again at 1 s and an idle worker sleeps with an alarm for it: a link to
    b.test, due at once, does not wait for that alarm."""
    clock = ManualClock()
    workbench = Workbench(weights=(1.0,), clock=clock)
    for host, n in (("a.test", 0), ("a.test", 1), ("x.test", 0)):
        workbench.add(task(host, n, priority=1))

    async def scenario():
        a, _ = await workbench.acquire()
        await workbench.acquire()  # x.test, held from here on
        workbench.release(a, 1.0)
        idle = [asyncio.create_task(workbench.acquire()) for _ in range(2)]
        await settle()
        workbench.add(task("b.test", 0, priority=1))
        await settle()
        now = [t.result()[1].url for t in idle if t.done()]
        clock.advance(1.0)
        await settle()
        return now, [t.result()[1].url for t in idle if t.done()]

    assert asyncio.run(scenario()) == (["http://b.test/0"], ["http://b.test/0", "http://a.test/1"])


def test_a_workbench_whose_batch_ended_still_wakes_an_idle_worker_for_a_link_added_later():
    """The render pass adds the links its browser found to the workbench of a batch that ended
    (every idle worker woken, and gone), then runs workers again: a new link must still wake
    an idle worker."""
    workbench = Workbench(weights=(1.0,), clock=ManualClock())
    workbench.add(task("a.test", 0, priority=1))

    async def scenario():
        state, _ = await workbench.acquire()
        idle = [asyncio.create_task(workbench.acquire()) for _ in range(2)]
        await settle()
        workbench.release(state, 0.0)  # the batch is done: every worker ends
        await settle()
        ended = [t.result() for t in idle] + [await workbench.acquire()]
        workbench.add(task("b.test", 0, priority=1))  # links the render pass found
        await workbench.acquire()  # b.test, held
        waiting = asyncio.create_task(workbench.acquire())
        await settle()
        workbench.add(task("c.test", 0, priority=1))
        await settle()
        return ended, waiting.done() and waiting.result()[1].url

    assert asyncio.run(scenario()) == ([None, None, None], "http://c.test/0")


def test_the_real_clock_wakes_a_waiter_at_its_timeout_or_when_it_is_woken():
    async def scenario():
        loop, clock = asyncio.get_running_loop(), MonotonicClock()
        timed_out = loop.create_future()
        started = clock.now()
        await clock.wait(timed_out, 0.05)  # nobody wakes it: the timeout does
        slept = clock.now() - started
        woken = loop.create_future()
        loop.call_soon(wake, woken)
        started = clock.now()
        await clock.wait(woken, 30.0)  # woken long before its timeout
        early = clock.now() - started
        wake(woken)  # a second wake-up does nothing
        return slept, early, timed_out.done()

    slept, early, done = asyncio.run(scenario())
    assert 0.04 <= slept < 1.0 and early < 1.0 and done


async def turns_until_done(workbench: Workbench, limit: int = 50) -> list[str]:
    """One worker takes every turn, releasing each host at once; the URLs in order (bounded,
    and each acquire bounded in time: a workbench that never says "done" fails the test)."""
    urls = []
    for _ in range(limit):
        turn = await asyncio.wait_for(workbench.acquire(), 2.0)
        if turn is None:
            return urls
        state, t = turn
        urls.append(t.url)
        workbench.release(state, 0.0)
    raise AssertionError(f"still busy after {limit} turns: {urls}")


def test_hosts_due_together_take_turns_in_the_order_they_became_ready():
    """Not by name: b.test was ready first."""
    workbench = Workbench(weights=(1.0,))
    for host in ("b.test", "a.test", "c.test"):
        workbench.add(task(host, 0, priority=1))
    assert asyncio.run(turns_until_done(workbench)) == ["http://b.test/0", "http://a.test/0", "http://c.test/0"]


def test_a_robots_hop_added_first_takes_a_back_queue_past_the_bound_and_gives_it_back():
    """One back queue: a.test holds it; a robots.txt hop for r.test gets one of its own at once
    (a host waits for it), and c.test waits in the front queue until both are done."""
    workbench = Workbench(weights=(1.0,), max_back_queues=1)
    workbench.add(task("a.test", 0, priority=1))
    workbench.add(task("a.test", 1, priority=1))
    workbench.add(task("c.test", 0, priority=1))

    async def scenario():
        first = await workbench.acquire()
        workbench.add_first(task("r.test", 0, robots_for="http://x.test"))
        workbench.release(first[0], 0.0)
        return [first[1].url, *await turns_until_done(workbench)]

    order = asyncio.run(scenario())
    assert order.index("http://r.test/0") < order.index("http://c.test/0")
    assert order.index("http://a.test/1") < order.index("http://c.test/0")
    assert sorted(order) == ["http://a.test/0", "http://a.test/1", "http://c.test/0", "http://r.test/0"]


def test_no_more_hosts_than_the_bound_hold_back_queues():
    """Two back queues: of three hosts added at once, the third waits in the front queue."""
    workbench = Workbench(weights=(1.0,), max_back_queues=2)
    for host in ("a.test", "b.test", "c.test"):
        workbench.add(task(host, 0, priority=1))
    waiting = [t.host for queue in workbench.front_queues for t in queue]
    assert waiting == ["c.test"] and sorted(h for h, s in workbench.hosts.items() if s.back_queue) == ["a.test", "b.test"]


def test_a_link_to_a_host_holding_a_back_queue_joins_it_ahead_of_hosts_still_waiting():
    """One back queue, held by a.test; c.test waits in the front queue. A link to a.test found
    while it is out joins a.test's back queue, so a.test's turn comes before c.test's."""
    workbench = Workbench(weights=(1.0,), max_back_queues=1, clock=ManualClock())
    workbench.add(task("a.test", 0, priority=1))
    workbench.add(task("c.test", 0, priority=1))

    async def scenario():
        state, _ = await workbench.acquire()
        workbench.add(task("a.test", 1, priority=1))
        workbench.release(state, 0.0)
        return (await workbench.acquire())[1].url

    assert asyncio.run(scenario()) == "http://a.test/1"


def test_a_parked_host_woken_by_its_own_hop_ends_the_batch_when_done():
    """add_first to a parked host unparks it: once its queue is done the workbench is not busy."""
    workbench = Workbench(weights=(1.0,))
    workbench.add(task("a.test", 0, priority=1))

    async def scenario():
        state, t = await workbench.acquire()
        state.back_queue.appendleft(t)  # its page waits for a robots.txt hop
        workbench.release(state, 0.0, park=True)
        workbench.add_first(task("a.test", 99, robots_for="http://a.test"))
        assert not state.parked
        return await turns_until_done(workbench)

    assert asyncio.run(scenario()) == ["http://a.test/99", "http://a.test/0"]
    assert not workbench.busy()


def test_a_hop_added_first_to_a_checked_out_host_waits_for_its_release():
    workbench = Workbench(weights=(1.0,))
    workbench.add(task("a.test", 0, priority=1))

    async def scenario():
        state, _ = await workbench.acquire()
        workbench.add_first(task("a.test", 99, robots_for="http://a.test"))
        waiting = asyncio.create_task(workbench.acquire())
        await settle()
        assert not waiting.done()  # the host is held: nobody else gets it
        workbench.release(state, 0.0)
        await settle()
        state, t = await asyncio.wait_for(waiting, 2.0)
        workbench.release(state, 0.0)
        return t.url, await turns_until_done(workbench)

    assert asyncio.run(scenario()) == ("http://a.test/99", [])


def test_an_idle_worker_is_woken_by_new_work_without_the_clock_moving():
    clock = ManualClock()
    workbench = Workbench(weights=(1.0,), clock=clock)
    workbench.add(task("a.test", 0, priority=1))

    async def scenario():
        held = await workbench.acquire()  # busy: a host is checked out
        idle = asyncio.create_task(workbench.acquire())
        await settle()
        assert not idle.done()
        workbench.add(task("b.test", 0, priority=1))  # a link to another host
        await settle()
        assert idle.done(), "the idle worker slept through new work"
        workbench.release(held[0], 0.0)
        return idle.result()[1].url

    assert asyncio.run(scenario()) == "http://b.test/0"


def test_without_an_rng_of_its_own_the_front_queue_choice_is_seeded():
    """Two workbenches without an rng choose front queues alike: a batch resumed from its
    checkpoint asks in the same order."""
    def order():
        workbench = Workbench(max_back_queues=1)
        for n in range(40):
            workbench.add(task(f"h{n}.test", n, priority=1 + n % 5))
        return asyncio.run(turns_until_done(workbench, limit=100))

    first = order()
    assert len(first) == 40 and first == order()


def test_drop_host_empties_the_queue_of_a_checked_out_host_and_returns_its_tasks():
    workbench = Workbench(weights=(1.0,))
    for n in range(3):
        workbench.add(task("a.test", n, priority=1))

    async def scenario():
        state, _ = await workbench.acquire()
        dropped = workbench.drop_host(state)
        workbench.release(state, 0.0)
        return dropped, await turns_until_done(workbench)

    dropped, rest = asyncio.run(scenario())
    assert [t.url for t in dropped] == ["http://a.test/1", "http://a.test/2"] and rest == []


def test_an_unparked_host_takes_turns_again_and_unparking_twice_changes_nothing():
    workbench = Workbench(weights=(1.0,))
    workbench.add(task("a.test", 0, priority=1))
    workbench.add(task("a.test", 1, priority=1))

    async def scenario():
        state, _ = await workbench.acquire()
        workbench.release(state, 0.0, park=True)  # its next page waits for a hop elsewhere
        waiting = asyncio.create_task(workbench.acquire())
        await settle()
        assert not waiting.done() and workbench.busy()
        workbench.unpark(state)  # the hop is done
        workbench.unpark(state)  # (a second wake-up, of a host no longer parked: nothing)
        state, t = await asyncio.wait_for(waiting, 2.0)
        workbench.release(state, 0.0)
        return t.url, await turns_until_done(workbench)

    assert asyncio.run(scenario()) == ("http://a.test/1", [])
    assert not workbench.busy()


def test_queued_tasks_lists_the_front_and_the_back_queues():
    """What a checkpoint saves: every task not handed out yet, wherever it waits."""
    workbench = Workbench(weights=(1.0, 1.0), max_back_queues=1)
    for t in (task("a.test", 0, priority=1), task("a.test", 1, priority=1), task("b.test", 0, priority=2)):
        workbench.add(t)
    assert sorted(t.url for t in workbench.queued_tasks()) == ["http://a.test/0", "http://a.test/1", "http://b.test/0"]


def test_a_task_for_a_url_carries_its_host_and_fields():
    t = FetchTask.for_url("http://A.test:8080/p?q=1", depth=2, priority=1, etag='"v1"')
    assert (t.url, t.host, t.depth, t.priority, t.etag, t.attempt) == ("http://A.test:8080/p?q=1", "a.test", 2, 1, '"v1"', 1)


def test_with_two_priority_levels_holding_urls_the_lower_still_moves():
    """No starvation whatever the number of levels holding URLs: two here (one back queue, so
    the front-queue choice alone decides the order)."""
    workbench = Workbench(weights=(4.0, 1.0), max_back_queues=1, rng=random.Random(1))
    for n in range(100):
        workbench.add(task(f"h{n}.test", n, priority=1 + n % 2))

    async def priorities():
        order = []
        while (turn := await workbench.acquire()) is not None:
            state, t = turn
            order.append(t.priority)
            workbench.release(state, 0.0)
        return order

    first = Counter(asyncio.run(priorities())[:40])
    assert first[1] > 2 * first[2] > 0


def test_a_link_waiting_in_the_front_queue_for_a_held_host_takes_no_second_back_queue():
    """Two back queues, held by x.test and y.test; h.test's two links and z.test's wait in the
    front queue. x.test done: h.test gets its back queue and is checked out. y.test done:
    h.test's second link joins h.test's back queue, and the back queue y.test freed goes to
    z.test, handed out while h.test is still held (counted twice, h.test would keep z.test
    waiting)."""
    workbench = Workbench(weights=(1.0,), max_back_queues=2, clock=ManualClock())
    for host, n in (("x.test", 0), ("y.test", 0), ("h.test", 0), ("h.test", 1), ("z.test", 0)):
        workbench.add(task(host, n, priority=1))

    async def scenario():
        x, _ = await workbench.acquire()
        y, _ = await workbench.acquire()
        workbench.release(x, 0.0)
        h, first = await workbench.acquire()
        workbench.release(y, 0.0)
        waiting = asyncio.create_task(workbench.acquire())
        await settle()
        return first.url, [t.url for t in h.back_queue], waiting.done() and waiting.result()[1].url

    assert asyncio.run(scenario()) == ("http://h.test/0", ["http://h.test/1"], "http://z.test/0")


def test_a_hop_handed_back_to_a_held_host_whose_queue_was_dropped_takes_no_second_back_queue():
    """As the engine does when a host's robots.txt cannot be read: in its turn its queue is
    dropped, and another host's robots.txt hop queued there is handed back to it (add_first).
    It still holds one back queue, its own: of two, the other goes to a link to b.test, which
    an idle worker takes at once."""
    workbench = Workbench(weights=(1.0,), max_back_queues=2, clock=ManualClock())
    workbench.add(task("a.test", 0, priority=1))
    workbench.add(task("a.test", 1, priority=1))

    async def scenario():
        state, _ = await workbench.acquire()
        workbench.add_first(task("a.test", 99, robots_for="http://r.test"))  # r.test's hop, redirected here
        for t in workbench.drop_host(state):
            if t.robots_for is not None:  # still owed to r.test
                workbench.add_first(t)
        workbench.add(task("b.test", 0, priority=1))
        waiting = asyncio.create_task(workbench.acquire())
        await settle()
        taken = waiting.done() and waiting.result()[1].url
        workbench.release(state, 0.0)
        if waiting.done():
            workbench.release(waiting.result()[0], 0.0)
        return taken, await turns_until_done(workbench)

    assert asyncio.run(scenario()) == ("http://b.test/0", ["http://a.test/99"])


def test_a_host_state_written_behind_the_workbench_back_is_refused_with_a_sentence_naming_it():
    """The workbench's part of a VisitState (back_queue, checked_out, in_heap, parked) is its
    own. A caller that writes it is refused when the workbench next meets the host, with a
    sentence naming the host, not left to hand a host out empty or twice: a ready host's queue
    emptied by hand (not by drop_host in its turn), a held host marked as in the heap, a
    parked host marked as held."""
    emptied = Workbench(weights=(1.0,))
    emptied.add(task("a.test", 0, priority=1))
    emptied.hosts["a.test"].back_queue.clear()
    with pytest.raises(InvariantError, match=r"^a\.test in the heap but not ready$"):
        asyncio.run(emptied.acquire())

    async def held(workbench: Workbench):
        return (await workbench.acquire())[0]

    marked = Workbench(weights=(1.0,))
    marked.add(task("a.test", 0, priority=1))
    state = asyncio.run(held(marked))
    state.in_heap = True
    with pytest.raises(InvariantError, match=r"^a\.test released but not where the invariant puts it$"):
        marked.release(state, 0.0)

    parked = Workbench(weights=(1.0,))
    for n in range(2):
        parked.add(task("a.test", n, priority=1))
    state = asyncio.run(held(parked))
    parked.release(state, 0.0, park=True)
    state.checked_out = True
    with pytest.raises(InvariantError, match=r"^a\.test parked and held$"):
        parked.unpark(state)
