"""The seen-URL Bloom filter: what it holds survives a save and a load in another process,
and its false-positive rate stays within the stated one."""

import math
import subprocess
import sys

import pytest

from crawl_assets.crawler.url_policy.url_bloom import (
    build_filter, load_filter, measured_fp_rate, save_filter, url_hash,
)


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
