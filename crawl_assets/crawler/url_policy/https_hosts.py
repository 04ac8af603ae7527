"""Hosts that serve their pages over https, learnt from their answers, so that a page has one
URL across schemes (urls.upgrade_scheme applies the rule).

A host is learnt when it answers an http URL with a redirect to that URL's https twin (same
host, path and query: urls.https_twin), or sends Strict-Transport-Security with a max-age over
https (RFC 6797; over http the header means nothing); an STS header with max-age=0 unlearns it,
as it does for a browser. includeSubDomains is not followed: each host shows its own. The fetch
log keeps the evidence of each answer (redirect_to, and the hsts column this module fills), so
the memory lasts across days (pipeline/crawl_history.https_hosts reads it back).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .urls import host_of, https_twin, upgrade_scheme

_MAX_AGE = re.compile(r'(?:^|;)\s*max-age\s*=\s*"?(\d+)"?\s*(?:;|$)', re.IGNORECASE)


def hsts_says(url: str, header: str | None) -> bool | None:
    """What an answer's Strict-Transport-Security says of its host: True (use https), False
    (max-age=0: forget it), None (no header, a header over http, or one without a max-age)."""
    if header is None or not url.startswith("https://"):
        return None
    match = _MAX_AGE.search(header)
    if match is None:
        return None
    return int(match.group(1)) > 0


class HttpsHosts:
    def __init__(self, hosts: Iterable[str] = ()):
        self.hosts: set[str] = set(hosts)

    def upgrade(self, url: str) -> str:
        return upgrade_scheme(url, self.hosts)

    def observe_redirect(self, url: str, target: str) -> None:
        """An http URL that redirects to its https twin teaches its host."""
        if target == https_twin(url):
            self.hosts.add(host_of(url))

    def observe_hsts(self, url: str, header: str | None) -> bool | None:
        """Learn (or unlearn) the host from an answer's STS header; returns what it said."""
        says = hsts_says(url, header)
        if says is True:
            self.hosts.add(host_of(url))
        elif says is False:
            self.hosts.discard(host_of(url))
        return says
