"""recrawl: a batch web recrawl pipeline (crawler core, Dagster-free steps, Dagster assets)."""

from .crawler.runtime import keep_numpy_off_huge_pages

keep_numpy_off_huge_pages()  # before any module imports numpy: crawler/runtime.py says why
