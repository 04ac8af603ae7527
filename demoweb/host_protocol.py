"""How hosts plug into the demo web.

A *host handler* answers every request for one hostname: it is called as
`handler(web, path, headers)` with the DemoWeb serving it (seed, port, domain, day), the
request target (path with query) and the request headers (lowercase names), and returns a
Response. Optional methods the web uses when present:
  fresh()          a copy with per-run state reset (request counters); the server calls it
                   through DemoWeb.with_fresh_state() when it starts
  describe(web)    a machine-readable description of the host (HostileHost, TrapHost, ...)

A *host family* answers for hostnames it recognises by their shape rather than a list: the
ordinary generated site (h0000.<domain>, h0001.<domain>, ...) is one. `handler_for(hostname)`
returns its handler for that host, or None.

A *host plug-in* is an opt-in set of handlers (hostile hosts, crawler traps, near-duplicate
hosts, ...): `install(web)` registers its hosts on a web through `web.register_host`, and
`homes(web)` lists their home pages (seeds for a crawl). DemoWeb takes one keyword per
plug-in (`DemoWeb(hostile=True)`), the command line one flag (`--hostile`); special_hosts/plugins.py lists
them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

from .responses import Response

# (web, path with query, lowercase request headers) -> Response
HostHandler = Callable[[Any, str, Mapping[str, str]], Response]


class HostFamily(Protocol):
    def handler_for(self, hostname: str) -> HostHandler | None:
        """The handler of `hostname` (normalised) if it belongs to this family, else None."""


@dataclass(frozen=True)
class HostPlugin:
    """An opt-in group of special hosts."""

    option: str  # the DemoWeb keyword; the CLI flag is --option-with-dashes
    summary_key: str  # what the serve line counts them as: ' hostile=16'
    help: str
    install: Callable[[Any], dict[str, str]]  # registers the hosts on a web; hostname -> kind
    homes: Callable[[Any], list[str]]  # their home page URLs (with the web's port)

    @property
    def flag(self) -> str:
        return "--" + self.option.replace("_", "-")


def normalize_host(host: str) -> str:
    """Lowercase, drop ':port' (IPv6 literals keep their brackets) and a trailing dot."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end != -1 else host
    host = host.split(":", 1)[0]
    return host.rstrip(".")


def bare_path(target: str) -> str:
    """The path of a request target, without query and fragment."""
    return target.split("#", 1)[0].split("?", 1)[0]


def register_hosts(web, labels: Mapping[str, str], make_handler: Callable[[str, str], HostHandler]
                   ) -> dict[str, str]:
    """Register one host `<label>.<domain>` per kind on `web` (in place), served by
    make_handler(kind, hostname); returns hostname -> kind."""
    added = {}
    for kind, label in labels.items():
        hostname = f"{label}.{web.domain}"
        web.register_host(hostname, make_handler(kind, hostname))
        added[hostname] = kind
    return added
