from crawl_assets.crawler.url_policy.seed_files import read_seed_files


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
    assert [(b.file.rsplit("/", 1)[-1], b.line) for b in bad] == [("a.txt", 4), ("b.txt", 0)]
    assert "not an http(s) URL" in bad[0].reason
    assert "a.txt:4" in str(bad[0])
