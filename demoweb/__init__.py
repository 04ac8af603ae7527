"""demoweb: a deterministic synthetic multi-host web served on loopback.

The crawl target for the demo, the tests and the benchmarks:
  DemoWeb (web.py)              the pure model: routes requests to host handlers
  DemoWebServer/DemoWebThread   serve it on 127.0.0.1, every host on one port (server.py)
  DemoWebProcess, start_demoweb the server in its own process (process.py)
  AccessLog                     what was requested, with timings (access_log.py)
Host plug-ins (host_protocol.py, special_hosts/plugins.py), each opt-in by keyword or CLI flag:
  hostile=True          one misbehaving host per kind (special_hosts/hostile_hosts.py), web.hostile_hosts()
  traps=True            one crawler-trap host per TRAP_KINDS (special_hosts/trap_hosts.py), web.trap_hosts()
  near_duplicates=True  labelled near-duplicate articles (special_hosts/neardup_hosts.py),
                        web.near_duplicate_groups()
  politeness=True       cross-host and robots.txt redirects, long and dated Retry-After, a
                        slow host, a Crawl-delay learnt through a redirect, a busy host
                        (special_hosts/politeness_hosts.py), web.politeness_hosts()
  page_signals=True     a host whose pages say noindex/nofollow (special_hosts/signal_hosts.py)
  frames=True           a host linked only through frames, an image map and meta refreshes
                        (special_hosts/frame_hosts.py), frame_hosts(web)
"""

from .access_log import AccessLog, AccessRecord
from .ordinary.site_shape import HOME_PAGE
from .process import DemoWebProcess, DemoWebStartError, start_demoweb
from .responses import Response
from .server import DemoWebServer, DemoWebThread
from .special_hosts.hostile_hosts import add_hostile_hosts
from .special_hosts.neardup_hosts import NEAR_DUP_KINDS, NearDupGroup, add_near_duplicate_hosts
from .special_hosts.politeness_hosts import add_politeness_hosts
from .special_hosts.spec_hosts import HostileHost
from .special_hosts.trap_hosts import TRAP_KINDS, TrapHost, add_trap_hosts
from .web import DemoWeb

__all__ = ["AccessLog", "AccessRecord", "DemoWeb", "DemoWebProcess", "DemoWebServer",
           "DemoWebStartError", "DemoWebThread", "HOME_PAGE", "HostileHost", "NEAR_DUP_KINDS", "NearDupGroup", "Response", "TRAP_KINDS",
           "TrapHost", "add_hostile_hosts", "add_near_duplicate_hosts", "add_politeness_hosts", "add_trap_hosts", "start_demoweb"]
