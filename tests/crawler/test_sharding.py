import subprocess
import sys

from crawl_assets.crawler.sharding import shard_of


def test_shards_are_stable_across_processes_and_spread_hosts():
    hosts = [f"h{i:04d}.demo.test" for i in range(400)]
    here = [shard_of(h, 8) for h in hosts]
    code = ("from crawl_assets.crawler.sharding import shard_of;"
            f"print([shard_of(h, 8) for h in {hosts!r}])")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert eval(there.stdout) == here  # a salted hash would differ in a new process
    counts = [here.count(s) for s in range(8)]
    assert min(counts) > 25 and max(counts) < 75
    assert shard_of("H0001.Demo.Test", 8) == shard_of("h0001.demo.test", 8)
