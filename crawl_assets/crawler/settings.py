"""Crawl settings: one frozen dataclass, loaded from TOML files layered on the defaults.

The defaults are for a real crawl of the public web. `recrawl.toml` at the top of the
checkout documents every key; further files named in RECRAWL_SETTINGS (colon-separated)
are laid on top, so the demo keeps its own settings in settings/demo.toml.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import ipaddress
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .crawl_errors import CrawlInputError
from .fetching.tls import TRUST_MODES
from .url_policy.addresses import NetworkException
from .url_policy.sharding import check_shard_count, shard_keys

SETTINGS_ENV = "RECRAWL_SETTINGS"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SETTINGS_FILE = PROJECT_ROOT / "recrawl.toml"


# Front-queue weights of priority levels 1 (most urgent) .. 5; the in-batch frontier's default.
DEFAULT_PRIORITY_WEIGHTS: tuple[float, ...] = (16.0, 8.0, 4.0, 2.0, 1.0)
# settings.change_definition's values (the field's comment says what each counts).
ARCHIVE_CHANGES, CONTENT_CHANGES = "archive", "content"
CHANGE_DEFINITIONS = (ARCHIVE_CHANGES, CONTENT_CHANGES)


class SettingsError(CrawlInputError):
    """A settings file or value is wrong; the message names the file and the key."""


@dataclass(frozen=True)
class CrawlSettings:
    # A local folder, or an fsspec URL shared by every machine (s3://bucket/prefix): then
    # files that must be local while written (WARC files, checkpoints, the catalog database)
    # are written under work_dir and uploaded when finished (storage/shared_root.py).
    data_root: Path = PROJECT_ROOT / "data"
    work_dir: Path = PROJECT_ROOT / "data" / "work"
    seeds_dir: Path = PROJECT_ROOT / "data" / "seeds"
    shard_count: int = 8
    # The day per shard: each shard's frontier built in its fetch run, its seen filter in a
    # step of its own, and the recrawl priorities planned shard by shard (each shard's pages in a step of its own, one price for
    # the crawl from their summaries: pipeline/priorities/shard_priorities.py), for a crawl too
    # large for one process; false: both in one step. Read when the definitions load.
    day_per_shard: bool = False
    # DuckDB's memory for a day's frontier (in one go, or a shard's part), in MB: it spills
    # beyond. 3 GB holds the grouping of 10 million known URLs (below it, it spilled and waited
    # on the disk: bench/README.md) and leaves room for the frontier's Arrow table under the
    # step's 4 GB; a shard's part of a crawl of 100 million (12.5 million known URLs in 8
    # shards) spills at 3 GB and runs about a fifth faster at 6 (docs/SCALE.md).
    frontier_memory_mb: int = 3000
    # The crawl's first day: the first daily partition Dagster offers.
    start_date: str = "2026-11-01"
    # Fetch-batch runs a cycle keeps in the run queue at once (dagster.yaml: one per shard).
    max_parallel_shards: int = 4
    # A failed fetch-batch run tries its step again twice, this long and then twice this long
    # later (crawl_assets/defs/run_policies.py); a shard that still fails leaves a partial day.
    fetch_retry_delay_s: float = 60.0
    # A day's frontier waits this long for the crawl's previous day to close (its seen-URL
    # filter and host near-duplicate ratios written: pipeline/day_order.py), then fails.
    previous_day_wait_s: float = 12 * 3600.0
    user_agent: str = "recrawl/0.1 (+https://example.org/recrawl-bot)"
    # Politeness: seconds between the end of one request to a host and the start of the next
    # (each wait is 10 % longer, at most 1 s: crawler/fetching/politeness.py says why).
    default_delay_s: float = 1.0
    max_concurrent_hosts: int = 64
    # For the TCP connection, and again for the TLS handshake of an https one.
    connect_timeout_s: float = 5.0
    fetch_timeout_s: float = 30.0
    # TLS trust store (crawler/fetching/tls.py): a PEM file of CA certificates added to
    # certifi's bundle ("add") or used instead of it ("replace"); None: certifi's, or the file
    # SSL_CERT_FILE names.
    ca_bundle: Path | None = None
    ca_bundle_mode: str = "add"
    # A fetch batch checkpoints its progress this often (crawler/batches/checkpoint.py): a crash loses
    # at most this much work. A URL held by a worker longer than lease_timeout_s is queued again.
    checkpoint_interval_s: float = 30.0
    lease_timeout_s: float = 300.0
    max_body_bytes: int = 5 * 1024 * 1024
    # Same-shard links found during a batch are fetched in the same batch, within these bounds.
    max_pages_per_host: int = 200
    max_depth: int = 16
    # Politeness beyond the default delay (see crawler/fetching/politeness.py).
    max_crawl_delay_s: float = 30.0
    response_time_factor: float = 2.0
    max_adaptive_delay_s: float = 60.0
    max_retry_after_s: float = 120.0
    # Retries on 5xx and connection errors: at most this many attempts, exponential backoff.
    max_attempts: int = 3
    retry_base_s: float = 2.0
    max_redirects: int = 5
    robots_ttl_s: float = 86400.0
    robots_error_ttl_s: float = 600.0
    # Trap defences (see crawler/url_policy/trap_defences.py) and the hand-kept blocklist.
    max_url_length: int = 2048
    max_query_params: int = 10
    max_path_repeats: int = 3
    max_urls_per_pattern: int = 100
    host_growth_ratio: float = 10.0
    host_growth_min_urls: int = 500
    blocklist_file: Path = PROJECT_ROOT / "data" / "blocklist.txt"
    # Near duplicates: SimHash distance threshold, and the share of a host's pages that are
    # copies (near-duplicates whose own links are alike too: pipeline/dedup_step.py) above
    # which its new links are no longer followed (judged only for hosts with at least
    # demote_min_pages fingerprinted pages), unless pages on other hosts link them: at least
    # demoted_host_min_inlinks of them.
    near_dup_threshold: int = 3
    demote_near_dup_ratio: float = 0.8
    demote_min_pages: int = 10
    demoted_host_min_inlinks: int = 3
    # Front-queue weights, priority 1 (most urgent) first.
    priority_weights: tuple[float, ...] = DEFAULT_PRIORITY_WEIGHTS
    # Recrawl priorities (pipeline/priorities/priorities_step.py). The per-host daily budget is
    # max_pages_per_host; politeness caps a host further at 86,400 / its delay fetches a day.
    daily_fetch_budget: int = 100_000
    # The first day (no plan yet) fetches at most this many pages, all shards together; 0 (a
    # day that fetches nothing would start no crawl): the daily budget holds then too.
    first_day_fetch_budget: int = 0
    # Never-fetched URLs compete with refreshes by expected gain (pipeline/priorities/). A floor
    # is theirs while any is known: discovery_share of the daily budget, or what fetches the
    # known ones within discovery_days (all of them the next day by default), up to half the
    # budget: what a new page's links lead to, and a web known whole, are not in its gain. exploration_share goes first to revisits of
    # URLs still on their pool's prior rate, where a revisit teaches the pool most (bounded).
    discovery_share: float = 0.05
    discovery_days: int = 1
    exploration_share: float = 0.05
    # What counts as a change of a page (change_stats): "archive", the payload an archive
    # stores, byte for byte, less the values that change on every fetch by design
    # (crawler/content/volatile_parts.py); or "content", its main text (the SimHash moved more
    # than near_dup_threshold bits: template, navigation and footer edits are not changes).
    change_definition: str = ARCHIVE_CHANGES
    # Of the daily budget, first spent on the sitemaps and feeds of hosts whose dates are
    # trusted (change_stats/change_evidence.py), before the plan's pages: cheap change signals.
    listing_reserve_share: float = 0.05
    recrawl_objective: str = "freshness"  # or "age" (refresh_allocation.OBJECTIVES)
    flagged_host_budget: int = 10  # a day, for hosts flagged as traps or near-duplicate-heavy
    # A host is flagged as a trap once the trap defences refused at least trap_min_refused of
    # its URLs, and at least trap_refused_ratio per page fetched from it (pipeline/recrawl_inputs.py):
    # an ordinary site may link a stray over-long URL, a trap keeps producing them (the deep-path
    # trap shows a few repeated-segment URLs a day, its budget spent before the rest).
    trap_min_refused: int = 5
    trap_refused_ratio: float = 0.1
    not_found_retry_days: int = 7  # a 404 comes back after this, doubling per repeat ...
    not_found_max_days: int = 180  # ... up to this
    gone_retry_days: int = 365  # a 410 comes back after this (0: never)
    # Hostname -> IP address; a leading "*." matches every subdomain.
    resolver_overrides: dict[str, str] = field(default_factory=dict)
    # Only hosts matching one of these patterns are crawled (empty: any host).
    host_scope: tuple[str, ...] = ()
    # The render tier (crawler/rendering/): pages of hosts matching these patterns are rendered
    # in headless Chromium after their plain fetch (empty: nothing is rendered), at most
    # render_pool_size pages at once and render_daily_budget pages a day (all shards together).
    # "auto" among them: hosts whose pages look script-built are rendered when a sample shows
    # rendering finds materially more (rendering/render_decision.py).
    render_hosts: tuple[str, ...] = ()
    render_pool_size: int = 2
    render_daily_budget: int = 1000
    render_timeout_s: float = 30.0  # for one page, its scripts and clicks included
    render_clicks: int = 5  # rounds of scrolling to the end and pressing "load more", at most
    chromium_path: str = "/usr/bin/chromium"
    network_exceptions: tuple[NetworkException, ...] = ()

    @property
    def catalog_path(self) -> Path:
        """The DuckDB catalog: a database file is written locally, so under a URL root it lies
        in work_dir (and a copy is uploaded to the root for other machines)."""
        if isinstance(self.data_root, Path):
            return self.data_root / "crawl.duckdb"
        return self.work_dir / "crawl.duckdb"

    def shard_keys(self) -> list[str]:
        return shard_keys(self.shard_count)

    @property
    def first_day_budget(self) -> int:
        """Pages the crawl's first day fetches at most: its own setting, else the daily budget."""
        return self.first_day_fetch_budget or self.daily_fetch_budget


