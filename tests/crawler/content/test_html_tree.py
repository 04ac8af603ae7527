"""One decode and one parse a page (html_tree.py), shared by the link scan and the main text."""

from crawl_assets.crawler.content.body import examine
from crawl_assets.crawler.content.html_tree import decoded_html, parse_html
from crawl_assets.crawler.content.links import scan_page
from crawl_assets.crawler.content.simhash import page_text, simhash64
from demoweb import DemoWeb


def test_valid_utf8_is_read_as_utf8_even_where_the_detector_guesses_otherwise():
    short = "egié ".encode()  # resiliparse 2.0.1's detector calls this iso8859-13 (mojibake)
    assert decoded_html(short) == "egié "
    assert decoded_html("\ufeff<p>Zürich</p>".encode()) == "<p>Zürich</p>"  # the BOM goes


def test_bytes_that_are_not_utf8_go_to_the_detector():
    cp1252 = ("<html><head><title>Café</title></head><body><p>" + "Crème brûlée à la carte. " * 20
              + "</p></body></html>").encode("cp1252")
    assert "Crème brûlée" in decoded_html(cp1252)
    # ISO-2022-JP is 7-bit (valid UTF-8 byte for byte): its escapes send it to the detector.
    japanese = ("<p>" + "日本語のテキストです。" * 30 + "</p>").encode("iso2022_jp")
    japanese.decode("utf-8")  # valid UTF-8: only its escape bytes tell it apart
    assert "日本語のテキストです" in decoded_html(japanese)


def test_scan_then_text_from_one_tree_equals_each_from_the_bytes():
    web = DemoWeb(hosts=3, pages_per_host=8)
    for host in range(3):
        for number in range(8):
            html = web.render_page(host, number)
            url = f"{web.base_url(host)}/p/{number}.html"
            tree = parse_html(html)
            assert scan_page(tree, url) == scan_page(html, url)  # the scan leaves the tree as it was
            assert page_text(tree) == page_text(html)
            facts = examine(html, "text/html", None, url, 10**7)
            assert facts.outlinks == scan_page(html, url).links
            assert facts.simhash == simhash64(page_text(html))


def test_thousands_of_links_come_out_in_document_order():
    # resiliparse's collections, read element by element, run the selector again for each
    # element; the scan takes them as one list (a page of 5,000 links took minutes so).
    html = "<html><body>" + "".join(f'<a href="/p/{i}.html">{i}</a>' for i in range(5000)) + "</body></html>"
    links = scan_page(html.encode(), "http://site.test/").links
    assert links == [f"http://site.test/p/{i}.html" for i in range(5000)]


def test_links_of_a_page_that_is_not_utf8_are_read_in_its_encoding():
    # (selectolax, before the shared parse, read every body as UTF-8: "é" became U+FFFD.)
    html = ("<html><head><title>Café crème</title></head><body><p>" + "Crème brûlée à la carte. " * 20
            + '</p><a href="/Café.html">x</a></body></html>').encode("cp1252")
    assert scan_page(html, "http://site.test/").links == ["http://site.test/Caf%C3%A9.html"]
