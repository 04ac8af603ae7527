"""Bounded memory of a fetch batch over a big shard: 5 million frontier URLs over 50,000 hosts.

    .venv/bin/python bench/frontier_memory.py [--urls 5000000] [--hosts 50000] [--seconds 60]
        [--concurrency 256]

What runs: the frontier (one Parquet file, written in chunks) is handed to the real fetch
batch (crawl_assets.crawler.batches.batch.run_fetch_batch with a checkpoint folder), which spills it
to disk sorted by host (disk_frontier.py) and keeps a few URLs per host in memory. It fetches
from a small asyncio HTTP server on 127.0.0.1 (its own process: every page a few hundred
bytes, robots.txt a 404) for --seconds, taking checkpoints as a real batch does, and is
then stopped the way a full disk stops it (BatchStopped at a checkpoint): fetching all 5M
URLs politely would take hours, but the whole frontier is loaded, sorted and held.

Printed: the time to spill the frontier, the pages fetched, the URLs still on disk, the peak
RSS of this process (VmHWM: the frontier writer, the spill and the crawl together; the
server is another process) and the load average. The last line:
    frontier_memory urls=<frontier URLs> hosts=<hosts> peak_rss_mb=<MiB> pages_per_s=<pages/s>
Goal: peak_rss_mb <= 1536 (1.5 GB).

Network: only the server this script starts, on 127.0.0.1; *.bench.test resolves there by the
crawler's own resolver (resolver_overrides), and nothing else is in scope.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import ipaddress
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(1, str(BENCH_DIR.parent))

from measures import load_line, peak_rss_kb  # noqa: E402

DOMAIN = "bench.test"
PAGE = (b"<!doctype html><html><head><title>bench page</title></head><body>"
        + b"<p>" + b"A page of the frontier-memory benchmark. " * 8 + b"</p></body></html>")


# -- the loopback server (its own process) ------------------------------------------------------

async def _serve_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1]
            if path == b"/robots.txt":
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            else:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
                             + str(len(PAGE)).encode() + b"\r\n\r\n" + PAGE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


def serve(port_out) -> None:
    async def main() -> None:
        server = await asyncio.start_server(_serve_client, "127.0.0.1", 0, backlog=1024)
        port_out.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# -- the frontier ------------------------------------------------------------------------------

def write_frontier(path: Path, urls: int, hosts: int, port: int, chunk: int = 200_000) -> None:
    """urls rows over hosts hosts (host i gets URLs i, i + hosts, ...), written chunk by chunk
    so this process never holds the whole table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from crawl_assets.crawler.batches.arrow_schemas import FRONTIER_SCHEMA

    with pq.ParquetWriter(path, FRONTIER_SCHEMA) as writer:
        for start in range(0, urls, chunk):
            numbers = range(start, min(start + chunk, urls))
            host_names = [f"h{n % hosts:05d}.{DOMAIN}" for n in numbers]
            rows = {
                "url": [f"http://{h}:{port}/p/{n // hosts}.html" for h, n in zip(host_names, numbers)],
                "host": host_names,
                "depth": [0] * len(numbers),
                "priority": [1 + n % 5 for n in numbers],
            }
            table = pa.table(rows).cast(pa.schema([FRONTIER_SCHEMA.field(k) for k in rows]))
            for name in FRONTIER_SCHEMA.names[4:]:
                table = table.append_column(FRONTIER_SCHEMA.field(name), pa.nulls(len(numbers), FRONTIER_SCHEMA.field(name).type))
            writer.write_table(table)


# -- the batch -------------------------------------------------------------------------------

