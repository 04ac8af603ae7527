"""The seen-URL Bloom filter: what it holds survives a save and a load in another process,
and its false-positive rate stays within the stated one."""

import math
import subprocess
import sys

import pytest

from crawl_assets.crawler.crawl_errors import CrawlInputError
from crawl_assets.crawler.url_policy.url_bloom import (
    build_filter, digest_file, load_filter, measured_fp_rate, save_filter, url_hash,
)
from crawl_assets.pipeline.seen_filter_files import shard_seen_filter_file
from crawl_assets.storage.layout import seen_filter_file


def test_a_saved_filter_answers_the_same_after_loading(tmp_path):
    urls = [f"http://h{i % 50}.test/p/{i}" for i in range(20_000)]
    bloom = build_filter(urls, len(urls), 0.001)
    path = tmp_path / "seen" / "seen_urls.bloom"
    save_filter(bloom, path)
    assert not list(path.parent.glob("*.tmp"))  # written under a temporary name, then renamed
    loaded = load_filter(path)
    assert all(url in loaded for url in urls)
    assert loaded.size_in_bits == bloom.size_in_bits


def test_the_measured_false_positive_rate_is_within_the_target():
    urls = [f"http://h{i % 500}.test/{i}" for i in range(100_000)]
    bloom = build_filter(urls, len(urls), 0.001)
    rate = measured_fp_rate(bloom, 100_000)
    assert 0 < rate <= 0.001  # a few false positives, fewer than one in a thousand


def test_the_url_hash_is_the_same_in_every_process():
    # A filter built by one process is loaded by another: Python's salted hash() would differ.
    code = "from crawl_assets.crawler.url_policy.url_bloom import url_hash; print(url_hash('http://a.test/'))"
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(there.stdout) == url_hash("http://a.test/")
    assert -(1 << 127) <= url_hash("http://a.test/") < (1 << 127)  # rbloom's signed 128-bit range


def test_a_small_filter_is_within_the_target_too():
    for size in (1, 50, 200, 500):  # a few thousand bits would swing around the target
        bloom = build_filter([f"http://h{i}.demo.test/p{i}" for i in range(size)], size, 0.001)
        assert measured_fp_rate(bloom, 100_000) <= 0.001, size


