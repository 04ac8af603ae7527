"""Mutation testing of the modules where the crawler's rules live, one module at a time, each
against the narrowest test files that cover it (`make mutants`, README's Development section).

    python tests/mutation/mutants.py [MODULE ...]

MODULE: a path such as crawl_assets/crawler/fetching/politeness.py, or PATH::NAME,NAME to
mutate only those functions, classes or methods (CLASS.METHOD) of it; without any, RULE_MODULES (of some, RULE_PARTS).
For each module mutmut (3.x) runs in a scratch folder of its own, .mutants/<module>/ (git
ignores it): only that module is mutated, and only its test files run (TESTS below; a module
not listed there gets the test files that import it). mutmut first records which of those
tests call each function, then runs, for each mutant, only the tests that reach it (for a
function its tests run in a child process only, those IN_CHILD_PROCESSES names). Each
module's score (killed of all mutants: a timeout counts as killed, a mutant no test reaches as
a survivor) and its surviving mutants, with their diffs, are printed and kept in
.mutants/<module>/survivors.txt. A module whose source or test files changed since its last
run starts over; one cut short resumes (delete its folder to start it over whatever changed).
MUTANT_JOBS (default 1) mutants run at a time.
"""

from __future__ import annotations

import json
import os
import re
from fnmatch import fnmatch
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRATCH = ROOT / ".mutants"
BIN = Path(sys.executable).parent
# What the tests read besides the package (mutmut copies tests/ and pyproject.toml itself);
# of data/, the blocklist alone (a crawl's outputs may lie beside it).
ALSO_COPY = ["demoweb", "sensors", "settings", "recrawl.toml", "dagster.yaml", "workspace.yaml", "data/blocklist.txt"]
KILLED = {"killed", "timeout"}

