"""What an answer means, from synthetic answers (no network)."""

import dataclasses
import email.utils
import gzip
import random
import time
from datetime import datetime, timezone

import pytest

from crawl_assets.crawler.archive.warc import Exchange
from crawl_assets.crawler.fetching.answer_policy import (
    OUTCOME, DeadEndRedirect, LeaveHostAlone, Outcome, Redirect, Retry, RobotsAnswer, RobotsHop, judge_answer, judge_robots_answer,
    retry_after_seconds, status_class_of)
from crawl_assets.crawler.fetching.http_exchange import HopResult
from crawl_assets.crawler.fetching.workbench import FetchTask
from crawl_assets.crawler.settings import load_settings
from crawl_assets.crawler.vocabulary import StatusClass

SETTINGS = dataclasses.replace(load_settings(use_env=False), max_attempts=3, retry_base_s=2.0,
                               max_retry_after_s=120.0, max_redirects=5)
URL = "http://a.test/page"
NOW = 1_800_000_000.0


def answer(status: int, headers: dict[str, str] | None = None, url: str = URL, truncated: bool = False,
           body: bytes = b"") -> HopResult:
    headers = headers or {}
    started = datetime(2026, 12, 1, tzinfo=timezone.utc)
    exchange = Exchange(url, "192.0.2.1", started, "GET", "/page", [], "HTTP/1.1", status, "",
                        list(headers.items()), body, truncated)
    return HopResult(url, started, 0.01, "192.0.2.1", True, exchange,
                     {k.lower(): v for k, v in headers.items()}, truncated)


def failure(error_class: StatusClass) -> HopResult:
    return HopResult(URL, datetime(2026, 12, 1, tzinfo=timezone.utc), contacted=True,
                     error_class=error_class, error="it broke")


def judge(hop: HopResult, attempt: int = 1, chain: tuple[str, ...] = ()):
    return judge_answer(FetchTask(URL, "a.test", attempt=attempt, redirect_chain=chain), hop, SETTINGS,
                        random.Random(7), now=NOW)


@pytest.mark.parametrize("status, expected", [
    (200, StatusClass.OK), (204, StatusClass.OK), (304, StatusClass.NOT_MODIFIED), (301, StatusClass.REDIRECT),
    (404, StatusClass.HTTP_4XX), (503, StatusClass.HTTP_5XX), (199, StatusClass.HTTP_OTHER)])
def test_status_classes(status, expected):
    assert status_class_of(status) == expected


def test_slow_down_answers_are_throttled_not_errors():
    """429 always, and 503 when it says when to come back: the host is busy, the URL is not gone."""
    assert status_class_of(429) == status_class_of(429, "60") == StatusClass.THROTTLED
    assert status_class_of(503, "Wed, 21 Oct 2026 07:28:00 GMT") == StatusClass.THROTTLED
    assert status_class_of(503) == StatusClass.HTTP_5XX  # a plain outage, retried as 5xx


def test_server_errors_and_connection_failures_are_retried_with_growing_backoff_until_the_last_attempt():
    waits = [judge(answer(500), attempt=n) for n in (1, 2)]
    assert all(isinstance(w, Retry) for w in waits)
    assert 1.0 <= waits[0].wait_s <= 3.0 and 2.0 <= waits[1].wait_s <= 6.0  # base x 2^(n-1) x [0.5, 1.5]
    assert judge(answer(500), attempt=3) is OUTCOME  # the third attempt's answer stands
    assert isinstance(judge(failure(StatusClass.CONNECT_ERROR)), Retry)
    assert isinstance(judge(failure(StatusClass.NETWORK_ERROR)), Retry)
    # Not retried: answers that would be the same again, and failures that are not transient.
    for hop in (answer(404), answer(200), failure(StatusClass.DNS_ERROR), failure(StatusClass.TIMEOUT),
                failure(StatusClass.BLOCKED_ADDRESS)):
        assert judge(hop) is OUTCOME


