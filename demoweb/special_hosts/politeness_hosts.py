"""Hosts for the crawler's politeness, redirect and Retry-After tests, opt-in.

Enable:  DemoWeb(..., politeness=True)            (or add_politeness_hosts(web))
         python -m demoweb serve --politeness   (serve line ends ' politeness=9')
         DemoWebProcess(..., politeness=True)     (demoweb.process)
Read:    web.politeness_hosts() -> [HostileHost, ...] in KINDS order (the same description
         type as the hostile hosts: hostname, kind, home, urls, expected, expected_by_url,
         home_expected, description, assumes, config); politeness_hostname(kind).

  kind                  host                          what it does
  cross_host_redirect   cross-redirect.demo.test      /go/N.html (N < 6) answers 301 (even N) or
                                                      302 (odd N) to
                                                      http://redirect-target.demo.test:PORT/page/N.html
  redirect_target       redirect-target.demo.test     a crawlable host with its own rules:
                                                      robots.txt 'Disallow: /blocked/' and
                                                      'Crawl-delay: 0.2'; /page/N.html (N < 8) are
                                                      200 pages, all linked from its home page
  robots_cross_host     robots-elsewhere.demo.test    /robots.txt answers 301 to
                                                      http://redirect-target.demo.test:PORT/robots.txt,
                                                      so redirect-target's rules apply here too:
                                                      /page.html is allowed, /blocked/x.html is not
  robots_same_host      robots-moved.demo.test        /robots.txt answers 301 to /site/robots-rules.txt
                                                      on the same host: 'Disallow: /private/' and
                                                      'Crawl-delay: 0.3'
  robots_redirect_chain robots-chain.demo.test        /robots.txt -> /robots/1.txt -> ... -> /robots/6.txt
                                                      (6 redirects, more than the 5 RFC 9309 asks a
                                                      crawler to follow); the file at the end says
                                                      'Disallow: /', so following all six shows too
  robots_bad_location   robots-bad-location.demo.test /robots.txt answers 301 with the unparsable
                                                      'Location: http://[bad-location'
  retry_after_long      retry-after-long.demo.test    /busy.html 429 and /down.html 503, every time,
                                                      with 'Retry-After: 7200' (above any sane cap)
  retry_after_date      retry-after-date.demo.test    Retry-After as an HTTP date: /soon.html 503 with
                                                      a date 2 s ahead on its first request per server
                                                      run, 200 after; /later.html 429 with a date
                                                      7200 s ahead, every time
  slow_host             slow.demo.test                every answer (robots.txt included) comes after
                                                      0.25 s; /page/N.html (N < 10) linked from home
  far_rules             far-rules.demo.test           robots.txt 'Crawl-delay: 2'; /page.html
  robots_far_delay      robots-far-delay.demo.test    /robots.txt answers 301 to
                                                      http://far-rules.demo.test:PORT/robots.txt, so
                                                      its Crawl-delay 2 applies here, from this host's
                                                      own robots.txt request on; /page.html
  busy_host             busy.demo.test                its access-log rows stamp each answer's end
                                                      0.025 s after it was handed to the socket, as a
                                                      busy server logging after its write returns;
                                                      /page/N.html (N < 4) linked from home

Every host but the robots kinds serves an allow-all robots.txt; each home page '/' links to
the host's URLs. `expected` is the status class (crawler vocabulary) a crawler following
RFC 9309 and honouring Retry-After up to a cap (max_retry_after_s, 120 s by default) ends
with, under `assumes`. The HTTP-date Retry-After values follow the server's wall clock, so
those headers (only) differ between runs; every other byte is deterministic.
"""

from __future__ import annotations

import dataclasses
import math
import time
from email.utils import formatdate
from typing import Mapping

from ..host_protocol import HostPlugin, bare_path, register_hosts
from ..page_shell import simple_page
from ..responses import PLAIN_TYPE, Response, body_response, error_response, robots_allow_all
from .spec_hosts import HostileHost, HostSpec, SpecHostHandler, described_hosts

# kind -> hostname label. The order is the order of politeness_hosts().
KINDS: dict[str, str] = {
    "cross_host_redirect": "cross-redirect",
    "redirect_target": "redirect-target",
    "robots_cross_host": "robots-elsewhere",
    "robots_same_host": "robots-moved",
    "robots_redirect_chain": "robots-chain",
    "robots_bad_location": "robots-bad-location",
    "retry_after_long": "retry-after-long",
    "retry_after_date": "retry-after-date",
    "slow_host": "slow",
    "far_rules": "far-rules",
    "robots_far_delay": "robots-far-delay",
    "busy_host": "busy",
}

