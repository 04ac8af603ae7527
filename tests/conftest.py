"""Shared fixtures."""

import pytest


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch):
    monkeypatch.delenv("RECRAWL_SETTINGS", raising=False)
