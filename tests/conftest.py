"""Shared fixtures, and how the suite spreads over pytest-xdist's workers."""

import pytest

# The `deployment` fixture: a real `dagster dev` for tests/orchestration and tests/ui (one per worker).
pytest_plugins = ["dagster_deployment"]


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items):
    """Tests that share one `dagster dev` deployment run on one xdist worker (`--dist loadgroup`),
    so the session starts it once; every other test goes wherever a worker is free."""
    for item in items:
        if "deployment" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("deployment"))


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch):
    monkeypatch.delenv("RECRAWL_SETTINGS", raising=False)
