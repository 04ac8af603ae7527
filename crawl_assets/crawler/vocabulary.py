"""The crawl's vocabulary: every status class, refusal reason and WARC record kind, named once.

Python compares against these members; SQL receives them as query parameters (a StrEnum
member is a str, so DuckDB binds it as VARCHAR), so no reason is spelt twice. The values are
what the fetch log, the links table and the catalog store: renaming one is a data migration.
"""

from __future__ import annotations

from enum import StrEnum


class StatusClass(StrEnum):
    """The final outcome of one URL in a fetch batch (fetch_log.status_class)."""

    # An answer was received.
    OK = "ok"
    NOT_MODIFIED = "not_modified"
    REDIRECT = "redirect"
    HTTP_4XX = "http_4xx"
    HTTP_5XX = "http_5xx"
    # The host said "slow down" (429, or 503 with Retry-After) and still did after the retries
    # within max_retry_after_s, or asked for longer: a passing answer, the URL is asked again on a
    # later day (a 4xx or 5xx class would put a never-answered URL on the not-found back-off).
    THROTTLED = "throttled"
    HTTP_OTHER = "http_other"
    TOO_LARGE = "too_large"
    # Redirects that went nowhere.
    REDIRECT_LOOP = "redirect_loop"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    # No answer: the request failed (HopResult.error_class).
    DNS_ERROR = "dns_error"
    BLOCKED_ADDRESS = "blocked_address"
    CONNECT_ERROR = "connect_error"  # refused, reset or unreachable before a connection was made
    CONNECT_TIMEOUT = "connect_timeout"  # no TCP connection within connect_timeout_s
    # The TLS handshake failed (crawler/fetching/tls.py says which is which).
    TLS_CERTIFICATE_EXPIRED = "tls_certificate_expired"  # outside its validity period
    TLS_NAME_MISMATCH = "tls_name_mismatch"  # issued for other names than the host's
    TLS_UNTRUSTED = "tls_untrusted"  # no chain to a CA of the trust store (self-signed, private CA, ...)
    TLS_HANDSHAKE_TIMEOUT = "tls_handshake_timeout"  # connected, but no handshake within connect_timeout_s
    TLS_PROTOCOL_ERROR = "tls_protocol_error"  # not TLS (plain HTTP on a TLS port), no common version, ...
    # The server took the request and did not answer it whole within fetch_timeout_s.
    TIMEOUT = "timeout"
    NETWORK_ERROR = "network_error"
    # The crawler itself failed on this URL (a bug, logged in the error column).
    ERROR = "error"
    # Not fetched in this batch: robots.txt or the host's own pace said no.
    ROBOTS_DISALLOWED = "robots_disallowed"
    ROBOTS_UNAVAILABLE = "robots_unavailable"
    DEFERRED_CRAWL_DELAY = "deferred_crawl_delay"
    # Not asked: the host asked to be left alone longer than max_retry_after_s.
    DEFERRED_RETRY_AFTER = "deferred_retry_after"


# The TLS failures, counted together in the day report (pipeline/report/report_step.py).
TLS_FAILURES = frozenset({StatusClass.TLS_CERTIFICATE_EXPIRED, StatusClass.TLS_NAME_MISMATCH,
                          StatusClass.TLS_UNTRUSTED, StatusClass.TLS_HANDSHAKE_TIMEOUT,
                          StatusClass.TLS_PROTOCOL_ERROR})


class DropReason(StrEnum):
    """Why a known or discovered URL was not queued (links.dropped_reason, dropped_urls,
    the frontier's left-out counts)."""

    # Limits of one batch or cycle: a later cycle may lift them.
    DEPTH = "depth"
    HOST_BUDGET = "host_budget"
    PATTERN_BUDGET = "pattern_budget"
    NOT_PLANNED = "not_planned"  # a known URL the day's recrawl plan left out: not due, or over budget
    DAY_BUDGET = "day_budget"  # over the first day's fetch budget (settings.first_day_budget)
    # Outside what this crawl is for.
    OUT_OF_SCOPE = "out_of_scope"
    # Trap defences (crawler/url_policy/trap_defences.py).
    URL_TOO_LONG = "url_too_long"
    TOO_MANY_QUERY_PARAMS = "too_many_query_params"
    REPEATED_PATH_SEGMENTS = "repeated_path_segments"
    BLOCKLIST_HOST = "blocklist_host"
    BLOCKLIST_URL = "blocklist_url"
    DEMOTED_HOST = "demoted_host"
    HOST_GROWTH_CAPPED = "host_growth_capped"
    # The page's own signals (crawler/content/page_signals.py): links reported, not followed.
    PAGE_NOFOLLOW = "page_nofollow"  # the page's robots <meta> or X-Robots-Tag said nofollow
    NOFOLLOW_LINK = "nofollow_link"  # the link's rel said nofollow (or ugc, sponsored)


# Refusals that a later cycle may lift: the URL stays known and comes back.
BATCH_LIMITS = frozenset({DropReason.DEPTH, DropReason.HOST_BUDGET, DropReason.DAY_BUDGET})
# Refusals of the trap defences (crawler/url_policy/trap_defences.py): the demo's and the
# day report's "trap URLs refused".
TRAP_DEFENCES = frozenset({DropReason.URL_TOO_LONG, DropReason.TOO_MANY_QUERY_PARAMS,
                           DropReason.REPEATED_PATH_SEGMENTS, DropReason.BLOCKLIST_HOST, DropReason.BLOCKLIST_URL,
                           DropReason.DEMOTED_HOST, DropReason.HOST_GROWTH_CAPPED, DropReason.PATTERN_BUDGET})


class WarcRecordKind(StrEnum):
    """WARC-Type values the crawl writes (fetch_log.warc_type holds response or revisit)."""

    WARCINFO = "warcinfo"
    REQUEST = "request"
    RESPONSE = "response"
    REVISIT = "revisit"
    CONVERSION = "conversion"  # a rendered page's DOM (crawler/rendering/), made from its response or revisit
