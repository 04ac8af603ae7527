"""The ordinary generated site: its hosts and pages, link graph, robots.txt variants, habits
per host, and when each page changes (with the true history for the benchmarks)."""
