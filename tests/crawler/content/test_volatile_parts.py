"""The archive definition's digest: two answers of one page that differ only in values made
per request (CSRF token, CSP nonce, session ids in links) hash alike; any other edit does not."""

from __future__ import annotations

from crawl_assets.crawler.content.body import examine

PAGE = """<!doctype html><html><head><meta name="csrf-token" content="{token}">
<script nonce="{nonce}">var x = 1;</script></head><body><article><p>{text}</p></article>
<form><input type="hidden" name="authenticity_token" value="{token}"><input name="q" value="{query}"></form>
<a href="/docs/1.html;jsessionid={session}">docs</a> <a href="/p?sid={session}&amp;page=2">next</a>
<footer>{footer}</footer></body></html>"""


def facts(token="a1b2", nonce="n1", session="S1", text="Release notes.", footer="(c) 2026", query="keep"):
    body = PAGE.format(token=token, nonce=nonce, session=session, text=text, footer=footer, query=query).encode()
    return examine(body, "text/html; charset=utf-8", None, "https://a.test/", 1 << 20)


def test_values_made_per_request_do_not_move_the_change_digest():
    first, second = facts(), facts(token="z9y8", nonce="n2", session="S2")
    assert first.sha256 != second.sha256  # the archived payloads differ ...
    assert first.change_digest == second.change_digest  # ... only in what every fetch changes


def test_a_footer_edit_or_another_fields_value_moves_it():
    first = facts()
    assert facts(footer="(c) 2027").change_digest != first.change_digest  # boilerplate: a change of the archive
    assert facts(query="other").change_digest != first.change_digest  # a form value that is no token
    assert facts(text="New release notes.").change_digest != first.change_digest


def test_content_that_is_not_html_is_compared_as_it_is():
    feed = b'<?xml version="1.0"?><rss><channel><item><link>https://a.test/p?sid=1</link></item></channel></rss>'
    examined = examine(feed, "application/rss+xml", None, "https://a.test/feed", 1 << 20)
    assert examined.change_digest == examined.sha256
