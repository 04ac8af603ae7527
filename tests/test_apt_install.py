"""The Makefile's Debian installs (deploy/apt-install) wait while another install holds apt's
lock, saying so, and stop with a clear sentence when it is held too long. An apt-get stand-in
on PATH plays the lock holder: nothing is installed and apt's real lock is never touched."""

import os
import re
import subprocess
from pathlib import Path

from crawl_assets.crawler.settings import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "deploy" / "apt-install"
HELD = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)"


def stand_in(folder: Path, busy_calls: int, other_error: str = "") -> Path:
    """An apt-get whose first `busy_calls` calls find the lock held; each call is logged."""
    apt = folder / "apt-get"
    apt.write_text(f"""#!/bin/sh
echo "$*" >> {folder}/calls
n=$(wc -l < {folder}/calls)
if [ -n "{other_error}" ]; then echo "{other_error}" >&2; exit 100; fi
if [ "$n" -le {busy_calls} ]; then echo "{HELD}" >&2; exit 100; fi
exit 0
""")
    apt.chmod(0o755)
    return folder


def run(folder: Path, *packages: str, wait_s: str = "30"):
    env = os.environ | {"PATH": f"{folder}:{os.environ['PATH']}", "APT_LOCK_WAIT_S": wait_s, "APT_LOCK_POLL_S": "0.05"}
    return subprocess.run([str(SCRIPT), *packages], capture_output=True, text=True, env=env, timeout=60)


def calls(folder: Path) -> list[str]:
    return (folder / "calls").read_text().splitlines()


def test_a_held_lock_is_waited_for_and_said(tmp_path):
    done = run(stand_in(tmp_path, busy_calls=3), "chromium")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("another install holds apt's lock") == 1  # said once, not every poll
    assert "waiting for it" in done.stderr and "/var/lib/dpkg/lock-frontend" in done.stderr
    assert [c.split()[-2:] for c in calls(tmp_path)][-2:] == [["DPkg::Lock::Timeout=10", "update"], ["-y", "chromium"]]
    assert len(calls(tmp_path)) == 5 and all("DPkg::Lock::Timeout" in c for c in calls(tmp_path))


def test_a_lock_held_too_long_stops_the_install_with_a_sentence(tmp_path):
    done = run(stand_in(tmp_path, busy_calls=10_000), "postgresql", "redis-server", wait_s="1")
    assert done.returncode == 1
    assert re.search(r"gave up after 1 s: another install still holds apt's lock", done.stderr)
    assert "run the same make command again once it has finished" in done.stderr
    assert not any("install" in c for c in calls(tmp_path))  # never got past the update


def test_any_other_failure_is_shown_at_once(tmp_path):
    done = run(stand_in(tmp_path, busy_calls=0, other_error="E: Unable to locate package chromium"), "chromium")
    assert done.returncode == 1 and "Unable to locate package chromium" in done.stderr
    assert len(calls(tmp_path)) == 1 and "waiting" not in done.stderr


def test_every_install_of_the_makefile_goes_through_it():
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert "apt-get" not in re.sub(r"#.*", "", makefile)  # comments may name it
    assert makefile.count("$(APT_INSTALL) ") == 2 and "APT_INSTALL := deploy/apt-install" in makefile