REDIRECTS = 6  # /go/0.html .. /go/5.html on cross-redirect
TARGET_PAGES = 8  # /page/0.html .. /page/7.html on redirect-target
TARGET_CRAWL_DELAY_S = 0.2
MOVED_ROBOTS_PATH = "/site/robots-rules.txt"
MOVED_CRAWL_DELAY_S = 0.3
ROBOTS_CHAIN_HOPS = 6
BAD_LOCATION = "http://[bad-location"
LONG_RETRY_AFTER_S = 7200
SOON_RETRY_AFTER_S = 2
SLOW_RESPONSE_S = 0.25
SLOW_PAGES = 10
FAR_CRAWL_DELAY_S = 2
BUSY_LOGGED_LATE_S = 0.025
BUSY_PAGES = 4

_ROBOTS_KINDS = ("redirect_target", "robots_cross_host", "robots_same_host", "robots_redirect_chain",
                 "robots_bad_location", "far_rules", "robots_far_delay")
_OK, _THROTTLED = "ok", "throttled"  # 429, and 503 with Retry-After: "slow down", not "gone"
_DISALLOWED, _UNAVAILABLE, _REDIRECT = "robots_disallowed", "robots_unavailable", "redirect"

_SPECS: dict[str, HostSpec] = {
    "cross_host_redirect": HostSpec(
        "Cross-host redirects", "Pages that redirect (301/302) to redirect-target.",
        tuple(f"/go/{n}.html" for n in range(REDIRECTS)), _REDIRECT,
        assumes="each hop a fetch-log row; the target URL fetched in the target host's turn"),
    "redirect_target": HostSpec(
        "Redirect target", f"A host with Crawl-delay {TARGET_CRAWL_DELAY_S} and Disallow: /blocked/.",
        tuple(f"/page/{n}.html" for n in range(TARGET_PAGES)) + ("/blocked/secret.html",), _OK,
        expected_by_path={"/blocked/secret.html": _DISALLOWED}),
    "robots_cross_host": HostSpec(
        "robots.txt elsewhere", "robots.txt redirects to redirect-target's robots.txt.",
        ("/page.html", "/blocked/x.html"), _OK, expected_by_path={"/blocked/x.html": _DISALLOWED},
        assumes="the redirected robots.txt applies to this host (RFC 9309 §2.3.1.2)"),
    "robots_same_host": HostSpec(
        "robots.txt moved", f"robots.txt redirects to {MOVED_ROBOTS_PATH} on this host.",
        ("/page.html", "/private/x.html"), _OK, expected_by_path={"/private/x.html": _DISALLOWED}),
    "robots_redirect_chain": HostSpec(
        "robots.txt chain", f"robots.txt redirects {ROBOTS_CHAIN_HOPS} times.", ("/", "/page.html"),
        _UNAVAILABLE, home_expected=_UNAVAILABLE,
        assumes="more than 5 robots.txt redirects: robots.txt unreachable, nothing fetched"),
    "robots_bad_location": HostSpec(
        "robots.txt bad Location", "robots.txt redirects to an unparsable Location.",
        ("/", "/page.html"), _UNAVAILABLE, home_expected=_UNAVAILABLE,
        assumes="a robots.txt redirect that cannot be followed: robots.txt unreachable"),
    "retry_after_long": HostSpec(
        "Retry-After 7200", "429 and 503 with Retry-After: 7200 on every request.",
        ("/busy.html", "/down.html"), _THROTTLED,
        assumes="Retry-After above max_retry_after_s: recorded, not retried"),
    "retry_after_date": HostSpec(
        "Retry-After dates", "Retry-After as an HTTP date: 2 s ahead once, then 7200 s ahead.",
        ("/soon.html", "/later.html"), _OK, expected_by_path={"/later.html": _THROTTLED},
        assumes="HTTP-date Retry-After honoured up to max_retry_after_s"),
    "slow_host": HostSpec(
        "Slow host", f"Every answer takes {SLOW_RESPONSE_S} s.",
        tuple(f"/page/{n}.html" for n in range(SLOW_PAGES)), _OK,
        assumes="the delay grows with the host's response time (response_time_factor)"),
    "far_rules": HostSpec(
        "Far rules", f"A host with Crawl-delay {FAR_CRAWL_DELAY_S}.", ("/page.html",), _OK),
    "robots_far_delay": HostSpec(
        "Crawl-delay elsewhere", f"robots.txt redirects to far-rules' robots.txt (Crawl-delay {FAR_CRAWL_DELAY_S}).",
        ("/page.html",), _OK,
        assumes="the Crawl-delay learnt through the redirect spaces this host from its robots.txt request on"),
    "busy_host": HostSpec(
        "Busy host", f"Its log stamps each answer's end {BUSY_LOGGED_LATE_S} s late.",
        tuple(f"/page/{n}.html" for n in range(BUSY_PAGES)), _OK,
        assumes="the delay holds as the server's own log counts it"),
}


