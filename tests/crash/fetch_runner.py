"""One fetch partition in a process of its own, for the crash tests to SIGKILL:

    python tests/crash/fetch_runner.py SETTINGS_JSON DATE SHARD [--die-at WHERE:N]

SETTINGS_JSON holds CrawlSettingsResource's fields (settings files, data root, seeds folder).
It does what the fetch_batch asset does, without Dagster (nor importing it, seconds of CPU a
run): the step, then the fetch log, links and dropped files. --die-at kills the process itself
(SIGKILL) at a chosen point, the N-th time it is reached:
  warc:N        halfway through the N-th write to a WARC file (a gzip member)
  checkpoint:N  with the N-th checkpoint's parts written but not its state.json
  parquet:N     halfway through writing the N-th checkpoint part (a Parquet file)
"""

import io
import json
import os
import signal
import sys
from pathlib import Path

from crawl_assets.crawler.archive import warc
from crawl_assets.crawler.batches import checkpoint
from crawl_assets.crawler.settings import load_settings, with_run_overrides
from crawl_assets.pipeline.fetch_step import fetch_inputs, run_fetch_step
from crawl_assets.storage.layout import dropped_file, fetch_log_file, links_file, warc_dir, write_parquet_atomic


def die_at(where: str, nth: int) -> None:
    calls = {"n": 0}

    def due() -> bool:
        calls["n"] += 1
        return calls["n"] == nth

    def kill() -> None:
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    if where == "warc":
        class DyingFile(io.FileIO):  # every WARC write goes through the file the writer opens
            def write(self, data):
                if due():
                    super().write(data[: len(data) // 2])
                    kill()
                return super().write(data)

        def open_dying(path, mode="r", *args, **kwargs):
            if "w" in mode and str(path).endswith(warc.OPEN_SUFFIX):
                return io.BufferedWriter(DyingFile(path, "w"), buffer_size=1)
            return open(path, mode, *args, **kwargs)

        warc.open = open_dying
    elif where in ("checkpoint", "parquet"):
        fsync_write = checkpoint._fsync_write

        def dying_write(path, write):
            if where == "checkpoint" and path.name == checkpoint.STATE_FILE and due():
                kill()
            if where == "parquet" and path.parent.name == checkpoint.PARTS_DIR and due():
                write(path.with_name(path.name + ".tmp"))
                tmp = path.with_name(path.name + ".tmp")
                tmp.write_bytes(tmp.read_bytes()[: tmp.stat().st_size // 2])
                kill()
            fsync_write(path, write)

        checkpoint._fsync_write = dying_write
    else:
        raise SystemExit(f"unknown --die-at {where}")


def main(argv: list[str]) -> int:
    config, date, shard = json.loads(Path(argv[0]).read_text()), argv[1], argv[2]
    if len(argv) > 4 and argv[3] == "--die-at":
        where, nth = argv[4].split(":")
        die_at(where, int(nth))
    settings = with_run_overrides(load_settings(*config.get("settings_files", ())), config.get("data_root"),
                                  config.get("seeds_dir"))
    root = settings.data_root
    inputs = fetch_inputs(root, date, shard, settings)
    result = run_fetch_step(settings, shard, inputs, warc_dir(root, date, shard),
                            warc_prefix=f"recrawl-{date}-{shard}-{os.getpid()}")
    write_parquet_atomic(result.fetch_log, fetch_log_file(root, date, shard))
    write_parquet_atomic(result.links, links_file(root, date, shard))
    write_parquet_atomic(result.dropped, dropped_file(root, date, shard))
    print(json.dumps({"fetched": result.counts.fetched}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
