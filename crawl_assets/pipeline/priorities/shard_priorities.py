"""The day's recrawl priorities per shard, each stage a process of its own (a Dagster step, on
any worker), the files between them under the data root:

1. each shard (priority_part[D|S]): the shard's pages prepared from its own inputs
   (recrawl_inputs.priorities_inputs with its shard; priorities_step.prepare_part), the heavy
   part (DuckDB over change_stats, the links and the fetch logs), written as the shard's
   summary (write_part: Arrow IPC files, read back memory-mapped);
2. the crawl (crawl_price[D]): its typical change rate, its one price and its plan, from the
   shards' summaries read one shard at a time (plan_of_shards): each question of the price
   search is asked of every shard in turn, from the arrays it needs of the shard's priced
   pages (24 bytes a page, in local files written when the summary is first read), so no
   process holds more than one shard's pages (a handful of rounds:
   refresh_allocation.crawl_log_price); then the crawl's head of its plan order (its head-th
   gain, by radix selection over every shard's gains at the price, kept in local files:
   plan_offers.head_cut), and each shard's offer for the plan within it, from its summary (so
   the plan holds the crawl's head, not every shard's head of as many rows: at a budget of a
   tenth of the crawl, that was every page);
3. each shard (shard_priorities[D|S]): its schedule at the crawl's price, its planned rows
   ranked as the crawl's plan ranks them: its URL priorities and host budgets.

Each stage calls what priorities_of_parts calls over parts held in one process (the same
functions, the same order of sums), so the shards' tables are its tables, row for row."""

from __future__ import annotations

import json
import tempfile
from types import SimpleNamespace
from dataclasses import asdict, dataclass
from datetime import date as Date
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...storage.shared_root import is_remote, write_file_atomic
from .priorities_step import (
    PreparedPart, PriorityCounts, check_objective, crawl_counts, part_counts, part_output,
    part_schedule, plan_day_number, typical_rate_of_parts,
)
from .refresh_allocation import AllocationPart
from .plan_offers import HeadCut, head_cut
from .url_schedule import (
    OFFER_ARRAYS, CrawlPrice, crawl_plan, crawl_price, expected_freshness, head_keys, offer_of, planned_of_parts,
)

# The summary's tables (one Arrow IPC file each in the shard's folder); pages: the URL, then
# the prepared columns, then INLINKS.
PART_TABLES = ("pages", "host_names", "caps", "host_rates", "facts", "hosts")
INLINKS = "inlinks_of_url"


def part_tables(part: PreparedPart, hosts: pa.Table) -> dict[str, pa.Table]:
    """The shard's summary as tables (PART_TABLES), to write in its folder; hosts: its host facts
    with their flags (recrawl_inputs.host_facts), for its host budgets."""
    assert "url" not in part.columns and INLINKS not in part.columns
    pages = pa.table({"url": part.url, **{name: pa.array(values) for name, values in part.columns.items()},
                      INLINKS: pa.array(part.inlinks)})
    return {"pages": pages, "host_names": pa.table({"host": part.host_names}), "caps": part.caps,
            "host_rates": part.host_rates, "facts": part.facts, "hosts": hosts}


def write_part(tables: dict[str, pa.Table], folder: Path) -> int:
    """Each table to `folder`/<name>.arrow (written whole, then renamed or uploaded); returns the bytes."""
    for name in PART_TABLES:
        table = tables[name]
        write_file_atomic(folder / f"{name}.arrow", lambda tmp, table=table: _write_ipc(table, tmp))
    return sum(table.nbytes for table in tables.values())


