"""The depth rule, stated once for everyone who decides whether a URL is fetched: the plan's
known URLs (pipeline/recrawl_inputs.py), the frontier (pipeline/frontier_step.py) and the fetch
batch's admission (crawler/fetching/admission.py). A URL's depth is the number of links from a
seed (0) to it, at the shallowest it was found; a URL deeper than max_depth is not fetched.
If the plan or the frontier judged it otherwise, the batch would refuse a URL it was given,
and the day's check that every frontier URL is accounted for would fail."""

from __future__ import annotations


def too_deep(depth, max_depth: int):
    """Whether `depth` (an int, or a numpy array of them) is beyond max_depth."""
    return depth > max_depth
