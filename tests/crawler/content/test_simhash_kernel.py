"""The compiled SimHash kernel (simhash_kernel.c) against the numpy reference: the same
fingerprint for every text and shingle, since fingerprints stored on earlier days are
compared with today's. simhash64 must use the kernel when it was built and fall back to
numpy when it was not."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from crawl_assets.crawler.content import simhash
from crawl_assets.crawler.content.simhash import page_text, simhash64, simhash64_numpy

kernel = simhash.compiled_fingerprint
needs_kernel = pytest.mark.skipif(
    kernel is None, reason="the compiled SimHash kernel was not built (no C compiler at "
    "install time?); `pip install -e .` builds it; simhash64 runs on numpy meanwhile")
ROOT = Path(__file__).resolve().parents[3]

_RNG = random.Random(8)
# Characters of every class the tokeniser tells apart: ASCII letters of both cases, digits,
# underscore, separators, and non-ASCII of 2, 3 and 4 UTF-8 bytes (Latin-1, BMP, astral),
# upper and lower case (non-ASCII letters keep their case).
_ALPHABET = ("abcXYZqQ" "0123456789" "__" "   \t\n.,;:-/'!?()"
             "\u00e9\u00c9\u00df\u00ff\u0100\u07ff" "\u0800\u4e2d\u20ac\uffff"
             "\U00010000\U0001F600\U0010FFFF")


def _random_text(rng: random.Random, words: int) -> str:
    return " ".join("".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 9)))
                    for _ in range(words))


CORPUS = [
    "",
    "   ,.;  \n\t",
    "word",
    "WORD",
    "_",
    "12345",
    "one two",
    "The quick brown fox jumps over the lazy dog",
    "the QUICK Brown fOX, jumps over the lazy dog!",
    "snake_case and __dunder__ and trailing_ and _leading",
    "Updated 2024-05-01 at 10:45. Visitors today: 12,345; price 9.99 EUR, 007 agents",
    "abc123 123abc 1a2b3c 0 00 0x1F 1_000 1e10 \u0661\u0662\u0663 (Arabic-Indic digits)",
    "Z\u00fcrich caf\u00e9: na\u00efve SM\u00d6RG\u00c5SBORD, jalape\u00f1o & cr\u00e8me "
    "br\u00fbl\u00e9e \u2014 \u4e2d\u6587\u6587\u672c test_case",
    "\u00c4rger \u00e4rger \u0130stanbul \u03a3\u03bf\u03c6\u03af\u03b1 \u0414\u043e\u043c",
    "emoji\U0001F600inside words \U0001F600 \U0001F44D\U0001F3FD and \U00010348 gothic",
    "tab\tseparated\nlines\r\nand\u00a0no-break\u2003em spaces",
    "x" * 300 + " " + "y" * 256 + " " + "7" * 400,   # lengths past 255 bytes wrap in len << 56
    "\u00e9" * 200 + " " + "\U0001F600" * 70,
    " ".join(f"w{i % 97} {i}" for i in range(5000)),  # heap-grown word list, many votes
    "same " * 3000,
    "a " * 9000 + "b",                                    # densest words: one in two chars
    "\u4e2d." * 5000 + "\U0001F600",                      # the same in 2- and 4-byte kinds
    _random_text(random.Random(1), 40000),               # ~250 KB, every class
]


@pytest.mark.parametrize("shingle", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("text", CORPUS, ids=range(len(CORPUS)))
@needs_kernel
def test_kernel_gives_the_numpy_fingerprint(text, shingle):
    assert kernel(text, shingle) == simhash64_numpy(text, shingle)
    assert simhash64(text, shingle) == simhash64_numpy(text, shingle)


@needs_kernel
def test_kernel_clamps_the_shingle_like_numpy():
    # s = max(1, min(shingle, words)): a shingle past the word count is one shingle of all
    # words; zero or negative counts as 1; a float is truncated like int().
    text = "alpha beta gamma delta"
    for shingle in (0, -3, 4, 5, 50, 2 ** 70, -(2 ** 70), 3.9):
        assert simhash64(text, shingle) == simhash64_numpy(text, shingle), shingle
    assert simhash64(text, 4) == simhash64(text, 99) != simhash64(text, 3)
    assert simhash64(text, 0) == simhash64(text, 1)


@needs_kernel
def test_kernel_gives_the_numpy_fingerprint_on_random_text():
    rng = random.Random(2026)
    for _ in range(400):
        text = _random_text(rng, rng.choice([0, 1, 2, 3, 5, 20, 300, 3000]))
        shingle = rng.randint(1, 5)
        assert kernel(text, shingle) == simhash64_numpy(text, shingle), (text[:80], shingle)


@needs_kernel
def test_kernel_gives_the_numpy_fingerprint_on_demo_web_pages():
    from demoweb import DemoWeb

    web = DemoWeb(hosts=6, pages_per_host=10)
    texts = [page_text(web.render_page(h, p)) for h in range(6) for p in range(10)]
    assert len(set(texts)) == len(texts) and all(len(t) > 1000 for t in texts)
    for text in texts:
        assert kernel(text, 3) == simhash64_numpy(text, 3)


@needs_kernel
def test_kernel_refuses_surrogates_like_numpy():
    for text in ("a\ud800b", "\udfff", "ok " * 10 + "\ud83d"):
        with pytest.raises(UnicodeEncodeError):
            simhash64_numpy(text)
        with pytest.raises(UnicodeEncodeError):
            kernel(text, 3)


@needs_kernel
def test_simhash64_uses_the_compiled_kernel(monkeypatch):
    from crawl_assets.crawler.content import simhash_kernel

    assert Path(simhash_kernel.__file__).suffix in (".so", ".pyd")
    assert simhash.compiled_fingerprint is simhash_kernel.fingerprint
    calls = []

    def counting(text, shingle):
        calls.append((text, shingle))
        return simhash_kernel.fingerprint(text, shingle)

    monkeypatch.setattr(simhash, "compiled_fingerprint", counting)
    assert simhash64("one two three four", 2) == simhash64_numpy("one two three four", 2)
    assert calls == [("one two three four", 2)]


def test_without_the_kernel_simhash64_falls_back_to_numpy():
    # As on a machine without a C compiler: the kernel's import fails, the same values come.
    code = ("import sys; sys.modules['crawl_assets.crawler.content.simhash_kernel'] = None\n"
            "from crawl_assets.crawler.content import simhash\n"
            "assert simhash.compiled_fingerprint is None\n"
            "print(simhash.simhash64('The quick brown fox jumps over the lazy dog'),"
            " simhash.simhash64('one two', 5))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(ROOT))
    assert out.stdout.split() == [str(0x2195F2053BB1E797), str(0x0E23273F17AC5063)]
