"""The day report's figures and pictures from small fetch logs written where the layout puts them."""

import io

import matplotlib.image
import numpy as np
import pyarrow as pa

from crawl_assets.crawler.batches.arrow_schemas import DROPPED_SCHEMA
from crawl_assets.crawler.vocabulary import DropReason, StatusClass
from crawl_assets.pipeline.report.report_charts import change_rate_png, rate_bin_edges, status_mix_png
from crawl_assets.pipeline.report.report_step import day_report, host_tables, summary_markdown
from crawl_assets.storage.layout import dropped_file, frontier_file, write_parquet_atomic

from crawl_files import fetch_row, write_fetch_log

DAY1, DAY2 = "2026-11-20", "2026-11-21"
SHARDS = ["s00", "s01", "s02"]


def at(seconds: float) -> str:
    return f"{DAY2}T03:00:{seconds:06.3f}"


def write_day_two(root):
    slow = [fetch_row(f"http://slow.test/{i}", at(i * 4.0)) for i in range(3)]  # 4 s apart
    busy = [fetch_row(f"http://busy.test/{i}", at(i * 1.0),
                      **({"status": 429, "status_class": StatusClass.THROTTLED} if i % 2 else {}))
            for i in range(5)]  # 1 s apart, two 429s
    write_fetch_log(root, DAY2, slow, shard="s00")
    write_fetch_log(root, DAY2, busy, shard="s02")
    dropped = [{"host": "trap.test", "reason": DropReason.PATTERN_BUDGET, "urls": 7},
               {"host": "busy.test", "reason": DropReason.DEPTH, "urls": 2},
               {"host": "slow.test", "reason": DropReason.PATTERN_BUDGET, "urls": 1}]
    write_parquet_atomic(pa.Table.from_pylist(dropped, schema=DROPPED_SCHEMA), dropped_file(root, DAY2, "s02"))


def test_a_day_with_a_missing_shard_is_partial_and_counts_what_landed(tmp_path):
    write_fetch_log(tmp_path, DAY1, [fetch_row("http://slow.test/0", f"{DAY1}T03:00:00")], shard="s01")
    write_day_two(tmp_path)
    report = day_report(tmp_path, DAY2, SHARDS)

    assert report.landed == ("s00", "s02") and report.missing == ("s01",) and report.partial
    assert report.status_classes == {StatusClass.OK: 6, StatusClass.THROTTLED: 2}
    assert report.drop_reasons == {DropReason.PATTERN_BUDGET: 8, DropReason.DEPTH: 2}
    widest = report.hosts.widest_spacing.to_pylist()
    assert [(h["host"], h["median_spacing_s"], h["requests"]) for h in widest] == [
        ("slow.test", 4.0, 3), ("busy.test", 1.0, 5)]
    assert [(h["host"], h["http_429"]) for h in report.hosts.most_429.to_pylist()] == [("busy.test", 2)]
    # Every day up to this one, never a later day's files.
    assert report.status_mix.to_pylist() == [
        {"date": DAY1, "status_class": StatusClass.OK, "pages": 1},
        {"date": DAY2, "status_class": StatusClass.OK, "pages": 6},
        {"date": DAY2, "status_class": StatusClass.THROTTLED, "pages": 2}]
    assert [r["date"] for r in day_report(tmp_path, DAY1, SHARDS).status_mix.to_pylist()] == [DAY1]

    assert "**Partial day**: 2 of 3 shards landed; missing: s01 (no fetch log)" in summary_markdown(report)
    summary = summary_markdown(day_report(tmp_path, DAY2, SHARDS, {"s01": "run 1234abcd: failure"}))
    assert "**Partial day**: 2 of 3 shards landed; missing: s01 (run 1234abcd: failure)" in summary
    assert "busy.test (2)" in summary and "10 discovered URLs refused" in summary


def test_a_complete_day_says_so(tmp_path):
    write_day_two(tmp_path)
    report = day_report(tmp_path, DAY2, ["s00", "s02"])
    assert not report.partial and summary_markdown(report).startswith(f"## Crawl of {DAY2}\n\nAll 2 shards landed.")


def test_a_shard_whose_fetch_run_failed_its_check_has_not_landed(tmp_path):
    # A fetch run that failed its blocking check frontier_accounted_for wrote its fetch log all
    # the same: the instance says the run failed, and the files say a frontier URL has no row.
    write_day_two(tmp_path)
    write_parquet_atomic(pa.table({"url": ["http://slow.test/0", "http://slow.test/1", "http://slow.test/2",
                                           "http://slow.test/new-in-a-rebuilt-frontier"]}),
                         frontier_file(tmp_path, DAY2, "s00"))
    write_parquet_atomic(pa.table({"url": [f"http://busy.test/{i}" for i in range(5)]}),
                         frontier_file(tmp_path, DAY2, "s02"))
    by_files = day_report(tmp_path, DAY2, ["s00", "s02"])
    assert by_files.landed == ("s02",) and by_files.partial
    assert by_files.status_classes == {StatusClass.OK: 3, StatusClass.THROTTLED: 2}  # s02's rows only
    assert "missing: s00 (its fetch log lacks 1 of the frontier's URLs)" in summary_markdown(by_files)

    by_run = day_report(tmp_path, DAY2, ["s00", "s02"], {"s02": "run 1234abcd: failure"})
    assert by_run.missing == ("s00", "s02")
    assert "0 of 2 shards landed; missing: s00 (its fetch log lacks 1 of the frontier's URLs), " \
           "s02 (run 1234abcd: failure)" in summary_markdown(by_run)


