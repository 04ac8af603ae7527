"""README's Operations section gives the crash figures bench/crash_recovery.py measured: its
table of what each crash leaves and how long recovery takes states every time of the latest
crash_recovery line in bench/HISTORY.md, quotes that line, and names the load it ran at (the
table once held placeholders, and a figure copied by hand can drift from the run it came from)."""

import re

from crawl_assets.crawler.settings import PROJECT_ROOT

TIMES = ("uninterrupted_s", "ctrl_c_exit_s", "kill_command_gone_s", "kill_all_serving_s", "kill_all_run_failed_s",
         "kill_all_day_done_s", "kill_run_failed_s")


def latest_crash_recovery_line() -> str:
    lines = re.findall(r"^crash_recovery (?:\w+=\S+ ?)+$", (PROJECT_ROOT / "bench" / "HISTORY.md").read_text(),
                       flags=re.MULTILINE)
    assert lines, "bench/HISTORY.md holds no crash_recovery line"
    return lines[-1].strip()


def operations_section() -> str:
    readme = (PROJECT_ROOT / "README.md").read_text()
    return readme.split("\n## Operations\n", 1)[1].split("\n## ", 1)[0]


def test_the_crash_table_states_the_latest_measured_figures():
    line = latest_crash_recovery_line()
    figures = dict(field.split("=", 1) for field in line.split()[1:])
    section = operations_section()
    table = "\n".join(row for row in section.splitlines() if row.lstrip().startswith("|"))
    assert line in section  # quoted whole
    missing = [key for key in TIMES if f"{figures[key]} s" not in table]
    assert not missing, [(key, figures[key]) for key in missing]
    assert f"load {figures['load']}" in section
    assert not re.search(r"\bF_[A-Z_]+\b", section)  # no placeholder left
