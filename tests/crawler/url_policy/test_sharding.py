import subprocess
import sys
from collections import Counter

import pytest

from crawl_assets.crawler.settings import SettingsError, load_settings
from crawl_assets.crawler.url_policy.sharding import (
    VIRTUAL_SHARDS, check_shard_count, shard_index, shard_key, shard_keys, shard_of, shard_table, virtual_shard)


def test_shards_are_stable_across_processes_and_spread_hosts():
    hosts = [f"h{i:04d}.demo.test" for i in range(400)]
    here = [shard_of(h, 8) for h in hosts]
    code = ("from crawl_assets.crawler.url_policy.sharding import shard_of;"
            f"print([shard_of(h, 8) for h in {hosts!r}])")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert eval(there.stdout) == here  # a salted hash would differ in a new process
    counts = [here.count(s) for s in range(8)]
    assert min(counts) > 25 and max(counts) < 75
    assert shard_of("H0001.Demo.Test", 8) == shard_of("h0001.demo.test", 8)


def test_eight_to_nine_shards_moves_only_the_hosts_the_new_shard_takes():
    hosts = [f"site-{i}.example.org" for i in range(50_000)]
    before = [shard_of(h, 8) for h in hosts]
    after = [shard_of(h, 9) for h in hosts]
    moved = [(b, a) for b, a in zip(before, after) if b != a]
    assert len(moved) <= 0.15 * len(hosts)  # `blake2b % N` moved 8 in 9 hosts
    assert abs(len(moved) / len(hosts) - 1 / 9) < 0.01
    assert {a for _, a in moved} == {8}  # no host changes between the shards that were there


def test_each_added_shard_takes_an_even_share_from_the_others():
    for count in range(1, 40):
        table, grown = shard_table(count), shard_table(count + 1)
        held = Counter(grown)
        assert max(held.values()) - min(held.values()) <= 1  # V // N or V // N + 1 each
        moved = [v for v in range(VIRTUAL_SHARDS) if table[v] != grown[v]]
        assert len(moved) == VIRTUAL_SHARDS // (count + 1)
        assert all(grown[v] == count for v in moved)


def test_a_shard_count_beyond_the_virtual_shards_is_refused(tmp_path):
    with pytest.raises(ValueError, match="between 1 and 1024"):
        shard_of("a.test", VIRTUAL_SHARDS + 1)
    (tmp_path / "big.toml").write_text("[crawl]\nshard_count = 2000\n")
    with pytest.raises(SettingsError, match="shard_count.*between 1 and 1024"):
        load_settings(tmp_path / "big.toml")


def test_a_hosts_virtual_shard_never_changes_between_releases():
    """Data roots written by earlier releases hold each host's URLs in the shard these numbers
    give (blake2b-64 of the lower-case host, big-endian, mod 1024): a release that changed one
    would re-shard every host of every data root."""
    assert [virtual_shard(h) for h in ("example.com", "www.wikipedia.org", "h0001.demo.test")] == [614, 1004, 441]
    assert virtual_shard("WWW.Wikipedia.ORG") == 1004
    assert [shard_of(h, 8) for h in ("example.com", "www.wikipedia.org", "h0001.demo.test")] == [1, 6, 2]


def test_every_shard_count_from_1_to_the_virtual_shards_is_allowed():
    """(shard_table is cached: the check is called as well as the table asked for.)"""
    for count in (1, 2, VIRTUAL_SHARDS):
        check_shard_count(count)
        assert sorted(set(shard_table(count))) == list(range(count))
    for count in (0, -1, VIRTUAL_SHARDS + 1):
        with pytest.raises(ValueError, match=f"between 1 and 1024 .*not {count}$"):
            check_shard_count(count)


def test_shard_keys_are_two_digits_at_least_and_read_back():
    assert shard_keys(3) == ["s00", "s01", "s02"]
    assert shard_keys(1) == ["s00"] and shard_keys(0) == []
    assert shard_key(0) == "s00" and shard_key(7) == "s07" and shard_key(1023) == "s1023"
    with pytest.raises(AssertionError):
        shard_key(-1)
    for index in (0, 7, 42, 1023):
        assert shard_index(shard_key(index)) == index
    for key in ("s3", "03", "s03x", "S03", " s03", "s-1"):
        with pytest.raises(ValueError, match=f"not a shard key: '{key}' \\(expected s00, s01, ...\\)"):
            shard_index(key)
