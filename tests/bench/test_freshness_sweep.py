"""bench/freshness_sweep.py's grid, goals and summary: every web once, issue 35's goal per start
and scenario, and the last line's counts over the webs. (A real freshness.py web takes 15 CPU s
at the least, 31 simulated days: the sweep's runs are the benchmark's, not this test's.)"""

import itertools
import math

from bench.freshness_sweep import (BUDGET_SHARES, SEEDS, Cell, Result, done_webs, grid, markdown, parse_last_line,
                                   run_web, summary, web_line)


def result(scenario, start, seed, share, gap, adaptive=0.9, uniform=0.8, proportional=0.85, urls=1000,
           days_to_cover=10.0):
    """A web's result as freshness.py's last line gives it (budget: share x urls)."""
    line = (f"freshness scenario={scenario} urls={urls} budget_per_day={int(share * urls)} days=40 "
            f"adaptive={adaptive} uniform={uniform} proportional={proportional} nutch_adaptive=0.8 optimal=0.95 "
            f"gap_closed={gap} rate_spearman_d2=0.1")
    if start == "cold":
        line += f" cold_start=1 coverage_d7=0.6 days_to_cover={days_to_cover}"
    return Result(Cell(scenario, start, seed, share), parse_last_line(line), seconds=1.0)


def test_the_grid_holds_every_web_once_cold_first():
    cells = grid(SEEDS, BUDGET_SHARES)
    assert len(cells) == len(set(cells)) == 2 * 2 * len(SEEDS) * len(BUDGET_SHARES) == 40
    assert {(c.scenario, c.start, c.seed, c.budget_share) for c in cells} == \
        set(itertools.product(("poisson", "bursty"), ("cold", "warm"), SEEDS, BUDGET_SHARES))
    assert [c.start for c in cells] == ["cold"] * 20 + ["warm"] * 20
    assert grid((7, 8), (0.1,), ("bursty",), ("cold",)) == [Cell("bursty", "cold", 7, 0.1), Cell("bursty", "cold", 8, 0.1)]
    assert Cell("bursty", "cold", 8, 0.05).args(5000, 50, 40) == [
        "--scenario", "bursty", "--seed", "8", "--budget-share", "0.05", "--urls", "5000", "--hosts", "50",
        "--days", "40", "--cold-start"]
    assert "--cold-start" not in Cell("poisson", "warm", 8, 0.05).args(5000, 50, 40)


def test_each_web_is_held_to_its_own_goal():
    # cold: gap_closed >= 0.8 and days_to_cover <= ceil(urls / budget) + 3 (1000 / 50 -> 23)
    assert result("bursty", "cold", 7, 0.05, 0.80, days_to_cover=23).misses() == []
    assert result("bursty", "cold", 7, 0.05, 0.79, days_to_cover=24).misses() == ["gap_closed<0.8", "days_to_cover>23"]
    assert result("poisson", "cold", 7, 0.1, 0.9, days_to_cover=math.nan).days_over_cover_goal == math.inf
    # warm: Poisson >= 1.0, bursty >= 0.9, no cover goal
    assert result("poisson", "warm", 7, 0.1, 0.95).misses() == ["gap_closed<1"]
    assert result("bursty", "warm", 7, 0.1, 0.95).misses() == []


def test_the_summary_counts_over_the_webs():
    results = [
        result("poisson", "cold", 7, 0.1, 0.90, days_to_cover=12),  # goal 13: 1 day to spare
        result("bursty", "cold", 8, 0.1, 0.70, adaptive=0.84, days_to_cover=15),  # below goal, 2 days over
        result("bursty", "cold", 9, 0.05, 0.85, adaptive=0.79, days_to_cover=20),  # below uniform and proportional
        result("poisson", "warm", 7, 0.1, 1.05),
        result("poisson", "warm", 8, 0.1, 0.98),  # below goal
        result("bursty", "warm", 7, 0.1, 0.93, adaptive=0.83),  # below proportional only
        Result(Cell("bursty", "warm", 8, 0.1), {}, 1.0, error="exit 2: boom"),
    ]
    keys = dict(word.split("=", 1) for word in summary(results, 1000, 10, 40).split()[1:])
    assert keys["webs"] == "7" and keys["failed"] == "1"
    assert keys["min_gap_closed_cold"] == "0.700" and keys["mean_gap_closed_cold"] == "0.817"
    assert keys["min_gap_closed_warm_poisson"] == "0.980" and keys["min_gap_closed_warm_bursty"] == "0.930"
    assert keys["mean_gap_closed_warm"] == "0.987"
    assert keys["below_uniform"] == "1" and keys["below_proportional"] == "3"
    assert keys["below_goal"] == "2" and keys["cover_goal_missed"] == "1"
    assert keys["max_days_over_cover_goal"] == "2" and keys["worst_cold"] == "bursty/cold/s8/b0.1"
    lines = [web_line(r) for r in results]
    assert "goal=MISS:gap_closed<0.8,days_to_cover>13" in lines[1]
    assert "below_uniform=1 below_proportional=1" in lines[2] and "goal=ok" in lines[2]
    assert "days_to_cover" not in lines[3] and "failed=1" in lines[6]
    table = markdown(results).splitlines()
    assert len(table) == 2 + len(results) and "**MISS**" in table[3] and "failed: exit 2: boom" in table[8]


def test_a_web_freshness_py_refuses_is_a_failed_web_with_its_reason():
    r = run_web(Cell("poisson", "warm", 7, 0.1), urls=100, hosts=2, days=30)  # days must exceed the warm-up
    assert r.keys == {} and r.error.startswith("exit 2: ") and "--days must exceed the 30-day warm-up" in r.error
    assert "webs=1 failed=1" in summary([r], 100, 2, 30) and "min_gap_closed_cold=nan" in summary([r], 100, 2, 30)


def test_a_resumed_sweep_keeps_the_finished_webs_and_reruns_the_failed(tmp_path):
    results = [result("poisson", "cold", 7, 0.1, 0.90, days_to_cover=12),
               result("bursty", "cold", 8, 0.05, 0.70, adaptive=0.79, days_to_cover=25),
               result("bursty", "warm", 8, 0.1, 0.93, adaptive=0.83),
               Result(Cell("poisson", "warm", 8, 0.1), {}, 1.0, error="exit 1: killed")]
    log = tmp_path / "sweep.log"
    log.write_text("sweep: 4 webs of 1000 URLs on 10 hosts, 40 days; 1 at a time; code /x\n"
                   + "\n".join(web_line(r) for r in results) + "\nfreshness_sweep webs=4\n")
    kept = done_webs(log)
    assert list(kept) == [r.cell for r in results[:3]]
    assert summary(list(kept.values()), 1000, 10, 40) == summary(results[:3], 1000, 10, 40)