# The modules where the rules live, and the test files that pin each (the narrowest set that
# covers it: end-to-end tests would cover more, at minutes a mutant); quick ones first.
_URL = "tests/crawler/url_policy/"
_FETCH = "tests/crawler/fetching/"
_STATS = "tests/pipeline/change_stats/"
_PRIO = "tests/pipeline/priorities/"
_CONTENT = "tests/crawler/content/"
_ARCHIVE = "tests/crawler/archive/"
TESTS: dict[str, list[str]] = {
    "crawl_assets/crawler/rendering/render_decision.py": ["tests/crawler/rendering/test_render_decision.py"],
    "crawl_assets/defs/run_launcher.py": ["tests/defs/test_run_launcher.py"],
    # (not test_supervisor.py: it runs the module as `python -m`, as __main__, where no mutant applies)
    "crawl_assets/cli/supervisor.py": ["tests/cli/test_daemon_liveness.py", "tests/cli/test_supervise.py"],
    "crawl_assets/cli/launcher.py": ["tests/cli/test_daemon_liveness.py"],
    "crawl_assets/defs/day_triggers.py": ["tests/defs/test_day_triggers.py"],
    "crawl_assets/defs/run_status.py": ["tests/defs/test_run_status.py"],
    "crawl_assets/defs/run_policies.py": ["tests/orchestration/test_run_policies.py"],
    "crawl_assets/crawler/fetching/politeness.py": [_FETCH + "test_politeness.py", _FETCH + "test_visit_state.py"],
    "crawl_assets/crawler/fetching/workbench.py": [_FETCH + "test_workbench.py"],
    "crawl_assets/crawler/fetching/answer_policy.py": [_FETCH + "test_answer_policy.py"],
    "crawl_assets/pipeline/change_stats/host_events.py": [_STATS + "test_host_events.py"],
    "crawl_assets/pipeline/change_stats/change_rate_estimators.py": [_STATS + "test_change_rate_estimators.py"],
    "crawl_assets/crawler/url_policy/sharding.py": [_URL + "test_sharding.py"],
    "crawl_assets/crawler/url_policy/addresses.py": [_URL + "test_addresses.py"],
    "crawl_assets/pipeline/priorities/day_plan.py": [_PRIO + "test_day_plan.py"],
    "crawl_assets/pipeline/priorities/radix_selection.py": [_PRIO + "test_radix_selection.py"],
    # (and the crawl's plan over parts: the offers, head_keys, offer_of)
    "crawl_assets/pipeline/priorities/url_schedule.py": [_PRIO + "test_url_schedule.py", _PRIO + "test_plan_offers.py",
                                                         _PRIO + "test_shard_priorities.py"],
    "crawl_assets/pipeline/priorities/refresh_allocation.py": [_PRIO + "test_refresh_allocation.py"],
    "crawl_assets/pipeline/change_stats/change_history.py": [_STATS + "test_change_history.py"],
    "crawl_assets/crawler/url_policy/trap_defences.py": [_URL + "test_trap_defences.py"],
    "crawl_assets/crawler/url_policy/robots.py": [_URL + "test_robots.py"],
    "crawl_assets/crawler/url_policy/urls.py": [_URL + "test_urls.py"],
    "crawl_assets/crawler/url_policy/url_bloom.py": [_URL + "test_url_bloom.py", _FETCH + "test_admission.py"],
    "crawl_assets/crawler/fetching/admission.py": [_FETCH + "test_admission.py"],
    "crawl_assets/crawler/content/volatile_parts.py": [_CONTENT + "test_volatile_parts.py", _CONTENT + "test_bytes_kernel.py"],
    "crawl_assets/crawler/content/script_signals.py": [_CONTENT + "test_script_signals.py"],
    "crawl_assets/crawler/content/links.py": [_CONTENT + "test_links.py", _CONTENT + "test_link_extraction.py",
                                              _CONTENT + "test_script_signals.py"],  # (the <noscript> texts)
    "crawl_assets/pipeline/priorities/host_delays.py": [_PRIO + "test_host_delays.py"],
    "crawl_assets/pipeline/priorities/plan_offers.py": [_PRIO + "test_plan_offers.py"],
    "crawl_assets/pipeline/change_stats/pool_sums.py": [_STATS + "test_pool_sums.py"],
    "crawl_assets/crawler/url_policy/depth_limit.py": [_URL + "test_depth_limit.py", _FETCH + "test_admission.py"],
    "crawl_assets/crawler/url_policy/host_patterns.py": [_URL + "test_host_patterns.py", _URL + "test_addresses.py"],
    "crawl_assets/crawler/url_policy/https_hosts.py": [_URL + "test_https_hosts.py", _FETCH + "test_admission.py"],
    "crawl_assets/crawler/url_policy/url_aliases.py": [_URL + "test_url_alias_folding.py", _FETCH + "test_admission.py"],
    "crawl_assets/crawler/url_policy/url_bytes.py": [_URL + "test_url_bytes.py"],  # (test_trap_defences.py: seconds a mutant)
    "crawl_assets/pipeline/recrawl_inputs.py": ["tests/pipeline/test_recrawl_inputs.py"],
    "crawl_assets/crawler/fetching/answer_records.py": [_FETCH + "test_answer_records.py"],
    "crawl_assets/crawler/content/body.py": [_FETCH + "test_answer_records.py", _CONTENT + "test_change_feeds.py",
                                             _CONTENT + "test_script_signals.py", _CONTENT + "test_volatile_parts.py"],
    "crawl_assets/crawler/content/link_sources.py": [_CONTENT + "test_links.py", _CONTENT + "test_link_extraction.py"],
    "crawl_assets/crawler/fetching/clients.py": [_FETCH + "test_http_exchange.py"],
    "crawl_assets/crawler/archive/warc.py": [_ARCHIVE + "test_warc.py", _ARCHIVE + "test_warc_records.py",
                                             _ARCHIVE + "test_warc_spec.py", _ARCHIVE + "test_warc_reading.py"],
    "crawl_assets/crawler/content/simhash.py": [_CONTENT + "test_simhash.py", _CONTENT + "test_simhash_kernel.py"],
    "crawl_assets/pipeline/registry_step.py": ["tests/pipeline/test_registry_step.py"],
}
# Of these modules, the functions (or classes) that hold the rules: the rest of each runs in
# processes of its own (dagster dev under the supervisor, the webserver's GraphQL), pinned by
# the command tests (tests/cli/test_commands.py, minutes each), where mutmut cannot follow;
# or, for recrawl_inputs.py, by the priorities' and trap tests (end to end, minutes a mutant).
RULE_PARTS: dict[str, list[str]] = {
    "crawl_assets/cli/launcher.py": ["open_instance", "daemon_running", "DaemonWatch"],
    "crawl_assets/pipeline/recrawl_inputs.py": ["known_urls"],
}
# Functions that their tests run in a child process alone (forked, or a command the test starts):
# mutmut records which tests reach a function in the test's own process, so it finds none and
# runs none of their mutants ("no tests"); the test files named here are given to it as reaching
# them, and those mutants are run (the child inherits the mutant chosen: a fork its memory, a
# command its environment and the mutated copy of the package, its working directory; but a
# module run as `python -m` is __main__, whose functions no mutant replaces).
IN_CHILD_PROCESSES: dict[str, dict[str, list[str]]] = {
    "crawl_assets/cli/supervisor.py": {
        part: ["tests/cli/test_supervise.py"] for part in
        ["supervise", "runs_a_daemon", "die_with_parent", "stoppable_child", "_prctl", "children", "reap", "end_stragglers"]},
    # Run in a forked child only (os.register_at_fork).
    "crawl_assets/crawler/archive/warc.py": {"_fresh_pool_in_child": [_ARCHIVE + "test_warc_records.py"]},
}
# Modules whose code signals processes it finds in /proc (the supervisor's stragglers): their
# mutants run in a PID namespace of their own (unshare, as root), so a mutant that takes
# another process for its own can signal none outside the run. (On 2026-12-08 one that took
# every process for a child killed every process on the machine; that test is no longer mutated.)
OWN_PID_NAMESPACE = {"crawl_assets/cli/supervisor.py"}
RULE_MODULES = list(TESTS)  # the run without MODULES (RULE_PARTS of those above)
# Modules whose tests open DuckDB in the test process: a mutant's process forked from the one
# that ran them (mutmut's default) inherits DuckDB's threads without them and dies of SIGSEGV
# (every mutant of day_plan.py did), so mutmut forks these from a server that never ran a test.
FORKSERVER = {"crawl_assets/pipeline/priorities/day_plan.py", "crawl_assets/pipeline/priorities/url_schedule.py",
              "crawl_assets/pipeline/priorities/refresh_allocation.py", "crawl_assets/pipeline/change_stats/change_history.py",
              "crawl_assets/pipeline/change_stats/host_events.py", "crawl_assets/pipeline/priorities/host_delays.py",
              "crawl_assets/pipeline/change_stats/pool_sums.py", "crawl_assets/pipeline/recrawl_inputs.py",
              "crawl_assets/pipeline/registry_step.py",
              # lru_caches a forked process inherits warm, so a mutant behind one is never run:
              "crawl_assets/crawler/url_policy/urls.py", "crawl_assets/crawler/url_policy/sharding.py",
              "crawl_assets/crawler/content/links.py"}  # (its hrefs resolved once per directory: _SHARED)


