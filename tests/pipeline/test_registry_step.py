"""The registry step without Dagster: every URL discovered up to a day, and its seen filter."""

import math
from datetime import date, datetime, timezone

import pyarrow as pa
import pytest

from crawl_assets.crawler.crawl_errors import CrawlInputError
from crawl_assets.crawler.url_policy.sharding import shard_key, shard_of
from crawl_assets.crawler.url_policy.url_bloom import build_filter, measured_fp_rate
from crawl_assets.crawler.url_policy.urls import host_of
from crawl_assets.pipeline.crawl_history import history_through
from crawl_assets.pipeline.registry_step import (
    build_registry,
    build_seen_filter,
    build_shard_seen_filter,
    build_shard_seen_filters,
    describe_seen_filter,
    load_registry_urls,
    registry_path,
    urls_by_shard,
)
from crawl_assets.storage.layout import url_registry_file, write_parquet_atomic
from crawl_files import fetch_row, write_fetch_log, write_links, write_seeds

DAY = "2026-11-29"


@pytest.fixture
def crawl(tmp_path):
    write_seeds(tmp_path, ["http://a.test/", "http://b.test/"])
    write_links(tmp_path, "2026-11-27", [("http://a.test/", "http://a.test/one", 1),
                                         ("http://a.test/one", "http://a.test/two", 2)])
    write_links(tmp_path, "2026-11-28", [("http://b.test/", "http://a.test/one", 1),
                                         ("http://b.test/", "http://b.test/", 1),  # a seed, linked
                                         ("http://b.test/", "http://b.test/new", 1)], shard="s05")
    write_links(tmp_path, "2026-11-30", [("http://a.test/", "http://a.test/later", 1)])
    write_fetch_log(tmp_path, "2026-11-27", [fetch_row("http://a.test/", "2026-11-27T10:00:00"),
                                             fetch_row("http://a.test/one", "2026-11-27T11:00:00")])
    write_fetch_log(tmp_path, "2026-11-28", [
        fetch_row("http://a.test/", "2026-11-28T10:00:00", status=304, status_class="not_modified"),
        fetch_row("http://a.test/two", "2026-11-28T10:00:00", status=None, status_class="timeout")])
    return tmp_path


def test_the_registry_holds_every_url_found_up_to_the_day(crawl):
    result = build_registry(DAY, history_through(crawl, DAY))
    rows = {r["url"]: r for r in result.table.to_pylist()}
    assert list(rows) == sorted(rows) == ["http://a.test/", "http://a.test/one", "http://a.test/two",
                                          "http://b.test/", "http://b.test/new"]  # not /later
    # First seen on the earliest day, from the page that linked it that day, at its least depth.
    assert rows["http://a.test/one"]["first_seen"] == date(2026, 11, 27)
    assert rows["http://a.test/one"]["discovered_from"] == "http://a.test/"
    assert rows["http://a.test/two"]["depth"] == 2
    # Seeds count from the registry's own day unless a link found them earlier.
    assert rows["http://a.test/"]["first_seen"] == date(2026, 11, 29) and rows["http://a.test/"]["depth"] == 0
    assert rows["http://b.test/"]["first_seen"] == date(2026, 11, 28)
    # The latest answered fetch: the 304 counts, the timeout answered nothing.
    assert rows["http://a.test/"]["last_fetched"] == datetime(2026, 11, 28, 10, tzinfo=timezone.utc)
    assert rows["http://a.test/two"]["last_fetched"] is None
    assert result.counts.urls == 5 and result.counts.never_fetched == 3


def test_the_first_day_registry_is_the_seeds(tmp_path):
    write_seeds(tmp_path, ["http://a.test/"])
    result = build_registry(DAY, history_through(tmp_path, DAY))
    assert result.table.column("url").to_pylist() == ["http://a.test/"]
    assert result.counts.never_fetched == 1


def test_of_pages_linking_a_url_on_its_first_day_the_first_by_url_found_it(tmp_path):
    """Which fetch finished first differs between runs (a backfill and the nightly cycles of the
    same days); the registry must not, so a tie on the day goes to the smaller page URL."""
    write_seeds(tmp_path, ["http://a.test/"])
    for order in ([("http://z.test/", "http://a.test/p", 1), ("http://b.test/", "http://a.test/p", 1)],
                  [("http://b.test/", "http://a.test/p", 1), ("http://z.test/", "http://a.test/p", 1)]):
        write_links(tmp_path, "2026-11-28", order)
        rows = {r["url"]: r for r in build_registry(DAY, history_through(tmp_path, DAY)).table.to_pylist()}
        assert rows["http://a.test/p"]["discovered_from"] == "http://b.test/"


def optimal_bits(items: int, fp_rate: float) -> float:
    """m = -n ln p / (ln 2)^2: the fewest bits a Bloom filter of n items needs for rate p."""
    return -items * math.log(fp_rate) / math.log(2) ** 2


def sigma(rate: float, sample: int) -> float:
    """The standard deviation of a rate measured on `sample` independent URLs."""
    return math.sqrt(rate * (1 - rate) / sample)


@pytest.fixture
def big_crawl(tmp_path):
    """A registry of realistic size: 300 seed hosts, and over two days 39,700 pages they link
    (some linked twice, from both days), so 40,000 URLs, well above the filter's 10,000 floor."""
    hosts = [f"http://h{h:03d}.test/" for h in range(300)]
    write_seeds(tmp_path, hosts)
    pages = [f"{hosts[i % 300]}p/{i}" for i in range(39_700)]
    write_links(tmp_path, "2026-11-27", [(hosts[i % 300], url, 1) for i, url in enumerate(pages[:25_000])])
    write_links(tmp_path, "2026-11-28", [(hosts[i % 300], url, 1) for i, url in enumerate(pages[20_000:])],
                shard="s03")
    return tmp_path


