import dataclasses
import fnmatch
import random

import pyarrow as pa
import pytest
from hypothesis import Phase, example, find, given, settings
from hypothesis import strategies as st

from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.crawler.url_policy.trap_defences import (Blocklist, TrapDefences, TrapLimits, query_shape,
                                                           query_shapes, repeated_segments, url_patterns_regex)


def test_query_shapes_blank_digits_and_values_and_sort_parameter_names():
    assert query_shape("http://c.test/calendar?month=2031-04") == query_shape("http://c.test/calendar?month=2099-12")
    assert query_shape("http://f.test/shop?size=m&color=red") == query_shape("http://f.test/shop?color=blue&size=s")
    assert query_shape("http://f.test/shop?color=red") != query_shape("http://f.test/shop?color=red&size=m")
    assert query_shape("http://o.test/p/12.html") is None  # numbered pages are an ordinary site


@pytest.mark.parametrize("path, trapped", [
    ("a/b/a/b/a/b/a/b", True), ("x/x/x/x", True), ("a/b/c/a/b/c/a/b/c/a/b/c", True),
    ("a/b/a/b", False), ("docs/2026/11/29/page.html", False), ("p/1/p/2/p/3", False),
])
def test_repeated_segments(path, trapped):
    assert repeated_segments(path, max_repeats=3) is trapped


def test_intrinsic_defences_name_their_reason_and_are_counted_per_host():
    traps = TrapDefences(TrapLimits(max_url_length=60, max_query_params=3))
    host = "t.test"
    assert traps.reason("http://t.test/" + "x" * 60, host) == "url_too_long"
    assert traps.reason("http://t.test/s?a=1&b=2&c=3&d=4", host) == "too_many_query_params"
    assert traps.reason("http://t.test/a/b/a/b/a/b/a/b/", host) == "repeated_path_segments"
    assert traps.reason("http://t.test/fine.html", host) is None
    assert dict(traps.dropped[host]) == {"url_too_long": 1, "too_many_query_params": 1,
                                         "repeated_path_segments": 1}


def test_endless_variations_of_one_pattern_are_capped():
    traps = TrapDefences(TrapLimits(max_urls_per_pattern=20))
    months = [f"http://cal.test/calendar?month={2026 + i // 12}-{i % 12 + 1:02d}" for i in range(100)]
    accepted = [m for m in months if traps.reason(m, "cal.test") is None]
    assert len(accepted) == 20 and traps.dropped["cal.test"]["pattern_budget"] == 80
    assert traps.reason("http://cal.test/about.html", "cal.test") is None  # other pages still fine


def test_a_host_that_spawns_urls_faster_than_it_is_fetched_gets_capped():
    traps = TrapDefences(TrapLimits(growth_ratio=10, growth_min_urls=200, max_urls_per_pattern=10**6))
    for n in range(10):
        traps.observe_fetch("random.test")
        traps.observe_fetch("normal.test")
    for n in range(1000):
        traps.observe_new_url("random.test", f"http://random.test/{n}/{n * 7919}")
    for n in range(50):
        traps.observe_new_url("normal.test", f"http://normal.test/p/{n}.html")
    assert "random.test" in traps.capped_hosts and "normal.test" not in traps.capped_hosts
    assert traps.reason("http://random.test/new", "random.test") == "host_growth_capped"
    assert 900 < traps.new_url_estimate("random.test") < 1100
    assert traps.new_url_estimate("never.test") == 0


def test_the_growth_cap_weighs_new_urls_against_the_hosts_own_fetches():
    """192 new URLs (the sketch is counted every 64, from growth_min_urls = 150 on): a host
    with 14 fetched pages has spawned more than ten times those (140) and is capped; one with 30
    (300) is not, nor is one with 14 under a minimum of 250; a host never fetched is weighed as
    if one page had been (150 against 192 at a ratio of 150)."""
    def capped(fetched: int, ratio: float = 10, least: int = 150) -> bool:
        traps = TrapDefences(TrapLimits(growth_ratio=ratio, growth_min_urls=least))
        for _ in range(fetched):
            traps.observe_fetch("h.test")
        for n in range(192):
            traps.observe_new_url("h.test", f"http://h.test/{n}")
        assert 150 < traps.new_url_estimate("h.test") < 240  # the sketch's error at 2^8 registers
        return "h.test" in traps.capped_hosts

    assert capped(14) and not capped(30) and not capped(14, least=250)
    assert capped(0, ratio=150) and not capped(0, ratio=250)


