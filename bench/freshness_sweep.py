"""freshness.py over a grid of webs the scheduler was not tuned on (issue 35: "your work is also
run against webs you do not see").

    .venv/bin/python bench/freshness_sweep.py [--seeds 7,8,9,10,11] [--budget-shares 0.1,0.05]
        [--scenarios poisson,bursty] [--starts cold,warm] [--urls 5000] [--hosts 50] [--days 40]
        [--jobs 1] [--quick] [--markdown FILE]

Each web is one run of bench/freshness.py (a process of its own, this checkout's: freshness.py
puts its own checkout first on sys.path, so a copy of this script in a worktree of an older
commit measures that commit's rule), at a smaller size than its default so the whole grid fits
in about 20-25 CPU minutes: scenario x start x seed x budget share (40 webs by default; --quick:
seeds 7 and 8 at a tenth of the pages a day, 8 webs). Each web's goal is issue 35's:
cold start gap_closed >= 0.8 and days_to_cover <= ceil(urls / budget_per_day) + 3; warm
Poisson gap_closed >= 1.0, warm bursty >= 0.9.

One line a web as it ends (`web scenario= start= seed= budget_share= ...`, `goal=ok|MISS` and
what was missed), then, last, the summary (bench/README.md lists its keys):
freshness_sweep webs= failed= urls= hosts= days= min_gap_closed_cold= mean_gap_closed_cold=
min_gap_closed_warm_poisson= min_gap_closed_warm_bursty= mean_gap_closed_warm= below_uniform=
below_proportional= below_goal= cover_goal_missed= max_days_over_cover_goal= worst_cold=
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRESHNESS = ROOT / "bench" / "freshness.py"
sys.path.insert(0, str(ROOT))

from bench.measures import load_line  # noqa: E402

SEEDS = (7, 8, 9, 10, 11)
QUICK_SEEDS = (7, 8)
BUDGET_SHARES = (0.1, 0.05)
SCENARIOS = ("poisson", "bursty")
STARTS = ("cold", "warm")
# issue 35's goals, one place: gap_closed a web must reach, by start and scenario
GAP_GOAL = {("cold", "poisson"): 0.8, ("cold", "bursty"): 0.8, ("warm", "poisson"): 1.0, ("warm", "bursty"): 0.9}
COVER_SLACK_DAYS = 3  # days_to_cover <= ceil(urls / budget_per_day) + this


@dataclass(frozen=True)
class Cell:
    """One web of the grid."""

    scenario: str
    start: str
    seed: int
    budget_share: float

    def args(self, urls: int, hosts: int, days: int) -> list[str]:
        return ["--scenario", self.scenario, "--seed", str(self.seed), "--budget-share", str(self.budget_share),
                "--urls", str(urls), "--hosts", str(hosts), "--days", str(days)] + \
            (["--cold-start"] if self.start == "cold" else [])

    @property
    def name(self) -> str:
        return f"{self.scenario}/{self.start}/s{self.seed}/b{self.budget_share:g}"


@dataclass(frozen=True)
class Result:
    cell: Cell
    keys: dict[str, float]  # freshness.py's last line (empty when the run failed)
    seconds: float
    error: str = ""

    @property
    def gap_closed(self) -> float:
        return self.keys["gap_closed"]

    @property
    def cover_goal(self) -> int:
        """The last day by which 99 % of the day-0 pages should have been fetched once."""
        return math.ceil(self.keys["urls"] / self.keys["budget_per_day"]) + COVER_SLACK_DAYS

    @property
    def days_over_cover_goal(self) -> float:
        """days_to_cover less its goal (negative: days to spare; inf: not covered in the run)."""
        days = self.keys["days_to_cover"]
        return math.inf if math.isnan(days) else days - self.cover_goal

    def misses(self) -> list[str]:
        """Which of the web's goals it missed (none: it met them all)."""
        missed = []
        goal = GAP_GOAL[(self.cell.start, self.cell.scenario)]
        if self.gap_closed < goal:
            missed.append(f"gap_closed<{goal:g}")
        if self.cell.start == "cold" and self.days_over_cover_goal > 0:
            missed.append(f"days_to_cover>{self.cover_goal}")
        return missed

    @property
    def below_uniform(self) -> bool:
        return self.keys["adaptive"] < self.keys["uniform"]

    @property
    def below_proportional(self) -> bool:
        return self.keys["adaptive"] < self.keys["proportional"]


def grid(seeds, budget_shares, scenarios=SCENARIOS, starts=STARTS) -> list[Cell]:
    """Every combination, cold before warm (the longer runs first, for --jobs)."""
    return [Cell(scenario, start, seed, share) for start in starts for scenario in scenarios
            for share in budget_shares for seed in seeds]


