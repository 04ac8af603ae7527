"""The index step: a CDXJ and a Parquet capture index beside every WARC file of a batch.

Run once the batch's WARC files are closed (renamed from their ".open" names). The CDXJ file
is what pywb and other WARC tools read; the Parquet file holds the same rows for DuckDB (the
catalog's `captures` view reads every one of them). Indexes whose WARC file has left the
folder (moved aside as superseded) are removed, so the view never points at a missing file.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ...crawler.archive.warc_index import CDXJ_SUFFIX, PARQUET_SUFFIX, WARC_SUFFIX, index_paths, write_index


@dataclass(frozen=True)
class IndexResult:
    files: int
    records: int
    seconds: float
    removed_stale: int


def index_warc_files(warc_files: Iterable[Path], warc_dir: Path) -> IndexResult:
    started = time.perf_counter()
    files = [Path(p) for p in warc_files]
    assert all(p.exists() and p.name.endswith(WARC_SUFFIX) for p in files), \
        "index closed WARC files only (after the writer renamed them)"
    records = sum(write_index(p) for p in files)
    current = {index for p in warc_dir.glob("*" + WARC_SUFFIX) for index in index_paths(p)}
    stale = [p for suffix in (CDXJ_SUFFIX, PARQUET_SUFFIX) for p in warc_dir.glob("*" + suffix)
             if p not in current]
    for path in stale:
        path.unlink()
    return IndexResult(len(files), records, time.perf_counter() - started, len(stale))
