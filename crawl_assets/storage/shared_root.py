"""The data root as a local folder (the default) or an fsspec URL (s3://bucket/prefix in
production, memory:// in tests), and the few file operations that differ between the two.

Locally a path is a pathlib.Path and every helper below is the plain local call, so a crawl
on one machine pays nothing for the choice. Under a URL a path is a UPath (universal-pathlib)
and:

- a finished file is uploaded whole (put_file, write_file_atomic): written to a local
  temporary file first, then put at its final name. An object store makes an object visible
  only once its upload has completed, so a reader never sees half a file; a store that can
  show a partial file (sftp, smb) gets the upload under a temporary name and a rename.
- Parquet is read through pyarrow with the path's fsspec file system (read_table), DuckDB
  through the same file system registered on its connection (connect).
- what must be a local file while it is written is written locally and uploaded when it is
  finished: WARC files, fetch checkpoints and the catalog database in the settings' work_dir,
  the Bloom filter in a temporary folder (docs/SCALE.md says which, and why).

`file://` URLs are local paths (a shared file system mounted on every machine). A memory://
root lives in one process: for tests.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePath
from typing import Union
from urllib.parse import unquote, urlsplit

import pyarrow.parquet as pq

from ..crawler.crawl_errors import CrawlInputError

# Another process (a worker on another machine) adds files under the root at any moment: a
# cached directory listing would hide them from the next glob.
REMOTE_OPTIONS = {"use_listings_cache": False}
# Stores whose objects appear only when their upload completes: a file is put at its final name.
WHOLE_OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "memory"})

# The file systems of the remote roots this process has opened, registered on every DuckDB
# connection made by connect() (none for a local root).
_filesystems: dict[str, object] = {}


def data_root_path(value: str | os.PathLike, base_dir: Path) -> "DataPath":
    """A data root setting's path: a local Path (relative to base_dir), or a UPath for a URL."""
    text = str(value)
    if "://" not in text:
        path = Path(text)
        return path if path.is_absolute() else (base_dir / path).resolve()
    scheme = urlsplit(text).scheme
    if scheme == "file":
        return Path(unquote(urlsplit(text).path))
    from upath import UPath  # imported only for a URL root

    try:
        path = UPath(text, **REMOTE_OPTIONS)
        path.fs  # noqa: B018 - resolves the protocol: an unknown one or a missing package fails here
    except ImportError as exc:
        install = ("install the project's s3 extra: .venv/bin/pip install -e '.[s3]'" if scheme in ("s3", "s3a")
                   else f"fsspec says: {exc}")
        raise ValueError(f"the {scheme}:// file system needs a package that is not installed ({install})") from None
    except ValueError as exc:
        raise ValueError(f"{scheme}:// is not a file system fsspec knows ({exc})") from None
    _filesystems.setdefault(path.protocol, path.fs)
    return path


def forget_remote_roots() -> None:
    """Stop registering the file systems of URL roots opened so far (a test's server is gone)."""
    with _scratch.lock:
        _filesystems.clear()
        _scratch.database = None  # it holds their registrations: the next query makes a new one


def is_remote(path: object) -> bool:
    """True for a UPath under a URL root; a local path is a pathlib.Path (or a string)."""
    return not isinstance(path, (PurePath, str))


class _ScratchDatabase:
    """The in-memory DuckDB database that query_connection() calls share, and the process it
    was made in (a forked run process makes its own)."""

    lock = threading.Lock()
    database = None
    pid = 0
    registered: frozenset[str] = frozenset()


_scratch = _ScratchDatabase()


def connect(database: str = ":memory:", **kwargs):
    """duckdb.connect, with the file system of every remote root in use registered, so
    read_parquet('s3://...') reads through the same fsspec file system as everything else."""
    import duckdb  # noqa: PLC0415 - imported when a step first queries, as before

    con = duckdb.connect(database, **kwargs)
    for filesystem in _filesystems.values():
        con.register_filesystem(filesystem)
    return con


