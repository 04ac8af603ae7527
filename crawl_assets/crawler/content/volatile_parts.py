"""The parts of a page that change on every fetch by design, and the digest without them.

change_stats' default change definition ("archive", settings.change_definition) counts a
change of the payload an archive would store, byte for byte, less what provably differs on
every fetch whatever the page says. "Provably" is decided by what a value is, not by
watching it move: a value the HTML or HTTP conventions make per-request (a new one each
answer, so two fetches a second apart differ) is volatile, and nothing else is:

- anti-forgery tokens: the value of a hidden <input> or a <meta> whose name says it is one
  (csrf, xsrf, authenticity_token, __RequestVerificationToken, ...);
- Content-Security-Policy nonces: nonce="..." attributes (one per response, by the CSP spec);
- session ids carried in links (;jsessionid=, ?sid=, ?PHPSESSID=, ...), which a server
  without cookies mints for each visitor.

A view counter, a "generated at" time or a rotating advertisement is not in the list: they
change with the page's own life, and a byte-level copy that lacks them is not the page as
served (the demo web's view counter moves only at the page's boilerplate changes). Such
bytes count as changes under "archive"; the SimHash of the main text tells them apart
(change_stats' boilerplate_changes), and "content" leaves them out. Only HTML is stripped.
"""

from __future__ import annotations

import hashlib
import re

try:  # in C (bytes_kernel.c); the expression below is the reference it equals
    from .bytes_kernel import contains_any

    contains_any(b"", (), True)  # a kernel built before fold_case (a checkout not reinstalled) refuses it
except (ImportError, TypeError):
    def contains_any(haystack: bytes, needles: tuple[bytes, ...], fold_case: bool = False) -> bool:
        if fold_case:
            haystack = haystack.lower()
        return any(needle in haystack for needle in needles)

_TOKEN_NAMES = (rb"(?:[\w.-]*(?:csrf|xsrf)[\w.-]*|authenticity_token|__RequestVerificationToken|_token"
                rb"|__EVENTVALIDATION)")
# Each pattern's group 1 is the volatile value, blanked before hashing; beside it, the words
# (lower case) of which a match holds at least one: a page without any is not searched (the
# regular expressions cost most of a millisecond on a 30 KB page, these look-ups a few microseconds).
VOLATILE_PATTERNS = (
    # <input type="hidden" name="csrf_token" value="..."> (attributes in any order) and
    # <meta name="csrf-token" content="...">
    (re.compile(rb"<(?:input|meta)\b(?=[^>]*\bname\s*=\s*[\"']?" + _TOKEN_NAMES + rb"[\"'\s>/])[^>]*?"
                rb"\b(?:value|content)\s*=\s*[\"']([^\"']*)[\"']", re.IGNORECASE),
     (b"csrf", b"xsrf", b"authenticity_token", b"__requestverificationtoken", b"_token", b"__eventvalidation")),
    (re.compile(rb"\bnonce\s*=\s*[\"']([^\"']*)[\"']", re.IGNORECASE), (b"nonce",)),
    (re.compile(rb"(?:;jsessionid=|[?&](?:sid|phpsessid|sessionid|session_id)=)([0-9A-Za-z_-]+)", re.IGNORECASE),
     (b"sid=", b"sessionid=", b"session_id=")),
)


def without_volatile_parts(content: bytes) -> bytes:
    """The content with every volatile value (VOLATILE_PATTERNS) blanked (the same object
    when the page holds none of their words)."""
    original = content
    for pattern, words in VOLATILE_PATTERNS:
        if contains_any(original, words, True):  # in content.lower(), without that copy
            content = pattern.sub(_blank_group, content)
    return content


def _blank_group(match: re.Match) -> bytes:
    start = match.start(0)
    return match.group(0)[:match.start(1) - start] + match.group(0)[match.end(1) - start:]


def change_digest(content: bytes, is_html: bool, sha256: str | None = None) -> str:
    """SHA-256 of what the archive definition of a change compares: an HTML page less its
    volatile values, any other content as it is. sha256: the content's own, when the caller
    has it (most pages hold nothing volatile: their change digest is that one)."""
    compared = without_volatile_parts(content) if is_html else content
    if compared is content and sha256 is not None:
        return sha256
    return hashlib.sha256(compared).hexdigest()