def parse_last_line(line: str) -> dict[str, float]:
    """freshness.py's machine-readable last line: its key=value pairs as numbers (the
    scenario's name is left out)."""
    words = line.split()
    if not words or words[0] != "freshness":
        raise ValueError(f"not freshness.py's last line: {line!r}")
    keys = {}
    for word in words[1:]:
        key, _, value = word.partition("=")
        if key != "scenario":
            keys[key] = float(value)
    return keys


def run_web(cell: Cell, urls: int, hosts: int, days: int, python: str = sys.executable) -> Result:
    """One run of freshness.py on the cell's web, in a process of its own."""
    started = time.perf_counter()
    done = subprocess.run([python, str(FRESHNESS), *cell.args(urls, hosts, days)], capture_output=True,
                          text=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Result(cell, {}, seconds, error=f"exit {done.returncode}: {tail}")
    try:
        return Result(cell, parse_last_line(lines[-1]), seconds)
    except ValueError as e:
        return Result(cell, {}, seconds, error=str(e))


def done_webs(log: Path) -> dict[Cell, Result]:
    """The webs an earlier sweep's output finished (its `web` lines), to be kept, not rerun;
    a web that failed there is run again."""
    done = {}
    for line in log.read_text().splitlines():
        words = dict(w.split("=", 1) for w in line.split()[1:] if "=" in w) if line.startswith("web ") else {}
        if not words or "failed" in words:
            continue
        cell = Cell(words["scenario"], words["start"], int(words["seed"]), float(words["budget_share"]))
        keys = {k: float(words[k]) for k in ("urls", "budget_per_day", "gap_closed", "days_to_cover", "coverage_d7",
                                             "adaptive", "uniform", "proportional", "optimal") if k in words}
        done[cell] = Result(cell, keys, float(words["seconds"]))
    return done


def web_line(r: Result) -> str:
    c = r.cell
    head = f"web scenario={c.scenario} start={c.start} seed={c.seed} budget_share={c.budget_share:g}"
    if r.error:
        return f"{head} failed=1 error={r.error!r}"
    k = r.keys
    cover = (f" days_to_cover={k['days_to_cover']:.0f} cover_goal={r.cover_goal} coverage_d7={k['coverage_d7']:.3f}"
             if c.start == "cold" else "")
    misses = r.misses()
    flags = (" below_uniform=1" if r.below_uniform else "") + (" below_proportional=1" if r.below_proportional else "")
    return (f"{head} urls={k['urls']:.0f} budget_per_day={k['budget_per_day']:.0f} gap_closed={k['gap_closed']:.3f}"
            f"{cover} adaptive={k['adaptive']:.4f} uniform={k['uniform']:.4f} proportional={k['proportional']:.4f} "
            f"optimal={k['optimal']:.4f} goal={'MISS:' + ','.join(misses) if misses else 'ok'}{flags} "
            f"seconds={r.seconds:.0f}")


def summary(results: list[Result], urls: int, hosts: int, days: int) -> str:
    """The sweep's last line (a key is nan where the grid has no such web)."""
    ok = [r for r in results if not r.error]

    def gaps(start, scenario=None):
        return [r.gap_closed for r in ok if r.cell.start == start and scenario in (None, r.cell.scenario)]

    def low(values):
        return f"{min(values):.3f}" if values else "nan"

    def mean(values):
        return f"{sum(values) / len(values):.3f}" if values else "nan"

    cold = [r for r in ok if r.cell.start == "cold"]
    over = max((r.days_over_cover_goal for r in cold), default=math.nan)
    worst = min(cold, key=lambda r: r.gap_closed).cell.name if cold else "none"
    return (f"freshness_sweep webs={len(results)} failed={len(results) - len(ok)} urls={urls} hosts={hosts} "
            f"days={days} min_gap_closed_cold={low(gaps('cold'))} mean_gap_closed_cold={mean(gaps('cold'))} "
            f"min_gap_closed_warm_poisson={low(gaps('warm', 'poisson'))} "
            f"min_gap_closed_warm_bursty={low(gaps('warm', 'bursty'))} mean_gap_closed_warm={mean(gaps('warm'))} "
            f"below_uniform={sum(r.below_uniform for r in ok)} "
            f"below_proportional={sum(r.below_proportional for r in ok)} "
            f"below_goal={sum(bool(r.misses()) for r in ok)} "
            f"cover_goal_missed={sum(r.days_over_cover_goal > 0 for r in cold)} "
            f"max_days_over_cover_goal={over:g} worst_cold={worst}")


def markdown(results: list[Result]) -> str:
    """The per-web table, in grid order."""
    rows = ["| scenario | start | seed | budget share | gap_closed | days_to_cover (goal) | coverage_d7 | "
            "adaptive | uniform | proportional | optimal | goal |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        c, k = r.cell, r.keys
        if r.error:
            rows.append(f"| {c.scenario} | {c.start} | {c.seed} | {c.budget_share:g} | failed: {r.error} |"
                        + " |" * 7)
            continue
        cover = (f"{k['days_to_cover']:.0f} ({r.cover_goal}) | {k['coverage_d7']:.3f}" if c.start == "cold"
                 else "- | -")
        misses = r.misses()
        flags = ", below uniform" * r.below_uniform + ", below proportional" * r.below_proportional
        rows.append(f"| {c.scenario} | {c.start} | {c.seed} | {c.budget_share:g} | {k['gap_closed']:.3f} | {cover} | "
                    f"{k['adaptive']:.4f} | {k['uniform']:.4f} | {k['proportional']:.4f} | {k['optimal']:.4f} | "
                    f"{'**MISS** ' + ', '.join(misses) if misses else 'ok'}{flags} |")
    return "\n".join(rows) + "\n"


def number_list(kind):
    def parse(text: str):
        try:
            values = tuple(kind(v) for v in text.split(",") if v.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers, e.g. 7,8,9")
        if not values:
            raise argparse.ArgumentTypeError("the list is empty: give at least one value, e.g. 7,8")
        return values
    return parse


def name_list(allowed):
    def parse(text: str):
        values = tuple(v.strip() for v in text.split(",") if v.strip())
        wrong = [v for v in values if v not in allowed]
        if wrong or not values:
            raise argparse.ArgumentTypeError(f"{text!r}: give a comma-separated list of {', '.join(allowed)}")
        return values
    return parse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=number_list(int), default=SEEDS, help="comma-separated, e.g. 7,8,9")
    parser.add_argument("--budget-shares", type=number_list(float), default=BUDGET_SHARES,
                        help="the day's budget as a share of the pages, comma-separated")
    parser.add_argument("--scenarios", type=name_list(SCENARIOS), default=SCENARIOS)
    parser.add_argument("--starts", type=name_list(STARTS), default=STARTS)
    parser.add_argument("--urls", type=int, default=5000)
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--days", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=1, help="webs run side by side (the machine has 2 shared cores)")
    parser.add_argument("--quick", action="store_true",
                        help=f"seeds {','.join(map(str, QUICK_SEEDS))} at a budget share of {BUDGET_SHARES[0]:g} only")
    parser.add_argument("--markdown", type=Path, help="also write the per-web table to this file")
    parser.add_argument("--resume", type=Path, help="an earlier sweep's output: the webs it finished are "
                                                     "taken from it, not run again")
    args = parser.parse_args()
    if args.days <= 30:
        parser.error("--days must exceed freshness.py's 30-day warm-up")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    seeds, shares = (QUICK_SEEDS, BUDGET_SHARES[:1]) if args.quick else (args.seeds, args.budget_shares)
    cells = grid(seeds, shares, args.scenarios, args.starts)
    load_at_start = os.getloadavg()
    webs = f"of {args.urls} URLs on {args.hosts} hosts, {args.days} days"
    print(f"sweep: {len(cells)} webs {webs}; {args.jobs} at a time; code {ROOT}", flush=True)
    started = time.perf_counter()
    done: dict[Cell, Result] = {}
    if args.resume:
        if not args.resume.is_file():
            parser.error(f"--resume {args.resume}: no such file; give the output of an earlier sweep")
        head = (args.resume.read_text().splitlines() or [""])[0]
        if webs not in head or not head.endswith(f"code {ROOT}"):
            parser.error(f"--resume {args.resume}: its webs or code are not these ({head!r}); "
                         f"resume with the same --urls, --hosts, --days, from the same checkout")
        done = {c: r for c, r in done_webs(args.resume).items() if c in cells}
        for c in cells:
            if c in done:
                print(web_line(done[c]), flush=True)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        running = [pool.submit(run_web, c, args.urls, args.hosts, args.days) for c in cells if c not in done]
        for future in as_completed(running):
            r = future.result()
            done[r.cell] = r
            print(web_line(r), flush=True)
    results = [done[c] for c in cells]
    if args.markdown:
        args.markdown.write_text(markdown(results))
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"total {time.perf_counter() - started:.0f} s, {children.ru_utime + children.ru_stime:.0f} CPU s; "
          f"{load_line(load_at_start)}")
    print(summary(results, args.urls, args.hosts, args.days))
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