def test_a_host_is_capped_at_the_least_number_of_new_urls_and_only_past_the_ratio():
    """growth_min_urls is a least number (a host whose new URLs reach it is capped), growth_ratio
    a multiple of the host's fetches to exceed (a host at it is not). The limits are placed at
    the estimate the host's 64 new URLs give (the sketch is counted at every 64th), read first
    from the same URLs fed to a sketch of the same size: the sketch's hash is fixed."""
    urls = [f"http://h.test/{n}" for n in range(64)]

    def fed(limits: TrapLimits) -> TrapDefences:
        traps = TrapDefences(limits)
        for _ in range(2):
            traps.observe_fetch("h.test")
        for url in urls:
            traps.observe_new_url("h.test", url)
        return traps

    estimate = fed(TrapLimits()).new_url_estimate("h.test")
    assert 48 <= estimate <= 80  # 64 within the sketch's error

    def capped(least: int, ratio: float) -> bool:
        return "h.test" in fed(TrapLimits(growth_ratio=ratio, growth_min_urls=least)).capped_hosts

    assert capped(estimate, 1) and not capped(estimate + 1, 1)
    assert capped(1, (estimate - 1) / 2) and not capped(1, estimate / 2)  # 2 fetches: (estimate - 1) and estimate


def test_the_limits_are_the_settings():
    settings = dataclasses.replace(CrawlSettings(), max_url_length=11, max_query_params=12, max_path_repeats=13,
                                   max_urls_per_pattern=14, host_growth_ratio=15.5, host_growth_min_urls=16)
    assert TrapLimits.from_settings(settings) == TrapLimits(11, 12, 13, 14, 15.5, 16)


def test_a_dropped_url_takes_nothing_of_its_patterns_budget():
    """Each host and query shape has its own budget; a URL dropped for another reason first
    (too long here) is not counted in it."""
    traps = TrapDefences(TrapLimits(max_url_length=40, max_urls_per_pattern=2))
    assert traps.reason("http://t.test/s?a=" + "x" * 30, "t.test") == "url_too_long"
    assert [traps.reason(f"http://t.test/s?a={n}", "t.test") for n in range(3)] == [None, None, "pattern_budget"]
    assert [traps.reason(f"http://t.test/s?b={n}", "t.test") for n in range(3)] == [None, None, "pattern_budget"]
    assert [traps.reason(f"http://u.test/s?a={n}", "u.test") for n in range(2)] == [None, None]


def test_blocklist_file(tmp_path):
    path = tmp_path / "blocklist.txt"
    path.write_text("# hand-kept\nhost *.ads.test\nurl http://*/logout*\nhost   spaced.test  # two # comments\n")
    blocklist = Blocklist.read(path)
    assert blocklist == Blocklist(("*.ads.test", "spaced.test"), ("http://*/logout*",))
    traps = TrapDefences(blocklist=blocklist)
    assert traps.reason("http://x.ads.test/", "x.ads.test") == "blocklist_host"
    assert traps.reason("http://a.test/logout?next=/", "a.test") == "blocklist_url"
    # A list of hosts alone, or of URL patterns alone, is read too.
    assert TrapDefences(blocklist=Blocklist(hosts=("*.ads.test",))).reason("http://x.ads.test/", "x.ads.test") == \
        "blocklist_host"
    assert TrapDefences(blocklist=Blocklist(url_patterns=("*/logout*",))).reason("http://a.test/logout", "a.test") == \
        "blocklist_url"
    path.write_text("hots typo.test\n")
    with pytest.raises(ValueError, match="blocklist.txt:1"):
        Blocklist.read(path)
    assert Blocklist.read(tmp_path / "missing.txt") == Blocklist()


def test_demoted_hosts_are_refused_new_urls():
    traps = TrapDefences(demoted_hosts=frozenset({"copies.test"}))
    assert traps.reason("http://copies.test/x", "copies.test") == "demoted_host"


