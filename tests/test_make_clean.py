"""`make clean` deletes every crawl output under data/ (each file layout.py names, the catalog,
the work folder of a URL data root) and keeps the seed lists, the blocklist and the run history:
an output it left behind (a seen filter, a recrawl plan) would steer the next crawl."""

import shutil
import subprocess

from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.storage import layout


def test_make_clean_leaves_only_the_seeds_blocklist_and_run_history(tmp_path):
    shutil.copy(PROJECT_ROOT / "Makefile", tmp_path / "Makefile")
    data = tmp_path / "data"
    kept = [data / "seeds" / "mine.txt", data / "blocklist.txt", data / "dagster_home" / "dagster.yaml"]
    outputs = [data / "crawl.duckdb", data / "work" / "warc" / "x.warc.gz", data / "demoweb" / "log.parquet"]
    for table_file in vars(layout).values():  # every file of layout.py's table, and the seeds
        if isinstance(table_file, layout.PartitionFile):
            path = table_file(data, "2026-11-28", *(["s00"] if table_file.per_shard else []))
            outputs.append(path / "part" if not table_file.name else path)
    outputs.append(layout.seeds_file(data))
    assert len(outputs) > 18  # every table, the WARC folder and the day report
    for path in kept + outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    subprocess.run(["make", "-s", "clean"], cwd=tmp_path, check=True, timeout=60)
    assert sorted(p for p in data.rglob("*") if p.is_file()) == sorted(kept)
