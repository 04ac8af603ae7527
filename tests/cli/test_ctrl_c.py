"""Ctrl-C of a cycle command: one sentence and exit status 130, never a traceback."""

from crawl_assets.cli import cycle


def test_ctrl_c_of_a_cycle_prints_one_sentence(monkeypatch, capsys):
    def interrupted(days, shards, progress, refetch, quarantine):
        raise KeyboardInterrupt  # as the user's Ctrl-C while runs are followed

    monkeypatch.setattr(cycle, "run_days", interrupted)
    assert cycle.main(["--date", "2026-11-20"]) == 130
    err = capsys.readouterr().err
    assert err == cycle.STOPPED + "\n", err
