"""URL aliases learnt per host from the crawl's own fetches (alias_learning.py)."""
