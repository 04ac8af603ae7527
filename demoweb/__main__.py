"""Command line for the demo web.

  python -m demoweb serve --port 8471 --hosts 50 --pages-per-host 300 \
      --seed 1 --day 0 --access-log data/demoweb/access.parquet
  python -m demoweb seeds --port 8471 --hosts 50 [--per-host 1]
  python -m demoweb truth --day 90 --hosts 50 [--output truth.csv|truth.parquet]

`truth` exports every page's true change rate, versions so far and last change at --day
(CSV on stdout by default; columns in ordinary/truth.py).

--day is the time the web is seen at, in days since 2026-01-01 (fractions allowed).
--validators honest makes every host send honest ETag/Last-Modified (default: mixed, where
some hosts send none and some a lying Last-Modified; see ordinary/host_traits.py).

`serve` prints one 'demoweb listening on 127.0.0.1:PORT hosts=N' line once it accepts
connections (scripts wait for it), runs until SIGTERM/SIGINT, then writes the access log.

--hostile (both commands) adds the hostile hosts (slow-drip.demo.test, gzip-bomb.demo.test,
...; see special_hosts/hostile_hosts.py): `serve` then ends its line with ' hostile=16', and `seeds` prints their
home pages after the regular seeds.

--traps (both commands) adds the crawler-trap hosts (calendar.demo.test, session-ids.demo.test,
facets.demo.test, deep-paths.demo.test, random-links.demo.test; see special_hosts/trap_hosts.py): `serve` then
ends its line with ' traps=5' (after ' hostile=16' when both are given), and `seeds` prints
their home pages last.

--near-duplicates (both commands) adds the labelled near-duplicate article hosts
(articles.demo.test, syndication.demo.test, www.mirror.demo.test, mirror.demo.test,
template.demo.test, tags.demo.test; see special_hosts/neardup_hosts.py): `serve` then ends its line with ' neardup=6' (after hostile and traps), and
`seeds` prints their home pages after those.

--politeness (both commands) adds the politeness test hosts (cross-redirect.demo.test,
redirect-target.demo.test, robots-elsewhere.demo.test, ...; see special_hosts/politeness_hosts.py): `serve`
then ends its line with ' politeness=12' (after those), and `seeds` prints their home pages after those.

--page-signals and --frames (both commands) add the page-signal host (signals.demo.test, see
special_hosts/signal_hosts.py) and the frame-linked host (frames.demo.test, see
special_hosts/frame_hosts.py): ' page_signals=1' and ' frames=1' end the serve line, in that order.

--spa (both commands) adds the single-page-application hosts (spa-json.demo.test,
spa-router.demo.test, spa-more.demo.test; see special_hosts/spa_hosts.py), whose pages and links
exist only after their scripts run: ' spa=3' ends the serve line.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import signal
import sys

from .ordinary.host_traits import VALIDATOR_MODES
from .ordinary.truth import write_truth
from .process import READY_PREFIX
from .server import BIND_ADDRESS, DemoWebServer
from .special_hosts.plugins import PLUGINS
from .web import DemoWeb


def _add_web_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8471, help="0 picks a free port (serve only)")
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--pages-per-host", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--day", type=float, default=0.0, help="days since 2026-01-01")
    parser.add_argument("--validators", choices=VALIDATOR_MODES, default="mixed")
    parser.add_argument("--domain", default="demo.test")
    for plugin in PLUGINS:
        parser.add_argument(plugin.flag, action="store_true", help=plugin.help)


def _web(args: argparse.Namespace) -> DemoWeb:
    return DemoWeb(seed=args.seed, hosts=args.hosts, pages_per_host=args.pages_per_host,
                   day=args.day, port=args.port, domain=args.domain, validators=args.validators,
                   **{p.option: getattr(args, p.option) for p in PLUGINS})


async def _serve(args: argparse.Namespace) -> int:
    server = DemoWebServer(_web(args), port=args.port, idle_timeout=args.idle_timeout)
    try:
        await server.start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            print(f"demoweb: port {args.port} on {BIND_ADDRESS} is already in use", file=sys.stderr)
            return 2
        raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    counts = "".join(f" {p.summary_key}={len(homes)}" for p in PLUGINS
                     if (homes := p.homes(server.web)))
    print(f"{READY_PREFIX}{BIND_ADDRESS}:{server.port} hosts={server.web.hosts}{counts}", flush=True)
    await stop.wait()
    await server.stop()
    if args.access_log:
        path = server.access_log.write_parquet(args.access_log)
        print(f"demoweb: wrote {len(server.access_log)} requests to {path}", file=sys.stderr)
    return 0


def _seeds(args: argparse.Namespace) -> int:
    web = _web(args)
    for url in web.seed_urls(per_host=args.per_host) + web.plugin_homes():
        print(url)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demoweb",
                                     description="Deterministic synthetic web on 127.0.0.1.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the demo web until SIGTERM/SIGINT")
    _add_web_options(serve)
    serve.add_argument("--access-log", help="Parquet file written on shutdown")
    serve.add_argument("--idle-timeout", type=float, default=30.0)
    seeds = commands.add_parser("seeds", help="print seed URLs, one per line")
    _add_web_options(seeds)
    seeds.add_argument("--per-host", type=int, default=1)
    truth = commands.add_parser("truth", help="export every page's true change rate and history")
    _add_web_options(truth)
    truth.add_argument("--output", help="a .csv or .parquet file (default: CSV on stdout)")
    truth.add_argument("--format", choices=("csv", "parquet"))
    args = parser.parse_args(argv)
    if args.day < 0:
        parser.error(f"--day must be >= 0, not {args.day}")
    if args.command == "serve":
        return asyncio.run(_serve(args))
    if args.command == "truth":
        try:
            count = write_truth(_web(args), args.output, args.format)
        except ValueError as exc:
            parser.error(str(exc))
        if args.output:
            print(f"demoweb: wrote {count} pages to {args.output}", file=sys.stderr)
        return 0
    return _seeds(args)


if __name__ == "__main__":
    sys.exit(main())