def tests_for(module: str) -> list[str]:
    """TESTS' files for the module, else every test file that imports it."""
    if module in TESTS:
        return TESTS[module]
    dotted = module.removesuffix(".py").replace("/", ".")
    name = re.compile(rf"^\s*(from {re.escape(dotted)} import|import {re.escape(dotted)}\b)", re.M)
    found = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py") if name.search(p.read_text()))
    if not found:
        sys.exit(f"no test file imports {dotted}: name the module's tests in TESTS ({Path(__file__).relative_to(ROOT)})")
    return found


def scratch_for(module: str, tests: list[str]) -> Path:
    """The module's scratch folder: links to the project's files, and a pyproject.toml whose
    [tool.mutmut] names the module and its tests (pytest's own settings kept)."""
    folder = SCRATCH / module.removesuffix(".py").replace("/", ".")
    last_run = folder / "run.log"
    if last_run.exists() and max(os.path.getmtime(ROOT / f) for f in [module, *tests]) > last_run.stat().st_mtime:
        shutil.rmtree(folder)  # the module or its tests changed since: its mutants and results are stale
    folder.mkdir(parents=True, exist_ok=True)
    for name in ["crawl_assets", "tests", *ALSO_COPY]:
        link = folder / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(ROOT / name)
    also_copy = sorted({name.split("/")[0] for name in ALSO_COPY})  # folders copied whole: data/ holds the link alone
    settings = {
        "source_paths": ["crawl_assets"], "only_mutate": [module], "also_copy": also_copy,
        "pytest_add_cli_args_test_selection": tests, "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q"],
        "process_isolation": "forkserver" if module in FORKSERVER else "fork",
    }
    lines = [f"{key} = {toml_value(value)}" for key, value in settings.items()]
    (folder / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + "\n[tool.mutmut]\n" + "\n".join(lines) + "\n")
    return folder