def test_retry_after_is_honoured_in_seconds_and_as_a_date_up_to_the_cap():
    assert judge(answer(429, {"Retry-After": "60"})) == Retry(60.0)
    in_90_s = email.utils.formatdate(NOW + 90, usegmt=True)
    assert judge(answer(503, {"Retry-After": in_90_s})) == Retry(90.0)
    # Above max_retry_after_s: recorded as it is with why, not retried, the host left alone.
    refused = judge(answer(429, {"Retry-After": "7200"}))
    assert isinstance(refused, LeaveHostAlone) and refused.asked_s == 7200.0
    assert "Retry-After '7200'" in refused.error and "max_retry_after_s (120 s)" in refused.error
    dated = judge(answer(503, {"Retry-After": email.utils.formatdate(NOW + 7200, usegmt=True)}))
    assert isinstance(dated, LeaveHostAlone) and dated.asked_s == 7200.0
    # Even on the last attempt: the host's wish is heard, within the cap it spaces the next URL.
    assert isinstance(judge(answer(429, {"Retry-After": "7200"}), attempt=3), LeaveHostAlone)
    assert judge(answer(429, {"Retry-After": "60"}), attempt=3) == Outcome(60.0)
    # A short Retry-After does not shorten the backoff; on a 500 it is not read at all.
    assert 1.0 <= judge(answer(503, {"Retry-After": "0"})).wait_s <= 3.0
    assert judge(answer(500, {"Retry-After": "7200"})).wait_s <= 3.0


def test_redirects_are_followed_hop_by_hop_until_a_loop_or_the_sixth_hop():
    assert judge(answer(301, {"Location": "/next"})) == Redirect("http://a.test/next", (URL,))
    assert judge(answer(302, {"Location": "http://b.test/x"}), chain=("http://c.test/",)) == \
        Redirect("http://b.test/x", ("http://c.test/", URL))
    loop = judge(answer(302, {"Location": "http://c.test/"}), chain=("http://c.test/",))
    assert loop == DeadEndRedirect(StatusClass.REDIRECT_LOOP, "redirects back to http://c.test/", "http://c.test/")
    five = tuple(f"http://a.test/{n}" for n in range(5))
    too_many = judge(answer(301, {"Location": "/last"}), chain=five)
    assert too_many.status_class == StatusClass.TOO_MANY_REDIRECTS and too_many.target == "http://a.test/last"
    assert isinstance(judge(answer(301, {"Location": "/last"}), chain=five[:4]), Redirect)  # the fifth hop
    bad = judge(answer(301, {"Location": "http://[bad"}))
    assert bad.status_class == StatusClass.REDIRECT and bad.error.startswith("unusable redirect target")
    assert judge(answer(304)) is OUTCOME  # not a redirect
    assert judge(answer(301, {"Location": "/x"}, truncated=True)) is OUTCOME  # too large comes first


def robots_task(chain: tuple[str, ...] = ()) -> FetchTask:
    return FetchTask("http://a.test/robots.txt", "a.test", robots_for="http://a.test", redirect_chain=chain)


def test_robots_answers_hops_and_dead_ends():
    hop = judge_robots_answer(robots_task(), answer(301, {"Location": "http://b.test/robots.txt"}))
    assert hop == RobotsHop("http://b.test/robots.txt", ("http://a.test/robots.txt",))
    fine = judge_robots_answer(robots_task(), answer(200, body=b"User-agent: *\nDisallow: /x\n"))
    assert fine.response.status == 200 and fine.response.body.startswith(b"User-agent") and fine.failure is None
    five = tuple(f"http://a.test/r{n}" for n in range(5))
    sixth = judge_robots_answer(robots_task(five), answer(301, {"Location": "/r9"}))
    assert sixth == RobotsAnswer(dataclasses.replace(sixth.response, status=None),
                                 (StatusClass.ROBOTS_UNAVAILABLE, "robots.txt: more than 5 redirects"))
    bad = judge_robots_answer(robots_task(), answer(301, {"Location": "http://[bad"}))
    assert bad.response.status is None and bad.failure[0] == StatusClass.ROBOTS_UNAVAILABLE
    no_location = judge_robots_answer(robots_task(), answer(302))
    assert no_location.response.status == 302 and no_location.failure is None
    down = judge_robots_answer(robots_task(), failure(StatusClass.DNS_ERROR))
    assert down.response.status is None and down.failure == (StatusClass.DNS_ERROR, "robots.txt: it broke")


