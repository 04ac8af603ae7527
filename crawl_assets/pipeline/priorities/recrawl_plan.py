"""The day's recrawl plan as the frontier and the fetch batches of that day read it.

recrawl_priorities[D] is computed when day D closes and plans day D + 1, so the plan for a
day is the priorities file of the day before. Without one (the first day, or a day whose
eve did not close) the frontier takes every known URL within the budgets and the fetch
batches follow the links they find, as before recrawl priorities existed.
"""

from __future__ import annotations

from datetime import date as Date, timedelta
from pathlib import Path

from ...storage.layout import priorities_file


def next_day(date: str) -> str:
    return (Date.fromisoformat(date) + timedelta(days=1)).isoformat()


def previous_day(date: str) -> str:
    return (Date.fromisoformat(date) - timedelta(days=1)).isoformat()


def plan_path(root: Path, date: str) -> Path | None:
    """The plan for `date`: recrawl_priorities of the day before, if it was made."""
    path = priorities_file(root, previous_day(date))
    return path if path.exists() else None

