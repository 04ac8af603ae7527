"""Shared fixtures, and how the suite spreads over pytest-xdist's workers (xdist_schedule)."""

import pytest

# The `deployment` fixture: a real `dagster dev` for tests/orchestration and tests/ui (one per
# worker that runs them); the grouping and order of tests on xdist's workers.
pytest_plugins = ["dagster_deployment", "xdist_schedule"]


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch):
    monkeypatch.delenv("RECRAWL_SETTINGS", raising=False)
