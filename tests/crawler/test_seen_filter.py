"""The seen-URL Bloom filter: what it holds survives a save and a load in another process,
and its false-positive rate stays within the stated one."""

import subprocess
import sys

from crawl_assets.crawler.seen_filter import build_filter, load_filter, measured_fp_rate, save_filter, url_hash


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
    code = "from crawl_assets.crawler.seen_filter import url_hash; print(url_hash('http://a.test/'))"
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(there.stdout) == url_hash("http://a.test/")
    assert -(1 << 127) <= url_hash("http://a.test/") < (1 << 127)  # rbloom's signed 128-bit range


def test_a_small_filter_is_within_the_target_too():
    for size in (1, 50, 200, 500):  # a few thousand bits would swing around the target
        bloom = build_filter([f"http://h{i}.demo.test/p{i}" for i in range(size)], size, 0.001)
        assert measured_fp_rate(bloom, 100_000) <= 0.001, size
