"""The day's recrawl plan as the frontier and the fetch batches of that day read it.

recrawl_priorities[D] is computed when day D closes and plans day D + 1, so the plan for a
day is the priorities file of the day before: one file, or one a shard when the priorities
are planned per shard (shard_priorities.py; complete once every shard the crawl's plan was
made over has written its own). Without one (the first day, or a day whose eve did not
close) the frontier takes every known URL within the budgets and the fetch batches follow
the links they find, as before recrawl priorities existed.
"""

from __future__ import annotations

from datetime import date as Date, timedelta
from pathlib import Path

from ...storage.layout import crawl_price_file, priorities_file, shard_priorities_file
from .shard_priorities import planned_shards


def next_day(date: str) -> str:
    return (Date.fromisoformat(date) + timedelta(days=1)).isoformat()


def previous_day(date: str) -> str:
    return (Date.fromisoformat(date) - timedelta(days=1)).isoformat()


def priorities_files(root: Path, day: str) -> list[Path]:
    """recrawl_priorities of `day` (the plan for the day after): its one file, or every shard's
    of a plan made per shard; [] while it is not written whole."""
    whole = priorities_file(root, day)
    if whole.exists():
        return [whole]
    price = crawl_price_file(root, day)
    if not price.exists():
        return []
    files = [shard_priorities_file(root, day, shard) for shard in planned_shards(price.read_bytes())]
    return files if all(f.exists() for f in files) else []


def plan_path(root: Path, date: str) -> list[Path] | None:
    """The plan for `date`: the files of recrawl_priorities of the day before, if it was made."""
    return priorities_files(root, previous_day(date)) or None


def plan_location(plan: list[Path] | None) -> str:
    """Where a plan (plan_path) lies: its file, or the folder of its shards' files."""
    if not plan:
        return "none: every known URL within the budgets"
    return str(plan[0] if len(plan) == 1 else plan[0].parent.parent)


def priorities_written(root: Path, day: str) -> Path:
    """The file whose presence and age say recrawl_priorities of `day` was written whole: its
    one file, or the oldest of its shards' (the one file's path, missing, while it is not)."""
    files = priorities_files(root, day)
    return min(files, key=lambda f: f.stat().st_mtime) if files else priorities_file(root, day)
