import dataclasses
import ipaddress

from crawl_assets.crawler.settings import CrawlSettings, NetworkException
from crawl_assets.crawler.url_policy.seed_files import fetcher_refusal, read_seed_files


def test_seed_files_skip_comments_and_report_bad_lines_with_file_and_line(tmp_path):
    (tmp_path / "a.txt").write_text(
        "# my seeds\n"
        "http://Example.com/\n"
        "\n"
        "ftp://example.com/file   # not http\n"
        "https://example.org/page#frag  # trailing comment\n"
        "http://example.com/\n"
    )
    (tmp_path / "b.txt").write_bytes(b"http://\xff\xfe/\n")
    (tmp_path / "ignored.csv").write_text("http://not-a-seed.example/\n")

    seeds, bad = read_seed_files(tmp_path)

    assert [s.url for s in seeds] == ["http://example.com/", "https://example.org/page"]
    assert seeds[0].source == "a.txt:2"
    assert [(b.file.rsplit("/", 1)[-1], b.line) for b in bad] == [("a.txt", 4), ("b.txt", 1)]
    assert "not an http(s) URL" in bad[0].reason
    assert "a.txt:4" in str(bad[0])


def test_one_bad_byte_costs_its_line_only(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"\xef\xbb\xbfhttp://a.example/\nhttp://b.example/caf\xe9\r\nhttp://c.example/\n")
    seeds, bad = read_seed_files(tmp_path)
    assert [s.url for s in seeds] == ["http://a.example/", "http://c.example/"]
    assert [s.source for s in seeds] == ["a.txt:1", "a.txt:3"]
    (line,) = bad
    assert (line.line, line.reason) == (2, "not UTF-8 text (byte 0xe9 at column 21)")
    assert line.text == "http://b.example/caf\ufffd"


def test_urls_the_fetcher_would_refuse_are_bad_lines_with_its_reason(tmp_path):
    long_url = "http://long.example/" + "a" * 100_008
    (tmp_path / "s.txt").write_text(f"http://ok.example/\n{long_url}\nhttp://[::1]/\n"
                                    "http://169.254.169.254/latest/meta-data\nhttp://10.1.2.3/\nhttp://8.8.8.8/\n")
    seeds, bad = read_seed_files(tmp_path, fetcher_refusal(CrawlSettings()))
    assert [s.url for s in seeds] == ["http://ok.example/", "http://8.8.8.8/"]
    assert [b.line for b in bad] == [2, 3, 4, 5]
    assert "refused by the trap defences (url_too_long" in bad[0].reason
    assert str(bad[0]).endswith("aaaa... (100,028 characters)'") and len(str(bad[0])) < 300
    assert bad[1].reason.startswith("::1 is not a public address, which the fetcher refuses")
    assert bad[2].reason.startswith("169.254.169.254 is not a public address")
    # network_exceptions opens a network to named hosts for the fetcher, and so for the seeds.
    opened = dataclasses.replace(CrawlSettings(), network_exceptions=(
        NetworkException(("10.1.2.3",), (ipaddress.ip_network("10.0.0.0/8"),)),))
    seeds, bad = read_seed_files(tmp_path, fetcher_refusal(opened))
    assert "http://10.1.2.3/" in [s.url for s in seeds] and [b.line for b in bad] == [2, 3, 4]
