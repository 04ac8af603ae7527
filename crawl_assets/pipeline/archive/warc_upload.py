"""Under a URL data root, a fetch batch writes its WARC files (and their checkpoint and
indexes) in a local folder under work_dir, and uploads them when the batch has finished,
before the fetch log that points at them is written: WARC writing appends to an open file
and a crash is repaired by truncating it (crawler/batches/checkpoint.py), neither of which an
object store does. Under a local root the batch writes in place, as it always has."""

from __future__ import annotations

from pathlib import Path

from ...crawler.archive.warc import OPEN_SUFFIX
from ...crawler.archive.warc_index import WARC_SUFFIX
from ...crawler.settings import CrawlSettings
from ...storage.shared_root import DataPath, is_remote, make_local_folder, publish_folder, relative_under
from ..fetch_step import CHECKPOINT_DIR, SUPERSEDED_DIR


def local_warc_dir(settings: CrawlSettings, folder: DataPath) -> Path:
    """Where the batch writes: `folder` itself under a local root, else its place in work_dir."""
    if not is_remote(folder):
        return folder
    return make_local_folder(settings.work_dir / relative_under(settings.data_root, folder))


def _stays_local(relative: Path) -> bool:
    return relative.parts[0] == CHECKPOINT_DIR or relative.name.endswith(OPEN_SUFFIX)


def publish_warc_dir(local: Path, folder: DataPath) -> None:
    """Upload the finished WARC files and indexes of `local` to `folder` (nothing to do when
    they are the same); WARC files of earlier attempts that this batch does not hold are moved
    aside into the superseded folder, and their indexes removed, as the local step does."""
    if local == folder:
        return
    publish_folder(local, folder, skip=_stays_local)
    current = {path.name for path in local.iterdir() if path.is_file()}
    for remote in folder.glob("*"):
        if remote.name in current or not remote.is_file():
            continue
        if remote.name.endswith(WARC_SUFFIX):
            remote.fs.mv(remote.path, (folder / SUPERSEDED_DIR / remote.name).path)
        else:
            remote.unlink()
