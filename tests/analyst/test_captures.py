"""Capture look-ups: a URL's captures, one capture's headers and body (revisits resolved to
their payload), an export of what a query selects, and clear errors from the command."""

import subprocess
import sys
from urllib.parse import urlsplit

import duckdb
import pytest
from fastwarc.warc import ArchiveIterator as FastIterator
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.analyst.captures import CaptureLookupError, Captures

from conftest import DAY1, DAY2
from support import assert_warcio_check_passes


@pytest.fixture(scope="module")
def captures(two_day_crawl):
    with Captures(two_day_crawl.settings.catalog_path) as found:
        yield found


def home(crawl):
    return next(u for u in crawl.web.seed_urls() if "h0000" in u)


def page(crawl, url):
    parts = urlsplit(url)
    return crawl.web.respond(parts.hostname, parts.path or "/")


def test_a_url_has_its_day_one_capture_and_its_day_two_revisit(two_day_crawl, captures):
    found = captures.captures_of(home(two_day_crawl))
    assert [(c.crawl_date, c.warc_type, c.status) for c in found] == [
        (DAY1, "response", 200), (DAY2, "revisit", None)]
    assert found[0].captured_at < found[1].captured_at
    assert captures.captures_of("http://nowhere.demo.test/") == []


@pytest.mark.parametrize("day", [DAY1, DAY2])
def test_show_reads_the_page_for_either_day(two_day_crawl, captures, day):
    url = home(two_day_crawl)
    content = captures.capture(url, day)
    expected = page(two_day_crawl, url)
    assert content.capture.crawl_date == day
    assert content.status == 200 and content.body == expected.body
    assert dict(content.headers)["ETag"] == expected.header("ETag")
    # Day two is a 304 revisit: the payload (and headers) come from day one's record.
    assert (content.payload_from.crawl_date, content.payload_from.warc_type) == (DAY1, "response")


def test_a_14_digit_timestamp_picks_the_closest_capture(two_day_crawl, captures):
    first, second = captures.captures_of(home(two_day_crawl))
    assert captures.capture(home(two_day_crawl), f"{second.captured_at:%Y%m%d%H%M%S}").capture == second
    assert captures.capture(home(two_day_crawl), "19990101000000").capture == first


def test_export_writes_a_valid_warc_with_the_originals_of_its_revisits(two_day_crawl, captures, tmp_path):
    out = tmp_path / "day2-h0000.warc.gz"
    result = captures.export(f"SELECT * FROM captures WHERE date = '{DAY2}' AND url LIKE '%h0000%'", out)
    assert_warcio_check_passes(out)
    with open(out, "rb") as fh:
        records = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(fh)]
    with open(out, "rb") as fh:  # FastWARC reads the same records
        assert [(str(r.record_type), r.headers.get("WARC-Target-URI")) for r in FastIterator(fh)] == records
    revisits = {u for kind, u in records if kind == "revisit"}
    responses = {u for kind, u in records if kind == "response"}
    assert records[0][0] == "warcinfo" and revisits and revisits <= responses  # each 304's original
    assert result.selected == len(revisits) and result.originals_added == len(responses)


def run(*args):
    return subprocess.run([sys.executable, "-m", "crawl_assets.analyst.captures", *args],
                          capture_output=True, text=True, timeout=120)


def test_the_command_lists_shows_and_fails_clearly(two_day_crawl, tmp_path):
    catalog = str(two_day_crawl.settings.catalog_path)
    url = home(two_day_crawl)
    listed = run("--catalog", catalog, "list", url)
    assert listed.returncode == 0 and listed.stdout.startswith(f"2 capture(s) of {url}")
    shown = run("--catalog", catalog, "show", url, "--date", DAY2)
    assert shown.returncode == 0 and "HTTP 200" in shown.stdout and "<title>Home" in shown.stdout
    for args, message in [
        (["--catalog", catalog, "show", "http://nowhere.demo.test/"], "no capture of http://nowhere.demo.test/"),
        (["--catalog", catalog, "show", url, "--date", "2026-13-45"], "bad date '2026-13-45'"),
        (["--catalog", catalog, "show", url, "--date", "2020-01-01"], "no capture of"),
        (["--catalog", str(tmp_path / "none.duckdb"), "list", url], "no catalog at"),
        (["--catalog", catalog, "export", "SELECT url FROM captures", str(tmp_path / "x.warc.gz")], "missing: captured_at"),
    ]:
        failed = run(*args)
        assert failed.returncode == 2 and message in failed.stderr and "Traceback" not in failed.stderr, failed.stderr


