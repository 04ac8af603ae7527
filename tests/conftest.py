"""Shared fixtures."""

import pytest

# The `deployment` fixture: a real `dagster dev` for tests/orchestration and tests/ui (one per session).
pytest_plugins = ["dagster_deployment"]


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch):
    monkeypatch.delenv("RECRAWL_SETTINGS", raising=False)
