"""The day's frontier inputs split by shard once, by the day's start (a day per shard:
frontier_shard_inputs.start_day_split), each shard's frontier then built from its own part of
the split (shard_day_inputs): the same rows as the one-process frontier; a start that crashed
half-way leaves nothing a shard reads, a start run again gives the same shards' inputs, and
only the day's newest split is kept."""

import dataclasses
import json
import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from crawl_assets.crawler.crawl_errors import CrawlInputError
from crawl_assets.pipeline import frontier_shard_inputs
from crawl_assets.pipeline.crawl_history import history_before
from crawl_assets.pipeline.frontier_shard_inputs import shard_day_inputs, start_day_split
from crawl_assets.pipeline.frontier_step import build_frontier, cut_json, cut_of_json, shard_frontier
from crawl_assets.storage.layout import day_start_file, frontier_inputs_dir
from crawl_assets.storage.shared_root import data_root_path, forget_remote_roots, is_remote
from crawl_files import fetch_row, settings_for, shard_for, write_fetch_log, write_links, write_seeds

DAYS = ["2026-11-28", "2026-11-29"]
HOSTS = [f"h{n}.test" for n in range(16)]


def write_crawl(root, **settings):
    """Seeds on sixteen hosts in four shards, links of the day before between them (to hosts
    of every shard from every batch), fetch logs of a few pages; a first-day budget of 10 that
    cuts across shards."""
    settings = settings_for(root, shard_count=4, first_day_fetch_budget=10, daily_fetch_budget=10, **settings)
    write_seeds(root, [f"http://{h}/" for h in HOSTS])
    for batch in range(2):
        write_links(root, "2026-11-27", [(f"http://{h}/", f"http://{HOSTS[(i * 5 + batch) % 16]}/p{i}{batch}", 1)
                                         for i, h in enumerate(HOSTS)], shard=f"s0{batch}")
    write_fetch_log(root, "2026-11-27", [fetch_row(f"http://{h}/", "2026-11-27T10:00:00", etag=f'"{h}"')
                                         for h in HOSTS])
    assert len({shard_for(h, settings) for h in HOSTS}) == 4
    return settings


@pytest.fixture
def crawl(tmp_path):
    return write_crawl(tmp_path)


def shards_built_from_the_split(settings, day: str) -> dict:
    """Each shard's frontier as shard_frontier[D|S] builds it: from its part of the split."""
    cut = cut_of_json(day_start_file(settings.data_root, day).read_bytes())
    built = {}
    for shard in settings.shard_keys():
        history, plan, _ = shard_day_inputs(settings.data_root, day, shard)
        built[shard] = shard_frontier(settings, history, plan, shard, cut).table
    return built


def test_each_shard_reads_its_own_part_of_the_split_and_builds_the_one_process_frontier(crawl):
    root, day = crawl.data_root, DAYS[0]
    whole = build_frontier(crawl, history_before(root, day))
    assert whole.counts.urls == 10 < 3 * len(HOSTS)  # the first day's budget cut across the shards
    start = start_day_split(crawl, history_before(root, day), None, day)
    folder = root / start["split"]["folder"]
    assert folder.parent == frontier_inputs_dir(root, day) and folder.is_dir()
    for shard, own in start["split"]["shards"].items():  # every file named lies in its shard's folders
        assert own["links"] and own["fetch_logs"]
        for name in [own["seeds"], *own["links"], *own["fetch_logs"]]:
            assert (root / name).is_relative_to(folder) and f"shard={shard}" in (root / name).parts
    built = shards_built_from_the_split(crawl, day)
    assert pa.concat_tables(built.values()).equals(whole.table)
    # A shard's inputs are its own folders: the other shards' parts and the crawl's own links
    # and fetch logs gone, it builds the same rows.
    for other in crawl.shard_keys()[1:]:
        for part in folder.iterdir():
            shutil.rmtree(part / f"shard={other}", ignore_errors=True)
    shutil.rmtree(root / "links")
    shutil.rmtree(root / "fetch_log")
    history, plan, _ = shard_day_inputs(root, day, "s00")
    assert shard_frontier(crawl, history, plan, "s00", cut_of_json(day_start_file(root, day).read_bytes())).table \
        .equals(built["s00"])


