"""MinHash confirmation: page texts read back from WARC records, and their similarity."""

import gzip
import io

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawl_assets.crawler.content.minhash_check import jaccard, minhash_of, text_from_warc

STORY = " ".join(f"sentence {i} of the article tells part {i} of the story" for i in range(40))


def page(text: str) -> bytes:
    return (f"<html><head><title>t</title></head><body><nav>menu home about</nav>"
            f"<article><p>{text}</p></article></body></html>").encode()


def write_warc(path, bodies: list[tuple[bytes, str | None]]) -> list[int]:
    """One gzip member per record; returns each response record's offset."""
    offsets = []
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for n, (body, encoding) in enumerate(bodies):
            headers = [("Content-Type", "text/html; charset=utf-8")]
            if encoding:
                headers.append(("Content-Encoding", encoding))
            http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
            record = writer.create_warc_record(f"http://a.test/{n}", "response", payload=io.BytesIO(body),
                                               http_headers=http)
            offsets.append(fh.tell())
            writer.write_record(record)
    return offsets


def test_the_text_is_read_back_from_the_record_at_the_offset(tmp_path):
    path = tmp_path / "pages.warc.gz"
    offsets = write_warc(path, [(page("the first page"), None), (gzip.compress(page(STORY)), "gzip")])
    assert "the first page" in text_from_warc(path, offsets[0])
    second = text_from_warc(path, offsets[1])  # decoded from the Content-Encoding as received
    assert "part 39 of the story" in second and "the first page" not in second


def test_similar_texts_score_high_and_different_ones_low():
    assert jaccard(STORY, STORY) == 1.0
    assert jaccard(STORY, STORY + " and one more line at the end") > 0.8
    assert jaccard(STORY, " ".join(f"unrelated {i} words about gardening {i}" for i in range(60))) < 0.1
    assert minhash_of(STORY).jaccard(minhash_of(STORY.upper())) == 1.0  # case does not matter
