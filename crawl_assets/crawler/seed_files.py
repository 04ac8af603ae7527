"""Seed lists: *.txt files, one URL a line, '#' starts a comment.

A bad line never fails the crawl: it is reported with its file and line number and skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