_PATH_KEYS = {"work_dir", "seeds_dir", "blocklist_file", "ca_bundle"}


def _number(value, kind: str) -> int | float:
    """A TOML number: "64" in quotes is a string to TOML, and true a boolean; taking either for a
    number would hide a typing slip that other values of the same file may share."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be {kind}" + (", written without quotes" if isinstance(value, str) else ""))
    return value


def _whole_number(value) -> int:
    """An int setting: 2.7 or true would be read as 2 or 1 without a word, so they are refused."""
    number = _number(value, "a whole number")
    if isinstance(number, float) and not number.is_integer():
        raise ValueError("must be a whole number")
    return int(number)


def _finite_number(value) -> float:
    """A float setting: nan and inf compare false or true with everything, so they are refused."""
    number = float(_number(value, "a number"))
    if not math.isfinite(number):
        raise ValueError("must be a finite number")
    return number


def _strings(value) -> list[str]:
    """A list of strings: a lone string would otherwise be taken apart letter by letter."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("must be a list of strings, such as [\"a\", \"b\"]")
    return value


def _coerce(key: str, value, source: str, base_dir: Path):
    """Turn one TOML value into the field's type, or raise SettingsError naming it."""
    try:
        if (key == "data_root" or key in _PATH_KEYS) and not isinstance(value, str):
            raise ValueError("must be a string: a folder" + (" or a URL" if key == "data_root" else ""))
        if key == "data_root":
            from ..storage.shared_root import data_root_path  # noqa: PLC0415 - fsspec only for a URL root

            return data_root_path(value, base_dir)
        if key == "ca_bundle" and value == "":
            return None  # unset: certifi's bundle, or SSL_CERT_FILE's
        if key in _PATH_KEYS:
            if "://" in str(value):
                raise ValueError("only data_root may be a URL: this one is read on the local machine")
            path = Path(value)
            return path if path.is_absolute() else (base_dir / path).resolve()
        if key in ("host_scope", "render_hosts"):
            return tuple(p.lower() for p in _strings(value))
        if key == "resolver_overrides":
            if not isinstance(value, dict):
                raise ValueError("must be a table of host = \"address\"")
            for ip in value.values():
                ipaddress.ip_address(ip)
            return {str(k).lower(): str(v) for k, v in value.items()}
        if key == "network_exceptions":
            if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
                raise ValueError("must be [[crawl.network_exceptions]] tables")
            return tuple(
                NetworkException(
                    hosts=tuple(h.lower() for h in _strings(item["hosts"])),
                    networks=tuple(ipaddress.ip_network(n) for n in _strings(item["networks"])),
                )
                for item in value
            )
        if key == "day_per_shard":
            if not isinstance(value, bool):
                raise ValueError("must be true or false, without quotes")
            return value
        if key == "shard_count":
            check_shard_count(_whole_number(value))
            return int(value)
        if key == "start_date":
            if not isinstance(value, (str, dt.date)) or isinstance(value, dt.datetime):
                raise ValueError("must be a day, YYYY-MM-DD")
            return dt.date.fromisoformat(str(value)).isoformat()
        if key == "priority_weights":
            if not isinstance(value, list):
                raise ValueError("must be a list of numbers, such as [16, 8, 4, 2, 1]")
            weights = tuple(_finite_number(w) for w in value)
            if not weights or min(weights) <= 0:
                raise ValueError("needs at least one weight, all positive")
            return weights
        if key in ("daily_fetch_budget", "first_day_fetch_budget", "flagged_host_budget", "trap_min_refused",
                   "discovery_days",
                   "not_found_retry_days", "render_daily_budget", "render_clicks",
                   "not_found_max_days", "gone_retry_days"):
            number = _whole_number(value)
            if number < 0:
                raise ValueError("must not be negative")
            return number
        if key == "ca_bundle_mode":
            if value not in TRUST_MODES:
                raise ValueError(f"must be one of {', '.join(TRUST_MODES)}")
            return value
        if key == "change_definition":
            if value not in CHANGE_DEFINITIONS:
                raise ValueError(f"must be one of {', '.join(CHANGE_DEFINITIONS)}")
            return value
        if key in ("discovery_share", "listing_reserve_share", "exploration_share"):
            share = _finite_number(value)
            if not 0 <= share <= 1:
                raise ValueError("must be between 0 and 1")
            return share
        if key == "max_redirects" or key in (
                "shard_count", "max_concurrent_hosts", "max_body_bytes", "max_pages_per_host",
                "max_depth", "max_attempts", "max_url_length", "max_query_params",
                "max_path_repeats", "max_urls_per_pattern", "host_growth_min_urls", "near_dup_threshold", "max_parallel_shards",
                "frontier_memory_mb",
                "demote_min_pages", "demoted_host_min_inlinks", "render_pool_size"):
            number = _whole_number(value)
            if number < (0 if key == "max_redirects" else 1):
                raise ValueError("must be at least 1")
            return number
        if key.endswith(("_s", "_factor", "_ratio")):
            number = _finite_number(value)
            if number < 0:
                raise ValueError("must not be negative")
            return number
        if not isinstance(value, str):
            raise ValueError("must be a string, in quotes")
        return value
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise SettingsError(f"{source}: bad value for {key!r}: {value!r} ({exc})") from exc


