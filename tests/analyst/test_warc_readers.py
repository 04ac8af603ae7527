"""Every WARC file a crawl produces is read the same by warcio and FastWARC, and passes
`warcio check`."""

from fastwarc.warc import ArchiveIterator as FastIterator
from warcio.archiveiterator import ArchiveIterator

from support import assert_warcio_check_passes


def test_warcio_and_fastwarc_read_the_same_records(two_day_crawl):
    warcs = two_day_crawl.warcs()
    kinds = set()
    for warc in warcs:
        with open(warc, "rb") as fh:
            by_warcio = [(r.rec_type, r.rec_headers.get_header("WARC-Record-ID")) for r in ArchiveIterator(fh)]
        with open(warc, "rb") as fh:
            by_fastwarc = [(str(r.record_type), r.record_id) for r in FastIterator(fh)]
        assert by_warcio and by_warcio == by_fastwarc, warc.name
        assert by_warcio[0][0] == "warcinfo"
        kinds |= {kind for kind, _ in by_warcio}
    assert kinds == {"warcinfo", "request", "response", "revisit"}


def test_warcio_check_passes(two_day_crawl):
    assert_warcio_check_passes(*two_day_crawl.warcs())
