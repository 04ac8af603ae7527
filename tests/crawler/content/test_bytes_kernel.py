"""The compiled byte search (bytes_kernel.c) against its Python reference, and the change
digest that uses it: the same answers for every haystack and needle, so a machine without
a C compiler computes the same change digests."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
from pathlib import Path

import pytest

from crawl_assets.crawler.content import volatile_parts
from crawl_assets.crawler.content.volatile_parts import VOLATILE_PATTERNS, change_digest

try:
    from crawl_assets.crawler.content.bytes_kernel import contains_any as kernel
except ImportError:
    kernel = None
needs_kernel = pytest.mark.skipif(kernel is None, reason="bytes_kernel was not built (no C compiler at install "
                                                         "time?); `pip install -e .` builds it")
ROOT = Path(__file__).resolve().parents[3]


def reference(haystack: bytes, needles: tuple[bytes, ...]) -> bool:
    return any(needle in haystack for needle in needles)


@needs_kernel
def test_the_kernel_answers_as_the_python_reference():
    rng = random.Random(3)
    alphabet = b"ab_=\x00\xff"
    for _ in range(3000):
        haystack = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        needles = tuple(bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
                        for _ in range(rng.randint(0, 4)))
        assert kernel(haystack, needles) == reference(haystack, needles), (haystack, needles)
    # at the very start and end, longer than the haystack, and the volatile words themselves
    assert kernel(b"csrf", (b"csrf",)) and kernel(b"x=nonce", (b"nonce",)) and not kernel(b"nonc", (b"nonce",))
    for _, words in VOLATILE_PATTERNS:
        for word in words:
            assert kernel(b"<p>" + word + b"</p>", words) and not kernel(word[:-1], (word,))


@needs_kernel
def test_the_kernel_searches_the_lowered_haystack_as_the_python_reference_does():
    rng = random.Random(4)
    # letters of both cases, the bytes next to A-Z and a-z (case-folding edges), non-ASCII
    alphabet = b"aAbBzZ@[`{_=\x00\xc3\xff"
    for _ in range(5000):
        # long enough for the 16-byte blocks and their scalar tail
        haystack = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 70)))
        needles = tuple(bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
                        for _ in range(rng.randint(0, 4)))
        lowered = haystack.lower()
        assert kernel(haystack, needles, True) == reference(lowered, needles), (haystack, needles)
    page = b"<p>" + b"x" * 40 + b'<META NAME="X-CSRF-Token" CONTENT="t">' + b"y" * 40
    assert kernel(page, (b"csrf",), True) and not kernel(page, (b"csrf",))
    assert not kernel(page, (b"CSRF",), True)  # an upper-case needle never occurs in a lowered page
    for at in range(40):  # a match at every offset of a block, and one cut by the haystack's end
        haystack = b"." * at + b"NoNcE" + b"." * (40 - at)
        assert kernel(haystack, (b"nonce",), True) and not kernel(haystack[:at + 4], (b"nonce",), True)


@needs_kernel
def test_the_kernel_takes_any_bytes_like_haystack_and_refuses_other_needles():
    assert kernel(bytearray(b"abc"), (b"bc",)) and kernel(memoryview(b"abc"), (b"a",))
    with pytest.raises(TypeError):
        kernel(b"abc", ("bc",))
    with pytest.raises(TypeError):
        kernel(b"abc", [b"bc"])
    assert volatile_parts.contains_any is kernel


def test_a_digest_given_is_used_only_for_a_page_with_nothing_to_blank():
    plain = b"<html><body><p>Nothing made per request.</p></body></html>"
    own = hashlib.sha256(plain).hexdigest()
    assert change_digest(plain, True, sha256=own) == own == change_digest(plain, True)
    token = b'<html><head><meta name="csrf-token" content="t1"></head></html>'
    blanked = change_digest(token, True)
    assert blanked != hashlib.sha256(token).hexdigest()
    assert change_digest(token, True, sha256=hashlib.sha256(token).hexdigest()) == blanked


def test_without_the_kernel_the_change_digest_is_the_same():
    page = (b'<html><head><meta name="X-CSRF-Token" content="abc"><script nonce="n1"></script></head>'
            b'<body><a href="/x?SID=42">x</a></body></html>')
    code = ("import sys; sys.modules['crawl_assets.crawler.content.bytes_kernel'] = None\n"
            "from crawl_assets.crawler.content import volatile_parts\n"
            "assert volatile_parts.contains_any.__module__ == volatile_parts.__name__\n"
            f"print(volatile_parts.change_digest({page!r}, True))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=str(ROOT))
    assert out.stdout.strip() == change_digest(page, True)


@needs_kernel
def test_the_kernels_base32_spells_digests_as_base64_does():
    import base64
    import os

    from crawl_assets.crawler.content.bytes_kernel import b32encode

    # every length's padding (1..5 bytes left in the last group), SHA-1 and SHA-256 sizes
    for size in list(range(0, 41)) + [64, 1000]:
        for _ in range(20):
            data = os.urandom(size)
            assert b32encode(data) == base64.b32encode(data).decode("ascii"), data
    assert b32encode(memoryview(b"\xff" * 20)) == base64.b32encode(b"\xff" * 20).decode("ascii")
