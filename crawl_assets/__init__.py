"""recrawl: a batch web recrawl pipeline (crawler core, Dagster-free steps, Dagster assets)."""

import os

# numpy asks the kernel for transparent huge pages for every large array (madvise). Where the
# kernel then defragments memory on the spot (defrag=madvise, as here), each new 80 MB array
# of the 10M-URL steps can stall on compaction: recrawl_priorities took 19-21 s with it and
# 15-16 s without, on the same inputs. Set before numpy is imported (numpy reads it once);
# a value the user set is kept.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
