"""fetch_runner.py started ahead of time, for a crash test that must restart a batch quickly:

    python tests/crash/waiting_runner.py SETTINGS_JSON DATE SHARD

It does its imports (the seconds a Python restart takes), prints "ready", waits for a line on
stdin and only then runs fetch_runner.main: the partition, its checkpoint included, is read
after that line, so a batch killed meanwhile is resumed as by a fresh process."""

import sys

import fetch_runner

READY = "ready"


if __name__ == "__main__":
    print(READY, flush=True)
    if not sys.stdin.readline():
        sys.exit(2)  # the test went away
    sys.exit(fetch_runner.main(sys.argv[1:]))
