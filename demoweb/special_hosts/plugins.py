"""Every opt-in host plug-in of the demo web, in the order the command line lists them
(serve-line counts and seed URLs follow this order)."""

from __future__ import annotations

from ..host_protocol import HostPlugin
from .frame_hosts import PLUGIN as FRAMES
from .hostile_hosts import PLUGIN as HOSTILE
from .neardup_hosts import PLUGIN as NEAR_DUPLICATES
from .politeness_hosts import PLUGIN as POLITENESS
from .signal_hosts import PLUGIN as PAGE_SIGNALS
from .spa_hosts import PLUGIN as SPA
from .spa_sites import PLUGIN as SPA_SITES
from .trap_hosts import PLUGIN as TRAPS

PLUGINS: tuple[HostPlugin, ...] = (HOSTILE, TRAPS, NEAR_DUPLICATES, POLITENESS, PAGE_SIGNALS, FRAMES, SPA, SPA_SITES)
PLUGIN_OPTIONS: tuple[str, ...] = tuple(p.option for p in PLUGINS)
