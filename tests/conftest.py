"""Shared fixtures: a small demo web on a free loopback port."""

import pytest

from crawl_assets.demoweb import DemoWeb, DemoWebThread

@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch):
    monkeypatch.delenv("RECRAWL_SETTINGS", raising=False)


@pytest.fixture(scope="module")
def small_web():
    with DemoWebThread(DemoWeb(seed=7, hosts=10, pages_per_host=20), port=0) as web:
        yield web
