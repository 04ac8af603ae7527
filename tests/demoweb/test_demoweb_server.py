"""The loopback HTTP server, its access log and the CLI, exercised over real sockets."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import pyarrow.parquet as pq
import pytest

from demoweb import AccessLog, DemoWeb, DemoWebServer, DemoWebThread
from demoweb.process import DemoWebProcess, DemoWebStartError


@pytest.fixture(scope="module")
def demo():
    with DemoWebThread(DemoWeb(seed=2, hosts=10, pages_per_host=40), port=0) as thread:
        yield thread


def host_header(demo, host_index: int) -> dict[str, str]:
    return {"Host": f"{demo.web.hostname(host_index)}:{demo.port}"}


def logged_rows(demo, host: str, count: int, timeout: float = 5.0):
    """The access-log rows for `host` once there are `count`. A row lands just after its
    response is drained, so the client may see the response a moment earlier; filtering
    by host keeps late rows of earlier tests out."""
    deadline = time.monotonic() + timeout
    while True:
        rows = [row for row in demo.access_log.rows if row.host == host]
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.01)


def raw_exchange(port: int, payload: bytes, timeout: float = 5.0) -> bytes:
    """Send bytes, read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(payload)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_serves_the_model_bytes_with_the_bound_port(demo, client):
    assert demo.port != 0 and demo.web.port == demo.port
    assert demo.base_url(3) == f"http://h0003.demo.test:{demo.port}"
    for path in ("/", "/p/0.html", "/p/39.html", "/robots.txt", "/sitemap.xml"):
        r = client.get(path, headers=host_header(demo, 3))
        expected = demo.web.respond("h0003.demo.test", path, {})
        assert r.status_code == expected.status
        assert r.content == expected.body
        assert r.headers["content-length"] == str(len(expected.body))
        assert r.headers["etag"] == expected.header("ETag")
        assert "date" in r.headers
    # links in served pages point at the port actually bound
    assert f"h0003.demo.test:{demo.port}/" in client.get("/", headers=host_header(demo, 3)).text


def test_404s(demo, client):
    assert client.get("/nope", headers=host_header(demo, 1)).status_code == 404
    r = client.get("/", headers={"Host": f"elsewhere.example:{demo.port}"})
    assert r.status_code == 404 and "<html" in r.text


def test_keep_alive_conditional_and_access_log(demo, client):
    demo.access_log.clear()
    paths = [f"/p/{n}.html" for n in range(6)]
    for path in paths:
        assert client.get(path, headers=host_header(demo, 4)).status_code == 200
    etag = client.get("/p/0.html", headers=host_header(demo, 4)).headers["etag"]
    r = client.get("/p/0.html", headers={**host_header(demo, 4), "If-None-Match": etag})
    assert r.status_code == 304 and r.content == b""

    rows = logged_rows(demo, "h0004.demo.test", 8)
    assert [row.path for row in rows] == paths + ["/p/0.html", "/p/0.html"]
    assert len({row.conn_id for row in rows}) == 1  # one keep-alive connection for all
    for row in rows:
        assert row.host == "h0004.demo.test"
        assert row.method == "GET"
        assert row.start <= row.end
        assert abs(row.start - time.time()) < 60
    assert [row.status for row in rows][-1] == 304
    assert [row.conditional for row in rows] == [False] * 7 + [True]
    assert rows[-1].bytes_sent == 0
    assert rows[0].bytes_sent == len(demo.web.respond("h0004.demo.test", "/p/0.html", {}).body)


def test_head_and_method_not_allowed(demo, client):
    r = client.head("/p/1.html", headers=host_header(demo, 2))
    assert r.status_code == 200 and r.content == b""
    assert int(r.headers["content-length"]) > 10_000
    r = client.post("/p/1.html", headers=host_header(demo, 2), content=b"x=1")
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
    # the connection survived both: the body of the POST was consumed
    assert client.get("/", headers=host_header(demo, 2)).status_code == 200


def test_connection_close_pipelining_and_garbage(demo):
    host = f"h0001.demo.test:{demo.port}"
    pipelined = (f"GET /p/1.html HTTP/1.1\r\nHost: {host}\r\n\r\n"
                 f"GET /robots.txt HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").encode()
    data = raw_exchange(demo.port, pipelined)  # returns only because the server closed
    assert data.count(b"HTTP/1.1 200 OK\r\n") == 2
    assert data.endswith(demo.web.respond(host, "/robots.txt", {}).body)

    data = raw_exchange(demo.port, b"this is not http\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 400 ")
    data = raw_exchange(demo.port, b"GET / HTTP/1.1\r\n\r\n")  # no Host
    assert data.startswith(b"HTTP/1.1 400 ")
    data = raw_exchange(demo.port, b"GET / HTTP/1.0\r\nHost: h0001.demo.test\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200 ")  # HTTP/1.0 without keep-alive: closed after
    data = raw_exchange(demo.port, b"GET / HTTP/1.1\r\nX: " + b"a" * 40_000 + b"\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 431 ")


def test_set_day_changes_served_pages(demo, client):
    web = demo.web
    n = next(n for n in range(web.pages_per_host) if web.page_state(5, n, 30).versions > 0)
    before = client.get(f"/p/{n}.html", headers=host_header(demo, 5))
    demo.set_day(30)
    try:
        after = client.get(f"/p/{n}.html",
                           headers={**host_header(demo, 5), "If-None-Match": before.headers["etag"]})
        assert after.status_code == 200 and after.content != before.content
    finally:
        demo.set_day(0)


