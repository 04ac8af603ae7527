"""URL aliases (DUST: "different URLs, similar text"): rules a host's own answers taught,
folding the URLs of one page to one before anything asks whether a URL was seen.

After Bar-Yossef, Keidar and Schonfeld, "Do not crawl in the DUST" (WWW 2007): a host that
answers a query parameter, a whole query or a path variant with the same content has URLs
that are aliases of one page, and a crawler can learn so from pairs of URLs it fetched
(pipeline/alias_rules/alias_learning.py learns and drops the rules; this module applies them). Three kinds
of rule, each for one host:

- PARAMETER name: the parameter changes nothing there; it is removed from the query
  (`/p/12?from=3&id=7` -> `/p/12?id=7`, `/p/12?from=3` -> `/p/12`);
- QUERY path: at that path the query changes nothing (javadoc's frames:
  `/api/index.html?java/util/List.html` is `/api/index.html`); the query is removed;
- INDEX_PAGE: `<dir>/index.html` is `<dir>/`; the name is removed (the page's relative links
  resolve alike against both: a trailing slash alone is not folded, since `/a` and `/a/` do not).

URLs are folded in their canonical form (urls.normalize_url: parameters sorted, a bare key
written `key=`). Folding is the identity on every host without a rule. The same rules hold in
two forms: one URL at a time (the fetch batch folds each link it finds) and over Arrow arrays
(the frontier and the priorities step fold every known URL), one pass per rule.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum

import pyarrow as pa
import pyarrow.compute as pc


class AliasKind(StrEnum):
    PARAMETER = "parameter"
    QUERY = "query"
    INDEX_PAGE = "index_page"


@dataclass(frozen=True)
class AliasRule:
    host: str
    kind: AliasKind
    name: str  # the parameter (PARAMETER), the path (QUERY), "" (INDEX_PAGE)

    def pattern(self) -> tuple[str, str]:
        """(RE2 pattern, replacement) that folds a URL of the rule's host."""
        if self.kind == AliasKind.PARAMETER:  # the parameter and its value, with one "&" beside it
            return rf"([?&]){re.escape(self.name)}=[^&]*&?", r"\1"
        if self.kind == AliasKind.QUERY:
            return rf"^([A-Za-z][A-Za-z0-9+.-]*://[^/?#]*{re.escape(self.name)})\?.*$", r"\1"
        return r"^([^?]*/)index\.html(\?.*)?$", r"\1\2"


# What a removal leaves at the end of a URL: a lone "?" or "&".
_DANGLING = r"[?&]$"


class AliasRules:
    """The active rules of every host (pipeline/alias_rules/alias_learning.py writes them; fetch_step and the
    frontier read them), applied by `fold` and `fold_urls`."""

    def __init__(self, rules: list[AliasRule] = ()):
        self.by_host: dict[str, list[AliasRule]] = defaultdict(list)
        # Each host's rules in AliasKind's order, whatever order they come in: a query is removed
        # before its index page (/api/index.html?List.html -> /api/index.html -> /api/).
        for rule in sorted(rules, key=lambda r: (r.host, list(AliasKind).index(r.kind), r.name)):
            self.by_host[rule.host].append(rule)
        # Python's re reads the RE2 patterns and their \1 \2 as they are (an unmatched group as "").
        self._compiled = {host: [(re.compile(pattern), replacement) for pattern, replacement in
                                 (rule.pattern() for rule in host_rules)] for host, host_rules in self.by_host.items()}

    @classmethod
    def from_table(cls, table: pa.Table | None) -> "AliasRules":
        """The rules of a url_aliases table (host, kind, name, active) that are active."""
        if table is None or table.num_rows == 0:
            return cls()
        rows = table.filter(pc.fill_null(table["active"], False)).select(["host", "kind", "name"]).to_pylist()
        return cls([AliasRule(r["host"], AliasKind(r["kind"]), r["name"] or "") for r in rows])

    def __bool__(self) -> bool:
        return bool(self.by_host)

    def fold(self, url: str, host: str) -> str:
        """The URL its host's rules fold `url` to (itself on a host without rules)."""
        for pattern, replacement in self._compiled.get(host, ()):
            url = pattern.sub(replacement, url)
            if url.endswith(("?", "&")):
                url = url[:-1]
        return url

    def fold_urls(self, urls: pa.Array | pa.ChunkedArray, hosts: pa.Array | pa.ChunkedArray) -> pa.Array:
        """fold() of each URL over Arrow arrays: for each rule, one regex pass over the URLs of
        its host (the others untouched)."""
        urls = urls.combine_chunks() if isinstance(urls, pa.ChunkedArray) else urls
        if not self.by_host or len(urls) == 0:
            return urls
        hosts = hosts.combine_chunks() if isinstance(hosts, pa.ChunkedArray) else hosts
        for host, rules in self.by_host.items():
            mine = pc.fill_null(pc.equal(hosts, host), False)
            if not pc.any(mine).as_py():
                continue
            for rule in rules:
                pattern, replacement = rule.pattern()
                folded = pc.replace_substring_regex(urls, pattern, replacement)
                folded = pc.replace_substring_regex(folded, _DANGLING, "")
                urls = pc.if_else(mine, folded, urls)
        return urls
