"""The archived-payload index on disk (payload_index.py): the same answers as a dict of every
first capture built in memory, whether built at once or day by day from the file before, and
its look-ups read the file without loading it."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from crawl_assets.crawler.archive.warc import warc_date
from crawl_assets.crawler.archive.warc_index import IndexedRecord, captures_table, url_key
from crawl_assets.pipeline.archive import payload_index as payload_index_module
from crawl_assets.pipeline.archive.payload_index import PayloadIndex, index_folder, payload_index
from crawl_assets.storage.layout import warc_dir, write_parquet_atomic

DAYS = ["2026-11-25", "2026-11-26", "2026-11-27", "2026-11-28"]


def random_captures(rng: random.Random, day: str, count: int, digests: list[str]) -> list[tuple]:
    """(url, captured_at, warc_type, status, digest) rows of one day: copies of earlier payloads
    and new ones, revisits, failed answers, microsecond times."""
    start = datetime.fromisoformat(day).replace(tzinfo=timezone.utc)
    rows = []
    for i in range(count):
        digest = rng.choice(digests) if digests and rng.random() < 0.4 else f"sha1:{rng.getrandbits(100):032X}"
        digests.append(digest)
        kind = rng.choice(["response"] * 6 + ["revisit", "request"])
        status = rng.choice([200] * 8 + [206, 304, 404, None])
        when = start + timedelta(microseconds=rng.randrange(86_400 * 10**6))
        rows.append((f"http://h{rng.randrange(9)}.test/p{i}", when, kind, status, digest))
    return rows


def write_day(root, day: str, rows: list[tuple]) -> None:
    for shard in ("s00", "s01"):
        records = [IndexedRecord(url_key(url), when.strftime("%Y%m%d%H%M%S"), when, url, "text/html", status,
                                 digest, 100, 0, "x.warc.gz", kind, None, None, None)
                   for n, (url, when, kind, status, digest) in enumerate(rows) if n % 2 == (shard == "s01")]
        write_parquet_atomic(captures_table(records), warc_dir(root, day, shard) / "x.parquet")


def first_captures(rows: list[tuple]) -> dict[str, tuple[str, str]]:
    """What the index must hold, computed the plain way: each payload's earliest full 2xx response."""
    first: dict[str, tuple] = {}
    for url, when, kind, status, digest in rows:
        if kind == "response" and status is not None and 200 <= status < 300:
            if digest not in first or (when, url) < first[digest]:
                first[digest] = (when, url)
    return {digest: (url, warc_date(when)) for digest, (when, url) in first.items()}


def test_built_day_by_day_or_at_once_the_index_holds_each_payloads_first_full_capture(tmp_path, monkeypatch):
    monkeypatch.setattr(payload_index_module, "BATCH_ROWS", 500)  # the files written a batch at a time
    monkeypatch.setattr(payload_index_module, "SPARSE", 16)  # and read in many blocks
    rng = random.Random(5)
    root, digests, rows = tmp_path / "root", [], []
    by_day = {}
    for day in DAYS:
        by_day[day] = random_captures(rng, day, 2500, digests)
        write_day(root, day, by_day[day])
    daily = tmp_path / "daily"
    for n, day in enumerate(DAYS[1:] + ["2026-11-29"], start=1):  # each day from the day before's file
        index = payload_index(root, day, daily)
        rows = [row for earlier in DAYS[:n] for row in by_day[earlier]]
        expected = first_captures(rows)
        assert len(index) == len(expected) and dict(index.items()) == expected, day
    assert len(list(daily.glob("before=*"))) == 2  # older indexes deleted
    at_once = payload_index(root, "2026-11-29", tmp_path / "at_once")
    assert dict(at_once.items()) == dict(index.items())
    for name in ("keys", "offsets", "heap"):
        assert (index.folder / name).read_bytes() == (at_once.folder / name).read_bytes()


def test_look_ups_of_every_kind_of_digest(tmp_path):
    rows = [("http://a.test/1", datetime(2026, 11, 27, 10, tzinfo=timezone.utc), "response", 200, f"sha1:{n:04d}")
            for n in range(0, 300, 3)]
    write_day(tmp_path, "2026-11-27", rows)
    index = payload_index(tmp_path, "2026-11-28", tmp_path / "index")
    assert index.get("sha1:0000") == ("http://a.test/1", "2026-11-27T10:00:00.000000Z")
    assert index["sha1:0297"][0] == "http://a.test/1" and "sha1:0297" in index
    for missing in ("sha1:0001", "sha1:", "", "sha1:9999", "a", "sha1:0298", "\uffff"):
        assert index.get(missing) is None and missing not in index
    assert 42 not in index
    # the day before anything was archived: an empty index (a file with no rows)
    empty = payload_index(tmp_path, "2026-11-27", tmp_path / "index")
    assert len(empty) == 0 and empty.get("sha1:0000") is None and dict(empty) == {}
    assert PayloadIndex().get("sha1:0000") is None


def test_an_index_there_is_read_not_built_again(tmp_path):
    write_day(tmp_path, "2026-11-27", [("http://a.test/", datetime(2026, 11, 27, tzinfo=timezone.utc),
                                        "response", 200, "sha1:AAA")])
    first = payload_index(tmp_path, "2026-11-28", tmp_path / "index")
    built = (index_folder(tmp_path / "index", "2026-11-28") / "keys").stat().st_mtime_ns
    assert payload_index(tmp_path, "2026-11-28", tmp_path / "index").get("sha1:AAA") == first["sha1:AAA"]
    assert (index_folder(tmp_path / "index", "2026-11-28") / "keys").stat().st_mtime_ns == built


def test_a_build_that_finds_the_index_built_meanwhile_keeps_that_one(tmp_path):
    # As when another machine sharing the folder finished first: its index stands, ours goes.
    write_day(tmp_path, "2026-11-27", [("http://a.test/", datetime(2026, 11, 27, tzinfo=timezone.utc),
                                        "response", 200, "sha1:AAA")])
    folder = tmp_path / "index"
    first = payload_index(tmp_path, "2026-11-28", folder)
    payload_index_module.build_index(tmp_path, "2026-11-28", folder)
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == ["before=2026-11-28"]
    assert PayloadIndex(first.folder)["sha1:AAA"] == ("http://a.test/", "2026-11-27T00:00:00.000000Z")