def run_batch(frontier: Path, workdir: Path, seconds: float, concurrency: int) -> dict:
    from crawl_assets.crawler.batches import progress as progress_module
    from crawl_assets.crawler.url_policy.addresses import NetworkException
    from crawl_assets.crawler.batches.batch import run_fetch_batch
    from crawl_assets.crawler.batches.checkpoint import BatchProgress
    from crawl_assets.crawler.crawl_errors import BatchStopped
    from crawl_assets.crawler.settings import load_settings
    from crawl_assets.crawler.vocabulary import StatusClass

    settings = dataclasses.replace(
        load_settings(use_env=False), shard_count=1, max_concurrent_hosts=concurrency,
        default_delay_s=1.0, host_scope=(f"*.{DOMAIN}",),
        resolver_overrides={f"*.{DOMAIN}": "127.0.0.1"}, blocklist_file=workdir / "none.txt",
        network_exceptions=(NetworkException((f"*.{DOMAIN}",), (ipaddress.ip_network("127.0.0.0/8"),)),))
    progress = BatchProgress(workdir / "checkpoint")
    times: dict[str, float] = {"started": time.monotonic()}
    tick = progress_module.Checkpointer.tick

    def tick_until_time_is_up(self) -> None:  # the first tick comes after the spill: fetching began
        times.setdefault("fetching", self.engine.clock.now() - settings.checkpoint_interval_s)
        tick(self)
        if time.monotonic() - times["fetching"] >= seconds:
            times["stopped"] = time.monotonic()
            raise BatchStopped("the benchmark's time is up")

    progress_module.Checkpointer.tick = tick_until_time_is_up
    build = progress_module.DiskFrontier.build

    def timed_build(*args, **kwargs):
        began = time.monotonic()
        disk = build(*args, **kwargs)
        times["spill_s"] = time.monotonic() - began
        return disk

    progress_module.DiskFrontier.build = timed_build
    try:
        run_fetch_batch(settings, 0, [], workdir / "warc", "bench", progress=progress, frontier=frontier)
    except BatchStopped:
        pass
    checkpoint = progress.load()
    records = progress.records(checkpoint)
    pages = sum(r.status_class == StatusClass.OK for r in records)
    left = sum(c[1] for c in (checkpoint.frontier_cursors or {}).values())
    return {"pages": pages, "rows": len(records), "on_disk": left, "spill_s": times.get("spill_s", 0.0),
            "fetch_s": times.get("stopped", time.monotonic()) - times.get("fetching", times["started"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=5_000_000)
    parser.add_argument("--hosts", type=int, default=50_000)
    parser.add_argument("--seconds", type=float, default=60.0, help="fetching time (after the spill)")
    parser.add_argument("--concurrency", type=int, default=256, help="hosts in flight at once")
    args = parser.parse_args(argv)
    load_at_start = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="frontier-memory-"))
    context = multiprocessing.get_context("spawn")
    port_out = context.Queue()
    server = context.Process(target=serve, args=(port_out,), daemon=True)
    server.start()
    try:
        port = port_out.get(timeout=30)
        began = time.monotonic()
        write_frontier(workdir / "frontier.parquet", args.urls, args.hosts, port)
        print(f"frontier: {args.urls:,} URLs over {args.hosts:,} hosts written in "
              f"{time.monotonic() - began:.1f} s ({(workdir / 'frontier.parquet').stat().st_size / 2**20:.0f} MiB)",
              flush=True)
        result = run_batch(workdir / "frontier.parquet", workdir, args.seconds, args.concurrency)
    finally:
        server.terminate()
        server.join(10)
        shutil.rmtree(workdir, ignore_errors=True)
    peak_mb = peak_rss_kb() / 1024
    pages_per_s = result["pages"] / result["fetch_s"] if result["fetch_s"] > 0 else 0.0
    print(f"spill to disk (sort by host, one line per URL): {result['spill_s']:.1f} s")
    print(f"fetched {result['pages']:,} pages ({result['rows']:,} fetch-log rows) in {result['fetch_s']:.1f} s; "
          f"{result['on_disk']:,} URLs still on disk")
    print(load_line(load_at_start))
    print(f"frontier_memory urls={args.urls} hosts={args.hosts} peak_rss_mb={peak_mb:.0f} "
          f"pages_per_s={pages_per_s:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
