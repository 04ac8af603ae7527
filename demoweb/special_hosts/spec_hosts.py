"""Special hosts described by a HostSpec per kind: what the hostile and the politeness hosts share.

A subclass of SpecHostHandler sets KINDS (kind -> hostname label, in listing order) and SPECS
(kind -> HostSpec), answers requests in __call__ and may add kind-specific facts in config(web).
This module gives it the rest: identity, per-path request counts, the description a test reads
(HostileHost) and the home page linking to the host's paths.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import ClassVar, Mapping

from ..host_protocol import normalize_host
from ..page_shell import simple_page
from ..responses import Response, body_response


@dataclass(frozen=True)
class HostileHost:
    """What a special host does and what a correct crawler should end with.

    urls: the host's special URLs (absolute, with port), all linked from `home`.
    expected: the status class for those URLs; `expected_by_url` has it per URL
      (they differ where a kind mixes answers, e.g. robots_huge: /blocked/x.html is
      disallowed, /open.html is ok).
    home_expected: the status class for `home` (not ok when robots.txt itself is the trap).
    config: kind-specific facts for assertions (seconds, sizes, links, ...).
    """

    hostname: str
    kind: str
    home: str
    urls: tuple[str, ...]
    expected: str
    expected_by_url: Mapping[str, str]
    home_expected: str
    description: str
    assumes: str = ""
    config: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class HostSpec:
    """What a special host serves, for its home page and its HostileHost description."""

    title: str
    description: str
    paths: tuple[str, ...]  # special paths, linked from home ('/' may be one)
    expected: str
    home_expected: str = "ok"
    assumes: str = ""
    expected_by_path: Mapping[str, str] = field(default_factory=dict)


class SpecHostHandler:
    """The HostHandler of one special host of kind `kind` (DemoWeb calls it with (web, path, headers))."""

    KINDS: ClassVar[Mapping[str, str]] = {}
    SPECS: ClassVar[Mapping[str, HostSpec]] = {}

    def __init__(self, kind: str, hostname: str):
        if kind not in self.KINDS:
            raise ValueError(f"unknown {type(self).__name__} kind {kind!r}; known: {list(self.KINDS)}")
        self.kind = kind
        self.hostname = normalize_host(hostname)
        self.spec = self.SPECS[kind]
        self._lock = threading.Lock()  # the server answers from several threads
        self._hits: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind!r}, {self.hostname!r})"

    def fresh(self) -> "SpecHostHandler":
        """The same host with its request counts reset."""
        return type(self)(self.kind, self.hostname)

    def hit(self, path: str) -> int:
        """1 for the first request of `path` since this handler was made, 2 for the next..."""
        with self._lock:
            self._hits[path] = count = self._hits.get(path, 0) + 1
            return count

    def base(self, web) -> str:
        return f"http://{self.hostname}:{web.port}"

    def config(self, web) -> dict:
        """Kind-specific facts for assertions; none unless the subclass says."""
        return {}

    def describe(self, web) -> HostileHost:
        spec, base = self.spec, self.base(web)
        urls = tuple(base + p for p in spec.paths)
        by_url = {base + p: spec.expected_by_path.get(p, spec.expected) for p in spec.paths}
        return HostileHost(self.hostname, self.kind, base + "/", urls, spec.expected, by_url,
                           spec.home_expected, spec.description, spec.assumes, self.config(web))

    def home_page(self) -> Response:
        """'/': the title, the description and a link to each special path."""
        items = "\n".join(f'<li><a href="{p}">{p}</a></li>' for p in self.spec.paths if p != "/")
        return body_response(simple_page(self.spec.title, f"<p>{self.spec.description}</p>\n<ul>\n{items}\n</ul>"))

    @staticmethod
    def plain_page(title: str) -> Response:
        return body_response(simple_page(title, '<p>An ordinary page. <a href="/">Home</a></p>'))


def described_hosts(web, handler_type: type[SpecHostHandler]) -> list[HostileHost]:
    """The hosts of `handler_type` registered on `web`, described, in its KINDS order."""
    handlers = [h for h in web.special_handlers().values() if isinstance(h, handler_type)]
    order = list(handler_type.KINDS)
    handlers.sort(key=lambda h: (order.index(h.kind), h.hostname))
    return [h.describe(web) for h in handlers]