def test_hosts_without_429_are_not_listed_as_429_hosts():
    log = pa.Table.from_pylist([fetch_row("http://a.test/1", at(0)), fetch_row("http://a.test/2", at(2))])
    tables = host_tables(log)
    assert tables.most_429.num_rows == 0
    assert tables.widest_spacing.to_pylist()[0]["max_spacing_s"] == 2.0


def test_pictures_are_small_pngs(tmp_path):
    write_day_two(tmp_path)
    mix = status_mix_png(day_report(tmp_path, DAY2, SHARDS).status_mix)
    rates = change_rate_png([0.01, 0.1, 0.1, 1.0, None, 0.0])
    for png in (mix, rates):
        pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
        assert pixels.shape[:2] == (256, 512) and len(png) < 60_000
        assert pixels[..., :3].std() > 0.05  # something is drawn


def test_a_first_days_single_change_rate_gets_a_readable_histogram():
    """A first day: every URL on its pattern's prior, one rate for all. The bins span a factor of
    four around it (not 1e-9 of it), in eight bins; several rates keep their own range and bins."""
    rate = 0.0345
    edges = rate_bin_edges(np.array([rate] * 50), bins=30)
    assert len(edges) == 9 and edges[0] < rate < edges[-1]
    assert abs(edges[-1] / edges[0] - 4.0) < 1e-9
    png = change_rate_png([rate] * 50)
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    assert pixels.shape[:2] == (256, 512)
    many = rate_bin_edges(np.array([0.001, 0.5, 2.0]), bins=30)
    assert len(many) == 31 and (many[0], many[-1]) == (0.001, 2.0)


# matplotlib's first two colours of a cycle: the bottom and the next class of a stacked bar.
BLUE, ORANGE = (0.122, 0.467, 0.706), (1.0, 0.498, 0.055)


def bars(png: bytes, colour, wider_than: int = 0) -> list[int]:
    """The height in pixels of each bar of `colour` in the picture, left to right (the pixel
    count of its middle column), of the bars more than `wider_than` pixels wide (a legend's
    patches are narrower than a day's bar)."""
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")[..., :3]
    mask = np.all(np.abs(pixels - np.array(colour)) < 0.02, axis=-1)
    columns = np.flatnonzero(mask.any(axis=0))
    runs = np.split(columns, np.flatnonzero(np.diff(columns) > 1) + 1) if columns.size else []
    return [int(mask[:, run[len(run) // 2]].sum()) for run in runs if len(run) > wider_than]


def test_the_status_mix_picture_stacks_each_days_pages_by_class():
    """A bar a day, as high as the day's rows, one colour a class (in name order, the first at
    the bottom); a table without rows draws no bar."""
    mix = pa.Table.from_pylist([
        {"date": DAY1, "status_class": StatusClass.OK, "pages": 4},
        {"date": DAY2, "status_class": StatusClass.HTTP_4XX, "pages": 2},
        {"date": DAY2, "status_class": StatusClass.OK, "pages": 6}])
    png = status_mix_png(mix)
    ok, errors = bars(png, ORANGE, wider_than=20), bars(png, BLUE, wider_than=20)
    assert len(ok) == 2 and len(errors) == 1, (ok, errors)
    unit = ok[1] / 6  # pixels a row
    assert abs(ok[0] - 4 * unit) <= 2 and abs(errors[0] - 2 * unit) <= 2, (ok, errors, unit)
    # Day two's 4xx part lies under its ok part, not behind it.
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")[..., :3]
    column = pixels[:, np.flatnonzero(np.all(np.abs(pixels - np.array(BLUE)) < 0.02, axis=-1).any(axis=0))[0] + 2]
    rows_of = lambda colour: np.flatnonzero(np.all(np.abs(column - np.array(colour)) < 0.02, axis=-1))  # noqa: E731
    assert rows_of(BLUE).min() > rows_of(ORANGE).max()  # image rows grow downwards
    empty = status_mix_png(pa.Table.from_pylist([], schema=mix.schema))
    assert bars(empty, BLUE) == [] and bars(empty, ORANGE) == []  # no bar, and no legend either


def test_the_change_rate_picture_is_a_histogram_of_the_rates():
    """Three URLs changing once in a hundred days and six changing daily: two bars, the second
    twice the first, at either end; no rate, no bar (the picture says there are none yet)."""
    heights = bars(change_rate_png([0.01] * 3 + [1.0] * 6 + [None, 0.0]), BLUE)
    assert len(heights) == 2 and abs(heights[1] - 2 * heights[0]) <= 2, heights
    assert bars(change_rate_png([]), BLUE) == []
