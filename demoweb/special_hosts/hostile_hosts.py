"""Hostile hosts for the demo web: one misbehaving endpoint per host, opt-in.

    web = DemoWeb(hosts=20, hostile=True)      # or: add_hostile_hosts(DemoWeb(...))
    for h in web.hostile_hosts():              # HostileHost, one per kind, in KINDS order
        h.hostname, h.kind, h.home, h.urls, h.expected, h.expected_by_url, h.config

Every hostile host is `<label>.<domain>` (e.g. slow-drip.demo.test) and serves /robots.txt
(allow-all unless the kind is about robots.txt), a small home page `/` linking to its hostile
URL(s), and those URLs. `HostileHost.expected` is the status class a correct crawler ends
with for them (the crawler's names: ok, timeout, too_large, redirect_loop, ...), under the
assumptions in `HostileHost.assumes` (a whole-fetch time limit of a few seconds, a 5 MiB
body cap, at most 5 redirects, up to 3 attempts with Retry-After honoured).

Most kinds are plain Responses. The streaming ones use Response.stream / bytes_per_s / hang,
which server.py interprets (chunked or Content-Length framing, pacing, never answering).
The 429 and flapping-503 kinds count requests per path in their handler (thread-safe);
the server starts every run with a fresh count (DemoWeb.with_fresh_state()).
"""

from __future__ import annotations

import functools
import zlib
from random import Random
from typing import Iterator, Mapping

from ..host_protocol import HostPlugin, bare_path, register_hosts
from ..page_shell import simple_page
from ..randomness import stable_int
from ..responses import HTML_TYPE, PLAIN_TYPE, Response, body_response, error_response, robots_allow_all
from .spec_hosts import HostileHost, HostSpec, SpecHostHandler, described_hosts

# kind -> hostname label. The order is the order of hostile_hosts().
KINDS: dict[str, str] = {
    "slow_drip": "slow-drip",
    "never_answer": "never-answer",
    "endless_body": "endless-body",
    "huge_body": "huge-body",
    "gzip_bomb": "gzip-bomb",
    "redirect_loop": "redirect-loop",
    "redirect_chain": "redirect-chain",
    "rate_limited": "rate-limited",
    "flapping_503": "flapping-503",
    "not_found": "broken-links",
    "binary_html": "binary-html",
    "malformed_html": "malformed-html",
    "wrong_charset": "wrong-charset",
    "robots_500": "robots-500",
    "robots_huge": "robots-huge",
    "crawl_delay_60": "crawl-delay-60",
}

DRIP_LENGTH = 100_000
DRIP_BYTES_PER_S = 1.0
HUGE_LENGTH = 50 * 1024 * 1024  # 52428800
BOMB_LENGTH = 50 * 1024 * 1024  # decompressed
CHAIN_HOPS = 20
RATE_LIMIT_RETRY_AFTER_S = 2
FLAP_FAILURES = 2
FLAP_RETRY_AFTER_S = 1
ROBOTS_HUGE_LENGTH = 2 * 1024 * 1024
CRAWL_DELAY_S = 60
_CHUNK = 64 * 1024


def hostile_hostname(kind: str, domain: str = "demo.test") -> str:
    return f"{KINDS[kind]}.{domain}"


def add_hostile_hosts(web) -> dict[str, str]:
    """Register every hostile host on `web` (in place); returns hostname -> kind."""
    return register_hosts(web, KINDS, HostileHandler)


def hostile_hosts(web) -> list["HostileHost"]:
    """The hostile hosts registered on `web`, described, in KINDS order."""
    return described_hosts(web, HostileHandler)


PLUGIN = HostPlugin(option="hostile", summary_key="hostile",
                    help="add the hostile hosts (slow drip, gzip bomb, redirect loop, ...)",
                    install=add_hostile_hosts, homes=lambda web: [h.home for h in hostile_hosts(web)])


# ---- canned bodies ----------------------------------------------------------------------


_FILLER_HEAD = (b'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
                b"<title>Filler</title>\n</head>\n<body>\n")
_FILLER_PARAGRAPH = (b"<p>All work and no play makes a crawler a dull crawler; it keeps reading "
                     b"this paragraph because nobody told it when to stop.</p>\n")


