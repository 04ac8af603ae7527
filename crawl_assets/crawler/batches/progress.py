"""Checkpoints of a running fetch batch, and how a batch resumes from the last one
(checkpoint.py is the format on disk).

Taking a checkpoint happens between turns, in the engine's event loop (engine.run's tick),
so no record is half written: every fetch-log row so far has its WARC bytes written, and a
URL in flight has written nothing and is still leased. The checkpoint saves, in order: the
WARC files' bytes (fsync), the rows since the last checkpoint, every task not finished (queued
or leased), and then state.json, which commits it. Rows saved are dropped from memory.

Resuming: the WARC files are cut back to the checkpoint (recover_warc), the finished URLs are
known to admission (links to them are not queued again), the pending tasks (in-flight ones
included, so they are fetched again) are the batch's work, each host gets its page count and
what was left of its delay, and the payloads already archived make copies revisit records.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ..archive.warc import WarcFileWriter, warc_date
from ..fetching.engine import FetchEngine
from ..fetching.fetch_record import BatchOutput, FetchRecord
from ..fetching.visit_state import VisitState
from ..fetching.workbench import FetchTask
from ..vocabulary import WarcRecordKind
from .checkpoint import BatchProgress, Checkpoint, WarcRecovery, recover_warc
from .disk_frontier import DiskFrontier

HEAD_PER_HOST = 2  # URLs of a host in memory when the frontier streams from disk (topped up every turn)


@dataclass
class ResumePoint:
    """What a batch starts from: the last checkpoint of an earlier attempt, or nothing."""

    checkpoint: Checkpoint
    tasks: list[FetchTask]  # the work in memory: the frontier, or what the checkpoint left pending
    records: list[FetchRecord] = field(default_factory=list)  # rows finished before
    warc: WarcRecovery = WarcRecovery((), (), ())
    disk: DiskFrontier | None = None  # the frontier's rest, when it streams from disk

    @property
    def resumed(self) -> bool:
        return self.checkpoint.sequence > 0

    def archived_payloads(self) -> dict[str, tuple[str, str]]:
        """Payloads written in full before the crash: a copy fetched now becomes a revisit."""
        return {r.payload_digest: (r.url, warc_date(r.fetched_at)) for r in self.records
                if r.warc_type == WarcRecordKind.RESPONSE and r.payload_digest and r.fetched_at}


def resume_point(progress: BatchProgress, warc_dir: Path,
                 frontier: list[FetchTask] | pa.Table | Path) -> ResumePoint:
    """Load the last checkpoint (if any), make the WARC files agree with it and say what is
    left to do. Rows in a WARC file found damaged are dropped and their URLs done again.
    frontier: the tasks in memory, or a table or Parquet file to stream from disk."""
    checkpoint = progress.load()
    progress.remove_leftovers(checkpoint)
    warc = recover_warc(warc_dir, checkpoint)
    streamed = not isinstance(frontier, list)
    if checkpoint is None:
        if streamed:
            return ResumePoint(Checkpoint(), [], warc=warc, disk=DiskFrontier.build(frontier, progress.folder))
        return ResumePoint(Checkpoint(), list(frontier), warc=warc)
    records = progress.records(checkpoint)
    tasks = [t for t in progress.pending(checkpoint) if t.robots_for is None]  # robots.txt is asked again
    disk = None
    if streamed and checkpoint.frontier_cursors is not None and not checkpoint.finished:
        disk = DiskFrontier.open(progress.folder, checkpoint.frontier_cursors)
    if warc.damaged:
        lost = {r.url for r in records if r.warc_file in warc.damaged}
        by_url = {} if streamed else {t.url: t for t in frontier}
        tasks += [by_url.get(r.url) or FetchTask(r.url, r.host, r.depth) for r in records if r.url in lost]
        records = [r for r in records if r.url not in lost]
    for name in warc.damaged:
        checkpoint.warc_lengths.pop(name, None)
    return ResumePoint(checkpoint, tasks, records, warc, disk)


class FrontierFeeder:
    """Admits the frontier's rest from disk a few URLs per host at a time: `head` of every
    host at the start, then, after each of a host's turns, enough to have `head` queued.

    The frontier's URLs come first in a host's page budget, as when all were admitted at the
    start: each host's share is reserved (counted as admitted) before any link is found, and
    a URL read from disk uses its reservation. URLs admission refuses (too deep, over budget)
    are counted there."""

    def __init__(self, disk: DiskFrontier, engine: FetchEngine, head: int = HEAD_PER_HOST):
        self.disk = disk
        self.engine = engine
        self.head = head
        self.reserved: dict[str, int] = {}

    def start(self) -> None:
        budget = self.engine.admission.max_pages_per_host
        for host, (_, left) in self.disk.cursors.items():
            state = self.engine.workbench.state_of(host)
            self.reserved[host] = share = max(0, min(left, budget - state.admitted))
            state.admitted += share
            self.engine.admission.admitted_total += share
        for host in self.disk.hosts():
            self._fill(host, self.head)

    def top_up(self, state: VisitState) -> None:
        self._fill(state.host, self.head - len(state.back_queue))

    def _fill(self, host: str, wanted: int) -> None:
        while wanted > 0 and host in self.disk.cursors:
            for task in self.disk.take(host, wanted):
                if self.reserved.get(host, 0) > 0:  # its place in the budget is kept: use it
                    self.reserved[host] -= 1
                    self.engine.workbench.state_of(host).admitted -= 1
                    self.engine.admission.admitted_total -= 1
                wanted -= self.engine.admission.admit(task, from_frontier=True)


def restore(engine: FetchEngine, point: ResumePoint) -> None:
    """Give a fresh engine the checkpoint's per-host state and finished URLs."""
    if not point.resumed:
        return
    engine.admission.already_done(r.url for r in point.records)
    pending = Counter(t.host for t in point.tasks)
    elapsed = time.time() - point.checkpoint.written_at
    for host, saved in point.checkpoint.hosts.items():
        state = engine.workbench.state_of(host)
        state.admitted = max(0, saved["admitted"] - pending[host])  # admitting the pending adds them back
        state.next_allowed = engine.clock.now() + max(0.0, saved["wait_s"] - elapsed)
    engine.admission.admitted_total = sum(state.admitted for state in engine.workbench.hosts.values())
    for host, reasons in point.checkpoint.dropped.items():
        for reason, count in reasons.items():
            engine.admission.traps.dropped[host][reason] += count


