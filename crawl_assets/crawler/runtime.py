"""How this process runs numpy: the threads of its long passes, and the kernel's huge pages.
Both are process-wide, and this is the one place either is set.

NUMPY_THREADS: the threads that share a pass over a 10M-long column (numpy releases the GIL
inside its loops): the priorities' slices (pipeline/priorities/slices.py) and gathers, the
change rates' maximum-likelihood search, and SimHash's near-duplicate tables. No result
depends on it: slices are fixed whatever the count, each URL's rate is its own root, and
the pairs are a set. At most 4, and no more than the machine's cores. DuckDB and Arrow
keep their own pools (a thread per core).

Huge pages: numpy asks the kernel for transparent huge pages for every large array
(madvise). Where the kernel then defragments memory on the spot (defrag=madvise), each new
80 MB array of the 10M-URL steps can stall on compaction, and the steps take longer with
huge pages than without (bench/README.md). numpy reads NUMPY_MADVISE_HUGEPAGE once,
when it is first imported, so `import crawl_assets` sets it (to 0) before anything imports
numpy: every process that runs the package - the Dagster code location and its runs, the
command line, the Celery workers, the tests and benchmarks - gets it. A value the user set
is kept (NUMPY_MADVISE_HUGEPAGE=1 turns huge pages back on).
"""

from __future__ import annotations

import os

NUMPY_THREADS = min(4, os.cpu_count() or 1)


def keep_numpy_off_huge_pages() -> None:
    """NUMPY_MADVISE_HUGEPAGE=0 unless the user set it; to be called before numpy is imported."""
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
