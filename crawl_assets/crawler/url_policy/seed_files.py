"""Seed lists: *.txt files, one URL a line, '#' starts a comment.

A bad line never fails the crawl: it is reported with its file and line number and skipped.
A file that cannot be read at all (permissions, a folder named *.txt) stops the seed list with
a CrawlInputError naming it. No seed file at all is an empty list: an empty day.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..crawl_errors import CrawlInputError
from .urls import UrlError, normalize_url


@dataclass(frozen=True)
class Seed:
    url: str
    source: str  # "file:line"


@dataclass(frozen=True)
class BadSeedLine:
    file: str
    line: int
    text: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}: {self.text!r}"


def read_seed_files(seeds_dir: Path) -> tuple[list[Seed], list[BadSeedLine]]:
    """All seeds under seeds_dir/*.txt, de-duplicated in file order, plus the bad lines."""
    seeds: dict[str, Seed] = {}
    bad: list[BadSeedLine] = []
    for path in sorted(Path(seeds_dir).glob("*.txt")):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            bad.append(BadSeedLine(str(path), 0, "", f"not UTF-8 text ({exc.reason})"))
            continue
        except OSError as exc:  # a whole list unread would silently shrink the crawl: stop
            raise CrawlInputError(f"the seed file {path} cannot be read ({exc.strerror or exc}): "
                                  f"make it readable, or move it out of {seeds_dir}") from None
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                url = normalize_url(line)
            except UrlError as exc:
                bad.append(BadSeedLine(str(path), number, raw.strip(), str(exc)))
                continue
            seeds.setdefault(url, Seed(url, f"{path.name}:{number}"))
    return list(seeds.values()), bad