def test_access_log_parquet_round_trip(demo, client, tmp_path):
    demo.access_log.clear()
    client.get("/p/2.html?q=1", headers=host_header(demo, 6))
    client.get("/missing", headers=host_header(demo, 6))
    assert len(logged_rows(demo, "h0006.demo.test", 2)) == 2
    target = demo.access_log.write_parquet(tmp_path / "nested" / "access.parquet")
    table = pq.read_table(target)
    assert table.column_names[:8] == ["host", "path", "method", "start", "end", "status",
                                      "bytes_sent", "conditional"]
    rows = [r for r in table.to_pylist() if r["host"] == "h0006.demo.test"]
    assert [(r["host"], r["path"], r["status"]) for r in rows] == [
        ("h0006.demo.test", "/p/2.html?q=1", 200), ("h0006.demo.test", "/missing", 404)]
    assert all(r["start"] <= r["end"] for r in rows)
    assert AccessLog().to_arrow().num_rows == 0
    log = AccessLog()
    log.record("h0001.demo.test", "/", "GET", 1.0, 2.0, 200, 10, False)
    assert log.wait_for(1, timeout=0.1) and not log.wait_for(2, timeout=0.05)


def test_refuses_non_loopback_bind_address():
    with pytest.raises(ValueError):
        DemoWebServer(DemoWeb(), host="0.0.0.0")


def test_async_server_context_manager():
    async def scenario():
        async with DemoWebServer(DemoWeb(hosts=2, pages_per_host=5), port=0) as server:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /robots.txt HTTP/1.1\r\nHost: h0000.demo.test\r\nConnection: close\r\n\r\n")
            data = await reader.read()
            writer.close()
            return data, server.access_log.rows

    data, rows = asyncio.run(scenario())
    assert data.startswith(b"HTTP/1.1 200 OK\r\n") and b"User-agent: *" in data
    assert [(r.host, r.path, r.status) for r in rows] == [("h0000.demo.test", "/robots.txt", 200)]


def test_stop_closes_idle_and_half_sent_connections():
    for _ in range(3):  # the race this guards against is timing-dependent
        thread = DemoWebThread(DemoWeb(hosts=1, pages_per_host=5), port=0).start()
        idle = socket.create_connection(("127.0.0.1", thread.port), timeout=5)
        idle.sendall(b"GET / HTTP/1.1\r\nHost: h0000.demo.test\r\n\r\n")
        assert idle.recv(65536).startswith(b"HTTP/1.1 200 ")
        half = socket.create_connection(("127.0.0.1", thread.port), timeout=5)
        half.sendall(b"GET / HTTP/1.1\r\nHost: h0000.demo.test\r\n")  # head not finished
        started = time.monotonic()
        thread.stop()
        assert time.monotonic() - started < 1.5
        for sock in (idle, half):
            with sock:
                try:
                    while sock.recv(65536):
                        pass  # drain the rest of the first response, then EOF
                except ConnectionResetError:
                    pass  # also a close: the server dropped unread request bytes


def test_thread_reports_port_in_use(demo):
    with pytest.raises(OSError):
        DemoWebThread(DemoWeb(hosts=1), port=demo.port).start()


# ---- CLI ------------------------------------------------------------------------------

def test_cli_serve_answers_and_writes_access_log_on_sigterm(tmp_path):
    log_path = tmp_path / "logs" / "access.parquet"
    with DemoWebProcess(hosts=5, pages_per_host=20, seed=4, day=2, access_log=log_path) as server:
        assert server.ready_line == f"demoweb listening on 127.0.0.1:{server.port} hosts=5"
        with httpx.Client(trust_env=False, timeout=5) as c:
            r = c.get(f"http://{server.address}/p/3.html", headers={"Host": f"h0002.demo.test:{server.port}"})
        expected = DemoWeb(seed=4, hosts=5, pages_per_host=20, day=2, port=server.port)
        assert server.web.respond("h0002.demo.test", "/p/3.html", {}).body == r.content
        assert r.status_code == 200
        assert r.content == expected.respond("h0002.demo.test", "/p/3.html", {}).body
        rows = server.stop()
    assert server.returncode == 0
    assert pq.read_table(log_path).to_pylist() == rows
    assert [(r["host"], r["path"], r["status"]) for r in rows] == [("h0002.demo.test", "/p/3.html", 200)]


def test_process_start_failure_is_a_clear_error(demo):
    with pytest.raises(DemoWebStartError, match="already in use"):
        DemoWebProcess(port=demo.port, hosts=1).start()
    with pytest.raises(TypeError, match="host plug-ins are"):
        DemoWebProcess(hostiel=True)

def test_cli_port_in_use_is_a_clear_error(demo, demoweb_cli):
    done = demoweb_cli("serve", "--port", str(demo.port), check=False, timeout=20)
    assert done.returncode == 2
    assert "already in use" in done.stderr and done.stdout == ""


def test_cli_seeds(demoweb_cli):
    out = demoweb_cli("seeds", "--port", "8471", "--hosts", "3", "--per-host", "2").stdout
    assert out.splitlines() == [
        "http://h0000.demo.test:8471/", "http://h0000.demo.test:8471/p/0.html",
        "http://h0001.demo.test:8471/", "http://h0001.demo.test:8471/p/0.html",
        "http://h0002.demo.test:8471/", "http://h0002.demo.test:8471/p/0.html",
    ]