def test_a_catalog_without_captures_is_named(tmp_path):
    import duckdb

    duckdb.connect(str(tmp_path / "crawl.duckdb")).close()
    with pytest.raises(CaptureLookupError, match="has no captures view"):
        Captures(tmp_path / "crawl.duckdb")


def test_a_copied_data_root_is_looked_up_in_its_own_folder(two_day_crawl, tmp_path):
    import shutil

    copy = tmp_path / "data"
    shutil.copytree(two_day_crawl.root, copy, ignore=shutil.ignore_patterns("dagster_home", "work"))
    with Captures(copy / "crawl.duckdb") as moved:
        assert moved.rebuilt_from == str(two_day_crawl.root)
        (view_sql,) = moved.con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'captures'").fetchone()
        assert str(copy) in view_sql and f"{two_day_crawl.root}/" not in view_sql
        found = moved.captures_of(home(two_day_crawl))
        assert [c.crawl_date for c in found] == [DAY1, DAY2] and found[0].path.is_relative_to(copy)


def test_a_warc_file_cut_short_fails_the_day_check_and_list_flags_it(two_day_crawl, tmp_path, capsys):
    import shutil

    from dagster import AssetKey, instance_for_test, materialize

    from crawl_assets.analyst import captures as command
    from crawl_assets.cli import cycle
    from crawl_assets.defs.assets import ALL_ASSETS
    from crawl_assets.defs.resources import CrawlSettingsResource

    copy = tmp_path / "data"  # the archives (and the days' frontiers): the next day's catalog is built over them
    for table in ("warc", "frontier"):
        shutil.copytree(two_day_crawl.root / table, copy / table)
    with Captures(two_day_crawl.settings.catalog_path) as original:  # a page in the middle of its day-one file
        file_of_home = original.captures_of(home(two_day_crawl))[0].path.name
        in_file = original.con.execute('SELECT url FROM captures WHERE filename = $f AND warc_type = \'response\' '
                                       'ORDER BY "offset"', {"f": file_of_home}).fetchall()
        url = in_file[len(in_file) // 2][0]
        day_one = original.captures_of(url)[0]
    cut = copy / day_one.path.relative_to(two_day_crawl.root)
    cut.write_bytes(cut.read_bytes()[:day_one.offset + day_one.length - 1])  # ends inside that page's record
    resources = {"crawl_settings": CrawlSettingsResource(data_root=str(copy), seeds_dir=str(tmp_path / "seeds"),
                                                         settings_files=[])}
    with instance_for_test() as instance:  # the next day's close builds the catalog and checks it
        result = materialize(ALL_ASSETS, selection=[AssetKey("crawl_catalog")], partition_key=DAY2,
                             instance=instance, resources=resources, raise_on_error=False)
        reason = cycle.failure_reason(instance, result.run_id)
    sentence = (f"{cut} is cut short ({cut.stat().st_size:,} bytes), but its index has records up to byte ")
    remedy = (f"restore it from a copy ({DAY1} lies beneath {DAY2}, a later day, so it cannot be fetched again), "
              f"or record the loss and go on: run the cycle command again with --quarantine {cut} (the file moves "
              f"under {copy / 'quarantine'}, its whole records stay readable in place, the lost ones are listed in "
              "the catalog's lost_captures view)")
    assert not result.success and reason.startswith(f"check warc_files_whole failed: {sentence}"), reason
    assert remedy in reason and "more" not in reason, reason  # the one damaged file

    assert command.main(["--catalog", str(copy / "crawl.duckdb"), "list", url]) == 1
    out, err = capsys.readouterr()
    day_one_line, day_two_line = out.splitlines()[1:]
    assert day_one_line.endswith(f"{cut.name}@{day_one.offset}  DAMAGED FILE (below)")
    assert "DAMAGED" not in day_two_line  # day two's file is whole
    (line,) = [line for line in err.splitlines() if line.startswith("captures: ")]  # not Dagster's log lines
    assert line.startswith(f"captures: {sentence}") and remedy in line, err

    # show and export check the record they read: a cut one is refused with the file and what to
    # do (they printed a shortened body and exited 0), and the export leaves no file behind.
    catalog = str(copy / "crawl.duckdb")
    assert command.main(["--catalog", catalog, "show", url, "--date", DAY1]) == 1
    out, err = capsys.readouterr()
    damage = (f"captures: the capture of {url} cannot be read whole: {cut} at offset {day_one.offset:,}: the file "
              f"ends at byte {cut.stat().st_size:,}, inside the record (which ends at byte "
              f"{day_one.offset + day_one.length:,}): the file was cut short; restore it from a copy ({DAY1} lies "
              f"beneath {DAY2}, a later day, so it cannot be fetched again), or record the loss and go on: run the "
              f"cycle command again with --quarantine {cut} ")
    assert out == "" and err.startswith(damage), err
    exported = tmp_path / "home.warc.gz"
    query = f"SELECT * FROM captures WHERE url = '{url}'"
    assert command.main(["--catalog", catalog, "export", query, str(exported)]) == 1
    assert capsys.readouterr().err.startswith(damage) and not list(tmp_path.glob("home.warc.gz*"))

    # The repair the sentence proposes: the file set aside, its whole records kept in place, the
    # loss recorded in the catalog; the next close passes again.
    with Captures(copy / "crawl.duckdb") as damaged:
        in_file = damaged.con.execute('SELECT url, "offset" + length FROM captures WHERE filename = $f ORDER BY 2',
                                      {"f": cut.name}).fetchall()
    kept = [u for u, end in in_file if end <= cut.stat().st_size]
    lines = []
    cycle.quarantine_files(copy, [str(cut)], lines.append)
    moved = copy / "quarantine" / cut.relative_to(copy)
    assert lines == [f"quarantined {cut}: moved to {moved}; {len(kept)} whole record(s) kept in place, "
                     f"{len(in_file) - len(kept)} lost (listed in the catalog's lost_captures view once the day closes)"]
    assert kept and moved.exists()
    assert_warcio_check_passes(cut)  # the records before the cut, byte for byte at their offsets
    with instance_for_test() as instance:
        assert materialize(ALL_ASSETS, selection=[AssetKey("crawl_catalog")], partition_key=DAY2,
                           instance=instance, resources=resources, raise_on_error=False).success
    with Captures(copy / "crawl.duckdb") as repaired:
        lost = repaired.con.execute("SELECT url, reason, readable_there FROM lost_captures WHERE url = $u",
                                    {"u": url}).fetchall()
        assert lost == [(url, "cut off", False)]
        before = repaired.read(next(c for c in repaired.captures_of(kept[0]) if c.path == cut))
        assert before.body  # a capture before the cut reads as before
    assert command.main(["--catalog", catalog, "show", url, "--date", DAY1]) == 2
    assert f"no capture of {url} on {DAY1}: its capture of {DAY1} was lost with the quarantined WARC file " \
           f"{cut.name} (cut off; " in capsys.readouterr().err


def test_lookups_in_a_loop_are_answered_from_an_in_memory_index_the_same(two_day_crawl):
    """A script looking up URL after URL: the first LOOKUPS_BEFORE_INDEX from the catalog's
    view, the rest from the in-memory index (capture_index.py); every URL's captures the same
    either way, a URL never crawled none."""
    from crawl_assets.analyst.captures import LOOKUPS_BEFORE_INDEX

    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    urls = [u for (u,) in con.execute("SELECT DISTINCT url FROM captures ORDER BY url").fetchall()]
    con.close()
    with Captures(two_day_crawl.settings.catalog_path, index_after=None) as view, \
            Captures(two_day_crawl.settings.catalog_path) as looped:
        for done, url in enumerate([*urls, "http://never.demo.test/"], start=1):
            assert looped.captures_of(url) == view.captures_of(url), url
            assert looped.indexed == (done > LOOKUPS_BEFORE_INDEX)
        assert not view.indexed and looped.captures_of("http://never.demo.test/") == []
    assert len(urls) > 100