@functools.lru_cache(maxsize=1)
def _filler_block() -> bytes:
    """64 KiB of repeated paragraphs, shared by every streamed body."""
    return (_FILLER_PARAGRAPH * (_CHUNK // len(_FILLER_PARAGRAPH) + 1))[:_CHUNK]


def _sized_filler(total: int) -> Iterator[bytes]:
    """Exactly `total` bytes of filler HTML in 64 KiB chunks, never all in memory."""
    yield _FILLER_HEAD
    left = total - len(_FILLER_HEAD)
    block = _filler_block()
    while left > 0:
        piece = block if left >= len(block) else block[:left]
        left -= len(piece)
        yield piece


def _endless_filler() -> Iterator[bytes]:
    yield _FILLER_HEAD
    block = _filler_block()
    while True:
        yield block


@functools.lru_cache(maxsize=1)
def gzip_bomb() -> bytes:
    """~50 KB of gzip that inflates to BOMB_LENGTH bytes of HTML (mostly one long run of
    spaces inside a paragraph: the best ratio deflate can do). Built once: deflating
    BOMB_LENGTH bytes takes a noticeable moment."""
    head = (b'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            b"<title>Gzip bomb</title>\n</head>\n<body>\n<p>")
    tail = b"</p>\n</body>\n</html>\n"
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [compressor.compress(head)]
    left = BOMB_LENGTH - len(head) - len(tail)
    block = b" " * (1 << 20)
    while left > 0:
        piece = block if left >= len(block) else block[:left]
        left -= len(piece)
        out.append(compressor.compress(piece))
    out.append(compressor.compress(tail))
    out.append(compressor.flush())
    return b"".join(out)


@functools.lru_cache(maxsize=1)
def _binary_bodies() -> tuple[bytes, bytes]:
    """(PNG-like bytes, ZIP-like bytes), both full of NULs and high bytes."""
    rng = Random(stable_int("hostile", "binary"))
    noise = bytes(rng.choice((0, 0, 0, rng.randrange(256))) for _ in range(4096))
    png = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00\x00\x00\x01\x00\x08\x06\x00\x00\x00"
           b"\x5c\x72\xa8\x66\x00\x00\x10\x00IDAT" + noise + b"\x00\x00\x00\x00IEND\xaeB`\x82")
    rng = Random(stable_int("hostile", "zip"))
    noise = bytes(rng.choice((0, 0, rng.randrange(256))) for _ in range(4096))
    zipped = (b"PK\x03\x04\x14\x00\x00\x00\x08\x00\x00\x00!\x00\xb1\x6c\x1e\x3a\x00\x10\x00\x00"
              b"\x00\x40\x00\x00\x08\x00\x00\x00page.htm" + noise + b"PK\x05\x06" + b"\x00" * 18)
    return png, zipped


@functools.lru_cache(maxsize=1)
def huge_robots_txt() -> bytes:
    """ROBOTS_HUGE_LENGTH bytes: the real rule first, then comments and harmless rules."""
    head = ("# robots.txt of robots-huge: 2 MiB of comments and rules.\n"
            "User-agent: *\nDisallow: /blocked/\n\n").encode("ascii")
    lines = []
    size = len(head)
    n = 0
    while size < ROBOTS_HUGE_LENGTH:
        if n % 4 == 3:
            line = f"Disallow: /archive/{n:07d}/\n"
        else:
            line = f"# filler comment {n:07d}: robots.txt files this large are cut off by most parsers\n"
        lines.append(line)
        size += len(line)
        n += 1
    return (head + "".join(lines).encode("ascii"))[:ROBOTS_HUGE_LENGTH]


_LATIN1_TEXT = ("Café crème, naïve façade, señor Müller’s “smart quotes” — déjà vu "
                "for 5 € at the Rhône.")


def _malformed_html(base: str) -> bytes:
    """Tag soup with a few well-formed links in it (see _MALFORMED_LINKS)."""
    return f"""<html>
<head>
<title>Tag soup <b>bold in the title</title>
<meta charset="utf-8">
<body bgcolor=#fff text=black link="blue" link="red">
<div class="a" class="b" id=><p>Unclosed paragraph <b>bold <i>bold italic</b> wrong order</i>
<p <p>double open <span title="unterminated quote>swallowed until the next quote" >text</span>
<a href="/soup/one.html">First valid link</a>
<table><tr><td>outer cell<table><tr><td>inner cell <a href="soup/two.html">Nested table link</a>
<td>no closing tags<tr><td><table><td>third level</table>
</table>
<p>stray < less-than, 3 < 4, a <> pair, << 2, x<-y and a lone &amp unterminated entity &#
<a href="{base}/soup/three.html" >Absolute link</a></a></a>
<a href=/soup/four.html>Unquoted href</a>
<a>anchor without href</a> <a name="x">named anchor
</td></tr></table></div></div></span></p>
<ul><li>item<li>item <a href = '/soup/five.html' >Spaced single-quoted href</a><li>last
<img src="/missing.png" alt="unterminated alt>
the attribute runs on to here">
<!-- comment -- with -- dashes --->
<a href="/soup/six.html">After the comment</a>
</body>
</html>
<p>content after </html>
""".encode("utf-8")


_MALFORMED_LINKS = ("/soup/one.html", "/soup/two.html", "/soup/three.html", "/soup/four.html",
                    "/soup/five.html", "/soup/six.html")


_SPECS: dict[str, HostSpec] = {
    "slow_drip": HostSpec("Slow drip", "200 with Content-Length 100000, sent 1 byte per second.",
                       ("/drip.html",), "timeout", assumes="a whole-fetch time limit of a few seconds"),
    "never_answer": HostSpec("Never answers", "Reads the request and never writes a byte; the "
                          "connection stays open until the client closes it.", ("/hang.html",),
                          "timeout", assumes="a whole-fetch time limit"),
    "endless_body": HostSpec("Endless body", "200 text/html, chunked, streams filler HTML for as long "
                          "as the client reads.", ("/endless.html",), "too_large",
                          assumes="a body cap (5 MiB)"),
    "huge_body": HostSpec("50 MB body", "200 text/html with Content-Length 52428800, streamed.",
                       ("/huge.html",), "too_large", assumes="a 5 MiB body cap"),
    "gzip_bomb": HostSpec("Gzip bomb", "200 text/html, Content-Encoding gzip: ~50 KB on the wire, "
                       "50 MiB once decompressed.", ("/bomb.html",), "too_large",
                       assumes="a 5 MiB cap on the decompressed body"),
    "redirect_loop": HostSpec("Redirect loop", "/loop/a -> /loop/b -> /loop/a (302).", ("/loop/a",),
                           "redirect_loop"),
    "redirect_chain": HostSpec("Redirect chain", "/chain/0 -> /chain/1 -> ... -> /chain/20 (302s), "
                            "a 200 page at the end.", ("/chain/0",), "too_many_redirects",
                            assumes="at most 5 redirects followed"),
    "rate_limited": HostSpec("Rate limited", "429 with Retry-After: 2 on the first request of the "
                          "page (per server run), 200 afterwards.", ("/busy.html",), "ok",
                          assumes="429 retried after Retry-After"),
    "flapping_503": HostSpec("Flapping 503", "503 with Retry-After: 1 on the 1st and 2nd request "
                          "of the page, 200 from the 3rd.", ("/flaky.html",), "ok",
                          assumes="up to 3 attempts for 5xx, Retry-After honoured"),
    "not_found": HostSpec("Broken links", "The home page links to pages that 404.",
                       ("/missing.html", "/gone/old-page.html", "/p/9999.html", "/deleted.html?id=3"),
                       "http_4xx"),
    "binary_html": HostSpec("Binary .html", "/file.html is application/octet-stream PNG bytes; "
                         "/mislabelled.html claims text/html but is ZIP bytes with NULs.",
                         ("/file.html", "/mislabelled.html"), "ok",
                         assumes="archived, not parsed as HTML"),
    "malformed_html": HostSpec("Malformed HTML", "Tag soup: unclosed tags, broken attributes, stray "
                            "'<', nested tables; config['links'] are the valid links in it.",
                            ("/tag-soup.html",), "ok"),
    "wrong_charset": HostSpec("Lying charset", "windows-1252 bytes (0xE9 ...) served as "
                           "'text/html; charset=utf-8' with <meta charset=\"utf-8\">.",
                           ("/latin1.html",), "ok", assumes="undecodable bytes replaced, not fatal"),
    "robots_500": HostSpec("robots.txt 500", "robots.txt answers 500; nothing may be fetched.",
                        ("/", "/page.html"), "robots_unavailable", home_expected="robots_unavailable"),
    "robots_huge": HostSpec("2 MiB robots.txt", "robots.txt is 2 MiB; 'Disallow: /blocked/' is in "
                         "its first lines.", ("/blocked/x.html", "/open.html"), "robots_disallowed",
                         expected_by_path={"/open.html": "ok"},
                         assumes="robots.txt read at least up to its first 100 KB"),
    "crawl_delay_60": HostSpec("Crawl-delay 60", "robots.txt asks for Crawl-delay: 60.",
                            ("/", "/page.html"), "deferred_crawl_delay",
                            home_expected="deferred_crawl_delay",
                            assumes="a max honoured Crawl-delay below 60 s (30 s by default)"),
}


class HostileHandler(SpecHostHandler):
    """The HostHandler of one hostile host: DemoWeb calls it with (web, path, headers)."""

    KINDS = KINDS
    SPECS = _SPECS

    # ---- description ----------------------------------------------------------------

    def config(self, web) -> dict:
        kind, base = self.kind, self.base(web)
        if kind == "slow_drip":
            return {"content_length": DRIP_LENGTH, "bytes_per_s": DRIP_BYTES_PER_S}
        if kind == "endless_body":
            return {"chunked": True}
        if kind == "huge_body":
            return {"content_length": HUGE_LENGTH}
        if kind == "gzip_bomb":
            return {"compressed_bytes": len(gzip_bomb()), "decompressed_bytes": BOMB_LENGTH}
        if kind == "redirect_loop":
            return {"status": 302, "cycle": (base + "/loop/a", base + "/loop/b")}
        if kind == "redirect_chain":
            return {"status": 302, "hops": CHAIN_HOPS, "final_url": f"{base}/chain/{CHAIN_HOPS}"}
        if kind == "rate_limited":
            return {"status": 429, "retry_after_s": RATE_LIMIT_RETRY_AFTER_S, "failures": 1}
        if kind == "flapping_503":
            return {"status": 503, "retry_after_s": FLAP_RETRY_AFTER_S, "failures": FLAP_FAILURES}
        if kind == "binary_html":
            return {"content_types": {base + "/file.html": "application/octet-stream",
                                      base + "/mislabelled.html": HTML_TYPE}}
        if kind == "malformed_html":
            return {"links": tuple(base + p for p in _MALFORMED_LINKS)}
        if kind == "wrong_charset":
            return {"declared_charset": "utf-8", "actual_encoding": "cp1252", "text": _LATIN1_TEXT}
        if kind == "robots_500":
            return {"robots_status": 500}
        if kind == "robots_huge":
            body = huge_robots_txt()
            return {"robots_bytes": len(body), "disallow": "/blocked/",
                    "disallow_offset": body.index(b"Disallow: /blocked/")}
        if kind == "crawl_delay_60":
            return {"crawl_delay_s": CRAWL_DELAY_S}
        return {}

    # ---- serving --------------------------------------------------------------------

    def __call__(self, web, path: str, headers: Mapping[str, str]) -> Response:
        bare = bare_path(path)
        if bare == "/robots.txt":
            return self._robots()
        if bare == "/":
            return self.home_page()
        response = getattr(self, "_serve_" + self.kind)(web, bare)
        return response if response is not None else error_response(404, "Not Found")

    def _robots(self) -> Response:
        if self.kind == "robots_500":
            return error_response(500, "Internal Server Error")
        if self.kind == "robots_huge":
            return body_response(huge_robots_txt(), PLAIN_TYPE)
        if self.kind == "crawl_delay_60":
            return robots_allow_all(self.hostname, f"Crawl-delay: {CRAWL_DELAY_S}")
        return robots_allow_all(self.hostname)

    def _serve_slow_drip(self, web, path):
        if path == "/drip.html":
            body = b"".join(_sized_filler(DRIP_LENGTH))
            return Response(200, [("Content-Type", HTML_TYPE), ("Content-Length", str(DRIP_LENGTH))],
                            body, bytes_per_s=DRIP_BYTES_PER_S)

    def _serve_never_answer(self, web, path):
        if path == "/hang.html":
            return Response(200, [], b"", hang=True)

    def _serve_endless_body(self, web, path):
        if path == "/endless.html":
            return Response(200, [("Content-Type", HTML_TYPE)], stream=_endless_filler())

    def _serve_huge_body(self, web, path):
        if path == "/huge.html":
            return Response(200, [("Content-Type", HTML_TYPE), ("Content-Length", str(HUGE_LENGTH))],
                            stream=_sized_filler(HUGE_LENGTH))

    def _serve_gzip_bomb(self, web, path):
        if path == "/bomb.html":
            return body_response(gzip_bomb(), extra=[("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")])

    def _redirect(self, web, target: str) -> Response:
        location = self.base(web) + target
        return body_response(simple_page("Found", f'<p>Moved to <a href="{location}">{location}</a>.</p>'),
                     extra=[("Location", location)], status=302)

    def _serve_redirect_loop(self, web, path):
        if path == "/loop/a":
            return self._redirect(web, "/loop/b")
        if path == "/loop/b":
            return self._redirect(web, "/loop/a")

    def _serve_redirect_chain(self, web, path):
        prefix = "/chain/"
        if path.startswith(prefix) and path[len(prefix):].isdigit():
            hop = int(path[len(prefix):])
            if str(hop) != path[len(prefix):] or hop > CHAIN_HOPS:
                return None
            if hop < CHAIN_HOPS:
                return self._redirect(web, f"{prefix}{hop + 1}")
            return self.plain_page("End of the chain")

    def _serve_rate_limited(self, web, path):
        if path == "/busy.html":
            if self.hit(path) == 1:
                return error_response(429, "Too Many Requests",
                                      [("Retry-After", str(RATE_LIMIT_RETRY_AFTER_S))])
            return self.plain_page("Not busy any more")

    def _serve_flapping_503(self, web, path):
        if path == "/flaky.html":
            if self.hit(path) <= FLAP_FAILURES:
                return error_response(503, "Service Unavailable",
                                      [("Retry-After", str(FLAP_RETRY_AFTER_S))])
            return self.plain_page("Up again")

    def _serve_not_found(self, web, path):
        return None  # everything but / and /robots.txt is a 404

    def _serve_binary_html(self, web, path):
        png, zipped = _binary_bodies()
        if path == "/file.html":
            return body_response(png, "application/octet-stream")
        if path == "/mislabelled.html":
            return body_response(zipped, HTML_TYPE)

    def _serve_malformed_html(self, web, path):
        if path == "/tag-soup.html":
            return body_response(_malformed_html(self.base(web)))
        if path in _MALFORMED_LINKS:
            return self.plain_page("Found in the soup")

    def _serve_wrong_charset(self, web, path):
        if path == "/latin1.html":
            body = ('<!doctype html>\n<html lang="fr">\n<head>\n<meta charset="utf-8">\n'
                    "<title>Café crème</title>\n</head>\n<body>\n<h1>Café crème</h1>\n"
                    f"<p>{_LATIN1_TEXT}</p>\n"
                    '<p><a href="/">Home</a></p>\n</body>\n</html>\n').encode("cp1252")
            return body_response(body, "text/html; charset=utf-8")

    def _serve_robots_500(self, web, path):
        if path == "/page.html":
            return self.plain_page("Behind a broken robots.txt")

    def _serve_robots_huge(self, web, path):
        if path in ("/blocked/x.html", "/open.html"):
            return self.plain_page("Blocked" if path.startswith("/blocked/") else "Open")

    def _serve_crawl_delay_60(self, web, path):
        if path == "/page.html":
            return self.plain_page("Slow down")
