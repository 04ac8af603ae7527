"""The archive definition's digest: two answers of one page that differ only in values made
per request (CSRF token, CSP nonce, session ids in links) hash alike; any other edit does not."""

from __future__ import annotations

from crawl_assets.crawler.content.body import examine
from crawl_assets.crawler.content.volatile_parts import without_volatile_parts

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


# Each spelling the patterns take, in the case a server might send it.
VOLATILE_SPELLINGS = [b'<input type="hidden" name="csrf_token" value="t1">',
                      b'<META NAME="X-XSRF-TOKEN" CONTENT="t1">', b'<input value="t1" name="authenticity_token">',
                      b'<input name="__RequestVerificationToken" value="t1">',
                      b'<input name="_token" value="t1">', b'<input name="__EVENTVALIDATION" value="t1">',
                      b'<script NONCE="t1">', b'<a href="/x;JSESSIONID=t1">', b'<a href="/x?SID=t1">',
                      b'<a href="/x?PHPSESSID=t1">', b'<a href="/x?SessionId=t1">', b'<a href="/x?session_id=t1">']


def test_every_spelling_of_a_volatile_value_is_blanked_though_pages_without_their_words_are_not_searched():
    for spelling in VOLATILE_SPELLINGS:
        page = b"<html><body>" + spelling + b"</body></html>"
        assert b"t1" not in without_volatile_parts(page), spelling
        assert without_volatile_parts(page.replace(b"t1", b"t2")) == without_volatile_parts(page)


def test_a_session_id_with_dashes_and_underscores_is_blanked_whole():
    """Servers mint session ids of letters, digits, '-' and '_' (base64url): the whole id is
    volatile, not the part before its first '-'."""
    first = facts(session="Ab-3_x9")
    assert facts(session="Zq-8_k2").change_digest == first.change_digest
    assert facts(session="Ab-3_x9-more").change_digest == first.change_digest
    assert b"3_x9" not in without_volatile_parts(b'<a href="/p?sid=Ab-3_x9&amp;page=2">next</a>')


def test_a_body_that_is_not_html_keeps_what_would_be_volatile_in_html():
    body = b'<a href="/x?SID=t1"> <input name="_token" value="t1">'
    assert without_volatile_parts(body) != body  # as HTML, both values would be blanked
    examined = examine(body, "text/plain", None, "https://a.test/notes.txt", 1 << 20)
    assert examined.change_digest == examined.sha256