def _crawl_table(table: dict, path: Path) -> dict:
    """The file's [crawl] table; anything else in the file is refused, since a misspelt table
    ([crawler]) or a key above [crawl] would otherwise be ignored without a word."""
    for name, value in table.items():
        if name == "crawl" and isinstance(value, dict):
            continue
        what = f"table [{name}]" if isinstance(value, dict) else f"key {name!r} outside the [crawl] table"
        raise SettingsError(f"{path}: unknown {what}: every setting goes under [crawl] "
                            "(recrawl.toml lists them)")
    return table.get("crawl", {})


def load_settings(*files: str | os.PathLike, use_env: bool = True) -> CrawlSettings:
    """Defaults, then recrawl.toml, then each file in RECRAWL_SETTINGS, then `files`."""
    layers: list[Path] = []
    if DEFAULT_SETTINGS_FILE.exists():
        layers.append(DEFAULT_SETTINGS_FILE)
    if use_env and os.environ.get(SETTINGS_ENV):
        layers += [Path(p) for p in os.environ[SETTINGS_ENV].split(":") if p]
    layers += [Path(f) for f in files]

    known = {f.name for f in dataclasses.fields(CrawlSettings)}
    values: dict = {}
    for path in layers:
        path = path if path.is_absolute() else (Path.cwd() / path)
        try:
            with open(path, "rb") as fh:
                table = tomllib.load(fh)
        except FileNotFoundError as exc:
            raise SettingsError(f"settings file not found: {path}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{path}: not valid TOML: {exc}") from exc
        for key, value in _crawl_table(table, path).items():
            if key not in known:
                raise SettingsError(f"{path}: unknown setting {key!r} in [crawl]")
            # Paths in a settings file are relative to the project root, wherever it is read from.
            values[key] = _coerce(key, value, str(path), PROJECT_ROOT)
    return CrawlSettings(**values)


def with_run_overrides(settings: CrawlSettings, data_root: str | None = None,
                       seeds_dir: str | None = None) -> CrawlSettings:
    """`settings` with a run's own data root (a folder, or a URL such as s3://bucket/prefix) and
    seeds folder in place of theirs, as a run's config or a runner outside Dagster gives them."""
    from ..storage.shared_root import data_root_path  # noqa: PLC0415 - fsspec only for a URL root

    overrides = {}
    if data_root:
        try:
            overrides["data_root"] = data_root_path(data_root, Path.cwd())
        except ValueError as exc:
            raise SettingsError(f"the run's data_root {data_root!r}: {exc}") from None
    if seeds_dir:
        overrides["seeds_dir"] = Path(seeds_dir).resolve()
    return dataclasses.replace(settings, **overrides)
