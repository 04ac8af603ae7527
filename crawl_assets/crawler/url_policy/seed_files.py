"""Seed lists: *.txt files, one URL a line, '#' starts a comment.

A bad line never fails the crawl: it is reported with its file and line number and skipped,
and the file's other lines are kept (each line is decoded on its own, so one stray byte costs
its line only). A URL the fetcher would refuse is a bad line too, with the fetcher's reason:
the trap defences' URL rules, and the address guard for a host written as an IP address.
A file that cannot be read at all (permissions, a folder named *.txt) stops the seed list with
a CrawlInputError naming it. No seed file at all is an empty list (pipeline/day_order.py says when
that is a mistake: on the crawl's first day).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..crawl_errors import CrawlInputError
from ..settings import CrawlSettings
from .addresses import address_allowed
from .trap_defences import TrapDefences, TrapLimits
from .urls import UrlError, host_of, normalize_url

SHOWN_CHARACTERS = 80  # of a bad line, in messages: a 100,000-character line is shown cut
UTF8_BOM = b"\xef\xbb\xbf"

# Why the fetcher would refuse a normalised URL, or None.
Refusal = Callable[[str], "str | None"]


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
        shown = self.text if len(self.text) <= SHOWN_CHARACTERS else \
            f"{self.text[:SHOWN_CHARACTERS]}... ({len(self.text):,} characters)"
        return f"{self.file}:{self.line}: {self.reason}: {shown!r}"


def fetcher_refusal(settings: CrawlSettings) -> Refusal:
    """The fetcher's own rules for a URL it is given, so a seed it would refuse is listed as a
    bad line now instead of entering the seeds table: the URL rules of the trap defences
    (the blocklist aside: that is a choice, not a mistake) and the address guard."""
    traps = TrapDefences(TrapLimits.from_settings(settings))

    def refusal(url: str) -> str | None:
        host = host_of(url)
        reason = traps.intrinsic_reason(url, host)
        if reason is not None:
            return f"refused by the trap defences ({reason}; the limits are in recrawl.toml)"
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return None  # a name: its address is checked when the fetcher resolves it
        if not address_allowed(host, str(address), settings.network_exceptions):
            return (f"{host} is not a public address, which the fetcher refuses "
                    "(network_exceptions in recrawl.toml opens a network to named hosts)")
        return None

    return refusal


def read_seeds(settings: CrawlSettings) -> tuple[list[Seed], list[BadSeedLine]]:
    """The seeds and bad lines of settings.seeds_dir, a URL the fetcher would refuse counted bad."""
    return read_seed_files(settings.seeds_dir, fetcher_refusal(settings))


def read_seed_files(seeds_dir: Path, refusal: Refusal | None = None) -> tuple[list[Seed], list[BadSeedLine]]:
    """All seeds under seeds_dir/*.txt, de-duplicated in file order, plus the bad lines."""
    seeds: dict[str, Seed] = {}
    bad: list[BadSeedLine] = []
    for path in sorted(Path(seeds_dir).glob("*.txt")):
        try:
            data = path.read_bytes()
        except OSError as exc:  # a whole list unread would silently shrink the crawl: stop
            raise CrawlInputError(f"the seed file {path} cannot be read ({exc.strerror or exc}): "
                                  f"make it readable, or move it out of {seeds_dir}") from None
        for number, raw in enumerate(data.removeprefix(UTF8_BOM).splitlines(), start=1):
            url, reason = seed_of_line(raw, refusal)
            if reason is not None:
                bad.append(BadSeedLine(str(path), number, raw.decode("utf-8", "replace").strip(), reason))
            elif url is not None:
                seeds.setdefault(url, Seed(url, f"{path.name}:{number}"))
    return list(seeds.values()), bad


def seed_of_line(raw: bytes, refusal: Refusal | None) -> tuple[str | None, str | None]:
    """(normalised URL, None), (None, why the line is bad), or (None, None) for a blank or
    comment line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
    line = text.split("#", 1)[0].strip()
    if not line:
        return None, None
    try:
        url = normalize_url(line)
    except UrlError as exc:
        return None, str(exc)
    reason = refusal(url) if refusal is not None else None
    return (None, reason) if reason is not None else (url, None)
