"""numpy passes over 10M-long columns, split into fixed slices and run on NUMPY_THREADS threads
(crawler/runtime.py).

numpy releases the GIL inside its loops, so threads over slices use every core. The slices
are fixed (SLICE elements, in order) whatever the number of threads, so a sum made slice by
slice and added in slice order is the same on any machine: the same price, the same plan.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ...crawler.runtime import NUMPY_THREADS

SLICE = 1 << 18


def over_slices(n: int, work, with_worker: bool = False) -> list:
    """work(slice[, worker]) over fixed slices of range(n), in order, on up to NUMPY_THREADS threads
    (numpy releases the GIL in each slice's passes); the results in slice order."""
    slices = [slice(start, min(start + SLICE, n)) for start in range(0, n, SLICE)]
    if len(slices) <= 1 or NUMPY_THREADS == 1:
        return [work(s, 0) if with_worker else work(s) for s in slices]
    groups = [slices[i::NUMPY_THREADS] for i in range(NUMPY_THREADS)]  # worker i: every NUMPY_THREADS-th slice

    def run(i):
        return [work(s, i) if with_worker else work(s) for s in groups[i]]

    with ThreadPoolExecutor(NUMPY_THREADS) as pool:
        done = list(pool.map(run, range(NUMPY_THREADS)))
    results = [None] * len(slices)
    for i, values in enumerate(done):
        results[i::NUMPY_THREADS] = values
    return results