def toml_value(value) -> str:
    return "[" + ", ".join(f'"{item}"' for item in value) + "]" if isinstance(value, list) else f'"{value}"'


def mutmut(folder: Path, *args: str, namespace: bool = False, **options) -> subprocess.CompletedProcess:
    """mutmut in the module's folder; namespace: in a PID namespace of its own (its /proc too)."""
    # (a shell its first process, which takes the orphans: mutmut's os.wait() wants its own children only)
    isolated = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", '"$0" "$@"; exit $?'] if namespace else []
    return subprocess.run([*isolated, str(BIN / "mutmut"), *args], cwd=folder, text=True, **options)


def check_pid_namespace(module: str) -> None:
    probe = subprocess.run(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "true"], capture_output=True, text=True) \
        if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        sys.exit(f"{module}: its mutants must run in a PID namespace of their own (they signal processes they find), "
                 f"and `unshare --pid --fork --mount-proc` is not available here ({probe.stderr.strip() if probe else 'no unshare'}): "
                 "run it as root on Linux, or leave it out of MODULES")


def mutant_globs(module: str, parts: list[str]) -> list[str]:
    """mutmut's names of the mutants of `parts` (functions: x_NAME, methods: xǁCLASSǁNAME): a
    function, a class (all its methods) or one method (CLASS.METHOD)."""
    dotted = module.removesuffix(".py").replace("/", ".")
    return [pattern for part in parts for pattern in (
        [f"{dotted}.xǁ{part.replace('.', 'ǁ')}__mutmut_*"] if "." in part
        else [f"{dotted}.x_{part}__mutmut_*", f"{dotted}.xǁ{part}ǁ*"])]


def give_tests(folder: Path, module: str, reached: dict[str, list[str]]) -> None:
    """Record in mutmut's stats (written by its run) that the tests of the files named reach
    each function or method (CLASS.METHOD) of `reached`."""
    path = folder / "mutants" / "mutmut-stats.json"
    stats = json.loads(path.read_text())
    dotted = module.removesuffix(".py").replace("/", ".")
    for part, files in reached.items():
        mangled = f"{dotted}.xǁ{part.replace('.', 'ǁ')}" if "." in part else f"{dotted}.x_{part}"
        tests = [test for test in stats["duration_by_test"] if test.split("::")[0] in files]
        if not tests:
            sys.exit(f"{module}: none of {', '.join(files)} ran (IN_CHILD_PROCESSES names test files of TESTS)")
        stats["tests_by_mangled_function_name"][mangled] = sorted({*stats["tests_by_mangled_function_name"].get(mangled, []), *tests})
    path.write_text(json.dumps(stats, indent=4))