def bits_set(bloom) -> int:
    """Set bits of the filter, read from its saved bytes (the bit array is their last
    size_in_bits / 8 bytes; what comes before it is rbloom's header)."""
    data = bloom.save_bytes()
    return int.from_bytes(data[len(data) - bloom.size_in_bits // 8:], "little").bit_count()


def hash_count(expected_items: int, fp_rate: float) -> int:
    """k, the bits one URL sets in an empty filter built like the others (rbloom chooses it
    from the size and rounds it down, which is what a sizing margin has to make up for)."""
    return bits_set(build_filter(["http://one.example.test/"], expected_items, fp_rate))


@pytest.mark.parametrize("fp_rate", [0.01, 0.001, 0.0001])
@pytest.mark.parametrize("items", [500, 10_000, 100_000, 1_000_000])
def test_the_filter_has_the_bits_and_hash_count_for_the_target_rate(items, fp_rate):
    """With m bits and k hash functions, n URLs give a false-positive rate of
    (1 - e^{-kn/m})^k. Sized as a Bloom filter for the target (m >= -n ln p / (ln 2)^2) is
    not enough on its own: with k rounded down the rate lands a few per cent above p, so the
    rate of the filter as built must be within the target itself. (A measured rate cannot
    tell 2 % apart without millions of URLs.)"""
    bloom = build_filter([], items, fp_rate)
    m, k = bloom.size_in_bits, hash_count(items, fp_rate)
    assert m >= -items * math.log(fp_rate) / math.log(2) ** 2
    assert k >= 1
    rate = (1 - math.exp(-k * items / m)) ** k
    assert rate <= fp_rate, f"{items} URLs in {m} bits with k={k}: false-positive rate {rate:.6g} > {fp_rate}"


@pytest.mark.parametrize("fp_rate", [0.01, 0.001])
def test_a_filled_filter_answers_a_random_url_wrongly_within_the_target(fp_rate):
    """A URL never added is a false positive when all k of its bits are set: with a fraction f
    of the bits set, that is f^k for a well-spread hash, the rate the filter actually has
    (exact for this filter, free of a held-out sample's noise)."""
    urls = [f"http://h{i % 2000}.test/p/{i}" for i in range(200_000)]
    bloom = build_filter(urls, len(urls), fp_rate)
    filled = bits_set(bloom) / bloom.size_in_bits
    rate = filled ** hash_count(len(urls), fp_rate)
    assert rate <= fp_rate, f"{filled:.4f} of the bits set: false-positive rate {rate:.6g} > {fp_rate}"


def redo_of(day: str) -> str:
    return (f"run the cycle command again, which rebuilds it from the URL registry of {day} first "
            f"(or materialise seen_url_filter for {day} in the UI)")


@pytest.mark.parametrize("where", ["crawl", "shard"])
def test_a_damaged_filter_names_its_file_its_day_and_how_to_rebuild_it(tmp_path, where):
    """The day is read from the filter's own folder under the data root: date=D, or a
    shard's filter one folder below it (shard=sNN)."""
    path = seen_filter_file(tmp_path, "2026-11-28") if where == "crawl" else \
        shard_seen_filter_file(tmp_path, "2026-11-28", "s01", 4)
    save_filter(build_filter([f"http://a.example/{n}" for n in range(100)], 100), path)
    path.write_bytes(path.read_bytes()[:-1])  # truncated: fails its checksum
    with pytest.raises(CrawlInputError) as failed:
        load_filter(path)
    assert str(failed.value) == (f"the seen-URL filter {path} does not match its checksum ({path.name}.sha256): "
                                 f"it is truncated or corrupt; {redo_of('2026-11-28')}")
    digest_file(path).unlink()  # a filter saved before checksums: rbloom's own check
    path.write_bytes(b"")
    with pytest.raises(CrawlInputError) as failed:
        load_filter(path)
    said = str(failed.value)
    assert said.startswith(f"the seen-URL filter {path} cannot be read (") and said.endswith(f"): {redo_of('2026-11-28')}")
    assert len(said) > len(f"the seen-URL filter {path} cannot be read (): {redo_of('2026-11-28')}")  # rbloom's reason


def test_a_filter_is_saved_into_folders_not_there_yet_and_over_an_earlier_one(tmp_path):
    """The day's first filter creates its folders; a rebuilt one (the cycle's rebuild from the
    registry) replaces it whole, checksum too."""
    path = shard_seen_filter_file(tmp_path / "data", "2026-11-28", "s00", 2)  # three folders to create
    save_filter(build_filter(["http://a.test/old"], 10), path)
    assert "http://a.test/old" in load_filter(path)
    save_filter(build_filter(["http://a.test/new"], 10), path)
    rebuilt = load_filter(path)  # (its checksum is the new file's)
    assert "http://a.test/new" in rebuilt and "http://a.test/old" not in rebuilt
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, path.name + ".sha256"]


def test_the_same_filter_measures_the_same_rate_each_time():
    """The asset check's verdict must not flip when the step runs again: the held-out sample
    is a fixed one (of its seed), not a fresh draw. An overfull filter answers wrongly often
    enough that two different samples all but never score the same."""
    bloom = build_filter([f"http://h{i % 50}.test/{i}" for i in range(30_000)], 10)  # sized for 10,000
    rate = measured_fp_rate(bloom, 20_000)
    assert 0.01 < rate < 0.5
    assert measured_fp_rate(bloom, 20_000) == rate
    assert measured_fp_rate(bloom, 20_000, seed=1) != rate  # another seed, another sample
