"""crawl_assets.demoweb: a deterministic synthetic multi-host web served on loopback.

The crawl target for the demo, the tests and the benchmarks: DemoWeb is the pure model
(site.py), DemoWebServer/DemoWebThread serve it on 127.0.0.1 with every host on one port
(server.py), and AccessLog records what was requested (access_log.py). DemoWeb(hostile=True)
adds one misbehaving host per hostile kind (hostile_hosts.py), described by web.hostile_hosts();
DemoWeb(traps=True) adds one crawler-trap host per kind in TRAP_KINDS (trap_hosts.py), described
by web.trap_hosts(). DemoWeb(near_duplicates=True) adds hosts serving labelled groups of
near-duplicate articles (neardup_hosts.py, NEAR_DUP_KINDS), described by web.near_duplicate_groups().
"""

from .access_log import AccessLog, AccessRecord
from .hostile_hosts import HostileHost, add_hostile_hosts
from .neardup_hosts import NEAR_DUP_KINDS, NearDupGroup, add_near_duplicate_hosts
from .server import DemoWebServer, DemoWebThread
from .site import HOME_PAGE, DemoWeb, Response
from .trap_hosts import TRAP_KINDS, TrapHost, add_trap_hosts

__all__ = ["AccessLog", "AccessRecord", "DemoWeb", "DemoWebServer", "DemoWebThread",
           "HOME_PAGE", "HostileHost", "NEAR_DUP_KINDS", "NearDupGroup", "Response", "TRAP_KINDS", "TrapHost", "add_hostile_hosts",
           "add_near_duplicate_hosts", "add_trap_hosts"]
