"""Small measurements shared by fetch_engine.py and scrapy_peer.py."""

from __future__ import annotations

import statistics
from collections.abc import Iterable


def time_to_fraction(offsets: list[float], fraction: float = 0.95) -> float:
    """Seconds from the start until `fraction` of the pages had been fetched."""
    if not offsets:
        return 0.0
    ordered = sorted(offsets)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def median_host_span(pages: Iterable[tuple[str, float]]) -> float:
    """Median over hosts of the seconds between a host's first and last page.

    Close to the wall time, it says the hosts were crawled side by side, each one request
    after another with its delays in between: per-host politeness, not throughput, was
    the limit."""
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for host, moment in pages:
        first[host] = min(moment, first.get(host, moment))
        last[host] = max(moment, last.get(host, moment))
    return statistics.median(last[h] - first[h] for h in first) if first else 0.0


def peak_rss_kb() -> int:
    """This process's peak resident set size, in KiB.

    VmHWM from /proc where there is one: ru_maxrss can carry the parent's peak into a
    child started with vfork + exec (as subprocess and multiprocessing's spawn do), since
    Linux records the old memory map's high-water mark at exec."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def load_line(at_start: tuple[float, float, float]) -> str:
    """The machine's 1-minute load average when the benchmark started and now: on a shared
    machine the figures above it are only as good as the cores it had."""
    import os

    return (f"load average {at_start[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
            f"on {os.cpu_count()} cores")


def stall_totals() -> dict[str, int]:
    """Microseconds since boot during which some task on the machine waited for a core ("cpu")
    or for I/O ("io"): Linux's pressure stall information; empty without /proc/pressure."""
    totals = {}
    for kind in ("cpu", "io"):
        try:
            with open(f"/proc/pressure/{kind}") as pressure:
                some = pressure.readline().split()
        except OSError:
            continue
        totals[kind] = int(some[-1].partition("=")[2])
    return totals


def stall_line(at_start: dict[str, int], seconds: float) -> str:
    """How much of `seconds` some task waited for a core, and for I/O, since at_start
    (stall_totals): it tells a wall time stretched by other work on the machine (cpu) from one
    stretched by disk waits (io)."""
    now = stall_totals()
    shares = [f"for {'a core' if kind == 'cpu' else 'I/O'} {100 * (now[kind] - at_start[kind]) / 1e6 / seconds:.0f}%"
              for kind in ("cpu", "io") if kind in now and kind in at_start]
    return f"while it ran some task waited {' and '.join(shares)} of the time" if shares else "no pressure figures"