def output_of(progress: BatchProgress, checkpoint: Checkpoint) -> BatchOutput:
    """A batch's output as its checkpoint holds it: one final row per URL (the latest, should
    a reclaimed lease have answered twice), the links, the drop counts."""
    latest = {r.url: r for r in progress.records(checkpoint)}
    dropped = {host: Counter(reasons) for host, reasons in checkpoint.dropped.items()}
    return BatchOutput(records=list(latest.values()), links=progress.links(checkpoint), dropped=dropped)


class Checkpointer:
    """Takes the checkpoints of one running batch (tick) and the final one (finish)."""

    def __init__(self, progress: BatchProgress, engine: FetchEngine, warc: WarcFileWriter, point: ResumePoint):
        self.progress = progress
        self.engine = engine
        self.warc = warc
        self.last = point.checkpoint
        self.disk = point.disk
        self.feeder: FrontierFeeder | None = None  # set when the frontier streams from disk
        self.checkpoints = 0

    def tick(self) -> None:
        self._write(finished=False)

    def finish(self) -> BatchOutput:
        """The last checkpoint, marked finished, and the batch's whole output read back from it."""
        self._write(finished=True)
        return output_of(self.progress, self.last)

    def _write(self, finished: bool) -> None:
        engine, output = self.engine, self.engine.output
        lengths = self.warc.sync()  # first: the rows below refer to these bytes
        records, links = list(output.records), list(output.links)
        now = engine.clock.now()
        reserved = self.feeder.reserved if self.feeder is not None else {}
        hosts = {host: {"admitted": state.admitted - reserved.get(host, 0),
                        "wait_s": max(0.0, state.next_allowed - now)}
                 for host, state in engine.workbench.hosts.items() if state.admitted}
        pending = engine.workbench.queued_tasks() + engine.leases.outstanding()
        dropped = {host: dict(reasons) for host, reasons in output.dropped.items()}
        cursors = self.disk.cursors if self.disk is not None else None
        self.last = self.progress.write(self.last, records, links, pending, lengths, hosts, dropped, finished,
                                        cursors)
        self.checkpoints += 1
        del output.records[:len(records)]  # saved: memory holds only rows since the checkpoint
        del output.links[:len(links)]