def test_a_start_that_crashed_half_way_leaves_nothing_a_shard_reads_and_a_rerun_is_the_same(crawl, monkeypatch):
    root, day = crawl.data_root, DAYS[0]
    split_files = frontier_shard_inputs.split_files

    def crash_after_the_seeds(con, settings, files, host, folder, every_shard=False):
        if folder.name != "seeds":
            raise OSError("the machine went away")
        return split_files(con, settings, files, host, folder, every_shard)

    monkeypatch.setattr(frontier_shard_inputs, "split_files", crash_after_the_seeds)
    with pytest.raises(OSError):
        start_day_split(crawl, history_before(root, day), None, day)
    (partial,) = frontier_inputs_dir(root, day).iterdir()  # half written, under its temporary name
    assert partial.name.endswith(".tmp") and (partial / "seeds").is_dir()
    assert not day_start_file(root, day).exists()  # no shard has anything to read
    monkeypatch.undo()

    first = start_day_split(crawl, history_before(root, day), None, day)
    assert [p.name for p in frontier_inputs_dir(root, day).iterdir()] == [first["split"]["folder"].rsplit("/")[-1]]
    built = shards_built_from_the_split(crawl, day)
    again = start_day_split(crawl, history_before(root, day), None, day)  # a retry of the day's start
    assert again["split"]["folder"] != first["split"]["folder"] and not (root / first["split"]["folder"]).exists()
    assert again["first_day_cut"] == first["first_day_cut"]
    assert [p.name for p in frontier_inputs_dir(root, day).iterdir()] == [again["split"]["folder"].rsplit("/")[-1]]
    assert shards_built_from_the_split(crawl, day) == built


def test_the_next_day_keeps_only_its_own_split_and_a_gone_split_is_named(crawl):
    root = crawl.data_root
    first = start_day_split(crawl, history_before(root, DAYS[0]), None, DAYS[0])
    start_day_split(crawl, history_before(root, DAYS[1]), None, DAYS[1])
    assert not frontier_inputs_dir(root, DAYS[0]).exists() and frontier_inputs_dir(root, DAYS[1]).is_dir()
    with pytest.raises(CrawlInputError, match=f"materialise frontier_snapshot for {DAYS[0]} again") as error:
        shard_day_inputs(root, DAYS[0], "s00")
    assert first["split"]["folder"] in str(error.value)


def test_a_day_started_before_the_split_reads_the_crawls_inputs(crawl):
    root, day = crawl.data_root, DAYS[0]
    day_start_file(root, day).parent.mkdir(parents=True)
    day_start_file(root, day).write_bytes(cut_json(None))  # as the start wrote it before the split
    history, plan, folder = shard_day_inputs(root, day, "s01")
    assert (history, plan, folder) == (history_before(root, day), None, None)
    assert "split" not in json.loads(day_start_file(root, day).read_bytes())


def test_under_a_url_root_the_split_is_uploaded_whole_and_read_from_there(tmp_path):
    root = data_root_path(f"memory://test-{uuid.uuid4().hex}/data", Path("/"))
    try:
        settings = dataclasses.replace(write_crawl(root, work_dir=tmp_path / "work"),
                                       blocklist_file=tmp_path / "blocklist.txt")  # (read as a local file)
        whole = build_frontier(settings, history_before(root, DAYS[0]))
        start = start_day_split(settings, history_before(root, DAYS[0]), None, DAYS[0])
        assert is_remote(root / start["split"]["folder"]) and (root / start["split"]["folder"]).is_dir()
        assert not any((tmp_path / "work").iterdir())  # the local copy is gone once uploaded
        assert pa.concat_tables(shards_built_from_the_split(settings, DAYS[0]).values()).equals(whole.table)
        again = start_day_split(settings, history_before(root, DAYS[0]), None, DAYS[0])  # the earlier one goes
        assert [p.name for p in frontier_inputs_dir(root, DAYS[0]).iterdir()] == [again["split"]["folder"].rsplit("/")[-1]]
    finally:
        root.fs.rm(root.path, recursive=True)
        forget_remote_roots()
