"""How long to leave a host alone after each request: the largest of the configured delay,
its robots.txt Crawl-delay, a multiple of its recent response time, and any Retry-After,
plus a margin for the server's own clock of the exchange.

The engine counts a wait from the moment it has read the answer (workbench.release, after the
turn). A busy server can log the end of that answer later than that (it stamps it after its
write returns), so its own log would show the gap a little short of the delay: every wait is
SERVER_END_MARGIN of the delay longer, at most MAX_SERVER_END_MARGIN_S, so the server's log
shows every gap at least the delay. (Gaps seen 2-6 % short on a loaded test web.)"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import CrawlSettings

SERVER_END_MARGIN = 0.1
MAX_SERVER_END_MARGIN_S = 1.0


def with_margin(delay_s: float) -> float:
    """The wait that keeps `delay_s` as the server counts it (see the module's docstring)."""
    return delay_s + min(SERVER_END_MARGIN * delay_s, MAX_SERVER_END_MARGIN_S)


@dataclass
class HostPoliteness:
    default_delay_s: float
    response_time_factor: float
    max_adaptive_delay_s: float
    crawl_delay_s: float = 0.0  # from robots.txt, already checked against the cap
    recent_response_s: float | None = None  # exponentially weighted moving average
    retry_after_s: float = 0.0  # what the host asked for in its last answer

    @classmethod
    def from_settings(cls, settings: CrawlSettings) -> HostPoliteness:
        return cls(settings.default_delay_s, settings.response_time_factor, settings.max_adaptive_delay_s)

    @classmethod
    def none(cls) -> HostPoliteness:
        """No delay of its own: the caller says how long to wait (workbench tests)."""
        return cls(0.0, 0.0, 0.0)

    def observe(self, response_s: float) -> None:
        if self.recent_response_s is None:
            self.recent_response_s = response_s
        else:
            self.recent_response_s = 0.7 * self.recent_response_s + 0.3 * response_s

    def delay(self) -> float:
        """The wait after a request as things stand (margin included), changing nothing."""
        adaptive = min(self.response_time_factor * (self.recent_response_s or 0.0), self.max_adaptive_delay_s)
        return with_margin(max(self.default_delay_s, self.crawl_delay_s, adaptive, self.retry_after_s))

    def next_delay(self) -> float:
        """The wait after the request just made; Retry-After applies to that one only."""
        delay = self.delay()
        self.retry_after_s = 0.0
        return delay