def _write_ipc(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _read_ipc(path: Path, columns: list[str] | None = None) -> pa.Table:
    source = pa.py_buffer(path.read_bytes()) if is_remote(path) else pa.memory_map(str(path))
    table = pa.ipc.open_file(source).read_all()
    return table.select(columns) if columns else table


def read_part(folder: Path) -> tuple[PreparedPart, pa.Table]:
    """A shard's summary (write_part) as its prepared pages, and its host facts with their flags."""
    tables = {name: _read_ipc(folder / f"{name}.arrow") for name in PART_TABLES}
    pages = tables["pages"]
    columns = {name: _numbers(pages[name]) for name in pages.column_names if name not in ("url", INLINKS)}
    part = PreparedPart(pages["url"], columns, tables["host_names"]["host"].combine_chunks(), tables["caps"],
                        tables["host_rates"], tables["facts"], _numbers(pages[INLINKS]))
    return part, tables["hosts"]


def _numbers(column: pa.ChunkedArray) -> np.ndarray:
    return column.combine_chunks().to_numpy(zero_copy_only=False)


def _own_rates(folder: Path, kept: Path) -> np.ndarray:
    """The shard's URLs' own change rates, read from its summary once, then from `kept`, a local
    file (the typical rate's selection reads them some ten times)."""
    if not kept.exists():
        rates = _numbers(_read_ipc(folder / "pages.arrow", ["own_change_rate"])["own_change_rate"])
        np.save(kept, rates[~np.isnan(rates)])
    return np.load(kept, mmap_mode="r")


class _StoredShard:
    """A shard's answers to the crawl's price search and its plan. Its schedule is built once
    from its summary, and what the search asks of it (its AllocationPart's arrays: rate, weight
    and host of its priced pages, 24 bytes each) kept in local .npy files, read memory-mapped for
    each question; the spends it gave are kept (the search asks some prices twice). At the
    crawl's price, what its offers read is kept the same way (keep_priced)."""

    ARRAYS = ("rate", "weight", "host", "cap")

    def __init__(self, folder: Path, scratch: Path, everyone: float, now: float, settings):
        self.folder, self.scratch, self.everyone, self.now, self.settings = folder, scratch, everyone, now, settings
        self._spent: dict[float, int] = {}
        _, schedule = self.schedule()
        held = schedule.held
        scratch.mkdir(parents=True)
        for name, values in zip(self.ARRAYS, (schedule.rate[held], schedule.weight[held], schedule.host[held],
                                              schedule.cap)):
            np.save(scratch / f"{name}.npy", values)
        self.priced, self.held = schedule.allocation.priced, len(held)
        self.never_fetched = int(schedule.discovery.sum())

    def schedule(self):
        part, _ = read_part(self.folder)
        return part, part_schedule(part, self.everyone, self.now, self.settings)

    def allocation(self) -> AllocationPart:
        """The AllocationPart PartSchedule makes of these pages (the same arguments)."""
        rate, weight, host, cap = (np.load(self.scratch / f"{name}.npy", mmap_mode="r") for name in self.ARRAYS)
        return AllocationPart(rate, weight, host, cap, objective=self.settings.recrawl_objective)

    def spend(self, log_price: float) -> int:
        if log_price not in self._spent:
            self._spent[log_price] = self.allocation().spend(log_price)
        return self._spent[log_price]

    def sample(self, step: int):
        return self.allocation().sample(step)

    def edge_hosts(self, log_price: float):
        return self.allocation().edge_hosts(log_price)

    @property
    def kept(self) -> bool:
        return (self.scratch / "offered.json").exists()

    def keep_priced(self, part: PreparedPart, schedule) -> None:
        """What the crawl's plan asks of its schedule priced at the crawl's price, kept in local
        .npy files (about 25 bytes a page): the arrays its offers are made of (OFFER_ARRAYS), its
        plan keys (head_keys, for the crawl's head: plan_offers.head_cut), its URLs' kinds, and
        its figures for the counts. Each round of the plan then reads them, not its summary."""
        for name in OFFER_ARRAYS:
            np.save(self.scratch / f"{name}.npy", getattr(schedule, name))
        np.save(self.scratch / "kind_code.npy", part.columns["kind_code"])
        for due, name in ((True, "due_keys"), (False, "other_keys")):
            np.save(self.scratch / f"{name}.npy", head_keys(schedule, due))
        (self.scratch / "offered.json").write_text(json.dumps({
            "due": int(schedule.due.sum()), "urls": len(part.url), "capped": len(schedule.capped),
            "freshness_sums": schedule.freshness_sums, "refresh": bool(schedule.refresh.any())}))

    def keys(self, due: bool) -> np.ndarray:
        return np.load(self.scratch / f"{'due' if due else 'other'}_keys.npy", mmap_mode="r")

    def offer(self, cut, reach) -> tuple:
        """Its offer (url_schedule.offer_of) from the arrays kept, and what the counts need of it."""
        priced = SimpleNamespace(**{name: np.load(self.scratch / f"{name}.npy", mmap_mode="r")
                                    for name in (*OFFER_ARRAYS, "kind_code")})
        urls = _read_ipc(self.folder / "pages.arrow", ["url"])["url"]
        offer = offer_of(priced, cut, reach, urls)
        figures = json.loads((self.scratch / "offered.json").read_text())
        return offer, _Offered(offer.rows, priced.kind_code[offer.rows], np.asarray(priced.listing[offer.rows]),
                               figures["due"], figures["urls"], figures["capped"], tuple(figures["freshness_sums"]),
                               figures["refresh"])


class _Offered(NamedTuple):
    """What the counts need of a shard's offer: its rows' kinds and listings, its due URLs, ..."""

    rows: np.ndarray
    kinds: np.ndarray
    listing: np.ndarray
    due: int
    urls: int
    capped: int
    freshness_sums: tuple[float, float]
    refresh: bool


@dataclass(frozen=True)
class CrawlPlan:
    """The crawl's figures every shard's last stage prices its pages with, and its plan."""

    price: CrawlPrice
    typical_rate: float  # the change rate of a URL whose host has none (typical_rate)
    ranked: int  # URLs in the plan
    planned: dict[str, tuple[np.ndarray, np.ndarray]]  # each shard's planned rows and their ranks
    counts: PriorityCounts


def plan_of_shards(folders: dict[str, Path], plan_date: str | Date, settings) -> CrawlPlan:
    """Stage 2: the crawl's price and plan from its shards' summaries (folders: each shard's)."""
    check_objective(settings)
    now, shards = plan_day_number(plan_date), list(folders)
    with tempfile.TemporaryDirectory(prefix="recrawl-price-") as scratch:
        everyone = typical_rate_of_parts(lambda i: _own_rates(folders[shards[i]], Path(scratch) / f"{shards[i]}.npy"),
                                         len(shards))
        stored = [_StoredShard(folders[shard], Path(scratch) / shard, everyone, now, settings) for shard in shards]
        price = crawl_price(stored, sum(s.held for s in stored), settings.daily_fetch_budget)
        return _plan_at(stored, shards, price, everyone, settings)


def _plan_at(stored: list[_StoredShard], shards: list[str], price: CrawlPrice, everyone: float,
             settings) -> CrawlPlan:
    """The crawl's plan at its price: each shard priced once and what its offers read kept
    (keep_priced); each round of the plan (url_schedule.crawl_plan), the crawl's head and
    reach found from every shard's plan keys (plan_offers.head_cut), then each shard's offer
    within them."""
    seen: list[_Offered] = [None] * len(shards)  # each shard's last offer, for the counts

    def offers_at(head: int, reach: int):
        if not all(s.kept for s in stored):  # (once: the priced pages do not depend on the head)
            for shard in stored:
                part, schedule = shard.schedule()
                schedule.price(*price)
                shard.keep_priced(part, schedule)
                del part, schedule
        cut, reached = (cut_of(rows) for rows in (head, reach))
        offers = []
        for i, shard in enumerate(stored):
            offer, seen[i] = shard.offer(cut, reached)
            offers.append(offer)
        return offers

    cuts: dict[int, HeadCut] = {}

    def cut_of(rows: int) -> HeadCut:  # (a cut asked again in a later round: found once)
        if rows not in cuts:
            cuts[rows] = head_cut(lambda i, due: stored[i].keys(due), len(stored), rows)
        return cuts[rows]

    day, offers, merged = crawl_plan(offers_at, sum(s.never_fetched for s in stored), settings)
    planned = planned_of_parts(day, offers, merged)
    counts = [part_counts(s.kinds, s.listing, np.isin(s.rows, mine), s.due, s.urls)
              for s, (mine, _) in zip(seen, planned)]
    figures = (sum(s.capped for s in seen), float(np.exp(price.log_price)),
               expected_freshness([s.freshness_sums for s in seen], any(s.refresh for s in seen)), day.explored)
    return CrawlPlan(price, everyone, len(day.ranked), dict(zip(shards, planned)),
                     crawl_counts(counts, settings, figures))


def plan_json(plan: CrawlPlan) -> bytes:
    """The crawl plan's figures (not its rows: planned_rows) as JSON (floats exactly)."""
    return json.dumps({"price": plan.price._asdict(), "typical_rate": plan.typical_rate, "ranked": plan.ranked,
                       "shards": list(plan.planned), "counts": asdict(plan.counts)}, indent=1).encode()


def planned_rows(plan: CrawlPlan) -> pa.Table:
    """Every shard's planned rows (its own row numbers) and their ranks in the crawl's plan."""
    return pa.table({"shard": pa.array([s for s, (rows, _) in plan.planned.items() for _ in rows], pa.string()),
                     "row": pa.array(np.concatenate([r for r, _ in plan.planned.values()] + [np.zeros(0, np.int64)])),
                     "rank": pa.array(np.concatenate([k for _, k in plan.planned.values()] + [np.zeros(0, np.int64)]))})


def planned_shards(figures: bytes) -> list[str]:
    """The shards a crawl plan (plan_json) was made over: each writes its own priorities."""
    return json.loads(figures)["shards"]


def read_plan(figures: bytes, rows: pa.Table, shard: str) -> CrawlPlan:
    """The crawl plan (plan_json, planned_rows) with the planned rows of `shard` only."""
    doc = json.loads(figures)
    if shard not in planned_shards(figures):
        raise ValueError(f"the crawl's plan was made over shards {doc['shards']}, not {shard}: "
                         "materialise crawl_price for the day again with this shard count")
    mine = rows.filter(pc.equal(rows["shard"], shard))
    return CrawlPlan(CrawlPrice(**doc["price"]), doc["typical_rate"], doc["ranked"],
                     {shard: (_numbers(mine["row"]), _numbers(mine["rank"]))}, PriorityCounts(**doc["counts"]))


@dataclass(frozen=True)
class ShardPriorities:
    urls: pa.Table  # the shard's URLs' priorities, in URL order (host and kind dictionary-encoded)
    hosts: pa.Table  # its hosts: host, cap, planned (Priorities.hosts)
    host_facts: pa.Table  # its hosts' facts with their flags (for recrawl_inputs.host_budgets)
    counts: dict  # its counts (part_counts)


def shard_priorities(folder: Path, plan: CrawlPlan, shard: str, plan_date: str | Date, settings) -> ShardPriorities:
    """Stage 3: the shard's priorities at the crawl's price, planned as the crawl's plan says."""
    part, host_facts = read_part(folder)
    schedule = part_schedule(part, plan.typical_rate, plan_day_number(plan_date), settings)
    schedule.price(*plan.price)
    rows, ranks = plan.planned[shard]
    urls, hosts, counts = part_output(part, schedule, schedule.columns(rows, ranks, plan.ranked))
    return ShardPriorities(urls, hosts, host_facts, counts)