def test_the_blocklists_url_patterns_match_what_fnmatch_matches():
    """The patterns are matched as one regex; on random URLs it agrees with fnmatch, case and all."""
    patterns = ("http*://*/logout*", "http*://*/cart/add*", "*?[abc]*", "*.PDF", "*[!x]y")
    regex = url_patterns_regex(patterns)
    blocklist = Blocklist(url_patterns=patterns)
    rng = random.Random(7)
    for _ in range(20000):
        url = "".join(rng.choice("ab/:.?[]!*xyPDFpdf-logutcrd\n") for _ in range(rng.randint(0, 24)))
        if rng.random() < 0.2:
            url = "https://shop.test/logout" + url
        expected = any(fnmatch.fnmatchcase(url, p) for p in patterns)
        assert bool(regex.match(url)) == expected, url
        assert (blocklist.reason(url, "shop.test") is not None) == expected


# -- the two forms of the URL rules: one URL at a time, and over Arrow arrays -------------------

# Pieces that meet the rules' edges: digits (ASCII and not), "&", "=", "?" and "#" in the path
# and the query, repeated segments, non-ASCII text, percent escapes, empty pieces.
PIECES = st.sampled_from(["a", "b", "cal", "2031", "x9y", "é", "٣", "%C3%A9", "&", "=", "a=1", "?", "#f", ""])


@st.composite
def urls(draw) -> str:
    """A URL of the crawl's shape, or (one in five) any text at all."""
    if draw(st.integers(0, 4)) == 0:  # any text, or text of the characters the array forms cut at
        return draw(st.one_of(st.text(max_size=40), st.text("09a?&=/:é", max_size=40)))
    host = draw(st.sampled_from(["h.test", "h1.test", "ü.test", "a.test:81"]))
    run = [draw(st.sampled_from(["a", "a/b", "é/x9y", "2031", "a/b/c"]))] * draw(st.integers(0, 4))  # repeated segments
    path = "/".join(draw(st.lists(PIECES, max_size=4)) + run + draw(st.lists(PIECES, max_size=2)))
    params = draw(st.lists(st.tuples(PIECES, PIECES), max_size=6))
    query = "&".join(f"{name}={value}" if value else name for name, value in params)
    mark = draw(st.sampled_from(["", "?", "??"])) if not query else "?"
    return f"http://{host}/{path}{mark}{query}" + draw(st.sampled_from(["", "#top", "#a?b&c"]))


LIMITS = TrapLimits(max_url_length=64, max_query_params=3, max_path_repeats=2)
BLOCKLISTS = [Blocklist(), Blocklist(hosts=("h1.test",), url_patterns=("*/cal*",)), Blocklist(hosts=("h1.test",)),
              Blocklist(url_patterns=("*/cal*",))]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(urls(), max_size=40), st.sampled_from(BLOCKLISTS))
# Where the array forms cut by bytes: a path ending in a digit before one starting with one, a
# "://" after the first slash or a ":/" without its second slash (so no "://" there); names
# out of order with the same first byte or before an empty one (alone: one batch's names are
# sorted when any are out of order).
@example(["http://h.test/a1?x=1", "2/p?y", "x/y://h.test/a/a/a/a", "x:/h.test/a/a/a/a/a", "http://h.test/b/b/b/b"],
         BLOCKLISTS[0])
@example(["http://h.test/p?ab=1&aa=2"], BLOCKLISTS[0])
@example(["http://h.test/p?!=1&&b"], BLOCKLISTS[0])
@example(["http://h.test/p?!&", "http://h.test/q?z"], BLOCKLISTS[0])
# A run of digits ending in 9, and a path of empty segments only.
@example(["http://h.test/p19/a99?x=1", "http://h.test/////"], BLOCKLISTS[0])
def test_the_vectorised_trap_rules_agree_with_the_scalar_ones(batch, blocklist):
    traps = TrapDefences(LIMITS, blocklist)
    hosts = [url.partition("://")[2].partition("/")[0] for url in batch]
    reasons = traps.intrinsic_reasons(pa.array(batch, pa.string()), pa.array(hosts, pa.string()))
    assert reasons.type == pa.string()
    assert reasons.to_pylist() == [traps.intrinsic_reason(url, host) for url, host in zip(batch, hosts)]
    # Chunked as DuckDB hands them over.
    shapes = query_shapes(pa.chunked_array([batch[:3], batch[3:]], pa.string()))
    assert shapes.type == pa.string() and shapes.to_pylist() == [query_shape(url) for url in batch]
    # Both at once, as the frontier asks.
    rules = traps.url_rules(pa.array(batch, pa.string()), pa.array(hosts, pa.string()))
    assert rules.type.names == ["trap", "query_shape"]
    assert rules.field("trap").to_pylist() == reasons.to_pylist()
    assert rules.field("query_shape").to_pylist() == shapes.to_pylist()