@pytest.mark.parametrize(("status", "expected"), [
    (199, StatusClass.HTTP_OTHER), (200, StatusClass.OK), (299, StatusClass.OK),
    (300, StatusClass.REDIRECT), (399, StatusClass.REDIRECT), (400, StatusClass.HTTP_4XX), (499, StatusClass.HTTP_4XX),
    (500, StatusClass.HTTP_5XX), (599, StatusClass.HTTP_5XX), (600, StatusClass.HTTP_OTHER)])
def test_each_status_class_holds_its_hundred_from_edge_to_edge(status, expected):
    assert status_class_of(status) == expected


def test_a_retry_after_date_counts_from_now_and_a_past_one_is_no_wait(monkeypatch):
    now = 1_800_000_000.0
    assert retry_after_seconds(email.utils.formatdate(now + 90, usegmt=True), now=now) == 90.0
    assert retry_after_seconds(email.utils.formatdate(now - 90, usegmt=True), now=now) == 0.0
    # A date without a zone is read as UTC (RFC 9110 dates are GMT), wherever the crawler runs.
    naive = datetime.fromtimestamp(now + 90, timezone.utc).strftime("%a, %d %b %Y %H:%M:%S")
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        assert retry_after_seconds(naive, now=now) == 90.0
    finally:
        monkeypatch.undo()
        time.tzset()
    assert retry_after_seconds(" 30 ", now=now) == 30.0 and retry_after_seconds("soon", now=now) is None
    in_a_minute = retry_after_seconds(email.utils.formatdate(time.time() + 60, usegmt=True))  # from the clock
    assert 58 <= in_a_minute <= 61


def test_a_redirect_without_a_location_leads_back_to_the_page_itself():
    assert judge(answer(302)) == DeadEndRedirect(StatusClass.REDIRECT_LOOP, f"redirects back to {URL}", URL)


def test_the_backoff_is_the_base_doubled_each_attempt_times_a_draw_from_half_to_one_and_a_half():
    """attempt 2 of base 2 s: 4 s, drawn over [2, 6] s, both halves of it; a Retry-After of 0 and
    a short backoff stay short (no second is added)."""
    rng = random.Random(11)
    waits = [judge_answer(FetchTask(URL, "a.test", attempt=2), answer(500), SETTINGS, rng, now=NOW).wait_s
             for _ in range(400)]
    assert 2.0 <= min(waits) < 2.2 and 5.8 < max(waits) <= 6.0, (min(waits), max(waits))
    short = dataclasses.replace(SETTINGS, retry_base_s=0.1)
    assert judge_answer(FetchTask(URL, "a.test"), answer(503, {"Retry-After": "0"}), short, rng, now=NOW).wait_s <= 0.15


def test_a_retry_after_of_exactly_the_cap_is_waited_for_and_the_refusal_says_why():
    assert judge(answer(429, {"Retry-After": "120"})) == Retry(120.0)
    refused = judge(answer(429, {"Retry-After": "121"}))
    assert refused.error == ("429 with Retry-After '121' (121 s), above max_retry_after_s (120 s): not retried, "
                             "and the host is left alone for the rest of the batch")


def test_robots_redirects_are_the_3xx_with_a_location_and_a_compressed_robots_txt_is_read():
    at_300 = judge_robots_answer(robots_task(), answer(300, {"Location": "http://b.test/robots.txt"}))
    assert at_300 == RobotsHop("http://b.test/robots.txt", ("http://a.test/robots.txt",))
    at_400 = judge_robots_answer(robots_task(), answer(400, {"Location": "http://b.test/robots.txt"}))
    assert at_400.response.status == 400 and at_400.failure is None
    rules = b"User-agent: *\nDisallow: /private/\n"
    gzipped = judge_robots_answer(robots_task(), answer(200, {"Content-Encoding": "gzip"}, body=gzip.compress(rules)))
    assert gzipped.response.body == rules
    broken = judge_robots_answer(robots_task(), answer(200, {"Content-Encoding": "gzip"}, body=b"not gzip"))
    assert broken.response.status == 200 and broken.response.body == b""  # undecodable: read as empty