def politeness_hostname(kind: str, domain: str = "demo.test") -> str:
    return f"{KINDS[kind]}.{domain}"


def add_politeness_hosts(web) -> dict[str, str]:
    """Register every politeness host on `web` (in place); returns hostname -> kind."""
    return register_hosts(web, KINDS, PolitenessHandler)


def politeness_hosts(web) -> list[HostileHost]:
    """The politeness hosts registered on `web`, described, in KINDS order."""
    return described_hosts(web, PolitenessHandler)


PLUGIN = HostPlugin(option="politeness", summary_key="politeness",
                    help="add the politeness test hosts (cross-host and robots.txt redirects, "
                         "long and dated Retry-After, a slow host, a Crawl-delay learnt through a "
                         "redirect, a busy host)",
                    install=add_politeness_hosts,
                    homes=lambda web: [h.home for h in politeness_hosts(web)])


def _retry_after_date(seconds: float) -> str:
    """An HTTP date at least `seconds` from now (rounded up to the next whole second)."""
    return formatdate(math.ceil(time.time() + seconds), usegmt=True)


class PolitenessHandler(SpecHostHandler):
    """The HostHandler of one politeness host: DemoWeb calls it with (web, path, headers)."""

    KINDS = KINDS
    SPECS = _SPECS

    def _domain(self, web) -> str:
        """The domain this host was registered under (its label is one DNS label)."""
        return self.hostname.split(".", 1)[1] if "." in self.hostname else web.domain

    def sibling(self, web, kind: str) -> str:
        """Base URL of another politeness host of the same web."""
        return f"http://{politeness_hostname(kind, self._domain(web))}:{web.port}"

    # ---- description ----------------------------------------------------------------

    def config(self, web) -> dict:
        kind, target = self.kind, self.sibling(web, "redirect_target")
        if kind == "cross_host_redirect":
            return {"target_host": politeness_hostname("redirect_target", self._domain(web)),
                    "redirects": {f"{self.base(web)}/go/{n}.html": (301 if n % 2 == 0 else 302,
                                                                   f"{target}/page/{n}.html")
                                  for n in range(REDIRECTS)}}
        if kind == "redirect_target":
            return {"crawl_delay_s": TARGET_CRAWL_DELAY_S, "disallow": "/blocked/"}
        if kind == "robots_cross_host":
            return {"robots_location": f"{target}/robots.txt", "crawl_delay_s": TARGET_CRAWL_DELAY_S,
                    "disallow": "/blocked/", "robots_host": politeness_hostname("redirect_target",
                                                                                self._domain(web))}
        if kind == "robots_same_host":
            return {"robots_location": self.base(web) + MOVED_ROBOTS_PATH,
                    "crawl_delay_s": MOVED_CRAWL_DELAY_S, "disallow": "/private/"}
        if kind == "robots_redirect_chain":
            return {"hops": ROBOTS_CHAIN_HOPS, "final_rules": "Disallow: /"}
        if kind == "robots_bad_location":
            return {"location": BAD_LOCATION}
        if kind == "retry_after_long":
            return {"retry_after_s": LONG_RETRY_AFTER_S,
                    "statuses": {self.base(web) + "/busy.html": 429, self.base(web) + "/down.html": 503}}
        if kind == "retry_after_date":
            return {"soon_s": SOON_RETRY_AFTER_S, "later_s": LONG_RETRY_AFTER_S,
                    "statuses": {self.base(web) + "/soon.html": 503, self.base(web) + "/later.html": 429}}
        if kind == "slow_host":
            return {"response_s": SLOW_RESPONSE_S}
        if kind == "far_rules":
            return {"crawl_delay_s": FAR_CRAWL_DELAY_S}
        if kind == "robots_far_delay":
            rules = self.sibling(web, "far_rules")
            return {"robots_location": f"{rules}/robots.txt", "crawl_delay_s": FAR_CRAWL_DELAY_S,
                    "robots_host": politeness_hostname("far_rules", self._domain(web))}
        if kind == "busy_host":
            return {"logged_late_s": BUSY_LOGGED_LATE_S}
        return {}

    # ---- serving --------------------------------------------------------------------

    def __call__(self, web, path: str, headers: Mapping[str, str]) -> Response:
        bare = bare_path(path)
        if bare == "/robots.txt" or (self.kind in _ROBOTS_KINDS and bare.startswith(("/robots/", "/site/"))):
            response = self._robots(web, bare)
        elif bare == "/":
            response = self.home_page()
        else:
            response = getattr(self, "_serve_" + self.kind)(web, bare)
        if response is None:
            response = error_response(404, "Not Found")
        if self.kind == "slow_host":
            response.delay_s = SLOW_RESPONSE_S  # a fresh Response per request: safe to set
        if self.kind == "busy_host":
            response = dataclasses.replace(response, logged_late_s=BUSY_LOGGED_LATE_S)  # (may be shared)
        return response

    @staticmethod
    def _redirect(location: str, status: int = 301) -> Response:
        return body_response(simple_page("Moved", "<p>This resource has moved.</p>"),
                             extra=[("Location", location)], status=status)

    @staticmethod
    def _rules(*lines: str) -> Response:
        return body_response(("\n".join(["User-agent: *", *lines]) + "\n").encode("utf-8"), PLAIN_TYPE)

    def _robots(self, web, path: str) -> Response | None:
        kind = self.kind
        if kind == "redirect_target" and path == "/robots.txt":
            return self._rules("Disallow: /blocked/", f"Crawl-delay: {TARGET_CRAWL_DELAY_S}")
        if kind == "robots_cross_host" and path == "/robots.txt":
            return self._redirect(self.sibling(web, "redirect_target") + "/robots.txt")
        if kind == "robots_same_host":
            if path == "/robots.txt":
                return self._redirect(self.base(web) + MOVED_ROBOTS_PATH)
            if path == MOVED_ROBOTS_PATH:
                return self._rules("Disallow: /private/", f"Crawl-delay: {MOVED_CRAWL_DELAY_S}")
            return None
        if kind == "robots_redirect_chain":
            hop = 0 if path == "/robots.txt" else _chain_hop(path)
            if hop is None:
                return None
            if hop < ROBOTS_CHAIN_HOPS:
                return self._redirect(f"{self.base(web)}/robots/{hop + 1}.txt", 302)
            return self._rules("Disallow: /")
        if kind == "robots_bad_location" and path == "/robots.txt":
            return self._redirect(BAD_LOCATION)
        if kind == "far_rules" and path == "/robots.txt":
            return self._rules("Allow: /", f"Crawl-delay: {FAR_CRAWL_DELAY_S}")
        if kind == "robots_far_delay" and path == "/robots.txt":
            return self._redirect(self.sibling(web, "far_rules") + "/robots.txt")
        if path == "/robots.txt":
            return robots_allow_all(self.hostname)
        return None

    def _serve_cross_host_redirect(self, web, path):
        for n in range(REDIRECTS):
            if path == f"/go/{n}.html":
                target = f"{self.sibling(web, 'redirect_target')}/page/{n}.html"
                return self._redirect(target, 301 if n % 2 == 0 else 302)

    def _serve_redirect_target(self, web, path):
        if path in self.spec.paths:
            return self.plain_page("Blocked" if path.startswith("/blocked/") else "Target page")

    def _serve_robots_cross_host(self, web, path):
        if path in self.spec.paths:
            return self.plain_page("Under borrowed rules")

    def _serve_robots_same_host(self, web, path):
        if path in self.spec.paths:
            return self.plain_page("Under moved rules")

    def _serve_robots_redirect_chain(self, web, path):
        if path == "/page.html":
            return self.plain_page("Behind a long robots.txt chain")

    def _serve_robots_bad_location(self, web, path):
        if path == "/page.html":
            return self.plain_page("Behind a broken robots.txt redirect")

    def _serve_retry_after_long(self, web, path):
        if path == "/busy.html":
            return error_response(429, "Too Many Requests", [("Retry-After", str(LONG_RETRY_AFTER_S))])
        if path == "/down.html":
            return error_response(503, "Service Unavailable", [("Retry-After", str(LONG_RETRY_AFTER_S))])

    def _serve_retry_after_date(self, web, path):
        if path == "/soon.html":
            if self.hit(path) == 1:
                return error_response(503, "Service Unavailable",
                                      [("Retry-After", _retry_after_date(SOON_RETRY_AFTER_S))])
            return self.plain_page("Back again")
        if path == "/later.html":
            return error_response(429, "Too Many Requests",
                                  [("Retry-After", _retry_after_date(LONG_RETRY_AFTER_S))])

    def _serve_slow_host(self, web, path):
        if path in self.spec.paths:
            return self.plain_page("Slowly served")

    def _serve_far_rules(self, web, path):
        if path in self.spec.paths:
            return self.plain_page("Far rules")

    def _serve_robots_far_delay(self, web, path):
        if path in self.spec.paths:
            return self.plain_page("Under a far Crawl-delay")

    def _serve_busy_host(self, web, path):
        if path in self.spec.paths:
            return self.plain_page("Busily served")


def _chain_hop(path: str) -> int | None:
    """3 for '/robots/3.txt' (1..ROBOTS_CHAIN_HOPS), else None."""
    if path.startswith("/robots/") and path.endswith(".txt"):
        n = path[len("/robots/"):-len(".txt")]
        if n.isascii() and n.isdigit() and str(int(n)) == n and 1 <= int(n) <= ROBOTS_CHAIN_HOPS:
            return int(n)
    return None