def run_module(target: str) -> tuple[int, int, list[str]]:
    """Mutate `target` (a module, or MODULE::NAME,...) and run its tests on each mutant:
    (killed, mutants, survivors' diffs)."""
    module, _, named = target.partition("::")
    parts = named.split(",") if named else []
    if not (ROOT / module).is_file():
        sys.exit(f"{module}: no such file (give modules as paths from the project's root)")
    tests = tests_for(module)
    folder = scratch_for(module, tests)
    only = f" (only {', '.join(parts)})" if parts else ""
    print(f"== {module}{only}: mutmut on {len(tests)} test file(s): {' '.join(tests)}", flush=True)
    jobs = os.environ.get("MUTANT_JOBS", "1")
    globs = mutant_globs(module, parts)
    isolated = module in OWN_PID_NAMESPACE
    if isolated:
        check_pid_namespace(module)
    with open(folder / "run.log", "w") as log:
        ran = mutmut(folder, "run", "--max-children", jobs, *globs, namespace=isolated, stdout=log, stderr=subprocess.STDOUT)
    if ran.returncode == 0 and (in_child := [part for part in IN_CHILD_PROCESSES.get(module, {}) if not parts or part in parts]):
        give_tests(folder, module, {part: IN_CHILD_PROCESSES[module][part] for part in in_child})
        with open(folder / "run.log", "a") as log:  # mutants named are run again whatever their result
            ran = mutmut(folder, "run", "--max-children", jobs, *mutant_globs(module, in_child), namespace=isolated,
                         stdout=log, stderr=subprocess.STDOUT)
    if ran.returncode != 0:
        sys.exit(f"{module}: mutmut stopped (exit {ran.returncode}): see {folder / 'run.log'}")
    listed = mutmut(folder, "results", "--all", "true", capture_output=True).stdout
    status = dict(line.strip().rsplit(": ", 1) for line in listed.splitlines() if ": " in line)
    prefix = module.removesuffix(".py").replace("/", ".") + "."
    status = {name: state for name, state in status.items() if name.startswith(prefix)
              and (not globs or any(fnmatch(name, glob) for glob in globs))}
    survivors = sorted(name for name, state in status.items() if state not in KILLED)
    # A mutant no test reaches is named with its function (`mutmut show NAME` in the folder
    # gives its diff); every other survivor is shown.
    unreached: dict[str, int] = {}
    for name in survivors:
        if status[name] == "no tests":
            mangled = name.removeprefix(prefix).rsplit("__mutmut_", 1)[0]
            function = mangled.removeprefix("x_") if mangled.startswith("x_") else mangled.removeprefix("xǁ").replace("ǁ", ".")
            unreached[function] = unreached.get(function, 0) + 1
    diffs = [mutmut(folder, "show", name, capture_output=True).stdout.strip() + f"\n({status[name]})"
             for name in survivors if status[name] != "no tests"]
    diffs += [f"# no test reaches {function}: {count} mutant(s)" for function, count in sorted(unreached.items())]
    (folder / "survivors.txt").write_text("\n\n".join(diffs) + "\n")
    killed = len(status) - len(survivors)
    return killed, len(status), diffs


def main(modules: list[str]) -> int:
    if shutil.which("mutmut", path=str(BIN)) is None:
        sys.exit("mutmut is missing from .venv: `make setup` installs the dev extra")
    scores = []
    rules = [module + (f"::{','.join(RULE_PARTS[module])}" if module in RULE_PARTS else "") for module in RULE_MODULES]
    for module in modules or rules:
        killed, total, diffs = run_module(module)
        for diff in diffs:
            print(diff, end="\n\n")
        score = f"{module}: {killed}/{total} mutants killed ({100 * killed / total:.0f} %), {total - killed} survived" \
            if total else f"{module}: no mutant"
        print(score, flush=True)
        scores.append(score)
    print("\n".join(["", "mutation scores (survivors: .mutants/<module>/survivors.txt):", *scores]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