def query_connection():
    """A connection for queries over files and registered tables, to an in-memory database
    this process shares (remote roots' file systems registered as by connect()).

    Making a DuckDB database costs about 30 ms of CPU, a connection to an open one well under
    1 ms, and a day's report and checks ask some hundred small questions. A connection's temp
    tables and registered tables are its own; what would be database-wide (views, settings,
    Python functions) belongs on a connect() of its own."""
    import duckdb  # noqa: PLC0415 - imported when a step first queries, as before

    with _scratch.lock:
        if _scratch.database is None or _scratch.pid != os.getpid():
            _scratch.database, _scratch.pid, _scratch.registered = duckdb.connect(), os.getpid(), frozenset()
        for protocol in _filesystems.keys() - _scratch.registered:  # once: DuckDB refuses a second time
            _scratch.database.register_filesystem(_filesystems[protocol])
        _scratch.registered = frozenset(_filesystems)
        return _scratch.database.cursor()


def read_table(source: "DataPath | Sequence[DataPath]", **kwargs):
    """pq.read_table of one path or a list of paths, local or under a URL root."""
    many = isinstance(source, (list, tuple))
    first = source[0] if many and source else source
    if not is_remote(first):
        return pq.read_table(source, **kwargs)
    paths = [p.path for p in source] if many else source.path
    return pq.read_table(paths, filesystem=first.fs, **kwargs)


def parquet_file(path: "DataPath") -> pq.ParquetFile:
    """pq.ParquetFile (footer only), local or under a URL root."""
    if is_remote(path):
        return pq.ParquetFile(path.path, filesystem=path.fs)
    return pq.ParquetFile(path)


def put_file(local: Path, target: "DataPath") -> None:
    """Upload a finished local file to `target` so that no reader sees part of it."""
    fs = target.fs
    if target.protocol in WHOLE_OBJECT_STORES:
        fs.put_file(str(local), target.path)
        return
    partial = target.path + ".tmp"
    fs.makedirs(target.parent.path, exist_ok=True)
    fs.put_file(str(local), partial)
    fs.mv(partial, target.path)


def write_file_atomic(target: "DataPath", write: Callable[[Path], None]) -> None:
    """`write(path)` to a temporary name, then into place: a local rename, or an upload."""
    if not is_remote(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        write(tmp)
        os.replace(tmp, target)
        return
    with tempfile.TemporaryDirectory(prefix="recrawl-upload-") as folder:
        local = Path(folder) / target.name
        write(local)
        put_file(local, target)


@contextlib.contextmanager
def local_copies(path: "DataPath", *beside: "DataPath") -> Iterator[Path]:
    """A local folder holding `path` and those of `beside` that exist (same names), for
    readers that take a file name (rbloom); a local path's own folder."""
    if not is_remote(path):
        yield path.parent
        return
    with tempfile.TemporaryDirectory(prefix="recrawl-download-") as folder:
        for remote in (path, *beside):
            if remote is path or remote.exists():
                remote.fs.get_file(remote.path, os.path.join(folder, remote.name))
        yield Path(folder)


def publish_folder(local: Path, target: "DataPath", skip: Callable[[Path], bool] = lambda p: False) -> list:
    """Upload every file under `local` (but those whose relative path `skip` names) to the
    same place under `target`, each whole; returns the target paths."""
    published = []
    for path in sorted(p for p in local.rglob("*") if p.is_file() and not skip(p.relative_to(local))):
        remote = target.joinpath(*path.relative_to(local).parts)
        put_file(path, remote)
        published.append(remote)
    return published


def make_local_folder(folder: Path) -> Path:
    """Create a folder this machine writes in (under work_dir, or a local data root): one it
    cannot create is a settings mistake, named in one sentence before anything is fetched."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CrawlInputError(f"cannot create the local folder {folder} ({exc.strerror or exc}): set work_dir "
                              "(or a local data_root) in the settings to a folder this machine can write") from None
    return folder


def relative_under(root: "DataPath", path: "DataPath") -> PurePath:
    """`path` relative to the data root, as parts (the same for local and remote roots)."""
    return PurePath(str(path)[len(str(root)):].lstrip("/"))


DataPath = Union[Path, "UPath"]  # noqa: F821 - UPath is imported only for a URL root
