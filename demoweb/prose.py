"""Pseudo-English text shared by every page generator of the demo web: a sentence pool per
seed, paragraphs, titles, headings and anchor texts. Vocabulary comes from words.py."""

from __future__ import annotations

import functools
from random import Random

from .randomness import between, pick, rng_for
from .words import WORDS

COMMON_WORDS: tuple[str, ...] = WORDS[:200]  # ASCII-only head of the list, for titles and anchors


@functools.lru_cache(maxsize=8)
def sentence_pool(seed: int, size: int = 4096) -> tuple[tuple[str, ...], int]:
    """Pseudo-English sentences shared by all pages of a seed (pages pick from it cheaply),
    and their mean length plus one for the joining space."""
    rng = rng_for(seed, "sentences")
    pool = []
    for _ in range(size):
        words = rng.choices(WORDS, k=rng.randint(6, 18))
        if rng.random() < 0.3:
            cut = rng.randint(2, len(words) - 2)
            words[cut] = words[cut] + ","
        end = "?" if rng.random() < 0.05 else "."
        text = " ".join(words)
        pool.append(text[0].upper() + text[1:] + end)  # not capitalize(): keeps 'Zürich'
    return tuple(pool), round(sum(map(len, pool)) / size) + 1


def paragraph(rng: Random, pool: tuple[str, ...]) -> str:
    """One paragraph of 3-8 sentences of `pool`."""
    return " ".join(rng.choices(pool, k=between(rng, 3, 8)))


def paragraphs(rng: Random, seed: int, target_chars: int) -> list[str]:
    """Paragraphs of 3-8 sentences totalling about target_chars; one choices() call for all
    sentences keeps building a page cheap."""
    pool, mean_chars = sentence_pool(seed)
    count = target_chars // mean_chars + 1
    sentences = rng.choices(pool, k=count)
    out = []
    i = 0
    while i < count:
        k = between(rng, 3, 8)
        out.append(" ".join(sentences[i:i + k]))
        i += k
    return out


def title_words(rng: Random, low: int, high: int) -> str:
    """low..high capitalised common words."""
    return " ".join(w.capitalize() for w in rng.choices(COMMON_WORDS, k=between(rng, low, high)))


def _phrase_pool(size: int, low: int, high: int, title_case: bool) -> tuple[str, ...]:
    rng = rng_for("phrases", low, high, title_case)
    words = [w.capitalize() if title_case else w for w in COMMON_WORDS]
    return tuple(" ".join(rng.choices(words, k=between(rng, low, high))) for _ in range(size))


# Anchor texts and headings come from fixed pools: picking one is a single rng call,
# and there are ~30 links and ~15 headings per page.
ANCHOR_TEXTS: tuple[str, ...] = _phrase_pool(1024, 1, 4, title_case=False)
HEADINGS: tuple[str, ...] = _phrase_pool(1024, 2, 5, title_case=True)


def heading(rng: Random) -> str:
    return pick(rng, HEADINGS)


def anchor_text(rng: Random) -> str:
    return pick(rng, ANCHOR_TEXTS)