def test_the_seen_filter_knows_every_registered_url(big_crawl):
    registry = build_registry(DAY, history_through(big_crawl, DAY)).table
    assert registry.num_rows == 40_000
    write_parquet_atomic(registry, url_registry_file(big_crawl, DAY))
    urls = load_registry_urls(big_crawl, DAY)
    bloom = build_seen_filter(urls, fp_rate=0.001)
    assert all(url in bloom for url in registry.column("url").to_pylist())  # no false negative
    counts = describe_seen_filter(bloom, urls.num_rows, 0.001)
    assert counts.elements == 40_000 and counts.target_fp_rate == 0.001
    assert counts.bits >= optimal_bits(40_000, 0.001)
    # Sized for 0.9 of the target (seen_filter's margin for rbloom's rounding), the filter's
    # true rate lies between 0.8 and 1 times the target. Measured on a million URLs never
    # added (sd ~3e-5), it lies within 4 sd of that band: below the target plus ~10 %, and
    # not so far below that the filter was sized for more URLs than the registry holds.
    sample = 1_000_000
    rate = measured_fp_rate(bloom, sample, seed=1)
    low, high = 0.8 * 0.001 - 4 * sigma(0.0008, sample), 0.001 + 4 * sigma(0.001, sample)
    assert low <= rate <= high, f"false-positive rate {rate} on {sample} URLs, not in [{low:.6f}, {high:.6f}]"
    assert counts.measured_fp_rate <= 0.001 + 4 * sigma(0.001, 100_000)  # the asset's own 100,000 sample


@pytest.mark.parametrize("items", [25_000, 250_000])
def test_the_seen_filter_is_sized_for_the_whole_registry(items):
    """Every URL of the registry goes into the filter, so it is sized for all of them: a
    filter sized for fewer fills up and takes unseen URLs for seen (never fetched)."""
    registry = pa.table({"url": [f"http://h{i % 1000}.test/p/{i}" for i in range(items)]})
    bloom = build_seen_filter(registry, fp_rate=0.001)
    assert bloom.size_in_bits >= optimal_bits(items, 0.001), f"{bloom.size_in_bits} bits for {items} URLs"
    counts = describe_seen_filter(bloom, items, 0.001)
    assert counts.elements == items
    assert counts.measured_fp_rate <= 0.001 + 4 * sigma(0.001, 100_000), counts


def test_a_missing_registry_says_what_to_materialise(tmp_path):
    with pytest.raises(CrawlInputError, match="materialise url_registry for 2026-11-29"):
        load_registry_urls(tmp_path, DAY)


# Hosts in every form a registered URL's authority takes: upper case, a port, userinfo, an IPv6
# literal, a query right after the host, several schemes, a "://" further on in the path,
# letters beyond ASCII before and after the host's end, no "://" at all.
ODD_URLS = ["HTTP://Upper.Test/p", "http://upper.test:8080/q", "https://user:pw@upper.test/r",
            "http://[2001:db8::1]:81/x", "http://[2001:db8::1]/y", "http://q.test?x=1/z", "https://q.test/",
            "http://a.test/go?to=http://b.test/", "ftp://files.test/f", "http://b.test", "http://bücher.test/ä/ö",
            "http://ü@b.test/straße", "https://日本.test", "mailto:x@y.test", "urn:x/y"]


def test_each_shards_seen_filter_holds_exactly_its_own_hosts_urls_and_together_the_whole_filters(big_crawl):
    registry = build_registry(DAY, history_through(big_crawl, DAY)).table
    write_parquet_atomic(pa.concat_tables([registry.select(["url"]), pa.table({"url": ODD_URLS})]),
                         url_registry_file(big_crawl, DAY))
    urls = load_registry_urls(big_crawl, DAY)["url"].to_pylist()
    expected = {n: [] for n in range(8)}  # the reference: each URL's host and shard in Python
    for url in urls:
        expected[shard_of(host_of(url), 8)].append(url)
    assert all(len(own) > 1000 for own in expected.values())
    path = registry_path(big_crawl, DAY)
    filters = build_shard_seen_filters(path, 8)
    whole = build_seen_filter(load_registry_urls(big_crawl, DAY))
    for n, own in expected.items():
        one_shard = urls_by_shard(path, 8, only=n)  # read from the file, one shard
        assert list(one_shard) == [n] and sorted(one_shard[n]) == sorted(own)
        one = build_shard_seen_filter(path, shard_key(n), 8)
        assert bytes_of(one) == bytes_of(filters[shard_key(n)]) == bytes_of(build_filter(own, len(own)))
        assert all(url in one and url in whole for url in own)
    # at the rate asked, not the default one
    assert bytes_of(build_shard_seen_filter(path, shard_key(3), 8, fp_rate=0.01)) == \
        bytes_of(build_shard_seen_filters(path, 8, fp_rate=0.01)[shard_key(3)]) == \
        bytes_of(build_filter(expected[3], len(expected[3]), 0.01))
    table_grouping = urls_by_shard(load_registry_urls(big_crawl, DAY), 8)  # the one-process close's input
    assert {n: sorted(own) for n, own in table_grouping.items()} == {n: sorted(own) for n, own in expected.items()}
    assert sum(map(len, table_grouping.values())) == len(urls) == registry.num_rows + len(ODD_URLS)


def bytes_of(bloom) -> bytes:
    return bloom.save_bytes()
