"""How long to leave a host alone after each request: the largest of the configured delay,
its robots.txt Crawl-delay, a multiple of its recent response time, and any Retry-After."""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import CrawlSettings


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

    def next_delay(self) -> float:
        adaptive = min(self.response_time_factor * (self.recent_response_s or 0.0), self.max_adaptive_delay_s)
        delay = max(self.default_delay_s, self.crawl_delay_s, adaptive, self.retry_after_s)
        self.retry_after_s = 0.0  # Retry-After applies to the next request only
        return delay