@pytest.mark.parametrize("path, repeated", [("a/a", True), ("x/a", False), ("a/b/c/d/e", False), ("a/b/a/b", True),
                                            ("a/b/c/a/b/c", True)])
def test_one_repeat_allowed_the_array_form_agrees_too(path, repeated):
    """max_path_repeats = 1: two equal blocks in a row are a run; the array form's shortcuts
    (lists too short for a run of a width) hold at that edge too."""
    traps = TrapDefences(dataclasses.replace(LIMITS, max_path_repeats=1))
    url = f"http://h.test/{path}"
    expected = "repeated_path_segments" if repeated else None
    assert traps.intrinsic_reason(url, "h.test") == expected
    assert traps.intrinsic_reasons(pa.array([url, "http://h.test/z"]), pa.array(["h.test"] * 2)).to_pylist() == \
        [expected, None]


def test_a_later_urls_blocks_are_aligned_on_its_own_path():
    """In a batch the array form places each path's segments from that path's own start: the
    second path's run of three (a/b/c twice) is found after a first path of eight segments."""
    traps = TrapDefences(dataclasses.replace(LIMITS, max_path_repeats=1))
    batch = ["http://h.test/c/c/b/b/c/a/c/a", "http://h.test/a/b/c/a/b/c/a"]
    expected = [traps.intrinsic_reason(url, "h.test") for url in batch]
    assert expected == ["repeated_path_segments"] * 2
    assert traps.intrinsic_reasons(pa.array(batch), pa.array(["h.test"] * 2)).to_pylist() == expected


def test_the_array_form_asks_the_scalar_rule_only_about_unusual_urls(monkeypatch):
    """Without a blocklist, URLs of the crawl's own shape (scheme://host/path?query) are judged
    over the array alone, repeated segments too; one without "://" before its path is asked
    about one at a time. With a blocklist every URL still open is asked."""
    asked: list[str] = []
    traps = TrapDefences(LIMITS)
    judge = traps.intrinsic_reason
    monkeypatch.setattr(traps, "intrinsic_reason", lambda url, host: asked.append(url) or judge(url, host))
    ordinary = ["http://h.test/a/a/a/a", "https://h1.test:81/x/y/x/y/x/y?q=1&r=2", "http://h.test/1/2/3/4/5",
                "http://h.test/a/b/c/d#f/g"]
    odd = "x/y://h.test/a/a/a/a"
    batch = [*ordinary, odd]
    reasons = traps.intrinsic_reasons(pa.array(batch), pa.array(["h.test"] * len(batch))).to_pylist()
    assert reasons == ["repeated_path_segments", "repeated_path_segments", None, None, judge(odd, "h.test")]
    assert asked == [odd]
    asked.clear()
    blocked = TrapDefences(LIMITS, BLOCKLISTS[1])
    monkeypatch.setattr(blocked, "intrinsic_reason", lambda url, host: asked.append(url) or judge(url, host))
    blocked.intrinsic_reasons(pa.array(ordinary), pa.array(["h.test"] * len(ordinary)))
    assert asked == ordinary


@pytest.mark.parametrize("verdict", ["url_too_long", "too_many_query_params", "repeated_path_segments",
                                     "blocklist_host", "blocklist_url", None])
def test_the_generated_urls_meet_every_verdict(verdict):
    """The property above is only as good as its URLs: some meet each verdict (find fails if none)."""
    traps = TrapDefences(LIMITS, BLOCKLISTS[1])
    find(urls(), lambda url: traps.intrinsic_reason(url, url.partition("://")[2].partition("/")[0]) == verdict
         and (verdict is not None or query_shape(url) is not None), settings=settings(derandomize=True, database=None, max_examples=1000, phases=[Phase.generate]))
